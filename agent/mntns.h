/* SPDX-License-Identifier: MIT */
/*
 * The application's mount namespace, when it is not the agent's (a sidecar
 * in a Pod): CRIU's restore rebuilds it from a root filesystem (--root) and
 * one path for each mount the dump named external (--external
 * mnt[MOUNTPOINT]:KEY), paths that exist only in that namespace. A process
 * of the application's container that outlives the dump (its main process,
 * the "keeper") holds the namespace; the restore clones its root and those
 * mounts into the agent's namespace, beside the images, for CRIU.
 */
#ifndef MEMLENS_AGENT_MNTNS_H
#define MEMLENS_AGENT_MNTNS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "memlens/err.h"

#define MNTNS_FILE "memlens-mntns" /* in the images directory */
#define MNTNS_STAGE "memlens-mntns.d" /* where the restore stages the mounts */
#define MNTNS_EXT_MAX 16

struct mntns_keep {
	pid_t keeper; /* 0: the target shares the agent's mount namespace */
	unsigned long long ino; /* the namespace's inode */
	size_t n;
	char mp[MNTNS_EXT_MAX][512]; /* the external mounts' mount points */
	char key[MNTNS_EXT_MAX][128]; /* ... and the keys the dump gave them */
	/* what the dump records for its restore (ml_criu_dump_req.restore_args) */
	char root_arg[PATH_MAX + 16];
	char ext_arg[MNTNS_EXT_MAX][PATH_MAX + 160];
	const char *restore[MNTNS_EXT_MAX + 2];
};

/*
 * Before a dump of @target into @dir: when @target's mount namespace is
 * not the agent's, its keeper (the oldest process in that namespace
 * outside @target's tree) and the external mounts @criu_opts name
 * (--external=mnt[MOUNTPOINT]:KEY); k->keeper 0 when the namespace is the
 * agent's. 0, or a negative errno (-ESRCH: no keeper, -E2BIG).
 */
int mntns_prepare(pid_t target, const char *const *criu_opts, const char *dir, struct mntns_keep *k,
		  struct ml_err *err);

/* After the dump: @k into @dir (nothing when k->keeper is 0). */
int mntns_write(const struct mntns_keep *k, const char *dir, struct ml_err *err);

/*
 * Before a restore from @dir: when the dump recorded a keeper, its root
 * and external mounts cloned under @dir/MNTNS_STAGE (*staged true). 0, or
 * a negative errno with the reason (-ESRCH: the keeper is gone).
 */
int mntns_stage(const char *dir, bool *staged, struct ml_err *err);

/* After the restore: the staged mounts detached. */
void mntns_unstage(const char *dir);

/* Parse the file mntns_write() wrote (@text, NUL-terminated) into @k. */
int mntns_parse(const char *text, struct mntns_keep *k, struct ml_err *err);

#endif
