/* SPDX-License-Identifier: MIT */
/* Internal to libmemlens: the processes of a tree, as CRIU's --tree takes them. */
#ifndef MEMLENS_CRIU_TREE_H
#define MEMLENS_CRIU_TREE_H

#include <stddef.h>
#include <sys/types.h>

/* At most this many processes are looked at. */
#define CRIU_TREE_MAX 4096

/*
 * @root and every descendant (by /proc/PID/stat's ppid), breadth first,
 * into *@out (malloc'ed; free() it). Returns how many; 0 when out of
 * memory.
 */
size_t ml_criu_tree(pid_t root, pid_t **out);

#endif
