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
 * Downtime is the final dump's time plus the restore's, each a fixed part
 * and a part per byte:
 *
 *   dump     = dump_fixed + final round bytes / bandwidth
 *   restore  = restore_fixed + restored bytes / restore_bandwidth
 *   downtime = freeze_overhead + dump + restore
 *
 * where the restored bytes are the tree's memory at the final round (the
 * restore loads every page, those of the pre-dump rounds too) and a
 * restore_bandwidth of 0 leaves the per-byte part out. The tree's memory
 * is its resident pages when the trace has them (every interval's every
 * region says "resident_pages"), else its VMAs' size. With resident pages,
 * a round sends of the pages never written since their VMA appeared only
 * the VMA's share that is resident: the VMA's resident pages less those
 * written since, over its pages never written (at most all of them); a
 * page written is resident. With
 * post-copy (CRIU's lazy pages) the final dump writes no memory and the
 * restore loads none: the tree runs again after freeze_overhead +
 * dump_fixed + restore_fixed, and every page it has then arrives lazily
 * after it, the pre-dump rounds' too (memlens's CRIU leaves the pages of
 * the parent images to the lazy-pages daemon as well, which reads them
 * from the images at the destination; upstream CRIU would load those
 * eagerly in the restore):
 *
 *   lazy bytes = the tree's memory at the final round (the restored bytes)
 *   last page  = postcopy downtime + lazy bytes / lazy_bandwidth
 *                + lazy_faults * lazy_fault_s
 *
 * the last term the time the tree's page faults wait to be served.
 * ml_mm_calibrate() fits the fixed parts and the three bandwidths from a
 * migration's record. Pure: no I/O.
 */
#ifndef MEMLENS_MIGRATE_MODEL_H
#define MEMLENS_MIGRATE_MODEL_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/format_migrate.h"
#include "memlens/opts.h"
#include "memlens/rangeset.h"

#define ML_MM_MIB (1024.0 * 1024.0)
#define ML_MM_DEFAULT_MAX_ROUNDS 10
#define ML_MM_DEFAULT_HOT_INTERVALS 3
#define ML_MM_NPOLICIES 3

struct ml_mm_region {
	uint64_t start, end;
	bool hot;
	/*
	 * a trace recorded with resident pages (`writes --record` since it
	 * counts them): the bytes of the VMA a checkpoint dumps
	 */
	bool has_resident;
	uint64_t resident_bytes;
};

/* One "interval" line of the trace. */
struct ml_mm_interval {
	int64_t t_ms; /* end of the interval, ms since profiling started */
	struct ml_mm_region *regions; /* tracked VMAs */
	size_t nregions;
	struct ml_range *written; /* page ranges written in the interval */
	size_t nwritten;
	bool all_resident; /* every region has_resident */
};

#define ML_MM_TRACE_MAX_PROCS 255
#define ML_MM_TRACE_PID_SHIFT 56

struct ml_mm_trace {
	struct ml_mm_interval *iv; /* in t_ms order */
	size_t n, cap;
	size_t skipped_lines; /* lines of another "type" (e.g. summary) */
	size_t with_written; /* intervals that have a "written" array */
	/*
	 * A tree's trace (regions and written ranges with a pid): each
	 * process gets an address space of its own, process i's addresses
	 * moved up by i << ML_MM_TRACE_PID_SHIFT (user addresses stay below it).
	 */
	int64_t pids[ML_MM_TRACE_MAX_PROCS];
	size_t npids;
	/*
	 * intervals every region of which says its resident pages; when all
	 * do (with_resident == n), the model's memory is the resident pages
	 */
	size_t with_resident;
};

void ml_mm_trace_init(struct ml_mm_trace *t);
void ml_mm_trace_free(struct ml_mm_trace *t);
/*
 * Add one JSON Lines line of the trace. Objects with a "type" other than
 * "interval" are counted and skipped; blank lines are ignored. -EINVAL
 * with the reason for malformed lines.
 */
int ml_mm_trace_add_line(struct ml_mm_trace *t, const char *line, size_t len, struct ml_err *err);

struct ml_mm_params {
	size_t sz; /* sizeof(struct ml_mm_params): memlens/opts.h */
	double bandwidth_mbps; /* MiB/s, > 0 */
	double round_interval_s; /* > 0 */
	int max_rounds; /* pre-dump rounds; 0: ML_MM_DEFAULT_MAX_ROUNDS */
	double stop_threshold_mb; /* MiB; stop pre-copy when a round sends <= this */
	int hot_intervals; /* hot-range: written in this many intervals in a row; 0: 3 */
	int hot_cool; /* hot-range: cold after this many unwritten; 0: hot_intervals */
	/* hot-range: at most this many ranges; 0: ML_HOTRANGE_EXCLUDE_MAX, as migrate */
	unsigned int hot_ranges_max;
	/*
	 * seconds a freeze costs besides sending the final round's bytes:
	 * CRIU's dump of everything but the memory and the restore; >= 0
	 */
	double freeze_overhead_s;
	/*
	 * the final dump's fixed part as the downtime sees it (the tree
	 * frozen, CRIU's dump of all but the memory, the images' way to
	 * the destination), the restore's (the process tree, its files,
	 * mappings and sockets), seconds, >= 0; and the MiB/s the restore
	 * loads the memory at, >= 0 (0: no part per byte)
	 */
	double dump_fixed_s;
	double restore_fixed_s;
	double restore_bandwidth_mbps;
	/*
	 * post-copy: the MiB/s the pages arrive at after the restore (0: the
	 * bandwidth), and the page faults the restored tree waits on, each
	 * lazy_fault_s seconds (>= 0)
	 */
	double lazy_bandwidth_mbps;
	uint64_t lazy_faults;
	double lazy_fault_s;
	/*
	 * no pre-dump round at all (max_rounds 0 means the default): the
	 * final dump at the first round boundary, as `migrate -m 0`
	 */
	bool no_precopy;
	/*
	 * the rounds at these times instead (ms since the trace started,
	 * increasing, > 0), the last one the final dump: a migration's rounds
	 * as they happened (their gaps are not even); NULL / 0: every
	 * round_interval_s. max_rounds, no_precopy and stop_threshold_mb
	 * then do not apply.
	 */
	const int64_t *round_at_ms;
	size_t nround_at;
	/*
	 * the policies to run, ML_MM_POLICY(p) or'ed; 0: all of them. A
	 * policy not run has its result zeroed but for its policy.
	 */
	unsigned int policies;
	/*
	 * hot-vma, hot-range: leave the hot memory out of the last pre-dump
	 * too, as `migrate --keep-hot-out` (and --postcopy) does; by default
	 * the last pre-dump leaves nothing out, as migrate's does: the last
	 * of the periodic rounds, or with round_at_ms the last one there when
	 * max_rounds is 0 or equals their number (a migration that stopped
	 * pre-copy sooner, on its threshold, left hot memory out of it)
	 */
	bool keep_hot_out;
};

enum ml_mm_policy { ML_MM_NONE, ML_MM_HOT_VMA, ML_MM_HOT_RANGE };
#define ML_MM_POLICY(p) (1U << (p))

struct ml_mm_round {
	int round; /* from 1; the last one is the stop-and-copy */
	uint64_t bytes;
};

/*
 * A policy's result. The caller allocates the array ml_mm_run() fills and
 * sets the first element's sz to sizeof(struct ml_mm_result) (declare it
 * with ML_MM_RESULTS()): the library steps through the array by that size
 * and writes only the fields it covers, so a program built against older
 * headers (a smaller struct) is never written past its array.
 */
struct ml_mm_result {
	size_t sz; /* sizeof(struct ml_mm_result) as the caller was compiled */
	enum ml_mm_policy policy;
	struct ml_mm_round *rounds;
	size_t nrounds;
	uint64_t total_bytes;
	uint64_t final_round_bytes;
	double downtime_ms;
	/* with post-copy: frozen for freeze_overhead_s only, the final round after */
	double postcopy_downtime_ms;
	uint64_t restored_bytes; /* the tree's memory at the final round */
	double dump_ms, restore_ms; /* the downtime's parts (without freeze_overhead_s) */
	/* with post-copy: the last page's arrival, ms after the freeze */
	double postcopy_last_page_ms;
	uint64_t lazy_bytes; /* with post-copy: the pages that arrive lazily */
};

/* An array of ML_MM_NPOLICIES results for ml_mm_run(), its sz set. */
#define ML_MM_RESULTS(NAME)                                                                        \
	struct ml_mm_result NAME[ML_MM_NPOLICIES] = { [0] = { .sz = sizeof(struct ml_mm_result) } }

const char *ml_mm_policy_name(enum ml_mm_policy p);

/*
 * Run the three policies; @out[i] is policy i (out[0].sz set by the caller:
 * ML_MM_RESULTS(); -EINVAL when it is not). Free with ml_mm_results_free().
 */
int ml_mm_run(const struct ml_mm_trace *t, const struct ml_mm_params *p, struct ml_mm_result *out,
	      struct ml_err *err);
void ml_mm_results_free(struct ml_mm_result *out);

#define ML_MM_PAGE_SIZE 4096 /* the page size a migrate record counts pages in */

/* What ml_mm_calibrate() fitted, and from what. */
struct ml_mm_fit {
	size_t sz; /* the caller sets it: sizeof(struct ml_mm_fit) (memlens/opts.h) */
	double bandwidth_mbps; /* the dump's MiB/s */
	double dump_fixed_s, restore_fixed_s;
	double restore_bandwidth_mbps; /* 0: not fitted */
	bool slope; /* bandwidth_mbps: the slope of round time on bytes (else their ratio) */
	bool restore_fixed_fitted; /* restore_fixed_s: a post-copy restore, which loads no memory */
	uint64_t final_bytes, restored_bytes; /* the record's final round, the memory it restored */
	/* post-copy: the lazy pages' MiB/s (0: not fitted), their faults, each's wait */
	double lazy_bandwidth_mbps;
	uint64_t lazy_faults;
	double lazy_fault_s;
	uint64_t lazy_bytes; /* the pages the record's restored tree got lazily */
};

/*
 * Fit the downtime's parts from @m, the record of a migration
 * (`memlens migrate --json`) that succeeded:
 *
 *   bandwidth     the slope of each round's duration on its bytes (least
 *                 squares over every round, the final dump's too), when
 *                 the rounds' bytes differ and the slope is positive;
 *                 else all bytes / all durations;
 *   dump_fixed    downtime - restore - final round bytes / bandwidth
 *                 (at least 0): all the frozen time that is not the
 *                 restore and not the final round's bytes; with
 *                 post-copy downtime - restore (the model's post-copy
 *                 downtime is the fixed parts alone);
 *   restore       without post-copy, the restore loaded the final dump's
 *                 memory (its pages_scanned pages): with restore_fixed
 *                 as @fit->restore_fixed_s says on entry, the restore
 *                 bandwidth is that memory / (restore - restore_fixed)
 *                 (0 when the restore took no longer than its fixed
 *                 part); with post-copy the restore loaded no memory:
 *                 restore_fixed is the restore's time, the restore
 *                 bandwidth is not fitted (0);
 *   lazy          with post-copy, from its "lazy" object: the faults and
 *                 their average wait as they are; the lazy bandwidth is
 *                 every page copied in (pages_copied, the parent images'
 *                 too) / (last_page - downtime - faults * their wait),
 *                 not fitted (0) when that time is not positive.
 *
 * On entry @fit->sz is set (ML_RESULT(); -EINVAL when it is not) and
 * @fit->restore_fixed_s is the restore's fixed part to assume (>= 0). -EINVAL with the reason when
 * @m is not a record to fit from (failed, no rounds, no time measured).
 */
int ml_mm_calibrate(const struct ml_migrate_rec *m, struct ml_mm_fit *fit, struct ml_err *err);

#pragma GCC visibility pop

#endif
