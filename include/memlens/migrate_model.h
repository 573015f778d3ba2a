/* SPDX-License-Identifier: MIT */
/*
 * A model of iterative pre-copy migration (CRIU pre-dump rounds, then a
 * stop-and-copy dump) replayed on a trace recorded by `memlens writes
 * --record`, for three exclusion policies:
 *
 *   none       every page not yet sent (or written since) goes in each round;
 *   hot-vma    the VMAs hot at round time are left for the final dump;
 *   hot-range  the hot ranges of memlens/hotrange.h are left for the final
 *              dump: pages written in hot_intervals intervals in a row, hot
 *              until hot_cool intervals unwritten, at most hot_ranges_max
 *              ranges; computed from the trace's written ranges and VMAs
 *              exactly as the profiler computes them, so what the model
 *              leaves out is what `memlens writes` reports.
 *
 * Model: pre-dump round k happens at T_k = k * round_interval after the
 * trace starts. A page is "stale" until its current content has been sent:
 * every page is stale at first, written pages become stale again, pages of
 * new VMAs start stale, unmapped pages are forgotten. A pre-dump round sends
 * the stale pages outside the excluded set; the final round sends every
 * stale page. Pre-copy stops after max_rounds, when a round sends no more
 * than stop_threshold, or when the trace has no more round intervals.
 * Downtime = freeze_overhead + final round bytes / bandwidth. With post-copy
 * (CRIU's lazy pages) the tree runs again after freeze_overhead and the final
 * round's bytes arrive after: the last page at downtime as without post-copy.
 * Pure: no I/O.
 */
#ifndef MEMLENS_MIGRATE_MODEL_H
#define MEMLENS_MIGRATE_MODEL_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/rangeset.h"

#define MM_MIB (1024.0 * 1024.0)
#define MM_DEFAULT_MAX_ROUNDS 10
#define MM_DEFAULT_HOT_INTERVALS 3
#define MM_NPOLICIES 3

struct mm_region {
	uint64_t start, end;
	bool hot;
};

/* One "interval" line of the trace. */
struct mm_interval {
	int64_t t_ms; /* end of the interval, ms since profiling started */
	struct mm_region *regions; /* tracked VMAs */
	size_t nregions;
	struct range *written; /* page ranges written in the interval */
	size_t nwritten;
};

#define MM_TRACE_MAX_PROCS 255
#define MM_TRACE_PID_SHIFT 56

struct mm_trace {
	struct mm_interval *iv; /* in t_ms order */
	size_t n, cap;
	size_t skipped_lines; /* lines of another "type" (e.g. summary) */
	size_t with_written; /* intervals that have a "written" array */
	/*
	 * A tree's trace (regions and written ranges with a pid): each
	 * process gets an address space of its own, process i's addresses
	 * moved up by i << MM_TRACE_PID_SHIFT (user addresses stay below it).
	 */
	int64_t pids[MM_TRACE_MAX_PROCS];
	size_t npids;
};

void ml_mm_trace_init(struct mm_trace *t);
void ml_mm_trace_free(struct mm_trace *t);
/*
 * Add one JSON Lines line of the trace. Objects with a "type" other than
 * "interval" are counted and skipped; blank lines are ignored. -EINVAL
 * with the reason for malformed lines.
 */
int ml_mm_trace_add_line(struct mm_trace *t, const char *line, size_t len, struct ml_err *err);

struct mm_params {
	size_t sz; /* sizeof(struct mm_params): memlens/opts.h */
	double bandwidth_mbps; /* MiB/s, > 0 */
	double round_interval_s; /* > 0 */
	int max_rounds; /* pre-dump rounds; 0: MM_DEFAULT_MAX_ROUNDS */
	double stop_threshold_mb; /* MiB; stop pre-copy when a round sends <= this */
	int hot_intervals; /* hot-range: written in this many intervals in a row; 0: 3 */
	int hot_cool; /* hot-range: cold after this many unwritten; 0: hot_intervals */
	/* hot-range: at most this many ranges; 0: HOTRANGE_EXCLUDE_MAX, as migrate */
	unsigned int hot_ranges_max;
	/*
	 * seconds a freeze costs besides sending the final round's bytes:
	 * CRIU's dump of everything but the memory and the restore; >= 0
	 */
	double freeze_overhead_s;
};

enum mm_policy { MM_NONE, MM_HOT_VMA, MM_HOT_RANGE };

struct mm_round {
	int round; /* from 1; the last one is the stop-and-copy */
	uint64_t bytes;
};

struct mm_result {
	enum mm_policy policy;
	struct mm_round *rounds;
	size_t nrounds;
	uint64_t total_bytes;
	uint64_t final_round_bytes;
	double downtime_ms;
	/* with post-copy: frozen for freeze_overhead_s only, the final round after */
	double postcopy_downtime_ms;
};

const char *ml_mm_policy_name(enum mm_policy p);

/* Run the three policies; @out[i] is policy i. Free with ml_mm_results_free(). */
int ml_mm_run(const struct mm_trace *t, const struct mm_params *p,
	      struct mm_result out[MM_NPOLICIES], struct ml_err *err);
void ml_mm_results_free(struct mm_result out[MM_NPOLICIES]);

#pragma GCC visibility pop

#endif
