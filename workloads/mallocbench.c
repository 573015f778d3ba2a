// SPDX-License-Identifier: MIT
/*
 * mallocbench N [SIZE]: N malloc(SIZE)+free pairs (default SIZE 64), timed;
 * prints "pairs=N ns_per_pair=X". The pointer escapes through a volatile
 * so that GCC keeps every pair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, size = argc > 2 ? atol(argv[2]) : 64;
	struct timespec t0, t1;
	double ns;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		void *p = malloc((size_t)size);

		sink = p;
		free(p);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("pairs=%ld ns_per_pair=%.1f\n", n, n ? ns / (double)n : 0.0);
	return 0;
}
