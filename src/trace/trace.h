/* SPDX-License-Identifier: MIT */
/*
 * What the eBPF tracers (faults, slab, leaks, oom) share: checks before
 * loading, the failure of the target (-p PID or -- CMD: memlens/trace_target.h),
 * the wait loop, log2 histograms.
 */
#ifndef MEMLENS_TRACE_H
#define MEMLENS_TRACE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#include "memlens/jsonw.h"
#include "memlens/err.h"
#include "memlens/trace_target.h"
#include "../../trace/bpfutil.h"

struct ring_buffer;

/* Route libbpf's messages to stderr only when @verbose > 1 (-v -v). */
void trace_libbpf_quiet(int verbose);

/* With -v, outside the initial PID namespace: say that pids are as seen here. */
void trace_say_pidns(const char *cmd, int verbose);

/*
 * The exit status and message of a failed run: -- CMD that could not be
 * started (@not_started, from ml_trace_target_spawn()) gets 127
 * (cli_spawn_failed), everything else exit_code_for(@e).
 */
int trace_fail(const char *cmd, bool not_started, int e, const struct ml_err *err);

/* TRACE_STOP_OUTPUT: writing the output (stdout or -o FILE) failed */
enum trace_stop {
	TRACE_STOP_TIME,
	TRACE_STOP_SIGNAL,
	TRACE_STOP_TARGET,
	TRACE_STOP_ERROR,
	TRACE_STOP_OUTPUT
};

/*
 * -o FILE: the report goes to FILE instead of stdout. trace_output_open()
 * creates the file (call it once the options are parsed, before any
 * tracing: an error is printed, returns an exit code) and points stdout at
 * it, unless @for_cmd: a `-- CMD` about to be started keeps memlens's
 * original stdout for its own output, and trace_output_switch() is called
 * once it is started. No-ops without -o.
 */
int trace_output_open(const char *cmd, bool for_cmd);
void trace_output_switch(void);
/*
 * -- CMD without -o: CMD's output and the report share stdout. hold() (after
 * the spawn) keeps the report in a temporary file; release() (once CMD is
 * gone) prints it, so CMD's output comes first, never interleaved with it.
 * release(): 0, or -errno of a write that failed.
 */
void trace_output_hold(void);
int trace_output_release(void);

/*
 * Tell the user the tracer is running, on stderr: "memlens CMD: tracing
 * WHAT for N s (Ctrl-C stops early)" or "... until Ctrl-C". Tests and
 * scripts wait for "tracing" on stderr.
 */
void trace_say_tracing(const char *cmd, const char *what, double duration_s, bool to_exit);
/* -q: nothing on the terminal but errors (notes are not said) */
bool trace_quiet(void);

/*
 * Wait for @duration_s seconds (0: forever), a signal in @sigs, or the
 * target's exit, polling @rb (may be NULL) meanwhile.
 */
enum trace_stop trace_wait(const sigset_t *sigs, double duration_s, struct ml_trace_target *t,
			   struct ring_buffer *rb);
/* trace_wait() polling @poll(@src, ...) instead of a ring buffer (trace_loop) */
enum trace_stop trace_wait_poll(const sigset_t *sigs, double duration_s, struct ml_trace_target *t,
				int (*poll)(void *src, int timeout_ms), void *src);

/* bcc-style log2 histogram: "     0 -> 1     : 12   |****   |" */
void trace_print_log2_hist(FILE *f, const __u64 *slots, int n, const char *unit);

/*
 * The options every tracer shares, appended at @o (room for 8 entries, the
 * end marker included): -p/--pid and -- CMD (when @pid is not NULL),
 * -d/--duration, -i/--interval, --json (@json_help says what it prints),
 * -o/--output, -v/--verbose; returns how many (o[n] is the end marker).
 */
struct cli_opt;
int trace_common_opts(struct cli_opt *o, pid_t *pid, double *duration, bool *json, int *verbose,
		      const char *json_help);

/* -i/--interval MS, in seconds; 0 when not given. */
double trace_interval_s(void);

/* --batch, for the tracers with a live view (slab, leaks) */
struct cli_opt trace_batch_opt(void);

/*
 * Without --json and --batch, on a terminal: the refreshing view (live.h),
 * every -i MS or every second. Call after cli_block_signals(), before
 * trace_run(); live_stop() after it. True when the view is on.
 */
bool trace_live_start(bool json);

/*
 * The wait of a tracer: until @duration_s has passed (0: no limit), a
 * signal in @sigs, or the exit of @t (may be NULL), polling @rb or @poll
 * (may be NULL). With -i, @tick is called at the end of every interval, and once
 * more for the last, partial one (@last true) before returning. @idle (may
 * be NULL) is called about every half second.
 */
struct trace_loop {
	double duration_s;
	struct ml_trace_target *t;
	struct ring_buffer *rb;
	/*
	 * Instead of @rb, a library tracer's: @poll(@src, MS) hands what came
	 * in MS milliseconds (0: what is there) to its callback; < 0: -errno
	 */
	int (*poll)(void *src, int timeout_ms);
	void *src;
	void (*tick)(void *arg, double elapsed_s, bool last);
	void (*idle)(void *arg);
	void *arg;
};
enum trace_stop trace_run(const sigset_t *sigs, const struct trace_loop *l);

#endif
