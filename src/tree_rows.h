/* SPDX-License-Identifier: MIT */
/*
 * The rows of a profiled process tree in checkpoint's and migrate's text
 * output: one per process (pid, name, hot memory and bytes written while
 * profiled, or why it was not), then the tree's total, in which a shared
 * memory page hot or written in several processes counts once.
 */
#ifndef MEMLENS_TREE_ROWS_H
#define MEMLENS_TREE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memlens/profiler.h"

struct tree_rows {
	const char *label; /* "  processes: " and the like, up to the rows */
	const struct ml_profiler_proc *procs;
	size_t n; /* rows kept */
	size_t total; /* processes in the tree (more than n: "and N more") */
	bool profiled; /* false: listed from /proc, pid and name only */
	uint64_t hot_bytes; /* the tree's totals (profiled only) */
	int64_t dirty_bytes;
};

void tree_rows_print(FILE *f, const struct tree_rows *t);

#endif
