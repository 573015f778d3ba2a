// SPDX-License-Identifier: MIT
/* Per-thread fault counters from /proc/PID/task/TID/stat (see taskflt.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memlens/proc.h"
#include "taskflt.h"

static int read_one(pid_t pid, pid_t tid, struct taskflt *t)
{
	struct ml_proc_stat st;
	int r = ml_proc_stat_read(pid, tid, &st);

	if (r)
		return r;
	t->tid = tid;
	t->minflt = st.minflt;
	t->majflt = st.majflt;
	t->dead = st.state == 'Z' || st.state == 'X';
	return 0;
}

int mlt_taskflt_read(pid_t pid, struct taskflt_set *s)
{
	char path[64];
	struct dirent *d;
	size_t cap = 0;
	DIR *dir;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0)
			continue;
		if (s->n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct taskflt *v = realloc(s->v, nc * sizeof(*v));

			if (!v) {
				closedir(dir);
				mlt_taskflt_free(s);
				return -ENOMEM;
			}
			s->v = v;
			cap = nc;
		}
		if (!read_one(pid, tid, &s->v[s->n]))
			s->n++; /* a thread gone meanwhile is simply not there */
	}
	closedir(dir);
	return s->n ? 0 : -ESRCH;
}

void mlt_taskflt_free(struct taskflt_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

const struct taskflt *mlt_taskflt_find(const struct taskflt_set *s, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].tid == tid)
			return &s->v[i];
	return NULL;
}
