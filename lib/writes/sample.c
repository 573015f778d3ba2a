// SPDX-License-Identifier: MIT
/* Sampled write tracking: the rotating block sample, the estimate, the cost policy. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "memlens/sample.h"

bool ml_sample_in(const struct ml_sample_sched *s, uint64_t addr)
{
	uint64_t k = s->k ? s->k : 1;

	return (addr / SAMPLE_BLOCK_BYTES) % k == s->round % k;
}

bool ml_sample_next(const struct ml_sample_sched *s, uint64_t start, uint64_t end, uint64_t *a,
		    uint64_t *b)
{
	uint64_t k = s->k ? s->k : 1, blk, want, bs;

	if (start >= end)
		return false;
	blk = start / SAMPLE_BLOCK_BYTES;
	want = s->round % k;
	blk += (want + k - blk % k) % k; /* the first block >= start's with blk % k == want */
	if (blk > (end - 1) / SAMPLE_BLOCK_BYTES)
		return false;
	bs = blk * SAMPLE_BLOCK_BYTES;
	*a = bs > start ? bs : start;
	*b = end - bs > SAMPLE_BLOCK_BYTES ? bs + SAMPLE_BLOCK_BYTES : end;
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

int ml_sample_policy_init(struct ml_sample_policy *p, unsigned int k_min, double max_cpu,
			  uint64_t fault_ns, unsigned int interval_ms)
{
	memset(p, 0, sizeof(*p));
	if (!k_min)
		k_min = 1;
	if (k_min > SAMPLE_K_MAX || !(max_cpu >= 0 && max_cpu <= 1) || !interval_ms)
		return -EINVAL;
	p->k_min = p->k = k_min;
	p->max_cpu = max_cpu;
	p->fault_ns = fault_ns ? fault_ns : SAMPLE_DEFAULT_FAULT_NS;
	p->interval_ms = p->base_interval_ms = interval_ms;
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

double ml_sample_policy_step(struct ml_sample_policy *p, uint64_t faults, double interval_s)
{
	double cost = ml_sample_cost(p, faults, interval_s), need;
	unsigned int max_iv;

	if (p->max_cpu <= 0)
		return cost;
	/* the k at which this interval's cost would have been at the aim */
	need = cost * p->k / (p->max_cpu * AIM);
	if (cost > p->max_cpu) {
		double k = ceil(need);

		if (k > SAMPLE_K_MAX) {
			max_iv = p->base_interval_ms * SAMPLE_INTERVAL_GROWTH_MAX;
			if (max_iv > 600000)
				max_iv = 600000;
			if (p->k == SAMPLE_K_MAX && p->interval_ms < max_iv)
				p->interval_ms =
					p->interval_ms * 2 > max_iv ? max_iv : p->interval_ms * 2;
			k = SAMPLE_K_MAX;
		}
		if (k > p->k)
			p->k = (unsigned int)k;
	} else if (cost < p->max_cpu * ROOM) {
		if (p->interval_ms > p->base_interval_ms) {
			p->interval_ms /= 2;
			if (p->interval_ms < p->base_interval_ms)
				p->interval_ms = p->base_interval_ms;
		} else if (p->k > p->k_min) {
			unsigned int k = p->k / 2;

			if (need > k)
				k = (unsigned int)ceil(need);
			if (k < p->k_min)
				k = p->k_min;
			if (k < p->k)
				p->k = k;
		}
	}
	return cost;
}
