// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memlens/spawn.h"

pid_t ml_spawn_stopped(char *const argv[], struct ml_err *err)
{
	int go[2], fail[2], status, child_errno = 0;
	pid_t pid;
	ssize_t n;

	if (!argv || !argv[0])
		return ml_err_set(err, EINVAL, "no command given");
	if (pipe2(go, O_CLOEXEC) || pipe2(fail, O_CLOEXEC))
		return ml_err_set(err, errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		close(fail[0]);
		close(fail[1]);
		return ml_err_set(err, e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		char c;

		close(go[1]);
		close(fail[0]);
		/* wait until the parent has seized us */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		/* the command starts with default signal handling, whatever the caller blocked */
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(argv[0], argv);
		child_errno = errno;
		if (write(fail[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(fail[1]);
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_TRACEEXEC) < 0) {
		int e = errno;

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		close(fail[0]);
		return ml_err_set(err, e, "ptrace(PTRACE_SEIZE) of the new process: %s",
				  strerror(e));
	}
	if (write(go[1], "g", 1) != 1) {
		int e = errno;

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		close(fail[0]);
		return ml_err_set(err, e, "starting the command: %s", strerror(e));
	}
	close(go[1]);
	for (;;) {
		if (waitpid(pid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			close(fail[0]);
			return ml_err_set(err, errno, "waitpid: %s", strerror(errno));
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			n = read(fail[0], &child_errno, sizeof(child_errno));
			close(fail[0]);
			if (n == sizeof(child_errno))
				return ml_err_set(err, child_errno == ENOENT ? ENOENT : child_errno,
						  "cannot run '%s': %s", argv[0],
						  strerror(child_errno));
			return ml_err_set(err, ECHILD, "'%s' exited before it started", argv[0]);
		}
		if (WIFSTOPPED(status) && status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			/*
			 * At the exec event execve() has not stored its return
			 * value yet: registers changed now would be overwritten.
			 * Run on to its syscall-exit stop; the new program has
			 * still executed nothing.
			 */
			if (ptrace(PTRACE_SYSCALL, pid, NULL, NULL) < 0)
				break;
			while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
				;
			break;
		}
		/* pass any other signal on */
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)(status >> 16 ? 0 : WSTOPSIG(status)));
	}
	close(fail[0]);
	return pid;
}

int ml_spawn_release(pid_t pid, struct ml_err *err)
{
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL) < 0 && errno != ESRCH)
		return ml_err_set(err, errno, "PTRACE_DETACH: %s", strerror(errno));
	return 0;
}
