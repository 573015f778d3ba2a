// SPDX-License-Identifier: MIT
/*
 * leaksites N: known amounts from known call sites, for the sampled leak
 * tracer (memlens leaks --sample). Outstanding at exit, each from its own
 * function (never inlined), so that a stack's innermost frame names it:
 *
 *   leak_malloc_1000     N blocks of 1000 bytes (malloc)
 *   leak_calloc_3000     N blocks of 3000 bytes (calloc)
 *   leak_realloc_4000    N blocks of 4000 bytes (malloc(500), then realloc)
 *   leak_aligned_6000    N blocks of 6000 bytes (posix_memalign, aligned_alloc,
 *                        memalign in turn)
 *   leak_thread_5000     N blocks of 5000 bytes, N/4 from each of 4 threads
 *
 * Freed, none outstanding: N blocks of 2000 (churn_2000, malloc then free;
 * reallocarray grown then freed), and whatever a forked child allocates
 * (the child allocates, frees, and leaks 700-byte blocks of its own, then
 * exits 0; the parent says "leaksites: child ok" on stderr when it did).
 * Writes with write(2), never stdio.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;
static long n;

static void say(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		_exit(3);
}

__attribute__((noinline)) static void leak_malloc_1000(void)
{
	sink = malloc(1000);
}

__attribute__((noinline)) static void leak_calloc_3000(void)
{
	sink = calloc(3, 1000);
}

__attribute__((noinline)) static void leak_realloc_4000(void)
{
	char *p = malloc(500);

	if (p)
		p[0] = 1;
	sink = realloc(p, 4000);
}

__attribute__((noinline)) static void leak_aligned_6000(long i)
{
	void *p = NULL;

	if (i % 3 == 0) {
		if (posix_memalign(&p, 64, 6000))
			p = NULL;
	} else if (i % 3 == 1) {
		p = aligned_alloc(128, 6000);
	} else {
		p = memalign(256, 6000);
	}
	sink = p;
}

__attribute__((noinline)) static void churn_2000(void)
{
	char *p = malloc(2000), *q;

	sink = p;
	free(p);
	q = reallocarray(NULL, 10, 100);
	sink = q;
	q = reallocarray(q, 10, 200);
	sink = q;
	free(q);
}

__attribute__((noinline)) static void leak_thread_5000(void)
{
	sink = malloc(5000);
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (long i = 0; i < n / 4; i++) {
		leak_thread_5000();
		churn_2000();
	}
	return NULL;
}

__attribute__((noinline)) static void child_work(void)
{
	for (int i = 0; i < 2000; i++) {
		void *p = malloc(700);

		sink = p;
		if (i % 2)
			free(p);
	}
}

int main(int argc, char **argv)
{
	pthread_t th[4];
	int status;
	pid_t pid;

	n = argc > 1 ? atol(argv[1]) : 1000;
	if (n < 4)
		n = 4;
	for (long i = 0; i < n; i++) {
		leak_malloc_1000();
		leak_calloc_3000();
		leak_realloc_4000();
		leak_aligned_6000(i);
		churn_2000();
	}
	for (int t = 0; t < 4; t++)
		if (pthread_create(&th[t], NULL, thread_main, NULL))
			return 2;
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	pid = fork();
	if (pid == 0) {
		child_work();
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 4;
	say("leaksites: child ok\n");
	return 0;
}
