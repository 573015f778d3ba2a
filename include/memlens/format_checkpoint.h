/* SPDX-License-Identifier: MIT */
/*
 * The `checkpoint` JSON schema: the one "checkpoint" line memlens
 * checkpoint --json prints (the dump or pre-dump, what was left out of it,
 * the profiler around it). Written from the record below, which the
 * command fills; read back into the same record.
 */
#ifndef MEMLENS_FORMAT_CHECKPOINT_H
#define MEMLENS_FORMAT_CHECKPOINT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/format_criu.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"
#include "memlens/profiler.h"
#include "memlens/rangeset.h"

/*
 * Strings: NULL is written as "" (but see hint and error); read, they
 * point into the JSON read (valid while it is), NULL when absent.
 */
struct ml_checkpoint_rec {
	int64_t pid;
	const char *images_dir;
	bool pre_dump; /* "action": "pre-dump", else "dump" */
	bool ok;
	int64_t exit_code; /* memlens's exit status */
	struct ml_criu_caps_rec criu;
	const char *command; /* CRIU's command line */
	bool criu_ran;
	int64_t criu_exit_status; /* -1: killed or not run */
	bool timed_out;
	uint64_t duration_ms, image_bytes, bytes_written;
	/* CRIU's stats-dump; -1 unknown */
	int64_t pages_written, shpages_written, pages_scanned, pages_skipped_parent;
	struct ml_range *hot_ranges; /* "hot_ranges": [["0x..", "0x.."], ...] */
	size_t nhot_ranges;
	struct ml_checkpoint_exclusion_rec {
		bool applied; /* some exclude or no-parent range passed */
		bool skipped; /* wanted, but CRIU accepts neither exclude option */
		uint64_t exclude_ranges, no_parent_ranges;
		bool exclude_file_used;
		const char *granularity; /* NULL is written as "none" */
		const char *note;
	} exclusion;
	struct ml_checkpoint_profiler_rec {
		bool profiled; /* profiled before the checkpoint */
		bool reinit; /* tracking again after it */
		const char *note; /* why not, when not */
		uint64_t resumed_intervals;
		/*
		 * The tree's processes in the last interval before it: pid,
		 * comm, hot_bytes, cumulative_dirty_bytes and the state
		 * ("profiled", "exited" (exited), "not profiled" (failed)) are
		 * written; read, the rest is 0.
		 */
		struct ml_profiler_proc *procs;
		size_t nprocs;
		/*
		 * The tree's totals in that interval ("processes_total": count
		 * nprocs, hot_bytes, cumulative_dirty_bytes; with processes
		 * only): a shared memory page hot or written in several
		 * processes counts once, as each row counts it. Read: 0 when
		 * absent.
		 */
		uint64_t procs_hot_bytes;
		int64_t procs_dirty_bytes;
		bool has_resumed; /* the first interval after it, below */
		int64_t resumed_tracked_vmas, resumed_dirty_pages, resumed_cumulative_dirty_bytes;
	} profiler;
	const char *tcp; /* ml_criu_tcp_name() */
	const char *log; /* CRIU's log */
	const char *hint; /* NULL or "": not written */
	const char *error; /* NULL: not written */
	/*
	 * What CRIU would refuse, found before anything was frozen, and
	 * whether the command stopped there (--check-only). NULL: not
	 * written (read back: NULL when absent, else allocated, freed with
	 * the record).
	 */
	const struct ml_criu_preflight *preflight;
	bool check_only;
};

/* The "checkpoint" line, as memlens checkpoint --json writes it. */
void ml_fmt_checkpoint(struct ml_jw *w, const struct ml_checkpoint_rec *r);

/*
 * Read a "checkpoint" object. Required: "pid" (a number), "action" ("dump"
 * or "pre-dump"), "ok" (a boolean), the object "criu", "hot_ranges" (an
 * array of [start, end] hex strings) and the objects "exclusion" and
 * "profiler" ("processes" in it: an array of objects); with "preflight",
 * what ml_fmt_criu_preflight_read() needs. Numbers absent
 * read as 0. -EINVAL naming the field, -ENOMEM. Free with
 * ml_fmt_checkpoint_free() (also on error).
 */
int ml_fmt_checkpoint_read(const struct ml_json *o, struct ml_checkpoint_rec *out,
			   struct ml_err *err);
void ml_fmt_checkpoint_free(struct ml_checkpoint_rec *r);

#pragma GCC visibility pop

#endif
