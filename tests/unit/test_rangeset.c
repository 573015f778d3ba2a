// SPDX-License-Identifier: MIT
#include "harness.h"
#include "memlens/rangeset.h"

static int collect(uint64_t s, uint64_t e, void *arg)
{
	struct ml_rangeset *out = arg;

	return ml_rangeset_add(out, s, e);
}

static void test_add_merges(void)
{
	struct ml_rangeset s;

	ml_rangeset_init(&s);
	ml_rangeset_add(&s, 100, 200);
	ml_rangeset_add(&s, 300, 400);
	ml_rangeset_add(&s, 200, 300); /* adjacent on both sides */
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.r[0].start, 100);
	CHECK_EQ(s.r[0].end, 400);
	ml_rangeset_add(&s, 500, 600);
	ml_rangeset_add(&s, 50, 60);
	CHECK_EQ(s.n, 3);
	ml_rangeset_add(&s, 0, 1000);
	CHECK_EQ(s.n, 1);
	CHECK_EQ(ml_rangeset_bytes(&s), 1000);
	ml_rangeset_add(&s, 5, 5); /* empty */
	CHECK_EQ(s.n, 1);
	ml_rangeset_free(&s);
}

static void test_remove_splits(void)
{
	struct ml_rangeset s;

	ml_rangeset_init(&s);
	ml_rangeset_add(&s, 0, 1000);
	ml_rangeset_remove(&s, 100, 200);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(s.r[0].end, 100);
	CHECK_EQ(s.r[1].start, 200);
	ml_rangeset_remove(&s, 50, 250);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(s.r[0].end, 50);
	CHECK_EQ(s.r[1].start, 250);
	ml_rangeset_remove(&s, 0, 50);
	CHECK_EQ(s.n, 1);
	ml_rangeset_remove(&s, 0, 2000);
	CHECK_EQ(s.n, 0);
	ml_rangeset_free(&s);
}

static void test_queries(void)
{
	struct ml_rangeset s, gaps;

	ml_rangeset_init(&s);
	ml_rangeset_init(&gaps);
	ml_rangeset_add(&s, 100, 200);
	ml_rangeset_add(&s, 300, 400);
	CHECK(ml_rangeset_covers(&s, 100, 200));
	CHECK(!ml_rangeset_covers(&s, 100, 300));
	CHECK(ml_rangeset_intersects(&s, 150, 350));
	CHECK(!ml_rangeset_intersects(&s, 200, 300));
	CHECK_EQ(ml_rangeset_overlap(&s, 150, 350), 100);
	REQUIRE(ml_rangeset_gaps(&s, 0, 500, collect, &gaps) == 0);
	CHECK_EQ(gaps.n, 3);
	CHECK_EQ(gaps.r[0].start, 0);
	CHECK_EQ(gaps.r[0].end, 100);
	CHECK_EQ(gaps.r[1].start, 200);
	CHECK_EQ(gaps.r[1].end, 300);
	CHECK_EQ(gaps.r[2].start, 400);
	CHECK_EQ(gaps.r[2].end, 500);
	ml_rangeset_clear(&gaps);
	REQUIRE(ml_rangeset_gaps(&s, 120, 180, collect, &gaps) == 0);
	CHECK_EQ(gaps.n, 0);
	ml_rangeset_free(&s);
	ml_rangeset_free(&gaps);
}

/* against a bitmap model, many random operations */
static void test_random_against_model(void)
{
	enum { N = 512 };
	unsigned char model[N];
	struct ml_rangeset s;
	unsigned int seed = 12345;

	ml_rangeset_init(&s);
	memset(model, 0, sizeof(model));
	for (int it = 0; it < 5000; it++) {
		uint64_t a = rand_r(&seed) % N, b = rand_r(&seed) % N;
		int add = rand_r(&seed) & 1;

		if (a > b) {
			uint64_t t = a;
			a = b;
			b = t;
		}
		if (add)
			ml_rangeset_add(&s, a, b);
		else
			ml_rangeset_remove(&s, a, b);
		for (uint64_t i = a; i < b; i++)
			model[i] = (unsigned char)add;
		if (it % 50 == 0) {
			for (uint64_t i = 0; i < N; i++)
				REQUIRE(ml_rangeset_covers(&s, i, i + 1) == (model[i] == 1));
			for (size_t k = 0; k + 1 < s.n; k++)
				REQUIRE(s.r[k].end < s.r[k + 1].start);
		}
	}
	ml_rangeset_free(&s);
}

int main(void)
{
	RUN(test_add_merges);
	RUN(test_remove_splits);
	RUN(test_queries);
	RUN(test_random_against_model);
	return T_DONE();
}
