// SPDX-License-Identifier: MIT
/*
 * The tree profiler: one per-process profiler for every process of the
 * tree under the root, ticked together, their samples merged into one.
 * Processes forked since the last interval are opened at the next one
 * (their writes count from the interval after); processes that exit keep
 * their numbers, marked exited; none of them fails the run. A shared
 * memory page counts once in the tree's totals, by its object (device,
 * inode) and page offset, however many processes wrote it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/clock.h"
#include "memlens/proc.h"
#include "profiler_int.h"

#define PTREE_MAX ML_PROC_TREE_MAX
/* Processes that exited, kept in the rows (the oldest go first; the totals keep all) */
#define PTREE_EXITED_MAX 64
#define PG 4096ULL

struct ptree_proc {
	struct ml_profiler_proc info;
	struct ml_profiler *p; /* NULL: the root (its owner's), or no longer profiled */
	bool root;
	struct ml_profiler_sample s; /* this interval's */
	bool have_s;
};

struct ptree {
	struct ml_profiler *root;
	struct ml_profiler_opts child_opts;
	struct ptree_proc *v;
	size_t n, cap;
	int64_t cumulative_dirty_bytes;
	pid_t *walk; /* scratch: the tree read from /proc */
};

/* A shared memory page run written by some process: its object and page offsets. */
struct shm_run {
	uint64_t inode;
	uint32_t dev;
	uint64_t first, end; /* page offsets in the object, [first, end) */
};

struct shm_runs {
	struct shm_run *r;
	size_t n, cap;
};

static struct ptree_proc *add_proc(struct ptree *t, pid_t pid)
{
	struct ptree_proc *e;
	struct ml_proc_stat st;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct ptree_proc *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	e = &t->v[t->n++];
	memset(e, 0, sizeof(*e));
	e->info.pid = pid;
	if (!ml_proc_stat_read(pid, 0, &st)) {
		e->info.ppid = st.ppid;
		snprintf(e->info.comm, sizeof(e->info.comm), "%.15s", st.comm);
	}
	return e;
}

/* The process @pid, profiled or not, unless it exited (its pid may be taken again). */
static struct ptree_proc *find_known(struct ptree *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].info.pid == pid && !t->v[i].info.exited)
			return &t->v[i];
	return NULL;
}

/* At most PTREE_EXITED_MAX exited processes stay in the rows: a server forks for ever. */
static void prune_exited(struct ptree *t)
{
	for (;;) {
		size_t n = 0, first = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].info.exited && !n++)
				first = i;
		if (n <= PTREE_EXITED_MAX)
			return;
		ml_profiler_sample_free(&t->v[first].s);
		memmove(&t->v[first], &t->v[first + 1], (t->n - first - 1) * sizeof(*t->v));
		t->n--;
	}
}

/* A process of the tree is no longer profiled: exited, or failed with @why. */
static void let_go(struct ptree_proc *e, bool exited, const char *why)
{
	ml_profiler_close(e->p);
	e->p = NULL;
	e->info.dirty_pages = e->info.shared_dirty_pages = 0;
	e->info.hot_bytes = 0;
	if (exited) {
		e->info.exited = true;
		snprintf(e->info.note, sizeof(e->info.note), "exited");
	} else {
		e->info.failed = true;
		snprintf(e->info.note, sizeof(e->info.note), "not profiled: %.140s", why);
	}
}

/* Open a profiler for every process of the tree not profiled yet. */
static int discover(struct ptree *t)
{
	size_t n = ml_proc_tree(ml_profiler_pid(t->root), t->walk, PTREE_MAX);

	for (size_t i = 1; i < n; i++) {
		struct ml_err e = { 0 };
		struct ptree_proc *pp;
		int r;

		if (find_known(t, t->walk[i]) || ml_proc_exited(t->walk[i], 0))
			continue;
		pp = add_proc(t, t->walk[i]);
		if (!pp)
			return -ENOMEM;
		r = ml_profiler_open(&pp->p, t->walk[i], &t->child_opts, &e);
		if (r == -ESRCH || (r && ml_proc_exited(t->walk[i], 0))) {
			t->n--; /* gone before it could be looked at: never part of the run */
			continue;
		}
		if (r) {
			pp->p = NULL;
			let_go(pp, false, e.msg);
		}
	}
	return 0;
}

int mli_ptree_open(struct ptree **out, struct ml_profiler *root, struct ml_err *err)
{
	struct ptree *t = calloc(1, sizeof(*t));
	struct ptree_proc *r;

	*out = NULL;
	if (!t)
		return ml_err_set(err, ENOMEM, "out of memory");
	t->root = root;
	t->child_opts = *ml_profiler_options(root);
	t->child_opts.tree = false;
	t->child_opts.target_stopped = false;
	t->child_opts.record_ranges = false;
	t->walk = malloc(PTREE_MAX * sizeof(*t->walk));
	r = t->walk ? add_proc(t, ml_profiler_pid(root)) : NULL;
	if (!r || discover(t)) {
		mli_ptree_close(t);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	r = &t->v[0];
	r->root = true;
	*out = t;
	return 0;
}

static int shm_add(struct shm_runs *s, const struct ml_profiler_region *g, uint64_t a, uint64_t b)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct shm_run *v = realloc(s->r, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->r = v;
		s->cap = cap;
	}
	s->r[s->n++] = (struct shm_run){ g->inode, g->dev, g->pgoff + (a - g->start) / PG,
					 g->pgoff + (b - g->start) / PG };
	return 0;
}

/*
 * Split one process's written ranges by its regions: private pages are
 * counted, shared memory pages collected by object into @shm.
 */
static int split_written(const struct ml_profiler_sample *s, const struct ml_range *w, size_t nw,
			 struct shm_runs *shm, int64_t *private_pages, int64_t *shared_pages)
{
	size_t k = 0;

	for (size_t i = 0; i < nw; i++) {
		uint64_t a = w[i].start;

		if (i && a < w[i - 1].start)
			k = 0; /* the shared memory ranges come after the private ones */

		while (a < w[i].end) {
			while (k < s->nregions && s->regions[k].end <= a)
				k++;
			if (k == s->nregions || s->regions[k].start >= w[i].end)
				break;
			if (s->regions[k].start > a)
				a = s->regions[k].start;
			uint64_t b = s->regions[k].end < w[i].end ? s->regions[k].end : w[i].end;

			if (s->regions[k].shared) {
				*shared_pages += (int64_t)((b - a) / PG);
				if (shm_add(shm, &s->regions[k], a, b))
					return -ENOMEM;
			} else {
				*private_pages += (int64_t)((b - a) / PG);
			}
			a = b;
		}
	}
	return 0;
}

static int cmp_run(const void *x, const void *y)
{
	const struct shm_run *a = x, *b = y;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->inode != b->inode)
		return a->inode < b->inode ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

/* Pages in the union of @s's runs. */
static int64_t shm_union_pages(struct shm_runs *s)
{
	int64_t pages = 0;
	size_t i = 0;

	if (s->n)
		qsort(s->r, s->n, sizeof(*s->r), cmp_run);
	while (i < s->n) {
		struct shm_run cur = s->r[i++];

		while (i < s->n && s->r[i].dev == cur.dev && s->r[i].inode == cur.inode &&
		       s->r[i].first <= cur.end) {
			if (s->r[i].end > cur.end)
				cur.end = s->r[i].end;
			i++;
		}
		pages += (int64_t)(cur.end - cur.first);
	}
	return pages;
}

/*
 * Append @s's hot ranges to @out's. The hot bytes of shared memory go into
 * @shm by object (the tree counts each page once), the others into
 * @out; a range merged over cold pages counts its hot pages as private.
 */
static int merge_hot(struct ml_profiler_sample *out, const struct ml_profiler_sample *s,
		     struct shm_runs *shm)
{
	const struct ml_hotrange_set *h = &s->hot;
	struct ml_hotrange_range *r;
	int64_t priv = 0, shared = 0;

	if (!h->n)
		return 0;
	for (size_t i = 0; i < h->n; i++) {
		struct ml_range one = { h->r[i].start, h->r[i].end };

		if (h->r[i].hot_pages != (one.end - one.start) / PG) {
			priv += (int64_t)h->r[i].hot_pages;
			continue;
		}
		if (split_written(s, &one, 1, shm, &priv, &shared))
			return -ENOMEM;
	}
	r = realloc(out->hot.r, (out->hot.n + h->n) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	memcpy(r + out->hot.n, h->r, h->n * sizeof(*r));
	out->hot.r = r;
	out->hot.n += h->n;
	out->hot.unmerged += h->unmerged;
	out->hot.hot_bytes += (uint64_t)priv * PG;
	out->hot.merge_cost_bytes += h->merge_cost_bytes;
	return 0;
}

static int merge_written(struct ml_profiler_sample *out, const struct ml_range *w, size_t nw,
			 pid_t pid)
{
	struct ml_range *r;
	pid_t *p;

	if (!nw)
		return 0;
	r = realloc(out->written, (out->nwritten + nw) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	out->written = r;
	p = realloc(out->written_pid, (out->nwritten + nw) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	out->written_pid = p;
	memcpy(r + out->nwritten, w, nw * sizeof(*r));
	for (size_t i = 0; i < nw; i++)
		p[out->nwritten + i] = pid;
	out->nwritten += nw;
	return 0;
}

/*
 * How a tree's interval was tracked: the faults and their cost summed over
 * its processes, the least fraction (largest k) any of them used.
 */
static void merge_sampling(struct ml_profiler_sampling *out, const struct ml_profiler_sampling *s)
{
	if (!s->on)
		return;
	if (!out->on) {
		/* the root's first: the others use the cost it measured */
		out->fault_ns = s->fault_ns;
		out->fault_ns_measured = s->fault_ns_measured;
	}
	out->on = true;
	out->faults += s->faults;
	out->minflt += s->minflt;
	out->cost += s->cost;
	if (s->k > out->k)
		out->k = s->k;
	if (s->next_k > out->next_k)
		out->next_k = s->next_k;
	if (s->next_interval_ms > out->next_interval_ms)
		out->next_interval_ms = s->next_interval_ms;
	if (s->max_error > 0) {
		if (out->max_error <= 0)
			out->error = out->next_error = -1;
		out->max_error = s->max_error;
		if (s->error > out->error)
			out->error = s->error;
		if (s->next_error > out->next_error)
			out->next_error = s->next_error;
	}
}

/* The samples of this interval into @out: regions, hot and written ranges, rows, totals. */
static int merge(struct ptree *t, struct ml_profiler_sample *out, uint64_t t0)
{
	const struct ml_profiler_sample *rs = &t->v[0].s;
	struct shm_runs shm = { 0 }, shm_hot = { 0 }, sampled = { 0 };
	int64_t private_pages = 0, shared_est = 0;
	size_t nreg = 0, k = 0;
	int r = 0;

	for (size_t i = 0; i < t->n; i++)
		nreg += t->v[i].have_s ? t->v[i].s.nregions : 0;
	out->seq = rs->seq;
	out->t_ms = rs->t_ms;
	out->interval_s = rs->interval_s;
	out->tree = true;
	out->regions = calloc(nreg ? nreg : 1, sizeof(*out->regions));
	out->procs = calloc(t->n, sizeof(*out->procs));
	if (!out->regions || !out->procs)
		return -ENOMEM;
	for (size_t i = 0; i < t->n && !r; i++) {
		struct ptree_proc *e = &t->v[i];
		const struct ml_profiler_sample *s = &e->s;
		int64_t priv = 0, shared = 0;

		if (e->have_s) {
			size_t nw;
			const struct ml_range *w =
				mli_profiler_written(e->root ? t->root : e->p, &nw);

			bool est = s->sampling.k > 1;

			memcpy(out->regions + k, s->regions, s->nregions * sizeof(*s->regions));
			k += s->nregions;
			/* sampled: the written ranges are the sample's; count the estimates */
			r = split_written(s, w, nw, est ? &sampled : &shm, &priv, &shared);
			if (est) {
				priv = shared = 0;
				for (size_t j = 0; j < s->nregions; j++) {
					if (s->regions[j].shared)
						shared += (int64_t)s->regions[j].dirty_pages;
					else
						priv += (int64_t)s->regions[j].dirty_pages;
				}
				shared_est += shared;
				sampled.n = 0;
			}
			merge_sampling(&out->sampling, &s->sampling);
			out->hot.estimated |= s->hot.estimated;
			if (!r)
				r = merge_hot(out, s, &shm_hot);
			if (!r && ml_profiler_options(t->root)->record_ranges)
				r = merge_written(out, w, nw, e->info.pid);
			private_pages += priv;
			e->info.dirty_pages = priv + shared;
			e->info.shared_dirty_pages = shared;
			e->info.cumulative_dirty_bytes += (priv + shared) * (int64_t)PG;
			e->info.hot_bytes = s->hot.hot_bytes;
			e->info.tracked_vmas = s->tracked_vmas;
			e->info.shared_untracked = s->shared_untracked;
			out->total_vmas += s->total_vmas;
			out->tracked_vmas += s->tracked_vmas;
			out->hot_vmas += s->hot_vmas;
			out->shared_untracked += s->shared_untracked;
			out->scan_ns += s->scan_ns;
		}
		out->procs[i] = e->info;
	}
	out->nprocs = t->n;
	out->nregions = k;
	free(sampled.r);
	if (!r)
		r = mli_profiler_sample_own_paths(out);
	if (r) {
		free(shm.r);
		free(shm_hot.r);
		return r;
	}
	/* a sampled process's shared pages: estimated, so not deduplicated */
	out->shared_dirty_pages = shm_union_pages(&shm) + shared_est;
	out->hot.hot_bytes += (uint64_t)shm_union_pages(&shm_hot) * PG;
	free(shm.r);
	free(shm_hot.r);

	int64_t pages = private_pages + out->shared_dirty_pages;
	double elapsed = rs->t_ms / 1000.0;

	out->dirty.dirty_pages = pages;
	out->dirty.dirty_bytes = pages * (int64_t)PG;
	out->dirty.dirty_rate_pages_per_sec = out->interval_s > 0 ? pages / out->interval_s : 0;
	t->cumulative_dirty_bytes += out->dirty.dirty_bytes;
	out->dirty.cumulative_dirty_bytes = t->cumulative_dirty_bytes;
	out->dirty.avg_dirty_rate = elapsed > 0 ? t->cumulative_dirty_bytes / elapsed : 0;
	out->dirty.timestamp_ms = rs->dirty.timestamp_ms;
	out->tick_ns = ml_mono_ns() - t0;
	return 0;
}

int mli_ptree_tick(struct ptree *t, struct ml_profiler *root, struct ml_profiler_sample *out,
		   struct ml_err *err)
{
	uint64_t t0 = ml_mono_ns();
	int r;

	memset(out, 0, sizeof(*out));
	/* new processes first: baselined now, their writes count from the next interval */
	if (discover(t))
		return ml_err_set(err, ENOMEM, "out of memory");
	r = mli_profiler_tick_one(root, &t->v[0].s, err);
	if (r) {
		out->target_exited = t->v[0].s.target_exited;
		ml_profiler_sample_free(&t->v[0].s);
		return r;
	}
	t->v[0].have_s = true;
	for (size_t i = 1; i < t->n; i++) {
		struct ptree_proc *e = &t->v[i];
		struct ml_err e2 = { 0 };

		if (!e->p) {
			/* one that could not be profiled: its pid may be taken again once it is
			 * gone */
			if (e->info.failed && ml_proc_exited(e->info.pid, 0)) {
				e->info.failed = false;
				let_go(e, true, NULL);
			}
			continue;
		}
		r = mli_profiler_tick_one(e->p, &e->s, &e2);
		if (!r) {
			e->have_s = true;
			continue;
		}
		if (r == -ESRCH || e->s.target_exited || ml_proc_exited(e->info.pid, 0))
			let_go(e, true, NULL);
		else if (r != -EAGAIN) /* -EAGAIN: its maps changed throughout; next time */
			let_go(e, false, e2.msg);
		ml_profiler_sample_free(&e->s);
	}
	prune_exited(t);
	r = merge(t, out, t0);
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].have_s)
			ml_profiler_sample_free(&t->v[i].s);
		t->v[i].have_s = false;
	}
	if (r) {
		ml_profiler_sample_free(out);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

void mli_ptree_release(struct ptree *t)
{
	struct ml_err e;

	for (size_t i = 0; t && i < t->n; i++)
		if (t->v[i].p)
			ml_profiler_release(t->v[i].p, &e);
}

void mli_ptree_reinit(struct ptree *t)
{
	if (!t)
		return;
	t->cumulative_dirty_bytes = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct ptree_proc *e = &t->v[i];
		struct ml_err err = { 0 };

		e->info.cumulative_dirty_bytes = 0;
		e->info.dirty_pages = e->info.shared_dirty_pages = 0;
		e->info.hot_bytes = 0;
		if (!e->p)
			continue;
		if (ml_profiler_reinit(e->p, &err))
			let_go(e, ml_proc_exited(e->info.pid, 0), err.msg);
	}
}

void mli_ptree_close(struct ptree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		ml_profiler_close(t->v[i].p);
		ml_profiler_sample_free(&t->v[i].s);
	}
	free(t->v);
	free(t->walk);
	free(t);
}
