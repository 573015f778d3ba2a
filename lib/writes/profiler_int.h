/* SPDX-License-Identifier: MIT */
/*
 * Internal to libmemlens: what the tree profiler (tree.c) uses of the
 * per-process profiler (profiler.c), and what profiler.c calls of it.
 */
#ifndef MEMLENS_PROFILER_INT_H
#define MEMLENS_PROFILER_INT_H

#include "memlens/profiler.h"

struct ptree;

/* One interval of this process alone (ml_profiler_tick() without the tree). */
int mli_profiler_tick_one(struct ml_profiler *p, struct ml_profiler_sample *out,
			  struct ml_err *err);
/* The page ranges the last mli_profiler_tick_one() found written, by address. */
const struct ml_range *mli_profiler_written(const struct ml_profiler *p, size_t *n);
/* Give @s its own copy of its regions' paths. */
int mli_profiler_sample_own_paths(struct ml_profiler_sample *s);

/* The other processes of @root's tree, found and opened now. */
int mli_ptree_open(struct ptree **out, struct ml_profiler *root, struct ml_err *err);
/* One interval of the tree: @root's and every other process's, merged into @out. */
int mli_ptree_tick(struct ptree *t, struct ml_profiler *root, struct ml_profiler_sample *out,
		   struct ml_err *err);
void mli_ptree_release(struct ptree *t);
void mli_ptree_reinit(struct ptree *t);
void mli_ptree_close(struct ptree *t);

#endif
