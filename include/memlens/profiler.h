/* SPDX-License-Identifier: MIT */
/*
 * The write profiler: async write-protect tracking of a
 * target's writable private VMAs and of its writable shared memory (shmem,
 * memfd, SysV, shared anonymous; where the kernel can), one PAGEMAP_SCAN
 * per interval, a heat
 * classifier per VMA, the hot ranges inside them (memlens/hotrange.h, from
 * the same written page ranges), and the dirty-volume numbers of
 * GetDirtyVolume.
 */
#ifndef MEMLENS_PROFILER_H
#define MEMLENS_PROFILER_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/attach.h"
#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/hotrange.h"
#include "memlens/maps.h"
#include "memlens/rangeset.h"

#define ML_PROFILER_DEFAULT_INTERVAL_MS 1000

struct ml_profiler_opts {
	size_t sz; /* sizeof(struct ml_profiler_opts): memlens/opts.h */
	unsigned int interval_ms; /* 0: default */
	double hot_threshold; /* 0: default */
	int hot_consecutive; /* 0: default */
	int hot_cool; /* hot ranges: unwritten intervals before cold; 0: hot_consecutive */
	unsigned int hot_ranges_max; /* hot ranges reported at most; 0: ML_HOTRANGE_DEFAULT_MAX */
	bool record_ranges; /* keep the written page ranges of each interval */
	bool target_stopped; /* pid is our tracee, in a ptrace-stop (spawn mode) */
	/*
	 * Profile the process tree of pid: every descendant too, each with a
	 * profiler of its own; children forked later are taken at the next
	 * interval, children that exit stay in the totals, marked exited.
	 */
	bool tree;
	/*
	 * Sampled tracking (memlens/sample.h): each interval write-protect
	 * 1/sample_k of every VMA's pages, a rotating sample of blocks, and
	 * estimate from them. 0 or 1: every page (exact), unless max_overhead
	 * makes it sample. With tree, each process's own (a tree's sample
	 * says the least fraction any process used, their faults and cost
	 * summed; its shared memory estimates are not deduplicated).
	 */
	unsigned int sample_k;
	/*
	 * Keep the cost of tracking to the target under this share of one
	 * CPU (0.05: 5%): the sample fraction (1/sample_k at most) and if need
	 * be the interval follow the cost measured each interval. 0: no bound.
	 * With tree, the bound is each process's, and the interval follows
	 * the root's cost.
	 */
	double max_overhead;
	/*
	 * Cost of one tracked write fault, ns of the target's CPU; 0: measured
	 * on this machine when sampling (ml_wp_fault_ns()), else
	 * ML_SAMPLE_DEFAULT_FAULT_NS. ml_profiler_options() says the one in use.
	 */
	unsigned int fault_ns;
	/*
	 * Bound the error of the sampled estimates (memlens/sample.h,
	 * ml_sample_policy_error()): a VMA's standard error of its written
	 * pages under this share of them (0.05: 5%). Starts exact, samples
	 * 1/sample_k at least (0: ML_SAMPLE_ERROR_DEFAULT_K) while the error
	 * allows, more pages while it is over, within max_overhead (0:
	 * ML_SAMPLE_ERROR_DEFAULT_MAX_CPU). 0: no bound (sample_k fixed).
	 */
	double max_error;
	/*
	 * Count each tracked VMA's resident pages every interval (present or
	 * swapped, not the zero page, not a private mapping's file pages: the
	 * pages a checkpoint dumps), ml_profiler_region.resident_pages; one
	 * PAGEMAP_SCAN query per VMA more. With tree, every process's.
	 */
	bool count_resident;
};

struct ml_profiler_region {
	uint64_t start, end;
	enum ml_vma_kind kind;
	uint64_t total_pages;
	uint64_t dirty_pages; /* this interval */
	double written_ratio; /* this interval */
	int consecutive_hot;
	bool hot;
	/* the mapping's name in maps ("" for none); lives as long as the sample */
	const char *path;
	pid_t pid; /* the process whose VMA it is */
	/* shared memory: the object (device, inode) and the VMA's first page in it */
	bool shared;
	uint32_t dev; /* major << 20 | minor */
	uint64_t inode, pgoff;
	/*
	 * A sampled interval: dirty_pages and written_ratio are estimates
	 * from sampled_pages write-protected pages, of which sampled_dirty
	 * were written; ratio_stderr is the estimate's standard error. A VMA
	 * no block of which was sampled keeps its last estimate (sampled_pages 0).
	 */
	bool estimated;
	uint64_t sampled_pages, sampled_dirty;
	double ratio_stderr;
	/* with count_resident: the pages of the VMA a checkpoint dumps */
	bool has_resident;
	uint64_t resident_pages;
};

/* How an interval was tracked. */
struct ml_profiler_sampling {
	bool on; /* sampling asked for (sample_k > 1 or max_overhead) */
	unsigned int k; /* 1/k of the pages were write-protected (1: all) */
	uint64_t faults; /* tracked write faults the target took (pages found written) */
	double cost; /* their cost, a share of one CPU (faults * fault_ns / interval) */
	/*
	 * The target's minor faults in the interval (/proc/PID/stat): the
	 * tracked ones and every other (first touches, ...); a tree's summed
	 */
	uint64_t minflt;
	unsigned int next_k; /* the next interval's */
	unsigned int next_interval_ms;
	uint64_t fault_ns; /* the cost of one tracked fault the cost counts */
	bool fault_ns_measured; /* measured on this machine (else given, or the default) */
	/*
	 * With max_error: the bound, the error this interval's fraction has
	 * (the largest relative standard error of a VMA's written pages; 0
	 * exact) and the one predicted at the next; -1: not known (no VMA
	 * large enough to measure it). A tree's: its processes' largest.
	 */
	double max_error, error, next_error;
};

/* One process of a profiled tree (ml_profiler_opts.tree). */
struct ml_profiler_proc {
	pid_t pid, ppid;
	char comm[16];
	bool exited; /* gone: its numbers are those it had when it exited */
	bool failed; /* could not be profiled (note says why): not counted */
	char note[160];
	int tracked_vmas;
	int shared_untracked;
	int64_t dirty_pages; /* this interval, its shared memory pages included */
	int64_t shared_dirty_pages; /* of which shared memory */
	int64_t cumulative_dirty_bytes;
	uint64_t hot_bytes; /* of its hot ranges */
};

/* GetDirtyVolumeResponse. */
struct ml_profiler_dirty {
	int64_t dirty_pages; /* last interval */
	int64_t dirty_bytes; /* last interval */
	double dirty_rate_pages_per_sec; /* dirty_pages / interval seconds */
	int64_t cumulative_dirty_bytes; /* since start (or the last re-init) */
	double avg_dirty_rate; /* cumulative_dirty_bytes / elapsed seconds */
	int64_t timestamp_ms; /* wall clock, ms since the epoch */
};

struct ml_profiler_sample {
	uint64_t seq; /* interval number, from 1 */
	int64_t t_ms; /* ms since profiling started */
	double interval_s; /* measured length of this interval */
	struct ml_profiler_dirty dirty;
	int total_vmas; /* every VMA of the target */
	int tracked_vmas; /* writable private VMAs registered */
	int hot_vmas;
	struct ml_profiler_region *regions; /* tracked VMAs, by address */
	size_t nregions;
	struct ml_range *written; /* with record_ranges: written page ranges */
	pid_t *written_pid; /* a tree's: the process of each written range */
	size_t nwritten;
	struct ml_hotrange_set hot; /* the hot ranges inside the tracked VMAs */
	struct ml_profiler_sampling sampling;
	char *paths; /* the regions' paths, one after another */
	uint64_t tick_ns; /* cost of this tick */
	uint64_t scan_ns; /* of which PAGEMAP_SCAN */
	bool target_exited;
	/*
	 * Writable shared memory VMAs this kernel cannot write-protect
	 * (no UFFD_FEATURE_WP_HUGETLBFS_SHMEM): not tracked, not counted.
	 */
	int shared_untracked;
	/*
	 * A tree (ml_profiler_opts.tree): regions, hot ranges and written ranges
	 * of every process (each says its pid), and one row per process. The
	 * dirty numbers and hot.hot_bytes are the tree's: a shared memory page
	 * written (or hot) in two processes counts once (by its object and
	 * offset); shared_dirty_pages is how many shared memory pages of the
	 * tree were written.
	 */
	bool tree;
	struct ml_profiler_proc *procs;
	size_t nprocs;
	int64_t shared_dirty_pages;
	/*
	 * The interval this tick was due after (the one in force when it
	 * started: --max-overhead may lengthen it), and whether the tick took
	 * longer than it: tick_ns in whole microseconds, as the records give
	 * it, over interval_ms. Such a tick delays the next one, so the
	 * interval is not kept.
	 */
	unsigned int interval_ms;
	bool tick_over_interval;
};

struct ml_profiler;

/* Called from the profiler thread after each interval. */
typedef void (*ml_profiler_tick_fn)(const struct ml_profiler_sample *s, void *arg);

/* Inject, register every writable private VMA, write-protect baseline, verify. */
int ml_profiler_open(struct ml_profiler **out, pid_t pid, const struct ml_profiler_opts *o,
		     struct ml_err *err);
/* One interval, synchronously (no thread). -ESRCH: the target exited. */
int ml_profiler_tick(struct ml_profiler *p, struct ml_profiler_sample *out, struct ml_err *err);
/* Run ticks every interval_ms on a thread of its own. */
int ml_profiler_start(struct ml_profiler *p, ml_profiler_tick_fn fn, void *arg, struct ml_err *err);
/* Stop the thread (idempotent). */
void ml_profiler_stop(struct ml_profiler *p);
/* True while the thread runs; false after the target exited or a fatal error. */
bool ml_profiler_running(struct ml_profiler *p);
/* The thread's fatal error, if it stopped by itself. */
int ml_profiler_error(struct ml_profiler *p, struct ml_err *err);
/* Copy of the latest sample (caller frees with profiler_sample_free). */
int ml_profiler_latest(struct ml_profiler *p, struct ml_profiler_sample *out);
/* Unregister everything, close all fds. The target is left as it was. */
void ml_profiler_close(struct ml_profiler *p);

/*
 * stop the loop, unregister every VMA, reset the VMAs' heat (before CRIU);
 * the pages' heat (the hot ranges) is kept, the time released counting as
 * no interval
 */
int ml_profiler_release(struct ml_profiler *p, struct ml_err *err);
/* re-read maps, register, baseline, reset counters, restart the loop if it ran. */
int ml_profiler_reinit(struct ml_profiler *p, struct ml_err *err);

pid_t ml_profiler_pid(const struct ml_profiler *p);
const struct ml_attach_stats *ml_profiler_attach_stats(const struct ml_profiler *p);
const struct ml_profiler_opts *ml_profiler_options(const struct ml_profiler *p);

void ml_profiler_sample_free(struct ml_profiler_sample *s);
int ml_profiler_sample_copy(struct ml_profiler_sample *dst, const struct ml_profiler_sample *src);

#pragma GCC visibility pop

#endif
