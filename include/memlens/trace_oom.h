/* SPDX-License-Identifier: MIT */
/*
 * The OOM tracer (eBPF, libmemlens-trace.a): every OOM kill as it happens,
 * handed to a callback as the record `memlens oom --json` writes
 * (memlens/format_oom.h). It needs root and a kernel with BTF; link with
 * -lmemlens-trace -lmemlens -lbpf -lelf -lz.
 *
 *	ML_OPTS(ml_oom_tracer_opts, o, .on_kill = print_kill, .arg = &state);
 *	struct ml_oom_tracer *t;
 *	if (ml_oom_tracer_open(&t, &o, &err) == 0) {
 *		while (running)
 *			ml_oom_tracer_poll(t, 100);
 *		ml_oom_tracer_close(t);
 *	}
 */
#ifndef MEMLENS_TRACE_OOM_H
#define MEMLENS_TRACE_OOM_H

/* exported by whatever shared object links it (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/format_oom.h"

struct ml_oom_tracer;

/*
 * One kill, from ml_oom_tracer_poll(). Not 0: the poll stops and returns
 * it (the kills not handed yet wait for the next one).
 */
typedef int (*ml_oom_kill_fn)(void *arg, const struct ml_oom_kill_rec *r);

struct ml_oom_tracer_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	ml_oom_kill_fn on_kill; /* NULL: kills are only counted */
	void *arg; /* on_kill's */
};

/* How the tracer runs, as it could load here. */
struct ml_oom_tracer_info {
	size_t sz; /* the caller sets it: sizeof(struct ml_oom_tracer_info) (memlens/opts.h) */
	/*
	 * fentry/oom_kill_process with tp_btf/mark_victim (the scope and the
	 * limit from the kernel's struct oom_control); false: tp_btf/mark_victim
	 * alone (the limit is the memory cgroup found at its max), refused
	 * with -fentry_error
	 */
	bool fentry;
	int fentry_error;
	/* RSS summed over the per-CPU counters (as the kernel's report on 7.0 on) */
	bool rss_summed;
};

/* The kills of the run so far. */
struct ml_oom_tracer_stats {
	size_t sz; /* the caller sets it: sizeof(struct ml_oom_tracer_stats) (memlens/opts.h) */
	uint64_t kills; /* handed to on_kill */
	uint64_t lost; /* not reported: the ring buffer was full */
	uint64_t recursion_misses; /* not seen: another BPF program ran on that CPU */
};

/*
 * Check the kernel (BTF, the right to load BPF), load and attach the
 * programs (fentry first, tp_btf alone where the kernel refuses it).
 * 0 and *@out, or -errno with a sentence that says what to do in @err.
 */
int ml_oom_tracer_open(struct ml_oom_tracer **out, const struct ml_oom_tracer_opts *opts,
		       struct ml_err *err);
/*
 * Hand the kills that came to on_kill, waiting up to @timeout_ms for one
 * (< 0: until one comes; 0: only those already there, without waiting).
 * Returns how many, or a negative errno (errno set too: -EINTR on a
 * signal), or on_kill's value when it stopped.
 */
int ml_oom_tracer_poll(struct ml_oom_tracer *t, int timeout_ms);
int ml_oom_tracer_info(const struct ml_oom_tracer *t, struct ml_oom_tracer_info *out);
int ml_oom_tracer_stats(const struct ml_oom_tracer *t, struct ml_oom_tracer_stats *out);
/* Detach and free (NULL: nothing). */
void ml_oom_tracer_close(struct ml_oom_tracer *t);

#pragma GCC visibility pop

#endif
