/* SPDX-License-Identifier: MIT */
/*
 * Live migration of a process tree with CRIU, as `memlens migrate` runs it:
 * pre-dump rounds (hot memory left out when the CRIU can) until a round
 * sends less than the threshold or the last round, the final dump, its
 * images to the destination, the restore there; every round measured, then
 * the downtime and the total bytes. The destination is a receiver
 * (ml_migrate_receive(), `memlens migrate --receive`) at HOST:PORT, or a
 * directory on this machine (served by a receiver thread of the caller's
 * process). Needs root and a CRIU (memlens/criu.h: ml_criu_probe()).
 *
 *	ML_OPTS(ml_migrate_opts, o, .pid = pid, .to = "/srv/images",
 *		.work = "/tmp/work", .caps = &caps, .max_rounds = 5);
 *	struct ml_migration *m;
 *	if (ml_migration_open(&m, &o, &err) == 0) {
 *		int r = ml_migration_run(m);
 *		const struct ml_migrate_result *x = ml_migration_result(m);
 *		...  x->restored, x->downtime_ms, ml_migration_round(m, i)
 *		ml_migration_close(m);
 *	}
 *
 * What the library hands back it owns (the result, the rounds, the
 * processes): read through the pointers it returns, a program built
 * against an older header reads the fields it knows and never writes.
 */
#ifndef MEMLENS_MIGRATE_H
#define MEMLENS_MIGRATE_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/criu.h"
#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/profiler.h"

#define ML_MIGRATE_MAX_ROUNDS 50 /* max_rounds at most */
#define ML_MIGRATE_MAX_PROCS 64 /* the tree's processes kept in a result */
/* how long a restore waits for settle_dirs to go, ms */
#define ML_MIGRATE_SETTLE_MS 30000

/* What the CRIU in use leaves out (by ml_criu_granularity()), for outputs. */
#define ML_MIGRATE_LIMITS_VMA                                                                      \
	"whole VMAs are left out; the ranges apply to every process of the tree"
#define ML_MIGRATE_LIMITS_PAGE                                                                     \
	"hot pages are left out page by page, per process of the tree; shared memory is "          \
	"always sent"

/* ---- what a migration says while it runs --------------------------------- */

/*
 * Besides its result: the library prints nothing, it hands each message to
 * the caller's callback (on_event, arg of the options), which prints it,
 * logs it or drops it. Progress comes from the receiver only with its
 * verbose option; the problems always come.
 */
enum ml_mig_ev {
	/* the receiver (progress, with verbose) */
	ML_MIG_EV_RESTORED, /* the tree runs here: pid, dir, ms */
	ML_MIG_EV_RESTORED_LAZY, /* the same, its lazy pages still to come */
	ML_MIG_EV_LAZY_DONE, /* every lazy page arrived (counts in msg) */
	/* the receiver (problems) */
	ML_MIG_EV_DIR_FAILED, /* its images root cannot be created: dir, err */
	ML_MIG_EV_STORE_FAILED, /* an image file cannot be stored: dir, name, err */
	ML_MIG_EV_ABORTED, /* the source refused the migration before its first round */
	/* the source (problems) */
	ML_MIG_EV_LAZY_DUMP_FAILED, /* its lazy dump failed once every page was delivered */
};

struct ml_mig_event {
	enum ml_mig_ev kind;
	/* the whole message, one line without its newline, not naming the
	 * program: `memlens migrate` prints "memlens migrate: MSG" */
	const char *msg;
	const char *dir; /* the images directory concerned, or NULL */
	const char *name; /* STORE_FAILED: the image file */
	int err; /* a negative errno, or 0 */
	pid_t pid; /* RESTORED*: the restored tree's root */
	uint64_t ms; /* RESTORED*: how long the restore took */
};

/* Called from the thread that runs the step (for a directory destination,
 * the source's receiver thread too): keep it short, thread-safe. */
typedef void (*ml_mig_event_fn)(const struct ml_mig_event *ev, void *arg);

/* ---- the source ------------------------------------------------------------ */

/* One round, owned by the library (on_round, ml_migration_round()). */
struct ml_migrate_round {
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

/* How ml_migration_open() migrates (declare with ML_OPTS()). */
struct ml_migrate_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	pid_t pid; /* root of the tree */
	const char *to; /* a directory on this machine, or HOST:PORT of a receiver */
	const char *work; /* the source's images: WORK/1, WORK/2, ... (exists) */
	const struct ml_criu_caps *caps; /* the CRIU in use (ml_criu_probe()) */
	/* the caller's profiler of @pid (kept, released and re-initialised
	 * around each round), or NULL: one of its own while excluding */
	struct ml_profiler *prof;
	int max_rounds; /* 0..ML_MIGRATE_MAX_ROUNDS; 0: stop-and-copy */
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
	 * ML_MIGRATE_SETTLE_MS for them to go; NULL-terminated, or NULL
	 */
	const char *const *settle_dirs;
	/* after each round; NULL: nothing */
	void (*on_round)(const struct ml_migrate_round *r, void *arg);
	/* wait up to @ms; nonzero (a negative errno): give up; NULL: usleep */
	int (*pause)(unsigned int ms, void *arg);
	/* what the run has to say besides its result, its receiver thread's
	 * problems included; NULL: nothing */
	ml_mig_event_fn on_event;
	void *arg; /* on_round's, pause's and on_event's */
	/*
	 * leave the hot pages out of the last pre-dump round too (the final
	 * dump then carries them: fewer bytes, a longer downtime); by
	 * default the last round (max_rounds) leaves nothing out, so the
	 * final dump carries only what is written after it. Post-copy always
	 * leaves them out: they follow the restore.
	 */
	bool keep_hot_out;
};

/* Post-copy: what came after the restore (the destination's `criu lazy-pages` log). */
struct ml_migrate_lazy {
	int64_t pages_total, pages_copied; /* the daemon's count */
	int64_t pages_parent; /* of pages_copied, from the parent rounds' images */
	uint64_t bytes; /* (pages_copied - pages_parent) * 4 KiB: from the source */
	uint64_t copy_bytes; /* its copies' lengths, summed */
	uint64_t faults; /* page faults the restored tree waited on */
	uint64_t faults_served; /* of those, when their page came */
	uint64_t wait_sum_us, wait_max_us;
	uint64_t last_page_ms; /* frozen until the last page arrived */
	uint64_t done_ms; /* frozen until the source's CRIU ended */
};

/* A migration's result, owned by the library (ml_migration_result()). */
struct ml_migrate_result {
	bool precopy; /* pre-dump rounds (the kernel has soft-dirty, rounds > 0) */
	bool exclude; /* hot memory left out of them */
	char why[256]; /* why nothing is left out */
	bool connected; /* the destination answered */
	int nr; /* rounds: ml_migration_round(m, 0 .. nr - 1) */
	uint64_t total; /* bytes of all rounds */
	uint64_t downtime_ms; /* frozen until running again at the destination */
	uint64_t dump_ms, restore_ms; /* the final round; the restore there */
	int64_t frozen_us; /* the final dump's frozen time by CRIU's count, -1 unknown */
	pid_t restored; /* the restored tree's root at the destination */
	struct ml_migrate_lazy lazy; /* post-copy; the last round's pages_lazy is what was left */
	char error[1280]; /* why it failed */
	/*
	 * The tree's processes before the final dump (ml_migration_proc(m,
	 * 0 .. nprocs - 1)), as the profiler saw them in its last interval
	 * (procs_profiled), else as /proc lists them: the first
	 * ML_MIGRATE_MAX_PROCS of nprocs_total.
	 */
	size_t nprocs, nprocs_total;
	bool procs_profiled;
	/*
	 * With procs_profiled, the tree's own totals in that interval: a shared
	 * memory page hot or written in several processes counts once (the
	 * rows each count it), and the processes past ML_MIGRATE_MAX_PROCS count.
	 */
	uint64_t procs_hot_bytes;
	int64_t procs_dirty_bytes;
};

struct ml_migration;

/*
 * A migration of @o's tree, not started: its options checked and copied
 * (the strings and arrays they point to are not: they must outlive it),
 * its plan in the result (precopy, exclude, why). 0 and *@out, or -EINVAL
 * (bad options) / -ENOMEM with @err.
 */
int ml_migration_open(struct ml_migration **out, const struct ml_migrate_opts *o,
		      struct ml_err *err);
/*
 * What post-copy needs before anything runs: soft-dirty here, and, for a
 * directory on this machine, a tree in its own PID namespace (the tree
 * keeps its PIDs at the source until every page has arrived). 0 (always
 * without postcopy), or a negative errno with the reason in the result's
 * error. ml_migration_run() checks it too.
 */
int ml_migration_check_postcopy(struct ml_migration *m);
/*
 * Migrate (once): 0 once the tree runs at the destination (the result's
 * restored), else a negative errno with the result's error. When the final
 * dump happened (the last round is not a pre-dump) the tree's complete
 * images are at the destination; otherwise it still runs at the source.
 */
int ml_migration_run(struct ml_migration *m);
/* The plan, then the run's result; valid until ml_migration_close(). */
const struct ml_migrate_result *ml_migration_result(const struct ml_migration *m);
/* Round @i (0 .. nr - 1), or NULL. */
const struct ml_migrate_round *ml_migration_round(const struct ml_migration *m, int i);
/* Process @i of the tree (0 .. nprocs - 1), or NULL. */
const struct ml_profiler_proc *ml_migration_proc(const struct ml_migration *m, size_t i);
/* Free (NULL: nothing). */
void ml_migration_close(struct ml_migration *m);

/*
 * The source refused the migration before its first round: when @to is
 * HOST:PORT, tell the receiver there why, so that it exits instead of
 * waiting. Best effort, bounded (a few seconds); a directory: nothing.
 */
void ml_migrate_abort(const char *to, const char *why);

/* ---- the destination --------------------------------------------------------- */

/* How ml_migrate_receive() serves (declare with ML_OPTS()). */
struct ml_migrate_recv_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	const char *dir; /* images root: DIR/1, DIR/2, ... one per round */
	const char *host; /* the address page servers listen on */
	const struct ml_criu_caps *caps; /* the CRIU in use */
	unsigned int timeout_s; /* CRIU time limit */
	bool verbose; /* the progress events too, not only the problems */
	ml_mig_event_fn on_event; /* what it has to say; NULL: nothing */
	void *arg;
};

/*
 * "HOST:PORT" into @host (brackets of "[v6]:port" removed) and @port: 0 or
 * -EINVAL. Port 0 parses: check it when a port is needed.
 */
int ml_migrate_parse_hostport(const char *s, char *host, size_t len, int *port);
/* A listening TCP socket on @host:@port (0: any free port), *@bound its port; -errno. */
int ml_migrate_listen(const char *host, int port, int *bound);
/*
 * Accept one source on @lfd and serve its migration: 0 once restored,
 * -ECANCELED when the source refused it (said through on_event), else a
 * negative errno; -EINVAL with @err for bad options.
 */
int ml_migrate_receive(int lfd, const struct ml_migrate_recv_opts *o, struct ml_err *err);

#pragma GCC visibility pop

#endif
