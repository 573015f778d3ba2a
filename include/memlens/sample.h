/* SPDX-License-Identifier: MIT */
/*
 * Sampled write tracking: which pages an interval write-protects, what the
 * written ratio of a VMA is estimated at from them, and how the sample
 * fraction follows a bound on what the tracking costs the target.
 *
 * The sample: memory is cut into blocks of ML_SAMPLE_BLOCK_PAGES pages,
 * aligned on their own size in the address space (so a VMA that grows or
 * moves keeps its blocks). With 1/k of the pages sampled, block number
 * addr / ML_SAMPLE_BLOCK_BYTES is in the sample of round r when
 * (addr / ML_SAMPLE_BLOCK_BYTES) % k == r % k: a systematic sample of every
 * k-th block, the offset rotating by one block each interval, so that k
 * intervals in a row cover every page once.
 *
 * The estimate: a VMA's written ratio is the written pages of its sampled
 * blocks over their pages (a ratio estimator over clusters). Its standard
 * error, over the m sampled blocks of sizes n_j with d_j written pages,
 * f the sampled share of the VMA's pages and r the estimate:
 *
 *	se = sqrt((1 - f) / m * sum((d_j - r n_j)^2) / (m - 1)) / mean(n_j)
 *
 * 0 when the blocks cover the whole VMA (f = 1) or all agree (every
 * sampled page written, or none: a VMA rewritten in full is estimated at
 * exactly 1, one never written at exactly 0). Below two blocks the spread
 * cannot be measured and se is the bound of any ratio: 0.5 sqrt(1 - f).
 *
 * The policy: a tracked write fault costs the target about fault_ns of CPU
 * (ml_wp_fault_ns(), measured on the running machine; ML_SAMPLE_DEFAULT_FAULT_NS
 * where it cannot be); the faults of an interval are
 * the sampled pages found written (each page write-protected once, faults
 * once at most). With a bound on the share of one CPU, the next interval's
 * k is the one that brings the cost measured under the bound, with a
 * margin; well under it, k halves back towards its least. When even
 * ML_SAMPLE_K_MAX is too costly, the interval doubles (up to 16 times the
 * one asked for), and shrinks back first once there is room again.
 *
 * With a bound on the error too (ml_sample_policy_error()), the fraction
 * follows the error within the cost bound. The error is a VMA's relative
 * standard error, se / r, that of its estimated written pages; over a
 * VMA's blocks it grows with k as u sqrt(k - 1) (u: the unit error,
 * ml_sample_est_unit_err(), from any interval's blocks, every block of an
 * exact one included), so the error a fraction would have is predicted
 * from the interval before. A process's error is its VMAs' largest. It
 * starts exact; an interval whose error is over the bound takes the
 * largest k whose error would be 80% of it, but never one whose cost would
 * be over 80% of the cost bound; one under half the bound takes the
 * largest k whose error would be at most half of it, up to k_err (the
 * least fraction: a sample's noisier measure of the error should not
 * bring the pages back). Between half the bound and the bound k stays; over
 * the cost bound the cost decides, as without the error bound; k beyond
 * k_err for the cost comes back to it, or as near as the cost allows,
 * once the cost is under 40% of its bound.
 *
 * Pure: no I/O, but for ml_wp_fault_ns() (lib/writes/faultcost.c).
 */
#ifndef MEMLENS_SAMPLE_H
#define MEMLENS_SAMPLE_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ML_SAMPLE_BLOCK_PAGES 16ULL
#define ML_SAMPLE_BLOCK_BYTES (ML_SAMPLE_BLOCK_PAGES * 4096ULL)
#define ML_SAMPLE_K_MAX 1024
/*
 * The cost of a tracked write fault where it cannot be measured: ~20 us of
 * the target's CPU, what a fault cost on a slow VM (doc/internals/write-tracking-cost.md)
 */
#define ML_SAMPLE_DEFAULT_FAULT_NS 20000
/* the measurement: ML_FAULTCOST_ROUNDS rounds of ML_FAULTCOST_PAGES pages */
#define ML_FAULTCOST_PAGES 256
#define ML_FAULTCOST_ROUNDS 7
#define ML_FAULTCOST_ROUNDS_MAX 64
#define ML_SAMPLE_INTERVAL_GROWTH_MAX 16
/* with an error bound: the least fraction, 1/K, when none is given */
#define ML_SAMPLE_ERROR_DEFAULT_K 10
/* with an error bound: the cost bound when none is given, a share of one CPU */
#define ML_SAMPLE_ERROR_DEFAULT_MAX_CPU 0.01

/* The blocks of round @round with 1/@k of them sampled. */
struct ml_sample_sched {
	unsigned int k; /* 1: every page */
	uint64_t round;
};

/* Is the block holding @addr sampled? */
bool ml_sample_in(const struct ml_sample_sched *s, uint64_t addr);
/*
 * The first sampled piece of [@start, @end) at or after @start: a block,
 * clipped to the range, into *a and *b. False when there is none.
 */
bool ml_sample_next(const struct ml_sample_sched *s, uint64_t start, uint64_t end, uint64_t *a,
		    uint64_t *b);

/* What the sampled blocks of one VMA said. */
struct ml_sample_est {
	uint64_t blocks; /* sampled blocks (pieces of blocks at the VMA's ends count as one) */
	uint64_t pages; /* their pages */
	uint64_t written; /* of which written */
	double sum_d2, sum_dn, sum_n2; /* sums of d^2, d n, n^2 over the blocks */
};

void ml_sample_est_add(struct ml_sample_est *e, uint64_t pages, uint64_t written);

struct ml_sample_result {
	double ratio; /* estimated written ratio */
	double stderr_; /* its standard error */
	uint64_t written_pages; /* estimated written pages of the VMA (ratio * total, rounded) */
};

/* The estimate for a VMA of @total_pages; false when no block of it was sampled. */
bool ml_sample_est_result(const struct ml_sample_est *e, uint64_t total_pages,
			  struct ml_sample_result *out);
/*
 * The unit error of a VMA of @total_pages from the blocks of @e: the
 * relative standard error (se / r) a sample of 1/k of its blocks states is
 * u sqrt(k - 1), the spread of the blocks' written pages taken as @e's.
 * 0 when no page of @e was written, or every one (no spread); -1 below two
 * blocks (the spread cannot be measured).
 */
double ml_sample_est_unit_err(const struct ml_sample_est *e, uint64_t total_pages);
/* The relative standard error at 1/@k of a unit error @u: u sqrt(k - 1). */
double ml_sample_err_at(double u, unsigned int k);

struct ml_sample_policy {
	unsigned int k_min; /* the least k (--sample), >= 1 */
	unsigned int k; /* in use now */
	double max_cpu; /* bound on the share of one CPU; 0: k stays k_min */
	uint64_t fault_ns; /* cost of one tracked write fault */
	unsigned int interval_ms, base_interval_ms; /* now, and as asked for */
	/* ml_sample_policy_error() */
	double max_err; /* bound on the relative standard error; 0: none */
	unsigned int k_err; /* the least fraction, 1/k_err, the error bound takes */
	double err; /* the last interval's error (at its k); -1: not known */
	double next_err; /* the error predicted at the next k; -1: not known */
};

/* -EINVAL for k_min outside [1, ML_SAMPLE_K_MAX] or a bound outside [0, 1]. */
int ml_sample_policy_init(struct ml_sample_policy *p, unsigned int k_min, double max_cpu,
			  uint64_t fault_ns, unsigned int interval_ms);
/* The share of one CPU @faults tracked faults in @interval_s seconds cost. */
double ml_sample_cost(const struct ml_sample_policy *p, uint64_t faults, double interval_s);
/*
 * After an interval with 1/p->k sampled: @faults tracked faults in
 * @interval_s seconds. Sets p->k and p->interval_ms for the next one;
 * returns the cost of this one (a share of one CPU).
 */
double ml_sample_policy_step(struct ml_sample_policy *p, uint64_t faults, double interval_s);
/*
 * Bound the error too, after ml_sample_policy_init(): @max_err (0.05: a
 * standard error of 5% of the written pages) in (0, 1], @k_err the least
 * fraction 1/k_err (0: ML_SAMPLE_ERROR_DEFAULT_K; at least the init's k_min,
 * which becomes the most fraction: k goes down to it); a cost bound of 0
 * becomes ML_SAMPLE_ERROR_DEFAULT_MAX_CPU. k starts at k_min. -EINVAL for
 * values outside those ranges.
 */
int ml_sample_policy_error(struct ml_sample_policy *p, double max_err, unsigned int k_err);
/*
 * ml_sample_policy_step() with the error bound: @unit_err is the largest
 * unit error of the interval's VMAs (ml_sample_est_unit_err()), -1 when
 * none could be measured (k then follows the cost alone). Sets p->err
 * and p->next_err. Without an error bound, ml_sample_policy_step().
 */
double ml_sample_policy_step_err(struct ml_sample_policy *p, uint64_t faults, double interval_s,
				 double unit_err);

/*
 * What one tracked write fault costs on this machine, in ns of the writer's
 * CPU: measured once (the first call, a few ms; later calls return the
 * same) on a private scratch mapping of the calling process, whose pages
 * are write-protected with an async userfaultfd as a tracked target's are:
 * the CPU time of writing them then, less that of writing them again once
 * they are not, per page, the median of ML_FAULTCOST_ROUNDS rounds. 0 when it
 * cannot be measured here (no userfaultfd or PAGEMAP_SCAN for us).
 */
uint64_t ml_wp_fault_ns(void);
/*
 * The pure part: @rounds measurements of @pages pages, the CPU ns writing
 * them write-protected (@wp_ns) and not (@plain_ns): the median round's
 * difference per page, at least 1; 0 when it is not positive or the input
 * is not valid (no rounds, more than ML_FAULTCOST_ROUNDS_MAX, no pages).
 */
uint64_t ml_wp_fault_ns_from(const uint64_t *wp_ns, const uint64_t *plain_ns, unsigned int rounds,
			     uint64_t pages);

#pragma GCC visibility pop

#endif
