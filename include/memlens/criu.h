/* SPDX-License-Identifier: MIT */
/*
 * CRIU integration: find and probe a CRIU binary, turn the heat
 * map into CRIU's exclude arguments, run dump / pre-dump / restore /
 * page-server with a time limit, and the checkpoint flow that wraps the
 * write profiler (ml_profiler_release() -> CRIU -> ml_profiler_reinit()).
 *
 * Nothing here prints or exits. CRIU runs as a child process (posix_spawn,
 * its own session, stdout/stderr into its log), so the functions are safe
 * to call from any thread of a long-running server; a struct ml_criu_session
 * serialises the checkpoints of one target and keeps the previous exclude
 * set between them.
 *
 * Facts of the kernels and CRIUs seen that shape the defaults:
 * dumps can hang on the parasite's hardware breakpoint, so CRIU runs with
 * CRIU_FAULT=130 (no breakpoints) unless hw_breakpoints is set, and always
 * under a time limit; pre-dump needs soft-dirty (`criu check
 * --feature mem_dirty_track`); the exclude options exist only in a CRIU
 * fork, which skips a VMA that overlaps an excluded range whole, in
 * pre-dump only, and applies the ranges to every process of the tree.
 */
#ifndef MEMLENS_CRIU_H
#define MEMLENS_CRIU_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/rangeset.h"

struct ml_profiler;

/* At most this many --exclude-range arguments; more go into one --exclude-file. */
#define ML_CRIU_EXCLUDE_RANGE_MAX 10
#define ML_CRIU_DEFAULT_TIMEOUT_MS 120000
#define ML_CRIU_EXCLUDE_FILE_NAME "exclude-ranges.txt"

/* ---- finding and probing CRIU ---------------------------------------- */

/* What the CRIU binary at @path supports. */
struct ml_criu_caps {
	size_t sz; /* ml_criu_probe*()'s: the caller sets it, sizeof(struct ml_criu_caps) */
	char path[PATH_MAX];
	char version[64]; /* "4.1.1", or "" if unknown */
	bool works; /* `criu check` passed */
	/* each accepted by CRIU's option parser (fork only; not read from --help) */
	bool exclude_range; /* --exclude-range */
	bool exclude_file; /* --exclude-file */
	bool no_parent_range; /* --no-parent-range */
	/*
	 * Leaves pages out, not VMAs, and takes ranges per process
	 * (--exclude-range PID:START:END): a CRIU with the project's patches
	 * (criu/patches/), which lists that syntax in its --help. Without it, a
	 * CRIU with the exclude options skips every VMA a range touches.
	 */
	bool page_granular;
	bool mem_dirty_track; /* dirty tracking works (soft-dirty): pre-dump works */
	char check_msg[256]; /* why `criu check` failed, when it did */
	/*
	 * A probe did not answer within its time limit (a loaded machine, a
	 * slow VM): not known to fail. works and mem_dirty_track are then
	 * false and check_msg says which probe and how long it was given.
	 */
	bool timed_out;
	bool cached; /* read from the probe cache, CRIU not run */
};

/* How ml_criu_probe_opts() probes CRIU (zeroed: the defaults of ml_criu_probe()). */
struct ml_criu_probe_opts {
	size_t sz; /* sizeof(struct ml_criu_probe_opts): memlens/opts.h */
	unsigned int timeout_ms; /* each run of CRIU; 0: ML_CRIU_PROBE_TIMEOUT_MS */
	/*
	 * A directory where the answer of a probe that passed is kept, per
	 * CRIU binary (path, device, inode, size, mtime) and kernel (release
	 * and version): later probes of the same pair read it instead of
	 * running CRIU. Created 0700; a file not owned by the caller's euid or
	 * writable by others is ignored. NULL: nothing kept.
	 */
	const char *cache_dir;
};
#define ML_CRIU_PROBE_TIMEOUT_MS 60000

/*
 * Choose the CRIU binary: @explicit_path if given (the caller's --criu or
 * environment), else `criu` on $PATH, else @fallback when it is given and
 * executable (a path the caller chose at build time). Nothing else is
 * looked at. Writes an absolute path into @out. -ENOENT with a message
 * that says how to get one.
 */
/* The bytes of the regular files in @dir whose names start with @prefix
 * (NULL: all), CRIU's logs left out: what a dump wrote there. */
uint64_t ml_criu_dir_bytes(const char *dir, const char *prefix);

int ml_criu_locate(const char *explicit_path, const char *fallback, char *out, size_t len,
		   struct ml_err *err);

/*
 * What the CRIU at @path supports: `criu --exclude-range=.. --exclude-file=..
 * --no-parent-range=.. --version` (again without each option it calls
 * unrecognized), `criu check` and `criu check --feature mem_dirty_track`.
 * Probe once and keep @caps for every later command of the same run. The
 * caller sets @caps->sz (ML_RESULT(); -EINVAL when it is not): the library
 * writes only that much.
 */
int ml_criu_probe(const char *path, struct ml_criu_caps *caps, struct ml_err *err);
int ml_criu_probe_opts(const char *path, struct ml_criu_caps *caps,
		       const struct ml_criu_probe_opts *o, struct ml_err *err);
/* Can this CRIU leave ranges out of a pre-dump (--exclude-range or --exclude-file)? */
bool ml_criu_can_exclude(const struct ml_criu_caps *caps);
/* "page", "vma" or "none": what this CRIU leaves out of a pre-dump. */
const char *ml_criu_granularity(const struct ml_criu_caps *caps);
/* "--exclude-range yes, --exclude-file no, --no-parent-range yes" into @buf. */
void ml_criu_caps_options(const struct ml_criu_caps *caps, char *buf, size_t len);

/* ---- arguments (pure; lib/criu/criu_args.c) -------------------------------- */

/* A growable, NULL-terminated argv. */
struct ml_criu_argv {
	char **v;
	size_t n, cap;
};

void ml_criu_argv_init(struct ml_criu_argv *a);
void ml_criu_argv_free(struct ml_criu_argv *a);
int ml_criu_argv_add(struct ml_criu_argv *a, const char *s);
int ml_criu_argv_addf(struct ml_criu_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Shell-quoted command line into @buf (truncated with "..." when too long). */
void ml_criu_argv_format(const struct ml_criu_argv *a, char *buf, size_t len);

/*
 * ranges of @prev not covered by @cur (hot -> cold
 * transitions) into @no_parent (cleared first).
 */
int ml_criu_transitions(const struct ml_rangeset *prev, const struct ml_rangeset *cur,
			struct ml_rangeset *no_parent);

/*
 * Write the exclude file: "S E\n" per range (lower-case hex, no 0x), or
 * "PID S E\n" when @pid > 0 (a CRIU with page_granular), into
 * @dir/exclude-ranges.txt. @dir must be a real directory (not a symlink),
 * owned by us, not writable by group or others; the file is created with
 * O_EXCL|O_NOFOLLOW, mode 0600. Path of the file into @path.
 */
int ml_criu_write_exclude_file(const char *dir, pid_t pid, const struct ml_rangeset *ranges,
			       char *path, size_t len, struct ml_err *err);

/* The ranges of one process of a dumped tree. */
struct ml_criu_proc_ranges {
	pid_t pid;
	const struct ml_rangeset *ranges;
};

/*
 * ml_criu_write_exclude_file() of several processes: "PID S E\n" lines
 * with @with_pid, else "S E\n".
 */
int ml_criu_write_exclude_file_procs(const char *dir, const struct ml_criu_proc_ranges *procs,
				     size_t nprocs, bool with_pid, char *path, size_t len,
				     struct ml_err *err);

/* What ml_criu_exclude_args() did, for the report. */
struct ml_criu_exclude_report {
	size_t nexclude; /* ranges excluded (passed to CRIU) */
	size_t nno_parent; /* --no-parent-range passed */
	bool used_file; /* via --exclude-file */
	char file[PATH_MAX]; /* its path */
	bool skipped; /* wanted, but CRIU accepts neither exclude option */
	bool parent_unusable; /* the parent left out ranges this CRIU cannot mark */
	size_t nno_parent_missing; /* how many */
	size_t nparent_excluded; /* ranges the parent images left out */
	const char *granularity; /* "page", "vma" or "none": what CRIU left out */
	char note[768]; /* what was applied or skipped and why */
};

/*
 * the exclude and no-parent arguments of one (pre-)dump, using
 * only the options @caps accepts (@caps NULL: all of them). With a
 * page-granular CRIU (caps->page_granular) and @pid > 0, every range names
 * @pid (PID:S:E), so that the other processes of a dumped tree keep theirs.
 * @exclude (NULL for a dump: it writes every VMA anyway) goes as
 * --exclude-file (written into @private_dir, see ml_criu_write_exclude_file())
 * when there are more than ML_CRIU_EXCLUDE_RANGE_MAX ranges and CRIU has it,
 * else all as --exclude-range S:E, else as the file; neither: skipped.
 * Every range of @parent_excluded (what the parent images left out) that is
 * not excluded again goes as --no-parent-range S:E, whatever the reason
 * (turned cold, exclusion off, skipped, a final dump); when CRIU lacks that
 * option, rep->parent_unusable is set and the caller must not give CRIU the
 * parent (its pages there have holes CRIU would look for).
 */
int ml_criu_exclude_args(struct ml_criu_argv *a, pid_t pid, const struct ml_rangeset *exclude,
			 const struct ml_rangeset *parent_excluded, const struct ml_criu_caps *caps,
			 const char *private_dir, struct ml_criu_exclude_report *rep,
			 struct ml_err *err);
/*
 * The same for a tree: @procs, the ranges of each of its processes (a
 * page-granular CRIU gets each with its PID; another CRIU, which applies
 * every range to every process, all of them without one, so the caller
 * gives it their union as one entry). --no-parent-range goes for @pid
 * (the root) as above; a page-granular CRIU reads what the parent left
 * out of the other processes from the parent images itself.
 */
int ml_criu_exclude_args_procs(struct ml_criu_argv *a, pid_t pid,
			       const struct ml_criu_proc_ranges *procs, size_t nprocs,
			       const struct ml_rangeset *parent_excluded,
			       const struct ml_criu_caps *caps, const char *private_dir,
			       struct ml_criu_exclude_report *rep, struct ml_err *err);

/* ---- what an images directory left out (lib/criu/criu_record.c) ----------- */

/* memlens's record beside the images: the ranges a pre-dump left out. */
#define ML_CRIU_RECORD_NAME "memlens-excluded.txt"
/* The fork's own record in the images directory. */
#define ML_CRIU_HOT_IOVS_NAME "hot-iovs.json"

/*
 * Write @dir/memlens-excluded.txt: "# ..." then "S E\n" per range (hex).
 * Written after every successful (pre-)dump, empty when nothing was left out.
 */
int ml_criu_record_write(const char *dir, const struct ml_rangeset *excluded, struct ml_err *err);
/*
 * The ranges the images in @dir left out: memlens's record and the fork's
 * hot-iovs.json ("excluded"), united (both are conservative: a range
 * wrongly listed costs a resend, a range missed fails the next dump).
 * @found: which records were there (0: none, 1: memlens's, 2: the fork's).
 */
int ml_criu_record_read(const char *dir, struct ml_rangeset *out, int *found, struct ml_err *err);
/* Parsers on a buffer (pure, for tests). -EINVAL on malformed input. */
int ml_criu_parse_record(const char *buf, size_t len, struct ml_rangeset *out);
int ml_criu_parse_hot_iovs(const char *buf, size_t len, struct ml_rangeset *out);

/* ---- running CRIU (lib/criu/criu.c) ---------------------------------------- */

struct ml_criu_run_opts {
	size_t sz; /* sizeof(struct ml_criu_run_opts): memlens/opts.h */
	unsigned int timeout_ms; /* 0: ML_CRIU_DEFAULT_TIMEOUT_MS */
	bool hw_breakpoints; /* false: set CRIU_FAULT=130 (no hw breakpoints) */
	int log_level; /* -v level, 0: 4 */
};

struct ml_criu_result {
	char cmdline[4096]; /* what ran, shell-quoted */
	int exit_status; /* CRIU's exit status; -1: killed or not run */
	bool ran; /* CRIU was started */
	bool timed_out; /* killed after timeout_ms */
	uint64_t duration_ms;
	char log_path[PATH_MAX]; /* CRIU's log (-o), absolute */
	char log_tail[512]; /* last error lines of the log, on failure */
	char hint[768]; /* on failure: what to do about a refusal memlens knows, or "" */
	uint64_t image_bytes; /* sum of the image files' sizes in the images directory */
	/*
	 * What the dump wrote: its image files in the images directory, plus,
	 * with a page server, the pages it sent there (pages_written and
	 * shpages_written pages): all of it, shared memory included.
	 */
	uint64_t bytes_written;
	int64_t pages_written; /* stats-dump: pages_written; -1 unknown */
	int64_t shpages_written; /* stats-dump: shared memory pages written; -1 unknown */
	int64_t pages_scanned; /* stats-dump: pages_scanned; -1 unknown */
	int64_t pages_skipped_parent; /* stats-dump; -1 unknown */
	int64_t pages_lazy; /* a lazy dump: pages left for the lazy server; -1 unknown */
	pid_t restored_pid; /* restore: pid of the restored task */
	char repeated[256]; /* restore: the options repeated from the checkpoint's record */
	struct ml_criu_exclude_report exclude;
	bool parent_used; /* --prev-images-dir was passed */
	bool profiler_reinit; /* the profiler was re-initialised after CRIU */
	char profiler_note[256]; /* why it was not, when it was not */
};

/* What CRIU does with established TCP connections (dump and restore alike). */
enum ml_criu_tcp {
	/*
	 * None chosen. A dump refuses a tree with established connections, as
	 * REFUSE; a restore repeats what the checkpoint recorded.
	 */
	ML_CRIU_TCP_UNSET = 0,
	ML_CRIU_TCP_REFUSE, /* a tree with established connections is not dumped */
	ML_CRIU_TCP_ESTABLISHED, /* --tcp-established: kept (the addresses must move too) */
	ML_CRIU_TCP_CLOSE, /* --tcp-close: restored closed; the peers see them reset */
};

struct ml_criu_dump_req {
	pid_t pid;
	const char *images_dir; /* -D; created 0700 if missing; made absolute */
	const char *parent_dir; /* --prev-images-dir (any path; made relative) or NULL */
	bool pre_dump; /* `criu pre-dump` (needs soft-dirty) */
	bool leave_running; /* --leave-running (dump only; pre-dump always leaves it) */
	bool leave_stopped; /* --leave-stopped (dump only): the tree stays, stopped */
	bool shell_job; /* --shell-job */
	const char *page_server_addr; /* with port: --page-server --address --port */
	int page_server_port; /* 0: no page server */
	/* a dump only, run by ml_criu_lazy_dump_start(): --lazy-pages, its
	 * server listening on lazy_addr:lazy_port (an address of this machine) */
	const char *lazy_addr;
	int lazy_port;
	bool no_exclude; /* do not pass exclude arguments at all */
	const struct ml_rangeset *exclude; /* hot ranges to exclude (pre-dump only), or NULL */
	/*
	 * A tree's hot ranges, per process (pre-dump only), or NULL: what a
	 * page-granular CRIU is given instead of @exclude (which is then their
	 * union: the record, and what another CRIU is given).
	 */
	const struct ml_criu_proc_ranges *exclude_procs;
	size_t nexclude_procs;
	/* more ranges to send without the parent, besides those the parent's
	 * records say it left out (read from parent_dir), or NULL */
	const struct ml_rangeset *no_parent;
	const char *const *extra_args; /* more CRIU options, NULL-terminated, or NULL */
	/* a dump: options only its restore takes (--root=/PATH, --external=mnt[...]),
	 * recorded for it beside the images, NULL-terminated, or NULL */
	const char *const *restore_args;
	unsigned int timeout_ms; /* this run's time limit; 0: the run options' */
	enum ml_criu_tcp tcp; /* established TCP connections (a dump; a pre-dump has none) */
};

/*
 * Can CRIU dump @pid at all, as seen from this PID namespace? 0, -ESRCH
 * (no such process), -EINVAL (its session id reads 0 here: the kernel's
 * session, or a leader outside this PID namespace; CRIU refuses both).
 * ml_criu_dump() checks this itself; callers use it to fail before profiling.
 */
int ml_criu_dump_target_check(pid_t pid, struct ml_err *err);
/* All ml_criu_dump() checks before it runs CRIU: the target, then pre-dump support. */
int ml_criu_dump_precheck(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
			  struct ml_err *err);

/*
 * Run `criu dump` or `criu pre-dump`. With a parent_dir, the ranges its
 * records (ml_criu_record_read()) say it left out are passed as
 * --no-parent-range unless excluded again; --track-mem goes with every
 * pre-dump and with a dump that has a parent (when dirty tracking works),
 * so CRIU writes only the pages changed since the parent. On success the
 * images directory gets its own record. Returns 0 when CRIU exited 0;
 * -ETIMEDOUT, -EIO (CRIU failed: exit status and log in @res),
 * -ESRCH (no such process), -EOPNOTSUPP (pre-dump without soft-dirty,
 * checked before CRIU runs), -EINVAL (ml_criu_dump_target_check() refused).
 */
int ml_criu_dump(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
		 const struct ml_criu_run_opts *o, struct ml_criu_result *res, struct ml_err *err);

struct ml_criu_restore_req {
	const char *images_dir;
	bool shell_job;
	bool lazy_pages; /* --lazy-pages: a `criu lazy-pages` serves the rest */
	const char *const *extra_args;
	enum ml_criu_tcp tcp; /* UNSET: as the checkpoint recorded */
};

/*
 * `criu restore -d`: res->restored_pid is the restored task. The options
 * the dump was given that a restore must repeat (ml_criu_restore_needs())
 * are read from the images' record (ML_CRIU_RESTORE_OPTS_NAME, written by
 * every successful ml_criu_dump()) and passed again, unless @req says
 * otherwise: its tcp, when set, replaces the recorded TCP option, and its
 * extra_args come on top. res->repeated names what was repeated.
 */
int ml_criu_restore(const struct ml_criu_caps *caps, const struct ml_criu_restore_req *req,
		    const struct ml_criu_run_opts *o, struct ml_criu_result *res,
		    struct ml_err *err);

struct ml_criu_page_server_req {
	const char *images_dir;
	const char *addr; /* NULL: all addresses */
	int port; /* 0: CRIU's default (1234) */
	const char *parent_dir; /* --prev-images-dir or NULL */
};

/*
 * Start `criu page-server --daemon`: returns once it listens; *pid is the
 * daemon (it exits by itself after serving one dump). Stop early with
 * ml_criu_page_server_stop().
 */
int ml_criu_page_server_start(const struct ml_criu_caps *caps,
			      const struct ml_criu_page_server_req *req,
			      const struct ml_criu_run_opts *o, pid_t *pid,
			      struct ml_criu_result *res, struct ml_err *err);
int ml_criu_page_server_stop(pid_t pid, struct ml_err *err);

/*
 * CRIU's statistics of one dump: the dump_stats_entry of its stats-dump
 * image (CRIU's images/stats.proto), field for field under the same names;
 * times in microseconds. -1: the image has no such field (an optional one
 * an older CRIU did not write). Only int64_t members.
 */
struct ml_criu_dump_stats {
	int64_t freezing_time, frozen_time, memdump_time, memwrite_time;
	int64_t pages_scanned, pages_skipped_parent, pages_written;
	int64_t irmap_resolve;
	int64_t pages_lazy, page_pipes, page_pipe_bufs;
	int64_t shpages_scanned, shpages_skipped_parent, shpages_written;
	int64_t pages_excluded; /* left out by --exclude-range (memlens's CRIU patches) */
};

/*
 * Decode @images_dir/stats-dump (protobuf-c, from stats.proto; no crit
 * needed). 0; -ENOENT when there is no such file or it holds no dump
 * statistics; -EINVAL when it is not a CRIU stats image. @out is all -1
 * on failure.
 */
int ml_criu_stats_read(const char *images_dir, struct ml_criu_dump_stats *out, struct ml_err *err);
/* The same on a buffer holding the file (pure, for tests and fuzzing). */
int ml_criu_stats_parse(const uint8_t *buf, size_t len, struct ml_criu_dump_stats *out);

/*
 * Three of them from the stats-dump image in @images_dir (as
 * ml_criu_stats_read). -ENOENT when there is none.
 */
int ml_criu_read_dump_stats(const char *images_dir, int64_t *pages_scanned,
			    int64_t *pages_skipped_parent, int64_t *pages_written,
			    struct ml_err *err);
/*
 * How long the tree was frozen (stats-dump frozen_time, microseconds; -1
 * unknown): a dump without --leave-running keeps it frozen until the end.
 */
int ml_criu_read_dump_frozen(const char *images_dir, int64_t *frozen_us, struct ml_err *err);
int ml_criu_parse_dump_frozen(const uint8_t *buf, size_t len, int64_t *frozen_us);
/* The same on a buffer holding the file (pure, for tests and fuzzing). */
int ml_criu_parse_dump_stats(const uint8_t *buf, size_t len, int64_t *pages_scanned,
			     int64_t *pages_skipped_parent, int64_t *pages_written);

/* ---- TCP connections (lib/criu/criu_tcp.c) ---------------------------------- */

/* "refuse", "established", "close": 0, else -EINVAL. */
int ml_criu_tcp_parse(const char *s, enum ml_criu_tcp *out);
/* "unset", "refuse", "established", "close" */
const char *ml_criu_tcp_name(enum ml_criu_tcp t);

struct ml_criu_tcp_conn {
	pid_t pid;
	int fd;
	int state; /* as in /proc/net/tcp: 1 established, 2 syn-sent, ... */
	char local[64], remote[64]; /* "127.0.0.1:6379", "[::1]:6379" */
};

#define ML_CRIU_TCP_CONN_MAX 16
struct ml_criu_tcp_conns {
	size_t sz; /* the caller sets it: sizeof(struct ml_criu_tcp_conns) (memlens/opts.h) */
	struct ml_criu_tcp_conn c[ML_CRIU_TCP_CONN_MAX]; /* the first ones found */
	size_t n; /* how many were found (may be more than kept) */
};

/*
 * The TCP connections of @pid's process tree that CRIU dumps only with
 * --tcp-established or --tcp-close: the sockets of every process's file
 * descriptors (/proc/PID/fd) that /proc/PID/net/tcp and tcp6 list in a
 * state other than LISTEN and CLOSE. Reads /proc only; nothing is stopped.
 */
int ml_criu_tcp_inspect(pid_t pid, struct ml_criu_tcp_conns *out, struct ml_err *err);
/* "fd 5 of pid 42: 127.0.0.1:6379 <-> 127.0.0.1:40112 (established)", the first @max, ";
 * "-separated. */
void ml_criu_tcp_describe(const struct ml_criu_tcp_conns *c, size_t max, char *buf, size_t len);
/*
 * Before anything is frozen: with no TCP policy chosen (@tcp UNSET or
 * REFUSE, and neither --tcp-established nor --tcp-close in @extra_args),
 * -EINVAL with a message naming the connections and the choice, when
 * @pid's tree has any. 0 otherwise, also when /proc cannot tell (CRIU
 * then checks again itself).
 */
int ml_criu_tcp_check(pid_t pid, enum ml_criu_tcp tcp, const char *const *extra_args,
		      struct ml_err *err);

/* ---- SysV IPC (lib/criu/criu_sysv.c) ------------------------------------------ */

/*
 * Before anything is frozen: -EINVAL with a message naming the process,
 * segment and address when @pid's tree maps SysV shared memory and @pid
 * shares the IPC namespace of the caller (the host's), which CRIU refuses
 * to dump; 0 otherwise (a tree in its own IPC namespace is dumped with it).
 */
int ml_criu_sysv_check(pid_t pid, struct ml_err *err);

/* ---- what a restore repeats (lib/criu/criu_restore_opts.c) ----------------- */

/* memlens's record of the options a restore of these images must repeat. */
#define ML_CRIU_RESTORE_OPTS_NAME "memlens-restore-opts.txt"

/*
 * Is @opt ("--name" or "--name=value") a dump option that its restore must
 * be given too? --tcp-established, --tcp-close, --ext-unix-sk, --file-locks,
 * --network-lock, --manage-cgroups, --cgroup-root, --enable-external-sharing,
 * --enable-external-masters.
 */
bool ml_criu_restore_needs(const char *opt);

/* ---- CRIU's refusals (lib/criu/criu_explain.c) ------------------------------ */

/*
 * What to do about a failed CRIU command: scans @log (CRIU's log, or its
 * last part) for the refusals memlens knows (a socket option the kernel
 * will not report, SysV shared memory of the host's IPC namespace, a pid
 * still taken at restore, established TCP connections, unix sockets to
 * outside the tree, missing socket diagnostics, ...) and writes one
 * sentence for each into @buf, naming the socket, pid or address from the
 * log and what to do. Returns how many refusals it found; @buf is "" when
 * none. Pure: for CRIU's logs of any source.
 */
size_t ml_criu_explain(const char *log, char *buf, size_t len);
/* ---- post-copy: lazy pages (lib/criu/criu_lazy*.c) ------------------------ */

/*
 * `criu check --feature FEATURE` ("uffd-noncoop": what lazy pages need):
 * 0, or -EOPNOTSUPP with CRIU's reason in @err.
 */
int ml_criu_check_feature(const struct ml_criu_caps *caps, const char *feature,
			  const struct ml_criu_run_opts *o, struct ml_err *err);

struct ml_criu_lazy_dump;

struct ml_criu_lazy_dump_times {
	uint64_t start_ms; /* CLOCK_MONOTONIC ms when CRIU started */
	int64_t frozen_ms; /* when the tree was frozen, ms after start (its log); -1 unknown */
	uint64_t ready_ms; /* when its images were complete and its server listened */
};

/*
 * Start `criu dump --lazy-pages` (@req: lazy_addr, lazy_port set; see
 * ml_criu_dump()) and return once its images are complete and its lazy
 * server listens (the log's "Starting lazy pages server" and the port in
 * /proc/net/tcp*): the tree is frozen, the pages left lazy are still at
 * the source. CRIU then serves them until a `criu lazy-pages` has fetched
 * every one; ml_criu_lazy_dump_wait() collects it. A dump that fails
 * before is collected here, its error in @err (the tree keeps running).
 */
int ml_criu_lazy_dump_start(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
			    const struct ml_criu_run_opts *o, struct ml_criu_lazy_dump **out,
			    struct ml_criu_lazy_dump_times *t, struct ml_criu_result *res,
			    struct ml_err *err);
/*
 * Wait for the lazy dump to end (within its time limit, counted from its
 * start): 0 when CRIU exited 0. res->pages_* come from its log (the
 * stats-dump of a lazy dump holds only the lazy server's counters).
 */
int ml_criu_lazy_dump_wait(struct ml_criu_lazy_dump *d, struct ml_criu_result *res,
			   struct ml_err *err);
/*
 * Make a lazy server that no `criu lazy-pages` reached yet fail, so that
 * CRIU ends the dump as failed (a dump fails by giving the tree back):
 * one byte where CRIU waits for a request. Then wait for it as above.
 */
int ml_criu_lazy_dump_abort(struct ml_criu_lazy_dump *d, struct ml_criu_result *res,
			    struct ml_err *err);
void ml_criu_lazy_dump_free(struct ml_criu_lazy_dump *d);

struct ml_criu_lazy_pages_req {
	const char *images_dir; /* the lazy dump's images */
	const char *addr; /* the lazy dump's server */
	int port;
};

/*
 * Start `criu lazy-pages --page-server --daemon` (at -v4: its log records
 * every fault): returns once it listens for the restore; *pid is the
 * daemon, which exits once every lazy page was copied in.
 */
int ml_criu_lazy_pages_start(const struct ml_criu_caps *caps,
			     const struct ml_criu_lazy_pages_req *req,
			     const struct ml_criu_run_opts *o, pid_t *pid,
			     struct ml_criu_result *res, struct ml_err *err);

/* What a `criu lazy-pages` log (-v4) says it did. */
struct ml_criu_lazy_stats {
	size_t sz; /* the caller sets it: sizeof(struct ml_criu_lazy_stats) (memlens/opts.h) */
	int64_t pages_total; /* "Found N pages to be handled by UFFD", summed */
	int64_t pages_copied; /* "UFFD transferred pages: (C/T)", summed */
	int64_t pages_parent; /* of those, read from the parent images (a patched CRIU) */
	uint64_t copy_bytes; /* every uffd_copy's length, summed */
	uint64_t copies, zero_pages;
	uint64_t faults; /* "#PF at": faults the restored tree waited on */
	uint64_t faults_served; /* of those, served by a later copy or zero page */
	uint64_t wait_sum_us, wait_max_us; /* fault until its page was copied in */
	int64_t first_us, last_us; /* first and last copy, after the daemon's start; -1 none */
	int nprocs; /* processes summarised */
	bool errors; /* an "Error" line */
	char error[256]; /* the last error lines */
};

/* Parse a `criu lazy-pages -v4` log (pure). 0, or -EINVAL when it is not one
 * (or @st's sz is not set: ML_RESULT()). */
int ml_criu_parse_lazy_log(const char *buf, size_t len, struct ml_criu_lazy_stats *st);
int ml_criu_read_lazy_log(const char *path, struct ml_criu_lazy_stats *st, struct ml_err *err);

/*
 * The page counts of a lazy dump from its log ("Pagemap generated: N
 * pages (L lazy) H holes", summed: written = N - L, lazy = L, skipped as
 * in the parent = H) and when the tree was frozen (the first "Seized
 * task", microseconds after CRIU's start; -1 unknown). Pure.
 */
int ml_criu_parse_dump_log(const char *buf, size_t len, int64_t *written, int64_t *lazy,
			   int64_t *holes, int64_t *frozen_us);

/* ---- the checkpoint flow -------------------------------- */

struct ml_criu_session;

/* One target's checkpoints: a CRIU, the previous exclude set, a lock. */
int ml_criu_session_open(struct ml_criu_session **out, const struct ml_criu_caps *caps,
			 const struct ml_criu_run_opts *o, struct ml_err *err);
void ml_criu_session_close(struct ml_criu_session *s);
/* The ranges excluded by the last successful checkpoint (copy). */
int ml_criu_session_prev_exclude(struct ml_criu_session *s, struct ml_rangeset *out);
void ml_criu_session_reset(struct ml_criu_session *s);

/*
 * take the hot set from @p (may be NULL: no exclusion),
 * ml_profiler_release(), compute exclude / no-parent ranges against the
 * previous set, run CRIU per @req (its exclude/no_parent fields are
 * ignored), then ml_profiler_reinit() unless the target is gone, and on
 * success remember the hot set as the previous exclude set. @hot, if not
 * NULL, receives the hot set used. Returns CRIU's result as ml_criu_dump().
 * A failing re-init after a successful dump is reported in @res
 * (profiler_reinit false, profiler_note) and returns 0.
 */
int ml_criu_checkpoint(struct ml_criu_session *s, struct ml_profiler *p,
		       const struct ml_criu_dump_req *req, struct ml_criu_result *res,
		       struct ml_rangeset *hot, struct ml_err *err);

struct ml_criu_hot_procs;

/*
 * ml_criu_checkpoint(), and which process each range of the hot set is
 * from: @procs (not NULL) receives each process's own hot set, as
 * ml_criu_hot_procs() (free it with ml_criu_hot_procs_free()); none when
 * the profiler follows one process: the hot set is then @req->pid's.
 */
int ml_criu_checkpoint_procs(struct ml_criu_session *s, struct ml_profiler *p,
			     const struct ml_criu_dump_req *req, struct ml_criu_result *res,
			     struct ml_rangeset *hot, struct ml_criu_hot_procs *procs,
			     struct ml_err *err);

/*
 * The profiler's latest hot set as a range set: the hot ranges inside the
 * VMAs (page granularity) when @pages, else the hot VMAs whole.
 */
int ml_criu_hot_set(struct ml_profiler *p, bool pages, struct ml_rangeset *out, struct ml_err *err);

/* A tree's hot sets, one per process that has one. */
struct ml_criu_hot_procs {
	struct ml_criu_proc_ranges *procs;
	struct ml_rangeset *sets; /* what procs[i].ranges point to */
	size_t n;
};

/*
 * The hot set of each process of a tree profiler's latest interval
 * (ml_profiler_opts.tree; none for one process, or when nothing is hot).
 * Neither this nor ml_criu_hot_set() holds shared memory: CRIU dumps a
 * shared memory object once, by the first process that maps it, whole.
 */
int ml_criu_hot_procs(struct ml_profiler *p, bool pages, struct ml_criu_hot_procs *out,
		      struct ml_err *err);
void ml_criu_hot_procs_free(struct ml_criu_hot_procs *h);

#pragma GCC visibility pop

#endif
