/* SPDX-License-Identifier: MIT */
/*
 * Before anything is frozen: what CRIU would refuse in a process tree,
 * read from /proc and the kernel's socket diagnostics while the tree runs
 * on, untouched. Each finding names the process, the resource and the
 * option or set-up that fixes it. A finding that an option already given
 * takes care of (--tcp close, --criu-opt --file-locks, --shell-job, ...)
 * is kept, marked absorbed, and says which option does.
 *
 * Nothing here prints or exits, stops or traces a process.
 */
#ifndef MEMLENS_CRIU_PREFLIGHT_H
#define MEMLENS_CRIU_PREFLIGHT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "memlens/criu.h"
#include "memlens/err.h"

enum ml_criu_finding_kind {
	ML_CRIU_FINDING_CRIU_KERNEL, /* a socket this CRIU cannot dump on this kernel */
	ML_CRIU_FINDING_TCP, /* an established TCP connection */
	ML_CRIU_FINDING_UNIX_PEER, /* a unix socket connected to a process outside the tree */
	ML_CRIU_FINDING_SOCK_DIAG, /* the kernel cannot list these sockets to CRIU */
	ML_CRIU_FINDING_SESSION, /* the root does not lead its session */
	ML_CRIU_FINDING_TTY, /* a terminal whose other side is outside the tree */
	ML_CRIU_FINDING_TRACED, /* a process already traced by another */
	ML_CRIU_FINDING_FILE_LOCK, /* a file lock */
	ML_CRIU_FINDING_FD, /* a file descriptor of a kind CRIU cannot dump */
	ML_CRIU_FINDING_SYSV, /* SysV shared memory of the host's IPC namespace */
	ML_CRIU_FINDING_NAMESPACE, /* a process in a namespace of its own below the root */
};

/* "criu_kernel", "tcp", "unix_peer", "sock_diag", "session", "tty", "traced",
 * "file_lock", "fd", "sysv_ipc", "namespace" */
const char *ml_criu_finding_name(enum ml_criu_finding_kind k);

struct ml_criu_finding {
	enum ml_criu_finding_kind kind;
	bool absorbed; /* an option given takes care of it: CRIU will not refuse */
	pid_t pid; /* the process holding the resource */
	char comm[16];
	char resource[256]; /* "fd 4: a unix stream socket connected to ..." */
	char fix[384]; /* the option or set-up that fixes it (absorbed: which does) */
};

#define ML_CRIU_PREFLIGHT_MAX 32

struct ml_criu_preflight {
	size_t sz; /* the caller sets it: sizeof(struct ml_criu_preflight) (memlens/opts.h) */
	struct ml_criu_finding f[ML_CRIU_PREFLIGHT_MAX]; /* the first ones found */
	size_t n; /* kept in f */
	size_t nfound; /* found (may be more than kept) */
	size_t nrefused; /* of those found, not absorbed: CRIU would refuse */
	size_t nprocs; /* processes inspected */
};

/* How ml_criu_preflight() looks (declare with ML_OPTS(); NULL: the defaults). */
struct ml_criu_preflight_opts {
	size_t sz;
	enum ml_criu_tcp tcp; /* the TCP policy chosen (UNSET, REFUSE: none) */
	const char *const *extra_args; /* the caller's own CRIU options, NULL-terminated */
	bool shell_job; /* --shell-job */
	bool pre_dump; /* a pre-dump: only what it refuses (it dumps no files) */
	const char *criu_version; /* "4.1.1"; NULL or "": the version check is skipped */
	const char *kernel_release; /* NULL: this kernel's (uname) */
};

/*
 * Inspect the process tree of @pid: its sockets (the TCP connections, the
 * unix sockets' peers, whether this CRIU can dump them on this kernel and
 * whether the kernel lists them), its session and terminals, tracers, file
 * locks (/proc/locks), the file descriptors CRIU has no dumper for
 * (io_uring, userfaultfd, perf_event, ... and devices) and SysV shared
 * memory of the host's IPC namespace. @out's sz is set by the caller
 * (ML_RESULT(); -EINVAL when it is not). 0 with @out filled (nrefused says
 * whether CRIU would refuse); -ESRCH when @pid is gone; -EINVAL for bad
 * options. What /proc does not tell is not a finding: CRIU checks again.
 */
int ml_criu_preflight(pid_t pid, const struct ml_criu_preflight_opts *o,
		      struct ml_criu_preflight *out, struct ml_err *err);

/* "pid 42 (redis-server): RESOURCE: FIX" per finding, "\n"-separated, into @buf. */
void ml_criu_preflight_describe(const struct ml_criu_preflight *p, char *buf, size_t len);

/*
 * `criu dump --check-only` of @req's tree (a CRIU that has it checks what it
 * would dump and leaves the tree running; nothing is written but its log):
 * 0 when CRIU found nothing to refuse, -EIO (its log in @res) when it did,
 * -EOPNOTSUPP when this CRIU has no such option (probed first).
 */
int ml_criu_dump_check_only(const struct ml_criu_caps *caps, const struct ml_criu_dump_req *req,
			    const struct ml_criu_run_opts *o, struct ml_criu_result *res,
			    struct ml_err *err);

/* ---- the pure parts, for tests ------------------------------------------- */

/*
 * Can this CRIU dump a TCP or UDP socket on this kernel? Since Linux 6.16
 * SO_PASSCRED and SO_PASSSEC exist only on unix and netlink sockets, and
 * CRIU before 4.2 asks every socket for them. @criu_version "4.1.1",
 * @kernel_release "6.18.4-..."; true when either cannot be read.
 */
bool ml_criu_sockets_dumpable(const char *criu_version, const char *kernel_release);

/*
 * A /proc/PID/fd link "anon_inode:[io_uring]": 1 when CRIU has no dumper
 * for it (what it is into @what), 0 when it has one or @link is not an
 * anonymous inode.
 */
int ml_criu_anon_inode_unsupported(const char *link, char *what, size_t len);

/* A character device CRIU can dump (memory devices, terminals, tun, autofs)? */
bool ml_criu_chrdev_dumpable(unsigned int major, unsigned int minor);
/* Is it a pseudo-terminal's slave side (/dev/pts/N) or master side (ptmx)? */
bool ml_criu_chrdev_pts(unsigned int major, unsigned int minor);
bool ml_criu_chrdev_ptmx(unsigned int major, unsigned int minor);

/* One lock of /proc/locks. */
struct ml_criu_lock {
	char type[8]; /* "POSIX", "FLOCK", "OFDLCK", "LEASE" */
	char access[8]; /* "READ", "WRITE" */
	int pid; /* -1: an OFD lock (no process) */
	unsigned int dev_major, dev_minor;
	unsigned long ino;
};
/* Parse one /proc/locks line: 0; -EINVAL when it is not a held lock ("->" waiters too). */
int ml_criu_parse_lock(const char *line, struct ml_criu_lock *out);

/* TracerPid of a /proc/PID/status text: the tracer, 0 none, -1 not found. */
int ml_criu_parse_tracer(const char *status);

#pragma GCC visibility pop

#endif
