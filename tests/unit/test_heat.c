// SPDX-License-Identifier: MIT
/* The heat classifier on synthetic intervals. */
#include <errno.h>
#include <math.h>

#include "harness.h"
#include "memlens/heat.h"

#define PAGES(n) ((uint64_t)(n)*4096)

static void step(struct ml_heat *h, uint64_t dirty_a, uint64_t dirty_b)
{
	struct ml_heat_sample s[2] = {
		{ 0x10000, 0x10000 + PAGES(100), dirty_a },
		{ 0x90000, 0x90000 + PAGES(10), dirty_b },
	};

	REQUIRE(ml_heat_update(h, s, 2) == 0);
}

static void test_params_validated(void)
{
	struct ml_heat h;

	CHECK_EQ(ml_heat_init(&h, 0.0, 3), -EINVAL);
	CHECK_EQ(ml_heat_init(&h, 1.01, 3), -EINVAL);
	CHECK_EQ(ml_heat_init(&h, NAN, 3), -EINVAL);
	CHECK_EQ(ml_heat_init(&h, 0.3, 0), -EINVAL);
	CHECK_EQ(ml_heat_init(&h, 0.3, ML_HEAT_WINDOW + 1), -EINVAL);
	CHECK_EQ(ml_heat_init(&h, 1.0, ML_HEAT_WINDOW), 0);
	ml_heat_free(&h);
}

static void test_hot_after_consecutive(void)
{
	struct ml_heat h;

	REQUIRE(ml_heat_init(&h, 0.3, 3) == 0);
	step(&h, 31, 0); /* 0.31 > 0.3 */
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	CHECK_EQ(ml_heat_find(&h, 0x10000)->consecutive_hot, 1);
	step(&h, 50, 0);
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	step(&h, 100, 0);
	CHECK(ml_heat_find(&h, 0x10000)->hot);
	CHECK_EQ(ml_heat_find(&h, 0x10000)->consecutive_hot, 3);
	CHECK_EQ(ml_heat_hot_count(&h), 1);
	CHECK(!ml_heat_find(&h, 0x90000)->hot);
	ml_heat_free(&h);
}

static void test_threshold_is_strict(void)
{
	struct ml_heat h;

	REQUIRE(ml_heat_init(&h, 0.3, 1) == 0);
	step(&h, 30, 3); /* exactly 0.3: not above */
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	CHECK(!ml_heat_find(&h, 0x90000)->hot);
	step(&h, 31, 4);
	CHECK(ml_heat_find(&h, 0x10000)->hot);
	CHECK(ml_heat_find(&h, 0x90000)->hot);
	ml_heat_free(&h);
}

static void test_hot_to_cold_resets(void)
{
	struct ml_heat h;

	REQUIRE(ml_heat_init(&h, 0.3, 2) == 0);
	step(&h, 90, 0);
	step(&h, 90, 0);
	CHECK(ml_heat_find(&h, 0x10000)->hot);
	step(&h, 10, 0);
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	CHECK_EQ(ml_heat_find(&h, 0x10000)->consecutive_hot, 0);
	step(&h, 90, 0); /* needs 2 in a row again */
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	step(&h, 90, 0);
	CHECK(ml_heat_find(&h, 0x10000)->hot);
	ml_heat_free(&h);
}

static void test_window_and_ratio(void)
{
	struct ml_heat h;

	REQUIRE(ml_heat_init(&h, 0.3, 3) == 0);
	for (int i = 0; i < 15; i++)
		step(&h, (uint64_t)i * 2, 0);
	const struct ml_heat_state *st = ml_heat_find(&h, 0x10000);
	CHECK_EQ(st->count, ML_HEAT_WINDOW);
	/* last ten ratios: 0.10 .. 0.28 -> mean 0.19 */
	CHECK(fabs(ml_heat_window_mean(st) - 0.19) < 1e-9);
	CHECK(fabs(st->ratio - 0.28) < 1e-9);
	CHECK_EQ(st->dirty_pages, 28);
	ml_heat_free(&h);
}

static void test_state_dropped_on_unmap(void)
{
	struct ml_heat h;
	struct ml_heat_sample only_b = { 0x90000, 0x90000 + PAGES(10), 9 };
	struct ml_heat_sample a_again = { 0x10000, 0x10000 + PAGES(100), 0 };

	REQUIRE(ml_heat_init(&h, 0.3, 1) == 0);
	step(&h, 90, 0);
	CHECK(ml_heat_find(&h, 0x10000)->hot);
	REQUIRE(ml_heat_update(&h, &only_b, 1) == 0);
	CHECK(ml_heat_find(&h, 0x10000) == NULL);
	CHECK(ml_heat_find(&h, 0x90000)->hot);
	/* a new VMA at the old address starts fresh */
	REQUIRE(ml_heat_update(&h, &a_again, 1) == 0);
	CHECK_EQ(ml_heat_find(&h, 0x10000)->count, 1);
	CHECK(!ml_heat_find(&h, 0x10000)->hot);
	CHECK(ml_heat_find(&h, 0x90000) == NULL);
	ml_heat_free(&h);
}

static void test_reset(void)
{
	struct ml_heat h;

	REQUIRE(ml_heat_init(&h, 0.3, 1) == 0);
	step(&h, 90, 9);
	ml_heat_reset(&h);
	CHECK_EQ(h.n, 0);
	CHECK_EQ(ml_heat_hot_count(&h), 0);
	REQUIRE(ml_heat_update(&h, NULL, 0) == 0);
	ml_heat_free(&h);
}

int main(void)
{
	RUN(test_params_validated);
	RUN(test_hot_after_consecutive);
	RUN(test_threshold_is_strict);
	RUN(test_hot_to_cold_resets);
	RUN(test_window_and_ratio);
	RUN(test_state_dropped_on_unmap);
	RUN(test_reset);
	return T_DONE();
}
