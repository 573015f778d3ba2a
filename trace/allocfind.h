/* SPDX-License-Identifier: MIT */
/*
 * Which file a process's malloc() lives in: the allocator memlens leaks
 * probes. Usually the C library; but the dynamic linker binds malloc to the
 * first object that exports it (the program itself, then LD_PRELOAD'ed and
 * needed libraries), so jemalloc, tcmalloc or mimalloc, linked in or
 * preloaded, replace libc's. Probing libc then would count nothing.
 * jemalloc or tcmalloc built with a prefix (je_malloc, tc_malloc) replace
 * nothing: they are probed beside the allocator of malloc.
 */
#ifndef MEMLENS_ALLOCFIND_H
#define MEMLENS_ALLOCFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "memlens/err.h"

struct alloc_lib {
	char path[4096]; /* usable from here: /proc/PID/root/... */
	bool is_libc; /* false: another allocator replaces libc's malloc */
	bool is_static; /* the executable itself: statically linked */
	/*
	 * An object beside it whose own allocator has prefixed names only
	 * (je_malloc and je_free, or tc_malloc and tc_free: a jemalloc or
	 * tcmalloc built with a prefix, linked into the program or a library
	 * it loads, which its code calls by those names); "" when none.
	 */
	char extra[4096];
};

/* The allocator of running process @pid. */
int mlt_alloc_find(pid_t pid, struct alloc_lib *a, struct ml_err *err);

/*
 * For a process we started and hold in a ptrace stop before its first
 * instruction: run it system call by system call until the dynamic loader
 * has mapped its libc (and so what it loads before it: the program's
 * preloaded and needed allocators), then find the allocator. The process
 * is left in a ptrace stop.
 */
int mlt_alloc_wait_loaded(pid_t pid, struct alloc_lib *a, struct ml_err *err);

#endif
