// SPDX-License-Identifier: MIT
/*
 * leakmix [-w] N [ROUNDS]: 8 threads churning through every allocator entry
 * point (malloc, calloc, realloc, reallocarray, aligned_alloc,
 * posix_memalign, memalign, valloc, pvalloc, free) and leaking exactly N
 * blocks between them: leak i is made by entry point i % 9 with a size of
 * its own, 3000 + 8 * (i % 9) bytes, which no other allocation of this
 * program has. Each thread then churns ROUNDS (default 500) more rounds and
 * exits, so glibc flushes its per-thread cache while being traced.
 *
 * -w: the threads churn (leaking nothing) from the start; "leakmix:
 * churning" on stderr, then a line on stdin starts the leaks (a tracer
 * attaches meanwhile, while every thread is inside the allocator); at the
 * end "leakmix: done" on stderr and a second line before exiting.
 *
 * leakmix -f N: no threads: leak N blocks of 40 bytes from malloc alone (to
 * fill a tracer's table).
 *
 * Writes with write(2), never stdio. Every pointer goes through the
 * volatile sink, so the compiler deletes no malloc/free pair.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define LEAK_FNS 9
#define LEAK_SIZE(fn) (3000 + 8 * (fn))

static void *volatile sink;
static atomic_int go;
static long leaks_total, rounds_after = 500;

static void *leak_one(int fn)
{
	size_t sz = LEAK_SIZE(fn);
	void *p = NULL;

	switch (fn) {
	case 0:
		return malloc(sz);
	case 1:
		return calloc(1, sz);
	case 2:
		return realloc(NULL, sz);
	case 3:
		return reallocarray(NULL, 1, sz);
	case 4:
		return aligned_alloc(64, sz);
	case 5:
		return posix_memalign(&p, 128, sz) ? NULL : p;
	case 6:
		return memalign(256, sz);
	case 7:
		return valloc(sz);
	default:
		return pvalloc(sz);
	}
}

/* one round: every entry point, everything freed again */
static void churn(unsigned r)
{
	static const size_t sizes[] = { 24, 100, 200, 1000, 5000, 70000 };
	size_t s = sizes[r % 6], s2 = sizes[(r + 3) % 6];
	void *a = malloc(s), *b = calloc(4, s2), *c = realloc(NULL, s), *d = NULL;
	void *e = reallocarray(NULL, 3, s2), *f = aligned_alloc(32, 512), *g = memalign(64, s);
	void *h = valloc(s2), *i = pvalloc(s), *j = malloc(s2);

	if (posix_memalign(&d, 64, s2))
		d = NULL;
	sink = a;
	sink = b;
	sink = d;
	sink = f;
	sink = g;
	sink = h;
	sink = i;
	c = realloc(c, s2); /* may move */
	sink = c;
	e = reallocarray(e, 5, s); /* may move */
	sink = e;
	j = realloc(j, 0); /* frees j, returns NULL */
	sink = j;
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
	free(g);
	free(h);
	free(i);
}

static void *thread_main(void *arg)
{
	long id = (long)arg, mine = leaks_total / THREADS + (id < leaks_total % THREADS);
	unsigned r = (unsigned)id;

	while (!atomic_load(&go))
		churn(r++);
	for (long k = 0; k < mine; k++) {
		long i = id + k * THREADS; /* leak number: 0..N-1 over all threads */

		churn(r++);
		sink = leak_one((int)(i % LEAK_FNS)); /* never freed */
	}
	for (long k = 0; k < rounds_after; k++)
		churn(r++);
	return NULL;
}

static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static void say(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		_exit(1);
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "-w"), a = 1 + wait;
	pthread_t t[THREADS];
	char msg[96];

	if (argc > 2 && !strcmp(argv[1], "-f")) {
		for (long i = atol(argv[2]); i > 0; i--)
			sink = malloc(40);
		return 0;
	}
	leaks_total = argc > a ? atol(argv[a]) : 1000;
	if (argc > a + 1)
		rounds_after = atol(argv[a + 1]);
	if (leaks_total < 0 || rounds_after < 0) {
		say("usage: leakmix [-w] N [ROUNDS]\n");
		return 2;
	}
	atomic_store(&go, !wait);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)i)) {
			say("leakmix: pthread_create failed\n");
			return 1;
		}
	if (wait) {
		say("leakmix: churning\n");
		wait_line();
		atomic_store(&go, 1);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (wait) {
		say("leakmix: done\n");
		wait_line();
	}
	snprintf(msg, sizeof(msg), "leakmix: leaked %ld blocks\n", leaks_total);
	say(msg);
	return 0;
}
