/* SPDX-License-Identifier: MIT */
/*
 * Source lines of code addresses, from an ELF file's DWARF (or its separate
 * debug file, found by build id under /usr/lib/debug): the function, file
 * and line of an address, and of each function it was inlined into. Built
 * without libdw (elfutils), nothing is found.
 */
#ifndef MEMLENS_TRACE_SRCLINE_H
#define MEMLENS_TRACE_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#define SRCLINE_MAX_INLINE 8

struct srcline_frame {
	const char *func; /* NULL: the DWARF names none */
	const char *file; /* NULL: not known */
	int line; /* 0: not known */
	int func_line; /* where the function is declared, 0: not known */
	const char *func_file;
};

struct srcline_cache; /* one loaded file per path */

struct srcline_cache *srcline_new(void);
void srcline_free(struct srcline_cache *c);
/*
 * The frames at @vaddr (an address as the ELF file @path numbers its code),
 * innermost (inlined) first, the function it is in last; at most @max.
 * Returns how many, 0 when @path has no line information for it. The
 * strings belong to @c until srcline_free().
 */
int srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
		   struct srcline_frame *out, int max);

#endif
