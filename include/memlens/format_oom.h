/* SPDX-License-Identifier: MIT */
/*
 * The `oom` JSON Lines schema: one "oom_kill" line per kill as it happens,
 * with -i one "oom_interval" line per interval, and one "oom_summary" line
 * at the end. Written from the records below, which the tracer fills; read
 * back into the same records (what report uses).
 */
#ifndef MEMLENS_FORMAT_OOM_H
#define MEMLENS_FORMAT_OOM_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

struct ml_oom_kill_rec {
	uint64_t time_ms; /* wall clock, ms since the epoch */
	uint64_t victim_pid;
	int64_t trigger_pid; /* -1: not known (null or absent) */
	char victim_comm[32], trigger_comm[32]; /* "" when absent */
	uint64_t anon_rss_kb, file_rss_kb, shmem_rss_kb, total_vm_kb;
	uint64_t limit_kb; /* the limit that was hit */
	char scope[16]; /* "cgroup", "global" or "unknown" */
	char cgroup[512]; /* the memory cgroup of the limit ("" when absent) */
	char source[16]; /* "fentry" or "tracepoint" */
};

/* One "oom_kill" line. */
void ml_fmt_oom_kill(struct ml_jw *w, const struct ml_oom_kill_rec *r);
/* Read an "oom_kill" object. Required: counts "time_ms" and "victim_pid". -EINVAL naming it. */
int ml_fmt_oom_kill_read(const struct ml_json *o, struct ml_oom_kill_rec *out, struct ml_err *err);

struct ml_oom_count_rec {
	bool interval; /* "oom_interval" (one -i interval); else "oom_summary" (the run) */
	uint64_t elapsed_ms; /* an interval's: its end, since tracing began */
	bool last; /* an interval's: the last one */
	uint64_t kills; /* in the interval, or in the run */
	uint64_t lost; /* kills not reported: the ring buffer was full */
	uint64_t recursion_misses;
};

/* One "oom_interval" or "oom_summary" line (@r->interval). */
void ml_fmt_oom_count(struct ml_jw *w, const struct ml_oom_count_rec *r);
/*
 * Read an "oom_interval" or "oom_summary" object (its "type" says which).
 * Required: the count "kills"; an interval's "elapsed_ms" (a number).
 * -EINVAL naming the field.
 */
int ml_fmt_oom_count_read(const struct ml_json *o, struct ml_oom_count_rec *out,
			  struct ml_err *err);

#pragma GCC visibility pop

#endif
