// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memlens/heat.h"
#include "../scan/pagescan.h"
#include "memlens/profiler.h"
#include "../inject/uffd.h"
#include "memlens/clock.h"
#include "memlens/proc.h"
#include "memlens/sample.h"
#include "profiler_int.h"

#define SCAN_VEC_LEN 1024
#define PG 4096ULL

struct ml_profiler {
	pid_t pid;
	struct ml_profiler_opts o;
	int uffd;
	struct pagescan ps;
	int maps_fd;
	char *maps_buf;
	size_t maps_bufsz;
	char exe[PATH_MAX];
	struct ml_kind_src *kinds; /* what classifying the VMAs reads beyond maps */
	char *prev_maps; /* the maps text p->vmas was parsed from */
	size_t prev_len, prev_cap;
	struct ml_vma_set vmas;
	struct ml_rangeset registered; /* private VMAs registered by us and mapped now */
	struct ml_rangeset shm_registered; /* shared memory VMAs, likewise */
	bool shm_wp; /* the uffd write-protects shared memory (WP_HUGETLBFS_SHMEM) */
	int shm_untracked; /* writable shared memory VMAs this kernel cannot track */
	struct ptree *tree; /* with o.tree: the other processes of the tree */
	struct ml_rangeset ever; /* every range we ever registered */
	struct ml_rangeset foreign; /* ranges owned by another userfaultfd */
	struct ml_heat heat;
	struct ml_hotrange hr; /* heat per page, from the written ranges */
	struct ml_attach_stats attach;
	uint64_t start_ns, last_scan_ns;
	int64_t cumulative_dirty_bytes;
	uint64_t seq;
	bool released;
	bool restart; /* the loop ran when released: ml_profiler_reinit() restarts it */
	bool count_new; /* count pages of VMAs that appeared since the last tick */

	/* sampled tracking (o.sample_k > 1 or o.max_overhead; memlens/sample.h) */
	bool sampling;
	bool fault_measured; /* pol.fault_ns is ml_wp_fault_ns()'s */
	struct ml_sample_policy pol;
	struct ml_sample_sched sched; /* the blocks write-protected now (k 1: every page) */
	struct ml_sample_est *est; /* per VMA index, this interval */
	size_t est_cap;
	struct ml_range *seen; /* the pieces of blocks scanned this interval */
	size_t nseen, seen_cap;
	uint64_t minflt; /* the target's minor faults at the last tick */

	/* per-tick scratch */
	uint64_t *dirty; /* per VMA index */
	size_t dirty_cap;
	struct ml_range *written;
	size_t nwritten, written_cap;

	/* thread */
	pthread_t thread;
	bool thread_started, running, stop_req;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	ml_profiler_tick_fn fn;
	void *fn_arg;
	struct ml_profiler_sample latest;
	struct ml_err thread_err;
	int thread_rc;
};

pid_t ml_profiler_pid(const struct ml_profiler *p)
{
	return p->pid;
}

const struct ml_attach_stats *ml_profiler_attach_stats(const struct ml_profiler *p)
{
	return &p->attach;
}

const struct ml_profiler_opts *ml_profiler_options(const struct ml_profiler *p)
{
	return &p->o;
}

/*
 * Re-read the maps; parse, classify and report a change only when the text
 * differs from the last one (most ticks of a steady process: no work). A
 * text that changed while it was read is read again (ml_maps_parse_fd()).
 */
static int read_maps(struct ml_profiler *p, bool *changed, struct ml_err *err)
{
	ssize_t len = ml_maps_read_raw(p->maps_fd, &p->maps_buf, &p->maps_bufsz, err);

	if (len < 0)
		return (int)len;
	if (p->prev_maps && (size_t)len == p->prev_len &&
	    !memcmp(p->prev_maps, p->maps_buf, (size_t)len)) {
		*changed = false;
		return 0;
	}
	*changed = true;
	p->prev_len = 0;
	len = ml_maps_parse_fd(p->maps_fd, &p->maps_buf, &p->maps_bufsz, (size_t)len, &p->vmas,
			       err);
	if (len < 0)
		return (int)len;
	ml_maps_classify_proc(p->kinds, &p->vmas, p->exe);
	if ((size_t)len > p->prev_cap) {
		char *n = realloc(p->prev_maps, (size_t)len);

		if (!n)
			return 0; /* no cache: every tick parses */
		p->prev_maps = n;
		p->prev_cap = (size_t)len;
	}
	memcpy(p->prev_maps, p->maps_buf, (size_t)len);
	p->prev_len = (size_t)len;
	return 0;
}

struct scan_ctx {
	struct ml_profiler *p;
	long vma_hint;
};

static int attribute(const struct page_region *reg, void *arg);
static void clear_vec(struct pagescan *ps);

struct reg_ctx {
	struct ml_profiler *p;
	struct ml_err *err;
	int fatal;
	bool shared; /* the range is shared memory */
};

static struct ml_rangeset *reg_set(struct ml_profiler *p, bool shared)
{
	return shared ? &p->shm_registered : &p->registered;
}

/* Register and baseline one range of a VMA that we do not track yet. */
static int register_gap(uint64_t start, uint64_t end, void *arg)
{
	struct reg_ctx *c = arg;
	struct ml_profiler *p = c->p;
	struct ml_err e = { 0 };
	int r;

	if (ml_rangeset_intersects(&p->foreign, start, end))
		return 0;
	r = mli_uffd_register_wp(p->uffd, start, end, &e);
	if (r == -EBUSY) {
		/* the target's own userfaultfd owns it: never touch it */
		return ml_rangeset_add(&p->foreign, start, end);
	}
	if (r)
		return 0; /* unmapped meanwhile, or a mapping uffd cannot track */
	if (ml_rangeset_add(&p->ever, start, end))
		return -ENOMEM;
	if (p->sched.k > 1) {
		/*
		 * Sampled: protect_sample() write-protects its blocks; a new
		 * VMA's present pages in this interval's blocks were written
		 * since it appeared, and the scan finds them so.
		 */
		return ml_rangeset_add(reg_set(p, c->shared), start, end);
	}
	if (p->count_new) {
		/*
		 * The VMA (or this part of it) did not exist at the last scan:
		 * its present anonymous pages were written since (reads map the
		 * zero page, which is not counted). Count them while
		 * write-protecting them, or writes to fresh mappings made
		 * between two scans would go unseen.
		 */
		struct scan_ctx sc = { p, -1 };
		long n = mli_pagescan_protect_present(&p->ps, start, end, c->shared, attribute, &sc,
						      &e);

		clear_vec(&p->ps);
		r = n < 0 ? (int)n : 0;
	} else {
		r = mli_pagescan_baseline(&p->ps, start, end, c->shared, &e);
	}
	if (r) {
		if (r == -ESRCH || r == -ENOTSUP) {
			*c->err = e;
			c->fatal = r;
			return r;
		}
		return 0;
	}
	return ml_rangeset_add(reg_set(p, c->shared), start, end);
}

/* sync_registration() of the private VMAs, or of the shared memory ones. */
static int sync_set(struct ml_profiler *p, bool shared, struct ml_err *err)
{
	struct ml_rangeset next, *reg = reg_set(p, shared);
	struct reg_ctx c = { p, err, 0, shared };
	int r = 0;

	ml_rangeset_init(&next);
	if (shared)
		p->shm_untracked = 0;
	for (size_t i = 0; i < p->vmas.n; i++) {
		const struct ml_vma *v = &p->vmas.v[i];

		if (shared ? !ml_vma_is_writable_shm(v) : !ml_vma_is_writable_private(v))
			continue;
		if (shared && !p->shm_wp) {
			p->shm_untracked++;
			continue;
		}
		if (ml_rangeset_covers(reg, v->start, v->end)) {
			if (ml_rangeset_add(&next, v->start, v->end))
				goto nomem;
			continue;
		}
		r = ml_rangeset_gaps(reg, v->start, v->end, register_gap, &c);
		if (c.fatal) {
			ml_rangeset_free(&next);
			return c.fatal;
		}
		if (r)
			goto nomem;
		/* keep what was registered already, and what register_gap
		 * added to the set just now */
		for (size_t k = 0; k < reg->n; k++) {
			uint64_t a = reg->r[k].start, b = reg->r[k].end;

			if (b <= v->start || a >= v->end)
				continue;
			if (ml_rangeset_add(&next, a > v->start ? a : v->start,
					    b < v->end ? b : v->end))
				goto nomem;
		}
	}
	ml_rangeset_free(reg);
	*reg = next;
	return 0;
nomem:
	ml_rangeset_free(&next);
	return ml_err_set(err, ENOMEM, "out of memory tracking VMAs");
}

/*
 * Bring the registered sets in line with the current maps: drop what is
 * gone, register and baseline what is new (only the new part of a VMA
 * that grew, so writes to the old part since the last scan are kept).
 */
static int sync_registration(struct ml_profiler *p, struct ml_err *err)
{
	int r = sync_set(p, false, err);

	return r ? r : sync_set(p, true, err);
}

static int attribute(const struct page_region *reg, void *arg)
{
	struct scan_ctx *c = arg;
	struct ml_profiler *p = c->p;
	uint64_t s = reg->start, e = reg->end;

	/* always kept: the hot ranges are computed from them */
	if (p->nwritten && p->written[p->nwritten - 1].end == s) {
		p->written[p->nwritten - 1].end = e;
	} else {
		if (p->nwritten == p->written_cap) {
			size_t cap = p->written_cap ? p->written_cap * 2 : 256;
			struct ml_range *n = realloc(p->written, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			p->written = n;
			p->written_cap = cap;
		}
		p->written[p->nwritten].start = s;
		p->written[p->nwritten].end = e;
		p->nwritten++;
	}
	while (s < e) {
		long i = c->vma_hint;

		if (i < 0 || (size_t)i >= p->vmas.n || p->vmas.v[i].start > s ||
		    p->vmas.v[i].end <= s)
			i = ml_vma_find(&p->vmas, s);
		if (i < 0)
			break; /* raced with munmap */
		uint64_t stop = p->vmas.v[i].end < e ? p->vmas.v[i].end : e;

		p->dirty[i] += (stop - s) / PG;
		c->vma_hint = i;
		s = stop;
	}
	return 0;
}

/* Zero the entries the kernel filled, so a failed call's prefix can be read. */
static void clear_vec(struct pagescan *ps)
{
	size_t n = 0;

	while (n < ps->vec_len && ps->vec[n].end)
		n++;
	memset(ps->vec, 0, n * sizeof(*ps->vec));
}

static int salvage_partial(struct ml_profiler *p, struct scan_ctx *c)
{
	for (size_t i = 0; i < p->ps.vec_len && p->ps.vec[i].end; i++) {
		int r = attribute(&p->ps.vec[i], c);

		if (r)
			return r;
	}
	clear_vec(&p->ps);
	return 0;
}

/*
 * A VMA in [start, end) is not registered although our set says so: it was
 * unmapped and mapped again at the same place between two scans. Scan VMA
 * by VMA; register and baseline the replaced ones.
 */
static int rescan_run(struct ml_profiler *p, struct scan_ctx *c, uint64_t start, uint64_t end,
		      bool shared, struct ml_err *err)
{
	for (size_t i = 0; i < p->vmas.n; i++) {
		const struct ml_vma *v = &p->vmas.v[i];
		uint64_t a = v->start > start ? v->start : start;
		uint64_t b = v->end < end ? v->end : end;
		struct ml_err e = { 0 };
		long r;

		if (a >= b)
			continue;
		r = mli_pagescan_dirty(&p->ps, a, b,
				       PAGESCAN_CHECK_REGISTERED | (shared ? PAGESCAN_SHARED : 0),
				       attribute, c, &e);
		clear_vec(&p->ps);
		if (r == -EPERM) {
			struct reg_ctx rc = { p, err, 0, shared };

			ml_rangeset_remove(reg_set(p, shared), a, b);
			p->count_new = true;
			register_gap(a, b, &rc);
			p->count_new = false;
			if (rc.fatal)
				return rc.fatal;
		} else if (r < 0) {
			*err = e;
			return (int)r;
		}
	}
	return 0;
}

static int scan_set(struct ml_profiler *p, bool shared, struct ml_err *err)
{
	struct scan_ctx c = { p, -1 };
	struct ml_rangeset *reg = reg_set(p, shared);
	int flags = PAGESCAN_CHECK_REGISTERED | (shared ? PAGESCAN_SHARED : 0);

	for (size_t k = 0; k < reg->n; k++) {
		uint64_t a = reg->r[k].start, b = reg->r[k].end;
		struct ml_err e = { 0 };
		long r = mli_pagescan_dirty(&p->ps, a, b, flags, attribute, &c, &e);

		if (r == -EPERM) {
			r = salvage_partial(p, &c);
			if (!r)
				r = rescan_run(p, &c, a, b, shared, err);
			if (r)
				return (int)r;
			continue;
		}
		clear_vec(&p->ps);
		if (r < 0) {
			*err = e;
			return (int)r;
		}
	}
	return 0;
}

static int scan_all(struct ml_profiler *p, struct ml_err *err)
{
	int r = scan_set(p, false, err);

	return r ? r : scan_set(p, true, err);
}

static int add_seen(struct ml_profiler *p, uint64_t a, uint64_t b)
{
	if (p->nseen && p->seen[p->nseen - 1].end == a) {
		p->seen[p->nseen - 1].end = b;
		return 0;
	}
	if (p->nseen == p->seen_cap) {
		size_t cap = p->seen_cap ? p->seen_cap * 2 : 256;
		struct ml_range *n = realloc(p->seen, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->seen = n;
		p->seen_cap = cap;
	}
	p->seen[p->nseen++] = (struct ml_range){ a, b };
	return 0;
}

/*
 * One sampled piece [a, b) of VMA @i: its pages written since
 * protect_sample() write-protected it, reported without protecting them
 * again (protect_sample() decides what the next interval watches).
 */
static int scan_piece(struct ml_profiler *p, struct scan_ctx *c, size_t i, uint64_t a, uint64_t b,
		      bool shared, struct ml_err *err)
{
	int flags = PAGESCAN_CHECK_REGISTERED | PAGESCAN_NO_WP | (shared ? PAGESCAN_SHARED : 0);
	struct ml_err e = { 0 };
	long n = mli_pagescan_dirty(&p->ps, a, b, flags, attribute, c, &e);

	clear_vec(&p->ps);
	if (n == -EPERM) {
		/* unmapped and mapped again since the last scan: track the new one */
		const struct ml_vma *v = &p->vmas.v[i];
		struct reg_ctx rc = { p, err, 0, shared };

		ml_rangeset_remove(reg_set(p, shared), v->start, v->end);
		register_gap(v->start, v->end, &rc);
		if (rc.fatal)
			return rc.fatal;
		n = mli_pagescan_dirty(&p->ps, a, b, flags, attribute, c, &e);
		clear_vec(&p->ps);
		if (n == -EPERM)
			return 0; /* not tracked after all: not in the sample */
	}
	if (n < 0) {
		*err = e;
		return (int)n;
	}
	ml_sample_est_add(&p->est[i], (b - a) / PG, (uint64_t)n);
	return add_seen(p, a, b) ? ml_err_set(err, ENOMEM, "out of memory") : 0;
}

/* The sampled blocks of every tracked VMA, in address order. */
static int scan_sampled(struct ml_profiler *p, struct ml_err *err)
{
	struct scan_ctx c = { p, -1 };

	p->nseen = 0;
	for (size_t i = 0; i < p->vmas.n; i++) {
		const struct ml_vma *v = &p->vmas.v[i];
		bool shared = ml_rangeset_intersects(&p->shm_registered, v->start, v->end);
		struct ml_rangeset *reg = reg_set(p, shared);
		uint64_t pos = v->start, a, b;

		if (!shared && !ml_rangeset_intersects(reg, v->start, v->end))
			continue;
		while (ml_sample_next(&p->sched, pos, v->end, &a, &b)) {
			int r;

			pos = b;
			if (!ml_rangeset_covers(reg, a, b))
				continue;
			r = scan_piece(p, &c, i, a, b, shared, err);
			if (r)
				return r;
		}
	}
	return 0;
}

/*
 * Write-protect the pages the next interval watches: the blocks of
 * p->sched (every page for k = 1). With @clear, the protection of the
 * last sample is cleared first, so that pages outside the next sample do
 * not fault. A failure to clear costs faults, never a count: a page is
 * only counted in an interval its block was write-protected for at its
 * start (protect_sample() protects a block's pages again before it is
 * scanned).
 */
static int protect_sample(struct ml_profiler *p, bool clear, struct ml_err *err)
{
	for (int sh = 0; sh < 2; sh++) {
		const struct ml_rangeset *reg = reg_set(p, sh);

		for (size_t k = 0; k < reg->n; k++) {
			uint64_t a = reg->r[k].start, b = reg->r[k].end, pos = a, x, y;
			struct ml_err e = { 0 };
			int r = 0;

			if (clear)
				mli_uffd_unprotect(p->uffd, a, b, &e);
			if (p->sched.k <= 1) {
				r = mli_pagescan_baseline(&p->ps, a, b, sh, &e);
			} else {
				while (!r && ml_sample_next(&p->sched, pos, b, &x, &y)) {
					r = mli_pagescan_baseline(&p->ps, x, y, sh, &e);
					pos = y;
				}
			}
			if (r == -ESRCH) {
				*err = e;
				return r;
			}
		}
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct ml_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The blocks of VMA @v in an exact interval, every one, the written
 * pages of each from the written ranges @w[*j..n) (sorted; *j moves on).
 */
static void exact_blocks(const struct ml_vma *v, const struct ml_range *w, size_t n, size_t *j,
			 struct ml_sample_est *e)
{
	for (uint64_t a = v->start, b; a < v->end; a = b) {
		uint64_t d = 0;

		b = (a / ML_SAMPLE_BLOCK_BYTES + 1) * ML_SAMPLE_BLOCK_BYTES;
		if (b > v->end)
			b = v->end;
		while (*j < n && w[*j].end <= a)
			(*j)++;
		for (size_t t = *j; t < n && w[t].start < b; t++)
			d += ((w[t].end < b ? w[t].end : b) - (w[t].start > a ? w[t].start : a)) /
			     PG;
		ml_sample_est_add(e, (b - a) / PG, d);
	}
}

/*
 * With an error bound: the interval's unit error (memlens/sample.h), the
 * largest of its VMAs' of 2 * k_err blocks or more (those a sample of
 * 1/k_err holds two blocks of at least): from the sampled blocks, or in
 * an exact interval from every block. -1: none measured.
 */
static double unit_error(struct ml_profiler *p, bool sampled)
{
	const uint64_t least = 2ULL * p->pol.k_err * ML_SAMPLE_BLOCK_PAGES;
	struct ml_range *w = NULL;
	size_t j = 0;
	double u = -1;

	if (!sampled && p->nwritten) {
		w = malloc(p->nwritten * sizeof(*w));
		if (!w)
			return -1; /* not measured this time */
		memcpy(w, p->written, p->nwritten * sizeof(*w));
		qsort(w, p->nwritten, sizeof(*w), cmp_range);
	}
	for (size_t i = 0; i < p->vmas.n; i++) {
		const struct ml_vma *v = &p->vmas.v[i];
		struct ml_sample_est all = { 0 };
		double ui;

		if (vma_pages(v) < least ||
		    (!ml_rangeset_intersects(&p->registered, v->start, v->end) &&
		     !ml_rangeset_intersects(&p->shm_registered, v->start, v->end)))
			continue;
		if (sampled) {
			ui = ml_sample_est_unit_err(&p->est[i], vma_pages(v));
		} else if (!p->dirty[i] || p->dirty[i] >= vma_pages(v)) {
			ui = 0; /* none written or all: no spread */
		} else {
			exact_blocks(v, w, p->nwritten, &j, &all);
			ui = ml_sample_est_unit_err(&all, vma_pages(v));
		}
		if (ui > u)
			u = ui;
	}
	free(w);
	return u;
}

/*
 * After a scan: the policy's k and interval for the next interval, and
 * the pages it watches write-protected. @faults: the pages found written.
 */
static int next_sample(struct ml_profiler *p, uint64_t faults, double interval_s,
		       struct ml_profiler_sampling *out, struct ml_err *err)
{
	unsigned int k_old = p->sched.k;
	struct ml_proc_stat st;

	if (!ml_proc_stat_read(p->pid, 0, &st)) {
		out->minflt = p->minflt && st.minflt >= p->minflt ? st.minflt - p->minflt : 0;
		p->minflt = st.minflt;
	}
	out->on = true;
	out->k = k_old;
	out->faults = faults;
	if (p->pol.max_err > 0) {
		out->cost = ml_sample_policy_step_err(&p->pol, faults, interval_s,
						      unit_error(p, k_old > 1));
		out->max_error = p->pol.max_err;
		out->error = p->pol.err;
		out->next_error = p->pol.next_err;
	} else {
		out->cost = ml_sample_policy_step(&p->pol, faults, interval_s);
	}
	p->sched.k = p->pol.k;
	p->sched.round++;
	p->o.interval_ms = p->pol.interval_ms;
	out->next_k = p->sched.k;
	out->next_interval_ms = p->o.interval_ms;
	out->fault_ns = p->pol.fault_ns;
	out->fault_ns_measured = p->fault_measured;
	if (k_old <= 1 && p->sched.k <= 1)
		return 0; /* exact: the scan protected every written page again */
	return protect_sample(p, p->sched.k > 1, err);
}

static int ensure_scratch(struct ml_profiler *p)
{
	if (p->vmas.n > p->dirty_cap) {
		uint64_t *d = realloc(p->dirty, p->vmas.n * sizeof(*d));

		if (!d)
			return -ENOMEM;
		p->dirty = d;
		p->dirty_cap = p->vmas.n;
	}
	memset(p->dirty, 0, p->vmas.n * sizeof(*p->dirty));
	if (p->sampling && p->vmas.n > p->est_cap) {
		struct ml_sample_est *e = realloc(p->est, p->vmas.n * sizeof(*e));

		if (!e)
			return -ENOMEM;
		p->est = e;
		p->est_cap = p->vmas.n;
	}
	if (p->sampling)
		memset(p->est, 0, p->vmas.n * sizeof(*p->est));
	p->nwritten = 0;
	return 0;
}

/* The regions' paths point into the maps text: give the sample its own copy. */
static int own_paths(struct ml_profiler_sample *s)
{
	size_t len = 1, off = 0;

	for (size_t i = 0; i < s->nregions; i++) {
		if (!s->regions[i].path)
			s->regions[i].path = "";
		len += strlen(s->regions[i].path) + 1;
	}
	s->paths = malloc(len);
	if (!s->paths)
		return -ENOMEM;
	for (size_t i = 0; i < s->nregions; i++) {
		size_t n = strlen(s->regions[i].path) + 1;

		memcpy(s->paths + off, s->regions[i].path, n);
		s->regions[i].path = s->paths + off;
		off += n;
	}
	return 0;
}

/*
 * The page-granular heat of the @n tracked VMAs of @out, from this
 * interval's writes (@sampled: of the pages watched, p->seen).
 */
static int update_hot_ranges(struct ml_profiler *p, struct ml_profiler_sample *out, size_t n,
			     bool sampled)
{
	struct ml_range *v = malloc((n ? n : 1) * sizeof(*v));
	int r;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct ml_range){ out->regions[i].start, out->regions[i].end };
	if (sampled)
		r = ml_hotrange_update_seen(&p->hr, v, n, p->written, p->nwritten,
					    p->seen ? p->seen : v, p->nseen);
	else
		r = ml_hotrange_update(&p->hr, v, n, p->written, p->nwritten);
	free(v);
	if (!r)
		r = ml_hotrange_get(&p->hr, &out->hot);
	if (!r)
		out->hot.estimated = sampled;
	for (size_t i = 0; !r && i < out->hot.n; i++)
		out->hot.r[i].pid = p->pid;
	return r;
}

int mli_profiler_sample_own_paths(struct ml_profiler_sample *s)
{
	return own_paths(s);
}

/*
 * A sampled interval: VMA @i's written pages estimated from its sampled
 * blocks into @hs and @reg (the @n-th tracked VMA), the ratio itself into
 * (*ratio)[n]. A VMA none of whose blocks was sampled keeps its last
 * estimate. False: out of memory.
 */
static bool estimate(struct ml_profiler *p, size_t i, struct ml_heat_sample *hs,
		     struct ml_profiler_region *reg, double **ratio, size_t n)
{
	const struct ml_vma *v = &p->vmas.v[i];
	struct ml_sample_result res;
	double *r = realloc(*ratio, (n + 1) * sizeof(*r));

	if (!r)
		return false;
	*ratio = r;
	reg->estimated = true;
	if (ml_sample_est_result(&p->est[i], vma_pages(v), &res)) {
		hs->dirty_pages = res.written_pages;
		reg->sampled_pages = p->est[i].pages;
		reg->sampled_dirty = p->est[i].written;
		reg->ratio_stderr = res.stderr_;
		r[n] = res.ratio;
	} else {
		const struct ml_heat_state *st = ml_heat_find(&p->heat, v->start);

		hs->dirty_pages = st && st->end == v->end ? st->dirty_pages : 0;
		reg->ratio_stderr = 0.5; /* not watched this interval */
		r[n] = 0;
	}
	return true;
}

static int fill_sample(struct ml_profiler *p, struct ml_profiler_sample *out, uint64_t now,
		       uint64_t t0, uint64_t scan_ns, bool sampled)
{
	struct ml_heat_sample *hs;
	size_t n = 0;
	int64_t pages = 0;
	double *est_ratio = NULL;

	hs = calloc(p->vmas.n ? p->vmas.n : 1, sizeof(*hs));
	out->regions = calloc(p->vmas.n ? p->vmas.n : 1, sizeof(*out->regions));
	if (!hs || !out->regions) {
		free(hs);
		free(out->regions);
		out->regions = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->vmas.n; i++) {
		const struct ml_vma *v = &p->vmas.v[i];

		bool shared = ml_rangeset_intersects(&p->shm_registered, v->start, v->end);

		if (!shared && !ml_rangeset_intersects(&p->registered, v->start, v->end))
			continue;
		hs[n].start = v->start;
		hs[n].end = v->end;
		hs[n].dirty_pages = p->dirty[i];
		if (sampled && !estimate(p, i, &hs[n], &out->regions[n], &est_ratio, n)) {
			free(hs);
			free(out->regions);
			out->regions = NULL;
			return -ENOMEM;
		}
		pages += (int64_t)hs[n].dirty_pages;
		out->regions[n].start = v->start;
		out->regions[n].end = v->end;
		out->regions[n].kind = v->kind;
		out->regions[n].total_pages = vma_pages(v);
		out->regions[n].dirty_pages = hs[n].dirty_pages;
		out->regions[n].path = ml_vma_path(&p->vmas, v);
		out->regions[n].pid = p->pid;
		out->regions[n].shared = shared;
		out->regions[n].dev = (uint32_t)(v->dev_major << 20 | v->dev_minor);
		out->regions[n].inode = v->inode;
		out->regions[n].pgoff = v->offset / PG;
		if (p->o.count_resident) {
			long res = mli_pagescan_resident(&p->ps, v->start, v->end, shared, NULL);

			/* unmapped meanwhile: none (the next maps read drops it) */
			out->regions[n].has_resident = true;
			out->regions[n].resident_pages = res > 0 ? (uint64_t)res : 0;
			clear_vec(&p->ps);
		}
		n++;
	}
	if (ml_heat_update(&p->heat, hs, n)) {
		free(hs);
		free(est_ratio);
		free(out->regions);
		out->regions = NULL;
		return -ENOMEM;
	}
	free(hs);
	if (update_hot_ranges(p, out, n, sampled)) {
		free(est_ratio);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ml_heat_state *st = ml_heat_find(&p->heat, out->regions[i].start);

		out->regions[i].written_ratio = st ? st->ratio : 0;
		if (est_ratio && out->regions[i].sampled_pages)
			out->regions[i].written_ratio = est_ratio[i];
		out->regions[i].consecutive_hot = st ? st->consecutive_hot : 0;
		out->regions[i].hot = st ? st->hot : false;
		out->hot_vmas += out->regions[i].hot;
	}
	free(est_ratio);
	out->nregions = n;
	if (own_paths(out))
		return -ENOMEM;
	out->tracked_vmas = (int)n;
	out->shared_untracked = p->shm_untracked;
	out->total_vmas = (int)p->vmas.n;
	out->seq = ++p->seq;
	out->t_ms = (int64_t)((now - p->start_ns) / 1000000);
	out->interval_s = (double)(now - p->last_scan_ns) / 1e9;
	out->dirty.dirty_pages = pages;
	out->dirty.dirty_bytes = pages * (int64_t)PG;
	out->dirty.dirty_rate_pages_per_sec = out->interval_s > 0 ? pages / out->interval_s : 0;
	p->cumulative_dirty_bytes += out->dirty.dirty_bytes;
	out->dirty.cumulative_dirty_bytes = p->cumulative_dirty_bytes;
	double elapsed = (double)(now - p->start_ns) / 1e9;
	out->dirty.avg_dirty_rate = elapsed > 0 ? p->cumulative_dirty_bytes / elapsed : 0;
	out->dirty.timestamp_ms = ml_wall_ms();
	if (p->o.record_ranges && p->nwritten) {
		out->written = malloc(p->nwritten * sizeof(*out->written));
		if (!out->written)
			return -ENOMEM;
		memcpy(out->written, p->written, p->nwritten * sizeof(*out->written));
		out->nwritten = p->nwritten;
	}
	p->last_scan_ns = now;
	out->scan_ns = scan_ns;
	out->tick_ns = ml_mono_ns() - t0;
	return 0;
}

int mli_profiler_tick_one(struct ml_profiler *p, struct ml_profiler_sample *out, struct ml_err *err)
{
	uint64_t t0 = ml_mono_ns(), ts, now, faults = 0;
	bool changed, sampled;
	int r;

	memset(out, 0, sizeof(*out));
	if (p->released)
		return ml_err_set(err, EBUSY, "profiling is paused for a checkpoint");
	r = read_maps(p, &changed, err);
	if (r) {
		if (r == -ESRCH) {
			out->target_exited = true;
			ml_err_set(err, ESRCH, "the target process %d exited", (int)p->pid);
		}
		return r;
	}
	if (ensure_scratch(p))
		return ml_err_set(err, ENOMEM, "out of memory");
	if (changed) {
		p->count_new = true;
		r = sync_registration(p, err);
		p->count_new = false;
		if (r) {
			p->prev_len = 0; /* retry at the next tick */
			return r;
		}
	}
	ts = ml_mono_ns();
	sampled = p->sched.k > 1;
	r = sampled ? scan_sampled(p, err) : scan_all(p, err);
	now = ml_mono_ns();
	if (r) {
		if (r == -ESRCH)
			out->target_exited = true;
		return r;
	}
	for (size_t i = 0; i < p->vmas.n; i++)
		faults += p->dirty[i];
	r = fill_sample(p, out, now, t0, now - ts, sampled);
	if (r)
		return ml_err_set(err, ENOMEM, "out of memory");
	if (p->sampling) {
		r = next_sample(p, faults, out->interval_s, &out->sampling, err);
		if (r) {
			if (r == -ESRCH)
				out->target_exited = true;
			ml_profiler_sample_free(out);
			return r;
		}
		out->tick_ns = ml_mono_ns() - t0;
	}
	return 0;
}

const struct ml_range *mli_profiler_written(const struct ml_profiler *p, size_t *n)
{
	*n = p->nwritten;
	return p->written;
}

int ml_profiler_tick(struct ml_profiler *p, struct ml_profiler_sample *out, struct ml_err *err)
{
	/* the interval the tick was due after: the tick may choose the next one */
	unsigned int interval_ms = p->o.interval_ms;
	int r = p->tree ? mli_ptree_tick(p->tree, p, out, err) : mli_profiler_tick_one(p, out, err);

	if (r)
		return r;
	out->interval_ms = interval_ms;
	out->tick_over_interval = out->tick_ns / 1000 > (uint64_t)interval_ms * 1000;
	/* what ml_profiler_latest() returns, whether ticks come from the thread or not */
	pthread_mutex_lock(&p->lock);
	ml_profiler_sample_free(&p->latest);
	if (ml_profiler_sample_copy(&p->latest, out))
		memset(&p->latest, 0, sizeof(p->latest));
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static int setup_tracking(struct ml_profiler *p, struct ml_err *err)
{
	bool changed;
	int r;

	p->prev_len = 0; /* registration starts from scratch: parse */
	r = read_maps(p, &changed, err);

	if (r)
		return r;
	r = sync_registration(p, err);
	if (!r && p->sched.k > 1)
		r = protect_sample(p, false, err); /* registered only: the first sample's blocks */
	if (!r && p->sampling) {
		struct ml_proc_stat st;

		p->minflt = ml_proc_stat_read(p->pid, 0, &st) ? 0 : st.minflt;
	}
	if (r)
		return r;
	p->start_ns = p->last_scan_ns = ml_mono_ns();
	p->cumulative_dirty_bytes = 0;
	return 0;
}

int ml_profiler_open(struct ml_profiler **out, pid_t pid, const struct ml_profiler_opts *o,
		     struct ml_err *err)
{
	struct ml_profiler *p;
	char path[64];
	ssize_t n;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p)
		return ml_err_set(err, ENOMEM, "out of memory");
	p->pid = pid;
	p->uffd = -1;
	p->maps_fd = -1;
	p->ps.fd = -1;
	r = ml_opts_load(&p->o, sizeof(p->o), o, "ml_profiler_opts", err);
	if (r) {
		free(p);
		return r;
	}
	if (!p->o.interval_ms)
		p->o.interval_ms = ML_PROFILER_DEFAULT_INTERVAL_MS;
	if (p->o.hot_threshold == 0)
		p->o.hot_threshold = ML_HEAT_DEFAULT_THRESHOLD;
	if (!p->o.hot_consecutive)
		p->o.hot_consecutive = ML_HEAT_DEFAULT_CONSECUTIVE;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	ml_vma_set_init(&p->vmas);
	if (ml_heat_init(&p->heat, p->o.hot_threshold, p->o.hot_consecutive)) {
		r = ml_err_set(err, EINVAL,
			       "invalid heat parameters: threshold must be in (0, 1], consecutive "
			       "in [1, %d]",
			       ML_HEAT_WINDOW);
		goto fail;
	}
	if (ml_hotrange_init(&p->hr, p->o.hot_consecutive, p->o.hot_cool, p->o.hot_ranges_max)) {
		r = ml_err_set(err, EINVAL,
			       "invalid hot-range parameters: cool must be in [1, %d], the bound "
			       "in [1, %d]",
			       ML_HOTRANGE_MAX_INTERVALS, ML_HOTRANGE_MAX_MAX);
		goto fail;
	}
	if (p->o.sample_k > ML_SAMPLE_K_MAX ||
	    !(p->o.max_overhead >= 0 && p->o.max_overhead <= 1) ||
	    !(p->o.max_error >= 0 && p->o.max_error <= 1)) {
		r = ml_err_set(err, EINVAL,
			       "invalid sampling: the fraction must be 1/K with K in [1, %d], the "
			       "bounds on the overhead and the error in [0, 100]%%",
			       ML_SAMPLE_K_MAX);
		goto fail;
	}
	p->sampling = p->o.sample_k > 1 || p->o.max_overhead > 0 || p->o.max_error > 0;
	p->sched.k = 1;
	if (p->sampling) {
		/* before the attach: the target is not stopped while we measure */
		if (!p->o.fault_ns) {
			uint64_t ns = ml_wp_fault_ns();

			p->fault_measured = ns > 0 && ns <= UINT_MAX;
			if (p->fault_measured)
				p->o.fault_ns = (unsigned int)ns;
		}
		if (p->o.max_error > 0) {
			/* from every page to 1/sample_k, the cost bound by default if none */
			ml_sample_policy_init(&p->pol, 1, p->o.max_overhead, p->o.fault_ns,
					      p->o.interval_ms);
			ml_sample_policy_error(&p->pol, p->o.max_error, p->o.sample_k);
			p->o.max_overhead = p->pol.max_cpu;
			p->o.sample_k = p->pol.k_err;
		} else {
			ml_sample_policy_init(&p->pol, p->o.sample_k ? p->o.sample_k : 1,
					      p->o.max_overhead, p->o.fault_ns, p->o.interval_ms);
		}
		p->sched.k = p->pol.k;
		p->o.fault_ns = (unsigned int)p->pol.fault_ns;
	}
	p->o.hot_cool = p->hr.cool;
	p->o.hot_ranges_max = (unsigned int)p->hr.max_ranges;
	if (!p->o.target_stopped) {
		r = ml_wp_check_target(pid, err);
		if (r)
			goto fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, p->exe, sizeof(p->exe) - 1);
	p->exe[n > 0 ? n : 0] = '\0';
	/* without it (out of memory) the kinds have no hints: no error */
	if (ml_kind_src_open(&p->kinds, pid, NULL))
		p->kinds = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	p->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->maps_fd < 0) {
		r = ml_err_set(err, errno == ENOENT ? ESRCH : errno, "cannot open %s: %s%s", path,
			       strerror(errno), errno == EACCES ? ml_proc_access_hint() : "");
		goto fail;
	}
	r = mli_pagescan_open(&p->ps, pid, SCAN_VEC_LEN, err);
	if (r)
		goto fail;
	if (!mli_pagescan_supported()) {
		r = ml_err_set(err, ENOTSUP,
			       "this kernel has no PAGEMAP_SCAN ioctl: Linux 6.7 or later is "
			       "needed for write tracking");
		goto fail;
	}
	p->attach.sz = sizeof(p->attach);
	r = ml_wp_attach(pid, p->o.target_stopped, &p->attach, err);
	if (r < 0)
		goto fail;
	p->uffd = r;
	p->shm_wp = p->attach.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
	r = setup_tracking(p, err);
	if (r)
		goto fail;
	if (p->registered.n || p->shm_registered.n) {
		const struct ml_rangeset *v = p->registered.n ? &p->registered : &p->shm_registered;

		r = mli_pagescan_verify_wp(&p->ps, v->r[0].start, v->r[v->n - 1].end, err);
		if (r < 0)
			goto fail;
		if (r == 0) {
			r = ml_err_set(err, ENOTSUP,
				       "write-protect did not take effect on the target's VMAs "
				       "(the kernel lacks async uffd-wp on anonymous memory)");
			goto fail;
		}
	}
	if (p->o.tree) {
		r = mli_ptree_open(&p->tree, p, err);
		if (r)
			goto fail;
	}
	*out = p;
	return 0;
fail:
	ml_profiler_close(p);
	return r;
}

static void unregister_all(struct ml_profiler *p)
{
	struct ml_vma_set cur;
	struct ml_err e;

	ml_vma_set_init(&cur);
	if (ml_maps_read_fd(p->maps_fd, &p->maps_buf, &p->maps_bufsz, &cur, &e) == 0) {
		for (size_t i = 0; i < cur.n; i++) {
			const struct ml_vma *v = &cur.v[i];

			for (size_t k = 0; k < p->ever.n; k++) {
				uint64_t a = p->ever.r[k].start, b = p->ever.r[k].end;

				if (b <= v->start || a >= v->end)
					continue;
				mli_uffd_unregister(p->uffd, a > v->start ? a : v->start,
						    b < v->end ? b : v->end, &e);
			}
		}
	}
	ml_vma_set_free(&cur);
	ml_rangeset_clear(&p->ever);
	ml_rangeset_clear(&p->registered);
	ml_rangeset_clear(&p->shm_registered);
}

void ml_profiler_close(struct ml_profiler *p)
{
	if (!p)
		return;
	ml_profiler_stop(p);
	mli_ptree_close(p->tree);
	if (p->uffd >= 0) {
		unregister_all(p);
		close(p->uffd); /* the last reference: the kernel drops any leftovers */
	}
	mli_pagescan_close(&p->ps);
	if (p->maps_fd >= 0)
		close(p->maps_fd);
	free(p->maps_buf);
	free(p->prev_maps);
	ml_kind_src_close(p->kinds);
	ml_vma_set_free(&p->vmas);
	ml_rangeset_free(&p->registered);
	ml_rangeset_free(&p->shm_registered);
	ml_rangeset_free(&p->ever);
	ml_rangeset_free(&p->foreign);
	ml_heat_free(&p->heat);
	ml_hotrange_free(&p->hr);
	free(p->dirty);
	free(p->written);
	free(p->est);
	free(p->seen);
	ml_profiler_sample_free(&p->latest);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}

void ml_profiler_sample_free(struct ml_profiler_sample *s)
{
	free(s->regions);
	free(s->written);
	free(s->written_pid);
	free(s->paths);
	free(s->procs);
	s->written_pid = NULL;
	s->procs = NULL;
	s->nprocs = 0;
	ml_hotrange_set_free(&s->hot);
	s->regions = NULL;
	s->written = NULL;
	s->paths = NULL;
	s->nregions = s->nwritten = 0;
}

int ml_profiler_sample_copy(struct ml_profiler_sample *dst, const struct ml_profiler_sample *src)
{
	*dst = *src;
	dst->regions = NULL;
	dst->written = NULL;
	dst->written_pid = NULL;
	dst->procs = NULL;
	dst->paths = NULL;
	dst->hot.r = NULL;
	dst->hot.n = 0;
	if (src->nregions) {
		dst->regions = malloc(src->nregions * sizeof(*dst->regions));
		if (!dst->regions)
			return -ENOMEM;
		memcpy(dst->regions, src->regions, src->nregions * sizeof(*dst->regions));
		if (own_paths(dst)) {
			free(dst->regions);
			dst->regions = NULL;
			return -ENOMEM;
		}
	}
	if (src->nwritten) {
		dst->written = malloc(src->nwritten * sizeof(*dst->written));
		if (!dst->written) {
			free(dst->regions);
			dst->regions = NULL;
			return -ENOMEM;
		}
		memcpy(dst->written, src->written, src->nwritten * sizeof(*dst->written));
		if (src->written_pid) {
			dst->written_pid = malloc(src->nwritten * sizeof(*dst->written_pid));
			if (!dst->written_pid) {
				ml_profiler_sample_free(dst);
				return -ENOMEM;
			}
			memcpy(dst->written_pid, src->written_pid,
			       src->nwritten * sizeof(*dst->written_pid));
		}
	}
	if (src->nprocs) {
		dst->procs = malloc(src->nprocs * sizeof(*dst->procs));
		if (!dst->procs) {
			ml_profiler_sample_free(dst);
			return -ENOMEM;
		}
		memcpy(dst->procs, src->procs, src->nprocs * sizeof(*dst->procs));
	}
	if (ml_hotrange_set_copy(&dst->hot, &src->hot)) {
		ml_profiler_sample_free(dst);
		return -ENOMEM;
	}
	return 0;
}

static void *loop(void *arg)
{
	struct ml_profiler *p = arg;
	struct timespec next;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct ml_profiler_sample s;
		struct ml_err e = { 0 };
		int r;

		next.tv_sec += p->o.interval_ms / 1000;
		next.tv_nsec += (long)(p->o.interval_ms % 1000) * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (!p->stop_req) {
			if (pthread_cond_timedwait(&p->cond, &p->lock, &next) == ETIMEDOUT)
				break;
		}
		if (p->stop_req)
			break;
		pthread_mutex_unlock(&p->lock);
		r = ml_profiler_tick(p, &s, &e);
		if (p->fn && (!r || s.target_exited))
			p->fn(&s, p->fn_arg);
		pthread_mutex_lock(&p->lock);
		/*
		 * -EAGAIN: the target's memory map changed through every read of
		 * this tick. No sample this time; the next tick reads it again and
		 * counts the writes of both intervals. Profiling goes on.
		 */
		if (r && (r != -EAGAIN || s.target_exited)) {
			p->thread_rc = r;
			p->thread_err = e;
			ml_profiler_sample_free(&s);
			break;
		}
		ml_profiler_sample_free(&s);
		/* a tick longer than the interval: skip missed deadlines, do not pile up */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 1)
			next = now;
	}
	p->running = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int ml_profiler_start(struct ml_profiler *p, ml_profiler_tick_fn fn, void *arg, struct ml_err *err)
{
	pthread_condattr_t ca;
	int r;

	if (p->thread_started)
		return ml_err_set(err, EALREADY, "profiling is already running");
	p->fn = fn;
	p->fn_arg = arg;
	p->stop_req = false;
	p->running = true;
	p->thread_rc = 0;
	pthread_cond_destroy(&p->cond);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&p->thread, NULL, loop, p);
	if (r) {
		p->running = false;
		return ml_err_set(err, r, "cannot start the profiler thread: %s", strerror(r));
	}
	p->thread_started = true;
	return 0;
}

void ml_profiler_stop(struct ml_profiler *p)
{
	if (!p->thread_started)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop_req = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	p->thread_started = false;
	p->running = false;
}

bool ml_profiler_running(struct ml_profiler *p)
{
	bool r;

	pthread_mutex_lock(&p->lock);
	r = p->running;
	pthread_mutex_unlock(&p->lock);
	return r;
}

int ml_profiler_error(struct ml_profiler *p, struct ml_err *err)
{
	int r;

	pthread_mutex_lock(&p->lock);
	r = p->thread_rc;
	if (r && err)
		*err = p->thread_err;
	pthread_mutex_unlock(&p->lock);
	return r;
}

int ml_profiler_latest(struct ml_profiler *p, struct ml_profiler_sample *out)
{
	int r;

	pthread_mutex_lock(&p->lock);
	r = ml_profiler_sample_copy(out, &p->latest);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int ml_profiler_release(struct ml_profiler *p, struct ml_err *err)
{
	(void)err;
	p->restart = p->thread_started;
	ml_profiler_stop(p);
	mli_ptree_release(p->tree);
	unregister_all(p);
	ml_heat_reset(&p->heat);
	/*
	 * the pages' heat is kept: the time released counts as no interval,
	 * so a page written now and then stays hot across a pre-dump (reset,
	 * the hot set would be the writes of the few intervals since the last
	 * round, and the rest of it sent in every round)
	 */
	p->released = true;
	return 0;
}

int ml_profiler_reinit(struct ml_profiler *p, struct ml_err *err)
{
	int r;

	p->released = false;
	ml_rangeset_clear(&p->registered);
	r = setup_tracking(p, err);
	if (r)
		return r;
	mli_ptree_reinit(p->tree);
	p->seq = 0;
	/* whether or not it had a callback (memlens migrate's has none) */
	if (p->restart)
		return ml_profiler_start(p, p->fn, p->fn_arg, err);
	return 0;
}
