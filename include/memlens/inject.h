/* SPDX-License-Identifier: MIT */
/*
 * x86_64 system-call injection with ptrace, harmless to the target:
 * PTRACE_SEIZE + PTRACE_INTERRUPT, no write to the target's code (a
 * `syscall` instruction that already exists in an executable mapping, the
 * vDSO's first, is executed with PTRACE_SINGLESTEP), registers restored
 * exactly (orig_rax included, so an interrupted nanosleep/read/poll/futex
 * restarts), and signals that arrive meanwhile are handed back on detach.
 */
#ifndef MEMLENS_INJECT_H
#define MEMLENS_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "memlens/err.h"

#define INJECT_MAX_PENDING 16

struct injector {
	pid_t tid; /* the thread we stop */
	uint64_t syscall_insn; /* address of a 0f 05 in the target */
	struct user_regs_struct saved;
	int pending[INJECT_MAX_PENDING]; /* signals that arrived while stopped */
	int npending;
	bool seized, stopped, exited;
	uint64_t stop_ns; /* when the target was stopped */
	unsigned long injected; /* syscalls executed */
};

/* Seize and stop @tid, save its registers, find a syscall instruction. */
int inject_attach(struct injector *in, pid_t tid, struct ml_err *err);

/*
 * For a thread we already seized and that is in a ptrace-stop (for example
 * our child at its PTRACE_EVENT_EXEC stop): save registers, find the insn.
 */
int inject_adopt_stopped(struct injector *in, pid_t tid, struct ml_err *err);

/*
 * Run one system call in the target. On success *ret holds the raw return
 * value (a negative errno when the syscall failed) and 0 is returned; a
 * negative return means the injection itself failed (-ESRCH: target died).
 */
int inject_syscall(struct injector *in, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		   uint64_t a5, uint64_t a6, long *ret, struct ml_err *err);

/* Restore the saved registers, detach, re-deliver signals. */
int inject_detach(struct injector *in, struct ml_err *err);

/* Nanoseconds the target has been stopped since attach (or was, after detach). */
uint64_t inject_stopped_ns(const struct injector *in);

/* Find a `syscall` instruction in the target's vDSO (or another r-x mapping). */
int inject_find_syscall_insn(pid_t pid, uint64_t *addr, struct ml_err *err);

#endif
