// SPDX-License-Identifier: MIT
/*
 * Hot ranges inside VMAs on synthetic intervals: streaks, hysteresis, noise,
 * the bound and the merge order, VMAs that go or shrink, a huge sparse VMA.
 * VMA A = 1024 pages at 0x10000000, B = 64 pages 16 pages after A's end.
 */
#include <errno.h>

#include "harness.h"
#include "memlens/hotrange.h"

#define PG 4096ULL
#define A0 0x10000000ULL
#define AP(n) (A0 + (uint64_t)(n)*PG)
#define AEND AP(1024)
#define B0 (AEND + 16 * PG)
#define BP(n) (B0 + (uint64_t)(n)*PG)
#define BEND BP(64)

static const struct ml_range ab[] = { { A0, AEND }, { B0, BEND } };

/* One interval over A and B: @w are {first, last + 1} page pairs of A, @n of them. */
static void tick_a(struct ml_hotrange *h, const uint64_t (*w)[2], size_t n)
{
	struct ml_range r[64];

	REQUIRE(n <= 64);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ml_range){ AP(w[i][0]), AP(w[i][1]) };
	REQUIRE(ml_hotrange_update(h, ab, 2, r, n) == 0);
}

static void get(const struct ml_hotrange *h, struct ml_hotrange_set *s)
{
	REQUIRE(ml_hotrange_get(h, s) == 0);
}

/* The set is exactly @want ({start, end} address pairs). */
static void check_set(const struct ml_hotrange *h, const uint64_t (*want)[2], size_t n)
{
	struct ml_hotrange_set s;

	get(h, &s);
	CHECK_EQ(s.n, n);
	for (size_t i = 0; i < n && i < s.n; i++) {
		if (s.r[i].start != want[i][0] || s.r[i].end != want[i][1])
			T_FAILMSG("range %zu: %#llx-%#llx, want %#llx-%#llx", i,
				  (unsigned long long)s.r[i].start, (unsigned long long)s.r[i].end,
				  (unsigned long long)want[i][0], (unsigned long long)want[i][1]);
	}
	ml_hotrange_set_free(&s);
}

static void test_params(void)
{
	struct ml_hotrange h;

	CHECK_EQ(ml_hotrange_init(&h, 0, 0, 0), -EINVAL);
	CHECK_EQ(ml_hotrange_init(&h, ML_HOTRANGE_MAX_INTERVALS + 1, 0, 0), -EINVAL);
	CHECK_EQ(ml_hotrange_init(&h, 3, -1, 0), -EINVAL);
	CHECK_EQ(ml_hotrange_init(&h, 3, ML_HOTRANGE_MAX_INTERVALS + 1, 0), -EINVAL);
	CHECK_EQ(ml_hotrange_init(&h, 3, 0, ML_HOTRANGE_MAX_MAX + 1), -EINVAL);
	REQUIRE(ml_hotrange_init(&h, 3, 0, 0) == 0);
	CHECK_EQ(h.cool, 3); /* default: as many as it takes to turn hot */
	CHECK_EQ(h.max_ranges, ML_HOTRANGE_DEFAULT_MAX);
	ml_hotrange_free(&h);
	REQUIRE(ml_hotrange_init(&h, 2, 5, 7) == 0);
	CHECK_EQ(h.cool, 5);
	CHECK_EQ(h.max_ranges, 7);
	ml_hotrange_free(&h);
}

static void test_streak(void)
{
	static const uint64_t w[][2] = { { 10, 13 } };
	static const uint64_t want[][2] = { { AP(10), AP(13) } };
	struct ml_hotrange_set s;
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 3, 0, 0) == 0);
	tick_a(&h, w, 1);
	check_set(&h, want, 0);
	tick_a(&h, w, 1);
	check_set(&h, want, 0);
	tick_a(&h, w, 1);
	check_set(&h, want, 1);
	get(&h, &s);
	CHECK_EQ(s.r[0].hot_pages, 3);
	CHECK_EQ(s.unmerged, 1);
	CHECK_EQ(s.hot_bytes, 3 * PG);
	CHECK_EQ(s.merge_cost_bytes, 0);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);
}

/* Written twice, a gap, written again: the streak starts over. */
static void test_streak_broken(void)
{
	static const uint64_t w[][2] = { { 10, 11 } };
	static const uint64_t want[][2] = { { AP(10), AP(11) } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 3, 0, 0) == 0);
	tick_a(&h, w, 1);
	tick_a(&h, w, 1);
	tick_a(&h, NULL, 0);
	CHECK_EQ(h.n, 0); /* cold and unwritten: no state at all */
	tick_a(&h, w, 1);
	tick_a(&h, w, 1);
	check_set(&h, want, 0);
	tick_a(&h, w, 1);
	check_set(&h, want, 1);
	ml_hotrange_free(&h);
}

static void test_hysteresis(void)
{
	static const uint64_t w[][2] = { { 0, 4 } };
	static const uint64_t want[][2] = { { AP(0), AP(4) } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 2, 2, 0) == 0);
	tick_a(&h, w, 1);
	tick_a(&h, w, 1);
	check_set(&h, want, 1);
	tick_a(&h, NULL, 0); /* unwritten once: still hot */
	check_set(&h, want, 1);
	tick_a(&h, w, 1); /* written again: still hot, idle count back to 0 */
	check_set(&h, want, 1);
	tick_a(&h, NULL, 0);
	check_set(&h, want, 1);
	tick_a(&h, NULL, 0); /* the second unwritten interval in a row: cold */
	check_set(&h, want, 0);
	CHECK_EQ(h.n, 0);
	tick_a(&h, w, 1); /* and it must earn its heat again */
	check_set(&h, want, 0);
	ml_hotrange_free(&h);

	/* cool 1: cold the first interval it is not written, like a VMA */
	REQUIRE(ml_hotrange_init(&h, 2, 1, 0) == 0);
	tick_a(&h, w, 1);
	tick_a(&h, w, 1);
	check_set(&h, want, 1);
	tick_a(&h, NULL, 0);
	check_set(&h, want, 0);
	ml_hotrange_free(&h);
}

/*
 * A hot set whose halves each miss one interval in turn, and noise pages
 * written every other interval: the reported set never changes.
 */
static void test_noise_does_not_flip(void)
{
	static const uint64_t all[][2] = { { 0, 10 }, { 100, 110 } };
	static const uint64_t odd[][2] = { { 0, 5 } };
	static const uint64_t even[][2] = { { 5, 10 }, { 100, 110 } };
	static const uint64_t want[][2] = { { AP(0), AP(10) } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 3, 3, 0) == 0);
	tick_a(&h, all, 1);
	tick_a(&h, all, 1);
	tick_a(&h, all, 1);
	check_set(&h, want, 1);
	for (int i = 0; i < 20; i++) {
		if (i % 2)
			tick_a(&h, odd, 1);
		else
			tick_a(&h, even, 2);
		check_set(&h, want, 1);
	}
	ml_hotrange_free(&h);
}

/* Runs at pages 0, 3, 10, 12: gaps of 2, 6 and 1 pages. */
static const uint64_t four[][2] = { { 0, 1 }, { 3, 4 }, { 10, 11 }, { 12, 13 } };

static void test_merge_cheapest_first(void)
{
	static const uint64_t want2[][2] = { { AP(0), AP(4) }, { AP(10), AP(13) } };
	static const uint64_t want3[][2] = { { AP(0), AP(1) },
					     { AP(3), AP(4) },
					     { AP(10), AP(13) } };
	struct ml_hotrange_set s;
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 0, 3) == 0);
	tick_a(&h, four, 4);
	check_set(&h, want3, 3); /* the 1-page gap goes first */
	get(&h, &s);
	CHECK_EQ(s.unmerged, 4);
	CHECK_EQ(s.merge_cost_bytes, 1 * PG);
	CHECK_EQ(s.r[2].hot_pages, 2);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);

	REQUIRE(ml_hotrange_init(&h, 1, 0, 2) == 0);
	tick_a(&h, four, 4);
	check_set(&h, want2, 2); /* then the 2-page one; the 6-page gap stays */
	get(&h, &s);
	CHECK_EQ(s.merge_cost_bytes, 3 * PG);
	CHECK_EQ(s.hot_bytes, 4 * PG);
	CHECK_EQ(s.r[0].hot_pages, 2);
	CHECK_EQ(s.r[1].hot_pages, 2);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);
}

/* Equal gaps: the lower address is merged first. */
static void test_merge_tie_lowest_address(void)
{
	static const uint64_t w[][2] = { { 0, 1 }, { 3, 4 }, { 6, 7 } };
	static const uint64_t want[][2] = { { AP(0), AP(4) }, { AP(6), AP(7) } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 0, 2) == 0);
	tick_a(&h, w, 3);
	check_set(&h, want, 2);
	ml_hotrange_free(&h);
}

/* A gap into another VMA goes last, however cheap. */
static void test_merge_within_vma_first(void)
{
	struct ml_range w[] = { { AP(0), AP(1) }, { AP(1023), AEND }, { BP(0), BP(1) } };
	static const uint64_t want2[][2] = { { AP(0), AEND }, { BP(0), BP(1) } };
	static const uint64_t want1[][2] = { { AP(0), BP(1) } };
	struct ml_hotrange_set s;
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 0, 2) == 0);
	REQUIRE(ml_hotrange_update(&h, ab, 2, w, 3) == 0);
	check_set(&h, want2, 2); /* 1022 pages within A, rather than 16 between A and B */
	get(&h, &s);
	CHECK_EQ(s.merge_cost_bytes, 1022 * PG);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);

	REQUIRE(ml_hotrange_init(&h, 1, 0, 1) == 0);
	REQUIRE(ml_hotrange_update(&h, ab, 2, w, 3) == 0);
	check_set(&h, want1, 1);
	get(&h, &s);
	CHECK_EQ(s.merge_cost_bytes, (1022 + 16) * PG);
	CHECK_EQ(s.r[0].hot_pages, 3);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);
}

/* 500 one-page runs two pages apart, bound 256: 256 ranges, 244 gaps closed. */
static void test_bound(void)
{
	static const struct ml_range big = { A0, A0 + 4096 * PG };
	struct ml_range w[500];
	struct ml_hotrange_set s;
	struct ml_hotrange h;

	for (size_t i = 0; i < 500; i++)
		w[i] = (struct ml_range){ A0 + i * 3 * PG, A0 + (i * 3 + 1) * PG };
	REQUIRE(ml_hotrange_init(&h, 1, 0, 0) == 0);
	REQUIRE(ml_hotrange_update(&h, &big, 1, w, 500) == 0);
	get(&h, &s);
	CHECK_EQ(s.n, 256);
	CHECK_EQ(s.unmerged, 500);
	CHECK_EQ(s.hot_bytes, 500 * PG);
	CHECK_EQ(s.merge_cost_bytes, 244 * 2 * PG);
	/* all gaps cost the same: the lowest 244 are closed */
	CHECK_EQ(s.r[0].start, A0);
	CHECK_EQ(s.r[0].end, A0 + (244 * 3 + 1) * PG);
	CHECK_EQ(s.r[0].hot_pages, 245);
	CHECK_EQ(s.r[1].start, A0 + 245 * 3 * PG);
	CHECK_EQ(s.r[255].end, A0 + (499 * 3 + 1) * PG);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);
}

static void test_vma_removed_and_shrunk(void)
{
	struct ml_range w[] = { { AP(0), AP(20) }, { BP(0), BP(4) } };
	static const uint64_t both[][2] = { { AP(0), AP(20) }, { BP(0), BP(4) } };
	static const uint64_t a_only[][2] = { { AP(0), AP(20) } };
	static const uint64_t shrunk[][2] = { { AP(0), AP(10) } };
	struct ml_range small_a = { A0, AP(10) };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 10, 0) == 0); /* cool 10: no page cools here */
	REQUIRE(ml_hotrange_update(&h, ab, 2, w, 2) == 0);
	check_set(&h, both, 2);
	/* B unmapped: its state goes at once, hysteresis or not */
	REQUIRE(ml_hotrange_update(&h, ab, 1, NULL, 0) == 0);
	check_set(&h, a_only, 1);
	CHECK_EQ(h.n, 1);
	/* A shrinks to 10 pages: the rest of its state is clipped */
	REQUIRE(ml_hotrange_update(&h, &small_a, 1, NULL, 0) == 0);
	check_set(&h, shrunk, 1);
	/* grown back, nothing written: pages 10..19 have no state to come back to */
	REQUIRE(ml_hotrange_update(&h, ab, 2, NULL, 0) == 0);
	check_set(&h, shrunk, 1);
	/* all gone */
	REQUIRE(ml_hotrange_update(&h, NULL, 0, w, 2) == 0);
	CHECK_EQ(h.n, 0);
	check_set(&h, both, 0);
	ml_hotrange_free(&h);
}

/* A 1 TiB VMA with three written pages: three extents of state, nothing more. */
static void test_large_sparse_vma(void)
{
	static const uint64_t base = 0x100000000000ULL, tib = 1ULL << 40;
	struct ml_range v = { base, base + tib };
	struct ml_range w[] = { { base + tib - PG, base + tib },
				{ base, base + PG },
				{ base + tib / 2, base + tib / 2 + 2 * PG } };
	struct ml_hotrange_set s;
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 3, 0, 0) == 0);
	for (int i = 0; i < 3; i++)
		REQUIRE(ml_hotrange_update(&h, &v, 1, w, 3) == 0);
	CHECK_EQ(h.n, 3);
	get(&h, &s);
	REQUIRE(s.n == 3);
	CHECK_EQ(s.r[0].start, base);
	CHECK_EQ(s.r[1].start, base + tib / 2);
	CHECK_EQ(s.r[1].hot_pages, 2);
	CHECK_EQ(s.r[2].end, base + tib);
	ml_hotrange_set_free(&s);
	ml_hotrange_free(&h);
}

/* Written ranges in any order, overlapping, not page-aligned, partly unmapped. */
static void test_written_normalised(void)
{
	struct ml_range w[] = { { AP(5) + 100, AP(6) + 1 },
				{ AP(0), AP(2) },
				{ AP(1), AP(3) },
				{ AEND - PG, AEND + 8 * PG } };
	static const uint64_t want[][2] = { { AP(0), AP(3) },
					    { AP(5), AP(7) },
					    { AEND - PG, AEND } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 0, 0) == 0);
	REQUIRE(ml_hotrange_update(&h, ab, 2, w, 4) == 0);
	check_set(&h, want, 3);
	ml_hotrange_free(&h);
}

static void test_bad_vmas_and_reset(void)
{
	static const struct ml_range overlap[] = { { A0, AP(10) }, { AP(5), AP(20) } };
	static const struct ml_range empty[] = { { A0, A0 } };
	static const uint64_t w[][2] = { { 0, 1 } };
	struct ml_hotrange h;

	REQUIRE(ml_hotrange_init(&h, 1, 0, 0) == 0);
	tick_a(&h, w, 1);
	CHECK_EQ(ml_hotrange_update(&h, overlap, 2, NULL, 0), -EINVAL);
	CHECK_EQ(ml_hotrange_update(&h, empty, 1, NULL, 0), -EINVAL);
	CHECK_EQ(h.n, 1); /* unchanged */
	ml_hotrange_reset(&h);
	CHECK_EQ(h.n, 0);
	check_set(&h, w, 0);
	ml_hotrange_free(&h);
}

int main(void)
{
	RUN(test_params);
	RUN(test_streak);
	RUN(test_streak_broken);
	RUN(test_hysteresis);
	RUN(test_noise_does_not_flip);
	RUN(test_merge_cheapest_first);
	RUN(test_merge_tie_lowest_address);
	RUN(test_merge_within_vma_first);
	RUN(test_bound);
	RUN(test_vma_removed_and_shrunk);
	RUN(test_large_sparse_vma);
	RUN(test_written_normalised);
	RUN(test_bad_vmas_and_reset);
	return T_DONE();
}
