/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/stat and /proc/PID/task/TID/stat, read and parsed in one place.
 * The comm field may hold spaces and parentheses: fields are counted from
 * the last ')'.
 */
#ifndef MEMLENS_PROC_H
#define MEMLENS_PROC_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdint.h>
#include <sys/types.h>

struct ml_proc_stat {
	char comm[64]; /* field 2, without the parentheses (truncated) */
	char state; /* field 3: R, S, D, T, t, Z, X, ... */
	pid_t ppid; /* 4 */
	pid_t pgrp; /* 5 */
	pid_t session; /* 6: 0 in the kernel's own session or an ancestor pid ns */
	unsigned long flags; /* 9: PF_* (PF_KTHREAD = 0x00200000) */
	uint64_t minflt; /* 10 */
	uint64_t majflt; /* 12 */
	uint64_t starttime; /* 22: clock ticks after boot */
};

#define ML_PF_KTHREAD 0x00200000UL

/* Parse one stat line. 0, or -EINVAL when it is not one. */
int ml_proc_stat_parse(const char *line, struct ml_proc_stat *st);

/*
 * Read /proc/@pid/stat (@tid <= 0) or /proc/@pid/task/@tid/stat.
 * 0; -ESRCH when there is no such process or thread; -EINVAL when the
 * text cannot be parsed; another -errno when it cannot be read.
 */
int ml_proc_stat_read(pid_t pid, pid_t tid, struct ml_proc_stat *st);

/* "Threads:" of /proc/@pid/status; 0 when it cannot be read. */
int ml_proc_threads(pid_t pid);

/* True when the process or thread is gone or a zombie (state Z or X). */
int ml_proc_exited(pid_t pid, pid_t tid);

struct ml_err;

/*
 * Can process @pid be looked at? 0; -ESRCH when there is none, or it is a
 * zombie; -EINVAL when it is a kernel thread (no user memory); -EACCES or
 * -EPERM when its memory map may not be read (ptrace read access). @err
 * says which, and what to do.
 */
int ml_proc_check_target(pid_t pid, struct ml_err *err);

/*
 * What to add to a permission error on another process (its /proc files,
 * ptrace): " (run as root or with CAP_SYS_PTRACE)" when not root; as root,
 * what else refuses. Starts with a space.
 */
const char *ml_proc_access_hint(void);
/*
 * The process tree under @pid, @pid first, breadth first (from each
 * thread's /proc/PID/task/TID/children), at most @max: the number found.
 * Exact only while the tree cannot fork or exit (frozen, stopped).
 */
size_t ml_proc_tree(pid_t pid, pid_t *out, size_t max);
/* The most processes of a tree the tools look at (CRIU, the tree profiler). */
#define ML_PROC_TREE_MAX 4096

#pragma GCC visibility pop

#endif
