/* SPDX-License-Identifier: MIT */
/* `--container NAME|ID|CGROUP`: a container's init process and root filesystem. */
#ifndef MEMLENS_CONTAINER_FIND_H
#define MEMLENS_CONTAINER_FIND_H

#include "memlens/container.h"

/*
 * @arg: a podman container (name or ID; `podman container inspect`), a
 * runc or crun container (`runc --root /run/runc state`, `crun --root
 * /run/crun state`), or a cgroup directory (absolute, or under
 * /sys/fs/cgroup; its init is its one process whose parent is outside it,
 * its root filesystem from `runc list`/`crun list`). 0, or a negative
 * errno with the reason: -ESRCH not running, -ENOENT unknown or no root
 * filesystem, -EINVAL a cgroup of several trees.
 */
int container_find(const char *arg, struct ml_container *c, struct ml_err *err);

#define CONTAINER_CGROUPS_MAX 16

/*
 * The cgroup directories of @pid whose path names @id (a container's own,
 * not a parent's nor the root): its cgroup v2 directory (under
 * /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host) and those
 * of the v1 hierarchies (/sys/fs/cgroup/CONTROLLERS), as many as exist,
 * at most @max. Returns how many.
 */
size_t container_cgroup_dirs(pid_t pid, const char *id, char (*dirs)[PATH_MAX], size_t max);

/* What CRIU's dump of a container takes on top of the caller's options. */
#define CONTAINER_DUMP_OPT "--external=mnt[]"

/*
 * A container to migrate (`memlens migrate --container`, the agent's
 * Migrate with a container): its init is the tree's root; every dump takes
 * CONTAINER_DUMP_OPT (the mounts bound from outside, as external), the
 * restore @restore (its root filesystem, the same mounts). Its cgroups go
 * as CRIU's default has them (soft): recreated at the restore, before the
 * cgroup mounts that name them (the runtime removes them meanwhile).
 */
struct container_migrate {
	struct ml_container ctr;
	char root_arg[PATH_MAX + 16]; /* --root=ROOTFS */
	const char *restore[3]; /* NULL-terminated: ml_migrate_opts.restore_args */
	/* podman's container: its cgroups, which podman's clean-up removes
	 * while the restore recreates them (ml_migrate_opts.settle_dirs) */
	char settle[CONTAINER_CGROUPS_MAX][PATH_MAX];
	const char *settle_v[CONTAINER_CGROUPS_MAX + 1]; /* NULL-terminated */
};

/*
 * container_find(@arg), then the rest of @m; 0 or container_find()'s
 * error, or -ENOTSUP when the container's init is not the first process
 * of its PID namespace (CRIU cannot dump it without the rest).
 */
int container_migrate_find(const char *arg, struct container_migrate *m, struct ml_err *err);

#endif
