/* SPDX-License-Identifier: MIT */
/*
 * The process a tracer looks at (libmemlens-trace.a): a running one, or a
 * command it starts stopped before its first instruction so that the
 * tracer sees it from there (memlens/spawn.h), released once the tracer
 * is loaded. Its exit is seen through a pidfd (readable once it has
 * exited), which a caller polls with its other descriptors.
 *
 *	struct ml_trace_target *t;
 *	bool not_started;
 *	if (ml_trace_target_spawn(&t, argv, &not_started, &err) == 0) {
 *		... open a tracer for ml_trace_target_pid(t) ...
 *		ml_trace_target_release(t, &err);
 *		while (!ml_trace_target_gone(t))
 *			...;
 *		ml_trace_target_close(t, true);
 *	}
 */
#ifndef MEMLENS_TRACE_TARGET_H
#define MEMLENS_TRACE_TARGET_H

/* exported by whatever shared object links it (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <sys/types.h>

#include "memlens/err.h"

struct ml_trace_target;

/*
 * A running process @pid: checked to exist, its pidfd opened. 0 and *@out,
 * or -ESRCH (no such process) / -errno with @err.
 */
int ml_trace_target_attach(struct ml_trace_target **out, pid_t pid, struct ml_err *err);
/*
 * Start @argv (argv[0] looked up on PATH) stopped before its first
 * instruction. 0 and *@out, or -errno with @err; *@not_started (may be
 * NULL) then says whether the command itself could not be started (a
 * shell's exit status 127), not a step after it.
 */
int ml_trace_target_spawn(struct ml_trace_target **out, char *const argv[], bool *not_started,
			  struct ml_err *err);
pid_t ml_trace_target_pid(const struct ml_trace_target *t);
/* Started by ml_trace_target_spawn() (else attached). */
bool ml_trace_target_spawned(const struct ml_trace_target *t);
/* Its pidfd: readable once it has exited (poll it; do not close it). */
int ml_trace_target_pidfd(const struct ml_trace_target *t);
/* Let a started command run (an attached process: nothing). 0 or -errno with @err. */
int ml_trace_target_release(struct ml_trace_target *t, struct ml_err *err);
/* Has it exited? Looks (without waiting) and reaps a started command. */
bool ml_trace_target_gone(struct ml_trace_target *t);
/* What ml_trace_target_gone() last saw, without looking again. */
bool ml_trace_target_exited(const struct ml_trace_target *t);
/*
 * Free (NULL: nothing): a started command still there is killed first
 * when @kill_it, and reaped; an attached process is left alone.
 */
void ml_trace_target_close(struct ml_trace_target *t, bool kill_it);

#pragma GCC visibility pop

#endif
