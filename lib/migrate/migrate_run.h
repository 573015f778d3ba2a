/* SPDX-License-Identifier: MIT */
/*
 * The source side of a live migration (memlens/migrate.h), shared by
 * `memlens migrate` and the agent's Migrate RPC through that API: the
 * handle a caller holds, and the steps of a run.
 */
#ifndef MEMLENS_MIGRATE_RUN_H
#define MEMLENS_MIGRATE_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "memlens/migrate.h"
#include "migrate_event.h"

/* The handle: the caller's options (copied), the result, its rounds and processes. */
struct ml_migration {
	struct ml_migrate_opts o;
	struct ml_migrate_result res;
	struct ml_migrate_round r[ML_MIGRATE_MAX_ROUNDS + 1];
	struct ml_profiler_proc procs[ML_MIGRATE_MAX_PROCS];
};

/* The post-copy check of @o: 0, or a negative errno with the reason in @why. */
int mli_migrate_postcopy_precheck(const struct ml_migrate_opts *o, char *why, size_t len);

/* What mli_migrate_run() will do: precopy, exclude and why. */
void mli_migrate_plan(const struct ml_migrate_opts *o, struct ml_migrate_result *res);

/* The run of ml_migration_run(): its result reset, then filled. */
int mli_migrate_run(struct ml_migration *h);

#endif
