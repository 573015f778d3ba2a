// SPDX-License-Identifier: MIT
/*
 * leakinl [N]: leaks N blocks (default 100) of 4000 bytes from a function
 * inlined into main (static inline, always_inline; the workloads are built
 * -O2 -g), then exits. memlens leaks names the inlined function with the
 * line of its malloc, and main with the line of the call (the tests find
 * both lines by their marker comments).
 * leakinl -s [N]: leaks N copies of a 39-byte string made by libc's strdup
 * instead: the malloc is called from libc, whose lines come from its
 * separate debug file (Debian's libc6-dbg, by build id).
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
	int dup = argc > 1 && !strcmp(argv[1], "-s");
	long n = argc > 1 + dup ? atol(argv[1 + dup]) : 100;

	for (long i = 0; i < n; i++)
		if (dup)
			keep = strdup("a string of 39 characters, then a NUL.");
		else
			keep = leak_block(4000); /* leakinl: the call of leak_block */
	return 0;
}
