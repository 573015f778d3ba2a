// SPDX-License-Identifier: MIT
/* memlens snapshot: the high-speed per-VMA memory collector. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "jsonw.h"
#include "output.h"
#include "memlens/profiler.h"
#include "memlens/snapshot.h"
#include "memlens/spawn.h"
#include "snapshot_out.h"

static const char usage_text[] =
	"usage: memlens snapshot (-p PID | -- CMD [ARGS...]) [-i MS] [-n COUNT] [-d SEC]\n"
	"                        [-o FILE] [--json | --csv] [--pages] [--writes]\n"
	"                        [--method scan|read]\n"
	"\n"
	"Per-VMA picture of a process's memory: kind (text, data, bss, heap, stack,\n"
	"lib-text, lib-data, anon, shm, file, vdso, vvar), pages resident, swapped,\n"
	"file-backed, zero-page and huge, per region kind (in-memory %, dirty %) and\n"
	"the mm counters, collected in about a millisecond with PAGEMAP_SCAN (Linux\n"
	"6.7+; before, by reading /proc/PID/pagemap: same counts, slower).\n"
	"\n"
	"  -p, --pid PID        snapshot a running process\n"
	"  -- CMD [ARGS]        start CMD and follow it: the first cycle is taken at its\n"
	"                       exec, before its first instruction; then every interval\n"
	"                       (default 100 ms) until it exits\n"
	"  -i, --interval MS    periodic mode: one cycle every MS ms (1..3600000)\n"
	"  -n, --count N        stop after N cycles (periodic; with -p, -i defaults to 1000)\n"
	"  -d, --duration SEC   stop after SEC seconds (periodic; with -p, -i defaults to 1000)\n"
	"  -o, --output FILE    write the records (JSON Lines, or CSV with --csv) to FILE\n"
	"                       and print the human summary on stdout\n"
	"      --json           JSON Lines: one \"snapshot\" object per cycle, then one\n"
	"                       \"summary\" object\n"
	"      --csv            CSV: one row per VMA per cycle plus a \"total\" row\n"
	"      --pages          also read /proc/kpageflags and /proc/kpagecount for the\n"
	"                       present pages: dirty, referenced, active, LRU, anon,\n"
	"                       swap-backed, shared (root only)\n"
	"      --writes         also count pages written since the previous cycle\n"
	"                       (userfaultfd write-protect, as `memlens writes`)\n"
	"      --threads N      threads walking the page tables (1..8; default: one per\n"
	"                       256 MiB mapped, at most half the CPUs memlens may use)\n"
	"      --method M       how pages are counted: scan (the PAGEMAP_SCAN ioctl) or\n"
	"                       read (every VMA's /proc/PID/pagemap entries, one by\n"
	"                       one); default: scan where the kernel has it, else read\n"
	"  -h, --help           this text\n"
	"\n"
	"Without -i/-n/-d a running process gets one snapshot. Stops at COUNT, the\n"
	"duration, Ctrl-C or the target's exit. The target is never stopped (except\n"
	"~1 ms with --writes, to create a userfaultfd in it).\n";

struct snap_cli {
	pid_t pid, child;
	long interval_ms, count, threads;
	enum snap_method method;
	double duration;
	bool json, csv, pages, writes;
	const char *out_path;
	FILE *rec; /* records: stdout or -o FILE; NULL in human mode */
	bool human_lines; /* one line per cycle on stdout */
	bool write_failed; /* the output could not be written: no summary */
	struct profiler *prof;
	uint64_t *cycle_us; /* every cycle's cost, for the summary */
	size_t ncycles, cap;
	uint64_t first_ns;
};

enum { OPT_JSON = 1000, OPT_CSV, OPT_PAGES, OPT_WRITES, OPT_THREADS, OPT_METHOD };

static int parse_args(struct snap_cli *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "pages", no_argument, NULL, OPT_PAGES },
		{ "writes", no_argument, NULL, OPT_WRITES },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "method", required_argument, NULL, OPT_METHOD },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "+p:i:n:d:o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pid(optarg, &c->pid)) {
				cli_error("snapshot",
					  "invalid pid '%s': give a positive process id", optarg);
				return -EINVAL;
			}
			break;
		case 'i':
			if (parse_long(optarg, 1, 3600000, &c->interval_ms)) {
				cli_error("snapshot", "--interval must be 1..3600000 ms, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			if (parse_long(optarg, 1, 1000000000L, &c->count)) {
				cli_error("snapshot", "--count must be a positive number, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'd':
			if (parse_double(optarg, 0.001, 31536000, &c->duration)) {
				cli_error("snapshot",
					  "--duration must be a number of seconds, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			c->out_path = optarg;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		case OPT_CSV:
			c->csv = true;
			break;
		case OPT_PAGES:
			c->pages = true;
			break;
		case OPT_WRITES:
			c->writes = true;
			break;
		case OPT_THREADS:
			if (parse_long(optarg, 1, SNAPSHOT_MAX_THREADS, &c->threads)) {
				cli_error("snapshot", "--threads must be 1..%d, not '%s'",
					  SNAPSHOT_MAX_THREADS, optarg);
				return -EINVAL;
			}
			break;
		case OPT_METHOD:
			if (!strcmp(optarg, "scan")) {
				c->method = SNAP_METHOD_SCAN;
			} else if (!strcmp(optarg, "read")) {
				c->method = SNAP_METHOD_READ;
			} else {
				cli_error("snapshot", "--method must be scan or read, not '%s'",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			fputs(usage_text, stderr);
			return -EINVAL;
		}
	}
	if ((c->pid && optind < argc) || (!c->pid && optind >= argc)) {
		cli_error("snapshot", "give either -p PID or -- CMD [ARGS] (see --help)");
		return -EINVAL;
	}
	if (c->json && c->csv) {
		cli_error("snapshot", "--json and --csv exclude each other");
		return -EINVAL;
	}
	if (!c->interval_ms && !c->pid)
		c->interval_ms = 100;
	if (!c->interval_ms && (c->count > 1 || c->duration > 0))
		c->interval_ms = 1000;
	return 0;
}

static int open_output(struct snap_cli *c)
{
	if (c->out_path) {
		c->rec = out_open(c->out_path);
		if (!c->rec) {
			cli_error("snapshot", "cannot create %s: %s", c->out_path, strerror(errno));
			return -errno;
		}
		if (!c->csv)
			c->json = true;
	} else if (c->json || c->csv) {
		c->rec = stdout;
	} else {
		c->human_lines = c->interval_ms > 0;
	}
	if (c->csv)
		snap_csv_header(c->rec);
	return 0;
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

static int add_written(struct snap_cli *c, struct snapshot *s, struct ml_err *err)
{
	struct profiler_sample ps;
	int r = ml_profiler_tick(c->prof, &ps, err);

	if (r == -EAGAIN && !ps.target_exited)
		return 0; /* the maps kept changing: counted at the next snapshot */
	if (r)
		return r;
	s->flags |= SNAP_HAVE_WRITTEN;
	for (size_t i = 0; i < ps.nregions; i++)
		ml_snapshot_set_written(s, ps.regions[i].start, ps.regions[i].dirty_pages);
	ml_profiler_sample_free(&ps);
	return 0;
}

static void emit(struct snap_cli *c, const struct snapshot *s, const struct snapshot_diff *d,
		 uint64_t seq)
{
	int64_t t_ms = (int64_t)(s->t_ns - c->first_ns) / 1000000;

	if (c->rec && c->csv)
		snap_csv(c->rec, s, d, seq, t_ms);
	else if (c->rec)
		snap_json(c->rec, s, d, seq, t_ms);
	else if (c->human_lines)
		snap_line(stdout, s, d, seq, t_ms);
}

/* Sleep until @deadline (monotonic ns); returns the signal that ended it, or 0. */
static int wait_until(const sigset_t *sigs, uint64_t deadline)
{
	uint64_t now = cli_now_ns();
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

static void summary(struct snap_cli *c, const struct snapshot *last, const char *why)
{
	uint64_t mn = 0, med = 0, mx = 0, sum = 0;
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
		struct jw w;

		ml_jw_init(&w, stdout);
		ml_jw_obj(&w);
		ml_jw_kstr(&w, "type", "summary");
		ml_jw_kint(&w, "pid", c->pid);
		ml_jw_kuint(&w, "cycles", c->ncycles);
		ml_jw_kuint(&w, "cycle_us_min", mn);
		ml_jw_kuint(&w, "cycle_us_median", med);
		ml_jw_kuint(&w, "cycle_us_max", mx);
		ml_jw_kuint(&w, "cycle_us_mean", c->ncycles ? sum / c->ncycles : 0);
		ml_jw_kstr(&w, "stopped_because", why);
		ml_jw_obj_end(&w);
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
			"\n%zu cycles; cycle time min %.3f / median %.3f / max %.3f ms; stopped "
			"because %s\n",
			c->ncycles, mn / 1e3, med / 1e3, mx / 1e3, why);
	fflush(f);
}

static bool should_stop(const struct snap_cli *c, uint64_t seq, const char **why)
{
	if (!c->interval_ms) {
		*why = "single snapshot";
		return true;
	}
	if (c->count && seq >= (uint64_t)c->count) {
		*why = "the count was reached";
		return true;
	}
	if (c->duration > 0 && (cli_now_ns() - c->first_ns) / 1e9 >= c->duration) {
		*why = "the duration elapsed";
		return true;
	}
	return false;
}

/* After the first cycle: let a spawned child run; start write tracking. */
static int after_first(struct snap_cli *c, struct ml_err *err)
{
	int r;

	if (c->writes) {
		struct profiler_opts po = { .target_stopped = c->child != 0 };

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

static int run_cycles(struct snap_cli *c, struct snapshotter *sn, const sigset_t *sigs,
		      const char **why, struct ml_err *err)
{
	struct snapshot a, b, *cur = &a, *prev = &b;
	struct snapshot_diff d;
	uint64_t seq = 0, next;
	int r = 0;

	ml_snapshot_init(&a);
	ml_snapshot_init(&b);
	ml_snapshot_diff_init(&d);
	next = cli_now_ns();
	for (;;) {
		r = ml_snapshot_take(sn, cur, err);
		if (!r && c->prof && seq > 0)
			r = add_written(c, cur, err);
		if (r == -ESRCH && seq > 0) {
			*why = "the target exited";
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
			*why = "error"; /* a write failed: out_close() says which */
			r = -EIO;
			c->write_failed = true;
			break;
		}
		note_cycle(c, cur->cycle_ns / 1000);
		struct snapshot *t = prev;
		prev = cur;
		cur = t;
		if (seq == 1 && (r = after_first(c, err)))
			break;
		if (should_stop(c, seq, why))
			break;
		next += (uint64_t)c->interval_ms * 1000000ULL;
		if (next < cli_now_ns()) /* fell behind: a new cadence from now */
			next = cli_now_ns();
		if (wait_until(sigs, next)) {
			*why = "interrupted";
			break;
		}
	}
	if (r && seq <= 1 && c->child && !c->prof)
		ml_spawn_release(c->child, NULL);
	if (!c->write_failed && c->rec && c->rec != stdout && out_flush(c->rec)) {
		c->write_failed = true; /* never a summary of records that were lost */
		*why = "error";
		r = -EIO;
	}
	if (!c->write_failed)
		summary(c, seq ? prev : NULL, *why);
	ml_snapshot_diff_free(&d);
	ml_snapshot_free(&a);
	ml_snapshot_free(&b);
	return r;
}

/* We started the command: stop it (SIGTERM, SIGKILL after 2 s) unless it exited. */
static int reap_child(struct snap_cli *c, const char *why, int rc)
{
	bool exited = !strcmp(why, "the target exited");
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
	struct snapshot_opts so = { 0 };
	struct snapshotter *sn = NULL;
	struct ml_err err = { 0 };
	const char *why = "error";
	sigset_t sigs;
	int r, rc = EXIT_OK;

	r = parse_args(&c, argc, argv);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	if (open_output(&c))
		return EXIT_FAIL;
	if (!c.pid) {
		/* before blocking signals: the command inherits the signal mask */
		c.child = ml_spawn_stopped(argv + optind, &err);
		if (c.child < 0) {
			cli_error("snapshot", "%s", err.msg);
			rc = err.code == ENOENT ? 127 : exit_code_for(-err.code);
			goto out;
		}
		c.pid = c.child;
	}
	cli_block_signals(&sigs);
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
		why = "error";
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
	} else if (!strcmp(why, "the target exited") && !c.rec) {
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
		"what a process's memory looks like: per-VMA resident/swapped/file/huge pages",
		cmd_snapshot);
