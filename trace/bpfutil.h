/* SPDX-License-Identifier: MIT */
/*
 * What the tracers' user sides share below the command line: libbpf's log
 * (the verifier's last word kept), the checks before loading, errors said
 * as what to do, the PID namespace, BPF map dumps, the programs' missed
 * events. Private to the tracer library (trace/).
 */
#ifndef MEMLENS_TRACE_BPFUTIL_H
#define MEMLENS_TRACE_BPFUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "memlens/err.h"

struct ml_feature_list;
/* `memlens check`: what the tracers can use here (memlens/features.h). */
void mlt_trace_probe_features(struct ml_feature_list *l);
/* `memlens --version`: libbpf_major_version(), libbpf_minor_version() */
void mlt_trace_libbpf_version(unsigned int *major, unsigned int *minor);

/*
 * Take libbpf's messages: the verifier's last line is kept (see
 * mlt_trace_verifier_said()), then each message goes to @fn (its level is
 * libbpf's enum libbpf_print_level), or nowhere when @fn is NULL.
 */
typedef int (*trace_log_fn)(int level, const char *fmt, va_list ap);
void mlt_trace_libbpf_log(trace_log_fn fn);

/* Kernel BTF present and we may load BPF: 0, or -errno with the reason in @err. */
int mlt_trace_preflight(struct ml_err *err);

/*
 * Turn a failed libbpf step (@e a negative errno) into a sentence that says
 * what to do. @what names the step ("loading the fault tracer").
 */
int mlt_trace_bpf_error(struct ml_err *err, int e, const char *what);
/*
 * The last line of the verifier's log of the last program that failed to
 * load ("" when none): why it was refused. mlt_trace_bpf_error() uses it (a
 * refusal by the verifier as root is ENOTSUP, not a permission error).
 */
const char *mlt_trace_verifier_said(void);

/*
 * memlens's own PID namespace, for the BPF side's pidns_dev/pidns_ino:
 * both 0 in the initial namespace (the kernel's pids are ours), else the
 * device and inode of /proc/self/ns/pid, so pids are matched and reported
 * as they are seen here (in a container or a pod). Returns true when not
 * in the initial namespace.
 */
bool mlt_trace_pidns(__u64 *dev, __u64 *ino);

#define TRACE_NO_KEY ((size_t)-1)

/*
 * Every entry of the BPF map @fd (keys of @key_size bytes, at most 256),
 * copied into a new array of @row_size-byte rows: the value at @val_off,
 * the key at @key_off (TRACE_NO_KEY: not kept). Stops early, keeping what
 * it has, when memory runs out. Returns the array (free it) and *@n.
 */
void *mlt_trace_map_dump(int fd, size_t key_size, size_t row_size, size_t key_off, size_t val_off,
			 size_t *n);

/*
 * Events the kernel did not hand to the programs of @obj because another
 * BPF program was running on that CPU (bpf_prog_info.recursion_misses),
 * summed over its loaded programs.
 */
struct bpf_object;
uint64_t mlt_trace_recursion_misses(const struct bpf_object *obj);

#endif
