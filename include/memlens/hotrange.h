/* SPDX-License-Identifier: MIT */
/*
 * Heat at page granularity: the hot ranges inside VMAs.
 *
 * A VMA's written ratio says nothing when the hot data is scattered through
 * one huge heap (jemalloc arenas, slab allocators, JVM heaps, shared
 * buffers): the ratio stays far below any threshold. So heat is also kept
 * per page, from the page ranges each interval's PAGEMAP_SCAN found
 * written.
 *
 * Rules, per page:
 *   - it becomes hot once it was written in `consecutive` intervals in a
 *     row (the same parameter as the per-VMA rule of heat.h);
 *   - hysteresis: a hot page stays hot until it has gone unwritten for
 *     `cool` intervals in a row (default: `consecutive`), so a page written
 *     in most intervals, but not all, does not flip between hot and cold.
 *     With cool = 1 a page turns cold the first interval it is not written,
 *     as a VMA does.
 *
 * State: one sorted array of disjoint extents [start, end), each with its
 * streak (intervals written in a row, capped at `consecutive`), its idle
 * count (intervals unwritten since it was last written, while hot) and
 * whether it is hot; neighbouring extents in the same state are merged.
 * Only pages that are hot or were written in the last interval have state:
 * the memory and the time of an interval grow with the written ranges and
 * the hot set, never with the size of the VMAs (a 1 TiB VMA with three
 * written pages costs three pages' worth of extents). Each interval the
 * state is clipped to the VMAs tracked now: a VMA that disappears drops its
 * state, one that shrinks loses the part that is gone.
 *
 * Reported ranges: the maximal runs of hot pages, at most `max_ranges` of
 * them. When there are more, the gaps between neighbouring runs are closed
 * cheapest first: a gap costs its bytes (cold pages that are then reported
 * as hot). Gaps inside one VMA are closed before any gap that crosses from
 * one VMA to another (it would cover memory of no hot VMA, or none); among
 * equal costs the lower address goes first. Closing gaps never changes the
 * cost of another gap, so the cheapest ones are chosen at once and the sum
 * of their bytes (merge_cost_bytes) is the least any choice could cost.
 *
 * Pure: no I/O; errors are negative errno values.
 */
#ifndef MEMLENS_HOTRANGE_H
#define MEMLENS_HOTRANGE_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/rangeset.h"

#define ML_HOTRANGE_PAGE 4096ULL
/* the largest consecutive and cool (migrate-model's -c goes up to it) */
#define ML_HOTRANGE_MAX_INTERVALS 1000
#define ML_HOTRANGE_DEFAULT_MAX 256
/*
 * The ranges a CRIU exclude list gets by default (checkpoint, migrate): a
 * range costs CRIU one more entry to look up, a merged gap costs its bytes
 * at the freeze, so hot pages spread through a heap are kept apart
 */
#define ML_HOTRANGE_EXCLUDE_MAX 16384
#define ML_HOTRANGE_MAX_MAX 1000000

struct ml_hotrange_ext {
	uint64_t start, end;
	uint32_t streak; /* written in this many intervals in a row, <= consecutive */
	uint32_t idle; /* hot, unwritten for this many intervals, < cool */
	bool hot;
};

struct ml_hotrange {
	int consecutive, cool;
	size_t max_ranges;
	struct ml_hotrange_ext *e; /* sorted, disjoint */
	size_t n, cap;
	struct ml_range *vmas; /* the VMAs of the last update, sorted */
	size_t nvmas, vmas_cap;
	struct ml_range *w; /* scratch: the written ranges, sorted and clipped */
	size_t w_cap;
	/*
	 * Scratch kept from one update to the next (a fresh buffer of a few
	 * MiB each interval would fault every page of it in again): the
	 * written ranges before clipping, the old extents clipped, and the
	 * extents being built (swapped with e).
	 */
	struct ml_range *raw;
	size_t raw_cap;
	struct ml_hotrange_ext *clip, *spare;
	size_t clip_cap, spare_cap;
};

/* One reported range; pages counts the cold pages a merge took in too. */
struct ml_hotrange_range {
	uint64_t start, end;
	uint64_t hot_pages;
	pid_t pid; /* the process (profiler samples); 0: not said */
};

struct ml_hotrange_set {
	struct ml_hotrange_range *r; /* sorted by address */
	size_t n;
	size_t unmerged; /* runs of hot pages before merging */
	uint64_t hot_bytes; /* bytes of hot pages */
	uint64_t merge_cost_bytes; /* bytes of the gaps merged into r */
	/*
	 * From a sample (memlens/sample.h): each page's state counts only the
	 * intervals it was write-protected in, so a page is hot once written in
	 * `consecutive` of its sampled intervals in a row
	 */
	bool estimated;
};

/*
 * @consecutive 1..ML_HOTRANGE_MAX_INTERVALS; @cool 0 (= consecutive) or
 * 1..ML_HOTRANGE_MAX_INTERVALS; @max_ranges 0 (= ML_HOTRANGE_DEFAULT_MAX) or
 * 1..ML_HOTRANGE_MAX_MAX. -EINVAL otherwise.
 */
int ml_hotrange_init(struct ml_hotrange *h, int consecutive, int cool, size_t max_ranges);
void ml_hotrange_free(struct ml_hotrange *h);
/* Forget every page's state (profiling starts again). */
void ml_hotrange_reset(struct ml_hotrange *h);

/*
 * One interval: @vmas are the VMAs tracked now (sorted, disjoint; -EINVAL
 * otherwise), @written the ranges written during the interval (any order,
 * may overlap; widened to whole pages; parts outside @vmas are ignored).
 * -ENOMEM leaves the state as it was.
 */
int ml_hotrange_update(struct ml_hotrange *h, const struct ml_range *vmas, size_t nvmas,
		       const struct ml_range *written, size_t nwritten);

/*
 * ml_hotrange_update() of a sampled interval: only the pages of @seen
 * (sorted, disjoint: the pages write-protected during the interval) were
 * watched. They step as there; every other page keeps its state (it was
 * neither written nor left unwritten as far as anyone knows). State outside
 * @vmas is dropped all the same.
 */
int ml_hotrange_update_seen(struct ml_hotrange *h, const struct ml_range *vmas, size_t nvmas,
			    const struct ml_range *written, size_t nwritten,
			    const struct ml_range *seen, size_t nseen);

/* The hot ranges now, within max_ranges. Free with ml_hotrange_set_free(). */
int ml_hotrange_get(const struct ml_hotrange *h, struct ml_hotrange_set *out);
void ml_hotrange_set_free(struct ml_hotrange_set *s);
/* A copy of @src into @dst (which is overwritten). */
int ml_hotrange_set_copy(struct ml_hotrange_set *dst, const struct ml_hotrange_set *src);

#pragma GCC visibility pop

#endif
