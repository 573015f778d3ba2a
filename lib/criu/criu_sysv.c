// SPDX-License-Identifier: MIT
/*
 * SysV shared memory of the host's IPC namespace: CRIU dumps SysV IPC
 * only with an IPC namespace of the tree's own, and refuses a tree that
 * maps a segment of CRIU's own namespace ("doesn't live in IPC ns"), once
 * the tree is frozen. memlens says so first, from /proc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memlens/criu.h"
#include "memlens/proc.h"

/* The first SysV segment @pid maps: its address and key; false when none. */
static bool sysv_map(pid_t pid, unsigned long *addr, unsigned int *key)
{
	char path[64], line[512];
	bool found = false;
	const char *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		/* "START-END rw-s 00000000 00:01 32768   /SYSV0000002a (deleted)" */
		p = strstr(line, " /SYSV");
		if (p && sscanf(line, "%lx-", addr) == 1 && sscanf(p, " /SYSV%x", key) == 1)
			found = true;
	}
	if (f)
		fclose(f);
	return found;
}

static bool same_ipc_ns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/ns/ipc", &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

int ml_criu_sysv_check(pid_t pid, struct ml_err *err)
{
	unsigned long addr = 0;
	unsigned int key = 0;
	pid_t *procs;
	size_t n;
	int ret = 0;

	/* a tree in an IPC namespace of its own: CRIU dumps the namespace */
	if (!same_ipc_ns(pid))
		return 0;
	procs = malloc(ML_PROC_TREE_MAX * sizeof(*procs));
	n = procs ? ml_proc_tree(pid, procs, ML_PROC_TREE_MAX) : 0;
	for (size_t i = 0; i < n && !ret; i++)
		if (sysv_map(procs[i], &addr, &key))
			ret = ml_err_set(err, EINVAL,
					 "pid %d maps SysV shared memory (key 0x%x, at 0x%lx) of "
					 "the host's IPC "
					 "namespace, which it shares with every process outside "
					 "the tree, so "
					 "CRIU cannot dump it; CRIU was not run and nothing was "
					 "frozen. Start "
					 "the target in an IPC namespace of its own (`unshare "
					 "--ipc CMD`, as a "
					 "container does) and checkpoint it there",
					 (int)procs[i], key, addr);
	free(procs);
	return ret;
}
