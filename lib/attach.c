// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memlens/attach.h"
#include "memlens/compat.h"
#include "memlens/inject.h"
#include "memlens/uffd.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int wp_check_target(pid_t pid, struct ml_err *err)
{
	char path[64], buf[4096];
	int fd;
	ssize_t n;

	if (pid <= 0)
		return ml_err_set(err, EINVAL, "invalid pid %d", (int)pid);
	if (pid == getpid())
		return ml_err_set(err, EINVAL, "refusing to profile memlens itself (pid %d)",
				  (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
	buf[n] = '\0';
	/* field 9 is flags; PF_KTHREAD = 0x00200000 */
	const char *p = strrchr(buf, ')');
	unsigned long flags = 0;
	char state = '?';

	if (p && sscanf(p + 2, "%c %*d %*d %*d %*d %*d %lu", &state, &flags) == 2) {
		if (flags & 0x00200000)
			return ml_err_set(
				err, EINVAL,
				"pid %d is a kernel thread: it has no user memory to profile",
				(int)pid);
		if (state == 'Z' || state == 'X')
			return ml_err_set(err, ESRCH, "pid %d has exited (zombie)", (int)pid);
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

static int uffd_create_error(long r, struct ml_err *err)
{
	if (r == -ENOSYS)
		return ml_err_set(err, ENOTSUP,
				  "userfaultfd() is not available in the target (kernel built "
				  "without CONFIG_USERFAULTFD, or a seccomp filter blocks it)");
	if (r == -EPERM)
		return ml_err_set(
			err, EPERM,
			"userfaultfd() refused in the target (set vm.unprivileged_userfaultfd=1 or "
			"give the target CAP_SYS_PTRACE)");
	return ml_err_set(err, (int)-r, "userfaultfd() in the target failed: %s",
			  strerror((int)-r));
}

int wp_attach(pid_t pid, bool already_stopped, struct attach_stats *st, struct ml_err *err)
{
	struct injector in;
	sigset_t block, old;
	long tfd = -1, cr;
	int ufd = -1, r;
	struct attach_stats dummy;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (!already_stopped) {
		r = wp_check_target(pid, err);
		if (r)
			return r;
	}
	/* critical window: a Ctrl-C must not leave the target stopped mid-way */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);

	r = already_stopped ? inject_adopt_stopped(&in, pid, err) : inject_attach(&in, pid, err);
	if (r) {
		ml_err_wrap(err, "attaching to pid %d", (int)pid);
		goto out_mask;
	}
	st->user_mode_only = true;
	r = inject_syscall(&in, SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY, 0, 0,
			   0, 0, 0, &tfd, err);
	if (!r && (tfd == -EINVAL || tfd == -EPERM)) {
		/* kernels before 5.11 know no UFFD_USER_MODE_ONLY */
		st->user_mode_only = false;
		r = inject_syscall(&in, SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0, 0,
				   &tfd, err);
	}
	if (r) {
		ml_err_wrap(err, "injecting userfaultfd()");
		goto out_detach;
	}
	if (tfd < 0) {
		r = uffd_create_error(tfd, err);
		goto out_detach;
	}
	ufd = pidfd_getfd_from(pid, (int)tfd, err);
	if (ufd < 0)
		r = ufd;
	/* whatever happened, the target must not keep the uffd */
	{
		struct ml_err e2 = { 0 };
		int r2 = inject_syscall(&in, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &cr, &e2);

		if (!r && (r2 || cr < 0)) {
			r = r2 ? r2 : (int)cr;
			if (r2)
				*err = e2;
			else
				ml_err_set(err, (int)-cr,
					   "close() of the target's uffd copy failed: %s",
					   strerror((int)-cr));
		}
	}
out_detach:
	st->syscalls = in.injected;
	{
		struct ml_err e3 = { 0 };
		int r3 = inject_detach(&in, &e3);

		if (r3 && !r) {
			r = r3;
			*err = e3;
		}
	}
	st->stopped_ns = inject_stopped_ns(&in);
out_mask:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		if (ufd >= 0)
			close(ufd);
		return r;
	}
	r = uffd_api(ufd, &st->features, err);
	if (r) {
		close(ufd);
		return r;
	}
	return ufd;
}
