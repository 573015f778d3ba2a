// SPDX-License-Identifier: MIT
/*
 * Target discovery: in a pod with shareProcessNamespace the
 * agent sees the application's processes; the target is the oldest one
 * that is not the agent's own family, a kernel thread or the pod's
 * infrastructure process (kubelet's "pause", podman's "catatonit").
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "memlens/proc.h"

#define PF_KTHREAD 0x00200000

struct proc_info {
	pid_t pid, ppid;
	char state;
	unsigned long flags;
	unsigned long long start; /* clock ticks after boot */
	char comm[64];
};

int agent_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

static int proc_read(pid_t pid, struct proc_info *pi)
{
	struct ml_proc_stat st;
	char path[64];
	int r = ml_proc_stat_read(pid, 0, &st);

	if (r)
		return r == -EINVAL ? -EINVAL : -ESRCH;
	memset(pi, 0, sizeof(*pi));
	pi->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!agent_read_small(path, pi->comm, sizeof(pi->comm)))
		pi->comm[strcspn(pi->comm, "\n")] = '\0';
	pi->state = st.state;
	pi->ppid = st.ppid;
	pi->flags = st.flags;
	pi->start = st.starttime;
	return 0;
}

struct proc_list {
	struct proc_info *v;
	size_t n, cap;
};

static int proc_list_read(struct proc_list *l)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 256;
			struct proc_info *nv = realloc(l->v, cap * sizeof(*nv));

			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			l->v = nv;
			l->cap = cap;
		}
		if (!proc_read((pid_t)atoi(de->d_name), &l->v[l->n]))
			l->n++;
	}
	closedir(d);
	return 0;
}

static const struct proc_info *proc_find(const struct proc_list *l, pid_t pid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid)
			return &l->v[i];
	return NULL;
}

/* True when @a is @b or one of @b's ancestors. */
static bool is_ancestor(const struct proc_list *l, pid_t a, pid_t b)
{
	for (int depth = 0; b > 0 && depth < 4096; depth++) {
		const struct proc_info *pi;

		if (b == a)
			return true;
		pi = proc_find(l, b);
		if (!pi)
			return false;
		b = pi->ppid;
	}
	return false;
}

static bool unusable(const struct proc_info *pi)
{
	return (pi->flags & PF_KTHREAD) || pi->state == 'Z' || pi->state == 'X';
}

static bool candidate(const struct proc_list *l, const struct proc_info *pi, pid_t self)
{
	if (unusable(pi))
		return false;
	if (is_ancestor(l, pi->pid, self) || is_ancestor(l, self, pi->pid))
		return false;
	/* the pod's infrastructure container (shareProcessNamespace: it is PID 1):
	 * kubelet's pause, podman kube play's catatonit */
	return strcmp(pi->comm, "pause") != 0 && strcmp(pi->comm, "catatonit") != 0;
}

static int find_oldest(const struct target_spec *spec, pid_t *out, struct ml_err *err)
{
	struct proc_list l = { 0 };
	const struct proc_info *best = NULL;
	pid_t self = getpid();
	int r = proc_list_read(&l);

	if (r) {
		free(l.v);
		return ml_err_set(err, -r, "cannot list /proc: %s", strerror(-r));
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct proc_info *pi = &l.v[i];

		if (spec->comm ? (strcmp(pi->comm, spec->comm) || pi->pid == self || unusable(pi))
			       : !candidate(&l, pi, self))
			continue;
		if (!best || pi->start < best->start ||
		    (pi->start == best->start && pi->pid < best->pid))
			best = pi;
	}
	if (best)
		*out = best->pid;
	free(l.v);
	if (best)
		return 0;
	if (spec->comm)
		return ml_err_set(err, ESRCH,
				  "no process named '%s' (as in /proc/PID/comm, at most 15 "
				  "characters) is running",
				  spec->comm);
	return ml_err_set(
		err, ESRCH,
		"no target found: no process outside the agent's own family is visible (share the "
		"PID namespace with the application, or give -p/--pid or --comm)");
}

int target_find(const struct target_spec *spec, pid_t *out, struct ml_err *err)
{
	struct proc_info pi;

	if (spec->pid) {
		if (proc_read(spec->pid, &pi))
			return ml_err_set(err, ESRCH, "the target process %d does not exist",
					  (int)spec->pid);
		if (pi.state == 'Z')
			return ml_err_set(err, ESRCH, "the target process %d has exited (zombie)",
					  (int)spec->pid);
		*out = spec->pid;
		return 0;
	}
	return find_oldest(spec, out, err);
}
