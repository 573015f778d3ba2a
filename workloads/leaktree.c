// SPDX-License-Identifier: MIT
/*
 * leaktree: leak from call paths that branch, with sizes of their own, so
 * that a flame graph of what is outstanding has a shape to read:
 *   main -> load_config -> parse_line  -> remember   16 x 64 B
 *   main -> load_cache  -> cache_fill  -> cache_add  512 x 1 KiB
 *   main -> load_cache  -> cache_index -> remember   128 x 64 B
 *   main -> serve       -> new_request -> remember   64 x 64 B
 *   main -> serve       -> new_request -> new_buffer 64 x 4 KiB
 *   main -> serve       -> log_line                  32 x 256 B
 * (remember() and its callers each add a frame of their own.) Then it
 * exits. Frame pointers and real calls are asked of the compiler for this
 * file, whatever the Makefile's flags; the leaf functions differ in what
 * they store, so no two are folded into one. Writes nothing.
 */
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls", "no-ipa-icf")
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static volatile int after;

#define STEP(name, body)                                                                           \
	static __attribute__((noinline)) void name(__attribute__((unused)) int n)                  \
	{                                                                                          \
		body;                                                                              \
		after++;                                                                           \
	}

STEP(remember, sink = memset(malloc(64), n, 64))
STEP(cache_add, sink = memset(malloc(1024), n + 1, 1024))
STEP(new_buffer, sink = memset(malloc(4096), n + 2, 4096))
STEP(log_line, sink = memset(malloc(256), n + 3, 256))
STEP(parse_line, remember(n))
STEP(cache_fill, cache_add(n))
STEP(cache_index, remember(n + 4))
STEP(new_request, (remember(n + 5), new_buffer(n)))
STEP(load_config, for (int i = 0; i < 16; i++) parse_line(i))
STEP(
	load_cache, for (int i = 0; i < 512; i++) {
		cache_fill(i);
		if (i % 4 == 0)
			cache_index(i);
	})
STEP(
	serve, for (int i = 0; i < 64; i++) {
		new_request(i);
		if (i % 2 == 0)
			log_line(i);
	})

int main(void)
{
	load_config(0);
	load_cache(0);
	serve(0);
	return 0;
}
