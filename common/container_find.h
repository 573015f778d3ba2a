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

#endif
