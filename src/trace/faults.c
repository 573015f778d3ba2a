// SPDX-License-Identifier: MIT
/* memlens faults: minor/major page faults per comm or pid, with latency histograms. */
#include <errno.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli_target.h"
#include "cliutil.h"
#include "command.h"
#include "memlens/format_faults.h"
#include "opts.h"
#include "../../trace/taskflt.h"
#include "../table.h"
#include "trace.h"
#include "../../trace/faults.h"
#include "faults.skel.h"

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

enum faults_mode { MODE_AUTO, MODE_FENTRY, MODE_TRACEPOINT };

struct faults_opts {
	pid_t pid;
	double duration;
	bool json;
	int verbose;
	enum faults_mode mode;
	char **cmd;
};

struct faults_row {
	struct faults_key key;
	struct faults_val val;
};

/* the kernel's counters of the traced process (per-pid modes) */
struct kern_faults {
	bool known; /* every thread accounted for */
	uint64_t minor, major; /* while traced */
	bool before; /* -- CMD: the counts at its exec stop */
	uint64_t before_minor, before_major;
};

struct faults_run {
	struct faults_bpf *skel;
	struct bpf_link **links;
	size_t nlinks, cap;
	int *perf_fds;
	size_t nperf;
	bool fentry;
	char why[160]; /* why fentry was not used */
	const struct faults_opts *o;
	struct faults_row *prev; /* the counts at the last interval */
	size_t nprev;
	__u64 prev_minor[FAULTS_HIST_SLOTS], prev_major[FAULTS_HIST_SLOTS];
	struct taskflt_set start; /* the threads' counters when tracing began */
	bool have_start;
	struct kern_faults kern;
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

static int add_link(struct faults_run *r, struct bpf_link *l)
{
	if (r->nlinks == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct bpf_link **n = realloc(r->links, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->links = n;
		r->cap = cap;
	}
	r->links[r->nlinks++] = l;
	return 0;
}

static int attach_prog(struct faults_run *r, struct bpf_program *p)
{
	struct bpf_link *l = bpf_program__attach(p);

	if (!l)
		return -errno;
	return add_link(r, l);
}

static void detach_all(struct faults_run *r)
{
	for (size_t i = 0; i < r->nlinks; i++)
		bpf_link__destroy(r->links[i]);
	r->nlinks = 0;
	for (size_t i = 0; i < r->nperf; i++)
		close(r->perf_fds[i]);
	r->nperf = 0;
}

static struct faults_bpf *open_skel(const struct faults_opts *o, bool fentry)
{
	struct faults_bpf *s = faults_bpf__open();

	if (!s)
		return NULL;
	s->rodata->target_tgid = (__u32)o->pid;
	s->rodata->per_pid = o->pid != 0;
	trace_pidns(&s->rodata->pidns_dev, &s->rodata->pidns_ino);
	bpf_program__set_autoload(s->progs.mm_fault_enter, fentry);
	bpf_program__set_autoload(s->progs.mm_fault_exit, fentry);
	bpf_program__set_autoload(s->progs.pf_user, !fentry);
	bpf_program__set_autoload(s->progs.pf_kernel, !fentry);
	bpf_program__set_autoload(s->progs.sw_fault_min, !fentry);
	bpf_program__set_autoload(s->progs.sw_fault_maj, !fentry);
	return s;
}

static int try_fentry(struct faults_run *r, const struct faults_opts *o)
{
	int e;

	r->skel = open_skel(o, true);
	if (!r->skel)
		return -errno;
	e = faults_bpf__load(r->skel);
	if (!e)
		e = attach_prog(r, r->skel->progs.mm_fault_enter);
	if (!e)
		e = attach_prog(r, r->skel->progs.mm_fault_exit);
	if (!e) {
		r->fentry = true;
		return 0;
	}
	snprintf(r->why, sizeof(r->why), "fentry/fexit refused: %s", strerror(-e));
	detach_all(r);
	faults_bpf__destroy(r->skel);
	r->skel = NULL;
	return e;
}

static int open_sw_event(struct faults_run *r, struct bpf_program *p, __u64 config, int cpu)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = config,
		.sample_period = 1,
	};
	struct bpf_link *l;
	int fd;

	fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno == ENODEV ? 0 : -errno; /* offline cpu */
	r->perf_fds[r->nperf++] = fd;
	l = bpf_program__attach_perf_event(p, fd);
	if (!l)
		return -errno;
	return add_link(r, l);
}

static int attach_tracepoint_mode(struct faults_run *r, struct ml_err *err)
{
	int ncpu = libbpf_num_possible_cpus(), e;

	if (ncpu < 0)
		return trace_bpf_error(err, ncpu, "counting CPUs");
	r->perf_fds = calloc((size_t)ncpu * 2, sizeof(int));
	if (!r->perf_fds)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = attach_prog(r, r->skel->progs.pf_user);
	if (!e)
		e = attach_prog(r, r->skel->progs.pf_kernel);
	if (e)
		return trace_bpf_error(err, e,
				       "attaching to tp_btf/page_fault_user and "
				       "page_fault_kernel");
	for (int cpu = 0; cpu < ncpu && !e; cpu++) {
		e = open_sw_event(r, r->skel->progs.sw_fault_min, PERF_COUNT_SW_PAGE_FAULTS_MIN,
				  cpu);
		if (!e)
			e = open_sw_event(r, r->skel->progs.sw_fault_maj,
					  PERF_COUNT_SW_PAGE_FAULTS_MAJ, cpu);
	}
	if (e)
		return trace_bpf_error(err, e, "opening the page-fault perf software events");
	return 0;
}

static int load_tracepoint_mode(struct faults_run *r, const struct faults_opts *o,
				struct ml_err *err)
{
	int e;

	r->skel = open_skel(o, false);
	if (!r->skel)
		return trace_bpf_error(err, -errno, "opening the fault tracer");
	e = faults_bpf__load(r->skel);
	if (e)
		return trace_bpf_error(err, e, "loading the fault tracer (tp_btf + perf_event)");
	return attach_tracepoint_mode(r, err);
}

/* per pid: the kernel's counters of each thread at its exit */
static int attach_thread_exit(struct faults_run *r, const struct faults_opts *o, struct ml_err *err)
{
	int e;

	if (!o->pid)
		return 0;
	e = attach_prog(r, r->skel->progs.thread_exit);
	return e ? trace_bpf_error(err, e, "attaching raw_tp/sched_process_exit") : 0;
}

static int faults_start(struct faults_run *r, const struct faults_opts *o, struct ml_err *err)
{
	int e;

	if (o->mode != MODE_TRACEPOINT) {
		e = try_fentry(r, o);
		if (!e)
			return attach_thread_exit(r, o, err);
		if (o->mode == MODE_FENTRY)
			return trace_bpf_error(err, e == -EPERM ? -ENOTSUP : e,
					       "--mode fentry: fentry/fexit on handle_mm_fault");
	} else {
		snprintf(r->why, sizeof(r->why), "--mode tracepoint");
	}
	e = load_tracepoint_mode(r, o, err);
	return e ? e : attach_thread_exit(r, o, err);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct faults_row *x = a, *y = b;
	__u64 tx = x->val.minor + x->val.major, ty = y->val.minor + y->val.major;

	if (x->val.major != y->val.major)
		return x->val.major < y->val.major ? 1 : -1;
	return tx < ty ? 1 : tx > ty ? -1 : strcmp(x->key.comm, y->key.comm);
}

static struct faults_row *collect(struct faults_bpf *s, size_t *n)
{
	struct faults_row *rows = trace_map_dump(bpf_map__fd(s->maps.counts), sizeof(rows->key),
						 sizeof(*rows), offsetof(struct faults_row, key),
						 offsetof(struct faults_row, val), n);

	if (rows)
		qsort(rows, *n, sizeof(*rows), cmp_rows);
	return rows;
}

/*
 * The kernel's counts while traced: each thread's counters at its exit (the
 * BPF side) or now (alive), minus its counters when tracing began (0 for a
 * thread started since). Every thread there at the start must be found
 * again, else the total is not known. Called once the programs are
 * detached.
 */
static void kernel_counts(struct faults_run *r, pid_t pid, bool spawned)
{
	int fd = bpf_map__fd(r->skel->maps.exited);
	struct taskflt_set now = { 0 };
	uint64_t min = 0, maj = 0, smin = 0, smaj = 0;
	__u32 key, next, *prev = NULL;
	struct faults_exit c;
	bool known = true;

	if (!r->have_start)
		return;
	taskflt_read(pid, &now); /* nothing when it has exited */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &c)) {
			min += c.minflt;
			maj += c.majflt;
		}
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < now.n; i++) {
		key = (__u32)now.v[i].tid;
		if (now.v[i].dead || !bpf_map_lookup_elem(fd, &key, &c))
			continue; /* its exit is in the map */
		min += now.v[i].minflt;
		maj += now.v[i].majflt;
	}
	for (size_t i = 0; i < r->start.n; i++) {
		const struct taskflt *t = taskflt_find(&now, r->start.v[i].tid);

		key = (__u32)r->start.v[i].tid;
		if ((!t || t->dead) && bpf_map_lookup_elem(fd, &key, &c))
			known = false; /* gone without its exit seen */
		smin += r->start.v[i].minflt;
		smaj += r->start.v[i].majflt;
	}
	taskflt_free(&now);
	r->kern.known = known && min >= smin && maj >= smaj;
	r->kern.minor = r->kern.known ? min - smin : 0;
	r->kern.major = r->kern.known ? maj - smaj : 0;
	r->kern.before = spawned;
	r->kern.before_minor = smin;
	r->kern.before_major = smaj;
}

static void seen_totals(const struct faults_row *rows, size_t n, uint64_t *min, uint64_t *maj)
{
	*min = *maj = 0;
	for (size_t i = 0; i < n; i++) {
		*min += rows[i].val.minor;
		*maj += rows[i].val.major;
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
	const struct faults_row *rows;
	size_t n;
	const __u64 *minor_hist, *major_hist;
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

_Static_assert(FAULTS_HIST_SLOTS <= FAULTS_REC_HIST_MAX, "the record holds every slot");

/* The record of @v: the run's also says what the kernel counted (memlens/format_faults.h). */
static void print_json(const struct faults_run *r, const struct faults_view *v)
{
	struct faults_rec rec = { .interval = v->elapsed_s >= 0,
				  .elapsed_ms =
					  v->elapsed_s >= 0 ? (uint64_t)(v->elapsed_s * 1000) : 0,
				  .last = v->last,
				  .recursion_misses = trace_recursion_misses(r->skel->obj),
				  .nrows = v->n,
				  .nminor = FAULTS_HIST_SLOTS,
				  .nmajor = FAULTS_HIST_SLOTS,
				  .has_kernel = r->o->pid && r->kern.known,
				  .kernel = { r->kern.minor, r->kern.major },
				  .has_before = r->o->pid && r->kern.before,
				  .before = { r->kern.before_minor, r->kern.before_major } };
	uint64_t smin, smaj;
	struct jw w;

	snprintf(rec.mode, sizeof(rec.mode), "%s", r->fentry ? "fentry" : "tracepoint");
	snprintf(rec.not_seen_paths, sizeof(rec.not_seen_paths), "%s",
		 r->fentry ? "" : "get_user_pages");
	seen_totals(v->rows, v->n, &smin, &smaj);
	rec.not_seen.minor = unseen(r->kern.minor, smin);
	rec.not_seen.major = unseen(r->kern.major, smaj);
	for (int i = 0; i < FAULTS_HIST_SLOTS; i++) {
		rec.minor_hist[i] = v->minor_hist[i];
		rec.major_hist[i] = v->major_hist[i];
	}
	rec.rows = calloc(v->n ? v->n : 1, sizeof(*rec.rows));
	if (!rec.rows) {
		cli_error("faults", "out of memory");
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct faults_row *row = &v->rows[i];
		struct faults_row_rec *o = &rec.rows[i];

		snprintf(o->comm, sizeof(o->comm), "%s", row->key.comm);
		o->pid = row->key.pid ? (int64_t)row->key.pid : -1;
		o->minor = row->val.minor;
		o->major = row->val.major;
		o->retried = row->val.retried;
		o->has_retried = r->fentry;
	}
	ml_jw_init(&w, stdout);
	ml_fmt_faults(&w, &rec);
	ml_fmt_faults_free(&rec);
}

/* A latency histogram; one line when it is empty. */
static void print_hist(const char *kind, const __u64 *slots)
{
	__u64 n = 0;

	for (int i = 0; i < FAULTS_HIST_SLOTS; i++)
		n += slots[i];
	if (!n) {
		printf("\n%s fault latency: no %s faults\n", kind, kind);
		return;
	}
	printf("\n%s fault latency\n", kind);
	trace_print_log2_hist(stdout, slots, FAULTS_HIST_SLOTS, "usecs");
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
	uint64_t rec = trace_recursion_misses(r->skel->obj);

	if (print_none(r, v, rec))
		return;
	if (v->elapsed_s >= 0)
		printf("--- %.3f s%s: page faults in this interval\n", v->elapsed_s,
		       v->last ? " (end)" : "");
	printf("%-16s %8s %12s %12s %10s\n", "COMM", "PID", "MINOR", "MAJOR", "RETRIED");
	for (size_t i = 0; i < v->n; i++) {
		const struct faults_row *row = &v->rows[i];
		char pid[16] = "-", retried[24] = "-";

		if (row->key.pid)
			snprintf(pid, sizeof(pid), "%u", row->key.pid);
		if (r->fentry)
			snprintf(retried, sizeof(retried), "%llu",
				 (unsigned long long)row->val.retried);
		printf("%-16s %8s %12llu %12llu %10s\n", row->key.comm, pid,
		       (unsigned long long)row->val.minor, (unsigned long long)row->val.major,
		       retried);
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
	struct faults_view v = { .minor_hist = r->skel->bss->minor_hist,
				 .major_hist = r->skel->bss->major_hist,
				 .elapsed_s = -1 };
	struct faults_row *rows = NULL;

	if (r->prev) { /* -i: the totals the intervals added up to, read at the last one */
		v.rows = r->prev;
		v.n = r->nprev;
		v.minor_hist = r->prev_minor;
		v.major_hist = r->prev_major;
	} else {
		rows = collect(r->skel, &v.n);
		v.rows = rows;
	}
	if (o->json)
		print_json(r, &v);
	else
		print_table(r, &v);
	free(rows);
}

static const struct faults_row *find_row(const struct faults_row *rows, size_t n,
					 const struct faults_key *k)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(&rows[i].key, k, sizeof(*k)))
			return &rows[i];
	return NULL;
}

/* -i: the counts since the last interval (the maps keep the run's totals) */
static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct faults_run *r = arg;
	__u64 minor[FAULTS_HIST_SLOTS], major[FAULTS_HIST_SLOTS];
	struct faults_view v = {
		.minor_hist = minor, .major_hist = major, .elapsed_s = elapsed_s, .last = last
	};
	struct faults_row *now, *delta;
	size_t n, nd = 0;

	now = collect(r->skel, &n);
	delta = calloc(n ? n : 1, sizeof(*delta));
	for (size_t i = 0; delta && i < n; i++) {
		const struct faults_row *p = find_row(r->prev, r->nprev, &now[i].key);
		struct faults_row d = now[i];

		if (p) {
			d.val.minor -= p->val.minor;
			d.val.major -= p->val.major;
			d.val.retried -= p->val.retried;
		}
		if (d.val.minor || d.val.major)
			delta[nd++] = d;
	}
	for (int i = 0; i < FAULTS_HIST_SLOTS; i++) {
		minor[i] = r->skel->bss->minor_hist[i];
		major[i] = r->skel->bss->major_hist[i];
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
			r->nperf, r->why);
}

static int cmd_faults(int argc, char **argv)
{
	struct faults_opts o;
	struct faults_run r = { 0 };
	struct trace_target t = { .pidfd = -1 };
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
	e = trace_preflight(&err);
	if (!e && o.cmd)
		e = trace_target_spawn(&t, o.cmd, &err);
	else if (!e && o.pid)
		e = trace_target_attach(&t, o.pid, &err);
	if (e)
		goto out;
	o.pid = t.pid;
	/* before attaching: -- CMD is in its exec stop, its counts are those of its fork and exec
	 */
	if (o.pid)
		r.have_start = !taskflt_read(t.pid, &r.start);
	e = faults_start(&r, &o, &err);
	if (e)
		goto out;
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
	e = trace_target_release(&t, &err);
	if (e)
		goto out;
	cli_block_signals(&sigs);
	why = trace_run(&sigs,
			&(struct trace_loop){
				.duration_s = o.duration, .t = &t, .tick = on_tick, .arg = &r });
	if (why == TRACE_STOP_TARGET && !trace_quiet() && !o.cmd)
		fprintf(stderr, "memlens faults: process %d exited; counts up to its exit\n",
			(int)o.pid);
	detach_all(&r); /* nothing counts any more: the kernel's counters can be compared */
	kernel_counts(&r, o.pid, o.cmd != NULL);
	report(&r, &o);
out:
	if (e)
		e = trace_fail("faults", &t, e, &err);
	detach_all(&r);
	free(r.links);
	free(r.perf_fds);
	free(r.prev);
	taskflt_free(&r.start);
	faults_bpf__destroy(r.skel);
	trace_target_close(&t, true);
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
