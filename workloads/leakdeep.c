// SPDX-License-Identifier: MIT
/*
 * leakdeep N: leak exactly N blocks of 40 bytes from malloc, each at the
 * bottom of one known chain of calls: main -> deep1 -> deep2 -> ... ->
 * deep9 -> leaf -> malloc (11 frames of this program), and allocate
 * nothing else. Built without frame pointers whatever the Makefile's flags
 * (as distributions build their packages): a frame-pointer walk finds leaf
 * and little more, a DWARF unwinder (its .eh_frame) the whole chain. Each
 * call stays a call (something is done after it), so that every function
 * leaves its return address. Writes with write(2), never stdio.
 */
#pragma GCC optimize("omit-frame-pointer", "no-optimize-sibling-calls")
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;
static volatile int after;

#define STEP(name, next)                                                                           \
	static __attribute__((noinline)) void name(long n)                                         \
	{                                                                                          \
		next(n);                                                                           \
		after++;                                                                           \
	}

static __attribute__((noinline)) void leaf(long n)
{
	for (long i = 0; i < n; i++)
		sink = malloc(40);
	after++;
}

STEP(deep9, leaf)
STEP(deep8, deep9)
STEP(deep7, deep8)
STEP(deep6, deep7)
STEP(deep5, deep6)
STEP(deep4, deep5)
STEP(deep3, deep4)
STEP(deep2, deep3)
STEP(deep1, deep2)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	static const char usage[] = "usage: leakdeep N (1 to 1000000)\n";

	if (n < 1 || n > 1000000) {
		if (write(2, usage, sizeof(usage) - 1) < 0)
			return 2;
		return 2;
	}
	deep1(n);
	after++;
	return 0;
}
