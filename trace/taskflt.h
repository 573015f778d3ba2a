/* SPDX-License-Identifier: MIT */
/*
 * The kernel's own fault counters of each thread of a process
 * (task_struct min_flt/maj_flt, what getrusage() adds up), read from
 * /proc/PID/task/TID/stat: what `memlens faults` checks its counts against.
 */
#ifndef MEMLENS_TRACE_TASKFLT_H
#define MEMLENS_TRACE_TASKFLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct taskflt {
	pid_t tid;
	uint64_t minflt, majflt;
	bool dead; /* a zombie thread (state Z or X): its exit has been seen */
};

struct taskflt_set {
	struct taskflt *v;
	size_t n;
};

/* Every thread of @pid now; -errno (-ESRCH: no such process). */
int mlt_taskflt_read(pid_t pid, struct taskflt_set *s);
void mlt_taskflt_free(struct taskflt_set *s);
const struct taskflt *mlt_taskflt_find(const struct taskflt_set *s, pid_t tid);

#endif
