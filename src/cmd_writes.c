// SPDX-License-Identifier: MIT
/* memlens writes: the write profiler on the command line. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "memlens/format_writes.h"
#include "memlens/jsonw.h"
#include "opts.h"
#include "output.h"
#include "memlens/heat.h"
#include "memlens/profiler.h"
#include "memlens/spawn.h"

static const char about[] =
	"Profile where a process writes: every interval, the pages of each writable\n"
	"private VMA written since the last interval (userfaultfd async write-protect\n"
	"+ PAGEMAP_SCAN), and which VMAs are hot.\n";

static const char footer[] =
	"The target is never stopped except for ~1 ms while a userfaultfd is created in\n"
	"it; on exit every registration is removed and it holds no extra fd or mapping.\n";

struct writes_ctx {
	bool json, all, quiet;
	FILE *out; /* stdout, or -o FILE */
	FILE *record;
	pid_t pid;
	pthread_mutex_t out_lock;
	struct profiler_sample last;
	bool have_last;
	uint64_t intervals;
	int64_t max_dirty_pages;
	const struct attach_stats *attach; /* how the target was stopped */
};

static void emit_interval_json(FILE *f, const struct writes_ctx *c, const struct profiler_sample *s,
			       bool with_written)
{
	struct jw w;

	ml_jw_init(&w, f);
	ml_fmt_writes_interval(&w, c->pid, s, with_written);
}

static void print_table(const struct writes_ctx *c, const struct profiler_sample *s)
{
	char b1[16], b2[16], b3[16];
	size_t shown = 0;

	fprintf(c->out, "interval %llu  t=%.2fs  VMAs %d (tracked %d)  hot %d  tick %.2f ms\n",
		(unsigned long long)s->seq, s->t_ms / 1000.0, s->total_vmas, s->tracked_vmas,
		s->hot_vmas, s->tick_ns / 1e6);
	for (size_t i = 0; i < s->nregions; i++) {
		const struct profiler_region *r = &s->regions[i];

		if (!c->all && !r->dirty_pages && !r->hot && !r->consecutive_hot)
			continue;
		if (!shown++)
			fprintf(c->out, "  %-33s %-9s %8s %8s %6s %4s %s\n", "RANGE", "KIND",
				"SIZE", "DIRTY", "RATIO", "CONS", "HOT");
		fprintf(c->out, "  %016llx-%016llx %-9s %8s %8llu %6.3f %4d %s\n",
			(unsigned long long)r->start, (unsigned long long)r->end,
			ml_vma_kind_name(r->kind), fmt_bytes(r->end - r->start, b1, sizeof(b1)),
			(unsigned long long)r->dirty_pages, r->written_ratio, r->consecutive_hot,
			r->hot ? "HOT" : "");
	}
	if (!shown)
		fprintf(c->out, "  (no writes)\n");
	fprintf(c->out,
		"  dirty: %lld pages (%s) in %.2f s = %.0f pages/s; cumulative %s, avg %s/s\n\n",
		(long long)s->dirty.dirty_pages,
		fmt_bytes((uint64_t)s->dirty.dirty_bytes, b1, sizeof(b1)), s->interval_s,
		s->dirty.dirty_rate_pages_per_sec,
		fmt_bytes((uint64_t)s->dirty.cumulative_dirty_bytes, b2, sizeof(b2)),
		fmt_bytes((uint64_t)s->dirty.avg_dirty_rate, b3, sizeof(b3)));
	fflush(c->out);
}

static void on_tick(const struct profiler_sample *s, void *arg)
{
	struct writes_ctx *c = arg;

	if (s->target_exited && !s->nregions)
		return;
	pthread_mutex_lock(&c->out_lock);
	if (c->json)
		emit_interval_json(c->out, c, s, false);
	else if (!c->quiet)
		print_table(c, s);
	if (c->record)
		emit_interval_json(c->record, c, s, true);
	ml_profiler_sample_free(&c->last);
	if (!ml_profiler_sample_copy(&c->last, s))
		c->have_last = true;
	c->intervals++;
	if (s->dirty.dirty_pages > c->max_dirty_pages)
		c->max_dirty_pages = s->dirty.dirty_pages;
	pthread_mutex_unlock(&c->out_lock);
}

static void print_summary(struct writes_ctx *c, enum ml_stop why)
{
	const struct profiler_sample *s = &c->last;
	char b1[16], b2[16];

	if (c->json) {
		struct writes_summary sum = { .pid = c->pid,
					      .intervals = c->intervals,
					      .why = why,
					      .attach = c->attach,
					      .last = c->have_last ? s : NULL };
		struct jw w;

		ml_jw_init(&w, c->out);
		ml_fmt_writes_summary(&w, &sum);
		return;
	}
	fprintf(c->out, "summary: pid %d, %llu interval%s, stopped because %s\n", (int)c->pid,
		(unsigned long long)c->intervals, c->intervals == 1 ? "" : "s", ml_stop_text(why));
	if (!c->have_last)
		return;
	fprintf(c->out, "  VMAs %d, tracked %d, hot %d; cumulative written %s, average %s/s\n",
		s->total_vmas, s->tracked_vmas, s->hot_vmas,
		fmt_bytes((uint64_t)s->dirty.cumulative_dirty_bytes, b1, sizeof(b1)),
		fmt_bytes((uint64_t)s->dirty.avg_dirty_rate, b2, sizeof(b2)));
	for (size_t i = 0; i < s->nregions; i++) {
		const struct profiler_region *r = &s->regions[i];

		if (r->hot)
			fprintf(c->out,
				"  HOT %016llx-%016llx %-9s %8s ratio %.3f for %d intervals\n",
				(unsigned long long)r->start, (unsigned long long)r->end,
				ml_vma_kind_name(r->kind),
				fmt_bytes(r->end - r->start, b1, sizeof(b1)), r->written_ratio,
				r->consecutive_hot);
	}
}

/* A write to the output or the record file failed (their buffers flushed). */
static bool output_failed(struct writes_ctx *c)
{
	bool bad;

	pthread_mutex_lock(&c->out_lock);
	bad = out_flush(c->out) || (c->record && out_flush(c->record));
	pthread_mutex_unlock(&c->out_lock);
	return bad;
}

/* Has @child exited? It is left a zombie for the caller's waitpid() (WNOWAIT is waitid's). */
static bool child_exited(pid_t child)
{
	siginfo_t si = { 0 };

	return !waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) && si.si_pid == child;
}

/* Does @pid ignore @sig (SigIgn of /proc/PID/status)? */
static bool ignores(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "SigIgn: %llx", &mask) == 1;
	fclose(f);
	return found && sig > 0 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Send @sig; if the child ignores it (a background job ignores SIGINT), SIGTERM, then SIGKILL. */
static void stop_child(pid_t child, int sig)
{
	static const int next[] = { SIGTERM, SIGKILL };
	int step = 0;

	if (sig != SIGTERM && ignores(child, sig))
		sig = SIGTERM;
	kill(child, sig);
	for (; step < 2; step++) {
		for (int i = 0; i < 40; i++) {
			if (child_exited(child))
				return;
			usleep(i < 10 ? 5000 : 50000);
		}
		kill(child, next[step]);
	}
}

/*
 * -d: over once @want intervals were printed (@want 0: once the duration
 * has passed); ticks that are very late (a huge target, a loaded machine)
 * do not keep it going much beyond the duration.
 */
static bool duration_over(struct writes_ctx *c, uint64_t t0, double duration, uint64_t want)
{
	double el = (double)(ml_mono_ns() - t0) / 1e9;
	uint64_t n;

	if (!want)
		return el >= duration;
	pthread_mutex_lock(&c->out_lock);
	n = c->intervals;
	pthread_mutex_unlock(&c->out_lock);
	return n >= want || el >= duration * 3 + 2;
}

int cmd_writes(int argc, char **argv)
{
	struct profiler_opts po = { 0 };
	struct writes_ctx c = { 0 };
	struct profiler *p = NULL;
	struct ml_err err = { 0 };
	const char *record_path = NULL, *out_path = NULL;
	enum ml_stop why = ML_STOP_SIGNAL;
	double duration = 0;
	sigset_t sigs;
	pid_t pid = 0, child = 0;
	int r, rc = EXIT_OK, stop_sig = 0, first;
	long interval_ms = 0;
	struct cli_opt opts[] = {
		CLI_OPT_PID(&pid, "profile a running process"),
		CLI_OPT_CMD("start CMD and profile it from its first instruction; CMD is "
			    "stopped (the signal memlens got, else SIGTERM) when memlens stops "
			    "first"),
		CLI_OPT_INTERVAL(&interval_ms, 10, 600000,
				 "scan interval in milliseconds (default 1000)"),
		CLI_OPT_THRESHOLD(&po.hot_threshold,
				  "written ratio above which an interval is hot (default 0.3)"),
		CLI_OPT_CONSECUTIVE(&po.hot_consecutive, HEAT_WINDOW,
				    "hot intervals in a row before a VMA is hot (default 3)"),
		CLI_OPT_DURATION(&duration, 0.001,
				 "stop after SEC seconds: SEC intervals of 1 s without -i "
				 "(default: Ctrl-C or the target's exit)"),
		{ .letter = 'a',
		  .name = "all",
		  .kind = CLI_FLAG,
		  .target = &c.all,
		  .help = "list every tracked VMA, not only written or hot ones" },
		CLI_OPT_OUTPUT(&out_path, "write the output (table or JSON) to FILE, not stdout"),
		CLI_OPT_JSON(&c.json, "JSON Lines: one \"interval\" object per interval, then "
				      "one \"summary\" object"),
		{ .name = "record",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &record_path,
		  .help = "also write each interval's written page ranges to FILE (JSON Lines; "
			  "the input of migrate-model and report)" },
		CLI_OPT_QUIET(&c.quiet, "human output: print only the summary"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "writes",
				 .synopsis = "(-p PID | -- CMD [ARGS...])",
				 .about = about,
				 .footer = footer,
				 .opts = opts };

	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r < 0 ? EXIT_OK : r;
	if ((pid && first < argc) || (!pid && first >= argc))
		return cli_usage_error("writes", "give either -p PID or -- CMD [ARGS]");
	po.interval_ms = (unsigned int)interval_ms;
	/* -d without -i: intervals of 1 s, or one interval of the whole duration */
	if (duration > 0 && !interval_ms)
		po.interval_ms =
			duration * 1000 < PROFILER_DEFAULT_INTERVAL_MS
				? (unsigned int)(duration * 1000 < 10 ? 10 : duration * 1000)
				: PROFILER_DEFAULT_INTERVAL_MS;
	c.out = stdout;
	if (out_path) {
		c.out = out_open(out_path);
		if (!c.out) {
			cli_error("writes", "cannot create the output file %s: %s", out_path,
				  strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (record_path) {
		c.record = out_open(record_path);
		if (!c.record) {
			cli_error("writes", "cannot create the record file %s: %s", record_path,
				  strerror(errno));
			if (c.out != stdout)
				fclose(c.out);
			return EXIT_FAIL;
		}
		po.record_ranges = true;
	}
	pthread_mutex_init(&c.out_lock, NULL);
	cli_block_signals(&sigs);
	if (!pid) {
		child = ml_spawn_stopped(argv + first, &err);
		if (child < 0) {
			cli_error("writes", "%s", err.msg);
			rc = err.code == ENOENT ? 127 : EXIT_FAIL;
			goto out;
		}
		pid = child;
		po.target_stopped = true;
	}
	c.pid = pid;
	r = ml_profiler_open(&p, pid, &po, &err);
	if (r) {
		cli_error("writes", "%s", err.msg);
		rc = exit_code_for(r);
		if (child) {
			ml_spawn_release(child, NULL);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
		}
		goto out;
	}
	c.attach = ml_profiler_attach_stats(p);
	if (!c.json && !c.quiet) {
		const struct attach_stats *st = c.attach;

		fprintf(c.out,
			"profiling pid %d every %u ms (hot: ratio > %.2f for %d intervals); target "
			"stopped %.2f ms for setup. Ctrl-C to stop.\n\n",
			(int)pid, ml_profiler_options(p)->interval_ms,
			ml_profiler_options(p)->hot_threshold,
			ml_profiler_options(p)->hot_consecutive, st->stopped_ns / 1e6);
		fflush(c.out);
	}
	r = ml_profiler_start(p, on_tick, &c, &err);
	if (r) {
		cli_error("writes", "%s", err.msg);
		rc = EXIT_FAIL;
		goto out_close;
	}
	uint64_t t0 = ml_mono_ns();
	/*
	 * -d SEC without -i: SEC intervals of 1 s, counted (not a race between
	 * the last tick and the clock); with -i: SEC seconds.
	 */
	uint64_t want =
		interval_ms
			? 0
			: (uint64_t)(duration * 1000 / ml_profiler_options(p)->interval_ms + 0.5);
	for (;;) {
		int sig = cli_wait_signal(&sigs, 50);

		if (sig) {
			why = ML_STOP_SIGNAL;
			stop_sig = sig;
			break;
		}
		if (!ml_profiler_running(p)) {
			struct ml_err e2 = { 0 };
			int er = ml_profiler_error(p, &e2);

			if (er == -ESRCH) {
				why = ML_STOP_TARGET_EXITED;
				if (!c.json)
					fprintf(stderr,
						"memlens writes: the target process %d exited; "
						"profiling stopped\n",
						(int)pid);
			} else {
				why = ML_STOP_ERROR;
				cli_error("writes", "%s", e2.msg);
				rc = exit_code_for(er);
			}
			break;
		}
		if (duration > 0 && duration_over(&c, t0, duration, want)) {
			why = ML_STOP_DURATION;
			break;
		}
		if (output_failed(&c)) {
			why = ML_STOP_ERROR; /* out_close() below or main() names the stream */
			rc = EXIT_FAIL;
			break;
		}
	}
	ml_profiler_stop(p);
	/* never a summary after intervals that were lost */
	if (!output_failed(&c))
		print_summary(&c, why);
out_close:
	ml_profiler_close(p);
	if (child) {
		int status;

		/* we started it: it does not outlive us (like timeout(1)) */
		if (why != ML_STOP_TARGET_EXITED)
			stop_child(child, stop_sig ? stop_sig : SIGTERM);
		if (waitpid(child, &status, 0) == child && rc == EXIT_OK &&
		    why == ML_STOP_TARGET_EXITED && WIFEXITED(status))
			rc = WEXITSTATUS(status);
	}
out:
	if (c.record && out_close("writes", c.record))
		rc = EXIT_FAIL;
	if (c.out && c.out != stdout && out_close("writes", c.out))
		rc = EXIT_FAIL;
	ml_profiler_sample_free(&c.last);
	return rc;
}

MEMLENS_COMMAND(writes, "writes", 10, "where a process writes: per-VMA written pages, hot VMAs",
		cmd_writes);
