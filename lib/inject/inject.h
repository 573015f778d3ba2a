/* SPDX-License-Identifier: MIT */
/*
 * x86_64 system-call injection with ptrace that cannot harm the target,
 * whatever instant memlens dies.
 *
 *  - Prepared before the target is stopped: a `syscall; ret` instruction
 *    pair and a `mov $15,%eax; syscall` (rt_sigreturn) sequence already
 *    present in the target's vDSO or file-backed code (nothing is written
 *    to its code), and a scratch area at the bottom of its main stack
 *    mapping, far below anything the stack uses.
 *  - Every thread of the target is held (PTRACE_SEIZE + PTRACE_INTERRUPT)
 *    for the whole injection, so no thread can fork while the target holds
 *    a descriptor that is ours. A thread whose non-restartable wait
 *    (epoll_wait, sigtimedwait, semop, io_getevents, ...) the stop made
 *    return EINTR is turned into a restart, which the kernel applies on
 *    resume exactly as for a signal without handler: the call is entered
 *    again (a relative timeout starts again); if a handler runs, the call
 *    returns EINTR as it would have without memlens.
 *  - While the injection thread runs injected calls, its signals are
 *    blocked (PTRACE_SETSIGMASK), so every signal stays queued in the
 *    kernel, with its siginfo, in order, and is delivered by the kernel
 *    after memlens lets go. Stop signals pass at once (job control).
 *  - Before each injected call, a chain of rt_sigreturn frames is written
 *    into the scratch area: the calls that must still run if memlens dies
 *    (e.g. close() of the descriptor just created), then a frame that holds
 *    the thread's own registers, FPU state and signal mask. The injected
 *    call's `ret` enters the chain. If memlens dies at any instant, the
 *    kernel detaches the target and the chain brings the thread back to
 *    its own context by itself; while memlens lives, it restores the
 *    registers exactly with PTRACE_SETREGS and the chain never runs.
 *  - Injected calls are stepped with PTRACE_SYSCALL, never single-step, so
 *    no trap flag can be left behind.
 */
#ifndef MEMLENS_INJECT_H
#define MEMLENS_INJECT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "memlens/err.h"

#define INJECT_MAX_THEN 2 /* calls an orphaned target still runs after one */
#define INJECT_MAX_STASH 64

/* Found before the target is stopped; checked again once it is. */
struct mli_inject_prep {
	uint64_t syscall_ret; /* "0f 05 c3": syscall; ret */
	uint64_t sigreturn; /* "mov $15,%eax|%rax; syscall" */
	uint64_t stack_start, stack_end; /* the [stack] mapping */
};

struct mli_inject_call {
	long nr;
	uint64_t a[6];
};

struct mli_inject_thread {
	pid_t tid;
	bool held;
	bool late; /* blocked in a non-restartable wait: stopped last */
	bool restarted; /* its interrupted call was turned into a restart */
	long syscall; /* the call it was stopped in, or -1 */
};

struct mli_inject_stash {
	int sig;
	unsigned char info[128]; /* siginfo_t */
};

struct mli_injector {
	pid_t pid;
	pid_t tid; /* the injection thread */
	struct mli_inject_prep prep;
	struct mli_inject_thread *th;
	size_t nth, cap;
	bool adopted; /* spawn mode: our child, already stopped */

	/* the injection thread's own context */
	struct user_regs_struct saved;
	uint64_t saved_mask;
	bool may_block; /* its mask may be changed (no temporary mask) */
	bool mask_blocked; /* we blocked its signals */
	void *xstate;
	size_t xstate_len, fp_len;

	/* the continuation frames in the scratch area */
	uint64_t scratch, scratch_len, frame_len;
	void *scratch_orig; /* the bytes the scratch area held before */
	int region; /* which of the two "then" regions the thread's state uses */
	bool at_syscall_exit; /* the thread is at an injected call's exit stop */
	bool stopped;

	/* signals taken from the thread mid-sequence (only when its mask
	 * could not be changed), delivered again before it is let go */
	struct mli_inject_stash stash[INJECT_MAX_STASH];
	int nstash;
	int lost; /* signals that did not fit in the stash */

	uint64_t stop_ns;
	unsigned long injected;
	unsigned int restarted; /* threads whose EINTR became a restart */
	unsigned int in_nonrestartable; /* threads stopped in such a wait */
};

/* Read the target's mappings and find what the injection needs. */
int mli_inject_prepare(pid_t pid, struct mli_inject_prep *p, struct ml_err *err);

/*
 * Seize and hold every thread of @pid, choose the injection thread, save
 * its context and write the continuation that returns it there. Must be
 * called from the thread that will do the rest (ptrace is per thread).
 */
int mli_inject_attach(struct mli_injector *in, pid_t pid, const struct mli_inject_prep *prep,
		      struct ml_err *err);

/*
 * Spawn mode: @tid is our tracee, single-threaded, stopped at its exec's
 * syscall-exit stop.
 */
int mli_inject_adopt_stopped(struct mli_injector *in, pid_t tid, struct ml_err *err);

/*
 * Run @call in the target. If memlens dies before mli_inject_detach(), the
 * target runs @then[0..nthen-1] itself, then returns to its own context.
 * On success *ret holds the raw return value (negative errno on failure of
 * the call) and 0 is returned; a negative return means the injection
 * itself failed (-ESRCH: the target died).
 */
int mli_inject_syscall(struct mli_injector *in, const struct mli_inject_call *call,
		       const struct mli_inject_call *then, size_t nthen, long *ret,
		       struct ml_err *err);

/*
 * Change what an orphaned target still runs after the call that just
 * completed (e.g. close() of the descriptor that call returned).
 */
int mli_inject_set_then(struct mli_injector *in, const struct mli_inject_call *then, size_t nthen,
			struct ml_err *err);

/*
 * Run the injection thread's seccomp filters on @calls (and on the
 * rt_sigreturn an orphan would run): -EPERM, with the reason, when a
 * filter would kill, trap or suspend the target on one of them.
 */
int mli_inject_check_filters(struct mli_injector *in, const struct mli_inject_call *calls, size_t n,
			     struct ml_err *err);

/* The lowest descriptor number free in the (held) target. */
int mli_inject_lowest_free_fd(pid_t pid);

/*
 * Restore the thread's context exactly, put the scratch area back as it
 * was, let every thread go. Signals queued meanwhile are delivered by the
 * kernel with their own siginfo.
 */
int mli_inject_detach(struct mli_injector *in, struct ml_err *err);

/* Nanoseconds the target has been stopped since attach (or was, after detach). */
uint64_t mli_inject_stopped_ns(const struct mli_injector *in);

/* Search the target's code for the two instruction sequences. */
int mli_inject_find_gadgets(pid_t pid, struct mli_inject_prep *p, struct ml_err *err);

#pragma GCC visibility pop

#endif
