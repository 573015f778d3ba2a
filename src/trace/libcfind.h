/* SPDX-License-Identifier: MIT */
/* Where a process's C library is: the file its malloc() lives in. */
#ifndef MEMLENS_LIBCFIND_H
#define MEMLENS_LIBCFIND_H

#include <stddef.h>
#include <sys/types.h>

#include "memlens/err.h"

/* The libc mapped by @pid, as a path usable from here (/proc/PID/root/...). */
int libc_find(pid_t pid, char *path, size_t len, struct ml_err *err);

/*
 * For a process we started and hold in a ptrace stop before its first
 * instruction: run it system call by system call until the dynamic loader
 * has mapped its libc, then find it. The process is left in a ptrace stop.
 */
int libc_wait_loaded(pid_t pid, char *path, size_t len, struct ml_err *err);

#endif
