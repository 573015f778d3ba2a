// SPDX-License-Identifier: MIT
/*
 * mallocbench N [SIZE] [FN]: N FN(SIZE)+free pairs (default SIZE 64, FN
 * malloc), timed; prints "pairs=N ns_per_pair=X fn=FN". FN is one of
 * malloc, calloc (1, SIZE), realloc (NULL, SIZE), reallocarray (NULL, 1,
 * SIZE), aligned_alloc (64, SIZE), posix_memalign (64, SIZE), memalign (64,
 * SIZE), valloc, pvalloc. The pointer escapes through a volatile so that
 * GCC keeps every pair.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile sink;

static void *one(const char *fn, size_t size)
{
	void *p = NULL;

	if (!strcmp(fn, "calloc"))
		return calloc(1, size);
	if (!strcmp(fn, "realloc"))
		return realloc(NULL, size);
	if (!strcmp(fn, "reallocarray"))
		return reallocarray(NULL, 1, size);
	if (!strcmp(fn, "aligned_alloc"))
		return aligned_alloc(64, size);
	if (!strcmp(fn, "posix_memalign"))
		return posix_memalign(&p, 64, size) ? NULL : p;
	if (!strcmp(fn, "memalign"))
		return memalign(64, size);
	if (!strcmp(fn, "valloc"))
		return valloc(size);
	if (!strcmp(fn, "pvalloc"))
		return pvalloc(size);
	return malloc(size);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, size = argc > 2 ? atol(argv[2]) : 64;
	const char *fn = argc > 3 ? argv[3] : "malloc";
	struct timespec t0, t1;
	double ns;

	static const char *const fns[] = { "malloc",	   "calloc",	    "realloc",
					   "reallocarray", "aligned_alloc", "posix_memalign",
					   "memalign",	   "valloc",	    "pvalloc" };
	int known = 0;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		known |= !strcmp(fn, fns[i]);
	if (!known || n < 0 || size <= 0) {
		fprintf(stderr, "usage: mallocbench N [SIZE] [malloc|calloc|realloc|reallocarray|"
				"aligned_alloc|posix_memalign|memalign|valloc|pvalloc]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!strcmp(fn, "malloc")) { /* the plain loop, as before (no dispatch) */
		for (long i = 0; i < n; i++) {
			void *p = malloc((size_t)size);

			sink = p;
			free(p);
		}
	} else {
		for (long i = 0; i < n; i++) {
			void *p = one(fn, (size_t)size);

			sink = p;
			free(p);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("pairs=%ld ns_per_pair=%.1f fn=%s\n", n, n ? ns / (double)n : 0.0, fn);
	return 0;
}
