// SPDX-License-Identifier: MIT
/* Sampled write tracking: the rotating block sample, the estimate, the cost policy. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "memlens/sample.h"

bool ml_sample_in(const struct ml_sample_sched *s, uint64_t addr)
{
	uint64_t k = s->k ? s->k : 1;

	return (addr / ML_SAMPLE_BLOCK_BYTES) % k == s->round % k;
}

bool ml_sample_next(const struct ml_sample_sched *s, uint64_t start, uint64_t end, uint64_t *a,
		    uint64_t *b)
{
	uint64_t k = s->k ? s->k : 1, blk, want, bs;

	if (start >= end)
		return false;
	blk = start / ML_SAMPLE_BLOCK_BYTES;
	want = s->round % k;
	blk += (want + k - blk % k) % k; /* the first block >= start's with blk % k == want */
	if (blk > (end - 1) / ML_SAMPLE_BLOCK_BYTES)
		return false;
	bs = blk * ML_SAMPLE_BLOCK_BYTES;
	*a = bs > start ? bs : start;
	*b = end - bs > ML_SAMPLE_BLOCK_BYTES ? bs + ML_SAMPLE_BLOCK_BYTES : end;
	return true;
}

void ml_sample_est_add(struct ml_sample_est *e, uint64_t pages, uint64_t written)
{
	double d = (double)written, n = (double)pages;

	if (!pages)
		return;
	e->blocks++;
	e->pages += pages;
	e->written += written;
	e->sum_d2 += d * d;
	e->sum_dn += d * n;
	e->sum_n2 += n * n;
}

bool ml_sample_est_result(const struct ml_sample_est *e, uint64_t total_pages,
			  struct ml_sample_result *out)
{
	double r, f, ss, nbar, m;

	memset(out, 0, sizeof(*out));
	if (!e->pages)
		return false;
	r = (double)e->written / (double)e->pages;
	f = total_pages ? (double)e->pages / (double)total_pages : 1;
	if (f > 1)
		f = 1;
	out->ratio = r;
	out->written_pages = (uint64_t)llround(r * (double)total_pages);
	if (e->written == 0 || e->written == e->pages || f >= 1)
		return true; /* every sampled page agrees, or all were sampled: exact */
	m = (double)e->blocks;
	if (e->blocks < 2) {
		out->stderr_ = 0.5 * sqrt(1 - f);
		return true;
	}
	nbar = (double)e->pages / m;
	ss = e->sum_d2 - 2 * r * e->sum_dn + r * r * e->sum_n2;
	if (ss < 0)
		ss = 0; /* rounding */
	out->stderr_ = sqrt((1 - f) / m * ss / (m - 1)) / nbar;
	return true;
}

double ml_sample_est_unit_err(const struct ml_sample_est *e, uint64_t total_pages)
{
	double m = (double)e->blocks, r, ss, big_m;

	if (e->blocks < 2 || !e->pages)
		return -1;
	if (e->written == 0 || e->written == e->pages)
		return 0;
	r = (double)e->written / (double)e->pages;
	ss = e->sum_d2 - 2 * r * e->sum_dn + r * r * e->sum_n2;
	if (ss < 0)
		ss = 0; /* rounding */
	/* the VMA's blocks: its pages over the mean block's */
	big_m = (double)(total_pages > e->pages ? total_pages : e->pages) * m / (double)e->pages;
	/* sqrt(S^2 / M) / (mean(n) r), S^2 = ss / (m - 1), mean(n) r = written / m */
	return sqrt(ss / (m - 1) / big_m) * m / (double)e->written;
}

double ml_sample_err_at(double u, unsigned int k)
{
	return k > 1 && u > 0 ? u * sqrt((double)(k - 1)) : 0;
}

int ml_sample_policy_init(struct ml_sample_policy *p, unsigned int k_min, double max_cpu,
			  uint64_t fault_ns, unsigned int interval_ms)
{
	memset(p, 0, sizeof(*p));
	if (!k_min)
		k_min = 1;
	if (k_min > ML_SAMPLE_K_MAX || !(max_cpu >= 0 && max_cpu <= 1) || !interval_ms)
		return -EINVAL;
	p->k_min = p->k = k_min;
	p->max_cpu = max_cpu;
	p->fault_ns = fault_ns ? fault_ns : ML_SAMPLE_DEFAULT_FAULT_NS;
	p->interval_ms = p->base_interval_ms = interval_ms;
	p->err = p->next_err = -1;
	return 0;
}

int ml_sample_policy_error(struct ml_sample_policy *p, double max_err, unsigned int k_err)
{
	if (!k_err)
		k_err = ML_SAMPLE_ERROR_DEFAULT_K > p->k_min ? ML_SAMPLE_ERROR_DEFAULT_K : p->k_min;
	if (!(max_err > 0 && max_err <= 1) || k_err > ML_SAMPLE_K_MAX || k_err < p->k_min)
		return -EINVAL;
	p->max_err = max_err;
	p->k_err = k_err;
	p->k = p->k_min;
	if (p->max_cpu <= 0)
		p->max_cpu = ML_SAMPLE_ERROR_DEFAULT_MAX_CPU;
	return 0;
}

double ml_sample_cost(const struct ml_sample_policy *p, uint64_t faults, double interval_s)
{
	if (interval_s <= 0)
		return 0;
	return (double)faults * (double)p->fault_ns / 1e9 / interval_s;
}

/* Aim at 80% of the bound; halve k (or the interval) only below 40% of it. */
#define AIM 0.8
#define ROOM 0.4

/* The cost alone: k (and the interval) for @cost; @halve: k halves back when there is room. */
static void cost_step(struct ml_sample_policy *p, double cost, bool halve)
{
	double need;
	unsigned int max_iv;

	/* the k at which this interval's cost would have been at the aim */
	need = cost * p->k / (p->max_cpu * AIM);
	if (cost > p->max_cpu) {
		double k = ceil(need);

		if (k > ML_SAMPLE_K_MAX) {
			max_iv = p->base_interval_ms * ML_SAMPLE_INTERVAL_GROWTH_MAX;
			if (max_iv > 600000)
				max_iv = 600000;
			if (p->k == ML_SAMPLE_K_MAX && p->interval_ms < max_iv)
				p->interval_ms =
					p->interval_ms * 2 > max_iv ? max_iv : p->interval_ms * 2;
			k = ML_SAMPLE_K_MAX;
		}
		if (k > p->k)
			p->k = (unsigned int)k;
	} else if (cost < p->max_cpu * ROOM) {
		if (p->interval_ms > p->base_interval_ms) {
			p->interval_ms /= 2;
			if (p->interval_ms < p->base_interval_ms)
				p->interval_ms = p->base_interval_ms;
		} else if (halve && p->k > p->k_min) {
			unsigned int k = p->k / 2;

			if (need > k)
				k = (unsigned int)ceil(need);
			if (k < p->k_min)
				k = p->k_min;
			if (k < p->k)
				p->k = k;
		}
	}
}

double ml_sample_policy_step(struct ml_sample_policy *p, uint64_t faults, double interval_s)
{
	double cost = ml_sample_cost(p, faults, interval_s);

	if (p->max_cpu > 0)
		cost_step(p, cost, true);
	return cost;
}

/* With an error bound: k moves when the error is over it or under half of it. */
#define ERR_ROOM 0.5

double ml_sample_policy_step_err(struct ml_sample_policy *p, uint64_t faults, double interval_s,
				 double unit_err)
{
	double cost = ml_sample_cost(p, faults, interval_s), aim, need, want;

	if (p->max_err <= 0)
		return ml_sample_policy_step(p, faults, interval_s);
	p->err = unit_err >= 0 ? ml_sample_err_at(unit_err, p->k) : -1;
	if (cost > p->max_cpu || p->interval_ms > p->base_interval_ms || unit_err < 0) {
		/* over the cost bound, on a longer interval, or no error known: the cost decides */
		cost_step(p, cost, false);
		p->next_err = unit_err >= 0 ? ml_sample_err_at(unit_err, p->k) : -1;
		return cost;
	}
	/*
	 * More pages: the largest k whose error would be 80% of the bound.
	 * Fewer: the largest whose error would be half of it, so that a
	 * sample's noisier measure of the error does not bring it back.
	 */
	aim = p->err > p->max_err ? AIM * p->max_err : ERR_ROOM * p->max_err;
	want = p->k_err;
	if (unit_err > 0 && aim / unit_err < sqrt((double)(p->k_err - 1)))
		want = 1 + floor(aim * aim / (unit_err * unit_err));
	if (want < p->k_min)
		want = p->k_min;
	if (p->err > p->max_err) {
		/* as long as their cost stays under the aim */
		need = ceil(cost * p->k / (p->max_cpu * AIM));
		if (need > want)
			want = need;
		if (want < p->k)
			p->k = (unsigned int)want;
	} else if (p->k > p->k_err && cost < ROOM * p->max_cpu) {
		/* fewer pages than the least fraction, for the cost: back as far as it allows */
		need = ceil(cost * p->k / (p->max_cpu * AIM));
		p->k = need > p->k_err ? (unsigned int)need : p->k_err;
	} else if (p->err < ERR_ROOM * p->max_err && want > p->k) {
		p->k = (unsigned int)want;
	}
	p->next_err = ml_sample_err_at(unit_err, p->k);
	return cost;
}
