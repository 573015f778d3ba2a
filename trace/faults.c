// SPDX-License-Identifier: MIT
/*
 * The page-fault tracer's user side (memlens/trace_faults.h): fentry/fexit
 * on handle_mm_fault, or the page_fault_user/kernel tracepoints with the
 * perf software events; the counts, the histograms, the kernel's counters.
 */
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

#include "memlens/opts.h"
#include "memlens/trace_faults.h"
#include "bpfutil.h"
#include "taskflt.h"
#include "faults.h"
#include "faults.skel.h"

struct ml_faults_tracer {
	struct ml_faults_tracer_opts o;
	struct faults_bpf *skel;
	struct bpf_link **links;
	size_t nlinks, cap;
	int *perf_fds;
	size_t nperf;
	bool fentry;
	char why[160]; /* why fentry was not used */
	struct taskflt_set start; /* the threads' counters when tracing began */
	bool have_start;
	struct ml_faults_kernel kern;
};

static int add_link(struct ml_faults_tracer *r, struct bpf_link *l)
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

static int attach_prog(struct ml_faults_tracer *r, struct bpf_program *p)
{
	struct bpf_link *l = bpf_program__attach(p);

	if (!l)
		return -errno;
	return add_link(r, l);
}

static void detach_all(struct ml_faults_tracer *r)
{
	for (size_t i = 0; i < r->nlinks; i++)
		bpf_link__destroy(r->links[i]);
	r->nlinks = 0;
	for (size_t i = 0; i < r->nperf; i++)
		close(r->perf_fds[i]);
	r->nperf = 0;
}

static struct faults_bpf *open_skel(const struct ml_faults_tracer_opts *o, bool fentry)
{
	struct faults_bpf *s = faults_bpf__open();

	if (!s)
		return NULL;
	s->rodata->target_tgid = (__u32)o->pid;
	s->rodata->per_pid = o->pid != 0;
	mlt_trace_pidns(&s->rodata->pidns_dev, &s->rodata->pidns_ino);
	bpf_program__set_autoload(s->progs.mm_fault_enter, fentry);
	bpf_program__set_autoload(s->progs.mm_fault_exit, fentry);
	bpf_program__set_autoload(s->progs.pf_user, !fentry);
	bpf_program__set_autoload(s->progs.pf_kernel, !fentry);
	bpf_program__set_autoload(s->progs.sw_fault_min, !fentry);
	bpf_program__set_autoload(s->progs.sw_fault_maj, !fentry);
	return s;
}

static int try_fentry(struct ml_faults_tracer *r, const struct ml_faults_tracer_opts *o)
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

static int open_sw_event(struct ml_faults_tracer *r, struct bpf_program *p, __u64 config, int cpu)
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

static int attach_tracepoint_mode(struct ml_faults_tracer *r, struct ml_err *err)
{
	int ncpu = libbpf_num_possible_cpus(), e;

	if (ncpu < 0)
		return mlt_trace_bpf_error(err, ncpu, "counting CPUs");
	r->perf_fds = calloc((size_t)ncpu * 2, sizeof(int));
	if (!r->perf_fds)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = attach_prog(r, r->skel->progs.pf_user);
	if (!e)
		e = attach_prog(r, r->skel->progs.pf_kernel);
	if (e)
		return mlt_trace_bpf_error(err, e,
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
		return mlt_trace_bpf_error(err, e, "opening the page-fault perf software events");
	return 0;
}

static int load_tracepoint_mode(struct ml_faults_tracer *r, const struct ml_faults_tracer_opts *o,
				struct ml_err *err)
{
	int e;

	r->skel = open_skel(o, false);
	if (!r->skel)
		return mlt_trace_bpf_error(err, -errno, "opening the fault tracer");
	e = faults_bpf__load(r->skel);
	if (e)
		return mlt_trace_bpf_error(err, e,
					   "loading the fault tracer (tp_btf + perf_event)");
	return attach_tracepoint_mode(r, err);
}

/* per pid: the kernel's counters of each thread at its exit */
static int attach_thread_exit(struct ml_faults_tracer *r, const struct ml_faults_tracer_opts *o,
			      struct ml_err *err)
{
	int e;

	if (!o->pid)
		return 0;
	e = attach_prog(r, r->skel->progs.thread_exit);
	return e ? mlt_trace_bpf_error(err, e, "attaching raw_tp/sched_process_exit") : 0;
}

static int faults_start(struct ml_faults_tracer *r, const struct ml_faults_tracer_opts *o,
			struct ml_err *err)
{
	int e;

	if (o->mode != ML_FAULTS_TRACEPOINT) {
		e = try_fentry(r, o);
		if (!e)
			return attach_thread_exit(r, o, err);
		if (o->mode == ML_FAULTS_FENTRY)
			return mlt_trace_bpf_error(
				err, e == -EPERM ? -ENOTSUP : e,
				"--mode fentry: fentry/fexit on handle_mm_fault");
	} else {
		snprintf(r->why, sizeof(r->why), "--mode tracepoint");
	}
	e = load_tracepoint_mode(r, o, err);
	return e ? e : attach_thread_exit(r, o, err);
}

struct faults_row {
	struct faults_key key;
	struct faults_val val;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct ml_faults_row *x = a, *y = b;
	__u64 tx = x->minor + x->major, ty = y->minor + y->major;

	if (x->major != y->major)
		return x->major < y->major ? 1 : -1;
	return tx < ty ? 1 : tx > ty ? -1 : strcmp(x->comm, y->comm);
}

_Static_assert(FAULTS_HIST_SLOTS == ML_FAULTS_HIST_SLOTS, "the histograms' slots");
_Static_assert(FAULTS_COMM_LEN == ML_FAULTS_COMM_LEN, "the command names' length");

int ml_faults_tracer_read(const struct ml_faults_tracer *t, struct ml_faults_counts *out)
{
	struct faults_row *rows;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	rows = mlt_trace_map_dump(bpf_map__fd(t->skel->maps.counts), sizeof(rows->key),
				  sizeof(*rows), offsetof(struct faults_row, key),
				  offsetof(struct faults_row, val), &n);
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	if (!out->rows) {
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct ml_faults_row *o = &out->rows[i];

		o->pid = rows[i].key.pid;
		memcpy(o->comm, rows[i].key.comm, sizeof(o->comm));
		o->minor = rows[i].val.minor;
		o->major = rows[i].val.major;
		o->retried = rows[i].val.retried;
	}
	free(rows);
	out->n = n;
	qsort(out->rows, n, sizeof(*out->rows), cmp_rows);
	for (int i = 0; i < FAULTS_HIST_SLOTS; i++) {
		out->minor_hist[i] = t->skel->bss->minor_hist[i];
		out->major_hist[i] = t->skel->bss->major_hist[i];
	}
	out->recursion_misses = mlt_trace_recursion_misses(t->skel->obj);
	return 0;
}

void ml_faults_counts_free(struct ml_faults_counts *c)
{
	free(c->rows);
	c->rows = NULL;
	c->n = 0;
}

/*
 * The kernel's counts while traced: each thread's counters at its exit (the
 * BPF side) or now (alive), minus its counters when tracing began (0 for a
 * thread started since). Every thread there at the start must be found
 * again, else the total is not known. Called once the programs are
 * detached.
 */
static void kernel_counts(struct ml_faults_tracer *r, pid_t pid, bool spawned)
{
	int fd = bpf_map__fd(r->skel->maps.exited);
	struct taskflt_set now = { 0 };
	uint64_t min = 0, maj = 0, smin = 0, smaj = 0;
	__u32 key, next, *prev = NULL;
	struct faults_exit c;
	bool known = true;

	if (!r->have_start)
		return;
	mlt_taskflt_read(pid, &now); /* nothing when it has exited */
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
		const struct taskflt *t = mlt_taskflt_find(&now, r->start.v[i].tid);

		key = (__u32)r->start.v[i].tid;
		if ((!t || t->dead) && bpf_map_lookup_elem(fd, &key, &c))
			known = false; /* gone without its exit seen */
		smin += r->start.v[i].minflt;
		smaj += r->start.v[i].majflt;
	}
	mlt_taskflt_free(&now);
	r->kern.known = known && min >= smin && maj >= smaj;
	r->kern.minor = r->kern.known ? min - smin : 0;
	r->kern.major = r->kern.known ? maj - smaj : 0;
	r->kern.before = spawned;
	r->kern.before_minor = smin;
	r->kern.before_major = smaj;
}

int ml_faults_tracer_open(struct ml_faults_tracer **out, const struct ml_faults_tracer_opts *opts,
			  struct ml_err *err)
{
	struct ml_faults_tracer *r;
	int e;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = ml_opts_load(&r->o, sizeof(r->o), opts, "ml_faults_tracer_opts", err);
	if (!e)
		e = mlt_trace_preflight(err);
	if (e)
		goto fail;
	/* before attaching: a process started stopped has the counts of its fork and exec */
	if (r->o.pid)
		r->have_start = !mlt_taskflt_read(r->o.pid, &r->start);
	e = faults_start(r, &r->o, err);
	if (e)
		goto fail;
	*out = r;
	return 0;
fail:
	ml_faults_tracer_close(r);
	return e;
}

int ml_faults_tracer_info(const struct ml_faults_tracer *t, struct ml_faults_tracer_info *out)
{
	struct ml_faults_tracer_info v = { .fentry = t->fentry, .perf_events = t->nperf };

	snprintf(v.why, sizeof(v.why), "%s", t->why);
	return ml_result_store(out, &v, sizeof(v), sizeof(v), "ml_faults_tracer_info", NULL);
}

void ml_faults_tracer_stop(struct ml_faults_tracer *t, bool spawned)
{
	detach_all(t); /* nothing counts any more: the kernel's counters can be compared */
	kernel_counts(t, t->o.pid, spawned);
}

int ml_faults_tracer_kernel(const struct ml_faults_tracer *t, struct ml_faults_kernel *out)
{
	return ml_result_store(out, &t->kern, sizeof(t->kern), sizeof(t->kern), "ml_faults_kernel",
			       NULL);
}

void ml_faults_tracer_close(struct ml_faults_tracer *t)
{
	if (!t)
		return;
	detach_all(t);
	free(t->links);
	free(t->perf_fds);
	mlt_taskflt_free(&t->start);
	faults_bpf__destroy(t->skel);
	free(t);
}
