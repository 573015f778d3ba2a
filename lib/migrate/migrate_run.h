/* SPDX-License-Identifier: MIT */
/*
 * The source side of a live migration, shared by `memlens migrate` and the
 * agent's Migrate RPC: pre-dump rounds (hot memory left out when the CRIU
 * can) until a round sends less than the threshold or the last round, the
 * final dump, its images to the destination, the restore there. Every
 * round is measured, then the downtime and the total bytes. The
 * destination is a `memlens migrate --receive` at HOST:PORT, or a
 * directory on this machine (served by a receiver thread of the caller's
 * process).
 */
#ifndef MEMLENS_MIGRATE_RUN_H
#define MEMLENS_MIGRATE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/criu.h"
#include "memlens/profiler.h"
#include "migrate_event.h"

#define MIGRATE_MAX_ROUNDS 50
#define MIGRATE_MAX_PROCS 64

struct migrate_round {
	int k; /* 1, 2, ...: the images go to DIR/K at the destination */
	bool pre_dump; /* false: the final dump */
	int64_t pages; /* written, by CRIU's stats */
	int64_t shpages; /* shared memory pages written, by CRIU's stats; -1 unknown */
	int64_t pages_scanned, pages_skipped_parent; /* the same; -1 unknown */
	/* sent: what the destination's page server stored, plus the final
	 * round's other images; by CRIU's counts when the destination's is missing */
	uint64_t bytes;
	uint64_t stored; /* what the destination stored (post-copy: every file shipped) */
	uint64_t images; /* the final round's other images, sent after it */
	uint64_t files_bytes; /* post-copy: the image files shipped, pages included */
	int64_t pages_lazy; /* post-copy's final dump: pages left for after the restore; -1 */
	uint64_t duration_ms, start_ms; /* start: since the migration began */
	size_t hot_ranges, excluded, no_parent;
	uint64_t hot_bytes;
	char note[768]; /* what was left out and why */
};

#define MIGRATE_SETTLE_MS 30000

struct migrate_opts {
	pid_t pid; /* root of the tree */
	const char *to; /* a directory on this machine, or HOST:PORT of a receiver */
	const char *work; /* the source's images: WORK/1, WORK/2, ... (exists) */
	const struct ml_criu_caps *caps;
	/* the caller's profiler of @pid (kept, released and re-initialised
	 * around each round), or NULL: one of its own while excluding */
	struct ml_profiler *prof;
	int max_rounds; /* 0: stop-and-copy */
	double threshold_mib; /* stop pre-copy after a round sending less */
	double round_s; /* between rounds */
	unsigned int interval_ms; /* its own profiler's interval */
	double hot_threshold; /* its own profiler's hot ratio; 0: the default */
	int hot_consecutive; /* hot intervals in a row before a VMA is hot; 0: the default */
	int hot_cool; /* hot ranges: unwritten intervals before cold; 0: hot_consecutive */
	unsigned int hot_ranges_max; /* hot ranges left out at most; 0: ML_HOTRANGE_EXCLUDE_MAX */
	unsigned int sample_k; /* its own profiler's sample (memlens/profiler.h); 0: every page */
	double max_overhead; /* its own profiler's bound, a share of one CPU; 0: none */
	double max_error; /* its own profiler's error bound, a share; 0: none */
	unsigned int timeout_s; /* every CRIU command */
	bool no_exclude, shell_job;
	/* the final dump leaves the pages CRIU can fetch later (private
	 * anonymous memory) at the source: the tree is restored first, then
	 * they follow (CRIU's lazy pages; userfaultfd at the destination) */
	bool postcopy;
	const char *off_note; /* why nothing is left out with no_exclude; NULL: a default */
	/* more options for dump/pre-dump, or NULL; the restore repeats those it
	 * needs (ml_criu_restore_needs()), from the final dump's record */
	const char *const *extra_args;
	/* options only the restore takes (a container's --root=, --external=mnt[]),
	 * recorded with the final dump's images, or NULL */
	const char *const *restore_args;
	/* set (by a signal handler, another thread) to end pre-copy: the final
	 * dump follows the round under way at once; NULL: never */
	const volatile bool *end_precopy;
	enum ml_criu_tcp tcp; /* established TCP connections: dump and restore */
	/*
	 * directories the tree's owner removes once the final dump has ended
	 * the tree (a podman container's cgroups, which podman's clean-up
	 * takes away while CRIU recreates them): the restore waits up to
	 * MIGRATE_SETTLE_MS for them to go; NULL-terminated, or NULL
	 */
	const char *const *settle_dirs;
	/* after each round; NULL: nothing */
	void (*on_round)(const struct migrate_round *r, void *arg);
	/* wait up to @ms; nonzero (a negative errno): give up; NULL: usleep */
	int (*pause)(unsigned int ms, void *arg);
	/* what the run has to say besides its result (migrate_event.h), its
	 * receiver thread's problems included; NULL: nothing */
	ml_mig_event_fn on_event;
	void *arg;
};

struct migrate_result {
	bool precopy; /* pre-dump rounds (the kernel has soft-dirty, rounds > 0) */
	bool exclude; /* hot memory left out of them */
	char why[256]; /* why nothing is left out */
	bool connected; /* the destination answered */
	struct migrate_round r[MIGRATE_MAX_ROUNDS + 1];
	int nr;
	uint64_t total; /* bytes of all rounds */
	uint64_t downtime_ms; /* frozen until running again at the destination */
	uint64_t dump_ms, restore_ms; /* the final round; the restore there */
	int64_t frozen_us; /* the final dump's frozen time by CRIU's count, -1 unknown */
	pid_t restored;
	/* post-copy: what came after the restore (the destination's
	 * `criu lazy-pages` log); the round's pages_lazy is what was left */
	struct migrate_lazy {
		int64_t pages_total, pages_copied; /* the daemon's count */
		int64_t pages_parent; /* of pages_copied, from the parent rounds' images */
		uint64_t bytes; /* (pages_copied - pages_parent) * 4 KiB: from the source */
		uint64_t copy_bytes; /* its copies' lengths, summed */
		uint64_t faults; /* page faults the restored tree waited on */
		uint64_t faults_served; /* of those, when their page came */
		uint64_t wait_sum_us, wait_max_us;
		uint64_t last_page_ms; /* frozen until the last page arrived */
		uint64_t done_ms; /* frozen until the source's CRIU ended */
	} lazy;
	char error[1280];
	/*
	 * The tree's processes before the final dump, as the profiler saw them
	 * in its last interval (procs_profiled), else as /proc lists them: the
	 * first MIGRATE_MAX_PROCS of nprocs_total.
	 */
	struct ml_profiler_proc procs[MIGRATE_MAX_PROCS];
	size_t nprocs, nprocs_total;
	bool procs_profiled;
	/*
	 * With procs_profiled, the tree's own totals in that interval: a shared
	 * memory page hot or written in several processes counts once (the
	 * rows each count it), and the processes past MIGRATE_MAX_PROCS count.
	 */
	uint64_t procs_hot_bytes;
	int64_t procs_dirty_bytes;
};

/*
 * What post-copy needs before anything runs: soft-dirty here, and, for a
 * directory on this machine, a tree in its own PID namespace (the tree
 * keeps its PIDs at the source until every page has arrived). 0, or a
 * negative errno with the reason in @why.
 */
int mli_migrate_postcopy_precheck(const struct migrate_opts *o, char *why, size_t len);

/* What mli_migrate_run() will do: precopy, exclude and why. */
void mli_migrate_plan(const struct migrate_opts *o, struct migrate_result *res);

/*
 * Migrate: 0 once the tree runs at the destination (res->restored), else
 * a negative errno with res->error. When the final dump happened (the
 * last round is not a pre-dump) the tree's complete images are at the
 * destination; otherwise it still runs at the source.
 */
int mli_migrate_run(const struct migrate_opts *o, struct migrate_result *res);

/*
 * The source refused the migration before its first round: when @to is
 * HOST:PORT, tell the receiver there why (ABORT), so that it exits instead
 * of waiting. Best effort, bounded (a few seconds); a directory: nothing.
 */
void mli_migrate_abort(const char *to, const char *why);

/* The note of a run that left hot memory out (for outputs). */
/* What the CRIU in use leaves out, by ml_criu_granularity(). */
#define MIGRATE_LIMITS_VMA "whole VMAs are left out; the ranges apply to every process of the tree"
#define MIGRATE_LIMITS_PAGE                                                                        \
	"hot pages are left out page by page, per process of the tree; shared memory is "          \
	"always sent"

#endif
