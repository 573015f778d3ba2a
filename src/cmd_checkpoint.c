// SPDX-License-Identifier: MIT
/*
 * memlens checkpoint: profile a process, then checkpoint it with CRIU,
 * leaving its hot memory out of pre-dumps when the CRIU in use can
 *: profile -> release -> CRIU -> re-init.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_target.h"
#include "cliutil.h"
#include "table.h"
#include "tree_rows.h"
#include "command.h"
#include "criu_cli.h"
#include "opts.h"
#include "output.h"
#include "memlens/criu.h"
#include "memlens/format_checkpoint.h"
#include "memlens/heat.h"
#include "memlens/profiler.h"

static const char about[] =
	"Profile where PID and every process of its tree write for a few seconds, then\n"
	"checkpoint them with CRIU. Only a pre-dump (--pre-dump) leaves the hot memory\n"
	"out, and only with a CRIU that has the exclude options: the CRIU 4.1.1 that\n"
	"scripts/ensure-criu.sh builds with memlens's patches leaves out hot pages, per\n"
	"process; an older CRIU fork of 4.0, every VMA a hot range touches, whole;\n"
	"upstream CRIU nothing (the report says so). A dump always writes every VMA.\n"
	"The profiler lets go of the target while CRIU runs and tracks it again\n"
	"afterwards.\n";

static const char footer[] =
	"CRIU runs with CRIU_FAULT=130 (no hardware breakpoints): on some VMs its dump\n"
	"hangs otherwise. Exit status: 0 ok, 1 CRIU failed (see its log), 2 usage,\n"
	"3 no such process / it exited, 4 permission denied, 5 missing kernel feature\n"
	"or CRIU, 6 CRIU would refuse the tree (each process, resource and fix named;\n"
	"nothing frozen; --check-only stops there).\n"
	"On Linux 6.16 and later, CRIU before 4.2 (4.1.1 too) cannot dump a TCP or UDP\n"
	"socket: give CRIU 4.2 or newer with --criu PATH.\n";

struct ckpt_cli {
	struct ml_criu_dump_req req;
	const char *criu;
	struct criu_cli_opts extra;
	char ps_host[256];
	double profile_s, resume_s;
	unsigned int interval_ms, timeout_s;
	double hot_threshold; /* 0: the profiler's default */
	int hot_consecutive, hot_cool;
	unsigned int hot_ranges_max;
	unsigned int sample_k; /* --sample 1/K; 0: every page */
	double max_overhead; /* --max-overhead, percent of one CPU */
	double max_error; /* --max-error, percent */
	bool json;
	bool check_only; /* --check-only: the preflight, then exit */
};

struct ckpt_ticks {
	pthread_mutex_t lock;
	uint64_t after; /* ticks since the re-init */
	bool counting;
	struct ml_profiler_sample first; /* first interval after the re-init */
	bool have_first;
	/* the processes of the tree in the last interval before the checkpoint */
	struct ml_profiler_proc *procs;
	size_t nprocs;
	uint64_t procs_hot_bytes; /* the tree's totals then: shared memory once */
	int64_t procs_dirty_bytes;
};

static void on_tick(const struct ml_profiler_sample *s, void *arg)
{
	struct ckpt_ticks *t = arg;

	pthread_mutex_lock(&t->lock);
	if (!t->counting && s->nprocs) {
		struct ml_profiler_proc *v = realloc(t->procs, s->nprocs * sizeof(*v));

		if (v) {
			memcpy(v, s->procs, s->nprocs * sizeof(*v));
			t->procs = v;
			t->nprocs = s->nprocs;
			t->procs_hot_bytes = s->hot.hot_bytes;
			t->procs_dirty_bytes = s->dirty.cumulative_dirty_bytes;
		}
	}
	if (t->counting && !t->have_first && !ml_profiler_sample_copy(&t->first, s))
		t->have_first = true;
	if (t->counting)
		t->after++;
	pthread_mutex_unlock(&t->lock);
}

static int parse_page_server(void *target, const char *arg, char *why, size_t len)
{
	struct ckpt_cli *c = target;
	const char *colon = strrchr(arg, ':');
	long port;

	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(c->ps_host) ||
	    parse_long(colon + 1, 1, 65535, &port)) {
		snprintf(why, len, "must be HOST:PORT with a port 1..65535");
		return -1;
	}
	snprintf(c->ps_host, sizeof(c->ps_host), "%.*s", (int)(colon - arg), arg);
	c->req.page_server_addr = c->ps_host;
	c->req.page_server_port = (int)port;
	return 0;
}

/*
 * --parent must name the images of an earlier (pre-)dump: CRIU reads the
 * parent's inventory.img (both a dump and a pre-dump write it) and fails
 * late, after the profiling, without it. Refuse it before anything runs.
 */
static int check_parent(const char *parent, const char *images)
{
	static const char what[] = "give the -D DIR of an earlier `memlens checkpoint` "
				   "(a dump or a pre-dump) of this process, or leave --parent out";
	char inv[PATH_MAX + 16], a[PATH_MAX], b[PATH_MAX];
	struct stat st;

	if (stat(parent, &st) < 0) {
		int e = errno;

		if (e == ENOENT || e == ENOTDIR)
			return cli_usage_error("checkpoint", "--parent %s does not exist; %s",
					       parent, what);
		cli_error("checkpoint", "--parent %s: %s", parent, strerror(e));
		return exit_code_for(-e);
	}
	if (!S_ISDIR(st.st_mode))
		return cli_usage_error("checkpoint", "--parent %s is not a directory; %s", parent,
				       what);
	snprintf(inv, sizeof(inv), "%s/inventory.img", parent);
	if (access(inv, R_OK) < 0) {
		int e = errno;

		if (e == ENOENT)
			return cli_usage_error("checkpoint",
					       "--parent %s holds no CRIU images (no "
					       "inventory.img); %s",
					       parent, what);
		cli_error("checkpoint", "--parent %s: %s: %s", parent, inv, strerror(e));
		return exit_code_for(-e);
	}
	if (realpath(parent, a) && realpath(images, b) && !strcmp(a, b))
		return cli_usage_error("checkpoint",
				       "--parent %s is the -D directory itself; give the new "
				       "images a directory of their own",
				       parent);
	return 0;
}

static int parse_args(int argc, char **argv, struct ckpt_cli *c)
{
	const char *out = NULL;
	long iv = 0;
	struct cli_opt opts[] = {
		CLI_OPT_PID(&c->req.pid, "the process to checkpoint (required)"),
		CLI_OPT_IMAGES_DIR(&c->req.images_dir,
				   "CRIU images directory (required; created 0700)"),
		{ .name = "pre-dump",
		  .kind = CLI_FLAG,
		  .target = &c->req.pre_dump,
		  .help = "`criu pre-dump` (needs soft-dirty page tracking in the kernel)" },
		{ .name = "parent",
		  .arg = "DIR",
		  .kind = CLI_STR,
		  .target = &c->req.parent_dir,
		  .help = "images of the previous (pre-)dump (--prev-images-dir)" },
		{ .letter = 'R',
		  .name = "leave-running",
		  .kind = CLI_FLAG,
		  .target = &c->req.leave_running,
		  .help = "leave the target running after the dump" },
		{ .name = "page-server",
		  .arg = "HOST:PORT",
		  .kind = CLI_FUNC,
		  .target = c,
		  .fn = parse_page_server,
		  .help = "send the pages to a `criu page-server`" },
		CLI_OPT_DURATION(&c->profile_s, 0,
				 "profile SEC seconds first to find the hot memory (default 5; "
				 "0: no profiling, nothing excluded)"),
		CLI_OPT_INTERVAL(&iv, 10, 600000, "profiling interval (default 1000)"),
		CLI_OPT_THRESHOLD(&c->hot_threshold,
				  "written ratio above which an interval is hot (default 0.3)"),
		CLI_OPT_CONSECUTIVE(&c->hot_consecutive, ML_HEAT_WINDOW,
				    "intervals written in a row before a page (a VMA with a "
				    "CRIU that leaves out whole VMAs) is hot (default 3)"),
		CLI_OPT_COOL(&c->hot_cool, "unwritten intervals in a row before a hot page "
					   "is cold again (default: -c)"),
		CLI_OPT_HOT_RANGES(&c->hot_ranges_max,
				   "hot ranges left out at most, the smallest gaps between "
				   "them merged beyond that (default 16384)"),
		CLI_OPT_SAMPLE(&c->sample_k,
			       "profile with only this fraction of each VMA's pages "
			       "write-protected each interval (0.1 or 1/10, rotating): hot "
			       "memory estimated, for a fraction of the cost to the target "
			       "(default: every page)"),
		CLI_OPT_MAX_OVERHEAD(&c->max_overhead,
				     "keep what profiling costs each process under PCT% of one "
				     "CPU, sampling fewer pages while it would not be"),
		CLI_OPT_MAX_ERROR(&c->max_error,
				  "sample as few pages as keep each VMA's estimated written "
				  "pages within a standard error of PCT% of them, as many as "
				  "--max-overhead allows (default 1): every page to start with, "
				  "then down to --sample's fraction (default 1/10)"),
		{ .name = "resume-seconds",
		  .arg = "SEC",
		  .kind = CLI_DOUBLE,
		  .target = &c->resume_s,
		  .min = 0,
		  .max = 86400,
		  .help = "after the checkpoint, profile SEC more seconds and report the first "
			  "interval (default 0)" },
		CLI_OPT_CRIU(&c->criu, "the CRIU binary (default: $MEMLENS_CRIU, then criu on "
				       "PATH, then the one scripts/ensure-criu.sh built)"),
		CLI_OPT_TIMEOUT(&c->timeout_s, "kill CRIU after SEC seconds (default 120)"),
		CLI_OPT_SHELL_JOB(&c->req.shell_job,
				  "pass --shell-job (target attached to a terminal)"),
		{ .name = "no-exclude",
		  .kind = CLI_FLAG,
		  .target = &c->req.no_exclude,
		  .help = "never pass exclude options" },
		CLI_OPT_TCP(&c->req.tcp, criu_cli_tcp_fn, CRIU_CLI_TCP_HELP),
		CLI_OPT_CRIU_OPT(&c->extra, criu_cli_opt_fn,
				 "pass one more option to criu dump, e.g. --ext-unix-sk "
				 "(repeatable; memlens restore repeats those a restore needs)"),
		{ .name = "check-only",
		  .kind = CLI_FLAG,
		  .target = &c->check_only,
		  .help = CRIU_CLI_CHECK_ONLY_HELP },
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_OUTPUT(&out,
			       "write what would go to stdout (text, or JSON with --json) to FILE"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "checkpoint",
				 .synopsis = "-p PID -D DIR",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	int r, first;

	c->profile_s = 5;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	c->interval_ms = (unsigned int)iv;
	if (c->extra.n)
		c->req.extra_args = c->extra.v;
	if (!c->req.pid || !c->req.images_dir)
		return cli_usage_error("checkpoint", "-p PID and -D DIR are required");
	if (c->req.parent_dir) {
		r = check_parent(c->req.parent_dir, c->req.images_dir);
		if (r)
			return r;
	}
	return out_option("checkpoint", out);
}

/*
 * A VMA is hot after -c intervals in a row: a profile shorter than that
 * can find none. Say so before profiling for nothing.
 */
static void warn_too_short(const struct ckpt_cli *c)
{
	unsigned int iv = c->interval_ms ? c->interval_ms : ML_PROFILER_DEFAULT_INTERVAL_MS;
	int cons = c->hot_consecutive ? c->hot_consecutive : ML_HEAT_DEFAULT_CONSECUTIVE;
	long n = (long)(c->profile_s * 1000 / iv);

	if (c->profile_s > 0 && n < cons)
		fprintf(stderr,
			"memlens checkpoint: profiling %g s gives %ld interval%s of %u ms, but a "
			"VMA is hot only after %d in a row (-c %d): none can be found and nothing "
			"will be excluded; profile longer (-d %g), or give a shorter -i or a "
			"smaller -c\n",
			c->profile_s, n, n == 1 ? "" : "s", iv, cons, cons,
			(double)cons * iv / 1000 + (double)iv / 1000);
}

struct ckpt_out {
	const struct ckpt_cli *c;
	const struct ml_criu_caps *caps;
	const struct ml_criu_result *res;
	const struct ml_rangeset *hot;
	const struct ckpt_ticks *ticks;
	bool profiled;
	int rc;
	const char *error;
	const struct ml_criu_preflight *pf; /* NULL: it did not run */
	bool stopped; /* at the preflight: refused, or --check-only */
};

/* The "checkpoint" line (memlens/format_checkpoint.h). */
static void print_json(const struct ckpt_out *o)
{
	const struct ml_criu_result *r = o->res;
	const struct ml_criu_exclude_report *x = &r->exclude;
	const struct ml_profiler_sample *f = &o->ticks->first;
	struct ml_checkpoint_rec rec = {
		.pid = o->c->req.pid,
		.images_dir = o->c->req.images_dir,
		.pre_dump = o->c->req.pre_dump,
		.ok = o->rc == EXIT_OK,
		.exit_code = o->rc,
		.command = r->cmdline,
		.criu_ran = r->ran,
		.criu_exit_status = r->exit_status,
		.timed_out = r->timed_out,
		.duration_ms = r->duration_ms,
		.image_bytes = r->image_bytes,
		.bytes_written = r->bytes_written,
		.pages_written = r->pages_written,
		.shpages_written = r->shpages_written,
		.pages_scanned = r->pages_scanned,
		.pages_skipped_parent = r->pages_skipped_parent,
		.hot_ranges = o->hot->r,
		.nhot_ranges = o->hot->n,
		.exclusion = { .applied = x->nexclude || x->nno_parent,
			       .skipped = x->skipped,
			       .exclude_ranges = x->nexclude,
			       .no_parent_ranges = x->nno_parent,
			       .exclude_file_used = x->used_file,
			       .granularity = x->granularity,
			       .note = x->note },
		.profiler = { .profiled = o->profiled,
			      .reinit = r->profiler_reinit,
			      .note = r->profiler_note,
			      .resumed_intervals = o->ticks->after,
			      .procs = o->ticks->procs,
			      .nprocs = o->ticks->nprocs,
			      .procs_hot_bytes = o->ticks->procs_hot_bytes,
			      .procs_dirty_bytes = o->ticks->procs_dirty_bytes,
			      .has_resumed = o->ticks->have_first,
			      .resumed_tracked_vmas = f->tracked_vmas,
			      .resumed_dirty_pages = f->dirty.dirty_pages,
			      .resumed_cumulative_dirty_bytes = f->dirty.cumulative_dirty_bytes },
		.tcp = ml_criu_tcp_name(o->c->req.tcp),
		.log = r->log_path,
		.hint = r->hint,
		.error = o->error,
	};
	struct ml_jw w;

	rec.preflight = o->pf;
	rec.check_only = o->c->check_only;
	ml_fmt_criu_caps_of(&rec.criu, o->caps);
	ml_jw_init(&w, stdout);
	ml_fmt_checkpoint(&w, &rec);
}

/* Stopped before CRIU ran: what the preflight found. */
static void print_stopped(const struct ckpt_out *o, int width)
{
	const struct ml_criu_preflight *p = o->pf;

	table_wrap(stdout, width, 13, "check of pid %d's tree for a %s: %s", (int)o->c->req.pid,
		   o->c->req.pre_dump ? "pre-dump" : "dump",
		   o->rc == EXIT_OK	   ? "nothing CRIU would refuse was found"
		   : o->rc == EXIT_REFUSED ? "CRIU would refuse it"
					   : "FAILED");
	table_wrap(stdout, width, 13, "  criu:      %s (version %s)", o->caps->path,
		   o->caps->version);
	if (!p)
		return;
	table_wrap(stdout, width, 13, "  processes: %zu inspected; %zu finding(s), %zu refused%s",
		   p->nprocs, p->nfound, p->nrefused,
		   p->nrefused && !o->c->check_only ? " (named above)" : "");
	for (size_t i = 0; i < p->n && o->c->check_only; i++)
		table_wrap(stdout, width, 13, "  %-10s pid %d (%s): %s; %s%s",
			   p->f[i].absorbed ? "absorbed:" : "refused:", (int)p->f[i].pid,
			   p->f[i].comm, p->f[i].resource,
			   p->f[i].absorbed ? "" : "fix: ", p->f[i].fix);
}

static void print_human(const struct ckpt_out *o)
{
	const struct ml_criu_result *r = o->res;
	int width = table_width(stdout);
	char b[16];

	if (o->stopped) {
		print_stopped(o, width);
		return;
	}
	table_wrap(stdout, width, 13, "%s of pid %d into %s: %s",
		   o->c->req.pre_dump ? "pre-dump" : "dump", (int)o->c->req.pid,
		   o->c->req.images_dir, o->rc == EXIT_OK ? "ok" : "FAILED");
	table_wrap(stdout, width, 13, "  criu:      %s (version %s)", o->caps->path,
		   o->caps->version);
	if (r->ran) {
		table_wrap(stdout, width, 13, "  command:   %s", r->cmdline);
		table_wrap(stdout, width, 13, "  status:    exit %d%s, %.2f s", r->exit_status,
			   r->timed_out ? " (killed: timed out)" : "", r->duration_ms / 1000.0);
	}
	if (o->rc == EXIT_OK)
		table_wrap(stdout, width, 13,
			   "  written:   %s%s; pages written %lld, shared memory pages %lld "
			   "(scanned %lld, skipped because in the parent %lld)",
			   ml_fmt_bytes(r->bytes_written, b, sizeof(b)),
			   o->c->req.page_server_port ? " (images here and pages sent)"
						      : " of images",
			   (long long)r->pages_written, (long long)r->shpages_written,
			   (long long)r->pages_scanned, (long long)r->pages_skipped_parent);
	table_wrap(stdout, width, 13, "  hot:       %zu range(s), %s", o->hot->n,
		   ml_fmt_bytes(ml_rangeset_bytes(o->hot), b, sizeof(b)));
	table_wrap(stdout, width, 13, "  exclusion: %s",
		   r->exclude.note[0] ? r->exclude.note : "none");
	if (o->profiled)
		table_wrap(stdout, width, 13, "  profiler:  %s%s",
			   r->profiler_reinit ? "re-initialised" : "", r->profiler_note);
	if (o->ticks->nprocs) {
		struct tree_rows tr = { .label = "  processes: ",
					.procs = o->ticks->procs,
					.n = o->ticks->nprocs,
					.total = o->ticks->nprocs,
					.profiled = true,
					.hot_bytes = o->ticks->procs_hot_bytes,
					.dirty_bytes = o->ticks->procs_dirty_bytes };

		tree_rows_print(stdout, &tr);
	}
	if (o->ticks->have_first)
		table_wrap(stdout, width, 13,
			   "  resumed:   %llu interval(s); first: %d VMAs tracked, %lld pages "
			   "written",
			   (unsigned long long)o->ticks->after, o->ticks->first.tracked_vmas,
			   (long long)o->ticks->first.dirty.dirty_pages);
	if (o->rc != EXIT_OK && r->ran)
		table_wrap(stdout, width, 13, "  log:       %s", r->log_path);
}

/* Sleep @secs, or until a signal or the profiler stops. -EINTR / -ESRCH. */
static int wait_profiling(struct ml_profiler *p, const sigset_t *sigs, double secs)
{
	uint64_t t0 = ml_mono_ns();

	while ((ml_mono_ns() - t0) / 1e9 < secs) {
		if (cli_wait_signal(sigs, 50))
			return -EINTR;
		if (p && !ml_profiler_running(p))
			return ml_profiler_error(p, NULL) ? ml_profiler_error(p, NULL) : -ESRCH;
	}
	return 0;
}

static int start_profiling(struct ckpt_cli *c, struct ckpt_ticks *t, const sigset_t *sigs,
			   struct ml_profiler **pp)
{
	ML_OPTS(ml_profiler_opts, po, .interval_ms = c->interval_ms,
		.hot_threshold = c->hot_threshold, .hot_consecutive = c->hot_consecutive,
		.hot_cool = c->hot_cool,
		.hot_ranges_max = c->hot_ranges_max ? c->hot_ranges_max : ML_HOTRANGE_EXCLUDE_MAX,
		.sample_k = c->sample_k, .max_overhead = c->max_overhead / 100,
		.max_error = c->max_error / 100, .tree = true /* CRIU dumps the whole tree */);
	struct ml_err err = { 0 };
	int r;

	r = ml_profiler_open(pp, c->req.pid, &po, &err);
	if (!r)
		r = ml_profiler_start(*pp, on_tick, t, &err);
	if (r) {
		cli_error("checkpoint", "profiling pid %d: %s", (int)c->req.pid, err.msg);
		return r;
	}
	fprintf(stderr,
		"memlens checkpoint: profiling pid %d for %g s (an interval every %u ms) to find "
		"its hot memory...\n",
		(int)c->req.pid, c->profile_s, c->interval_ms ? c->interval_ms : 1000);
	r = wait_profiling(*pp, sigs, c->profile_s);
	if (r == -EINTR)
		cli_error("checkpoint", "interrupted while profiling; nothing was checkpointed");
	else if (r)
		cli_error("checkpoint",
			  "the target %d exited while being profiled; nothing was "
			  "checkpointed",
			  (int)c->req.pid);
	return r;
}

static int run_criu(struct ckpt_cli *c, const struct ml_criu_caps *caps, struct ml_profiler *p,
		    struct ckpt_ticks *t, struct ml_criu_result *res, struct ml_rangeset *hot,
		    struct ml_err *err)
{
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = c->timeout_s * 1000);
	struct ml_criu_session *s;
	int r = ml_criu_session_open(&s, caps, &ro, err);

	if (r)
		return r;
	pthread_mutex_lock(&t->lock);
	t->counting = true;
	pthread_mutex_unlock(&t->lock);
	fprintf(stderr, "memlens checkpoint: running criu %s on pid %d (time limit %u s)...\n",
		c->req.pre_dump ? "pre-dump" : "dump", (int)c->req.pid,
		c->timeout_s ? c->timeout_s : ML_CRIU_DEFAULT_TIMEOUT_MS / 1000);
	r = ml_criu_checkpoint(s, p, &c->req, res, hot, err);
	ml_criu_session_close(s);
	return r;
}

static int checkpoint(struct ckpt_cli *c, const struct ml_criu_caps *caps, struct ckpt_out *o,
		      struct ckpt_ticks *t, const sigset_t *sigs)
{
	static struct ml_err err;
	struct ml_profiler *p = NULL;
	int r = 0;

	if (c->profile_s > 0) {
		r = start_profiling(c, t, sigs, &p);
		o->profiled = !r;
		if (r)
			goto out;
	}
	r = run_criu(c, caps, p, t, (struct ml_criu_result *)o->res, (struct ml_rangeset *)o->hot,
		     &err);
	if (r) {
		cli_error("checkpoint", "%s", err.msg);
		o->error = err.msg;
		goto out;
	}
	if (p && o->res->profiler_reinit && c->resume_s > 0) {
		fprintf(stderr, "memlens checkpoint: profiling again for %g s...\n", c->resume_s);
		wait_profiling(p, sigs, c->resume_s);
	}
out:
	if (p)
		ml_profiler_close(p);
	return r;
}

/*
 * Before anything is profiled or frozen: what CRIU would refuse (and, with
 * --check-only, CRIU's own check). The exit code when the command stops
 * here (refused, --check-only, an error), else -1: go on.
 */
static int preflight(struct ckpt_cli *c, const struct ml_criu_caps *caps, struct ckpt_out *o)
{
	static struct ml_criu_preflight pf;
	static char hint[768];
	ML_OPTS(ml_criu_preflight_opts, po, .tcp = c->req.tcp, .extra_args = c->req.extra_args,
		.shell_job = c->req.shell_job, .pre_dump = c->req.pre_dump);
	int rc = criu_cli_preflight("checkpoint", c->req.pid, caps, &po, c->json || c->check_only,
				    c->check_only && !c->json, &pf);

	o->pf = &pf;
	if (!rc && c->check_only && !c->req.pre_dump) {
		rc = criu_cli_check_only("checkpoint", caps, &c->req, c->timeout_s, hint,
					 sizeof(hint));
		((struct ml_criu_result *)o->res)->hint[0] = '\0';
		snprintf(((struct ml_criu_result *)o->res)->hint, sizeof(o->res->hint), "%s", hint);
	}
	if (!rc && !c->check_only)
		return -1;
	o->stopped = true;
	o->rc = rc;
	if (rc == EXIT_REFUSED)
		o->error = "CRIU would refuse the process tree; nothing was frozen";
	if (c->json)
		print_json(o);
	else
		print_human(o);
	return rc;
}

static int cmd_checkpoint(int argc, char **argv)
{
	struct ckpt_ticks t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ckpt_cli c = { 0 };
	struct ml_criu_caps caps;
	struct ml_criu_result res;
	struct ml_rangeset hot;
	struct ckpt_out o = { .c = &c, .caps = &caps, .res = &res, .hot = &hot, .ticks = &t };
	struct ml_err err = { 0 };
	sigset_t sigs;
	int rc;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	rc = cli_check_pid("checkpoint", c.req.pid);
	if (rc)
		return rc;
	warn_too_short(&c);
	rc = ml_criu_dump_target_check(c.req.pid, &err);
	if (rc) { /* -EINVAL: a session CRIU cannot see, which it refuses */
		cli_error("checkpoint", "%s", err.msg);
		return rc == -EINVAL ? EXIT_REFUSED : exit_code_for(rc);
	}
	rc = criu_cli_setup("checkpoint", c.criu,
			    c.timeout_s ? c.timeout_s * 1000 : ML_CRIU_DEFAULT_TIMEOUT_MS, &caps);
	if (rc)
		return rc;
	memset(&res, 0, sizeof(res));
	res.exit_status = -1;
	res.pages_written = res.pages_scanned = res.pages_skipped_parent = -1;
	res.shpages_written = -1;
	ml_rangeset_init(&hot);
	rc = preflight(&c, &caps, &o);
	if (rc >= 0)
		return rc;
	if (c.req.pre_dump && !caps.mem_dirty_track) {
		cli_error("checkpoint",
			  "--pre-dump needs soft-dirty page tracking, which this "
			  "kernel lacks (CONFIG_MEM_SOFT_DIRTY is not set: `criu check --feature "
			  "mem_dirty_track` fails); CRIU was not run. Take a full dump (drop "
			  "--pre-dump), or model pre-copy rounds with `memlens migrate-model`");
		return EXIT_NOFEATURE;
	}
	cli_block_signals(&sigs);
	rc = checkpoint(&c, &caps, &o, &t, &sigs);
	o.rc = rc = rc ? exit_code_for(rc) : EXIT_OK;
	if (c.json)
		print_json(&o);
	else
		print_human(&o);
	ml_rangeset_free(&hot);
	ml_profiler_sample_free(&t.first);
	free(t.procs);
	return rc;
}

MEMLENS_COMMAND(checkpoint, "checkpoint", 15,
		"profile, then checkpoint with CRIU, leaving hot memory out", cmd_checkpoint);
