/* SPDX-License-Identifier: MIT */
/*
 * The `slab` JSON Lines schema: with -i one "slab_interval" line per
 * interval, then one "slab" line for the whole run: the tracer's counters,
 * one row per cache (with --slabinfo the kernel's own count of its objects
 * next to it), the caches SLUB merged. Written from the record below, which
 * the tracer fills; read back into the same record (what report uses).
 */
#ifndef MEMLENS_FORMAT_SLAB_H
#define MEMLENS_FORMAT_SLAB_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

struct ml_slab_row_rec {
	char cache[64];
	uint64_t allocs, frees;
	int64_t net, net_kb;
	uint64_t unseen_allocs;
	/*
	 * --slabinfo (the record's has_slabinfo): the change of the kernel's
	 * count over the run, the change counted over the same window, the
	 * allocations not seen in it (all three null when @window_known is
	 * false: slabinfo had no such cache), its objects per slab
	 */
	bool window_known;
	int64_t slabinfo_delta, window_net, window_unseen_allocs, objperslab;
};

/* --slabinfo: a cache whose count the kernel says changed, of which nothing was counted */
struct ml_slab_only_rec {
	char cache[64];
	int64_t slabinfo_delta, objperslab;
};

/* a cache SLUB merged others into: how many use it, their names */
struct ml_slab_merged_rec {
	char cache[64];
	int64_t users;
	char aliases[1024];
};

struct ml_slab_rec {
	bool interval; /* "slab_interval" (one -i interval); else "slab" (the run) */
	uint64_t elapsed_ms; /* an interval's: its end, since tracing began */
	bool last; /* an interval's: the last one */
	uint64_t recursion_misses, copies, rescued, rescued_by_last;
	char kmalloc[16]; /* "cache" or "size" ("" when absent) */
	uint64_t kfree_unattributed, kmalloc_large, unseen_allocs;
	struct ml_slab_row_rec *rows;
	size_t nrows;
	bool has_slabinfo; /* rows have the window fields; "slabinfo_only" is there */
	struct ml_slab_only_rec *only;
	size_t nonly;
	struct ml_slab_merged_rec *merged;
	size_t nmerged;
};

/* One "slab" or "slab_interval" line (@r->interval), as memlens slab --json writes it. */
void ml_fmt_slab(struct ml_jw *w, const struct ml_slab_rec *r);

/*
 * Read a "slab" or "slab_interval" object (its "type" says which).
 * Required: "rows" (an array of objects, each with a string "cache" and
 * counts "allocs" and "frees"); an interval's "elapsed_ms" (a number).
 * Other numbers absent, null or not numbers read as 0. -EINVAL naming the
 * field, -ENOMEM. Free with ml_fmt_slab_free() (also on error).
 */
int ml_fmt_slab_read(const struct ml_json *o, struct ml_slab_rec *out, struct ml_err *err);
void ml_fmt_slab_free(struct ml_slab_rec *r);

#pragma GCC visibility pop

#endif
