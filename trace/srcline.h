/* SPDX-License-Identifier: MIT */
/*
 * Source lines of code addresses, from an ELF file's DWARF with elfutils'
 * libdwfl, or from its separate debug file: by build id under each debug
 * directory (DIR/.build-id/xx/rest.debug: where Debian's -dbgsym packages
 * put them under /usr/lib/debug), else by its .gnu_debuglink name (beside
 * the file, in its .debug/, under each debug directory). The function, file
 * and line of an address, and of each function it was inlined into. For a
 * file opened through /proc/PID/root, /usr/lib/debug is looked up in that
 * root first. Debug files are only looked up on this machine, never
 * downloaded (no debuginfod). Built without libdw, nothing is found.
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

/*
 * @debug_dir: a directory searched for debug files before /usr/lib/debug,
 * or NULL. Kept by pointer: it must outlive the cache.
 */
struct srcline_cache *mlt_srcline_new(const char *debug_dir);
void mlt_srcline_free(struct srcline_cache *c);
/*
 * The frames at @vaddr (an address as the ELF file @path numbers its code),
 * innermost (inlined) first, the function it is in last; at most @max.
 * Returns how many, 0 when @path has no line information for it. The
 * strings belong to @c until mlt_srcline_free().
 */
int mlt_srcline_lookup(struct srcline_cache *c, const char *path, uint64_t vaddr,
		       struct srcline_frame *out, int max);
/*
 * The symbol containing @vaddr from the symbol tables libdwfl reads (the
 * file's and its debug file's: a stripped file's local functions): 0 and
 * @name (owned by @c), @start; -ENOENT.
 */
int mlt_srcline_symbol(struct srcline_cache *c, const char *path, uint64_t vaddr, const char **name,
		       uint64_t *start);

#endif
