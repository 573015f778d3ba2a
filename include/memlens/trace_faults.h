/* SPDX-License-Identifier: MIT */
/*
 * The page-fault tracer (eBPF, libmemlens-trace.a): minor and major faults
 * counted per command name system-wide or per process, their latency in
 * log2 histograms of microseconds, and, for one process, the kernel's own
 * counters (getrusage()'s) to compare with. It needs root and a kernel
 * with BTF; link with -lmemlens-trace -lmemlens -lbpf -lelf -lz.
 *
 *	ML_OPTS(ml_faults_tracer_opts, o, .pid = pid);
 *	ml_faults_tracer_open(&t, &o, &err);
 *	... let it count ...
 *	ml_faults_tracer_read(t, &c);   (as often as wanted)
 *	ml_faults_tracer_stop(t);       (then ml_faults_tracer_kernel())
 *	ml_faults_counts_free(&c);
 *	ml_faults_tracer_close(t);
 */
#ifndef MEMLENS_TRACE_FAULTS_H
#define MEMLENS_TRACE_FAULTS_H

/* exported by whatever shared object links it (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"

#define ML_FAULTS_HIST_SLOTS 26 /* log2 buckets of microseconds */
#define ML_FAULTS_COMM_LEN 16

enum ml_faults_mode {
	ML_FAULTS_AUTO, /* fentry, else tracepoint */
	ML_FAULTS_FENTRY, /* fentry/fexit on handle_mm_fault, or fail */
	ML_FAULTS_TRACEPOINT, /* tp_btf/page_fault_user and _kernel, perf software events */
};

struct ml_faults_tracer_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	pid_t pid; /* only this process (as seen here), counted per pid; 0: every process, per comm
		    */
	enum ml_faults_mode mode;
};

struct ml_faults_tracer;

/* One command name (system-wide) or one process: its faults so far. */
struct ml_faults_row {
	uint32_t pid; /* 0 when counting per command name */
	char comm[ML_FAULTS_COMM_LEN];
	uint64_t minor, major;
	uint64_t retried; /* completed by a FAULT_FLAG_TRIED retry (fentry mode only) */
};

/* What the tracer counted since it was opened. */
struct ml_faults_counts {
	struct ml_faults_row *rows; /* most major faults first, then most faults, then by comm */
	size_t n;
	uint64_t minor_hist[ML_FAULTS_HIST_SLOTS], major_hist[ML_FAULTS_HIST_SLOTS];
	uint64_t recursion_misses; /* not seen: another BPF program ran on that CPU */
};

/* How the tracer runs, as it could load here. */
struct ml_faults_tracer_info {
	size_t sz; /* the caller sets it: sizeof(struct ml_faults_tracer_info) (memlens/opts.h) */
	bool fentry; /* else the tracepoint mode, which cannot see retries */
	size_t perf_events; /* the tracepoint mode's perf software events */
	char why[160]; /* the tracepoint mode: why not fentry */
};

/*
 * The kernel's own counters of the process (opts.pid) while traced, once
 * the tracer has stopped: what it counted that the programs may not have
 * seen (faults inside the kernel by get_user_pages()).
 */
struct ml_faults_kernel {
	size_t sz; /* the caller sets it: sizeof(struct ml_faults_kernel) (memlens/opts.h) */
	bool known; /* every thread accounted for */
	uint64_t minor, major; /* while traced */
	bool before; /* ml_faults_tracer_stop(@spawned): the counts when tracing began */
	uint64_t before_minor, before_major;
};

/*
 * Check the kernel (BTF, the right to load BPF), read the process's
 * counters, load and attach the programs as opts.mode says. 0 and *@out,
 * or -errno with a sentence that says what to do in @err.
 */
int ml_faults_tracer_open(struct ml_faults_tracer **out, const struct ml_faults_tracer_opts *opts,
			  struct ml_err *err);
int ml_faults_tracer_info(const struct ml_faults_tracer *t, struct ml_faults_tracer_info *out);
/* The counts so far (each a total since the open). 0, or -ENOMEM. */
int ml_faults_tracer_read(const struct ml_faults_tracer *t, struct ml_faults_counts *out);
void ml_faults_counts_free(struct ml_faults_counts *c);
/*
 * Detach the programs (nothing counts any more; the counts stay readable)
 * and read the kernel's counters of the process. @spawned: the process was
 * started stopped for the tracer, so its counters at the open are what it
 * did before tracing began.
 */
void ml_faults_tracer_stop(struct ml_faults_tracer *t, bool spawned);
int ml_faults_tracer_kernel(const struct ml_faults_tracer *t, struct ml_faults_kernel *out);
/* Detach and free (NULL: nothing). */
void ml_faults_tracer_close(struct ml_faults_tracer *t);

#pragma GCC visibility pop

#endif
