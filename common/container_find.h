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

/*
 * The cgroup v2 directory of @pid (/sys/fs/cgroup + its "0::" line) into
 * @dir; "" when it has none (cgroup v1 only) or cannot be read.
 */
void container_cgroup_dir(pid_t pid, char *dir, size_t len);

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
	const char *restore[3]; /* NULL-terminated: migrate_opts.restore_args */
	/* podman's container: its cgroup, which podman's clean-up removes
	 * while the restore recreates it (migrate_opts.settle_dir), or "" */
	char settle[PATH_MAX];
};

/* container_find(@arg), then the rest of @m; 0 or container_find()'s error. */
int container_migrate_find(const char *arg, struct container_migrate *m, struct ml_err *err);

#endif
