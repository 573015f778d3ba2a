// SPDX-License-Identifier: MIT
/* The process tree CRIU dumps for --tree PID, read from /proc. */
#include <dirent.h>
#include <stdlib.h>

#include "criu_tree.h"
#include "memlens/proc.h"

size_t ml_criu_tree(pid_t root, pid_t **out)
{
	pid_t *all = malloc(3 * CRIU_TREE_MAX * sizeof(*all)), *parent, *t;
	struct ml_proc_stat st;
	struct dirent *de;
	size_t n = 0, nout = 1;
	DIR *d;

	*out = NULL;
	if (!all)
		return 0;
	parent = all + CRIU_TREE_MAX;
	t = all + 2 * CRIU_TREE_MAX;
	t[0] = root;
	d = opendir("/proc");
	while (d && (de = readdir(d)) && n < CRIU_TREE_MAX) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || ml_proc_stat_read((pid_t)pid, 0, &st))
			continue;
		all[n] = (pid_t)pid;
		parent[n++] = st.ppid;
	}
	if (d)
		closedir(d);
	/* breadth first: each process found adds its children */
	for (size_t k = 0; k < nout; k++)
		for (size_t i = 0; i < n && nout < CRIU_TREE_MAX; i++)
			if (parent[i] == t[k] && all[i] != root)
				t[nout++] = all[i];
	/* the tree moves to the front of the one allocation */
	for (size_t i = 0; i < nout; i++)
		all[i] = t[i];
	*out = all;
	return nout;
}
