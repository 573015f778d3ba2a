// SPDX-License-Identifier: MIT
/*
 * leakpfx [K]: a program with an allocator of its own under prefixed names,
 * as a jemalloc built with --with-jemalloc-prefix=je_ and linked in has,
 * beside libc's malloc: je_malloc/je_free (one mmap per block) and malloc.
 * Per round: je_malloc(3000) leaked, je_malloc(5000) freed with je_free,
 * malloc(4096) leaked. K rounds (default 100). Neither allocator calls the
 * other. Writes nothing.
 */
#include <stdlib.h>
#include <sys/mman.h>

static void *volatile sink;

/* not static, never inlined: found by name in the symbol table and probed */
__attribute__((noinline, used)) void *je_malloc(size_t n)
{
	size_t *p = mmap(NULL, n + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p[0] = n + 16;
	return p + 2;
}

__attribute__((noinline, used)) void je_free(void *v)
{
	size_t *p = v;

	if (p)
		munmap(p - 2, p[-2]);
}

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 100;

	for (long i = 0; i < k; i++) {
		void *a = je_malloc(3000), *b = je_malloc(5000), *c = malloc(4096);

		sink = a;
		sink = b;
		sink = c;
		je_free(b);
	}
	return 0;
}
