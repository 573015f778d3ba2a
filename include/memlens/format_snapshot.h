/* SPDX-License-Identifier: MIT */
/*
 * The `snapshot` JSON Lines schema: one "snapshot" line per collection
 * cycle (totals, mm counters, per-kind shares, one object per VMA) and one
 * "summary" line (it has "cycles") at the end. Written from the collector's
 * struct ml_snapshot, read back into the records below (what report uses).
 */
#ifndef MEMLENS_FORMAT_SNAPSHOT_H
#define MEMLENS_FORMAT_SNAPSHOT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "memlens/format.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"
#include "memlens/snapshot.h"

/* One "snapshot" line; @t_ms since the first cycle; @d (the change) may be NULL. */
void ml_fmt_snapshot(struct ml_jw *w, const struct ml_snapshot *s, const struct ml_snapshot_diff *d,
		     uint64_t seq, int64_t t_ms);

struct ml_snapshot_summary {
	pid_t pid;
	uint64_t cycles;
	uint64_t cycle_us_min, cycle_us_median, cycle_us_max, cycle_us_mean;
	uint64_t cycles_not_exact; /* snapshots the kernel's RSS did not confirm */
	enum ml_stop why;
	/* periodic mode (0: one snapshot): the interval asked for, the cycles it
	 * would have given from the first cycle to the stop, and whether they
	 * were taken (at least 95% of them) */
	uint64_t interval_ms, cycles_wanted;
	bool interval_kept;
	const char *command; /* the target's argv, space-separated; NULL: not known */
};

void ml_fmt_snapshot_summary(struct ml_jw *w, const struct ml_snapshot_summary *sum);

/* Page counts as read (absent or null: 0). */
struct ml_snap_counts_rec {
	double size_pages, resident_pages, swapped_pages, file_pages, huge_pages, zero_pages;
	double written_pages;
	bool has_written; /* "written_pages" was there (write tracking) */
	bool has_flags; /* "page_flags" with a "dirty" count was there */
	double dirty, referenced, active, lru, anon, swapbacked, shared; /* page_flags */
	double swap_unknown_vmas; /* VMAs whose shmem swap was not known (absent: 0) */
};

struct ml_snap_region_rec {
	uint64_t start, end; /* 0 when absent */
	char perms[8], kind[16]; /* "" when absent */
	char *path; /* NULL when absent */
	struct ml_snap_counts_rec c;
	bool has_delta, is_new;
	double d_size, d_resident, d_swapped, d_file, d_huge, d_zero;
};

struct ml_snapshot_rec {
	double pid, seq, t_ms, cycle_us, scan_threads, recounts, page_size, vmas;
	bool exact; /* "exact" (true when absent) */
	struct ml_snap_counts_rec totals;
	struct ml_snap_region_rec *regions;
	size_t nregions;
};

/*
 * Read a "snapshot" object. Required: "t_ms" (a number) and "regions" (an
 * array of objects, each with a number "resident_pages"). -EINVAL naming
 * the field, -ENOMEM. Free with ml_fmt_snapshot_free() (also on error).
 */
int ml_fmt_snapshot_read(const struct ml_json *o, struct ml_snapshot_rec *out, struct ml_err *err);
void ml_fmt_snapshot_free(struct ml_snapshot_rec *r);

struct ml_snapshot_summary_rec {
	double pid, cycles, cycle_us_min, cycle_us_median, cycle_us_max, cycle_us_mean;
	double cycles_not_exact;
	double interval_ms, cycles_wanted; /* 0 when absent */
	bool interval_kept; /* true when absent */
	enum ml_stop why;
	char why_word[64]; /* "stopped_because" as written ("" when absent) */
	char command[256]; /* "command" ("" when absent) */
};

/* Read a snapshot "summary" object (every field optional). */
void ml_fmt_snapshot_summary_read(const struct ml_json *o, struct ml_snapshot_summary_rec *out);

#pragma GCC visibility pop

#endif
