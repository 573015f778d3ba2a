/* SPDX-License-Identifier: MIT */
/*
 * Start a command so that it can be observed from its first instruction:
 * the child is seized with ptrace before execve and left in its
 * PTRACE_EVENT_EXEC stop, where the new program has not run yet.
 */
#ifndef MEMLENS_SPAWN_H
#define MEMLENS_SPAWN_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <sys/types.h>

#include "memlens/err.h"

/* Returns the child's pid (in its exec stop) or a negative errno. */
pid_t ml_spawn_stopped(char *const argv[], struct ml_err *err);
/* Let the child run (detach ptrace). */
int ml_spawn_release(pid_t pid, struct ml_err *err);

#pragma GCC visibility pop

#endif
