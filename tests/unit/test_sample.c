// SPDX-License-Identifier: MIT
/* Sampled write tracking: the rotating block sample, its estimate, the cost policy. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "memlens/hotrange.h"
#include "memlens/sample.h"

#define PG 4096ULL
#define BLK ML_SAMPLE_BLOCK_BYTES

/* Every page of [start, end) is in exactly one of k rounds in a row, whatever the first. */
static void test_rotation_covers_every_page_once(void)
{
	const uint64_t start = 0x7f0000003000ULL, end = start + 37 * BLK + 5 * PG;
	static unsigned char seen[40 * 16];
	unsigned int ks[] = { 1, 2, 3, 10, 64 };

	for (size_t t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
		memset(seen, 0, sizeof(seen));
		for (uint64_t round = 5; round < 5 + ks[t]; round++) {
			struct ml_sample_sched s = { ks[t], round };
			uint64_t pos = start, a, b;

			while (ml_sample_next(&s, pos, end, &a, &b)) {
				CHECK(a >= pos && a < b && b <= end);
				CHECK(b - a <= BLK);
				/* a piece never crosses a block boundary */
				CHECK_EQ(a / BLK, (b - 1) / BLK);
				CHECK(ml_sample_in(&s, a));
				for (uint64_t p = a; p < b; p += PG)
					seen[(p - start) / PG]++;
				pos = b;
			}
		}
		for (uint64_t p = 0; p < (end - start) / PG; p++)
			CHECK_EQ(seen[p], 1);
	}
}

static void test_next_edges(void)
{
	struct ml_sample_sched s = { 4, 0 };
	uint64_t a, b;

	/* a range inside one block that is not sampled this round */
	CHECK(!ml_sample_next(&s, BLK + PG, BLK + 3 * PG, &a, &b));
	/* inside a sampled block: clipped to the range */
	s.round = 1;
	CHECK(ml_sample_next(&s, BLK + PG, BLK + 3 * PG, &a, &b));
	CHECK_EQ(a, BLK + PG);
	CHECK_EQ(b, BLK + 3 * PG);
	CHECK(!ml_sample_next(&s, 5, 5, &a, &b));
	/* k = 0 counts as 1: every block */
	s.k = 0;
	CHECK(ml_sample_next(&s, 0, 3 * BLK, &a, &b));
	CHECK_EQ(a, 0);
	CHECK_EQ(b, BLK);
}

static void test_estimate_exact_ends(void)
{
	struct ml_sample_est e = { 0 };
	struct ml_sample_result r;

	CHECK(!ml_sample_est_result(&e, 1000, &r)); /* nothing sampled */
	for (int i = 0; i < 8; i++)
		ml_sample_est_add(&e, 16, 16);
	REQUIRE(ml_sample_est_result(&e, 1280, &r));
	CHECK(r.ratio == 1.0);
	CHECK(r.stderr_ == 0);
	CHECK_EQ(r.written_pages, 1280);

	memset(&e, 0, sizeof(e));
	for (int i = 0; i < 8; i++)
		ml_sample_est_add(&e, 16, 0);
	REQUIRE(ml_sample_est_result(&e, 1280, &r));
	CHECK(r.ratio == 0.0);
	CHECK(r.stderr_ == 0);
	CHECK_EQ(r.written_pages, 0);

	/* the whole VMA sampled: no sampling error */
	memset(&e, 0, sizeof(e));
	ml_sample_est_add(&e, 16, 3);
	ml_sample_est_add(&e, 4, 1);
	REQUIRE(ml_sample_est_result(&e, 20, &r));
	CHECK(r.ratio == 0.2);
	CHECK(r.stderr_ == 0);
	CHECK_EQ(r.written_pages, 4);
	ml_sample_est_add(&e, 0, 0); /* an empty piece adds nothing */
	CHECK_EQ(e.blocks, 2);
}

static void test_estimate_stderr(void)
{
	struct ml_sample_est e = { 0 };
	struct ml_sample_result r;

	/* 4 blocks of 16: 8, 0, 16, 8 written; half the VMA sampled */
	ml_sample_est_add(&e, 16, 8);
	ml_sample_est_add(&e, 16, 0);
	ml_sample_est_add(&e, 16, 16);
	ml_sample_est_add(&e, 16, 8);
	REQUIRE(ml_sample_est_result(&e, 128, &r));
	CHECK(r.ratio == 0.5);
	CHECK_EQ(r.written_pages, 64);
	/* residuals 0, -8, 8, 0: sqrt((1 - 0.5) / 4 * 128 / 3) / 16 */
	CHECK(fabs(r.stderr_ - sqrt(0.5 / 4 * 128 / 3) / 16) < 1e-12);

	/* one block: the spread is unknown, the bound of any ratio */
	memset(&e, 0, sizeof(e));
	ml_sample_est_add(&e, 16, 4);
	REQUIRE(ml_sample_est_result(&e, 160, &r));
	CHECK(r.ratio == 0.25);
	CHECK(fabs(r.stderr_ - 0.5 * sqrt(0.9)) < 1e-12);
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

/*
 * Over the k rounds of a window, the estimates of a fixed write pattern
 * average to its exact ratio (each page sampled once, the rounds' samples
 * of equal size), and each round's is within 4 standard errors of it.
 */
static void test_estimate_unbiased_over_window(void)
{
	enum { K = 8, BLOCKS = 64 * K };
	static unsigned char written[BLOCKS * 16];
	uint64_t seed = 42, total = BLOCKS * 16, nw = 0;
	const uint64_t start = 0x100000000ULL;
	double sum = 0;
	int within = 0;

	/* hot clusters and a scatter: 30% of the blocks 90% written, the rest 5% */
	for (uint64_t b = 0; b < BLOCKS; b++) {
		unsigned int pct = lcg(&seed) % 100 < 30 ? 90 : 5;

		for (int p = 0; p < 16; p++) {
			written[b * 16 + p] = lcg(&seed) % 100 < pct;
			nw += written[b * 16 + p];
		}
	}
	for (uint64_t round = 0; round < K; round++) {
		struct ml_sample_sched s = { K, round };
		struct ml_sample_est e = { 0 };
		struct ml_sample_result r;
		uint64_t pos = start, a, b;

		while (ml_sample_next(&s, pos, start + total * PG, &a, &b)) {
			uint64_t d = 0;

			for (uint64_t p = a; p < b; p += PG)
				d += written[(p - start) / PG];
			ml_sample_est_add(&e, (b - a) / PG, d);
			pos = b;
		}
		REQUIRE(ml_sample_est_result(&e, total, &r));
		CHECK_EQ(e.pages, total / K);
		CHECK(r.stderr_ > 0 && r.stderr_ < 0.1);
		within += fabs(r.ratio - (double)nw / total) <= 4 * r.stderr_;
		sum += r.ratio;
	}
	CHECK(fabs(sum / K - (double)nw / total) < 1e-12);
	CHECK_EQ(within, K);
}

static void test_policy_validated(void)
{
	struct ml_sample_policy p;

	CHECK_EQ(ml_sample_policy_init(&p, ML_SAMPLE_K_MAX + 1, 0, 0, 1000), -EINVAL);
	CHECK_EQ(ml_sample_policy_init(&p, 1, -0.1, 0, 1000), -EINVAL);
	CHECK_EQ(ml_sample_policy_init(&p, 1, 1.5, 0, 1000), -EINVAL);
	CHECK_EQ(ml_sample_policy_init(&p, 1, NAN, 0, 1000), -EINVAL);
	CHECK_EQ(ml_sample_policy_init(&p, 1, 0.05, 0, 0), -EINVAL);
	CHECK_EQ(ml_sample_policy_init(&p, 0, 0.05, 0, 1000), 0);
	CHECK_EQ(p.k, 1);
	CHECK_EQ(p.fault_ns, ML_SAMPLE_DEFAULT_FAULT_NS);
}

static void test_policy_fixed_without_bound(void)
{
	struct ml_sample_policy p;

	REQUIRE(ml_sample_policy_init(&p, 10, 0, 20000, 1000) == 0);
	/* 100000 faults of 20 us in 1 s: two CPUs' worth, and k stays */
	CHECK(fabs(ml_sample_policy_step(&p, 100000, 1.0) - 2.0) < 1e-9);
	CHECK_EQ(p.k, 10);
	CHECK_EQ(p.interval_ms, 1000);
}

static void test_policy_follows_the_cost(void)
{
	struct ml_sample_policy p;
	double c;

	/* 5% of a CPU at 20 us a fault, every page tracked to start with */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.05, 20000, 1000) == 0);
	/* 25000 faults in 1 s: 50%, ten times the bound: k to 12.5 -> 13 */
	c = ml_sample_policy_step(&p, 25000, 1.0);
	CHECK(fabs(c - 0.5) < 1e-9);
	CHECK_EQ(p.k, 13);
	/* the same writes sampled at 1/13: 1923 faults, 3.8%: under the bound, kept */
	ml_sample_policy_step(&p, 1923, 1.0);
	CHECK_EQ(p.k, 13);
	/* the target calms down: no faults, k halves back to its least */
	ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.k, 6);
	ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.k, 3);
	ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.k, 1);
	ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.k, 1);
	/* exact tracking under the bound stays exact, however close to it */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.05, 20000, 1000) == 0);
	for (int i = 0; i < 5; i++) {
		c = ml_sample_policy_step(&p, 2499, 1.0); /* 4.998% of a CPU */
		CHECK(c < 0.05);
		CHECK_EQ(p.k, 1);
		CHECK_EQ(p.interval_ms, 1000);
	}
	/* --sample 1/4 is the least k: never below it */
	REQUIRE(ml_sample_policy_init(&p, 4, 0.05, 20000, 1000) == 0);
	ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.k, 4);
	/* halving stops where the cost would come back over the aim */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.05, 20000, 1000) == 0);
	p.k = 100;
	ml_sample_policy_step(&p, 90, 1.0); /* 0.18%: need 100 * 0.0018 / 0.04 = 4.5 */
	CHECK_EQ(p.k, 50);
	p.k = 8;
	ml_sample_policy_step(&p, 190, 1.0); /* 0.38%: need 8 * 0.0038 / 0.04 = 0.76 */
	CHECK_EQ(p.k, 4);
}

static void test_policy_interval_when_k_is_not_enough(void)
{
	struct ml_sample_policy p;

	REQUIRE(ml_sample_policy_init(&p, 1, 0.01, 20000, 100) == 0);
	/* far over the bound: k at its most first, then the interval doubles */
	ml_sample_policy_step(&p, 1000000, 0.1);
	CHECK_EQ(p.k, ML_SAMPLE_K_MAX);
	CHECK_EQ(p.interval_ms, 100);
	for (int i = 0; i < 10; i++)
		ml_sample_policy_step(&p, 1000, 0.1); /* 20%: still over */
	CHECK_EQ(p.k, ML_SAMPLE_K_MAX);
	CHECK_EQ(p.interval_ms, 100 * ML_SAMPLE_INTERVAL_GROWTH_MAX);
	/* room again: the interval shrinks back before k does */
	ml_sample_policy_step(&p, 0, 1.6);
	CHECK_EQ(p.interval_ms, 800);
	CHECK_EQ(p.k, ML_SAMPLE_K_MAX);
	for (int i = 0; i < 3; i++)
		ml_sample_policy_step(&p, 0, 1.0);
	CHECK_EQ(p.interval_ms, 100);
	ml_sample_policy_step(&p, 0, 0.1);
	CHECK_EQ(p.k, ML_SAMPLE_K_MAX / 2);
}

/* The unit error: what a sample of 1/k states, se / r, is u sqrt(k - 1). */
static void test_unit_err(void)
{
	struct ml_sample_est e = { 0 };
	struct ml_sample_result r;
	double u;

	/* 4 blocks of 16 of a VMA of 8 (1/2 sampled): its stated error, relative */
	ml_sample_est_add(&e, 16, 8);
	ml_sample_est_add(&e, 16, 0);
	ml_sample_est_add(&e, 16, 16);
	ml_sample_est_add(&e, 16, 8);
	REQUIRE(ml_sample_est_result(&e, 128, &r));
	u = ml_sample_est_unit_err(&e, 128);
	CHECK(fabs(ml_sample_err_at(u, 2) - r.stderr_ / r.ratio) < 1e-12);
	/* the same blocks as a 1/8 sample of a VMA of 32 */
	REQUIRE(ml_sample_est_result(&e, 512, &r));
	CHECK(fabs(ml_sample_err_at(ml_sample_est_unit_err(&e, 512), 8) - r.stderr_ / r.ratio) <
	      1e-12);
	CHECK(ml_sample_err_at(u, 1) == 0); /* every page: no error */
	CHECK(ml_sample_err_at(0, 50) == 0);
	/* every block of a VMA, as an exact interval has them: 64 blocks, 16 written in full */
	memset(&e, 0, sizeof(e));
	for (int i = 0; i < 64; i++)
		ml_sample_est_add(&e, 16, i >= 20 && i < 36 ? 16 : 0);
	u = ml_sample_est_unit_err(&e, 64 * 16);
	/* predicted at 1/4: what a 1/4 sample holding 4 of those 16 blocks states */
	{
		struct ml_sample_est s = { 0 };

		for (int i = 0; i < 64; i += 4)
			ml_sample_est_add(&s, 16, i >= 20 && i < 36 ? 16 : 0);
		REQUIRE(ml_sample_est_result(&s, 64 * 16, &r));
		CHECK(fabs(r.ratio - 0.25) < 1e-12);
		/*
		 * the same but for the spread, the sample's taken for the VMA's:
		 * residuals 12 (4 blocks) and -4 (12) over 15, against 16 and 48 over 63
		 */
		CHECK(fabs(ml_sample_err_at(u, 4) * sqrt(768.0 / 15 / (3072.0 / 63)) -
			   r.stderr_ / r.ratio) < 1e-12);
	}
	/* nothing written, all written: no spread; one block: not measured */
	memset(&e, 0, sizeof(e));
	ml_sample_est_add(&e, 16, 0);
	ml_sample_est_add(&e, 16, 0);
	CHECK(ml_sample_est_unit_err(&e, 320) == 0);
	memset(&e, 0, sizeof(e));
	ml_sample_est_add(&e, 16, 16);
	ml_sample_est_add(&e, 4, 4);
	CHECK(ml_sample_est_unit_err(&e, 320) == 0);
	memset(&e, 0, sizeof(e));
	ml_sample_est_add(&e, 16, 3);
	CHECK(ml_sample_est_unit_err(&e, 320) == -1);
	memset(&e, 0, sizeof(e));
	CHECK(ml_sample_est_unit_err(&e, 320) == -1);
}

static void test_policy_error_validated(void)
{
	struct ml_sample_policy p;

	REQUIRE(ml_sample_policy_init(&p, 1, 0, 1000, 1000) == 0);
	CHECK_EQ(ml_sample_policy_error(&p, 0, 0), -EINVAL);
	CHECK_EQ(ml_sample_policy_error(&p, 1.5, 0), -EINVAL);
	CHECK_EQ(ml_sample_policy_error(&p, NAN, 0), -EINVAL);
	CHECK_EQ(ml_sample_policy_error(&p, 0.05, ML_SAMPLE_K_MAX + 1), -EINVAL);
	CHECK_EQ(ml_sample_policy_error(&p, 0.05, 0), 0);
	/* starts exact, comes back to 1/10 at most, under 1% of a CPU */
	CHECK_EQ(p.k, 1);
	CHECK_EQ(p.k_err, ML_SAMPLE_ERROR_DEFAULT_K);
	CHECK(p.max_cpu == ML_SAMPLE_ERROR_DEFAULT_MAX_CPU);
	/* the least fraction cannot be more than the most */
	REQUIRE(ml_sample_policy_init(&p, 4, 0.02, 1000, 1000) == 0);
	CHECK_EQ(ml_sample_policy_error(&p, 0.05, 2), -EINVAL);
	CHECK_EQ(ml_sample_policy_error(&p, 0.05, 16), 0);
	CHECK_EQ(p.k, 4);
	CHECK(p.max_cpu == 0.02);
}

/*
 * A model target: W pages written per interval of 1 s, each a fault of
 * 1000 ns when its block is sampled, the VMAs' unit error u. Step the
 * policy @n times from its k; the k of each step into @ks.
 */
static void run_model(struct ml_sample_policy *p, double w, double u, int n, unsigned int *ks)
{
	for (int i = 0; i < n; i++) {
		ml_sample_policy_step_err(p, (uint64_t)(w / p->k), 1.0, u);
		ks[i] = p->k;
	}
}

static void test_policy_error_grows_fraction(void)
{
	struct ml_sample_policy p;
	unsigned int ks[8];

	/* 2% of a CPU, 5% error, from 1/10 */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	p.k = 10;
	/* sparse: 256 pages a second (0.03% of a CPU exact), u 0.25: 0.75 at 1/10 */
	ml_sample_policy_step_err(&p, 26, 1.0, 0.25);
	CHECK(fabs(p.err - 0.75) < 1e-12);
	/* 1 + (0.04 / 0.25)^2 = 1.03: every page */
	CHECK_EQ(p.k, 1);
	CHECK(p.next_err == 0);
	/* and stays so: exact, u the same, under half the bound it can never be sampled */
	run_model(&p, 256, 0.25, 8, ks);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(ks[i], 1);
	/* u 0.02: 0.06 at 1/10; at 1/5 0.04, the aim */
	p.k = 10;
	ml_sample_policy_step_err(&p, 1000, 1.0, 0.02);
	CHECK_EQ(p.k, 5);
	CHECK(fabs(p.next_err - 0.04) < 1e-12);
}

static void test_policy_error_under_cost_bound(void)
{
	struct ml_sample_policy p;
	unsigned int ks[20];

	/* 40000 pages a second at 1000 ns: 4% of a CPU exact, 0.4% at 1/10; the bound 2% */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	p.k = 10;
	/* u 0.25 wants every page; 80% of the bound allows 1/3 (1.33%) */
	run_model(&p, 40000, 0.25, 20, ks);
	CHECK_EQ(ks[0], 3);
	for (int i = 0; i < 20; i++) {
		CHECK_EQ(ks[i], 3);
		CHECK(ml_sample_cost(&p, 40000 / ks[i], 1.0) <= p.max_cpu);
	}
	/* still over the error bound: said */
	CHECK(p.next_err > p.max_err);
	/* exact to start with and over the cost bound: the cost decides, as without */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	run_model(&p, 40000, 0.25, 20, ks);
	CHECK_EQ(ks[0], 3); /* 4% -> 2.5 -> 3 */
	CHECK_EQ(ks[19], 3);
	/* the error known only when sampled: -1 with nothing to measure, k kept */
	ml_sample_policy_step_err(&p, 13333, 1.0, -1);
	CHECK_EQ(p.k, 3);
	CHECK(p.err == -1 && p.next_err == -1);
	/* a burst the least fraction cannot afford: 1/63; once over, back to 1/10 */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	ml_sample_policy_step_err(&p, 1000000, 1.0, 0);
	CHECK_EQ(p.k, 63); /* 100% of a CPU: 1 / 0.016 = 62.5 */
	ml_sample_policy_step_err(&p, 1000000 / 63, 1.0, 0); /* 1.6%: kept */
	CHECK_EQ(p.k, 63);
	ml_sample_policy_step_err(&p, 100, 1.0, 0);
	CHECK_EQ(p.k, 10);
	/* part of the way back where the cost is still near the bound */
	p.k = 63;
	ml_sample_policy_step_err(&p, 7000, 1.0, 0); /* 0.7%: 63 * 0.007 / 0.016 = 27.6 */
	CHECK_EQ(p.k, 28);
}

static void test_policy_error_converges(void)
{
	struct ml_sample_policy p;
	unsigned int ks[40];

	/* dense writes (every sampled page written: u 0): from exact to the least fraction */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	run_model(&p, 16384, 0, 10, ks);
	CHECK_EQ(ks[0], 10);
	CHECK_EQ(ks[9], 10);
	/* never beyond it however small the error */
	run_model(&p, 16384, 1e-6, 5, ks);
	CHECK_EQ(ks[4], 10);
	/* u 0.01 measured with a 20% wobble each interval: 1/7, then it stays there */
	REQUIRE(ml_sample_policy_init(&p, 1, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 10) == 0);
	for (int i = 0; i < 40; i++) {
		ml_sample_policy_step_err(&p, 1000, 1.0, i % 2 ? 0.012 : 0.009);
		ks[i] = p.k;
	}
	/* exact first: 0 < 0.025, to the half of the bound: 1 + 0.025^2 / 0.009^2 = 8.7 -> 8 */
	CHECK_EQ(ks[0], 8);
	/* 0.012 at 1/8: 0.032, between half the bound and the bound: kept */
	for (int i = 1; i < 40; i++)
		CHECK_EQ(ks[i], 8);
	/* a sample that overstates it by half (0.018 * sqrt(7) = 0.048) still keeps it */
	ml_sample_policy_step_err(&p, 1000, 1.0, 0.018);
	CHECK_EQ(p.k, 8);
	/* the writes get sparser: u 0.05 (0.13 at 1/8) -> 1 + 0.64 = 1 */
	ml_sample_policy_step_err(&p, 1000, 1.0, 0.05);
	CHECK_EQ(p.k, 1);
	/* denser again: u 0.005 -> 1 + 25, 1/10 */
	ml_sample_policy_step_err(&p, 1000, 1.0, 0.005);
	CHECK_EQ(p.k, 10);
	/* the most fraction is --sample's: 1/4 (k_min), even when the error asks for more */
	REQUIRE(ml_sample_policy_init(&p, 4, 0.02, 1000, 1000) == 0);
	REQUIRE(ml_sample_policy_error(&p, 0.05, 16) == 0);
	run_model(&p, 256, 0.25, 5, ks);
	CHECK_EQ(ks[4], 4);
}

/* Pages not watched keep their state; only watched intervals count. */
static void test_hotrange_seen(void)
{
	struct ml_hotrange h;
	struct ml_hotrange_set s;
	const struct ml_range vma = { 0x10000, 0x10000 + 64 * PG };
	const struct ml_range lo = { 0x10000, 0x10000 + 16 * PG }; /* block 0 */
	const struct ml_range hi = { 0x10000 + 16 * PG, 0x10000 + 64 * PG };
	const struct ml_range w0 = { 0x10000, 0x10000 + 2 * PG }; /* in block 0 */
	const struct ml_range w1 = { 0x10000 + 20 * PG, 0x10000 + 21 * PG };

	REQUIRE(ml_hotrange_init(&h, 2, 2, 0) == 0);
	/* round 1: block 0 watched, w0 written */
	REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, &w0, 1, &lo, 1) == 0);
	/* round 2: the rest watched, w1 written; w0's streak of 1 is kept */
	REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, &w1, 1, &hi, 1) == 0);
	REQUIRE(ml_hotrange_get(&h, &s) == 0);
	CHECK_EQ(s.n, 0);
	ml_hotrange_set_free(&s);
	/* round 3: block 0 again, w0 written: its second watched interval in a row */
	REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, &w0, 1, &lo, 1) == 0);
	REQUIRE(ml_hotrange_get(&h, &s) == 0);
	REQUIRE(s.n == 1);
	CHECK_EQ(s.r[0].start, w0.start);
	CHECK_EQ(s.r[0].end, w0.end);
	ml_hotrange_set_free(&s);
	/* many rounds that do not watch it: it stays hot */
	for (int i = 0; i < 5; i++)
		REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, NULL, 0, &hi, 1) == 0);
	REQUIRE(ml_hotrange_get(&h, &s) == 0);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.hot_bytes, 2 * PG);
	ml_hotrange_set_free(&s);
	/* cool = 2 watched intervals unwritten */
	REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, NULL, 0, &lo, 1) == 0);
	REQUIRE(ml_hotrange_get(&h, &s) == 0);
	CHECK_EQ(s.n, 1);
	ml_hotrange_set_free(&s);
	REQUIRE(ml_hotrange_update_seen(&h, &vma, 1, NULL, 0, &lo, 1) == 0);
	REQUIRE(ml_hotrange_get(&h, &s) == 0);
	CHECK_EQ(s.n, 0);
	ml_hotrange_set_free(&s);
	/* w1's streak was kept while block 0 was watched; the VMA gone drops it all */
	REQUIRE(ml_hotrange_update_seen(&h, NULL, 0, NULL, 0, NULL, 0) == 0);
	CHECK_EQ(h.n, 0);
	/* bad input */
	{
		const struct ml_range two[2] = { hi, lo }; /* not sorted */

		CHECK_EQ(ml_hotrange_update_seen(&h, &vma, 1, NULL, 0, two, 2), -EINVAL);
	}
	ml_hotrange_free(&h);
}

/* Watching every page is the exact update. */
static void test_hotrange_seen_all_is_exact(void)
{
	struct ml_hotrange a, b;
	struct ml_hotrange_set sa, sb;
	const struct ml_range vmas[2] = { { 0x10000, 0x30000 }, { 0x40000, 0x80000 } };
	uint64_t seed = 7;

	REQUIRE(ml_hotrange_init(&a, 3, 2, 0) == 0);
	REQUIRE(ml_hotrange_init(&b, 3, 2, 0) == 0);
	for (int round = 0; round < 20; round++) {
		struct ml_range w[6];

		for (int i = 0; i < 6; i++) {
			const struct ml_range *v = &vmas[lcg(&seed) % 2];
			uint64_t pages = (v->end - v->start) / PG;
			uint64_t p = v->start + (lcg(&seed) % pages) * PG;

			w[i] = (struct ml_range){ p, p + (1 + lcg(&seed) % 4) * PG };
			if (w[i].end > v->end)
				w[i].end = v->end;
		}
		REQUIRE(ml_hotrange_update(&a, vmas, 2, w, 6) == 0);
		REQUIRE(ml_hotrange_update_seen(&b, vmas, 2, w, 6, vmas, 2) == 0);
		REQUIRE(ml_hotrange_get(&a, &sa) == 0);
		REQUIRE(ml_hotrange_get(&b, &sb) == 0);
		REQUIRE(sa.n == sb.n);
		for (size_t i = 0; i < sa.n; i++) {
			CHECK_EQ(sa.r[i].start, sb.r[i].start);
			CHECK_EQ(sa.r[i].end, sb.r[i].end);
		}
		CHECK_EQ(sa.hot_bytes, sb.hot_bytes);
		ml_hotrange_set_free(&sa);
		ml_hotrange_set_free(&sb);
	}
	ml_hotrange_free(&a);
	ml_hotrange_free(&b);
}

/* The per-fault cost from its rounds: the median round's difference, per page. */
static void test_fault_ns_from(void)
{
	uint64_t wp[] = { 300000, 190000, 200000, 5000000, 210000 };
	uint64_t plain[] = { 10000, 10000, 10000, 10000, 10000 };

	/* 290, 180, 190, 4990, 200 us over 256 pages: the median is 200 us, 781 ns a page */
	CHECK_EQ(ml_wp_fault_ns_from(wp, plain, 5, 256), 781);
	/* an even count: the mean of the middle two (190 and 200 us) */
	CHECK_EQ(ml_wp_fault_ns_from(wp + 1, plain + 1, 4, 256), (195000ULL + 128) / 256);
	/* a round preempted the other way (its plain writes slower) moves it one down */
	plain[0] = 900000;
	CHECK_EQ(ml_wp_fault_ns_from(wp, plain, 5, 256), (190000ULL + 128) / 256);
	/* a cost under 1 ns a page is 1, not "unmeasured" */
	uint64_t w1[] = { 100 }, p1[] = { 90 };
	CHECK_EQ(ml_wp_fault_ns_from(w1, p1, 1, 256), 1);
	/* nothing measured: the faults were no dearer than the plain writes */
	uint64_t w0[] = { 100, 100, 100 }, p0[] = { 100, 200, 90 };
	CHECK_EQ(ml_wp_fault_ns_from(w0, p0, 3, 256), 0);
	/* invalid input */
	CHECK_EQ(ml_wp_fault_ns_from(wp, plain, 0, 256), 0);
	CHECK_EQ(ml_wp_fault_ns_from(wp, plain, 5, 0), 0);
	CHECK_EQ(ml_wp_fault_ns_from(NULL, plain, 5, 256), 0);
	CHECK_EQ(ml_wp_fault_ns_from(wp, plain, ML_FAULTCOST_ROUNDS_MAX + 1, 256), 0);
}

/* Measured on this machine: positive where the kernel lets us, and once. */
static void test_fault_ns_measured(void)
{
	uint64_t a = ml_wp_fault_ns();

	if (!a)
		SKIP("no async userfaultfd write-protect for this process");
	CHECK(a > 0);
	CHECK_EQ(ml_wp_fault_ns(), a);
}

int main(void)
{
	RUN(test_rotation_covers_every_page_once);
	RUN(test_next_edges);
	RUN(test_estimate_exact_ends);
	RUN(test_estimate_stderr);
	RUN(test_estimate_unbiased_over_window);
	RUN(test_policy_validated);
	RUN(test_policy_fixed_without_bound);
	RUN(test_policy_follows_the_cost);
	RUN(test_policy_interval_when_k_is_not_enough);
	RUN(test_unit_err);
	RUN(test_policy_error_validated);
	RUN(test_policy_error_grows_fraction);
	RUN(test_policy_error_under_cost_bound);
	RUN(test_policy_error_converges);
	RUN(test_hotrange_seen);
	RUN(test_hotrange_seen_all_is_exact);
	RUN(test_fault_ns_from);
	RUN(test_fault_ns_measured);
	return T_DONE();
}
