// SPDX-License-Identifier: MIT
/*
 * leakstacks N: leak exactly N blocks of 24 bytes from malloc, each from a
 * call stack of its own, and allocate nothing else. Block i is allocated at
 * the bottom of a chain of DEPTH calls that goes through zero() or one()
 * for each bit of i, the lowest bit innermost: distinct i, distinct chains
 * of return addresses, within the innermost 32 frames a tracer keeps. For
 * filling a tracer's table of call stacks (N up to 2^DEPTH).
 *
 * The chain has to be walkable with frame pointers, and each call must
 * stay a call (not become a jump that leaves no return address): both are
 * asked of the compiler for this file, whatever the Makefile's flags.
 * Writes with write(2), never stdio, so that libc allocates nothing else.
 */
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls")
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEPTH 12 /* 2 frames a bit, + leaf, main and libc's: 30 frames */

static void *volatile sink;
static volatile int after; /* something to do after each call */

static void chain(unsigned int bits, int depth);

static __attribute__((noinline)) void leaf(void)
{
	sink = malloc(24);
	after++;
}

static __attribute__((noinline)) void zero(unsigned int bits, int depth)
{
	chain(bits, depth);
	after++;
}

static __attribute__((noinline)) void one(unsigned int bits, int depth)
{
	chain(bits, depth);
	after++;
}

static __attribute__((noinline)) void chain(unsigned int bits, int depth)
{
	if (!depth)
		leaf();
	else if (bits >> (depth - 1) & 1)
		one(bits, depth - 1);
	else
		zero(bits, depth - 1);
	after++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	static const char usage[] = "usage: leakstacks N (1 to 4096)\n";

	if (n < 1 || n > 1L << DEPTH) {
		if (write(2, usage, strlen(usage)) < 0)
			return 2;
		return 2;
	}
	for (long i = 0; i < n; i++)
		chain((unsigned int)i, DEPTH);
	return 0;
}
