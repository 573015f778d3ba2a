// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "../output.h"
#include "opts.h"
#include "../live.h"
#include "trace.h"

static int libbpf_verbose;

/* libbpf's log on stderr: with -v -v, its debug messages with -v -v -v */
static int libbpf_print(int level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && libbpf_verbose < 3)
		return 0;
	if (libbpf_verbose < 2)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void trace_libbpf_quiet(int verbose)
{
	libbpf_verbose = verbose;
	mlt_trace_libbpf_log(libbpf_print);
}

void trace_say_pidns(const char *cmd, int verbose)
{
	__u64 dev, ino;

	if (verbose && mlt_trace_pidns(&dev, &ino))
		fprintf(stderr,
			"memlens %s: in PID namespace %llu (not the initial one): pids are "
			"matched and reported as seen here\n",
			cmd, (unsigned long long)ino);
}

int trace_fail(const char *cmd, bool not_started, int e, const struct ml_err *err)
{
	if (not_started)
		return cli_spawn_failed(cmd, err);
	cli_error(cmd, "%s", err->msg);
	return exit_code_for(e);
}

static int poll_rb(void *rb, int timeout_ms)
{
	return timeout_ms ? ring_buffer__poll(rb, timeout_ms) : ring_buffer__consume(rb);
}

enum trace_stop trace_wait(const sigset_t *sigs, double duration_s, struct ml_trace_target *t,
			   struct ring_buffer *rb)
{
	return trace_wait_poll(sigs, duration_s, t, rb ? poll_rb : NULL, rb);
}

/*
 * Up to ms for a signal of sigs (returned, else 0) or the target's exit,
 * whichever comes first: its pidfd and a signalfd of sigs polled together,
 * so that the end of a short-lived target is seen at once, not at the next
 * tick (100 ms on every `leaks -- CMD` otherwise).
 */
static int wait_signal_or_exit(const sigset_t *sigs, long ms, const struct ml_trace_target *t)
{
	struct pollfd p[2] = { { .fd = -1, .events = POLLIN }, { .fd = -1, .events = POLLIN } };

	if (ms <= 0 || !t || ml_trace_target_pidfd(t) < 0 || ml_trace_target_exited(t))
		return cli_wait_signal(sigs, ms);
	p[1].fd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (p[1].fd < 0)
		return cli_wait_signal(sigs, ms);
	p[0].fd = ml_trace_target_pidfd(t);
	(void)poll(p, 2, (int)ms);
	close(p[1].fd);
	return cli_wait_signal(sigs, 0);
}

enum trace_stop trace_wait_poll(const sigset_t *sigs, double duration_s, struct ml_trace_target *t,
				int (*poll)(void *src, int timeout_ms), void *src)
{
	uint64_t end = duration_s > 0 ? ml_mono_ns() + (uint64_t)(duration_s * 1e9) : 0;

	for (;;) {
		uint64_t now = ml_mono_ns();
		long ms = 100;

		if (end && now >= end)
			return TRACE_STOP_TIME;
		if (end && (end - now) / 1000000 < (uint64_t)ms)
			ms = (long)((end - now) / 1000000) + 1;
		if (poll) {
			int e = poll(src, (int)ms);

			if (e < 0 && e != -EINTR) {
				errno = -e;
				return TRACE_STOP_ERROR;
			}
			ms = 0;
		}
		if (wait_signal_or_exit(sigs, ms, t))
			return TRACE_STOP_SIGNAL;
		if (out_failed(stdout))
			return TRACE_STOP_OUTPUT; /* main() says what failed */
		if (t && ml_trace_target_gone(t)) {
			if (poll)
				poll(src, 0);
			return TRACE_STOP_TARGET;
		}
	}
}

void trace_print_log2_hist(FILE *f, const __u64 *slots, int n, const char *unit)
{
	uint64_t max = 0, total = 0;
	int last = -1;

	for (int i = 0; i < n; i++) {
		if (slots[i] > max)
			max = slots[i];
		if (slots[i])
			last = i;
		total += slots[i];
	}
	fprintf(f, "%*s%s%*s : count    distribution (%llu)\n", 10, "", unit, 10, "",
		(unsigned long long)total);
	for (int i = 0; i <= last; i++) {
		unsigned long long lo = i ? 1ULL << i : 0, hi = (1ULL << (i + 1)) - 1;
		int stars = max ? (int)(slots[i] * 40 / max) : 0;

		fprintf(f, "%10llu -> %-10llu : %-8llu |%-40.*s|\n", lo, hi,
			(unsigned long long)slots[i], stars,
			"****************************************");
	}
}

static const char *out_path; /* -o FILE */
static bool quiet; /* -q */
static long interval_ms; /* -i MS */
static bool batch; /* --batch */

struct cli_opt trace_batch_opt(void)
{
	return (struct cli_opt){ .name = "batch",
				 .kind = CLI_FLAG,
				 .target = &batch,
				 .help = "on a terminal too: plain appended output, not the "
					 "refreshing view (every -i MS, default 1 s; q quits it)" };
}

int trace_output_open(const char *cmd, bool for_cmd)
{
	int e;

	if (!out_path && !quiet)
		return 0;
	/* -q: nothing on the terminal but errors; the report only to -o FILE */
	e = out_stdout_open(out_path ? out_path : "/dev/null");
	if (e) {
		cli_error(cmd, "cannot create the output file %s: %s", out_path, strerror(-e));
		return e == -EACCES || e == -EPERM ? EXIT_PERM : EXIT_FAIL;
	}
	if (!for_cmd)
		trace_output_switch();
	return 0;
}

void trace_output_switch(void)
{
	out_stdout_switch();
}

static int held_fd = -1; /* our stdout while the report is held in a file at fd 1 */

void trace_output_hold(void)
{
	int tmp;

	if (out_path || quiet)
		return;
	fflush(stdout);
	tmp = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	held_fd = tmp < 0 ? -1 : fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (held_fd < 0 || dup2(tmp, STDOUT_FILENO) < 0) {
		/* no temporary file: the report goes to stdout as it comes */
		if (held_fd >= 0)
			close(held_fd);
		held_fd = -1;
	}
	if (tmp >= 0)
		close(tmp);
}

int trace_output_release(void)
{
	char buf[65536];
	ssize_t n;
	int e = 0;

	if (held_fd < 0)
		return 0;
	fflush(stdout);
	e = out_failed(stdout);
	if (!e && lseek(STDOUT_FILENO, 0, SEEK_SET) < 0)
		e = errno;
	while (!e && (n = read(STDOUT_FILENO, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(held_fd, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				e = w < 0 ? errno : EIO;
				break;
			}
			off += w;
		}
	}
	dup2(held_fd, STDOUT_FILENO);
	close(held_fd);
	held_fd = -1;
	return -e;
}

int trace_common_opts(struct cli_opt *o, pid_t *pid, double *duration, bool *json, int *verbose,
		      const char *json_help)
{
	int n = 0;

	if (pid) {
		o[n++] = (struct cli_opt)CLI_OPT_PID(pid, "only this process (its threads)");
		o[n++] = (struct cli_opt)CLI_OPT_CMD(
			"start CMD and trace it from its first instruction");
	}
	o[n++] = (struct cli_opt)CLI_OPT_DURATION(
		duration, 0.001,
		pid ? "stop after SEC seconds (default: Ctrl-C, or the target's exit)"
		    : "stop after SEC seconds (default: Ctrl-C)");
	o[n++] = (struct cli_opt)CLI_OPT_INTERVAL(
		&interval_ms, 1, 1000000000,
		"also print what every MS milliseconds saw, one block (one JSON object) per "
		"interval");
	o[n++] = (struct cli_opt)CLI_OPT_JSON(json, json_help);
	o[n++] = (struct cli_opt)CLI_OPT_OUTPUT(
		&out_path, pid ? "write the report to FILE, not stdout (CMD keeps stdout)"
			       : "write the report to FILE, not stdout");
	o[n++] = (struct cli_opt)CLI_OPT_QUIET(
		&quiet, "nothing on the terminal but errors: the report goes only to -o FILE");
	o[n++] = (struct cli_opt)CLI_OPT_VERBOSE(
		verbose, "say which kernel hooks are used; twice: libbpf's log");
	o[n] = (struct cli_opt)CLI_OPT_END;
	return n;
}

bool trace_quiet(void)
{
	return quiet;
}

void trace_say_tracing(const char *cmd, const char *what, double duration_s, bool to_exit)
{
	if (quiet)
		return;
	if (duration_s > 0)
		fprintf(stderr, "memlens %s: tracing %s for %g s (Ctrl-C stops early)\n", cmd, what,
			duration_s);
	else
		fprintf(stderr, "memlens %s: tracing %s until Ctrl-C%s\n", cmd, what,
			to_exit ? " or its exit" : "");
}

double trace_interval_s(void)
{
	return (double)interval_ms / 1000.0;
}

bool trace_live_start(bool json)
{
	if (json || quiet || !live_wanted(batch))
		return false;
	if (!interval_ms)
		interval_ms = 1000;
	return !live_start();
}

enum trace_stop trace_run(const sigset_t *sigs, const struct trace_loop *l)
{
	uint64_t start = ml_mono_ns(), iv = (uint64_t)(interval_ms * 1e6);
	uint64_t end = l->duration_s > 0 ? start + (uint64_t)(l->duration_s * 1e9) : 0;
	uint64_t next = iv && l->tick ? start + iv : 0, idle = start + 500000000ULL;
	enum trace_stop why;

	for (;;) {
		uint64_t now = ml_mono_ns(), until = idle;

		if (end && end < until)
			until = end;
		if (next && next < until)
			until = next;
		why = l->rb ? trace_wait(sigs, until > now ? (double)(until - now) / 1e9 : 1e-6,
					 l->t, l->rb)
			    : trace_wait_poll(sigs,
					      until > now ? (double)(until - now) / 1e9 : 1e-6,
					      l->t, l->poll, l->src);
		now = ml_mono_ns();
		if (why != TRACE_STOP_TIME || (end && now >= end)) {
			if (next)
				l->tick(l->arg, (double)(now - start) / 1e9, true);
			return why;
		}
		if (next && now >= next) {
			l->tick(l->arg, (double)(now - start) / 1e9, false);
			while (next <= now)
				next += iv;
		}
		if (now >= idle) {
			if (l->idle)
				l->idle(l->arg);
			idle = now + 500000000ULL;
		}
	}
}
