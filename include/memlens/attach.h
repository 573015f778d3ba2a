/* SPDX-License-Identifier: MIT */
/*
 * Give the profiler a userfaultfd that belongs to the target's mm:
 * inject userfaultfd() into the target, copy the fd with pidfd_getfd(),
 * inject close() so the target holds no uffd (CRIU refuses to dump a
 * process that does), then negotiate async write-protect on our copy.
 * Every thread of the target is held meanwhile, so no child it forks can
 * inherit the descriptor; the injection is safe against memlens's death
 * at any instant (see inject.h).
 */
#ifndef MEMLENS_ATTACH_H
#define MEMLENS_ATTACH_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "memlens/opts.h"

struct ml_attach_stats {
	size_t sz; /* the caller sets it: sizeof(struct ml_attach_stats) (memlens/opts.h) */
	uint64_t stopped_ns; /* how long the target was stopped */
	unsigned long syscalls; /* syscalls injected */
	uint64_t features; /* uffd features granted */
	bool user_mode_only; /* created with UFFD_USER_MODE_ONLY */
	unsigned int threads_held; /* every thread of the target, held meanwhile */
	unsigned int in_nonrestartable; /* of those, stopped in a non-restartable wait */
	unsigned int restarted; /* of those, whose EINTR was turned into a restart */
	unsigned int signals_kept; /* signals taken mid-sequence and queued again */
};

/*
 * Returns our uffd (>= 0) or a negative errno. @st (NULL: not wanted) has
 * its sz set (ML_RESULT(); -EINVAL when it is not). @already_stopped: the thread
 * @pid is our tracee and already in a ptrace-stop (spawn mode, at exec).
 * On failure everything done so far is undone and @err names the step.
 */
int ml_wp_attach(pid_t pid, bool already_stopped, struct ml_attach_stats *st, struct ml_err *err);

/* Refuse what cannot be profiled, with a clear reason (no such pid, kernel thread). */
int ml_wp_check_target(pid_t pid, struct ml_err *err);

#pragma GCC visibility pop

#endif
