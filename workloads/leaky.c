// SPDX-License-Identifier: MIT
/*
 * leaky [-w] K [SIZE]: leak exactly K blocks of SIZE bytes (default 4096) from
 * malloc, and free everything else it allocates: blocks of 128 and 65536
 * bytes from malloc, and one block each from calloc, realloc, aligned_alloc,
 * posix_memalign and memalign per round. Writes with write(2), never stdio,
 * so that libc allocates no buffer of its own.
 *
 * -w: first allocate K blocks of SIZE, wait for a line on stdin, free those
 * K blocks (for a tracer attached meanwhile, frees of blocks it never saw
 * allocated), do the above, say "leaky: done" on stderr and wait for a
 * second line before exiting.
 *
 * GCC deletes malloc/free pairs whose pointer never escapes: every pointer
 * goes through the volatile sink.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;

static void churn(void)
{
	void *a = malloc(128), *b = malloc(65536), *c = calloc(16, 64);
	void *d = realloc(NULL, 300), *e = aligned_alloc(64, 512), *f = memalign(256, 1024);
	void *g = NULL;

	if (posix_memalign(&g, 64, 2048))
		g = NULL;
	sink = a;
	sink = b;
	sink = c;
	sink = d;
	sink = e;
	sink = f;
	sink = g;
	d = realloc(d, 600); /* grows: may move */
	sink = d;
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	free(f);
	free(g);
}

static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "-w"), a = 1 + wait;
	long k = argc > a ? atol(argv[a]) : 1000, size = argc > a + 1 ? atol(argv[a + 1]) : 4096;
	void **old = NULL;
	char msg[96];
	int n;

	if (wait) {
		old = calloc((size_t)k + 1, sizeof(*old));
		for (long i = 0; old && i < k; i++)
			sink = old[i] = malloc((size_t)size);
		if (write(2, "leaky: waiting\n", 15) < 0)
			return 1;
		wait_line();
		for (long i = 0; old && i < k; i++)
			free(old[i]);
	}

	for (long i = 0; i < k; i++) {
		void *keep = malloc((size_t)size); /* never freed */

		sink = keep;
		memset(keep, 1, (size_t)size);
		churn();
	}
	if (wait) {
		if (write(2, "leaky: done\n", 12) < 0)
			return 1;
		wait_line();
	}
	n = snprintf(msg, sizeof(msg), "leaky: leaked %ld blocks of %ld bytes\n", k, size);
	if (write(1, msg, (size_t)n) < 0)
		return 1;
	return 0;
}
