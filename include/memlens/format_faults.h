/* SPDX-License-Identifier: MIT */
/*
 * The `faults` JSON Lines schema: with -i one "faults_interval" line per
 * interval (the faults it saw), then one "faults" line for the whole run
 * (with the kernel's own counts of the traced process). Written from the
 * record below, which the tracer fills; read back into the same record
 * (what report uses).
 */
#ifndef MEMLENS_FORMAT_FAULTS_H
#define MEMLENS_FORMAT_FAULTS_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/* latency histogram slots kept (log2 buckets of microseconds); more are not read */
#define ML_FAULTS_REC_HIST_MAX 64

/* One of "rows": the faults of a command (system-wide) or of a process. */
struct ml_faults_row_rec {
	char comm[32];
	int64_t pid; /* -1: none, "pid": null (system-wide rows are per command) */
	uint64_t minor, major;
	uint64_t retried;
	bool has_retried; /* false: "retried": null (tracepoint mode cannot see retries) */
};

struct ml_faults_pair_rec {
	uint64_t minor, major;
};

struct ml_faults_rec {
	bool interval; /* "faults_interval" (one -i interval); else "faults" (the run) */
	uint64_t elapsed_ms; /* an interval's: its end, since tracing began */
	bool last; /* an interval's: the last one */
	char mode[24]; /* "fentry" or "tracepoint" ("" when absent) */
	uint64_t recursion_misses;
	struct ml_faults_row_rec *rows;
	size_t nrows;
	/* up to the last slot that is not 0 (the writer stops there) */
	uint64_t minor_hist[ML_FAULTS_REC_HIST_MAX], major_hist[ML_FAULTS_REC_HIST_MAX];
	size_t nminor, nmajor;
	/*
	 * The run's only: the kernel's own counts while traced ("kernel";
	 * false: null, system-wide or not known) and how many of them the
	 * programs did not see ("not_seen", null with "kernel"), which paths
	 * those are ("" or "get_user_pages"); with -- CMD, its counts from its
	 * fork to its exec ("before_tracing"; false: null).
	 */
	bool has_kernel;
	struct ml_faults_pair_rec kernel, not_seen;
	char not_seen_paths[32];
	bool has_before;
	struct ml_faults_pair_rec before;
};

/* One "faults" or "faults_interval" line (@r->interval), as memlens faults --json writes it. */
void ml_fmt_faults(struct ml_jw *w, const struct ml_faults_rec *r);

/*
 * Read a "faults" or "faults_interval" object (its "type" says which).
 * Required: "rows" (an array of objects); an interval's "elapsed_ms" (a
 * number); the run's "minor_hist_us" and "major_hist_us" (arrays of
 * counts; an interval's may be absent). Counts absent, null or not numbers
 * read as 0. -EINVAL naming the field, -ENOMEM. Free with
 * ml_fmt_faults_free() (also on error).
 */
int ml_fmt_faults_read(const struct ml_json *o, struct ml_faults_rec *out, struct ml_err *err);
void ml_fmt_faults_free(struct ml_faults_rec *r);

#pragma GCC visibility pop

#endif
