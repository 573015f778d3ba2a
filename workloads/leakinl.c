// SPDX-License-Identifier: MIT
/*
 * leakinl [N]: leaks N blocks (default 100) of 4000 bytes from a function
 * inlined into main (static inline, always_inline; the workloads are built
 * -O2 -g), then exits. memlens leaks names the inlined function with the
 * line of its malloc, and main with the line of the call (the tests find
 * both lines by their marker comments).
 */
#include <stdlib.h>
#include <string.h>

static void *volatile keep;

static inline __attribute__((always_inline)) void *leak_block(size_t n)
{
	char *p = malloc(n); /* leakinl: the leaking malloc */

	if (p)
		memset(p, 0x5a, n);
	return p;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;

	for (long i = 0; i < n; i++)
		keep = leak_block(4000); /* leakinl: the call of leak_block */
	return 0;
}
