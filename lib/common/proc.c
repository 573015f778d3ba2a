// SPDX-License-Identifier: MIT
/* /proc/PID/stat, read and parsed in one place (see memlens/proc.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memlens/proc.h"

int ml_proc_stat_parse(const char *line, struct ml_proc_stat *st)
{
	const char *open = strchr(line, '('), *close = strrchr(line, ')');
	unsigned long long minflt, majflt, start;
	unsigned long flags;
	int ppid, pgrp, sid;
	size_t n;
	char state;

	memset(st, 0, sizeof(*st));
	if (!open || !close || close < open)
		return -EINVAL;
	if (sscanf(close + 1,
		   " %c %d %d %d %*d %*d %lu %llu %*u %llu %*u %*u %*u %*d %*d %*d %*d %*d %*d "
		   "%llu",
		   &state, &ppid, &pgrp, &sid, &flags, &minflt, &majflt, &start) != 8)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(st->comm))
		n = sizeof(st->comm) - 1;
	memcpy(st->comm, open + 1, n);
	st->comm[n] = '\0';
	st->state = state;
	st->ppid = ppid;
	st->pgrp = pgrp;
	st->session = sid;
	st->flags = flags;
	st->minflt = minflt;
	st->majflt = majflt;
	st->starttime = start;
	return 0;
}

int ml_proc_stat_read(pid_t pid, pid_t tid, struct ml_proc_stat *st)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	if (n == 0)
		return -ESRCH; /* reaped while being read */
	buf[n] = '\0';
	return ml_proc_stat_parse(buf, st);
}

int ml_proc_exited(pid_t pid, pid_t tid)
{
	struct ml_proc_stat st;

	if (ml_proc_stat_read(pid, tid, &st))
		return 1;
	return st.state == 'Z' || st.state == 'X';
}

size_t ml_proc_tree(pid_t pid, pid_t *out, size_t max)
{
	size_t n = 0;

	if (!max)
		return 0;
	out[n++] = pid;
	for (size_t i = 0; i < n; i++) {
		char path[64];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)out[i]);
		d = opendir(path);
		while (d && (de = readdir(d))) {
			char cp[600];
			FILE *f;
			int c;

			if (de->d_name[0] == '.')
				continue;
			snprintf(cp, sizeof(cp), "%s/%s/children", path, de->d_name);
			f = fopen(cp, "re");
			while (f && n < max && fscanf(f, "%d", &c) == 1)
				out[n++] = c;
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
	}
	return n;
}

int ml_proc_threads(pid_t pid)
{
	char path[64], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}
