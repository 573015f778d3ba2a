// SPDX-License-Identifier: MIT
#include <errno.h>
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

#include "memlens/inject.h"
#include "memlens/maps.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int search_range(pid_t pid, uint64_t start, uint64_t end, uint64_t *addr)
{
	static const size_t chunk = 64 * 1024;
	unsigned char *buf = malloc(chunk + 1);
	uint64_t pos;
	int found = 0;

	if (!buf)
		return -ENOMEM;
	for (pos = start; pos < end && !found; pos += chunk) {
		size_t len = end - pos < chunk + 1 ? end - pos : chunk + 1;
		struct iovec l = { buf, len }, r = { (void *)(uintptr_t)pos, len };
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (n < 2)
			break;
		for (ssize_t i = 0; i + 1 < n; i++) {
			if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
				*addr = pos + (uint64_t)i;
				found = 1;
				break;
			}
		}
	}
	free(buf);
	return found;
}

int inject_find_syscall_insn(pid_t pid, uint64_t *addr, struct ml_err *err)
{
	struct vma_set s;
	int r, found = 0;

	vma_set_init(&s);
	r = maps_read(pid, &s, err);
	if (r)
		goto out;
	maps_classify(&s, NULL);
	/* the vDSO first: it is the kernel's, present everywhere, never written */
	for (size_t i = 0; i < s.n && !found; i++)
		if (s.v[i].kind == VMA_VDSO)
			found = search_range(pid, s.v[i].start, s.v[i].end, addr);
	for (size_t i = 0; i < s.n && !found; i++)
		if (s.v[i].perms[2] == 'x' && s.v[i].kind != VMA_VSYSCALL)
			found = search_range(pid, s.v[i].start, s.v[i].end, addr);
	if (found < 0)
		r = ml_err_set(err, ENOMEM, "out of memory searching for a syscall instruction");
	else if (!found)
		r = ml_err_set(err, ENOEXEC,
			       "no syscall instruction found in the target's executable mappings");
out:
	vma_set_free(&s);
	return r;
}

static void stash_signal(struct injector *in, int sig)
{
	if (sig == SIGTRAP || sig <= 0)
		return;
	for (int i = 0; i < in->npending; i++)
		if (in->pending[i] == sig)
			return; /* standard signals do not queue */
	if (in->npending < INJECT_MAX_PENDING)
		in->pending[in->npending++] = sig;
}

/* Wait for the next ptrace-stop of @in->tid. Returns the status or -errno. */
static int wait_stop(struct injector *in, struct ml_err *err)
{
	int status;

	for (;;) {
		pid_t w = waitpid(in->tid, &status, __WALL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return ml_err_set(err, errno, "waitpid(%d): %s", (int)in->tid,
					  strerror(errno));
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			in->exited = true;
			in->seized = false;
			in->stopped = false;
			return ml_err_set(err, ESRCH, "the target exited during injection");
		}
		if (WIFSTOPPED(status))
			return status;
	}
}

static int find_insn_and_save(struct injector *in, struct ml_err *err)
{
	int r;

	if (ptrace(PTRACE_GETREGS, in->tid, NULL, &in->saved) < 0)
		return ml_err_set(err, errno, "PTRACE_GETREGS: %s", strerror(errno));
	r = inject_find_syscall_insn(in->tid, &in->syscall_insn, err);
	return r;
}

int inject_adopt_stopped(struct injector *in, pid_t tid, struct ml_err *err)
{
	memset(in, 0, sizeof(*in));
	in->tid = tid;
	in->seized = true;
	in->stopped = true;
	in->stop_ns = now_ns();
	return find_insn_and_save(in, err);
}

int inject_attach(struct injector *in, pid_t tid, struct ml_err *err)
{
	int status, r;

	memset(in, 0, sizeof(*in));
	in->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		int e = errno;

		if (e == ESRCH)
			return ml_err_set(err, ESRCH, "no process with pid %d", (int)tid);
		if (e == EPERM)
			return ml_err_set(
				err, EPERM,
				"ptrace(PTRACE_SEIZE, %d) refused: run as root or with "
				"CAP_SYS_PTRACE, and check that no debugger (gdb, strace) is "
				"already attached and that kernel.yama.ptrace_scope allows it",
				(int)tid);
		return ml_err_set(err, e, "ptrace(PTRACE_SEIZE, %d): %s", (int)tid, strerror(e));
	}
	in->seized = true;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
		r = ml_err_set(err, errno, "PTRACE_INTERRUPT: %s", strerror(errno));
		goto fail;
	}
	for (;;) {
		status = wait_stop(in, err);
		if (status < 0)
			return status;
		if (status >> 16 == PTRACE_EVENT_STOP)
			break;
		/* a signal-delivery-stop came first: keep the signal for later */
		stash_signal(in, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0) {
			r = ml_err_set(err, errno, "PTRACE_CONT: %s", strerror(errno));
			goto fail;
		}
	}
	in->stopped = true;
	in->stop_ns = now_ns();
	r = find_insn_and_save(in, err);
	if (r)
		goto fail;
	return 0;
fail:
	if (in->seized && !in->exited)
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
	in->seized = false;
	return r;
}

int inject_syscall(struct injector *in, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		   uint64_t a5, uint64_t a6, long *ret, struct ml_err *err)
{
	struct user_regs_struct regs = in->saved;
	int status;

	if (!in->stopped)
		return ml_err_set(err, EINVAL, "injection into a thread that is not stopped");
	regs.rax = (uint64_t)nr;
	regs.orig_rax = (uint64_t)-1; /* no syscall-restart fix-up of our registers */
	regs.rdi = a1;
	regs.rsi = a2;
	regs.rdx = a3;
	regs.r10 = a4;
	regs.r8 = a5;
	regs.r9 = a6;
	regs.rip = in->syscall_insn;
	regs.eflags &= ~(1ULL << 8); /* TF: set by the kernel for SINGLESTEP */
	if (ptrace(PTRACE_SETREGS, in->tid, NULL, &regs) < 0)
		return ml_err_set(err, errno, "PTRACE_SETREGS: %s", strerror(errno));
	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, in->tid, NULL, NULL) < 0)
			return ml_err_set(err, errno, "PTRACE_SINGLESTEP: %s", strerror(errno));
		status = wait_stop(in, err);
		if (status < 0)
			return status;
		if (ptrace(PTRACE_GETREGS, in->tid, NULL, &regs) < 0)
			return ml_err_set(err, errno, "PTRACE_GETREGS: %s", strerror(errno));
		if (status >> 16 == 0)
			stash_signal(in, WSTOPSIG(status));
		if (regs.rip == in->syscall_insn + 2)
			break;
		if (regs.rip != in->syscall_insn)
			return ml_err_set(err, EFAULT,
					  "the target's thread is at an unexpected address after "
					  "the injected syscall");
	}
	in->injected++;
	*ret = (long)regs.rax;
	return 0;
}

int inject_detach(struct injector *in, struct ml_err *err)
{
	int r = 0;

	if (!in->seized)
		return 0;
	if (in->stopped && ptrace(PTRACE_SETREGS, in->tid, NULL, &in->saved) < 0)
		r = ml_err_set(err, errno, "restoring the target's registers: %s", strerror(errno));
	/* a signal can only be handed over at a signal-delivery-stop, which is
	 * where the last single-step left the thread */
	int first = in->injected && in->npending ? in->pending[0] : 0;

	if (ptrace(PTRACE_DETACH, in->tid, NULL, (void *)(uintptr_t)first) < 0 && !r)
		r = ml_err_set(err, errno, "PTRACE_DETACH: %s", strerror(errno));
	for (int i = first ? 1 : 0; i < in->npending; i++)
		syscall(SYS_tkill, in->tid, in->pending[i]);
	in->stop_ns = now_ns() - in->stop_ns;
	in->seized = false;
	in->stopped = false;
	return r;
}

uint64_t inject_stopped_ns(const struct injector *in)
{
	return in->stopped ? now_ns() - in->stop_ns : in->stop_ns;
}
