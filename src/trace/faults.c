// SPDX-License-Identifier: MIT
/* memlens faults: minor/major page faults per comm or pid, with latency histograms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "memlens/format_faults.h"
#include "memlens/opts.h"
#include "memlens/trace_faults.h"
#include "opts.h"
#include "../table.h"
#include "trace.h"

static const char about[] =
	"Count minor and major page faults (eBPF), per command name system-wide or\n"
	"for one process, and histogram how long each took (log2 buckets of us).\n";

static const char footer[] =
	"A major fault is one that needed I/O, as the kernel counts it (getrusage):\n"
	"a fault retried with FAULT_FLAG_TRIED is counted once, as major.\n"
	"'retried' counts the faults completed by a FAULT_FLAG_TRIED retry (fentry mode\n"
	"only; the tracepoint mode cannot see retries and shows '-' / null).\n"
	"\n"
	"With -p or --, the kernel's own counters of the process (what getrusage()\n"
	"reports) are read too and shown next to the counts. The tracepoint mode\n"
	"cannot see faults taken inside the kernel by get_user_pages() for a system\n"
	"call (process_vm_readv, ptrace reads, O_DIRECT, io_uring, mlock,\n"
	"MAP_POPULATE, MADV_POPULATE_*, execve's argument copy): the report says how\n"
	"many the kernel counted that it did not see. With -- CMD it also gives the\n"
	"faults of CMD before tracing began (from its fork to the end of its execve).\n";

struct faults_opts {
	pid_t pid;
	double duration;
	bool json;
	int verbose;
	enum ml_faults_mode mode; /* --mode's choices are in its order */
	char **cmd;
};

struct faults_run {
	struct ml_faults_tracer *t;
	struct ml_faults_tracer_info info;
	bool fentry;
	const struct faults_opts *o;
	struct ml_faults_row *prev; /* the counts at the last interval */
	size_t nprev;
	uint64_t prev_minor[ML_FAULTS_HIST_SLOTS], prev_major[ML_FAULTS_HIST_SLOTS];
	struct ml_faults_kernel kern;
};

static int parse_args(int argc, char **argv, struct faults_opts *o)
{
	static const char *const modes[] = { "auto", "fentry", "tracepoint", NULL };
	struct cli_opt opts[16];
	struct cli_spec spec = { .cmd = "faults",
				 .synopsis = "[-p PID | -- CMD [ARGS...]]",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	int n, r, first;

	memset(o, 0, sizeof(*o));
	n = trace_common_opts(opts, &o->pid, &o->duration, &o->json, &o->verbose,
			      "one summary object on stdout (JSON Lines)");
	opts[n++] = (struct cli_opt){ .name = "mode",
				      .arg = "MODE",
				      .kind = CLI_CHOICE,
				      .target = &o->mode,
				      .choices = modes,
				      .help = "auto (default), fentry (fentry/fexit "
					      "handle_mm_fault) or tracepoint "
					      "(page_fault_user/kernel + perf events)" };
	opts[n] = (struct cli_opt)CLI_OPT_END;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	if (first < argc)
		o->cmd = argv + first;
	if (o->cmd && o->pid)
		return cli_usage_error("faults", "give -p PID or -- CMD, not both");
	return 0;
}

static void seen_totals(const struct ml_faults_row *rows, size_t n, uint64_t *min, uint64_t *maj)
{
	*min = *maj = 0;
	for (size_t i = 0; i < n; i++) {
		*min += rows[i].minor;
		*maj += rows[i].major;
	}
}

/* the kernel counted more than the programs saw (never less but by a race) */
static uint64_t unseen(uint64_t kernel, uint64_t seen)
{
	return kernel > seen ? kernel - seen : 0;
}

#define UNSEEN_PATHS                                                                               \
	"get_user_pages() faulting pages in for a system call (process_vm_readv, ptrace "          \
	"reads, O_DIRECT, io_uring, mlock, MAP_POPULATE, MADV_POPULATE_*, execve's argument "      \
	"copy): no user registers, so no perf event"

/* what one report shows: the whole run, or one interval */
struct faults_view {
	const struct ml_faults_row *rows;
	size_t n;
	const uint64_t *minor_hist, *major_hist;
	uint64_t recursion_misses;
	double elapsed_s; /* < 0: the whole run */
	bool last;
};

static void print_kernel(const struct faults_run *r, const struct faults_view *v)
{
	int width = table_width(stdout);
	uint64_t smin, smaj;

	if (!r->o->pid) {
		if (!r->fentry)
			table_wrap(
				stdout, width, 2,
				"not seen in tracepoint mode: faults taken inside the kernel by %s "
				"(with -p or -- CMD memlens says how many)",
				UNSEEN_PATHS);
		return;
	}
	if (!r->kern.known) {
		table_wrap(stdout, width, 2,
			   "the kernel's own counters of pid %d could not be read for every thread "
			   "(one vanished unseen)",
			   (int)r->o->pid);
		return;
	}
	seen_totals(v->rows, v->n, &smin, &smaj);
	table_wrap(stdout, width, 2,
		   "the kernel's own counters of pid %d while traced (getrusage): %llu minor, "
		   "%llu major",
		   (int)r->o->pid, (unsigned long long)r->kern.minor,
		   (unsigned long long)r->kern.major);
	if (!r->fentry || unseen(r->kern.minor, smin) || unseen(r->kern.major, smaj))
		table_wrap(stdout, width, 2, "not seen in %s mode: %llu minor, %llu major%s%s",
			   r->fentry ? "fentry" : "tracepoint",
			   (unsigned long long)unseen(r->kern.minor, smin),
			   (unsigned long long)unseen(r->kern.major, smaj),
			   r->fentry ? "" : ": faults taken inside the kernel by ",
			   r->fentry ? "" : UNSEEN_PATHS);
	if (r->kern.before)
		table_wrap(
			stdout, width, 2,
			"before tracing (from its fork to the end of its execve): %llu minor, %llu "
			"major",
			(unsigned long long)r->kern.before_minor,
			(unsigned long long)r->kern.before_major);
}

_Static_assert(ML_FAULTS_HIST_SLOTS <= ML_FAULTS_REC_HIST_MAX, "the record holds every slot");

/* The record of @v: the run's also says what the kernel counted (memlens/format_faults.h). */
static void print_json(const struct faults_run *r, const struct faults_view *v)
{
	struct ml_faults_rec rec = { .interval = v->elapsed_s >= 0,
				     .elapsed_ms = v->elapsed_s >= 0
							   ? (uint64_t)(v->elapsed_s * 1000)
							   : 0,
				     .last = v->last,
				     .recursion_misses = v->recursion_misses,
				     .nrows = v->n,
				     .nminor = ML_FAULTS_HIST_SLOTS,
				     .nmajor = ML_FAULTS_HIST_SLOTS,
				     .has_kernel = r->o->pid && r->kern.known,
				     .kernel = { r->kern.minor, r->kern.major },
				     .has_before = r->o->pid && r->kern.before,
				     .before = { r->kern.before_minor, r->kern.before_major } };
	uint64_t smin, smaj;
	struct ml_jw w;

	snprintf(rec.mode, sizeof(rec.mode), "%s", r->fentry ? "fentry" : "tracepoint");
	snprintf(rec.not_seen_paths, sizeof(rec.not_seen_paths), "%s",
		 r->fentry ? "" : "get_user_pages");
	seen_totals(v->rows, v->n, &smin, &smaj);
	rec.not_seen.minor = unseen(r->kern.minor, smin);
	rec.not_seen.major = unseen(r->kern.major, smaj);
	for (int i = 0; i < ML_FAULTS_HIST_SLOTS; i++) {
		rec.minor_hist[i] = v->minor_hist[i];
		rec.major_hist[i] = v->major_hist[i];
	}
	rec.rows = calloc(v->n ? v->n : 1, sizeof(*rec.rows));
	if (!rec.rows) {
		cli_error("faults", "out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct ml_faults_row *row = &v->rows[i];
		struct ml_faults_row_rec *o = &rec.rows[i];

		snprintf(o->comm, sizeof(o->comm), "%s", row->comm);
		o->pid = row->pid ? (int64_t)row->pid : -1;
		o->minor = row->minor;
		o->major = row->major;
		o->retried = row->retried;
		o->has_retried = r->fentry;
	}
	ml_jw_init(&w, stdout);
	ml_fmt_faults(&w, &rec);
	ml_fmt_faults_free(&rec);
}

/* A latency histogram; one line when it is empty. */
static void print_hist(const char *kind, const uint64_t *slots)
{
	__u64 h[ML_FAULTS_HIST_SLOTS];
	uint64_t n = 0;

	for (int i = 0; i < ML_FAULTS_HIST_SLOTS; i++)
		n += slots[i];
	if (!n) {
		printf("\n%s fault latency: no %s faults\n", kind, kind);
		return;
	}
	for (int i = 0; i < ML_FAULTS_HIST_SLOTS; i++)
		h[i] = slots[i];
	printf("\n%s fault latency\n", kind);
	trace_print_log2_hist(stdout, h, ML_FAULTS_HIST_SLOTS, "usecs");
}

/*
 * Nothing to show: no fault seen, none missed, and with a target the
 * kernel's own counters agree (none there either). One line says it.
 */
static bool print_none(const struct faults_run *r, const struct faults_view *v, uint64_t rec)
{
	if (v->n || rec)
		return false;
	if (v->elapsed_s >= 0) {
		printf("--- %.3f s%s: no page faults\n", v->elapsed_s, v->last ? " (end)" : "");
		fflush(stdout);
		return true;
	}
	if (!r->o->pid) {
		printf("no page faults\n");
		return true;
	}
	if (!r->kern.known || r->kern.minor || r->kern.major)
		return false; /* the kernel counted some: say which were not seen */
	printf("no page faults by pid %d (its kernel counters agree: 0 minor, 0 major)\n",
	       (int)r->o->pid);
	return true;
}

static void print_table(const struct faults_run *r, const struct faults_view *v)
{
	uint64_t rec = v->recursion_misses;

	if (print_none(r, v, rec))
		return;
	if (v->elapsed_s >= 0)
		printf("--- %.3f s%s: page faults in this interval\n", v->elapsed_s,
		       v->last ? " (end)" : "");
	printf("%-16s %8s %12s %12s %10s\n", "COMM", "PID", "MINOR", "MAJOR", "RETRIED");
	for (size_t i = 0; i < v->n; i++) {
		const struct ml_faults_row *row = &v->rows[i];
		char pid[16] = "-", retried[24] = "-";

		if (row->pid)
			snprintf(pid, sizeof(pid), "%u", row->pid);
		if (r->fentry)
			snprintf(retried, sizeof(retried), "%llu",
				 (unsigned long long)row->retried);
		printf("%-16s %8s %12llu %12llu %10s\n", row->comm, pid,
		       (unsigned long long)row->minor, (unsigned long long)row->major, retried);
	}
	if (!v->n)
		printf("(no page faults)\n");
	if (rec)
		table_wrap(stdout, table_width(stdout), 2,
			   "warning: %llu faults not seen: the kernel skipped the programs while "
			   "another BPF program ran on the same CPU",
			   (unsigned long long)rec);
	if (v->elapsed_s < 0)
		print_kernel(r, v);
	print_hist("minor", v->minor_hist);
	print_hist("major", v->major_hist);
	if (v->elapsed_s >= 0)
		printf("\n");
	fflush(stdout);
}

static void report(const struct faults_run *r, const struct faults_opts *o)
{
	struct ml_faults_counts c;
	struct faults_view v = { .elapsed_s = -1 };

	if (ml_faults_tracer_read(r->t, &c))
		return;
	v.minor_hist = c.minor_hist;
	v.major_hist = c.major_hist;
	v.recursion_misses = c.recursion_misses;
	if (r->prev) { /* -i: the totals the intervals added up to, read at the last one */
		v.rows = r->prev;
		v.n = r->nprev;
		v.minor_hist = r->prev_minor;
		v.major_hist = r->prev_major;
	} else {
		v.rows = c.rows;
		v.n = c.n;
	}
	if (o->json)
		print_json(r, &v);
	else
		print_table(r, &v);
	ml_faults_counts_free(&c);
}

static const struct ml_faults_row *find_row(const struct ml_faults_row *rows, size_t n,
					    const struct ml_faults_row *k)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].pid == k->pid && !memcmp(rows[i].comm, k->comm, sizeof(k->comm)))
			return &rows[i];
	return NULL;
}

/* -i: the counts since the last interval (the maps keep the run's totals) */
static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct faults_run *r = arg;
	uint64_t minor[ML_FAULTS_HIST_SLOTS], major[ML_FAULTS_HIST_SLOTS];
	struct faults_view v = {
		.minor_hist = minor, .major_hist = major, .elapsed_s = elapsed_s, .last = last
	};
	struct ml_faults_counts c;
	struct ml_faults_row *now, *delta;
	size_t n, nd = 0;

	if (ml_faults_tracer_read(r->t, &c))
		memset(&c, 0, sizeof(c));
	now = c.rows;
	n = c.n;
	v.recursion_misses = c.recursion_misses;
	delta = calloc(n ? n : 1, sizeof(*delta));
	for (size_t i = 0; delta && i < n; i++) {
		const struct ml_faults_row *p = find_row(r->prev, r->nprev, &now[i]);
		struct ml_faults_row d = now[i];

		if (p) {
			d.minor -= p->minor;
			d.major -= p->major;
			d.retried -= p->retried;
		}
		if (d.minor || d.major)
			delta[nd++] = d;
	}
	for (int i = 0; i < ML_FAULTS_HIST_SLOTS; i++) {
		minor[i] = c.minor_hist[i];
		major[i] = c.major_hist[i];
		minor[i] -= r->prev_minor[i];
		major[i] -= r->prev_major[i];
		r->prev_minor[i] += minor[i];
		r->prev_major[i] += major[i];
	}
	v.rows = delta;
	v.n = nd;
	if (r->o->json)
		print_json(r, &v);
	else
		print_table(r, &v);
	free(delta);
	free(r->prev);
	r->prev = now ? now : calloc(1, sizeof(*now)); /* not NULL: intervals are on */
	r->nprev = now ? n : 0;
}

static void say_mode(const struct faults_run *r, const struct faults_opts *o)
{
	if (!o->verbose)
		return;
	if (r->fentry)
		fprintf(stderr, "memlens faults: mode fentry: fentry/fexit handle_mm_fault\n");
	else
		fprintf(stderr,
			"memlens faults: mode tracepoint: tp_btf/page_fault_user + "
			"page_fault_kernel, perf software events page-faults-min/maj (%zu) (%s)\n",
			r->info.perf_events, r->info.why);
}

static int cmd_faults(int argc, char **argv)
{
	struct faults_opts o;
	struct faults_run r = { 0 };
	struct ml_trace_target *t = NULL; /* NULL: system-wide */
	bool not_started = false;
	struct ml_err err = { 0 };
	enum trace_stop why;
	sigset_t sigs;
	int e;

	r.o = &o;
	e = parse_args(argc, argv, &o);
	if (e)
		return e < 0 ? EXIT_OK : e;
	if (o.pid || o.cmd) {
		e = cli_check_target("faults", o.pid, o.cmd);
		if (e)
			return e;
	}
	e = trace_output_open("faults", o.cmd != NULL);
	if (e)
		return e;
	trace_libbpf_quiet(o.verbose);
	trace_say_pidns("faults", o.verbose);
	e = mlt_trace_preflight(&err);
	if (!e && o.cmd)
		e = ml_trace_target_spawn(&t, o.cmd, &not_started, &err);
	else if (!e && o.pid)
		e = ml_trace_target_attach(&t, o.pid, &err);
	if (e)
		goto out;
	o.pid = t ? ml_trace_target_pid(t) : 0;
	{
		/* -- CMD is in its exec stop: its counts are those of its fork and exec */
		ML_OPTS(ml_faults_tracer_opts, to, .pid = o.pid, .mode = o.mode);

		e = ml_faults_tracer_open(&r.t, &to, &err);
	}
	if (e)
		goto out;
	r.info.sz = sizeof(r.info);
	ml_faults_tracer_info(r.t, &r.info);
	r.fentry = r.info.fentry;
	say_mode(&r, &o);
	{
		char what[32] = "page faults system-wide";

		if (o.pid)
			snprintf(what, sizeof(what), "page faults of pid %d", (int)o.pid);
		trace_say_tracing("faults", what, o.duration, o.pid != 0);
	}
	trace_output_switch(); /* after the spawn: CMD keeps our stdout */
	if (o.cmd)
		trace_output_hold(); /* the report after CMD's output, not in it */
	e = t ? ml_trace_target_release(t, &err) : 0;
	if (e)
		goto out;
	cli_block_signals(&sigs);
	why = trace_run(&sigs,
			&(struct trace_loop){
				.duration_s = o.duration, .t = t, .tick = on_tick, .arg = &r });
	if (why == TRACE_STOP_TARGET && !trace_quiet() && !o.cmd)
		fprintf(stderr, "memlens faults: process %d exited; counts up to its exit\n",
			(int)o.pid);
	ml_faults_tracer_stop(r.t, o.cmd != NULL);
	r.kern.sz = sizeof(r.kern);
	ml_faults_tracer_kernel(r.t, &r.kern);
	report(&r, &o);
out:
	if (e)
		e = trace_fail("faults", not_started, e, &err);
	free(r.prev);
	ml_faults_tracer_close(r.t);
	ml_trace_target_close(t, true);
	/* CMD is gone: its output came first, the report follows */
	{
		int we = trace_output_release();

		if (we) {
			cli_error("faults", "writing the report to stdout: %s", strerror(-we));
			e = e ? e : EXIT_FAIL;
		}
	}
	return e;
}

MEMLENS_COMMAND(faults, "faults", 20,
		"minor/major page faults per process, latency histograms (eBPF)", cmd_faults);
