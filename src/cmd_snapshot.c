// SPDX-License-Identifier: MIT
/* memlens snapshot: the high-speed per-VMA memory collector. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "memlens/format_snapshot.h"
#include "memlens/jsonw.h"
#include "opts.h"
#include "output.h"
#include "memlens/profiler.h"
#include "memlens/snapshot.h"
#include "memlens/spawn.h"
#include "live.h"
#include "snapshot_out.h"
#include "table.h"

static const char about[] =
	"Per-VMA picture of a process's memory: kind (text, data, bss, heap, stack,\n"
	"lib-text, lib-data, anon, shm, file, vdso, vvar), pages resident, swapped,\n"
	"file-backed, zero-page and huge, per region kind (in-memory %, dirty %) and\n"
	"the mm counters, collected with PAGEMAP_SCAN (Linux 6.7+; before, by reading\n"
	"/proc/PID/pagemap: same counts, slower): 1 to 1.3 ms median for 1 GiB in 24\n"
	"VMAs, 33 to 47 times less than reading /proc/PID/smaps (measured on 2 busy CPUs).\n";

static const char footer[] =
	"Without -i/-n/-d a running process gets one snapshot. Stops at COUNT, the\n"
	"duration, Ctrl-C or the target's exit. The target is never stopped (except\n"
	"once with --writes, to create a userfaultfd in it). When a cycle takes longer\n"
	"than the interval, or the CPUs are busy, fewer cycles are taken: the summary\n"
	"says so.\n";

struct snap_cli {
	pid_t pid, child;
	long interval_ms, count, threads;
	enum ml_snap_method method;
	const char *method_name; /* --method */
	double duration;
	bool json, csv, pages, writes, quiet, pss;
	const char *out_path;
	FILE *rec; /* records (stdout, which -o FILE replaces); NULL in human mode */
	bool human_lines; /* one line per cycle on stdout */
	bool batch; /* --batch: lines even on a terminal */
	uint64_t line_unit; /* the unit of those lines, from the first cycle */
	bool write_failed; /* the output could not be written: no summary */
	struct ml_profiler *prof;
	uint64_t *cycle_us; /* every cycle's cost, for the summary */
	size_t ncycles, cap;
	size_t not_exact; /* cycles the kernel's RSS did not confirm */
	uint64_t first_ns;
	char command[256]; /* the target's argv, for the summary ("" unknown) */
};

/*
 * The target's argv, space-separated: @argv with -- CMD, else its
 * /proc/PID/cmdline (read when it is attached; "" when it cannot be).
 * report groups the runs of one command by it.
 */
static void note_command(struct snap_cli *c, char **argv)
{
	size_t n = 0, len = sizeof(c->command);
	char path[64];
	FILE *f;

	c->command[0] = '\0';
	if (argv) {
		for (; *argv && n + 1 < len; argv++)
			n += (size_t)snprintf(c->command + n, len - n, "%s%s", n ? " " : "", *argv);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)c->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(c->command, 1, len - 1, f);
	fclose(f);
	while (n && c->command[n - 1] == '\0')
		n--;
	c->command[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (c->command[i] == '\0')
			c->command[i] = ' ';
}

static int parse_args(struct snap_cli *c, int argc, char **argv, int *first)
{
	struct cli_opt opts[] = {
		CLI_OPT_PID(&c->pid, "snapshot a running process"),
		CLI_OPT_CMD("start CMD and follow it: the first cycle is taken at its exec, "
			    "before its first instruction; then every interval (default 100 ms) "
			    "until it exits"),
		CLI_OPT_INTERVAL(&c->interval_ms, 1, 3600000,
				 "periodic mode: one cycle every MS milliseconds"),
		{ .letter = 'n',
		  .name = "count",
		  .arg = "N",
		  .kind = CLI_LONG,
		  .target = &c->count,
		  .min = 1,
		  .max = 1000000000L,
		  .help = "stop after N cycles (periodic; with -p, -i defaults to 1000)" },
		CLI_OPT_DURATION(&c->duration, 0.001,
				 "stop after SEC seconds (periodic; with -p, -i defaults to 1000)"),
		CLI_OPT_OUTPUT(&c->out_path, "write the output (table, JSON Lines with --json, "
					     "CSV with --csv) to FILE, not stdout"),
		CLI_OPT_JSON(&c->json, "JSON Lines: one \"snapshot\" object per cycle, then one "
				       "\"summary\" object"),
		CLI_OPT_QUIET(&c->quiet, "nothing on the terminal but errors: no lines per cycle, "
					 "no live view; the summary (or --json, --csv) goes only "
					 "to -o FILE"),
		{ .name = "csv",
		  .kind = CLI_FLAG,
		  .target = &c->csv,
		  .help = "CSV: one row per VMA per cycle plus a \"total\" row" },
		{ .name = "pages",
		  .kind = CLI_FLAG,
		  .target = &c->pages,
		  .help = "also read /proc/kpageflags and /proc/kpagecount for the present "
			  "pages: dirty, referenced, active, LRU, anon, swap-backed, shared "
			  "(root only)" },
		{ .name = "pss",
		  .kind = CLI_FLAG,
		  .target = &c->pss,
		  .help = "also read /proc/PID/smaps each cycle: PSS, USS and Dirty per VMA, "
			  "as pmap -X and smem show them (20 to 140 ms per GiB resident, 27 "
			  "median; a single snapshot's table always has them)" },
		{ .name = "writes",
		  .kind = CLI_FLAG,
		  .target = &c->writes,
		  .help = "also count pages written since the previous cycle (userfaultfd "
			  "write-protect, as `memlens writes`)" },
		CLI_OPT_THREADS(&c->threads, ML_SNAPSHOT_MAX_THREADS,
				"threads walking the page tables (default: one per 256 MiB "
				"mapped, at most half the CPUs memlens may use)"),
		{ .name = "method",
		  .arg = "M",
		  .kind = CLI_STR,
		  .target = &c->method_name,
		  .help = "how pages are counted: scan (the PAGEMAP_SCAN ioctl) or read (every "
			  "VMA's /proc/PID/pagemap entries, one by one); default: scan where the "
			  "kernel has it, else read" },
		{ .name = "batch",
		  .kind = CLI_FLAG,
		  .target = &c->batch,
		  .help = "periodic mode on a terminal: one line per cycle, not the refreshing "
			  "view (q or Ctrl-C quits it)" },
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "snapshot",
				 .synopsis = "(-p PID | -- CMD [ARGS...])",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	int r = cli_parse(&spec, argc, argv, first);

	if (r)
		return r;
	if ((c->pid && *first < argc) || (!c->pid && *first >= argc))
		return cli_usage_error("snapshot", "give either -p PID or -- CMD [ARGS]");
	if (c->json && c->csv)
		return cli_usage_error("snapshot", "--json and --csv exclude each other");
	if (c->method_name && !strcmp(c->method_name, "scan"))
		c->method = ML_SNAP_METHOD_SCAN;
	else if (c->method_name && !strcmp(c->method_name, "read"))
		c->method = ML_SNAP_METHOD_READ;
	else if (c->method_name)
		return cli_usage_error("snapshot", "--method must be scan or read, not '%s'",
				       c->method_name);
	if (c->quiet && !c->out_path)
		c->out_path = "/dev/null";
	if (!c->interval_ms && !c->pid)
		c->interval_ms = 100;
	if (!c->interval_ms && (c->count > 1 || c->duration > 0))
		c->interval_ms = 1000;
	/* the one table a pmap -X user reads: with PSS, USS and Dirty */
	if (!c->interval_ms && !c->json && !c->csv)
		c->pss = true;
	return 0;
}

/* -o FILE: created now, before a CMD is started (an error stops us first) */
static int create_output(struct snap_cli *c)
{
	int e = c->out_path ? out_stdout_open(c->out_path) : 0;

	if (e)
		cli_error("snapshot", "cannot create the output file %s: %s", c->out_path,
			  strerror(-e));
	return e == -EACCES || e == -EPERM ? EXIT_PERM : e ? EXIT_FAIL : 0;
}

/* After the CMD was started (it keeps memlens's stdout): stdout is -o FILE. */
static void open_output(struct snap_cli *c)
{
	out_stdout_switch();
	if (c->json || c->csv)
		c->rec = stdout;
	else
		c->human_lines = c->interval_ms > 0 && !c->quiet;
	if (c->csv)
		snap_csv_header(c->rec);
}

static void note_cycle(struct snap_cli *c, uint64_t us)
{
	if (c->ncycles == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint64_t *n = realloc(c->cycle_us, cap * sizeof(*n));

		if (!n)
			return;
		c->cycle_us = n;
		c->cap = cap;
	}
	c->cycle_us[c->ncycles++] = us;
}

static int add_written(struct snap_cli *c, struct ml_snapshot *s, struct ml_err *err)
{
	struct ml_profiler_sample ps;
	int r = ml_profiler_tick(c->prof, &ps, err);

	if (r == -EAGAIN && !ps.target_exited)
		return 0; /* the maps kept changing: counted at the next snapshot */
	if (r)
		return r;
	s->flags |= ML_SNAP_HAVE_WRITTEN;
	for (size_t i = 0; i < ps.nregions; i++)
		ml_snapshot_set_written(s, ps.regions[i].start, ps.regions[i].dirty_pages);
	ml_profiler_sample_free(&ps);
	return 0;
}

static void emit(struct snap_cli *c, const struct ml_snapshot *s, const struct ml_snapshot_diff *d,
		 uint64_t seq)
{
	int64_t t_ms = (int64_t)(s->t_ns - c->first_ns) / 1000000;

	if (c->rec && c->csv)
		snap_csv(c->rec, s, d, seq, t_ms);
	else if (c->rec)
		snap_json(c->rec, s, d, seq, t_ms);
	else if (c->human_lines && live_on()) {
		FILE *f = live_frame();

		snap_screen(f, s, d, seq, t_ms, live_rows(), live_cols());
		live_show();
	} else if (c->human_lines) {
		if (!c->line_unit) {
			c->line_unit = snap_unit(s);
			snap_line_header(stdout, s, c->writes);
		}
		snap_line(stdout, s, d, seq, t_ms, c->line_unit, c->writes);
	}
}

/* Sleep until @deadline (monotonic ns); returns the signal that ended it, or 0. */
static int wait_until(const sigset_t *sigs, uint64_t deadline)
{
	uint64_t now = ml_mono_ns();
	struct timespec ts;
	int s;

	if (deadline <= now)
		return 0;
	ts.tv_sec = (time_t)((deadline - now) / 1000000000ULL);
	ts.tv_nsec = (long)((deadline - now) % 1000000000ULL);
	s = sigtimedwait(sigs, NULL, &ts);
	return s > 0 ? s : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Periodic mode: the cycles the interval asks for from the first cycle until
 * now (the stop), at most -n; kept when at least 95% of them were taken.
 */
static uint64_t cycles_wanted(const struct snap_cli *c)
{
	uint64_t want;

	if (!c->interval_ms || !c->ncycles)
		return 0;
	want = (ml_mono_ns() - c->first_ns) / ((uint64_t)c->interval_ms * 1000000ULL) + 1;
	if (c->count && want > (uint64_t)c->count)
		want = (uint64_t)c->count;
	return want < c->ncycles ? c->ncycles : want;
}

static void summary(struct snap_cli *c, const struct ml_snapshot *last, enum ml_stop why)
{
	uint64_t mn = 0, med = 0, mx = 0, sum = 0, want = cycles_wanted(c);
	bool kept = c->ncycles * 100 >= want * 95;
	FILE *f = c->rec == stdout ? NULL : stdout;

	if (c->ncycles) {
		for (size_t i = 0; i < c->ncycles; i++)
			sum += c->cycle_us[i];
		qsort(c->cycle_us, c->ncycles, sizeof(uint64_t), cmp_u64);
		mn = c->cycle_us[0];
		med = c->cycle_us[c->ncycles / 2];
		mx = c->cycle_us[c->ncycles - 1];
	}
	if (c->rec == stdout && c->json) {
		struct ml_snapshot_summary line = { .pid = c->pid,
						    .cycles = c->ncycles,
						    .cycle_us_min = mn,
						    .cycle_us_median = med,
						    .cycle_us_max = mx,
						    .cycle_us_mean =
							    c->ncycles ? sum / c->ncycles : 0,
						    .cycles_not_exact = c->not_exact,
						    .why = why,
						    .interval_ms = (uint64_t)c->interval_ms,
						    .cycles_wanted = want,
						    .interval_kept = kept,
						    .command = c->command };
		struct ml_jw w;

		ml_jw_init(&w, stdout);
		ml_fmt_snapshot_summary(&w, &line);
		return;
	}
	if (!f)
		return;
	if (c->ncycles > 1 || c->human_lines)
		fputc('\n', f);
	if (last && c->ncycles)
		snap_table(f, last);
	if (c->ncycles > 1)
		fprintf(f,
			"\n%zu cycles; cycle time min %.3f / median %.3f / max %.3f ms\n"
			"stopped because %s\n",
			c->ncycles, mn / 1e3, med / 1e3, mx / 1e3, ml_stop_text(why));
	if (c->ncycles > 1 && !kept)
		table_wrap(f, table_width(f), 2,
			   "the interval was not kept: %zu of the %llu cycles one every %ld ms "
			   "would give (%.0f%%); the longest cycle took %.3f ms (a cycle longer "
			   "than the interval, or a CPU busy with others, delays the next)",
			   c->ncycles, (unsigned long long)want, c->interval_ms,
			   100.0 * (double)c->ncycles / (double)want, mx / 1e3);
	if (c->ncycles > 1 && c->not_exact)
		table_wrap(f, table_width(f), 2,
			   "%zu of the cycles are not exact: their counts did not agree with the "
			   "kernel's RSS (\"exact\" in --json)",
			   c->not_exact);
	fflush(f);
}

static bool should_stop(const struct snap_cli *c, uint64_t seq, enum ml_stop *why)
{
	if (!c->interval_ms) {
		*why = ML_STOP_SINGLE;
		return true;
	}
	if (c->count && seq >= (uint64_t)c->count) {
		*why = ML_STOP_COUNT;
		return true;
	}
	if (c->duration > 0 && (ml_mono_ns() - c->first_ns) / 1e9 >= c->duration) {
		*why = ML_STOP_DURATION;
		return true;
	}
	return false;
}

/* After the first cycle: let a spawned child run; start write tracking. */
static int after_first(struct snap_cli *c, struct ml_err *err)
{
	int r;

	if (c->writes) {
		ML_OPTS(ml_profiler_opts, po, .target_stopped = c->child != 0);

		/* with a stopped child, attaching also releases it */
		r = ml_profiler_open(&c->prof, c->pid, &po, err);
		if (r) {
			c->prof = NULL;
			ml_err_wrap(err, "--writes");
			if (c->child)
				ml_spawn_release(c->child, NULL);
			return r;
		}
		return 0;
	}
	if (c->child)
		return ml_spawn_release(c->child, err);
	return 0;
}

static int run_cycles(struct snap_cli *c, struct ml_snapshotter *sn, const sigset_t *sigs,
		      enum ml_stop *why, struct ml_err *err)
{
	struct ml_snapshot a, b, *cur = &a, *prev = &b;
	struct ml_snapshot_diff d;
	uint64_t seq = 0, next;
	int r = 0;

	ml_snapshot_init(&a);
	ml_snapshot_init(&b);
	ml_snapshot_diff_init(&d);
	next = ml_mono_ns();
	for (;;) {
		r = ml_snapshot_take(sn, cur, err);
		if (!r && c->pss)
			r = ml_snapshot_add_smaps(cur, err);
		if (!r && c->prof && seq > 0)
			r = add_written(c, cur, err);
		if (r == -ESRCH && seq > 0) {
			*why = ML_STOP_TARGET_EXITED;
			r = 0;
			break;
		}
		if (r)
			break;
		if (!seq++)
			c->first_ns = cur->t_ns;
		if (ml_snapshot_diff(seq > 1 ? prev : NULL, cur, &d)) {
			r = ml_err_set(err, ENOMEM, "out of memory");
			break;
		}
		emit(c, cur, seq > 1 ? &d : NULL, seq);
		if (out_failed(c->rec ? c->rec : stdout)) {
			*why = ML_STOP_ERROR; /* a write failed: out_close() says which */
			r = -EIO;
			c->write_failed = true;
			break;
		}
		note_cycle(c, cur->cycle_ns / 1000);
		c->not_exact += !cur->exact;
		struct ml_snapshot *t = prev;
		prev = cur;
		cur = t;
		if (seq == 1 && (r = after_first(c, err)))
			break;
		if (should_stop(c, seq, why))
			break;
		next += (uint64_t)c->interval_ms * 1000000ULL;
		if (next < ml_mono_ns()) /* fell behind: a new cadence from now */
			next = ml_mono_ns();
		if (wait_until(sigs, next)) {
			*why = ML_STOP_SIGNAL;
			break;
		}
	}
	if (r && seq <= 1 && c->child && !c->prof)
		ml_spawn_release(c->child, NULL);
	if (!c->write_failed && c->rec && c->rec != stdout && out_flush(c->rec)) {
		c->write_failed = true; /* never a summary of records that were lost */
		*why = ML_STOP_ERROR;
		r = -EIO;
	}
	live_stop();
	if (!c->write_failed)
		summary(c, seq ? prev : NULL, *why);
	ml_snapshot_diff_free(&d);
	ml_snapshot_free(&a);
	ml_snapshot_free(&b);
	return r;
}

/* We started the command: stop it (SIGTERM, SIGKILL after 2 s) unless it exited. */
static int reap_child(struct snap_cli *c, enum ml_stop why, int rc)
{
	bool exited = why == ML_STOP_TARGET_EXITED;
	int status = 0, i;
	pid_t w = 0;

	if (!c->child)
		return rc;
	if (!exited)
		kill(c->child, SIGTERM);
	for (i = 0; i < 200 && w == 0; i++) {
		w = waitpid(c->child, &status, exited ? 0 : WNOHANG);
		if (w == 0)
			usleep(10000);
	}
	if (w == 0) {
		kill(c->child, SIGKILL);
		w = waitpid(c->child, &status, 0);
	}
	if (w == c->child && rc == EXIT_OK && exited && WIFEXITED(status))
		rc = WEXITSTATUS(status);
	return rc;
}

int cmd_snapshot(int argc, char **argv)
{
	struct snap_cli c = { 0 };
	ML_OPTS(ml_snapshot_opts, so);
	struct ml_snapshotter *sn = NULL;
	struct ml_err err = { 0 };
	enum ml_stop why = ML_STOP_ERROR;
	sigset_t sigs;
	int r, rc = EXIT_OK, first;

	r = parse_args(&c, argc, argv, &first);
	if (r)
		return r < 0 ? EXIT_OK : r;
	r = cli_check_target("snapshot", c.pid, argv + first);
	if (r)
		return r;
	r = create_output(&c);
	if (r)
		return r;
	if (!c.pid) {
		/* before blocking signals: the command inherits the signal mask */
		c.child = ml_spawn_stopped(argv + first, &err);
		if (c.child < 0) {
			rc = cli_spawn_failed("snapshot", &err);
			goto out;
		}
		c.pid = c.child;
	}
	note_command(&c, c.child ? argv + first : NULL);
	open_output(&c);
	cli_block_signals(&sigs);
	if (c.human_lines && live_wanted(c.batch))
		live_start();
	so.pages = c.pages;
	so.threads = (unsigned int)c.threads;
	so.method = c.method;
	r = ml_snapshot_open(&sn, c.pid, &so, &err);
	if (r) {
		cli_error("snapshot", "%s", err.msg);
		rc = exit_code_for(r);
		if (c.child) {
			ml_spawn_release(c.child, NULL);
			kill(c.child, SIGKILL);
		}
		why = ML_STOP_ERROR;
		goto out_child;
	}
	r = run_cycles(&c, sn, &sigs, &why, &err);
	if (c.write_failed) {
		rc = EXIT_FAIL; /* out_close() below or main() names the stream */
	} else if (r) {
		if (r == -ESRCH)
			cli_error("snapshot", "%s (no snapshot was taken)", err.msg);
		else
			cli_error("snapshot", "%s", err.msg);
		rc = exit_code_for(r);
	} else if (why == ML_STOP_TARGET_EXITED && !c.rec && !c.quiet) {
		fprintf(stderr, "memlens snapshot: the target process %d exited\n", (int)c.pid);
	}
	if (c.prof)
		ml_profiler_close(c.prof);
	ml_snapshot_close(sn);
out_child:
	rc = reap_child(&c, why, rc);
out:
	if (c.rec && c.rec != stdout && out_close("snapshot", c.rec))
		rc = EXIT_FAIL;
	free(c.cycle_us);
	return rc;
}

MEMLENS_COMMAND(snapshot, "snapshot", 30,
		"per-VMA picture of memory: resident, swapped, file, huge pages", cmd_snapshot);
