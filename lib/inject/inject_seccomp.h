/* SPDX-License-Identifier: MIT */
/* The target's seccomp filters run on the calls memlens would inject. Private. */
#ifndef MEMLENS_INJECT_SECCOMP_H
#define MEMLENS_INJECT_SECCOMP_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"

/* 0 none, 1 strict, 2 filter; -1 unknown */
int mli_seccomp_mode(pid_t tid);

uint32_t mli_seccomp_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d);

/*
 * @tid must be ptrace-stopped. 0 when every call would run (or fail with
 * an error), -EPERM with the reason when a filter would kill, trap or
 * suspend the target on one of them.
 */
int mli_seccomp_check_calls(pid_t tid, const struct seccomp_data *calls, size_t n,
			    const char **names, struct ml_err *err);

#endif
