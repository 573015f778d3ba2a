/* SPDX-License-Identifier: MIT */
/*
 * The `writes` JSON Lines schema: one "interval" line per profiler interval
 * (with "written" page ranges for --record), one "summary" line at the end.
 * Written from the profiler's samples, read back into the records below
 * (what report and migrate-model use).
 */
#ifndef MEMLENS_FORMAT_WRITES_H
#define MEMLENS_FORMAT_WRITES_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/attach.h"
#include "memlens/err.h"
#include "memlens/format.h"
#include "memlens/hotrange.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"
#include "memlens/profiler.h"
#include "memlens/rangeset.h"

/* One "interval" line; @with_written adds the page ranges (--record). */
void ml_fmt_writes_interval(struct ml_jw *w, pid_t pid, const struct ml_profiler_sample *s,
			    bool with_written);

struct ml_writes_summary {
	pid_t pid;
	uint64_t intervals;
	enum ml_stop why;
	const struct ml_attach_stats *attach; /* NULL: no "attach" object */
	const struct ml_profiler_sample *last; /* the last interval; NULL: none */
	/* the interval asked for (0: no "interval_ms" &c.), the intervals it
	 * would have given from the start to the stop, whether it was kept (no
	 * tick longer than the interval, and at least 95% of the intervals
	 * taken), the longest tick and how many ticks took longer than the
	 * interval in force (ml_profiler_sample.tick_over_interval) */
	uint64_t interval_ms, intervals_wanted, tick_ns_max, ticks_over_interval;
	bool interval_kept;
	/*
	 * A sampled run: the largest standard error of a VMA's written ratio
	 * its intervals stated (VMAs sampled in them only), and in how many
	 * intervals one was over ML_WRITES_STDERR_NOTE: then the summary has a
	 * "sampling_error" object with a note. 0: none was.
	 */
	double ratio_stderr_max;
	uint64_t ratio_stderr_over;
};

/* A sampled written ratio less certain than this (its standard error) is noted. */
#define ML_WRITES_STDERR_NOTE 0.05

/* What the note says to do (the summary's text and JSON). */
#define ML_WRITES_STDERR_ADVICE                                                                    \
	"writes too sparse for the sample to estimate well: profile longer (-d), sample more "     \
	"pages (a smaller K in --sample 1/K), track every page (no --sample) or let "              \
	"--max-error choose the fraction"

/* The "summary" line: the last interval's counts and hot regions. */
void ml_fmt_writes_summary(struct ml_jw *w, const struct ml_writes_summary *sum);

/* The "dirty" object of both lines (numbers as read: absent or null is 0). */
struct ml_writes_dirty_rec {
	double dirty_pages, dirty_bytes, rate_pps;
	double cumulative_dirty_bytes, avg_dirty_rate, timestamp_ms;
};

struct ml_writes_region_rec {
	uint64_t start, end;
	char kind[16]; /* "" when absent */
	char path[512]; /* the mapped file ("" when none or absent; cut at 511 bytes) */
	double written_ratio; /* NAN when absent */
	double total_pages, dirty_pages, consecutive_hot;
	bool hot, has_hot;
	int64_t pid; /* a tree's: the process (0 when absent) */
	bool shared; /* shared memory (it has a "shared" object) */
	/* "resident_pages" (a trace recorded since memlens counts them): the pages dumped */
	bool has_resident;
	double resident_pages;
};

/* The "hot_ranges" object of both lines. */
struct ml_writes_hot_rec {
	bool present; /* false: the line has none (written by an older memlens) */
	struct ml_hotrange_range *r;
	size_t n;
	double unmerged, hot_bytes, merge_cost_bytes;
};

struct ml_writes_interval_rec {
	double pid, seq, t_ms, interval_s, total_vmas, tracked_vmas, hot_vmas, tick_us;
	int64_t t_ms_int; /* t_ms when it is an integer */
	bool t_ms_is_int;
	struct ml_writes_dirty_rec dirty;
	struct ml_writes_region_rec *regions;
	size_t nregions;
	struct ml_range *written; /* [start, end) pairs, start <= end */
	int64_t *written_pid; /* a tree's "written_pid": the process of each, or NULL */
	size_t nwritten;
	bool has_written;
	struct ml_writes_hot_rec hot;
};

/*
 * Read an "interval" object. Required: "t_ms" (a number), "regions" (an
 * array of objects with hex "start_addr"/"end_addr"); "written", when
 * present, an array of ["0xSTART", "0xEND"] pairs; "hot_ranges", when
 * present, an object with a "ranges" array. -EINVAL naming the
 * field, -ENOMEM. Free with ml_fmt_writes_interval_free() (also on error).
 */
int ml_fmt_writes_interval_read(const struct ml_json *o, struct ml_writes_interval_rec *out,
				struct ml_err *err);
void ml_fmt_writes_interval_free(struct ml_writes_interval_rec *r);

struct ml_writes_attach_rec {
	double stopped_ms, threads_held, in_nonrestartable, restarted, syscalls;
};

struct ml_writes_summary_rec {
	double pid, intervals, total_vmas, tracked_vmas, hot_vmas;
	enum ml_stop why;
	char why_word[64]; /* "stopped_because" as written ("" when absent) */
	bool has_attach;
	struct ml_writes_attach_rec attach;
	struct ml_writes_region_rec *regions; /* the hot ones */
	size_t nregions;
	struct ml_writes_dirty_rec dirty;
	struct ml_writes_hot_rec hot;
};

/*
 * Read a writes "summary" object: every field optional; "regions", when
 * present, as in an interval. Free with ml_fmt_writes_summary_free().
 */
int ml_fmt_writes_summary_read(const struct ml_json *o, struct ml_writes_summary_rec *out,
			       struct ml_err *err);
void ml_fmt_writes_summary_free(struct ml_writes_summary_rec *r);

#pragma GCC visibility pop

#endif
