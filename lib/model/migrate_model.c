// SPDX-License-Identifier: MIT
/* The pre-copy migration model of memlens/migrate_model.h. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_migrate.h"
#include "memlens/hotrange.h"
#include "memlens/migrate_model.h"

struct mm_sim {
	const struct ml_mm_trace *t;
	const struct ml_mm_params *p;
	enum ml_mm_policy policy;
	struct ml_rangeset stale; /* pages whose current content is not sent yet */
	struct ml_rangeset known; /* the VMAs seen at the last round */
	struct ml_rangeset regions, dirty, excl, tmp;
	/*
	 * with resident pages: the pages not written since their VMA
	 * appeared, of which only the VMA's resident share is memory
	 */
	struct ml_rangeset untouched;
	bool resident; /* the trace says every region's resident pages */
	long at; /* the interval of the last round (-1: none yet) */
	struct ml_hotrange hr; /* hot-range: the profiler's page heat, replayed */
	long hr_at; /* the last interval fed to hr */
};

const char *ml_mm_policy_name(enum ml_mm_policy p)
{
	static const char *const names[] = { "none", "hot-vma", "hot-range" };

	return (unsigned int)p < ML_MM_NPOLICIES ? names[p] : "?";
}

static int subtract(struct ml_rangeset *a, const struct ml_rangeset *b)
{
	int ret = 0;

	for (size_t i = 0; i < b->n && !ret; i++)
		ret = ml_rangeset_remove(a, b->r[i].start, b->r[i].end);
	return ret;
}

/* a = a ∩ b, via a − (a − b); @tmp is scratch. */
static int intersect(struct ml_rangeset *a, const struct ml_rangeset *b, struct ml_rangeset *tmp)
{
	int ret = ml_rangeset_copy(tmp, a);

	if (!ret)
		ret = subtract(tmp, b);
	if (!ret)
		ret = subtract(a, tmp);
	return ret;
}

static int add_all(struct ml_rangeset *s, const struct ml_range *r, size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++)
		ret = ml_rangeset_add(s, r[i].start, r[i].end);
	return ret;
}

/* Index of the last interval ending at or before @t_ms, or -1. */
static long latest(const struct ml_mm_trace *t, int64_t t_ms)
{
	long i = -1;

	while ((size_t)(i + 1) < t->n && t->iv[i + 1].t_ms <= t_ms)
		i++;
	return i;
}

static int regions_of(const struct ml_mm_interval *iv, bool hot_only, struct ml_rangeset *out)
{
	int ret = 0;

	ml_rangeset_clear(out);
	for (size_t i = 0; iv && i < iv->nregions && !ret; i++)
		if (!hot_only || iv->regions[i].hot)
			ret = ml_rangeset_add(out, iv->regions[i].start, iv->regions[i].end);
	return ret;
}

static int by_start(const void *a, const void *b)
{
	const struct ml_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Interval @k into the hot-range state, as the profiler's tick does: its
 * tracked VMAs (sorted; overlaps, which only a hand-made trace has, joined)
 * and its written ranges.
 */
static int feed_interval(struct mm_sim *s, const struct ml_mm_interval *iv)
{
	struct ml_range *v = malloc((iv->nregions + 1) * sizeof(*v));
	size_t n = 0;
	int ret;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < iv->nregions; i++)
		v[i] = (struct ml_range){ iv->regions[i].start, iv->regions[i].end };
	qsort(v, iv->nregions, sizeof(*v), by_start);
	for (size_t i = 0; i < iv->nregions; i++) {
		if (n && v[i].start < v[n - 1].end) {
			if (v[i].end > v[n - 1].end)
				v[n - 1].end = v[i].end;
		} else {
			v[n++] = v[i];
		}
	}
	ret = ml_hotrange_update(&s->hr, v, n, iv->written, iv->nwritten);
	free(v);
	return ret;
}

/* The hot ranges after interval @i (the rounds come in time order). */
static int hot_ranges(struct mm_sim *s, long i)
{
	struct ml_hotrange_set set = { 0 };
	int ret = 0;

	ml_rangeset_clear(&s->excl);
	while (s->hr_at < i && !ret)
		ret = feed_interval(s, &s->t->iv[++s->hr_at]);
	if (!ret)
		ret = ml_hotrange_get(&s->hr, &set);
	for (size_t k = 0; !ret && k < set.n; k++)
		ret = ml_rangeset_add(&s->excl, set.r[k].start, set.r[k].end);
	ml_hotrange_set_free(&set);
	return ret;
}

static int excluded(struct mm_sim *s, long i)
{
	ml_rangeset_clear(&s->excl);
	if (i < 0 || s->policy == ML_MM_NONE)
		return 0;
	if (s->policy == ML_MM_HOT_VMA)
		return regions_of(&s->t->iv[i], true, &s->excl);
	return hot_ranges(s, i);
}

/* Written in (from, to]. */
static int dirty_between(struct mm_sim *s, int64_t from, int64_t to)
{
	int ret = 0;

	ml_rangeset_clear(&s->dirty);
	for (size_t i = 0; i < s->t->n && !ret; i++)
		if (s->t->iv[i].t_ms > from && s->t->iv[i].t_ms <= to)
			ret = add_all(&s->dirty, s->t->iv[i].written, s->t->iv[i].nwritten);
	return ret;
}

/* Refresh the stale set for the round at @now; the last one was at @prev. */
static int update_stale(struct mm_sim *s, long i, int64_t prev, int64_t now)
{
	int ret = regions_of(i >= 0 ? &s->t->iv[i] : NULL, false, &s->regions);

	if (!ret)
		ret = ml_rangeset_copy(&s->tmp, &s->regions);
	if (!ret)
		ret = subtract(&s->tmp, &s->known); /* new VMAs: never sent */
	if (!ret)
		ret = add_all(&s->stale, s->tmp.r, s->tmp.n);
	if (!ret && s->resident)
		ret = add_all(&s->untouched, s->tmp.r, s->tmp.n);
	if (!ret)
		ret = ml_rangeset_copy(&s->known, &s->regions);
	if (!ret)
		ret = dirty_between(s, prev, now);
	if (!ret)
		ret = add_all(&s->stale, s->dirty.r, s->dirty.n);
	if (!ret && s->resident)
		ret = subtract(&s->untouched, &s->dirty);
	if (!ret && s->resident)
		ret = intersect(&s->untouched, &s->regions, &s->tmp);
	if (!ret)
		ret = intersect(&s->stale, &s->regions, &s->tmp); /* unmapped: forgotten */
	return ret;
}

/*
 * The bytes of @set that are memory: all of them without resident pages;
 * with them, its written pages, and of its pages never written (untouched)
 * in each region R of interval @i the share
 *
 *   f(R) = (resident(R) - written(R)) / untouched(R), within [0, 1]
 *
 * where written(R) = size(R) - untouched(R): the pages written since R
 * appeared are resident, the rest of its resident pages are spread over
 * the pages never written. Rounded to a whole byte.
 */
static int memory_bytes(struct mm_sim *s, const struct ml_rangeset *set, long i, uint64_t *out)
{
	const struct ml_mm_interval *iv;
	struct ml_rangeset u;
	double bytes;
	int ret;

	*out = ml_rangeset_bytes(set);
	if (!s->resident || i < 0)
		return 0;
	iv = &s->t->iv[i];
	ml_rangeset_init(&u);
	ret = ml_rangeset_copy(&u, set);
	if (!ret)
		ret = intersect(&u, &s->untouched, &s->tmp);
	if (ret) {
		ml_rangeset_free(&u);
		return ret;
	}
	bytes = (double)(*out - ml_rangeset_bytes(&u));
	for (size_t k = 0; k < iv->nregions; k++) {
		const struct ml_mm_region *r = &iv->regions[k];
		uint64_t part = ml_rangeset_overlap(&u, r->start, r->end);
		uint64_t un = ml_rangeset_overlap(&s->untouched, r->start, r->end);
		uint64_t written = r->end - r->start - un;
		double f;

		if (!part || !un)
			continue;
		f = r->resident_bytes > written ? (double)(r->resident_bytes - written) / (double)un
						: 0.0;
		bytes += (f < 1.0 ? f : 1.0) * (double)part;
	}
	ml_rangeset_free(&u);
	*out = (uint64_t)llround(bytes);
	return 0;
}

/* One round at @now: bytes sent into *bytes. */
static int round_at(struct mm_sim *s, int64_t prev, int64_t now, bool send_all, uint64_t *bytes)
{
	long i = latest(s->t, now);
	struct ml_rangeset send;
	int ret = update_stale(s, i, prev, now);

	ml_rangeset_init(&send);
	if (!ret)
		ret = ml_rangeset_copy(&send, &s->stale);
	if (!ret && !send_all) {
		ret = excluded(s, i);
		if (!ret)
			ret = subtract(&send, &s->excl);
	}
	if (!ret)
		ret = subtract(&s->stale, &send);
	if (!ret)
		ret = memory_bytes(s, &send, i, bytes);
	s->at = i;
	ml_rangeset_free(&send);
	return ret;
}

static int push_round(struct ml_mm_result *r, int round, uint64_t bytes)
{
	struct ml_mm_round *v = realloc(r->rounds, (r->nrounds + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->rounds = v;
	r->rounds[r->nrounds].round = round;
	r->rounds[r->nrounds++].bytes = bytes;
	r->total_bytes += bytes;
	return 0;
}

static void sim_free(struct mm_sim *s)
{
	ml_rangeset_free(&s->stale);
	ml_rangeset_free(&s->known);
	ml_rangeset_free(&s->regions);
	ml_rangeset_free(&s->dirty);
	ml_rangeset_free(&s->excl);
	ml_rangeset_free(&s->tmp);
	ml_rangeset_free(&s->untouched);
	ml_hotrange_free(&s->hr);
}

/* The downtime's parts from the final round's and the restored bytes. */
static void downtime(const struct ml_mm_params *p, struct ml_mm_result *r)
{
	double send_ms = (double)r->final_round_bytes / (p->bandwidth_mbps * ML_MM_MIB) * 1000.0;
	double lazy_mbps = p->lazy_bandwidth_mbps > 0 ? p->lazy_bandwidth_mbps : p->bandwidth_mbps;

	r->dump_ms = p->dump_fixed_s * 1000.0 + send_ms;
	r->restore_ms = p->restore_fixed_s * 1000.0;
	if (p->restore_bandwidth_mbps > 0)
		r->restore_ms += (double)r->restored_bytes /
				 (p->restore_bandwidth_mbps * ML_MM_MIB) * 1000.0;
	r->downtime_ms = p->freeze_overhead_s * 1000.0 + r->dump_ms + r->restore_ms;
	/*
	 * post-copy: no memory in the final dump nor in the restore; every
	 * page of the tree arrives lazily after it, the pre-dump rounds' too
	 */
	r->postcopy_downtime_ms =
		(p->freeze_overhead_s + p->dump_fixed_s + p->restore_fixed_s) * 1000.0;
	r->lazy_bytes = r->restored_bytes;
	r->postcopy_last_page_ms = r->postcopy_downtime_ms +
				   (double)r->lazy_bytes / (lazy_mbps * ML_MM_MIB) * 1000.0 +
				   (double)p->lazy_faults * p->lazy_fault_s * 1000.0;
}

/* Round @k's time (from 1): the given times, else every @round_ms. */
static int64_t round_time(const struct ml_mm_params *p, int k, int64_t round_ms)
{
	return p->nround_at ? p->round_at_ms[k - 1] : k * round_ms;
}

/*
 * Does pre-dump round @k of @pre leave nothing out? The last one, unless
 * keep_hot_out; with the rounds' times given, only when it was the last a
 * migration of max_rounds (when given) planned.
 */
static bool send_hot(const struct ml_mm_params *p, int k, int pre)
{
	if (p->keep_hot_out || k != pre)
		return false;
	return !p->nround_at || !p->max_rounds || p->max_rounds == pre;
}

static int simulate(struct mm_sim *s, int pre_rounds, int64_t round_ms, struct ml_mm_result *r)
{
	double threshold = s->p->stop_threshold_mb * ML_MM_MIB;
	bool final = false;
	uint64_t bytes = 0;
	int ret = 0;

	for (int k = 1; !ret; k++) {
		final = final || k == pre_rounds + 1;
		ret = round_at(s, k == 1 ? INT64_MIN : round_time(s->p, k - 1, round_ms),
			       round_time(s->p, k, round_ms),
			       final || send_hot(s->p, k, pre_rounds), &bytes);
		if (!ret)
			ret = push_round(r, k, bytes);
		if (final)
			break;
		if (!s->p->nround_at && (double)bytes <= threshold)
			final = true; /* converged: the next round is the stop-and-copy */
	}
	r->final_round_bytes = bytes;
	/* the tree's memory at the final round: what a restore loads */
	r->restored_bytes = ml_rangeset_bytes(&s->regions);
	if (s->resident) {
		r->restored_bytes = 0;
		for (size_t k = 0; s->at >= 0 && k < s->t->iv[s->at].nregions; k++)
			r->restored_bytes += s->t->iv[s->at].regions[k].resident_bytes;
	}
	downtime(s->p, r);
	return ret;
}

static bool seconds_ok(double s)
{
	return s >= 0 && s <= 1e9;
}

static int check_params(const struct ml_mm_trace *t, const struct ml_mm_params *p, int64_t round_ms,
			struct ml_err *err)
{
	if (!(p->bandwidth_mbps > 0) || !isfinite(p->bandwidth_mbps))
		return ml_err_set(err, EINVAL, "the bandwidth must be a positive number of MiB/s");
	if (round_ms < 1)
		return ml_err_set(err, EINVAL, "the round interval must be 1 ms .. 1e9 s");
	if (p->max_rounds < 0 || p->max_rounds > 100000 || p->stop_threshold_mb < 0 ||
	    p->hot_intervals < 0 || !seconds_ok(p->freeze_overhead_s) ||
	    !seconds_ok(p->dump_fixed_s) || !seconds_ok(p->restore_fixed_s) ||
	    !(p->restore_bandwidth_mbps >= 0) || !isfinite(p->restore_bandwidth_mbps) ||
	    !(p->lazy_bandwidth_mbps >= 0) || !isfinite(p->lazy_bandwidth_mbps) ||
	    !seconds_ok(p->lazy_fault_s) || p->lazy_faults > (uint64_t)1e12)
		return ml_err_set(err, EINVAL,
				  "max rounds, stop threshold, hot intervals, the freeze "
				  "overhead, the fixed parts, the restore and lazy bandwidths and "
				  "the lazy faults must not be negative");
	if (p->hot_intervals > ML_HOTRANGE_MAX_INTERVALS || p->hot_cool < 0 ||
	    p->hot_cool > ML_HOTRANGE_MAX_INTERVALS || p->hot_ranges_max > ML_HOTRANGE_MAX_MAX)
		return ml_err_set(err, EINVAL,
				  "hot intervals and cool must be 0..%d, the hot-range bound 0..%d",
				  ML_HOTRANGE_MAX_INTERVALS, ML_HOTRANGE_MAX_MAX);
	if (p->nround_at > 100000 || (p->nround_at && !p->round_at_ms))
		return ml_err_set(err, EINVAL, "the round times: 1 to 100000 of them");
	for (size_t i = 0; i < p->nround_at; i++)
		if (p->round_at_ms[i] <= (i ? p->round_at_ms[i - 1] : 0))
			return ml_err_set(err, EINVAL,
					  "the round times must be positive and increasing (round "
					  "%zu at %lld ms)",
					  i + 1, (long long)p->round_at_ms[i]);
	if (!t->n)
		return ml_err_set(err, EINVAL,
				  "the trace has no \"interval\" lines; record one "
				  "with `memlens writes --record FILE`");
	if (!t->with_written)
		return ml_err_set(err, EINVAL,
				  "the trace has no \"written\" page ranges: record it with "
				  "`memlens writes --record FILE` (the --json output lacks them)");
	if (!p->nround_at && t->iv[t->n - 1].t_ms / round_ms < 2)
		return ml_err_set(err, EINVAL,
				  "the trace covers %.1f s: too short for two rounds of %.1f s "
				  "(record longer or use a shorter --round-interval)",
				  t->iv[t->n - 1].t_ms / 1000.0, round_ms / 1000.0);
	return 0;
}

/* the fields every caller's struct ml_mm_result has: up to nrounds */
#define RESULT_MIN (offsetof(struct ml_mm_result, nrounds) + sizeof(size_t))

/* Element @k of the caller's array of @stride-byte results. */
static struct ml_mm_result *nth(struct ml_mm_result *out, size_t stride, int k)
{
	return (struct ml_mm_result *)((char *)out + (size_t)k * stride);
}

/*
 * @res into the caller's array @out, stepping by out[0].sz (memlens/opts.h):
 * 0, or -EINVAL (nothing written) when that sz is not set.
 */
static int store(struct ml_mm_result *out, const struct ml_mm_result *res, struct ml_err *err)
{
	int ret = ml_result_store(out, &res[0], sizeof(res[0]), RESULT_MIN, "ml_mm_result", err);
	size_t stride = out[0].sz;

	for (int k = 1; k < ML_MM_NPOLICIES && !ret; k++) {
		memcpy(nth(out, stride, k), &stride, sizeof(stride));
		ret = ml_result_store(nth(out, stride, k), &res[k], sizeof(res[k]), RESULT_MIN,
				      "ml_mm_result", err);
	}
	return ret;
}

static void free_rounds(struct ml_mm_result *r)
{
	free(r->rounds);
	r->rounds = NULL;
	r->nrounds = 0;
}

int ml_mm_run(const struct ml_mm_trace *t, const struct ml_mm_params *params,
	      struct ml_mm_result *out, struct ml_err *err)
{
	struct ml_mm_result res[ML_MM_NPOLICIES];
	struct ml_mm_params pv;
	const struct ml_mm_params *p = &pv;
	int64_t round_ms;
	int max, pre;
	int ret;

	memset(res, 0, sizeof(res));
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		res[k].sz = sizeof(res[k]);
	ret = store(out, res, err); /* cleared, or refused */
	if (ret)
		return ret;
	ret = ml_opts_load(&pv, sizeof(pv), params, "ml_mm_params", err);
	if (ret)
		return ret;
	round_ms = p->round_interval_s > 0 && p->round_interval_s <= 1e9
			   ? (int64_t)llround(p->round_interval_s * 1000.0)
			   : 0;
	max = p->no_precopy ? 0 : p->max_rounds ? p->max_rounds : ML_MM_DEFAULT_MAX_ROUNDS;
	ret = check_params(t, p, round_ms, err);
	if (ret)
		return ret;
	/* pre-dump rounds: the round boundaries within the trace, less the final one */
	pre = t->iv[t->n - 1].t_ms / round_ms - 1 > max
		      ? max
		      : (int)(t->iv[t->n - 1].t_ms / round_ms - 1);
	if (p->nround_at)
		pre = (int)p->nround_at - 1;
	for (int k = 0; k < ML_MM_NPOLICIES && !ret; k++) {
		struct mm_sim s = { .t = t,
				    .p = p,
				    .policy = (enum ml_mm_policy)k,
				    .resident = t->with_resident == t->n,
				    .at = -1,
				    .hr_at = -1 };

		res[k].policy = (enum ml_mm_policy)k;
		if (p->policies && !(p->policies & ML_MM_POLICY(k)))
			continue;
		/* the parameters were checked: only the defaults are filled in */
		ret = ml_hotrange_init(
			&s.hr, p->hot_intervals ? p->hot_intervals : ML_MM_DEFAULT_HOT_INTERVALS,
			p->hot_cool,
			p->hot_ranges_max ? p->hot_ranges_max : ML_HOTRANGE_EXCLUDE_MAX);
		if (!ret)
			ret = simulate(&s, pre, round_ms, &res[k]);
		sim_free(&s);
	}
	if (ret) {
		for (int k = 0; k < ML_MM_NPOLICIES; k++)
			free_rounds(&res[k]);
		return ml_err_set(err, ENOMEM, "out of memory in the migration model");
	}
	return store(out, res, err);
}

void ml_mm_results_free(struct ml_mm_result *out)
{
	size_t stride = out[0].sz;

	/* results ml_mm_run() never wrote (no sz) hold nothing to free */
	if (stride < RESULT_MIN || stride > ML_RESULT_SZ_MAX)
		return;
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		free_rounds(nth(out, stride, k));
}

/* Least squares of y on x: the slope, or 0 when the x do not differ. */
static double slope(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0;

	for (size_t i = 0; i < n; i++) {
		mx += x[i] / (double)n;
		my += y[i] / (double)n;
	}
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	return sxx > 0 ? sxy / sxx : 0;
}

/* Post-copy: the lazy pages' bandwidth and faults from the record's "lazy". */
static void calibrate_lazy(const struct ml_migrate_rec *m, struct ml_mm_fit *fit)
{
	const struct ml_migrate_lazy_rec *l = &m->lazy;
	double wait_ms = (double)l->faults * (double)l->fault_wait_avg_us / 1000.0;
	double lazy_ms = (double)l->last_page_ms - (double)m->downtime_ms - wait_ms;

	fit->lazy_faults = l->faults;
	fit->lazy_fault_s = (double)l->fault_wait_avg_us / 1e6;
	fit->lazy_bytes =
		l->pages_copied > 0 ? (uint64_t)l->pages_copied * ML_MM_PAGE_SIZE : l->bytes;
	if (lazy_ms > 0 && fit->lazy_bytes)
		fit->lazy_bandwidth_mbps = (double)fit->lazy_bytes / ML_MM_MIB / (lazy_ms / 1000.0);
}

/* the fields every caller's struct ml_mm_fit has: up to lazy_bytes */
#define FIT_MIN (offsetof(struct ml_mm_fit, lazy_bytes) + sizeof(uint64_t))

int ml_mm_calibrate(const struct ml_migrate_rec *m, struct ml_mm_fit *out, struct ml_err *err)
{
	const struct ml_migrate_round_rec *last;
	double *x, *y, b, bytes = 0, secs = 0, restore_s, frozen_s;
	struct ml_mm_fit v = { 0 }, *fit = &v;
	double rfixed;
	size_t sz;

	/* the caller's struct (its sz: memlens/opts.h), read for restore_fixed_s */
	memcpy(&sz, out, sizeof(sz));
	if (sz < FIT_MIN || sz > ML_RESULT_SZ_MAX)
		return ml_err_set(err, EINVAL,
				  "struct ml_mm_fit: its sz is %zu, not the struct's size: set "
				  ".sz = sizeof(struct ml_mm_fit) before the call",
				  sz);
	memcpy(&v, out, sz < sizeof(v) ? sz : sizeof(v));
	rfixed = v.restore_fixed_s;

	if (!m->ok || !m->nrounds)
		return ml_err_set(err, EINVAL,
				  "the migration record is of a migration that failed, or has "
				  "no rounds: nothing to fit");
	if (!(rfixed >= 0) || rfixed > 1e9)
		return ml_err_set(err, EINVAL, "the restore's fixed part must not be negative");
	last = &m->rounds[m->nrounds - 1];
	x = calloc(m->nrounds, sizeof(*x));
	y = calloc(m->nrounds, sizeof(*y));
	if (!x || !y) {
		free(x);
		free(y);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->nrounds; i++) {
		x[i] = (double)m->rounds[i].bytes / ML_MM_MIB;
		y[i] = (double)m->rounds[i].duration_ms / 1000.0;
		bytes += x[i];
		secs += y[i];
	}
	b = slope(x, y, m->nrounds);
	free(x);
	free(y);
	if (!(secs > 0) || !(bytes > 0))
		return ml_err_set(err, EINVAL,
				  "the migration record's rounds sent no bytes or took no time: "
				  "no bandwidth to fit");
	memset(fit, 0, sizeof(*fit));
	fit->slope = b > 0;
	fit->bandwidth_mbps = b > 0 ? 1.0 / b : bytes / secs;
	fit->final_bytes = last->bytes;
	restore_s = (double)m->restore_ms / 1000.0;
	frozen_s = (double)m->downtime_ms / 1000.0 - restore_s;
	/*
	 * post-copy: the model's downtime is the fixed parts alone (its final
	 * dump writes no memory), so all of the final dump's frozen time is
	 * its fixed part, the images it did write (page tables, the memory
	 * that is never lazy) included
	 */
	if (!m->postcopy)
		frozen_s -= (double)last->bytes / ML_MM_MIB / fit->bandwidth_mbps;
	fit->dump_fixed_s = frozen_s > 0 ? frozen_s : 0;
	if (m->postcopy)
		calibrate_lazy(m, fit);
	if (m->postcopy || last->pages_scanned <= 0) {
		/* no memory loaded, or not known how much: all of it fixed */
		fit->restore_fixed_s = restore_s;
		fit->restore_fixed_fitted = true;
		return ml_result_store(out, &v, sizeof(v), FIT_MIN, "ml_mm_fit", err);
	}
	fit->restore_fixed_s = rfixed;
	fit->restored_bytes = (uint64_t)last->pages_scanned * ML_MM_PAGE_SIZE;
	if (restore_s > rfixed && fit->restored_bytes)
		fit->restore_bandwidth_mbps =
			(double)fit->restored_bytes / ML_MM_MIB / (restore_s - rfixed);
	return ml_result_store(out, &v, sizeof(v), FIT_MIN, "ml_mm_fit", err);
}
