// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memlens/attach.h"
#include "../common/uapi.h"
#include "inject.h"
#include "memlens/proc.h"
#include "uffd.h"
#include "inject_seccomp.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int ml_wp_check_target(pid_t pid, struct ml_err *err)
{
	struct ml_proc_stat st;

	if (pid <= 0)
		return ml_err_set(err, EINVAL, "invalid pid %d", (int)pid);
	if (pid == getpid())
		return ml_err_set(err, EINVAL, "refusing to profile memlens itself (pid %d)",
				  (int)pid);
	int r = ml_proc_stat_read(pid, 0, &st);

	if (r && r != -EINVAL)
		return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
	if (!r) {
		char state = st.state;

		if (st.flags & ML_PF_KTHREAD)
			return ml_err_set(
				err, EINVAL,
				"pid %d is a kernel thread: it has no user memory to profile",
				(int)pid);
		/* a main thread that called pthread_exit() is a zombie while
		 * the other threads run on */
		if ((state == 'Z' || state == 'X') && ml_proc_threads(pid) <= 1)
			return ml_err_set(err, ESRCH, "pid %d has exited (zombie)", (int)pid);
		if (state == 'Z' || state == 'X')
			return ml_err_set(
				err, ENOTSUP,
				"the main thread of pid %d has exited while its other "
				"threads run on: the kernel no longer shows the process's "
				"memory through /proc/%d, so it cannot be profiled",
				(int)pid, (int)pid);
	}
	return 0;
}

static int pidfd_getfd_from(pid_t pid, int tfd, struct ml_err *err)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int fd;

	if (pidfd < 0)
		return ml_err_set(err, errno, "pidfd_open(%d): %s", (int)pid, strerror(errno));
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, tfd, 0);
	if (fd < 0) {
		int e = errno;

		close(pidfd);
		return ml_err_set(err, e, "pidfd_getfd: %s%s", strerror(e),
				  e == ENOSYS ? " (Linux 5.6 or later is needed)" : "");
	}
	close(pidfd);
	return fd;
}

static int uffd_create_error(pid_t pid, long r, struct ml_err *err)
{
	if (r == -ENOSYS)
		return ml_err_set(err, ENOTSUP,
				  "userfaultfd() is not available in the target (kernel built "
				  "without CONFIG_USERFAULTFD, or a seccomp filter blocks it)");
	if (r == -EPERM && mli_seccomp_mode(pid) == 2)
		return ml_err_set(
			err, EPERM,
			"userfaultfd() refused in the target by its seccomp filter (allow "
			"userfaultfd in its system call filter to profile it)");
	if (r == -EPERM)
		return ml_err_set(
			err, EPERM,
			"userfaultfd() refused in the target (set vm.unprivileged_userfaultfd=1 or "
			"give the target CAP_SYS_PTRACE)");
	return ml_err_set(err, (int)-r, "userfaultfd() in the target failed: %s",
			  strerror((int)-r));
}

/*
 * The injected sequence: userfaultfd() in the target, our copy by
 * pidfd_getfd(), close() of the target's. Whatever instant memlens dies,
 * the continuation still closes the target's copy: its number is
 * predicted (every thread is held, so nothing else opens a descriptor)
 * and corrected once known.
 */
static int uffd_sequence(struct mli_injector *in, pid_t pid, struct ml_attach_stats *st,
			 struct ml_err *err)
{
	struct mli_inject_call uf = { SYS_userfaultfd,
				      { O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY } };
	struct mli_inject_call cl = { SYS_close, { 0 } };
	int pred = mli_inject_lowest_free_fd(pid);
	long tfd = -1, cr;
	int ufd = -1, r;

	cl.a[0] = (uint64_t)(pred >= 0 ? pred : 0);
	{
		struct mli_inject_call all[3] = { uf, uf, cl };

		all[1].a[0] = O_CLOEXEC | O_NONBLOCK;
		r = mli_inject_check_filters(in, all, 3, err);
		if (r)
			return r;
	}
	st->user_mode_only = true;
	r = mli_inject_syscall(in, &uf, &cl, pred >= 0, &tfd, err);
	if (!r && (tfd == -EINVAL || tfd == -EPERM)) {
		/* kernels before 5.11 know no UFFD_USER_MODE_ONLY */
		st->user_mode_only = false;
		uf.a[0] = O_CLOEXEC | O_NONBLOCK;
		r = mli_inject_syscall(in, &uf, &cl, pred >= 0, &tfd, err);
	}
	if (r)
		return ml_err_wrap(err, "injecting userfaultfd()");
	if (tfd < 0)
		return uffd_create_error(pid, tfd, err);
	if (tfd != pred) {
		cl.a[0] = (uint64_t)tfd;
		r = mli_inject_set_then(in, &cl, 1, err);
		if (r)
			return r;
	}
	ufd = pidfd_getfd_from(pid, (int)tfd, err);
	/* whatever happened, the target must not keep the uffd */
	{
		struct ml_err e2 = { 0 };
		int r2 = mli_inject_syscall(in, &cl, NULL, 0, &cr, &e2);

		if (ufd >= 0 && (r2 || cr < 0)) {
			close(ufd);
			if (r2) {
				*err = e2;
				return r2;
			}
			return ml_err_set(err, (int)-cr,
					  "close() of the target's uffd copy failed: %s",
					  strerror((int)-cr));
		}
	}
	return ufd;
}

struct attach_job {
	pid_t pid;
	bool already_stopped;
	struct mli_inject_prep prep;
	struct ml_attach_stats *st;
	struct ml_err err;
	int rc;
};

static void *attach_run(void *arg)
{
	struct attach_job *j = arg;
	struct mli_injector in;
	struct ml_err e3 = { 0 };
	int r, r3;

	r = j->already_stopped ? mli_inject_adopt_stopped(&in, j->pid, &j->err)
			       : mli_inject_attach(&in, j->pid, &j->prep, &j->err);
	if (r)
		ml_err_wrap(&j->err, "attaching to pid %d", (int)j->pid);
	else
		r = uffd_sequence(&in, j->pid, j->st, &j->err);
	j->st->syscalls = in.injected;
	j->st->threads_held = (unsigned int)in.nth;
	j->st->restarted = in.restarted;
	j->st->in_nonrestartable = in.in_nonrestartable;
	j->st->signals_kept = (unsigned int)in.nstash;
	r3 = mli_inject_detach(&in, &e3);
	if (r3 && r >= 0) {
		if (r >= 0)
			close(r);
		r = r3;
		j->err = e3;
	}
	j->st->stopped_ns = mli_inject_stopped_ns(&in);
	j->rc = r;
	return NULL;
}

static int wp_attach(pid_t pid, bool already_stopped, struct ml_attach_stats *st,
		     struct ml_err *err)
{
	struct attach_job job = { .pid = pid, .already_stopped = already_stopped, .st = st };
	sigset_t block, old;
	pthread_t th;
	int ufd, r;

	if (!already_stopped) {
		r = ml_wp_check_target(pid, err);
		if (r)
			return r;
		/* everything that can be found before the target is stopped */
		r = mli_inject_prepare(pid, &job.prep, err);
		if (r)
			return ml_err_wrap(err, "attaching to pid %d", (int)pid);
	}
	/* no signal of ours interrupts the window: the work runs in a thread
	 * with every signal blocked; when it ends, the kernel detaches
	 * whatever it still traces */
	sigfillset(&block);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	if (already_stopped) {
		/* our child is traced by this thread: do it here */
		attach_run(&job);
	} else if ((r = pthread_create(&th, NULL, attach_run, &job)) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return ml_err_set(err, r, "pthread_create: %s", strerror(r));
	} else {
		pthread_join(th, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (job.rc < 0) {
		*err = job.err;
		return job.rc;
	}
	ufd = job.rc;
	r = mli_uffd_api(ufd, &st->features, err);
	if (r) {
		close(ufd);
		return r;
	}
	return ufd;
}

int ml_wp_attach(pid_t pid, bool already_stopped, struct ml_attach_stats *st, struct ml_err *err)
{
	struct ml_attach_stats v = { .sz = sizeof(v) };
	int r;

	/* the caller's struct as large as its sz says (memlens/opts.h): cleared, or refused */
	if (st && (r = ml_result_store(st, &v, sizeof(v), sizeof(v), "ml_attach_stats", err)))
		return r;
	r = wp_attach(pid, already_stopped, &v, err);
	if (st)
		ml_result_store(st, &v, sizeof(v), sizeof(v), "ml_attach_stats", NULL);
	return r;
}
