// SPDX-License-Identifier: MIT
/*
 * The pre-copy migration model on small synthetic traces, answers worked out
 * by hand. Pages are 4 KiB; region A = 16 pages at 0x10000, B = 8 pages at
 * 0x40000, C = 4 pages at 0x80000. Every interval is 1 s long.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "memlens/hotrange.h"
#include "memlens/migrate_model.h"

#define PG 4096ULL

struct ivspec {
	int64_t t_ms;
	bool a_hot, has_b, has_c;
	bool write_b; /* B page 0 written */
	bool skip_a; /* A pages 0..3 not written (else they are) */
};

static void add_line(struct ml_mm_trace *t, const struct ivspec *s)
{
	char line[1024];
	struct ml_err err = { 0 };
	int n;

	n = snprintf(
		line, sizeof(line),
		"{\"type\":\"interval\",\"pid\":1,\"seq\":1,\"t_ms\":%lld,\"interval_s\":1.0,"
		"\"regions\":[{\"start_addr\":\"0x10000\",\"end_addr\":\"0x20000\",\"kind\":"
		"\"anon\","
		"\"total_pages\":16,\"dirty_pages\":4,\"written_ratio\":0.25,\"consecutive_hot\":3,"
		"\"hot\":%s}%s%s],\"written\":[%s%s%s]}\n",
		(long long)s->t_ms, s->a_hot ? "true" : "false",
		s->has_b ? ",{\"start_addr\":\"0x40000\",\"end_addr\":\"0x48000\",\"hot\":false}"
			 : "",
		s->has_c ? ",{\"start_addr\":\"0x80000\",\"end_addr\":\"0x84000\",\"hot\":false}"
			 : "",
		s->skip_a ? "" : "[\"0x10000\",\"0x14000\"]", s->write_b && !s->skip_a ? "," : "",
		s->write_b ? "[\"0x40000\",\"0x41000\"]" : "");
	REQUIRE(n > 0 && n < (int)sizeof(line));
	REQUIRE_MSG(!ml_mm_trace_add_line(t, line, (size_t)n, &err), "%s", err.msg);
}

/* Six intervals; A hot from interval @hot_from (1-based; 0: never); B written at t=4 s. */
static void trace_ab(struct ml_mm_trace *t, int hot_from)
{
	ml_mm_trace_init(t);
	for (int i = 1; i <= 6; i++) {
		struct ivspec s = { .t_ms = i * 1000,
				    .a_hot = hot_from && i >= hot_from,
				    .has_b = true,
				    .write_b = i == 4 };

		add_line(t, &s);
	}
}

static void check_rounds(const struct ml_mm_result *r, const uint64_t *want, size_t n)
{
	CHECK_EQ(r->nrounds, n);
	for (size_t i = 0; i < n && i < r->nrounds; i++) {
		CHECK_EQ(r->rounds[i].round, (long long)i + 1);
		if (r->rounds[i].bytes != want[i])
			T_FAILMSG("%s round %zu: %llu bytes, want %llu",
				  ml_mm_policy_name(r->policy), i + 1,
				  (unsigned long long)r->rounds[i].bytes,
				  (unsigned long long)want[i]);
	}
}

static void run(const struct ml_mm_trace *t, struct ml_mm_params *p, struct ml_mm_result *res)
{
	struct ml_err err = { 0 };

	REQUIRE_MSG(!ml_mm_run(t, p, res, &err), "%s", err.msg);
}

/* A turns hot at interval 3. Rounds at 2, 4 (pre-dumps) and 6 s (final). */
static void test_hot_late(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	/* none: all 24 pages; then A0-3 + B0 (5); then A0-3 (4) */
	static const uint64_t none[] = { 24 * PG, 5 * PG, 4 * PG };
	/* hot-vma: A not hot at 2 s; at 4 s A is left out, B0 goes; final A0-3 */
	static const uint64_t vma[] = { 24 * PG, 1 * PG, 4 * PG };

	trace_ab(&t, 3);
	run(&t, &p, r);
	CHECK_STR(ml_mm_policy_name(r[0].policy), "none");
	check_rounds(&r[ML_MM_NONE], none, 3);
	CHECK_EQ(r[ML_MM_NONE].total_bytes, 33 * PG);
	CHECK_EQ(r[ML_MM_NONE].final_round_bytes, 4 * PG);
	CHECK(r[ML_MM_NONE].downtime_ms == 15.625); /* 16 KiB at 1 MiB/s */
	check_rounds(&r[ML_MM_HOT_VMA], vma, 3);
	CHECK_EQ(r[ML_MM_HOT_VMA].total_bytes, 29 * PG);
	/* hot-range: A0-3 written at 2, 3 and 4 s: the same as hot-vma here */
	check_rounds(&r[ML_MM_HOT_RANGE], vma, 3);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/* Run @p on @t: the policies of @mask (ML_MM_POLICY() or'ed) send @want (3 rounds). */
static void expect_rounds(const struct ml_mm_trace *t, struct ml_mm_params *p, unsigned int mask,
			  const uint64_t *want)
{
	ML_MM_RESULTS(r);

	run(t, p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		if (mask & ML_MM_POLICY(k))
			check_rounds(&r[k], want, 3);
	ml_mm_results_free(r);
}

/*
 * By default the last pre-dump leaves nothing out (as migrate's does): the
 * final dump then carries what was written after it, as none's does. With
 * the rounds' times given, only when the migration planned that many.
 */
static void test_last_predump_sends_hot(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 2);
	static const int64_t at[] = { 2000, 4000, 6000 };
	const unsigned int hot = ML_MM_POLICY(ML_MM_HOT_VMA) | ML_MM_POLICY(ML_MM_HOT_RANGE);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	/* none's rounds: A turns hot at 3 s, yet round 2, the last pre-dump, sends it */
	static const uint64_t none[] = { 24 * PG, 5 * PG, 4 * PG };
	static const uint64_t kept[] = { 24 * PG, 1 * PG, 4 * PG };

	trace_ab(&t, 3);
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		check_rounds(&r[k], none, 3);
		CHECK_EQ(r[k].final_round_bytes, 4 * PG);
	}
	ml_mm_results_free(r);
	/* the times given, max_rounds not: the last of them was planned */
	p.round_at_ms = at;
	p.nround_at = 3;
	expect_rounds(&t, &p, ML_MM_POLICY(ML_MM_HOT_RANGE), none);
	/* planned 2 pre-dumps, made 2: the second sends the hot pages */
	p.max_rounds = 2;
	expect_rounds(&t, &p, hot, none);
	/* planned 3, stopped after 2 (its threshold): the second left A out */
	p.max_rounds = 3;
	expect_rounds(&t, &p, hot, kept);
	/* --keep-hot-out */
	p.max_rounds = 0;
	p.keep_hot_out = true;
	expect_rounds(&t, &p, ML_MM_POLICY(ML_MM_HOT_RANGE), kept);
	ml_mm_trace_free(&t);
}

/* .policies runs only those asked for; what it runs is what a full run gives */
static void test_policies(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(all);
	ML_MM_RESULTS(one);
	struct ml_mm_trace t;

	trace_ab(&t, 3);
	run(&t, &p, all);
	p.policies = ML_MM_POLICY(ML_MM_HOT_RANGE);
	run(&t, &p, one);
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		CHECK_EQ(one[k].policy, (enum ml_mm_policy)k);
	CHECK_EQ(one[ML_MM_NONE].nrounds, 0);
	CHECK_EQ(one[ML_MM_NONE].total_bytes, 0);
	CHECK_EQ(one[ML_MM_HOT_VMA].nrounds, 0);
	CHECK_EQ(one[ML_MM_HOT_RANGE].nrounds, all[ML_MM_HOT_RANGE].nrounds);
	CHECK_EQ(one[ML_MM_HOT_RANGE].total_bytes, all[ML_MM_HOT_RANGE].total_bytes);
	CHECK_EQ(one[ML_MM_HOT_RANGE].final_round_bytes, all[ML_MM_HOT_RANGE].final_round_bytes);
	CHECK(one[ML_MM_HOT_RANGE].downtime_ms == all[ML_MM_HOT_RANGE].downtime_ms);
	ml_mm_results_free(all);
	ml_mm_results_free(one);
	ml_mm_trace_free(&t);
}

/*
 * A freeze overhead adds to every policy's downtime; with post-copy only the
 * overhead is downtime, and the final round still ends when it did.
 */
static void test_freeze_overhead(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2,
		.freeze_overhead_s = 0.5);
	ML_MM_RESULTS(r);
	struct ml_err err = { 0 };
	struct ml_mm_trace t;

	trace_ab(&t, 1);
	run(&t, &p, r);
	CHECK(r[ML_MM_NONE].downtime_ms == 500 + 15.625); /* 16 KiB at 1 MiB/s */
	CHECK(r[ML_MM_HOT_VMA].downtime_ms == 500 + 62.5);
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		CHECK(r[k].postcopy_downtime_ms == 500);
	ml_mm_results_free(r);
	/* a negative or NaN overhead is refused */
	p.freeze_overhead_s = -1;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.freeze_overhead_s = NAN;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	ml_mm_trace_free(&t);
}

/*
 * The downtime's parts: the final dump (its fixed part and the final round
 * at the bandwidth) and the restore (its fixed part and the tree's memory,
 * A and B's 24 pages, at the restore's bandwidth); post-copy's downtime is
 * the fixed parts alone, its last page all of the tree's memory later (the
 * pre-dump rounds' pages arrive lazily too), at the lazy bandwidth (the
 * bandwidth by default), plus the faults' waits.
 */
static void test_downtime_parts(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2,
		.freeze_overhead_s = 0.125, .dump_fixed_s = 0.25, .restore_fixed_s = 0.5,
		.restore_bandwidth_mbps = 2);
	ML_MM_RESULTS(r);
	struct ml_err err = { 0 };
	struct ml_mm_trace t;

	trace_ab(&t, 1);
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		CHECK_EQ(r[k].restored_bytes, 24 * PG);
		CHECK(r[k].restore_ms == 500 + 46.875); /* 96 KiB at 2 MiB/s */
		CHECK(r[k].postcopy_downtime_ms == 125 + 250 + 500);
	}
	CHECK(r[ML_MM_NONE].dump_ms == 250 + 15.625); /* 16 KiB at 1 MiB/s */
	CHECK(r[ML_MM_NONE].downtime_ms == 125 + 250 + 15.625 + 546.875);
	CHECK(r[ML_MM_HOT_VMA].dump_ms == 250 + 62.5); /* all of A: 64 KiB */
	CHECK(r[ML_MM_HOT_VMA].downtime_ms == 125 + 250 + 62.5 + 546.875);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		/* the final round or not, all 96 KiB lazily at 1 MiB/s */
		CHECK_EQ(r[k].lazy_bytes, 24 * PG);
		CHECK(r[k].postcopy_last_page_ms == 875 + 93.75);
	}
	ml_mm_results_free(r);
	/* 96 KiB at 4 MiB/s, 10 faults of 3.90625 ms */
	p.lazy_bandwidth_mbps = 4;
	p.lazy_faults = 10;
	p.lazy_fault_s = 0.00390625;
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		CHECK(r[k].postcopy_last_page_ms == 875 + 23.4375 + 39.0625);
		CHECK(r[k].postcopy_downtime_ms == 875);
	}
	CHECK(r[ML_MM_NONE].downtime_ms == 125 + 250 + 15.625 + 546.875); /* not post-copy's */
	ml_mm_results_free(r);
	p.lazy_fault_s = -1;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.lazy_fault_s = 0;
	p.lazy_bandwidth_mbps = NAN;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.lazy_bandwidth_mbps = 0;
	p.lazy_faults = 0;
	/* no restore bandwidth: the restore is its fixed part */
	p.restore_bandwidth_mbps = 0;
	run(&t, &p, r);
	CHECK(r[ML_MM_NONE].restore_ms == 500);
	CHECK(r[ML_MM_NONE].downtime_ms == 125 + 265.625 + 500);
	ml_mm_results_free(r);
	/* negative or NaN parts are refused */
	p.restore_bandwidth_mbps = -1;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.restore_bandwidth_mbps = NAN;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.restore_bandwidth_mbps = 0;
	p.dump_fixed_s = -0.5;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	p.dump_fixed_s = 0;
	p.restore_fixed_s = NAN;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	ml_mm_trace_free(&t);
}

#define MIB (1024 * 1024ULL)

/*
 * Fitting from a migration's record: four rounds of 64, 16, 8 and 8 MiB taking
 * 0.5 s + 1/32 s per MiB (32 MiB/s: the slope, whatever the rounds' own fixed
 * part); frozen 3.5 s, of which the restore 2.25 s and the final round 0.25
 * s: the dump's fixed part 1 s; the restore loaded 16384 pages (64 MiB) in
 * 2.25 s, 0.25 s of it fixed: 32 MiB/s.
 */
static void test_calibrate(void)
{
	struct ml_migrate_round_rec rounds[] = {
		{ .round = 1, .pre_dump = true, .bytes = 64 * MIB, .duration_ms = 2500 },
		{ .round = 2, .pre_dump = true, .bytes = 16 * MIB, .duration_ms = 1000 },
		{ .round = 3, .pre_dump = true, .bytes = 8 * MIB, .duration_ms = 750 },
		{ .round = 4, .bytes = 8 * MIB, .duration_ms = 750, .pages_scanned = 16384 },
	};
	struct ml_migrate_rec m = {
		.ok = true, .rounds = rounds, .nrounds = 4, .downtime_ms = 3500, .restore_ms = 2250
	};
	struct ml_mm_fit fit = { .sz = sizeof(fit), .restore_fixed_s = 0.25 };
	struct ml_err err = { 0 };

	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK(fit.slope);
	CHECK(fit.bandwidth_mbps == 32);
	CHECK(fit.dump_fixed_s == 1);
	CHECK(fit.restore_fixed_s == 0.25);
	CHECK(!fit.restore_fixed_fitted);
	CHECK_EQ(fit.restored_bytes, 64 * MIB);
	CHECK_EQ(fit.final_bytes, 8 * MIB);
	CHECK(fit.restore_bandwidth_mbps == 32);

	/* a restore no longer than its fixed part: no bandwidth */
	fit = (struct ml_mm_fit){ .sz = sizeof(fit), .restore_fixed_s = 3 };
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK(fit.restore_bandwidth_mbps == 0);
	CHECK(fit.restore_fixed_s == 3);

	/* post-copy: the restore loaded no memory, all of it is fixed */
	m.postcopy = true;
	m.restore_ms = 1500;
	fit = (struct ml_mm_fit){ .sz = sizeof(fit), .restore_fixed_s = 0.25 };
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK(fit.restore_fixed_fitted);
	CHECK(fit.restore_fixed_s == 1.5);
	CHECK(fit.restore_bandwidth_mbps == 0);
	/* the model's post-copy final dump sends no memory: all of its frozen time is fixed */
	CHECK(fit.dump_fixed_s == 3.5 - 1.5);
	/* no "lazy" numbers: nothing lazy fitted */
	CHECK(fit.lazy_bandwidth_mbps == 0 && fit.lazy_faults == 0 && fit.lazy_fault_s == 0);

	/*
	 * its lazy pages: 8192 copied in (32 MiB, 6144 of them from the parent
	 * images), the last 11.5 s after the freeze: 11.5 - 3.5 s, less 1000
	 * faults of 4 ms, is 4 s: 8 MiB/s
	 */
	m.lazy = (struct ml_migrate_lazy_rec){ .pages_left = 2048,
					       .pages_copied = 8192,
					       .pages_parent = 6144,
					       .bytes = 8 * MIB,
					       .faults = 1000,
					       .fault_wait_avg_us = 4000,
					       .last_page_ms = 11500 };
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK_EQ(fit.lazy_bytes, 32 * MIB);
	CHECK_EQ(fit.lazy_faults, 1000);
	CHECK(fit.lazy_fault_s == 0.004);
	CHECK(fit.lazy_bandwidth_mbps == 8);
	/* pages_copied unknown: its bytes; no time left after the faults: no bandwidth */
	m.lazy.pages_copied = 0;
	m.lazy.last_page_ms = 7500;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK_EQ(fit.lazy_bytes, 8 * MIB);
	CHECK(fit.lazy_bandwidth_mbps == 0);
	CHECK_EQ(fit.lazy_faults, 1000);
	m.lazy = (struct ml_migrate_lazy_rec){ 0 };

	/* rounds of equal bytes: no slope, bytes / time; the dump's fixed part at least 0 */
	m.postcopy = false;
	m.nrounds = 2;
	rounds[0] = rounds[1] = rounds[3];
	m.downtime_ms = 100;
	m.restore_ms = 2250;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), 0);
	CHECK(!fit.slope);
	CHECK(fit.bandwidth_mbps == 16 / 1.5);
	CHECK(fit.dump_fixed_s == 0);

	/* nothing to fit from */
	rounds[0].duration_ms = rounds[1].duration_ms = 0;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), -EINVAL);
	m.ok = false;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), -EINVAL);
	m.ok = true;
	m.nrounds = 0;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), -EINVAL);
	fit.restore_fixed_s = -1;
	m.nrounds = 2;
	rounds[0].duration_ms = 750;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), -EINVAL);
}

/* A hot from the start: hot-vma leaves all of A (16 pages) for the downtime. */
static void test_hot_vma_granularity(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	static const uint64_t vma[] = { 8 * PG, 1 * PG, 16 * PG };
	static const uint64_t range[] = { 24 * PG, 1 * PG, 4 * PG };

	trace_ab(&t, 1);
	run(&t, &p, r);
	check_rounds(&r[ML_MM_HOT_VMA], vma, 3);
	CHECK_EQ(r[ML_MM_HOT_VMA].total_bytes, 25 * PG);
	CHECK(r[ML_MM_HOT_VMA].downtime_ms == 62.5);
	/* hot-range: not enough history at 2 s; A0-3 only at 4 s; final A0-3 */
	check_rounds(&r[ML_MM_HOT_RANGE], range, 3);
	CHECK(r[ML_MM_HOT_RANGE].downtime_ms == 15.625);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/*
 * A0-3 written in every interval but the fourth: still hot at the 4 s round
 * (one unwritten interval, cool 3), so it stays out; with cool 1 it turns
 * cold at 4 s and goes. The rule the profiler applies, not "written in
 * each of the last N intervals".
 */
static void test_hot_range_hysteresis(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	static const uint64_t sticky[] = { 24 * PG, 0, 4 * PG };
	static const uint64_t cool1[] = { 24 * PG, 4 * PG, 4 * PG };

	ml_mm_trace_init(&t);
	for (int i = 1; i <= 6; i++) {
		struct ivspec s = { .t_ms = i * 1000, .has_b = true, .skip_a = i == 4 };

		add_line(&t, &s);
	}
	run(&t, &p, r);
	check_rounds(&r[ML_MM_HOT_RANGE], sticky, 3);
	ml_mm_results_free(r);
	p.hot_cool = 1;
	run(&t, &p, r);
	check_rounds(&r[ML_MM_HOT_RANGE], cool1, 3);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/* Four one-page runs, bound 2: the two smallest gaps are excluded too. */
static void test_hot_range_bound(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2,
		.hot_intervals = 1, .hot_ranges_max = 2);
	ML_MM_RESULTS(r);
	struct ml_err err = { 0 };
	struct ml_mm_trace t;
	/* runs at A pages 0, 2, 8 and 10, written every second: gaps of 1, 5, 1 pages */
	static const char line[] =
		"{\"type\":\"interval\",\"t_ms\":%d,\"regions\":[{\"start_addr\":\"0x10000\","
		"\"end_addr\":\"0x20000\",\"hot\":false}],\"written\":[[\"0x10000\",\"0x11000\"],"
		"[\"0x12000\",\"0x13000\"],[\"0x18000\",\"0x19000\"],[\"0x1a000\",\"0x1b000\"]]}";
	/*
	 * 2 s: A0-2 and A8-10 left out (6 pages, A1 and A9 cold): 10 of 16 go;
	 * 4 s: nothing else is stale; the final round sends the 6 pages
	 */
	static const uint64_t want[] = { 10 * PG, 0, 6 * PG };
	char buf[512];

	ml_mm_trace_init(&t);
	for (int i = 1; i <= 6; i++) {
		int n = snprintf(buf, sizeof(buf), line, i * 1000);

		REQUIRE_MSG(!ml_mm_trace_add_line(&t, buf, (size_t)n, &err), "%s", err.msg);
	}
	run(&t, &p, r);
	check_rounds(&r[ML_MM_HOT_RANGE], want, 3);
	ml_mm_results_free(r);
	p.hot_cool = ML_HOTRANGE_MAX_INTERVALS + 1;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	ml_mm_trace_free(&t);
}

static void test_stop_threshold_and_max_rounds(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 2, .round_interval_s = 1,
		.stop_threshold_mb = 0.02);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	/* 1 s rounds: 24 pages, then 4 (<= 20 KiB: converged), then the final 4 */
	static const uint64_t thr[] = { 24 * PG, 4 * PG, 4 * PG };
	/* one pre-dump of 2 s, final at 4 s: writes of 3 and 4 s = A0-3 + B0 */
	static const uint64_t one[] = { 24 * PG, 5 * PG };

	trace_ab(&t, 0);
	run(&t, &p, r);
	check_rounds(&r[ML_MM_NONE], thr, 3);
	CHECK(r[ML_MM_NONE].downtime_ms == 7.8125); /* 16 KiB at 2 MiB/s */
	ml_mm_results_free(r);
	p.stop_threshold_mb = 0;
	p.round_interval_s = 2;
	p.max_rounds = 1;
	run(&t, &p, r);
	check_rounds(&r[ML_MM_NONE], one, 2);
	CHECK_EQ(r[ML_MM_NONE].final_round_bytes, 5 * PG);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/* B is unmapped and C mapped at 3 s: C is sent whole, B forgotten. */
static void test_vmas_come_and_go(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	static const uint64_t none[] = { 24 * PG, 8 * PG, 4 * PG };

	ml_mm_trace_init(&t);
	for (int i = 1; i <= 6; i++) {
		struct ivspec s = { .t_ms = i * 1000, .has_b = i < 3, .has_c = i >= 3 };

		add_line(&t, &s);
	}
	run(&t, &p, r);
	check_rounds(&r[ML_MM_NONE], none, 3);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

static void test_bad_traces(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_err err = { 0 };
	struct ml_mm_trace t;
	static const char *const bad[] = {
		"{\"t_ms\":1}", /* no type */
		"{\"type\":\"interval\"}", /* no t_ms */
		"{\"type\":\"interval\",\"t_ms\":1,\"regions\":{}}", /* not an array */
		"{\"type\":\"interval\",\"t_ms\":1,\"regions\":[{\"start_addr\":\"0x2000\","
		"\"end_addr\":\"0x1000\",\"hot\":false}]}", /* end < start */
		"{\"type\":\"interval\",\"t_ms\":1,\"regions\":[],\"written\":[[\"0x1000\"]]}",
		"{\"type\":\"interval\",\"t_ms\":1,\"regions\":[],\"written\":[[\"zz\",\"0x1\"]]}",
		"[1,2",
	};

	ml_mm_trace_init(&t);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ml_mm_trace_add_line(&t, bad[i], strlen(bad[i]), &err) != -EINVAL)
			T_FAILMSG("accepted bad trace line #%zu: %s", i, bad[i]);
	CHECK_EQ(t.n, 0);
	/* other record types and blank lines are skipped */
	CHECK_EQ(ml_mm_trace_add_line(&t, "{\"type\":\"summary\"}", 18, &err), 0);
	CHECK_EQ(ml_mm_trace_add_line(&t, " \n", 2, &err), 0);
	CHECK_EQ(t.skipped_lines, 1);
	/* an empty trace, then one too short for two rounds */
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	CHECK(strstr(err.msg, "no \"interval\" lines") != NULL);
	struct ivspec s = { .t_ms = 3000, .has_b = true };

	add_line(&t, &s);
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	CHECK(strstr(err.msg, "too short") != NULL);
	/* `writes --json` output: intervals without "written" */
	struct ml_mm_trace nw;
	const char *l1 = "{\"type\":\"interval\",\"t_ms\":1000,\"regions\":[]}";
	const char *l2 = "{\"type\":\"interval\",\"t_ms\":5000,\"regions\":[]}";

	ml_mm_trace_init(&nw);
	CHECK_EQ(ml_mm_trace_add_line(&nw, l1, strlen(l1), &err), 0);
	CHECK_EQ(ml_mm_trace_add_line(&nw, l2, strlen(l2), &err), 0);
	CHECK_EQ(ml_mm_run(&nw, &p, r, &err), -EINVAL);
	CHECK(strstr(err.msg, "--record") != NULL);
	ml_mm_trace_free(&nw);
	/* time going backwards */
	const char *back = "{\"type\":\"interval\",\"t_ms\":100,\"regions\":[]}";

	CHECK_EQ(ml_mm_trace_add_line(&t, back, strlen(back), &err), -EINVAL);
	p.bandwidth_mbps = 0;
	s.t_ms = 9000;
	add_line(&t, &s);
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	CHECK(strstr(err.msg, "bandwidth") != NULL);
	ml_mm_trace_free(&t);
}

/*
 * A tree's trace: processes 10 and 11 both have A (16 pages at 0x10000,
 * hot) and map shared memory S (8 pages at 0x40000, hot by its ratio),
 * and write A0-3 and S0-1 every interval. Each process is an address space
 * of its own, and shared memory is never left out.
 */
static void test_tree_trace(void)
{
	ML_OPTS(ml_mm_params, p, .keep_hot_out = true, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(r);
	struct ml_err err = { 0 };
	struct ml_mm_trace t;
	/* none: 2 x 24 pages; then 2 x (A0-3 + S0-1), twice */
	static const uint64_t none[] = { 48 * PG, 12 * PG, 12 * PG };

	ml_mm_trace_init(&t);
	for (int i = 1; i <= 6; i++) {
		char line[1024];
		int n = snprintf(
			line, sizeof(line),
			"{\"type\":\"interval\",\"pid\":10,\"seq\":%d,\"t_ms\":%d,\"tree\":true,"
			"\"regions\":[{\"pid\":10,\"start_addr\":\"0x10000\",\"end_addr\":"
			"\"0x20000\",\"hot\":true},{\"pid\":10,\"start_addr\":\"0x40000\","
			"\"end_addr\":\"0x48000\",\"hot\":true,\"shared\":{\"dev\":1,\"inode\":7,"
			"\"pgoff\":0}},{\"pid\":11,\"start_addr\":\"0x10000\",\"end_addr\":"
			"\"0x20000\",\"hot\":true},{\"pid\":11,\"start_addr\":\"0x40000\","
			"\"end_addr\":\"0x48000\",\"hot\":true,\"shared\":{\"dev\":1,\"inode\":7,"
			"\"pgoff\":0}}],\"written\":[[\"0x10000\",\"0x14000\"],[\"0x40000\","
			"\"0x42000\"],[\"0x10000\",\"0x14000\"],[\"0x40000\",\"0x42000\"]],"
			"\"written_pid\":[10,10,11,11]}",
			i, i * 1000);

		REQUIRE(n > 0 && n < (int)sizeof(line));
		REQUIRE_MSG(!ml_mm_trace_add_line(&t, line, (size_t)n, &err), "%s", err.msg);
	}
	CHECK_EQ(t.npids, 2);
	run(&t, &p, r);
	check_rounds(&r[ML_MM_NONE], none, 3);
	/* hot VMAs: both As left out of the pre-dumps, never S */
	CHECK_EQ(r[ML_MM_HOT_VMA].rounds[0].bytes, 16 * PG);
	CHECK_EQ(r[ML_MM_HOT_VMA].rounds[1].bytes, 4 * PG);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/*
 * A program built against older headers: its struct ml_mm_result ended at
 * total_bytes. The library steps through its array by its sz and writes
 * only what that covers: the guard bytes after each of its elements and
 * after the array stay as they were, and its fields are what a current
 * caller gets. Without sz the call is refused and nothing is written.
 */
struct old_mm_result {
	size_t sz;
	enum ml_mm_policy policy;
	struct ml_mm_round *rounds;
	size_t nrounds;
	uint64_t total_bytes;
};

static void test_old_size_caller(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 2);
	ML_MM_RESULTS(cur);
	struct ml_mm_trace t;
	struct ml_err err = { 0 };
	struct {
		struct old_mm_result r[ML_MM_NPOLICIES];
		unsigned char guard[sizeof(struct ml_mm_result) * ML_MM_NPOLICIES];
	} old;

	CHECK(sizeof(struct old_mm_result) < sizeof(struct ml_mm_result));
	CHECK_EQ(offsetof(struct old_mm_result, total_bytes),
		 offsetof(struct ml_mm_result, total_bytes));
	trace_ab(&t, 3);
	run(&t, &p, cur);
	memset(&old, 0xa5, sizeof(old));
	old.r[0].sz = sizeof(struct old_mm_result);
	REQUIRE_MSG(!ml_mm_run(&t, &p, (struct ml_mm_result *)old.r, &err), "%s", err.msg);
	for (size_t i = 0; i < sizeof(old.guard); i++)
		if (old.guard[i] != 0xa5)
			T_FAILMSG("byte %zu after the caller's array was written", i);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		CHECK_EQ(old.r[k].sz, sizeof(struct old_mm_result));
		CHECK_EQ(old.r[k].policy, cur[k].policy);
		CHECK_EQ(old.r[k].total_bytes, cur[k].total_bytes);
		CHECK_EQ(old.r[k].nrounds, cur[k].nrounds);
		for (size_t i = 0; i < cur[k].nrounds && i < old.r[k].nrounds; i++)
			CHECK_EQ(old.r[k].rounds[i].bytes, cur[k].rounds[i].bytes);
	}
	ml_mm_results_free((struct ml_mm_result *)old.r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		CHECK(old.r[k].rounds == NULL && old.r[k].nrounds == 0);

	/* sz not set, or too small for the fields every version had: refused */
	memset(&old, 0xa5, sizeof(old));
	old.r[0].sz = 0;
	CHECK_EQ(ml_mm_run(&t, &p, (struct ml_mm_result *)old.r, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_mm_result") != NULL);
	CHECK_EQ(old.r[0].policy, (enum ml_mm_policy)0xa5a5a5a5);
	old.r[0].sz = offsetof(struct old_mm_result, nrounds);
	CHECK_EQ(ml_mm_run(&t, &p, (struct ml_mm_result *)old.r, &err), -EINVAL);
	ml_mm_results_free((struct ml_mm_result *)old.r); /* nothing to free */
	ml_mm_results_free(cur);
	ml_mm_trace_free(&t);
}

/*
 * ml_mm_calibrate()'s struct ml_mm_fit: a newer caller's larger struct gets
 * the fit and zeros after it, its sz kept; an unset sz is refused and the
 * struct left as it was.
 */
static void test_fit_sizes(void)
{
	struct ml_migrate_round_rec rounds[] = {
		{ .round = 1, .pre_dump = true, .bytes = 32 * MIB, .duration_ms = 1500 },
		{ .round = 2, .bytes = 8 * MIB, .duration_ms = 750, .pages_scanned = 16384 },
	};
	struct ml_migrate_rec m = {
		.ok = true, .rounds = rounds, .nrounds = 2, .downtime_ms = 3500, .restore_ms = 2250
	};
	struct {
		struct ml_mm_fit f;
		uint64_t newer[4];
	} big;
	struct ml_mm_fit fit = { .sz = sizeof(fit), .restore_fixed_s = 0.25 };
	struct ml_err err = { 0 };

	REQUIRE(ml_mm_calibrate(&m, &fit, &err) == 0);
	memset(&big, 0xa5, sizeof(big));
	big.f.sz = sizeof(big);
	big.f.restore_fixed_s = 0.25;
	REQUIRE_MSG(ml_mm_calibrate(&m, &big.f, &err) == 0, "%s", err.msg);
	CHECK_EQ(big.f.sz, sizeof(big));
	CHECK(big.f.bandwidth_mbps == fit.bandwidth_mbps);
	CHECK(big.f.restore_bandwidth_mbps == fit.restore_bandwidth_mbps);
	CHECK_EQ(big.f.restored_bytes, fit.restored_bytes);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(big.newer[i], 0);
	fit.sz = 0;
	fit.bandwidth_mbps = 42;
	CHECK_EQ(ml_mm_calibrate(&m, &fit, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_mm_fit") != NULL);
	CHECK(fit.bandwidth_mbps == 42);
}

/*
 * A trace with resident pages: A (16 pages, 8 resident) has pages 0..3
 * written every interval, B (8 pages, 2 resident) is never written; six
 * intervals of 1 s. @res false: the same trace without "resident_pages"
 * (one interval without them when @one_without).
 */
static void trace_resident(struct ml_mm_trace *t, bool res, bool one_without)
{
	ml_mm_trace_init(t);
	for (int i = 1; i <= 6; i++) {
		bool r = res && !(one_without && i == 3);
		char line[1024];
		struct ml_err err = { 0 };
		int n = snprintf(
			line, sizeof(line),
			"{\"type\":\"interval\",\"t_ms\":%d,\"regions\":["
			"{\"start_addr\":\"0x10000\",\"end_addr\":\"0x20000\",\"hot\":false%s},"
			"{\"start_addr\":\"0x40000\",\"end_addr\":\"0x48000\",\"hot\":false%s}],"
			"\"written\":[[\"0x10000\",\"0x14000\"]]}",
			i * 1000, r ? ",\"resident_pages\":8" : "",
			r ? ",\"resident_pages\":2" : "");

		REQUIRE(n > 0 && n < (int)sizeof(line));
		REQUIRE_MSG(!ml_mm_trace_add_line(t, line, (size_t)n, &err), "%s", err.msg);
	}
}

/*
 * The memory is the resident pages. Round 1 (t = 1 s) sends A's 4 written
 * pages, of A's 12 never written its share (8 resident - 4 written) / 12 =
 * 1/3: 4 pages, of B's 8 its 2 / 8: 2 pages; 10 pages, the resident ones.
 * Rounds 2 and 3 send the 4 pages written again. The restore loads the 10
 * resident pages. Without resident pages: 24 pages first, 24 restored.
 */
static void test_resident_memory(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 1, .max_rounds = 2,
		.restore_bandwidth_mbps = 1);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	static const uint64_t res[] = { 10 * PG, 4 * PG, 4 * PG };
	static const uint64_t vma[] = { 24 * PG, 4 * PG, 4 * PG };

	trace_resident(&t, true, false);
	CHECK_EQ(t.with_resident, 6);
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		check_rounds(&r[k], res, 3);
		CHECK_EQ(r[k].total_bytes, 18 * PG);
		CHECK_EQ(r[k].restored_bytes, 10 * PG);
	}
	/* 16 KiB and 40 KiB at 1 MiB/s, no fixed parts */
	CHECK(r[ML_MM_NONE].dump_ms == 15.625);
	CHECK(r[ML_MM_NONE].restore_ms == 39.0625);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);

	/* no resident pages, or not in every interval: the VMAs' size */
	for (int one = 0; one < 2; one++) {
		trace_resident(&t, one, one);
		CHECK_EQ(t.with_resident, one ? 5 : 0);
		run(&t, &p, r);
		check_rounds(&r[ML_MM_NONE], vma, 3);
		CHECK_EQ(r[ML_MM_NONE].restored_bytes, 24 * PG);
		ml_mm_results_free(r);
		ml_mm_trace_free(&t);
	}
}

/*
 * No pre-dump round (-m 0): the final dump at the first round boundary
 * sends the 10 resident pages; with post-copy all of them arrive lazily
 * after the fixed parts: 0.5 + 0.25 s, then 40 KiB at 0.5 MiB/s (78.125
 * ms) and 4 faults of 10 ms.
 */
static void test_no_precopy(void)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 1, .no_precopy = true,
		.dump_fixed_s = 0.5, .restore_fixed_s = 0.25, .lazy_bandwidth_mbps = 0.5,
		.lazy_faults = 4, .lazy_fault_s = 0.01);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	static const uint64_t one[] = { 10 * PG };

	trace_resident(&t, true, false);
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		check_rounds(&r[k], one, 1);
		CHECK_EQ(r[k].lazy_bytes, 10 * PG);
		CHECK(r[k].postcopy_downtime_ms == 750);
		CHECK(r[k].postcopy_last_page_ms == 750 + 78.125 + 40);
	}
	ml_mm_results_free(r);
	/* max_rounds 0 alone is the default (10: as many as the trace allows) */
	p.no_precopy = false;
	run(&t, &p, r);
	CHECK_EQ(r[ML_MM_NONE].nrounds, 6);
	ml_mm_results_free(r);
	ml_mm_trace_free(&t);
}

/*
 * Rounds at given times: 1 s (the 10 resident pages), 1.5 s (no interval
 * ended in (1, 1.5]: nothing) and 4 s, the final dump (A's 4 pages written
 * in the intervals ending at 2, 3 and 4 s, once). The stop threshold does
 * not apply: the 0-byte round does not end pre-copy. Times not increasing
 * are refused.
 */
static void test_round_at(void)
{
	static const int64_t at[] = { 1000, 1500, 4000 }, bad[] = { 1000, 1000 };
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 1, .stop_threshold_mb = 1,
		.round_at_ms = at, .nround_at = 3);
	ML_MM_RESULTS(r);
	struct ml_mm_trace t;
	struct ml_err err = { 0 };
	static const uint64_t want[] = { 10 * PG, 0, 4 * PG };

	trace_resident(&t, true, false);
	run(&t, &p, r);
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		check_rounds(&r[k], want, 3);
	ml_mm_results_free(r);
	p.round_at_ms = bad;
	p.nround_at = 2;
	CHECK_EQ(ml_mm_run(&t, &p, r, &err), -EINVAL);
	CHECK(strstr(err.msg, "increasing") != NULL);
	ml_mm_trace_free(&t);
}

int main(void)
{
	RUN(test_hot_late);
	RUN(test_last_predump_sends_hot);
	RUN(test_policies);
	RUN(test_old_size_caller);
	RUN(test_fit_sizes);
	RUN(test_hot_vma_granularity);
	RUN(test_freeze_overhead);
	RUN(test_downtime_parts);
	RUN(test_calibrate);
	RUN(test_hot_range_hysteresis);
	RUN(test_hot_range_bound);
	RUN(test_stop_threshold_and_max_rounds);
	RUN(test_vmas_come_and_go);
	RUN(test_bad_traces);
	RUN(test_tree_trace);
	RUN(test_resident_memory);
	RUN(test_no_precopy);
	RUN(test_round_at);
	return T_DONE();
}
