// SPDX-License-Identifier: MIT
/* The process a tracer looks at: memlens/trace_target.h. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memlens/spawn.h"
#include "memlens/trace_target.h"

struct ml_trace_target {
	pid_t pid;
	int pidfd; /* readable once the target has exited */
	bool spawned; /* started by us, in its exec stop until released */
	bool exited;
	int status; /* wait status when spawned and reaped */
};

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static struct ml_trace_target *target_new(struct ml_err *err)
{
	struct ml_trace_target *t = calloc(1, sizeof(*t));

	if (!t)
		ml_err_set(err, ENOMEM, "out of memory for the tracer's target");
	else
		t->pidfd = -1;
	return t;
}

int ml_trace_target_attach(struct ml_trace_target **out, pid_t pid, struct ml_err *err)
{
	struct ml_trace_target *t;
	char path[64];
	int e;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (pid <= 0 || access(path, F_OK))
		return ml_err_set(err, ESRCH, "no process %d (check the pid with ps)", (int)pid);
	t = target_new(err);
	if (!t)
		return -ENOMEM;
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0) {
		e = errno;
		free(t);
		return ml_err_set(err, e == EINVAL ? ESRCH : e, "pidfd_open(%d): %s", (int)pid,
				  strerror(e));
	}
	t->pid = pid;
	*out = t;
	return 0;
}

int ml_trace_target_spawn(struct ml_trace_target **out, char *const argv[], bool *not_started,
			  struct ml_err *err)
{
	struct ml_trace_target *t;
	pid_t pid;
	int e;

	*out = NULL;
	if (not_started)
		*not_started = false;
	t = target_new(err);
	if (!t)
		return -ENOMEM;
	pid = ml_spawn_stopped(argv, err);
	if (pid < 0) {
		if (not_started)
			*not_started = true;
		free(t);
		return pid;
	}
	t->pid = pid;
	t->spawned = true;
	t->pidfd = pidfd_open_(pid);
	if (t->pidfd < 0) {
		e = errno;
		ml_trace_target_close(t, true);
		return ml_err_set(err, e, "pidfd_open(%d): %s", (int)pid, strerror(e));
	}
	*out = t;
	return 0;
}

pid_t ml_trace_target_pid(const struct ml_trace_target *t)
{
	return t->pid;
}

bool ml_trace_target_spawned(const struct ml_trace_target *t)
{
	return t->spawned;
}

int ml_trace_target_pidfd(const struct ml_trace_target *t)
{
	return t->pidfd;
}

int ml_trace_target_release(struct ml_trace_target *t, struct ml_err *err)
{
	if (!t->spawned)
		return 0;
	return ml_spawn_release(t->pid, err);
}

bool ml_trace_target_gone(struct ml_trace_target *t)
{
	struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

	if (t->exited)
		return true;
	if (t->pidfd < 0)
		return false;
	if (poll(&p, 1, 0) == 1) {
		t->exited = true;
		if (t->spawned && waitpid(t->pid, &t->status, __WALL) != t->pid)
			t->status = 0;
	}
	return t->exited;
}

bool ml_trace_target_exited(const struct ml_trace_target *t)
{
	return t->exited;
}

void ml_trace_target_close(struct ml_trace_target *t, bool kill_it)
{
	if (!t)
		return;
	if (t->spawned && !t->exited && t->pid > 0) {
		if (kill_it)
			kill(t->pid, SIGKILL);
		if (waitpid(t->pid, &t->status, __WALL) == t->pid)
			t->exited = true;
	}
	if (t->pidfd >= 0)
		close(t->pidfd);
	free(t);
}
