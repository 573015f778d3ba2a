/* SPDX-License-Identifier: MIT */
/*
 * A container as CRIU must see it to dump its processes directly: the
 * container's init process, its root filesystem and the bind mounts whose
 * sources are outside it. Read from what the runtime itself says (podman
 * inspect, `runc state`/`crun state` and the bundle's OCI config.json) or
 * from a cgroup's member list; nothing here runs a command or prints.
 */
#ifndef MEMLENS_CONTAINER_H
#define MEMLENS_CONTAINER_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "memlens/err.h"

#define ML_CONTAINER_MOUNTS_MAX 64

struct ml_container_mount {
	char dest[PATH_MAX]; /* where the container sees it */
	char src[PATH_MAX]; /* the host path bound there */
};

struct ml_container {
	char id[128];
	char name[128]; /* podman's name, or "" */
	char runtime[32]; /* "runc", "crun", "podman/runc", "cgroup" ... */
	char status[32]; /* "running", "paused", ... as the runtime said */
	pid_t pid; /* the container's init process */
	char bundle[PATH_MAX]; /* the OCI bundle (config.json's directory), or "" */
	char config[PATH_MAX]; /* the OCI config.json, or "" */
	char rootfs[PATH_MAX]; /* the root filesystem on the host, or "" */
	size_t nmounts;
	struct ml_container_mount mounts[ML_CONTAINER_MOUNTS_MAX];
};

/*
 * `runc state ID` / `crun state ID` output ({"id", "pid", "status",
 * "bundle", "rootfs", ...}): fills id, pid, status, bundle, rootfs and
 * config (BUNDLE/config.json). -EINVAL with the reason when it is not such
 * an object, -ESRCH when the container is not running (no pid).
 */
int ml_container_parse_state(const char *json, size_t len, struct ml_container *c,
			     struct ml_err *err);

/*
 * `podman inspect --type container NAME` output (an array of one object:
 * Id, Name, State.Pid, State.Status, OCIRuntime, OCIConfigPath, Rootfs):
 * the same fields; runtime is "podman/RUNTIME".
 */
int ml_container_parse_podman(const char *json, size_t len, struct ml_container *c,
			      struct ml_err *err);

/*
 * `runc list -f json` / `crun list -f json` output (an array of state
 * objects, or null): the one whose pid is @pid. -ESRCH when none is.
 */
int ml_container_parse_list(const char *json, size_t len, pid_t pid, struct ml_container *c,
			    struct ml_err *err);

/*
 * The bundle's OCI config.json: root.path (relative to the bundle when not
 * absolute) unless rootfs is already known, and every bind mount
 * (type "bind" or an option "bind"/"rbind") as dest <- src.
 */
int ml_container_parse_config(const char *json, size_t len, struct ml_container *c,
			      struct ml_err *err);

/*
 * The init process among the pids of a cgroup (cgroup.procs, one a line)
 * given their parents (@ppid_of returns a pid's parent, or -1): the one
 * whose parent is not in the cgroup, when there is exactly one.
 * -ESRCH when the cgroup is empty, -EINVAL when it has several roots.
 */
int ml_container_cgroup_init(const char *procs, pid_t (*ppid_of)(pid_t, void *), void *arg,
			     pid_t *init, struct ml_err *err);

#pragma GCC visibility pop

#endif
