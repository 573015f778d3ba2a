/* SPDX-License-Identifier: MIT */
/*
 * The `migrate` JSON schema: the one "migrate" line memlens migrate --json
 * prints (each round, the downtime, post-copy's pages after the restore).
 * Written from the record below, which the command fills; read back into
 * the same record.
 */
#ifndef MEMLENS_FORMAT_MIGRATE_H
#define MEMLENS_FORMAT_MIGRATE_H

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

/* One of "rounds": a pre-dump or the final dump. */
struct ml_migrate_round_rec {
	int64_t round; /* 1, 2, ... */
	bool pre_dump; /* "kind": "pre-dump", else "dump" */
	int64_t pages, shpages, pages_scanned, pages_skipped_parent; /* CRIU's; -1 unknown */
	uint64_t bytes, stored_bytes, images_bytes;
	uint64_t files_bytes; /* post-copy only */
	int64_t pages_lazy; /* post-copy only; -1 unknown */
	uint64_t start_ms, duration_ms;
	uint64_t hot_ranges, hot_bytes, excluded_ranges, no_parent_ranges;
	const char *note;
};

/* --container: the container migrated */
struct ml_migrate_container_rec {
	const char *id, *name, *runtime;
	int64_t init_pid;
	const char *rootfs;
	uint64_t bind_mounts;
};

/* post-copy: what came after the restore */
struct ml_migrate_lazy_rec {
	int64_t pages_left; /* the final dump's pages_lazy; -1 unknown */
	int64_t pages_total, pages_copied, pages_parent;
	uint64_t bytes, copy_bytes, faults, faults_served;
	uint64_t fault_wait_avg_us, fault_wait_max_us, last_page_ms, source_done_ms;
};

/*
 * Strings: NULL is written as "" (but see limits and error); read, they
 * point into the JSON read (valid while it is), NULL when absent.
 */
struct ml_migrate_rec {
	int64_t pid;
	bool has_container; /* "container" written (--container) */
	struct ml_migrate_container_rec container;
	const char *to;
	bool ok;
	struct ml_criu_caps_rec criu;
	bool precopy; /* pre-dump rounds */
	bool exclusion; /* hot memory left out of them */
	struct ml_migrate_round_rec *rounds;
	size_t nrounds;
	bool postcopy; /* also: each round's files_bytes and pages_lazy, and "lazy" */
	uint64_t total_bytes;
	const char *tcp; /* ml_criu_tcp_name() */
	struct ml_migrate_lazy_rec lazy; /* post-copy only */
	uint64_t downtime_ms, final_dump_ms;
	int64_t frozen_in_dump_ms; /* -1 unknown */
	uint64_t restore_ms;
	int64_t restored_pid;
	const char *granularity;
	const char *limits; /* NULL: not written */
	const char *error; /* NULL or "": not written */
	/*
	 * What CRIU would refuse, found before anything was frozen, and
	 * whether the command stopped there (--check-only). NULL: not
	 * written (read back: NULL when absent, else allocated, freed with
	 * the record).
	 */
	const struct ml_criu_preflight *preflight;
	bool check_only;
	/*
	 * The tree's processes before the final dump: "processes" (pid, ppid,
	 * comm, state, hot_bytes, cumulative_dirty_bytes, as the profiler saw
	 * them; state "listed" when nothing profiled them) and "processes_total"
	 * (count, and procs_hot_bytes and procs_dirty_bytes as hot_bytes and
	 * cumulative_dirty_bytes). nprocs 0: not written.
	 * Read back (allocated, freed with the record): pid, ppid, comm,
	 * exited, failed, hot_bytes and cumulative_dirty_bytes, nprocs_total
	 * from "processes_total" "count", procs_profiled unless the state is
	 * "listed", the tree's totals; the rest is 0.
	 */
	const struct ml_profiler_proc *procs;
	size_t nprocs;
	size_t nprocs_total; /* in the tree (nprocs of them kept) */
	bool procs_profiled;
	/*
	 * The tree's totals as its profiler counts them: a shared memory page
	 * hot or written in several processes counts once (each row counts
	 * it), so they are at most the rows' sums. 0 unless procs_profiled.
	 */
	uint64_t procs_hot_bytes;
	int64_t procs_dirty_bytes;
};

/* The "migrate" line, as memlens migrate --json writes it. */
void ml_fmt_migrate(struct ml_jw *w, const struct ml_migrate_rec *r);

/*
 * Read a "migrate" object. Required: "pid" (a number), "ok" (a boolean),
 * the object "criu" and "rounds" (an array of objects, each with "kind"
 * "pre-dump" or "dump"); with "postcopy" true, the object "lazy"; with
 * "container", an object; with "processes", an array of objects and the
 * object "processes_total"; with "preflight", what
 * ml_fmt_criu_preflight_read() needs. Numbers absent read as 0. -EINVAL naming the
 * field, -ENOMEM. Free with ml_fmt_migrate_free() (also on error).
 */
int ml_fmt_migrate_read(const struct ml_json *o, struct ml_migrate_rec *out, struct ml_err *err);
void ml_fmt_migrate_free(struct ml_migrate_rec *r);

#pragma GCC visibility pop

#endif
