// SPDX-License-Identifier: MIT
/*
 * Death-safe syscall injection: see lib/inject/inject.h for the
 * design. The order of every step below matters: at each instant the
 * thread's registers, its mask and the frames in the scratch area together
 * bring it back to its own context if memlens disappears.
 */
#include <dirent.h>
#include <elf.h>
#include <linux/audit.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject_frame.h"
#include "inject_seccomp.h"
#include "inject.h"
#include "memlens/clock.h"
#include "memlens/proc.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif
#define ERESTARTNOHAND 514

#define STOP_DEADLINE_NS 2000000000ULL /* a thread that does not stop by then */
#define STACK_MARGIN (16 * 1024ULL) /* scratch at least this far below the main thread's sp */
/* a thread still in a killed memlens's continuation: stop again this often, this far apart */
#define ATTACH_RETRIES 250
#define ATTACH_RETRY_US 2000
#define XSTATE_MAX (64 * 1024)

/*
 * Fault injection for the tests, as CRIU_FAULT is for CRIU:
 * MEMLENS_FAULT_PTRACE=K kills this process (SIGKILL) at its K-th ptrace
 * call of an injection, to show the target survives memlens's death at
 * that instant.
 */
static long fault_at, fault_calls;

static void fault_reset(void)
{
	const char *s = getenv("MEMLENS_FAULT_PTRACE");

	fault_at = s ? atol(s) : 0;
	fault_calls = 0;
}

static long xptrace(int req, pid_t tid, void *addr, void *data)
{
	if (fault_at > 0 && ++fault_calls == fault_at)
		kill(getpid(), SIGKILL);
	return ptrace((enum __ptrace_request)req, tid, addr, data);
}
#define ptrace(req, tid, addr, data) xptrace(req, tid, (void *)(addr), (void *)(data))

/* ---- remote memory ---- */

static int peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- threads ---- */

/*
 * Calls that return EINTR when the thread is stopped, never restarted by
 * the kernel, and that may be entered again with the same arguments when
 * they returned EINTR (nothing was consumed).
 */
static bool nonrestartable(long nr)
{
	switch (nr) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_rt_sigtimedwait:
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_io_getevents:
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
	case SYS_read:
	case SYS_readv:
	case SYS_recvfrom:
	case SYS_recvmsg:
		return true;
	}
	return false;
}

/*
 * Calls that run with a temporary signal mask the kernel puts back when
 * they return: PTRACE_SETSIGMASK would drop that, and rt_sigreturn cannot
 * restore it, so such a thread is not chosen while another is there.
 */
static bool temp_mask_call(long nr)
{
	switch (nr) {
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_rt_sigsuspend:
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
		return true;
	}
	return false;
}

static bool stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static struct mli_inject_thread *thread_add(struct mli_injector *in, pid_t tid)
{
	for (size_t i = 0; i < in->nth; i++)
		if (in->th[i].tid == tid)
			return &in->th[i];
	if (in->nth == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 16;
		struct mli_inject_thread *t = realloc(in->th, cap * sizeof(*t));

		if (!t)
			return NULL;
		in->th = t;
		in->cap = cap;
	}
	in->th[in->nth] = (struct mli_inject_thread){ .tid = tid, .syscall = -1 };
	return &in->th[in->nth++];
}

/*
 * Wait for @tid's next stop. Signal-delivery stops on the way are handed
 * back at once with their own siginfo (or, for the injection thread in
 * the middle of a sequence, kept: see keep_signal()). Returns the wait
 * status of the stop, -ESRCH when the thread is gone, -ETIMEDOUT.
 */
static int wait_thread(pid_t tid, uint64_t deadline, bool block)
{
	uint64_t spin_until = ml_mono_ns() + 2000000;
	int status;

	for (;;) {
		pid_t w = waitpid(tid, &status, __WALL | (block ? 0 : WNOHANG));

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -ESRCH;
		}
		if (w == 0) {
			uint64_t t = ml_mono_ns();
			struct timespec ts = { 0, 50000 };

			if (t > deadline)
				return -ETIMEDOUT;
			/* a thread stops within microseconds: yield the CPU to
			 * it rather than sleep a timer slice */
			if (t < spin_until)
				sched_yield();
			else
				nanosleep(&ts, NULL);
			continue;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (WIFSTOPPED(status))
			return status;
	}
}

/*
 * Wait for a seized, interrupted thread to stop; signals that come first
 * go on unchanged. Then turn an EINTR the stop caused into a restart.
 */
static int hold_thread(struct mli_injector *in, struct mli_inject_thread *t, uint64_t deadline,
		       struct ml_err *err)
{
	struct user_regs_struct r;

	for (;;) {
		int st = wait_thread(t->tid, deadline, false);

		if (st == -ETIMEDOUT)
			return ml_err_set(
				err, EAGAIN,
				"thread %d of pid %d did not stop within 2 s (it is in an "
				"uninterruptible wait, such as vfork or disk I/O): try again",
				(int)t->tid, (int)in->pid);
		if (st < 0)
			return st;
		if (st >> 16 == PTRACE_EVENT_STOP)
			break; /* our interrupt, or a group-stop */
		if (st >> 16)
			continue; /* no other event was asked for */
		/* a signal that was being delivered: it goes on, unchanged */
		if (ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)WSTOPSIG(st)) < 0)
			return -ESRCH;
	}
	t->held = true;
	if (ptrace(PTRACE_GETREGS, t->tid, NULL, &r) < 0)
		return -ESRCH;
	t->syscall = (long)r.orig_rax;
	if (t->syscall >= 0 && nonrestartable(t->syscall)) {
		in->in_nonrestartable++;
		if ((long)r.rax == -EINTR) {
			/* the stop made it return EINTR: let the kernel decide on
			 * resume, as for a signal: restart, or EINTR for a handler */
			r.rax = (uint64_t)-ERESTARTNOHAND;
			if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) < 0)
				return -ESRCH;
			t->restarted = true;
			in->restarted++;
		}
	}
	return 0;
}

static int seize_error(pid_t pid, int e, struct ml_err *err)
{
	if (e == ESRCH)
		return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
	if (e == EPERM)
		return ml_err_set(err, EPERM,
				  "ptrace(PTRACE_SEIZE, %d) refused%s; check that no debugger "
				  "(gdb, strace) is already attached and that "
				  "kernel.yama.ptrace_scope allows it",
				  (int)pid, ml_proc_access_hint());
	return ml_err_set(err, e, "ptrace(PTRACE_SEIZE, %d): %s", (int)pid, strerror(e));
}

/* A thread that has exited (a main thread after pthread_exit stays a zombie) */
static bool thread_exited(pid_t pid, pid_t tid)
{
	return ml_proc_exited(pid, tid);
}

/* 0, or -1 with errno; a thread that exited meanwhile is dropped */
static int interrupt(struct mli_inject_thread *t)
{
	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) == 0)
		return 0;
	if (errno != ESRCH)
		return -1;
	t->tid = -1;
	return 0;
}

/* /proc/PID/task/TID/syscall: "NR args... sp pc" while blocked, "running" */
static bool blocked_in_nonrestartable(pid_t pid, pid_t tid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return false;
	buf[n] = '\0';
	return nonrestartable(strtol(buf, NULL, 10));
}

/*
 * Seize and stop every thread, until no new one appears: all of a round
 * are interrupted first, then waited for, so they stop together.
 */
static int hold_all(struct mli_injector *in, struct ml_err *err)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)in->pid);
	for (int round = 0; round < 64; round++) {
		DIR *d = opendir(path);
		size_t first = in->nth, n;
		struct dirent *de;
		uint64_t deadline;

		if (!d)
			return ml_err_set(err, ESRCH, "no process with pid %d", (int)in->pid);
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			size_t before = in->nth;
			struct mli_inject_thread *t;

			if (tid <= 0)
				continue;
			t = thread_add(in, tid);
			if (!t) {
				closedir(d);
				return ml_err_set(err, ENOMEM, "out of memory");
			}
			if (in->nth == before)
				continue; /* seen in an earlier round */
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) <
			    0) {
				int e = errno;

				t->tid = -1;
				if (e == ESRCH || thread_exited(in->pid, tid))
					continue; /* it exited meanwhile, or is a zombie */
				closedir(d);
				return seize_error(in->pid, e, err);
			}
			/* one blocked in a non-restartable wait is stopped last, on
			 * its own: the EINTR its stop causes is turned into a
			 * restart as soon as possible after */
			t->late = blocked_in_nonrestartable(in->pid, tid);
			if (!t->late && interrupt(t)) {
				closedir(d);
				return ml_err_set(err, errno, "PTRACE_INTERRUPT: %s",
						  strerror(errno));
			}
		}
		closedir(d);
		n = in->nth;
		if (n == first)
			return 0;
		deadline = ml_mono_ns() + STOP_DEADLINE_NS;
		for (int late = 0; late < 2; late++) {
			for (size_t i = first; i < n; i++) {
				struct mli_inject_thread *t = &in->th[i];
				int r;

				if (t->tid <= 0 || t->late != late)
					continue;
				if (late && interrupt(t))
					return ml_err_set(err, errno, "PTRACE_INTERRUPT: %s",
							  strerror(errno));
				if (t->tid <= 0)
					continue;
				r = hold_thread(in, t, deadline, err);
				if (r == -ESRCH) {
					t->tid = -1;
					continue;
				}
				if (r)
					return r;
			}
		}
	}
	return ml_err_set(err, EAGAIN, "pid %d keeps creating threads: try again", (int)in->pid);
}

/* Prefer a thread blocked in a call (idle), never one with a temporary mask. */
static struct mli_inject_thread *choose_thread(struct mli_injector *in)
{
	struct mli_inject_thread *best = NULL;
	int best_score = -1;

	for (size_t i = 0; i < in->nth; i++) {
		struct mli_inject_thread *t = &in->th[i];
		int score;

		if (!t->held || t->tid <= 0)
			continue;
		if (t->syscall >= 0 && temp_mask_call(t->syscall))
			score = 0;
		else if (t->syscall == SYS_restart_syscall)
			/* the rt_sigreturn that would bring it back if memlens died
			 * mid-injection makes the restart return EINTR (the kernel
			 * forgets a restart block at every sigreturn) */
			score = 1;
		else if (t->syscall >= 0)
			score = 3;
		else
			score = 2;
		if (t->tid == in->pid)
			score = score * 2 + 1;
		else
			score = score * 2;
		if (score > best_score) {
			best = t;
			best_score = score;
		}
	}
	return best;
}

/* ---- the injection thread's context and its continuation ---- */

static int save_context(struct mli_injector *in, struct ml_err *err)
{
	struct iovec iov;

	if (ptrace(PTRACE_GETREGS, in->tid, NULL, &in->saved) < 0)
		return ml_err_set(err, errno, "PTRACE_GETREGS: %s", strerror(errno));
	if (ptrace(PTRACE_GETSIGMASK, in->tid, (void *)sizeof(uint64_t), &in->saved_mask) < 0)
		return ml_err_set(err, errno, "PTRACE_GETSIGMASK: %s", strerror(errno));
	in->xstate = calloc(1, XSTATE_MAX);
	if (!in->xstate)
		return ml_err_set(err, ENOMEM, "out of memory");
	iov.iov_base = in->xstate;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, in->tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		in->xstate_len = iov.iov_len;
	} else if (ptrace(PTRACE_GETFPREGS, in->tid, NULL, in->xstate) == 0) {
		in->xstate_len = sizeof(struct user_fpregs_struct);
	} else {
		return ml_err_set(err, errno, "reading the FPU state: %s", strerror(errno));
	}
	in->fp_len = mli_inject_fp_len(in->xstate, in->xstate_len);
	if (!in->fp_len)
		return ml_err_set(err, ENOTSUP, "the thread's FPU state has an unknown layout");
	in->frame_len = mli_inject_frame_len(in->fp_len);
	return 0;
}

/* frame 0: the thread's own context; then two regions of INJECT_MAX_THEN */
static uint64_t frame_addr(const struct mli_injector *in, int region, size_t k)
{
	if (region < 0)
		return in->scratch;
	return in->scratch + in->frame_len * (1 + (size_t)region * INJECT_MAX_THEN + k);
}

static int choose_scratch(struct mli_injector *in, struct ml_err *err)
{
	uint64_t need = in->frame_len * (1 + 2 * INJECT_MAX_THEN);
	uint64_t start = (in->prep.stack_start + 63) & ~63ULL;
	uint64_t main_sp = 0;

	if (!in->prep.stack_start || start + need > in->prep.stack_end)
		return ml_err_set(err, ENOSPC, "pid %d has no main stack mapping to work in",
				  (int)in->pid);
	for (size_t i = 0; i < in->nth; i++) {
		struct user_regs_struct r;

		if (!in->th[i].held || in->th[i].tid <= 0)
			continue;
		if (in->th[i].tid == in->tid)
			r = in->saved;
		else if (ptrace(PTRACE_GETREGS, in->th[i].tid, NULL, &r) < 0)
			continue;
		/*
		 * A stack pointer among the continuation frames: a memlens that
		 * was killed left this thread running them back to its own
		 * context. Writing frames now would overwrite what it runs: wait
		 * until it is out (mli_inject_attach() tries again).
		 */
		if (r.rsp >= start && r.rsp < start + need)
			return ml_err_set(err, EAGAIN,
					  "thread %d of pid %d is still returning to its own code "
					  "after an earlier memlens run was killed; try again",
					  (int)in->th[i].tid, (int)in->pid);
		if (in->th[i].tid == in->pid)
			main_sp = r.rsp;
	}
	if (main_sp >= in->prep.stack_start && main_sp < in->prep.stack_end &&
	    main_sp < start + need + STACK_MARGIN)
		return ml_err_set(err, ENOSPC,
				  "pid %d uses nearly all of its main stack mapping (%llu KiB): "
				  "no room to work in safely",
				  (int)in->pid,
				  (unsigned long long)(in->prep.stack_end - in->prep.stack_start) /
					  1024);
	in->scratch = start;
	in->scratch_len = need;
	in->scratch_orig = malloc(need);
	if (!in->scratch_orig)
		return ml_err_set(err, ENOMEM, "out of memory");
	if (peek(in->pid, start, in->scratch_orig, need))
		return ml_err_set(err, EFAULT, "reading the target's stack at 0x%llx failed",
				  (unsigned long long)start);
	return 0;
}

static int write_frame(struct mli_injector *in, uint64_t at, const struct user_regs_struct *r,
		       uint64_t mask)
{
	unsigned char *buf = malloc(in->frame_len);
	int rc;

	if (!buf)
		return -ENOMEM;
	mli_inject_frame_build(buf, at, in->prep.sigreturn, r, mask, in->xstate, in->xstate_len,
			       in->fp_len);
	rc = poke(in->pid, at, buf, in->frame_len);
	free(buf);
	return rc;
}

/* the registers that run @c at the syscall; ret pair, then `ret` to @next */
static void call_regs(const struct mli_injector *in, const struct mli_inject_call *c, uint64_t next,
		      struct user_regs_struct *r)
{
	*r = in->saved;
	r->rax = (uint64_t)c->nr;
	r->orig_rax = (uint64_t)-1;
	r->rdi = c->a[0];
	r->rsi = c->a[1];
	r->rdx = c->a[2];
	r->r10 = c->a[3];
	r->r8 = c->a[4];
	r->r9 = c->a[5];
	r->rip = in->prep.syscall_ret;
	r->rsp = next;
	r->eflags &= ~(1ULL << 8);
}

/* mask while injected calls run: everything blocked, or the thread's own */
static uint64_t run_mask(const struct mli_injector *in)
{
	return in->mask_blocked ? ~0ULL : in->saved_mask;
}

static int write_then(struct mli_injector *in, int region, const struct mli_inject_call *then,
		      size_t nthen, struct ml_err *err)
{
	if (nthen > INJECT_MAX_THEN)
		return ml_err_set(err, EINVAL, "too many continuation calls");
	for (size_t k = nthen; k-- > 0;) {
		struct user_regs_struct r;
		uint64_t next =
			k + 1 < nthen ? frame_addr(in, region, k + 1) : frame_addr(in, -1, 0);

		call_regs(in, &then[k], next, &r);
		if (write_frame(in, frame_addr(in, region, k), &r, run_mask(in)))
			return ml_err_set(err, EFAULT, "writing the continuation failed");
	}
	return 0;
}

/* ---- stepping ---- */

static void keep_signal(struct mli_injector *in, int sig)
{
	if (in->nstash >= INJECT_MAX_STASH) {
		in->lost++;
		return;
	}
	in->stash[in->nstash].sig = sig;
	if (ptrace(PTRACE_GETSIGINFO, in->tid, NULL, in->stash[in->nstash].info) < 0)
		memset(in->stash[in->nstash].info, 0, sizeof(in->stash[0].info));
	in->nstash++;
}

/*
 * Resume with @req and wait for the next syscall stop (or, with @want_event,
 * the next PTRACE_EVENT_STOP). Stop signals pass at once; other signals can
 * only arrive when the mask was left alone, and are kept for later.
 */
static int step(struct mli_injector *in, int req, bool want_event, int *out_sig, struct ml_err *err)
{
	uint64_t deadline = ml_mono_ns() + 10 * STOP_DEADLINE_NS;
	int sig = 0;

	for (;;) {
		int st;

		if (ptrace(req, in->tid, NULL, (void *)(long)sig) < 0)
			return ml_err_set(err, errno, "ptrace resume: %s", strerror(errno));
		sig = 0;
		st = wait_thread(in->tid, deadline, true);
		if (st < 0) {
			in->stopped = false;
			return ml_err_set(err, ESRCH, "the target exited during injection");
		}
		if (WSTOPSIG(st) == (SIGTRAP | 0x80) && !want_event)
			return 0;
		if (st >> 16 == PTRACE_EVENT_STOP) {
			if (want_event)
				return 0;
			continue; /* a group-stop: our work goes on, the stop stays */
		}
		if (st >> 16 || WSTOPSIG(st) == (SIGTRAP | 0x80))
			continue;
		if (stop_signal(WSTOPSIG(st))) {
			sig = WSTOPSIG(st); /* job control goes on as without us */
			continue;
		}
		if (want_event && out_sig) {
			/* at the end, with the thread's own context back: a pending
			 * signal is delivered now, with its own siginfo */
			*out_sig = WSTOPSIG(st);
			return 0;
		}
		keep_signal(in, WSTOPSIG(st));
	}
}

/*
 * Keep every signal queued in the kernel while injected calls run. Only
 * once the registers lead into the continuation: an orphan whose
 * registers are still its own would keep the blocked mask for ever.
 */
static void block_signals(struct mli_injector *in)
{
	uint64_t all = ~0ULL;

	if (!in->may_block || in->mask_blocked)
		return;
	if (ptrace(PTRACE_SETSIGMASK, in->tid, (void *)sizeof(all), &all) == 0)
		in->mask_blocked = true;
}

int mli_inject_syscall(struct mli_injector *in, const struct mli_inject_call *call,
		       const struct mli_inject_call *then, size_t nthen, long *ret,
		       struct ml_err *err)
{
	struct user_regs_struct regs;
	int region = in->region == 0 ? 1 : 0; /* not the one the thread may still use */
	uint64_t next;
	int r;

	if (!in->stopped)
		return ml_err_set(err, EINVAL, "injection into a thread that is not stopped");
	r = write_then(in, region, then, nthen, err);
	if (r)
		return r;
	next = nthen ? frame_addr(in, region, 0) : frame_addr(in, -1, 0);
	call_regs(in, call, next, &regs);
	/* one switch: from here an orphan runs @call, then @then, then returns */
	if (ptrace(PTRACE_SETREGS, in->tid, NULL, &regs) < 0)
		return ml_err_set(err, errno, "PTRACE_SETREGS: %s", strerror(errno));
	in->region = region;
	block_signals(in);
	r = step(in, PTRACE_SYSCALL, false, NULL, err); /* entry */
	if (!r)
		r = step(in, PTRACE_SYSCALL, false, NULL, err); /* exit */
	if (r)
		return r;
	in->at_syscall_exit = true;
	if (ptrace(PTRACE_GETREGS, in->tid, NULL, &regs) < 0)
		return ml_err_set(err, errno, "PTRACE_GETREGS: %s", strerror(errno));
	if (regs.rip != in->prep.syscall_ret + 2)
		return ml_err_set(err, EFAULT,
				  "the target's thread is at an unexpected address after the "
				  "injected syscall");
	in->injected++;
	*ret = (long)regs.rax;
	return 0;
}

int mli_inject_set_then(struct mli_injector *in, const struct mli_inject_call *then, size_t nthen,
			struct ml_err *err)
{
	struct user_regs_struct regs;
	int region = in->region == 0 ? 1 : 0;
	int r = write_then(in, region, then, nthen, err);

	if (r)
		return r;
	/* the `ret` after the call pops the word rsp points at: switch it */
	if (ptrace(PTRACE_GETREGS, in->tid, NULL, &regs) < 0)
		return ml_err_set(err, errno, "PTRACE_GETREGS: %s", strerror(errno));
	regs.rsp = nthen ? frame_addr(in, region, 0) : frame_addr(in, -1, 0);
	if (ptrace(PTRACE_SETREGS, in->tid, NULL, &regs) < 0)
		return ml_err_set(err, errno, "PTRACE_SETREGS: %s", strerror(errno));
	in->region = region;
	return 0;
}

static const char *call_name(long nr)
{
	switch (nr) {
	case SYS_userfaultfd:
		return "userfaultfd";
	case SYS_close:
		return "close";
	case SYS_rt_sigreturn:
		return "rt_sigreturn";
	}
	return "a system call";
}

int mli_inject_check_filters(struct mli_injector *in, const struct mli_inject_call *calls, size_t n,
			     struct ml_err *err)
{
	struct seccomp_data d[8];
	const char *names[8];
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < 8; i++, k++) {
		memset(&d[k], 0, sizeof(d[k]));
		d[k].nr = (int)calls[i].nr;
		d[k].arch = AUDIT_ARCH_X86_64;
		d[k].instruction_pointer = in->prep.syscall_ret;
		memcpy(d[k].args, calls[i].a, sizeof(d[k].args));
		names[k] = call_name(calls[i].nr);
	}
	/* what an orphaned target runs to get back to its own context */
	memset(&d[k], 0, sizeof(d[k]));
	d[k].nr = SYS_rt_sigreturn;
	d[k].arch = AUDIT_ARCH_X86_64;
	d[k].instruction_pointer = in->prep.sigreturn + 7;
	names[k++] = "rt_sigreturn";
	return mli_seccomp_check_calls(in->tid, d, k, names, err);
}

int mli_inject_lowest_free_fd(pid_t pid)
{
	char path[64];
	unsigned char used[8192] = { 0 };
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && fd >= 0 &&
		    fd < (int)sizeof(used) * 8)
			used[fd / 8] |= (unsigned char)(1 << (fd % 8));
	}
	closedir(d);
	for (int fd = 0; fd < (int)sizeof(used) * 8; fd++)
		if (!(used[fd / 8] & (1 << (fd % 8))))
			return fd;
	return -EMFILE;
}

/* ---- attach ---- */

static int check_gadgets(struct mli_injector *in, struct ml_err *err)
{
	unsigned char a[3], b[9];

	if (peek(in->pid, in->prep.syscall_ret, a, sizeof(a)) ||
	    peek(in->pid, in->prep.sigreturn, b, sizeof(b)) || a[0] != 0x0f || a[1] != 0x05 ||
	    a[2] != 0xc3 ||
	    !((b[0] == 0x48 && b[1] == 0xc7 && b[2] == 0xc0 && b[3] == 15 && !b[4] && !b[5] &&
	       !b[6] && b[7] == 0x0f && b[8] == 0x05) ||
	      (b[0] == 0xb8 && b[1] == 15 && !b[2] && !b[3] && !b[4] && b[5] == 0x0f &&
	       b[6] == 0x05))) {
		/* the code changed between preparation and stop: search again */
		return mli_inject_find_gadgets(in->pid, &in->prep, err);
	}
	return 0;
}

static int setup_thread(struct mli_injector *in, struct ml_err *err)
{
	struct user_regs_struct own;
	int r;

	in->stop_ns = ml_mono_ns();
	r = save_context(in, err);
	if (!r)
		r = check_gadgets(in, err);
	if (!r)
		r = choose_scratch(in, err);
	if (r)
		return r;
	/* the frame that returns the thread to its own context; fixed */
	own = in->saved;
	mli_inject_apply_restart(&own);
	if (write_frame(in, frame_addr(in, -1, 0), &own, in->saved_mask))
		return ml_err_set(err, EFAULT, "writing the continuation failed");
	in->region = 0;
	/* signals are blocked once the thread's registers lead into the
	 * continuation (whose last frame unblocks them): see block_signals() */
	in->may_block =
		!(in->saved.orig_rax != (uint64_t)-1 && temp_mask_call((long)in->saved.orig_rax));
	in->stopped = true;
	return 0;
}

int mli_inject_attach(struct mli_injector *in, pid_t pid, const struct mli_inject_prep *prep,
		      struct ml_err *err)
{
	struct mli_inject_thread *t;
	int r;

	fault_reset();
	for (int attempt = 0;; attempt++) {
		struct ml_err e2;

		memset(in, 0, sizeof(*in));
		in->pid = pid;
		in->prep = *prep;
		in->stop_ns = ml_mono_ns();
		r = hold_all(in, err);
		if (r)
			return r;
		t = choose_thread(in);
		if (!t)
			return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
		in->tid = t->tid;
		r = setup_thread(in, err);
		if (r != -EAGAIN || attempt >= ATTACH_RETRIES)
			return r;
		/* let the continuation finish: release every thread, wait, stop again */
		mli_inject_detach(in, &e2);
		usleep(ATTACH_RETRY_US);
	}
}

int mli_inject_adopt_stopped(struct mli_injector *in, pid_t tid, struct ml_err *err)
{
	struct mli_inject_thread *t;
	int r;

	memset(in, 0, sizeof(*in));
	fault_reset();
	in->pid = tid;
	in->tid = tid;
	in->adopted = true;
	t = thread_add(in, tid);
	if (!t)
		return ml_err_set(err, ENOMEM, "out of memory");
	t->held = true;
	if (ptrace(PTRACE_SETOPTIONS, tid, NULL,
		   (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD)) < 0)
		return ml_err_set(err, errno, "PTRACE_SETOPTIONS: %s", strerror(errno));
	r = mli_inject_prepare(tid, &in->prep, err);
	if (r)
		return r;
	/* stopped at the exec's syscall-exit stop */
	in->at_syscall_exit = true;
	return setup_thread(in, err);
}

/* ---- detach ---- */

/*
 * Signals taken from the thread mid-sequence (its mask could not be
 * changed) are queued again: exactly, with their siginfo, where the kernel
 * allows it (si_code < 0 but tkill's); else as tgkill(), and the first of
 * those gets its siginfo back at the final stop.
 */
static void requeue_kept(struct mli_injector *in)
{
	for (int i = 0; i < in->nstash; i++) {
		siginfo_t *si = (siginfo_t *)(void *)in->stash[i].info;

		if (si->si_code < 0 && si->si_code != SI_TKILL &&
		    syscall(SYS_rt_tgsigqueueinfo, in->pid, in->tid, in->stash[i].sig, si) == 0)
			continue;
		syscall(SYS_tgkill, in->pid, in->tid, in->stash[i].sig);
	}
}

static void restore_siginfo(struct mli_injector *in, int sig)
{
	for (int i = 0; i < in->nstash; i++) {
		siginfo_t *si = (siginfo_t *)(void *)in->stash[i].info;

		if (in->stash[i].sig == sig && (si->si_code >= 0 || si->si_code == SI_TKILL)) {
			ptrace(PTRACE_SETSIGINFO, in->tid, NULL, si);
			return;
		}
	}
}

/*
 * Give the injection thread its own context back and leave it at a stop
 * in get_signal(), where the kernel applies the restart of the call it was
 * stopped in and delivers what is queued. The order keeps every instant
 * safe for an orphan: the interrupt first (it then still passes
 * get_signal()), the mask, then the registers. *sig: a signal being
 * delivered at that stop, to pass on.
 */
static int restore_thread(struct mli_injector *in, int *sig, struct ml_err *err)
{
	int r = 0;

	if (in->at_syscall_exit)
		ptrace(PTRACE_INTERRUPT, in->tid, NULL, NULL);
	if (in->mask_blocked &&
	    ptrace(PTRACE_SETSIGMASK, in->tid, (void *)sizeof(uint64_t), &in->saved_mask) < 0)
		r = ml_err_set(err, errno, "restoring the target's signal mask: %s",
			       strerror(errno));
	in->mask_blocked = false;
	if (ptrace(PTRACE_SETREGS, in->tid, NULL, &in->saved) < 0 && !r)
		r = ml_err_set(err, errno, "restoring the target's registers: %s", strerror(errno));
	requeue_kept(in);
	if (in->at_syscall_exit) {
		struct ml_err e2;

		if (step(in, PTRACE_CONT, true, sig, &e2) && !r)
			r = ml_err_set(err, e2.code, "%s", e2.msg);
		in->at_syscall_exit = false;
	}
	if (*sig)
		restore_siginfo(in, *sig);
	/* the continuation is no longer referenced: put the stack back */
	if (in->scratch_orig && in->stopped)
		poke(in->pid, in->scratch, in->scratch_orig, in->scratch_len);
	return r;
}

int mli_inject_detach(struct mli_injector *in, struct ml_err *err)
{
	int r = 0, sig = 0;
	bool own = in->stopped;

	if (own) {
		r = restore_thread(in, &sig, err);
		if (in->stopped && ptrace(PTRACE_DETACH, in->tid, NULL, (void *)(long)sig) < 0 &&
		    !r)
			r = ml_err_set(err, errno, "PTRACE_DETACH: %s", strerror(errno));
	}
	/* every other thread is at its interrupt or group stop */
	for (size_t i = 0; i < in->nth; i++) {
		struct mli_inject_thread *t = &in->th[i];

		if (t->tid > 0 && t->held && !(own && t->tid == in->tid))
			ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
		t->held = false;
	}
	in->stopped = false;
	in->stop_ns = ml_mono_ns() - in->stop_ns;
	free(in->th);
	in->th = NULL;
	in->nth = in->cap = 0;
	free(in->xstate);
	in->xstate = NULL;
	free(in->scratch_orig);
	in->scratch_orig = NULL;
	return r;
}

uint64_t mli_inject_stopped_ns(const struct mli_injector *in)
{
	return in->stopped ? ml_mono_ns() - in->stop_ns : in->stop_ns;
}
