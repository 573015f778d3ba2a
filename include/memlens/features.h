/* SPDX-License-Identifier: MIT */
/*
 * What this machine offers memlens: each kernel interface probed by using
 * it once, on memlens's own memory (nothing else is touched). Callers
 * (`memlens check`) add their own probes (eBPF, CRIU) to the same list.
 */
#ifndef MEMLENS_FEATURES_H
#define MEMLENS_FEATURES_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>

enum ml_feature_state {
	ML_FEATURE_OK, /* present and usable */
	ML_FEATURE_MISSING, /* absent or refused: the commands in used_by degrade or fail */
	ML_FEATURE_INFO, /* a fact, neither good nor bad (pid namespace, THP mode) */
};

struct ml_feature {
	const char *group; /* "memory", "process", "ebpf", "criu" */
	const char *name; /* short, stable: "pagemap_scan" */
	enum ml_feature_state state;
	bool core; /* memlens writes/snapshot cannot work without it */
	char detail[512]; /* what was seen: an ml_err message fits whole */
	const char *used_by; /* the commands that need it */
	const char *fix; /* what to do when it is missing, or NULL */
};

struct ml_feature_list {
	struct ml_feature items[48];
	size_t n;
};

/* Append one; returns it (the last slot is reused when the list is full). */
struct ml_feature *ml_feature_add(struct ml_feature_list *l, const char *group, const char *name,
				  enum ml_feature_state state, const char *used_by, const char *fix,
				  const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/*
 * The memory and process interfaces: PAGEMAP_SCAN, async write-protect
 * userfaultfd, soft-dirty, kpageflags, ptrace policy, pidfd_getfd, the PID
 * namespace, THP, swap.
 */
void ml_features_probe_memory(struct ml_feature_list *l);

#pragma GCC visibility pop

#endif
