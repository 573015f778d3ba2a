// SPDX-License-Identifier: MIT
/* Can a process be looked at, and why not (see memlens/proc.h)? */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memlens/err.h"
#include "memlens/proc.h"

const char *ml_proc_access_hint(void)
{
	if (geteuid() != 0)
		return " (run as root or with CAP_SYS_PTRACE)";
	return " (memlens runs as root already: something else refuses, a security "
	       "module (SELinux, AppArmor, Yama) or the process holding capabilities "
	       "memlens lacks; look at another process)";
}

int ml_proc_check_target(pid_t pid, struct ml_err *err)
{
	struct ml_proc_stat st;
	char path[64];
	int r, fd;

	if (pid <= 0)
		return ml_err_set(err, EINVAL, "invalid pid %d: give a process id from ps",
				  (int)pid);
	r = ml_proc_stat_read(pid, 0, &st);
	if (r == -ESRCH)
		return ml_err_set(err, ESRCH,
				  "no process with pid %d: check the pid with ps (or pgrep NAME)",
				  (int)pid);
	if (!r && (st.flags & ML_PF_KTHREAD))
		return ml_err_set(err, EINVAL,
				  "pid %d (%s) is a kernel thread: it has no user memory to look "
				  "at; give the pid of a user process",
				  (int)pid, st.comm);
	/* a main thread that called pthread_exit() is a zombie while the
	 * other threads run on: the command says what it can do then */
	if (!r && (st.state == 'Z' || st.state == 'X') && ml_proc_threads(pid) <= 1)
		return ml_err_set(err, ESRCH,
				  "pid %d (%s) has exited: it is a zombie, waiting for its parent "
				  "(pid %d) to collect it, and has no memory left to look at",
				  (int)pid, st.comm, (int)st.ppid);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT || e == ESRCH)
			return ml_err_set(err, ESRCH, "pid %d exited while being looked at",
					  (int)pid);
		return ml_err_set(err, e, "cannot read %s: %s%s", path, strerror(e),
				  e == EACCES || e == EPERM ? ml_proc_access_hint() : "");
	}
	close(fd);
	return 0;
}
