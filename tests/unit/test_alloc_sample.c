// SPDX-License-Identifier: MIT
/*
 * Sampling allocations by bytes (leaks --sample): the estimator
 * (lib/common/alloc_sample.c) and the BPF program's fixed-point sampler
 * (trace/leaks.h), run here on a fixed pseudo-random sequence, so that every
 * check is deterministic. The statistical checks allow 5 standard errors:
 * with this seed they pass by a wide margin, and a biased sampler (a
 * countdown that is off by a few per cent) fails them.
 */
#include <linux/types.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "memlens/alloc_sample.h"
#include "../../trace/leaks.h"
#include "../../trace/preload/expo.h"

static __u64 tab[LEAKS_EXPO_N + 1]; /* as the BPF program has it */

/* splitmix64: a fixed sequence, the same on every run */
static uint64_t rnd_state = 0x243f6a8885a308d3ULL;

static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool close_to(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

static void test_weight(void)
{
	CHECK(ml_alloc_sample_weight(100, 0) == 1); /* not sampled: every block counts once */
	CHECK(ml_alloc_sample_weight(0, 4096) == 0); /* never sampled */
	CHECK(close_to(ml_alloc_sample_weight(4096, 4096), 1 / (1 - exp(-1)), 1e-12));
	/* far larger than the mean: always sampled, weighs exactly 1 */
	CHECK(ml_alloc_sample_weight(40 * 4096, 4096) == 1);
	CHECK(ml_alloc_sample_weight(128, 1) == 1);
	/* far smaller: about mean / size + 1/2 */
	CHECK(close_to(ml_alloc_sample_weight(1, 524288), 524288.5, 1e-9));
	CHECK(close_to(ml_alloc_sample_weight(64, 524288), 524288.0 / 64 + 0.5, 1e-6));
}

static void test_variance_and_rse(void)
{
	double p = 1 - exp(-1);

	CHECK(ml_alloc_sample_var(4096, 0) == 0);
	CHECK(ml_alloc_sample_var(128, 1) == 0);
	CHECK(close_to(ml_alloc_sample_var(4096, 4096), (1 - p) / (p * p) * 4096.0 * 4096.0,
		       1e-12));
	/*
	 * n blocks of s bytes, n p of them sampled on average: the variance
	 * estimates of the sampled ones add up to the true variance, whose
	 * square root over the bytes is the rse
	 */
	for (uint64_t s = 16; s <= (1 << 22); s *= 4) {
		double n = 100000, bytes = n * (double)s,
		       rse = ml_alloc_sample_rse(bytes, s, 524288);
		double p = 1 / ml_alloc_sample_weight(s, 524288);

		CHECK(close_to(sqrt(n * p * ml_alloc_sample_var(s, 524288)) / bytes, rse, 1e-9));
		/* never above sqrt(mean / bytes), and close to it for small blocks */
		CHECK(rse <= sqrt(524288 / bytes) * (1 + 1e-12));
		if (s <= 4096)
			CHECK(rse >= 0.99 * sqrt(524288 / bytes));
	}
	/* 100 MiB outstanding in small blocks at 512K: about 7 % */
	CHECK(close_to(ml_alloc_sample_rse(100.0 * 1048576, 64, 524288), sqrt(0.5 / 100), 1e-3));
	CHECK(ml_alloc_sample_rse(1e6, 64, 0) == 0);
}

static void test_expo_table(void)
{
	CHECK_EQ(tab[0], LEAKS_LN2_FIXED); /* -ln(1/2) */
	CHECK_EQ(tab[LEAKS_EXPO_N], 0); /* -ln(1) */
	for (int j = 0; j < LEAKS_EXPO_N; j++)
		CHECK(tab[j] > tab[j + 1]);
}

/* the fixed-point draw against -ln(r / 2^64) in floating point */
static void test_expo_draw(void)
{
	double worst = 0;

	CHECK_EQ(leaks_expo_fixed(tab, 1ULL << 63), LEAKS_LN2_FIXED);
	CHECK_EQ(leaks_expo_fixed(tab, 1ULL << 62), 2 * LEAKS_LN2_FIXED);
	CHECK_EQ(leaks_expo_fixed(tab, 0), 64 * LEAKS_LN2_FIXED);
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rnd() >> (i % 61);
		double want, got, err;

		if (!r)
			continue;
		want = -log((double)r / 18446744073709551616.0);
		got = (double)leaks_expo_fixed(tab, r) / 4294967296.0;
		err = fabs(got - want);
		if (err > worst)
			worst = err;
	}
	printf("# largest error of the fixed-point -ln: %.3g\n", worst);
	CHECK(worst < 2e-7);
}

/*
 * The preloaded sampler's draw (trace/preload/expo.h): the same variates,
 * without the table, within the table's error.
 */
static void test_preload_draw(void)
{
	double worst = 0, worst_bpf = 0;

	CHECK_EQ(mls_expo_fixed(0), 64 * LEAKS_LN2_FIXED);
	CHECK(llabs((long long)mls_expo_fixed(1ULL << 63) - (long long)LEAKS_LN2_FIXED) <= 1);
	CHECK(mls_expo_fixed(~0ULL) < 2);
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rnd() >> (i % 64);
		double want, got;

		if (!r)
			continue;
		want = -log((double)r / 18446744073709551616.0);
		got = (double)mls_expo_fixed(r) / 4294967296.0;
		worst = fmax(worst, fabs(got - want));
		worst_bpf = fmax(worst_bpf,
				 fabs((double)leaks_expo_fixed(tab, r) / 4294967296.0 - got));
	}
	printf("# largest error of the preloaded sampler's -ln: %.3g (from the BPF one's: %.3g)\n",
	       worst, worst_bpf);
	CHECK(worst < 1e-8);
	CHECK(worst_bpf < 2e-7);
}

/*
 * The whole sampler as the BPF program runs it, per thread: a countdown
 * from leaks_distance(), decreased by leaks_reaches(), drawn again after
 * each sample. Each allocation of s bytes must be sampled with probability
 * 1 - exp(-s / mean), whatever the sizes before it, and the estimate of
 * the bytes must be unbiased.
 */
static void run_sampler(uint64_t mean, const uint64_t *sizes, int nsizes, long n)
{
	double est = 0, var = 0, total = 0, sampled = 0, want_sampled = 0;
	__u64 left = leaks_distance(mean, leaks_expo_fixed(tab, rnd()));

	for (long i = 0; i < n; i++) {
		uint64_t s = sizes[i % nsizes];
		double p = 1 - exp(-(double)s / (double)mean);

		total += (double)s;
		want_sampled += p;
		if (!leaks_reaches(&left, s))
			continue;
		left = leaks_distance(mean, leaks_expo_fixed(tab, rnd()));
		sampled++;
		est += ml_alloc_sample_weight(s, mean) * (double)s;
		var += ml_alloc_sample_var(s, mean);
	}
	printf("# mean %llu: %.0f of %ld sampled (expected %.1f); bytes %.0f, estimated %.0f +- "
	       "%.0f\n",
	       (unsigned long long)mean, sampled, n, want_sampled, total, est, sqrt(var));
	/* a sum of Bernoulli draws: its standard deviation is below sqrt(expected) */
	CHECK(fabs(sampled - want_sampled) <= 5 * sqrt(want_sampled));
	CHECK(fabs(est - total) <= 5 * sqrt(var) + 1e-6 * total);
}

static void test_sampler(void)
{
	static const uint64_t one[] = { 4096 };
	static const uint64_t mixed[] = { 16, 100, 4096, 24, 1 << 20, 333, 64, 8 };
	static const uint64_t big[] = { 40000, 100000 };

	run_sampler(524288, one, 1, 2000000);
	run_sampler(4096, one, 1, 200000);
	run_sampler(65536, mixed, 8, 2000000);
	run_sampler(1024, big, 2, 100000);
	/* --sample 1: every block of 45 bytes or more is sampled, with weight 1 */
	{
		__u64 left = leaks_distance(1, leaks_expo_fixed(tab, rnd()));
		long missed = 0;

		for (int i = 0; i < 100000; i++) {
			uint64_t s = 45 + (uint64_t)(i % 5000);

			if (!leaks_reaches(&left, s))
				missed++;
			else
				left = leaks_distance(1, leaks_expo_fixed(tab, rnd()));
			CHECK(ml_alloc_sample_weight(s, 1) == 1);
		}
		CHECK_EQ(missed, 0);
	}
}

/* the sampled table's default size: the sample of 32 GiB outstanding, 16384 to 1000000 */
static void test_default_blocks(void)
{
	CHECK_EQ(leaks_default_blocks(0), (uint64_t)LEAKS_MAX_ALLOCS); /* exact */
	CHECK_EQ(leaks_default_blocks(524288), 65536);
	CHECK_EQ(leaks_default_blocks(65536), 524288);
	CHECK_EQ(leaks_default_blocks(1), (uint64_t)LEAKS_MAX_ALLOCS);
	CHECK_EQ(leaks_default_blocks(32768), (uint64_t)LEAKS_MAX_ALLOCS); /* 1048576, capped */
	CHECK_EQ(leaks_default_blocks(2097152), 16384);
	CHECK_EQ(leaks_default_blocks(1ULL << 40), 16384); /* --sample 1T */
}

int main(void)
{
	uint64_t t[LEAKS_EXPO_N + 1];

	ml_alloc_sample_expo_table(t, LEAKS_EXPO_N);
	for (int j = 0; j <= LEAKS_EXPO_N; j++)
		tab[j] = t[j];
	RUN(test_weight);
	RUN(test_variance_and_rse);
	RUN(test_expo_table);
	RUN(test_expo_draw);
	RUN(test_preload_draw);
	RUN(test_sampler);
	RUN(test_default_blocks);
	return T_DONE();
}
