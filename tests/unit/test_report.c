// SPDX-License-Identifier: MIT
/*
 * memlens report, the library side: reading the JSON Lines fixtures in
 * tests/report/, errors that name file and line, and the HTML it draws
 * (one interval, 10 000 intervals, downsampling, hot marks, escaping).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/report.h"
#include "../../report/report_int.h"

#define FIX "tests/report/"

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* <rect class="cell" ... fill="@fill"/> elements in @html (up to @end, if given) */
static size_t cells_filled(const char *html, const char *end, const char *fill)
{
	char attr[32];
	size_t n = 0;

	snprintf(attr, sizeof(attr), "fill=\"%s\"", fill);
	for (const char *p = html; (p = strstr(p, "<rect class=\"cell\"")) && (!end || p < end);
	     p++) {
		const char *close = strstr(p, "/>");
		const char *f = strstr(p, attr);

		n += close && f && f < close;
	}
	return n;
}

static int load(struct ml_report *r, const char *file, struct ml_err *err)
{
	ml_report_init(r);
	return ml_report_load_file(r, file, err);
}

static int render(const struct ml_report *r, const struct ml_report_opts *o, struct ml_rbuf *b)
{
	struct ml_err err = { 0 };
	int ret;

	memset(b, 0, sizeof(*b));
	ret = ml_report_render(r, o, b, &err);
	if (ret)
		printf("# render: %s\n", err.msg);
	return ret;
}

/* One "interval" line: VMA i at 0x10000000 + i MiB, with the given ratios. */
static int add_interval(struct ml_report *r, long seq, int nvma, const double *ratio,
			const bool *hot)
{
	char line[8192];
	struct ml_err err = { 0 };
	int n, ret;

	n = snprintf(
		line, sizeof(line),
		"{\"type\":\"interval\",\"pid\":99,\"seq\":%ld,\"t_ms\":%ld,\"interval_s\":0.1,"
		"\"dirty\":{\"dirty_pages\":10,\"dirty_bytes\":40960,"
		"\"dirty_rate_pages_per_sec\":%ld},\"regions\":[",
		seq, seq * 100, seq % 50);
	for (int i = 0; i < nvma; i++)
		n += snprintf(
			line + n, sizeof(line) - n,
			"%s{\"start_addr\":\"0x%x\",\"end_addr\":\"0x%x\",\"kind\":\"anon\","
			"\"total_pages\":256,\"dirty_pages\":%d,\"written_ratio\":%g,\"hot\":%s}",
			i ? "," : "", 0x10000000 + i * 0x100000, 0x10100000 + i * 0x100000,
			(int)(ratio[i] * 256), ratio[i], hot && hot[i] ? "true" : "false");
	n += snprintf(line + n, sizeof(line) - n, "]}");
	ret = ml_report_load_line(r, "gen", seq, line, (size_t)n, &err);
	if (ret)
		printf("# load: %s\n", err.msg);
	return ret;
}

static void test_nice_ticks(void)
{
	double t[12];
	int n = mlr_nice_ticks(0, 10, 6, t);

	CHECK_EQ(n, 6);
	CHECK(t[0] == 0 && t[1] == 2 && t[5] == 10);
	n = mlr_nice_ticks(0, 0.2, 9, t);
	CHECK_EQ(n, 5);
	CHECK(fabs(t[3] - 0.15) < 1e-15 && fabs(t[4] - 0.2) < 1e-15);
	n = mlr_nice_ticks(-3, 17, 6, t);
	CHECK_EQ(n, 4);
	CHECK(t[0] == 0 && t[3] == 15);
	CHECK_EQ(mlr_nice_ticks(5, 5, 6, t), 1);
	CHECK(t[0] == 5);
	CHECK(mlr_nice_ceil(7) == 10 && mlr_nice_ceil(0.3) == 0.5 && mlr_nice_ceil(0) == 1);
	CHECK(mlr_nice_ceil(120) == 200 && mlr_nice_ceil(250) == 250 && mlr_nice_ceil(NAN) == 1);
}

static void test_fmt_si(void)
{
	char b[32];

	CHECK_STR(mlr_fmt_si(0, b, sizeof(b)), "0");
	CHECK_STR(mlr_fmt_si(1500, b, sizeof(b)), "1500");
	CHECK_STR(mlr_fmt_si(12000, b, sizeof(b)), "12k");
	CHECK_STR(mlr_fmt_si(2500000, b, sizeof(b)), "2.5M");
	CHECK_STR(mlr_fmt_si(0.25, b, sizeof(b)), "0.25");
	CHECK_STR(mlr_fmt_si(-3, b, sizeof(b)), "-3");
}

static void test_html_escape(void)
{
	struct ml_rbuf b = { 0 };

	ml_rb_html(&b, "<a href='x'>&\"\x01");
	REQUIRE(b.p);
	CHECK_STR(b.p, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;?");
	ml_rb_printf(&b, "|%d|%s", 42, "z");
	CHECK(strstr(b.p, "?|42|z") != NULL);
	CHECK_EQ(b.len, strlen(b.p));
	ml_rb_free(&b);
	CHECK(b.p == NULL && b.len == 0);
}

static void test_kind_colours_stable(void)
{
	CHECK_EQ(ml_report_kind("heap"), ML_VMA_HEAP);
	CHECK_EQ(ml_report_kind("lib-data"), ML_VMA_LIB_DATA);
	CHECK_EQ(ml_report_kind("no-such-kind"), ML_REPORT_KIND_OTHER);
	CHECK_EQ(ml_report_kind(NULL), ML_REPORT_KIND_OTHER);
	CHECK_STR(ml_report_kind_label(ML_REPORT_KIND_OTHER), "other");
	CHECK_STR(ml_report_kind_colour(ML_VMA_HEAP), "#59a14f");
	for (int i = 0; i < ML_REPORT_KINDS; i++)
		for (int j = i + 1; j < ML_REPORT_KINDS; j++)
			CHECK(strcmp(ml_report_kind_colour(i), ml_report_kind_colour(j)));
}

static void test_load_writes_one(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;

	REQUIRE_MSG(!load(&r, FIX "writes-one.jsonl", &err), "%s", err.msg);
	REQUIRE(r.nw == 1);
	CHECK_EQ(r.w[0].pid, 4242);
	CHECK_EQ(r.w[0].niv, 1);
	CHECK_EQ(r.w[0].nvma, 3);
	CHECK_EQ(r.w[0].ncell, 3);
	CHECK(r.w[0].page_size == 4096);
	CHECK(r.w[0].cell[1].ratio == 0.5f);
	CHECK_EQ(r.w[0].vma[1].kind, ML_VMA_ANON);
	CHECK(r.w[0].vma[1].start == 0x7faf78800000ULL);
	CHECK(r.w[0].have_summary);
	CHECK_STR(r.w[0].stopped_because, "the duration elapsed");
	CHECK_EQ(r.lines, 2);
	ml_report_free(&r);
}

/* writes --json and --record of one run, in either order: one run, with ranges */
static void test_json_and_record_merge(void)
{
	static const char rec[] =
		"{\"type\":\"interval\",\"pid\":4242,\"seq\":1,\"t_ms\":200,\"interval_s\":0.2,"
		"\"dirty\":{\"dirty_pages\":8193,\"timestamp_ms\":1795997516441},\"regions\":["
		"{\"start_addr\":\"0x7faf78800000\",\"end_addr\":\"0x7faf7c800000\","
		"\"kind\":\"anon\",\"written_ratio\":0.5}],"
		"\"written\":[[\"0x7faf78800000\",\"0x7faf7a800000\"]]}";
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;

	for (int order = 0; order < 2; order++) {
		ml_report_init(&r);
		if (order)
			REQUIRE(!ml_report_load_line(&r, "rec.jsonl", 1, rec, strlen(rec), &err));
		REQUIRE_MSG(!ml_report_load_file(&r, FIX "writes-one.jsonl", &err), "%s", err.msg);
		if (!order)
			REQUIRE(!ml_report_load_line(&r, "rec.jsonl", 1, rec, strlen(rec), &err));
		/* the same file again changes nothing */
		REQUIRE_MSG(!ml_report_load_file(&r, FIX "writes-one.jsonl", &err), "%s", err.msg);
		REQUIRE(r.nw == 1);
		CHECK_EQ(r.w[0].niv, 1);
		CHECK_EQ(r.w[0].nrange, 1);
		CHECK(r.w[0].have_summary);
		CHECK_STR(r.w[0].also, order ? FIX "writes-one.jsonl" : "rec.jsonl");
		REQUIRE(!render(&r, NULL, &b));
		CHECK_EQ(count(b.p, "class=\"ranges\""), 1);
		CHECK(strstr(b.p, "writes-one.jsonl and ") || strstr(b.p, "rec.jsonl and "));
		ml_rb_free(&b);
		ml_report_free(&r);
	}
}

static void test_load_snapshot(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;

	REQUIRE_MSG(!load(&r, FIX "snapshot.jsonl", &err), "%s", err.msg);
	REQUIRE(r.ns == 1 && r.nw == 0);
	CHECK_EQ(r.s[0].npt, 3);
	CHECK(r.s[0].pt[1].resident[ML_VMA_ANON] == 8192);
	CHECK(r.s[0].last[ML_VMA_ANON].resident == 12288);
	CHECK(r.s[0].last[ML_VMA_ANON].swapped == 4096);
	CHECK(r.s[0].last[ML_VMA_ANON].written == 4096);
	CHECK(r.s[0].last[ML_VMA_HEAP].size == 33);
	CHECK(r.s[0].have_written && !r.s[0].have_dirty);
	CHECK(r.s[0].cycle_us_max == 900);
	ml_report_free(&r);
}

/* writes and snapshot both end with "summary": each must land in its own place */
static void test_summary_kinds(void)
{
	static const char snap[] = "{\"type\":\"summary\",\"pid\":5,\"cycles\":3,"
				   "\"stopped_because\":\"the count was reached\"}";
	static const char wr[] = "{\"type\":\"summary\",\"pid\":5,\"intervals\":3,"
				 "\"stopped_because\":\"interrupted\"}";
	struct ml_err err = { 0 };
	struct ml_report r;

	ml_report_init(&r);
	CHECK_EQ(ml_report_load_line(&r, "x", 1, snap, strlen(snap), &err), 0);
	CHECK_EQ(ml_report_load_line(&r, "x", 2, wr, strlen(wr), &err), 0);
	REQUIRE(r.ns == 1 && r.nw == 1);
	CHECK_STR(r.s[0].stopped_because, "the count was reached");
	CHECK_STR(r.w[0].stopped_because, "interrupted");
	ml_report_free(&r);
}

static void test_load_faults_migrate(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;

	REQUIRE_MSG(!load(&r, FIX "faults.jsonl", &err), "%s", err.msg);
	REQUIRE_MSG(!ml_report_load_file(&r, FIX "migrate.jsonl", &err), "%s", err.msg);
	REQUIRE(r.nf == 1 && r.nm == 1);
	CHECK_EQ(r.f[0].nrows, 3);
	CHECK_STR(r.f[0].rows[1].comm, "cc1 <x&y>");
	CHECK_EQ(r.f[0].nminor, 12);
	CHECK_EQ(r.f[0].nmajor, 13);
	CHECK(r.f[0].minor[4] == 7000);
	REQUIRE(r.m[0].npol == 3);
	CHECK_STR(r.m[0].pol[1].name, "hot-vma");
	CHECK_EQ(r.m[0].pol[0].nrounds, 4);
	CHECK(r.m[0].pol[0].rounds[0] == 67108864);
	CHECK(r.m[0].pol[2].downtime_ms == 262.1);
	CHECK(r.m[0].bandwidth_mbps == 128);
	CHECK_EQ(r.nsrcs, 2);
	ml_report_free(&r);
}

/* as `memlens faults --json` writes it system-wide in tracepoint mode */
static void test_faults_nulls(void)
{
	static const char line[] =
		"{\"type\":\"faults\",\"mode\":\"tracepoint\",\"rows\":[{\"comm\":\"cc1\","
		"\"pid\":null,\"minor\":34452,\"major\":0,\"retried\":null}],"
		"\"minor_hist_us\":[2726,34016,3135],\"major_hist_us\":[]}";
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;

	ml_report_init(&r);
	REQUIRE_MSG(!ml_report_load_line(&r, "f", 1, line, strlen(line), &err), "%s", err.msg);
	REQUIRE(r.nf == 1 && r.f[0].nrows == 1);
	CHECK_EQ(r.f[0].rows[0].pid, -1);
	CHECK(isnan(r.f[0].rows[0].retried));
	CHECK_EQ(r.f[0].nmajor, 0);
	CHECK_STR(r.f[0].mode, "tracepoint");
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "<td>cc1</td><td>-</td><td>34452</td><td>0</td><td>-</td>") != NULL);
	/* no major faults: a one-line note, not an empty chart */
	CHECK(strstr(b.p, "<p class=\"note\">major faults: none were seen.</p>") != NULL);
	CHECK_EQ(count(b.p, "class=\"hist\""), 1);
	CHECK(strstr(b.p, "tracepoint mode") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

static void expect_error(const char *file, int code, const char *where, const char *what)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	int ret = load(&r, file, &err);

	CHECK_EQ(ret, -code);
	if (!strstr(err.msg, where) || !strstr(err.msg, what))
		T_FAILMSG("message \"%s\" lacks \"%s\" or \"%s\"", err.msg, where, what);
	ml_report_free(&r);
}

static void test_bad_files(void)
{
	expect_error(FIX "bad-empty.jsonl", EINVAL, "bad-empty.jsonl:1:", "empty");
	expect_error(FIX "bad-unknown-type.jsonl", EINVAL,
		     "bad-unknown-type.jsonl:2:", "unknown type \"histogram\"");
	expect_error(FIX "bad-truncated.jsonl", EINVAL, "bad-truncated.jsonl:2:", "truncated");
	expect_error(FIX "no-such-file.jsonl", ENOENT, "no-such-file.jsonl", "cannot read");
}

static void expect_line_error(const char *line, const char *what)
{
	struct ml_err err = { 0 };
	struct ml_report r;

	ml_report_init(&r);
	CHECK_EQ(ml_report_load_line(&r, "in.jsonl", 7, line, strlen(line), &err), -EINVAL);
	if (!strstr(err.msg, "in.jsonl:7:") || !strstr(err.msg, what))
		T_FAILMSG("message \"%s\" lacks \"in.jsonl:7:\" or \"%s\"", err.msg, what);
	ml_report_free(&r);
}

static void test_bad_lines(void)
{
	expect_line_error("[1,2]", "not a JSON object");
	expect_line_error("memwrite pid 42 writes 0x7f0-0x7f1 (64 MiB)", "mixed in");
	expect_line_error("{\"pid\":1}", "no \"type\"");
	expect_line_error("{\"type\":\"interval\",\"regions\":[]}", "\"t_ms\"");
	expect_line_error("{\"type\":\"interval\",\"t_ms\":1,\"regions\":{}}", "\"regions\"");
	expect_line_error("{\"type\":\"interval\",\"t_ms\":1,\"regions\":[{\"start_addr\":1}]}",
			  "start_addr");
	expect_line_error("{\"type\":\"snapshot\",\"t_ms\":1,\"regions\":[{\"kind\":\"heap\"}]}",
			  "resident_pages");
	expect_line_error("{\"type\":\"faults\",\"rows\":[],\"minor_hist_us\":[1,\"x\"],"
			  "\"major_hist_us\":[]}",
			  "minor_hist_us");
	expect_line_error("{\"type\":\"migrate_model\",\"policies\":[{\"name\":\"none\","
			  "\"rounds\":[{\"round\":1}]}]}",
			  "\"bytes\"");
	expect_line_error("{\"type\":\"interval\"", "truncated");
}

static void test_skip_unknown(void)
{
	static const char other[] = "{\"type\":\"checkpoint\",\"pid\":1}";
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b = { 0 };

	ml_report_init(&r);
	r.skip_unknown = true;
	REQUIRE_MSG(!ml_report_load_file(&r, FIX "bad-unknown-type.jsonl", &err), "%s", err.msg);
	CHECK_EQ(r.lines, 1);
	CHECK_EQ(r.skipped, 1);
	CHECK_EQ(ml_report_load_line(&r, "x", 1, other, strlen(other), &err), 0);
	CHECK_EQ(r.skipped, 2);
	/* still strict about what is not JSON or has no type */
	CHECK_EQ(ml_report_load_line(&r, "x", 2, "{\"a\":1}", 7, &err), -EINVAL);
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "2 lines of other types skipped") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

static void test_render_all_fixtures(void)
{
	static const char *const files[] = { "writes-one", "snapshot", "faults", "migrate" };
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;
	char path[128];

	ml_report_init(&r);
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), FIX "%s.jsonl", files[i]);
		REQUIRE_MSG(!ml_report_load_file(&r, path, &err), "%s", err.msg);
	}
	REQUIRE(!render(
		&r,
		&(struct ml_report_opts){ .sz = sizeof(struct ml_report_opts), .title = "t <1>" },
		&b));
	CHECK(!strncmp(b.p, "<!DOCTYPE html>", 15));
	CHECK(strstr(b.p, "<title>t &lt;1&gt;</title>") != NULL);
	CHECK_EQ(count(b.p, "<svg "), count(b.p, "</svg>"));
	CHECK_EQ(count(b.p, "class=\"heatmap\""), 1);
	/* one interval: no line to draw, a note with its rate instead */
	CHECK_EQ(count(b.p, "class=\"rate\""), 0);
	CHECK(strstr(b.p, "dirty rate: 160 MiB/s in the one interval") != NULL);
	CHECK_EQ(count(b.p, "class=\"stacked\""), 1);
	CHECK_EQ(count(b.p, "class=\"kinds\""), 1);
	CHECK_EQ(count(b.p, "class=\"hist\""), 2);
	CHECK_EQ(count(b.p, "class=\"migrate\""), 2); /* the chart and the table */
	/* a stacked layer per kind with resident pages: text data bss heap stack anon lib-text */
	CHECK_EQ(count(b.p, "class=\"area\""), 7);
	CHECK(strstr(b.p, "data-kind=\"heap\" fill=\"#59a14f\"") != NULL);
	CHECK(strstr(b.p, "cc1 &lt;x&amp;y&gt;") != NULL);
	CHECK(strstr(b.p, "(MiB)") && strstr(b.p, "(s)") && strstr(b.p, "µs"));
	/* self-contained: nothing to run, nothing to fetch */
	CHECK(!strstr(b.p, "<script") && !strstr(b.p, "src=") && !strstr(b.p, "href") &&
	      !strstr(b.p, "url(") && !strstr(b.p, "https:"));
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* one interval: one cell per VMA, one point on the rate line */
static void test_render_one_interval(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;

	REQUIRE_MSG(!load(&r, FIX "writes-one.jsonl", &err), "%s", err.msg);
	REQUIRE(!render(&r, NULL, &b));
	CHECK_EQ(count(b.p, "class=\"cell\""), 3);
	CHECK_EQ(count(b.p, "class=\"hot\""), 0);
	CHECK_EQ(count(b.p, "class=\"pt\""), 0);
	CHECK(strstr(b.p, "fill=\"#fd8d3c\"") != NULL); /* 0.5 -> 6th step */
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* a VMA hot in intervals 5..9 of 20: one merged mark five columns wide */
static void test_hot_marks(void)
{
	struct ml_report r;
	struct ml_rbuf b;
	const char *p;
	double x, w;

	ml_report_init(&r);
	for (long i = 0; i < 20; i++) {
		double ratio[2] = { i >= 5 && i < 10 ? 0.9 : 0.0, 0.0 };
		bool hot[2] = { i >= 5 && i < 10, false };

		REQUIRE(!add_interval(&r, i + 1, 2, ratio, hot));
	}
	REQUIRE(!render(&r, NULL, &b));
	CHECK_EQ(count(b.p, "class=\"hot\""), 1);
	p = strstr(b.p, "class=\"hot\"");
	REQUIRE(p && sscanf(p, "class=\"hot\" x=\"%lf\" y=\"%*f\" width=\"%lf\"", &x, &w) == 2);
	CHECK(fabs(w - 5 * (RP_WIDTH - 280 - 20) / 20.0) < 0.02);
	/* row 0: not written, written, not written: three runs; row 1: one */
	CHECK_EQ(count(b.p, "class=\"cell\""), 4);
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* columns average the intervals they cover: 0 and 1 -> 0.5 */
static void test_downsample_mean(void)
{
	struct ml_report r;
	struct ml_rbuf b;

	ml_report_init(&r);
	REQUIRE(!add_interval(&r, 1, 1, (double[]){ 0.0 }, NULL));
	REQUIRE(!add_interval(&r, 2, 1, (double[]){ 1.0 }, NULL));
	REQUIRE(!render(
		&r, &(struct ml_report_opts){ .sz = sizeof(struct ml_report_opts), .max_cols = 1 },
		&b));
	CHECK_EQ(count(b.p, "class=\"cell\""), 1);
	CHECK(strstr(b.p, "fill=\"#fd8d3c\"") != NULL);
	ml_rb_free(&b);
	REQUIRE(!render(
		&r, &(struct ml_report_opts){ .sz = sizeof(struct ml_report_opts), .max_cols = 2 },
		&b));
	CHECK_EQ(count(b.p, "class=\"cell\""), 2);
	CHECK(strstr(b.p, "fill=\"#4a0016\"") != NULL); /* 1.0: the darkest */
	ml_rb_free(&b);
	ml_report_free(&r);
}

static void test_heat_level(void)
{
	CHECK_EQ(mlr_heat_level(0), 0);
	CHECK_EQ(mlr_heat_level(-1), 0);
	CHECK_EQ(mlr_heat_level(NAN), 0);
	CHECK_EQ(mlr_heat_level(0.05), 1);
	CHECK_EQ(mlr_heat_level(0.1), 2);
	CHECK_EQ(mlr_heat_level(0.5), 6);
	CHECK_EQ(mlr_heat_level(0.99), HEAT_LEVELS);
	CHECK_EQ(mlr_heat_level(1), HEAT_LEVELS);
	CHECK_STR(mlr_heat_level_colour(0), HEAT_ZERO);
	CHECK_STR(mlr_heat_level_colour(HEAT_LEVELS), "#4a0016");
}

/*
 * writes --record: a 1 MiB VMA (16 slices of 64 KiB); interval 1 writes all
 * of slice 0, interval 2 half of slice 1.
 */
static void test_page_ranges(void)
{
	static const char *const lines[] = {
		"{\"type\":\"interval\",\"pid\":7,\"t_ms\":100,\"interval_s\":0.1,\"regions\":["
		"{\"start_addr\":\"0x10000000\",\"end_addr\":\"0x10100000\",\"kind\":\"heap\","
		"\"dirty_pages\":16,\"written_ratio\":0.0625}],"
		"\"written\":[[\"0x10000000\",\"0x10010000\"]]}",
		"{\"type\":\"interval\",\"pid\":7,\"t_ms\":200,\"interval_s\":0.1,\"regions\":["
		"{\"start_addr\":\"0x10000000\",\"end_addr\":\"0x10100000\",\"kind\":\"heap\","
		"\"dirty_pages\":8,\"written_ratio\":0.03125}],"
		"\"written\":[[\"0x10010000\",\"0x10018000\"],[\"0x20000000\",\"0x20001000\"]]}",
	};
	static const char bad[] = "{\"type\":\"interval\",\"t_ms\":1,\"regions\":[],"
				  "\"written\":[[\"0x2\",\"0x1\"]]}";
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;
	const char *ranges, *end;

	ml_report_init(&r);
	for (int i = 0; i < 2; i++)
		REQUIRE_MSG(
			!ml_report_load_line(&r, "rec", i + 1, lines[i], strlen(lines[i]), &err),
			"%s", err.msg);
	REQUIRE(r.nw == 1 && r.w[0].have_ranges);
	CHECK_EQ(r.w[0].nrange, 3);
	CHECK_EQ(r.w[0].range[2].iv, 1);
	REQUIRE(!render(&r, NULL, &b));
	ranges = strstr(b.p, "class=\"ranges\"");
	REQUIRE(ranges);
	end = strstr(ranges, "</svg>");
	REQUIRE(end);
	CHECK(strstr(ranges, "16 slices of 64K each") != NULL);
	/* row 0: all, then nothing; row 1: nothing, then half; 14 rows of nothing: one row */
	CHECK_EQ(cells_filled(ranges, end, "#4a0016"), 1);
	CHECK_EQ(cells_filled(ranges, end, "#fc4e2a"), 1);
	CHECK_EQ(cells_filled(ranges, end, HEAT_ZERO), 3);
	CHECK(strstr(ranges, ">+0</text>") && strstr(ranges, ">+64K</text>"));
	CHECK(strstr(ranges, ">+128K (14 slices)</text>") != NULL);
	ml_rb_free(&b);
	CHECK_EQ(ml_report_load_line(&r, "rec", 3, bad, strlen(bad), &err), -EINVAL);
	CHECK(strstr(err.msg, "rec:3:") && strstr(err.msg, "\"written\""));
	ml_report_free(&r);
}

/* 10 000 intervals x 12 VMAs: bounded drawing, small page, top VMAs only */
static void test_render_large(void)
{
	struct ml_report r;
	struct ml_rbuf b;
	double ratio[12];
	const char *line;
	size_t pts = 0;

	ml_report_init(&r);
	for (long i = 1; i <= 10000; i++) {
		for (int v = 0; v < 12; v++)
			ratio[v] = v < 3 ? ((i * (v + 1)) % 97) / 96.0 : 0;
		REQUIRE(!add_interval(&r, i, 12, ratio, NULL));
	}
	REQUIRE(r.nw == 1 && r.w[0].niv == 10000 && r.w[0].nvma == 12);
	REQUIRE(!render(
		&r, &(struct ml_report_opts){ .sz = sizeof(struct ml_report_opts), .max_rows = 10 },
		&b));
	CHECK(b.len < 400 * 1024);
	CHECK(count(b.p, "class=\"cell\"") <= 10 * 360);
	CHECK(strstr(b.p, "2 more VMAs") != NULL);
	line = strstr(b.p, "<polyline class=\"rate\" points=\"");
	REQUIRE(line);
	for (const char *p = line; *p && *p != '/'; p++)
		pts += *p == ',';
	CHECK_EQ(pts, 360);
	ml_rb_free(&b);
	ml_report_free(&r);
}

static void test_render_nothing(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b = { 0 };

	ml_report_init(&r);
	CHECK_EQ(ml_report_render(&r, NULL, &b, &err), -EINVAL);
	CHECK(strstr(err.msg, "nothing to draw") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* bounded random input: mangled lines fail cleanly, never crash (ASan build) */
static void test_random_lines(void)
{
	static const char *const seeds[] = {
		"{\"type\":\"interval\",\"pid\":1,\"t_ms\":5,\"interval_s\":0.1,\"regions\":[{"
		"\"start_addr\":\"0x1000\",\"end_addr\":\"0x3000\",\"kind\":\"heap\",\"written_"
		"ratio\":0.5,\"hot\":true}]}",
		"{\"type\":\"snapshot\",\"pid\":1,\"t_ms\":5,\"regions\":[{\"kind\":\"anon\","
		"\"size_pages\":4,\"resident_pages\":2,\"written_pages\":1,\"page_flags\":{"
		"\"dirty\":1}}]}",
		"{\"type\":\"faults\",\"rows\":[{\"comm\":\"a\",\"pid\":2,\"minor\":1}],\"minor_"
		"hist_us\":[1,2],\"major_hist_us\":[3]}",
		"{\"type\":\"migrate_model\",\"policies\":[{\"name\":\"none\",\"rounds\":[{"
		"\"bytes\":5}]}]}",
	};
	struct ml_report r;
	char line[512];
	unsigned int seed = 12345;
	int ok = 0, bad = 0;

	ml_report_init(&r);
	for (int i = 0; i < 20000; i++) {
		const char *s = seeds[i % 4];
		size_t n = strlen(s);
		struct ml_err err = { 0 };
		int ret;

		memcpy(line, s, n);
		for (int k = rand_r(&seed) % 4; k >= 0; k--)
			line[rand_r(&seed) % n] = (char)(rand_r(&seed) % 256);
		if (rand_r(&seed) % 4 == 0)
			n = (size_t)rand_r(&seed) % n;
		ret = ml_report_load_line(&r, "fuzz", i + 1, line, n, &err);
		if (ret) {
			bad++;
			CHECK(ret == -EINVAL && strstr(err.msg, "fuzz:") == err.msg);
		} else {
			ok++;
		}
	}
	CHECK(ok > 0 && bad > 0);
	if (r.nw || r.ns || r.nf || r.nm) {
		struct ml_rbuf b;

		CHECK(!render(&r, NULL, &b));
		ml_rb_free(&b);
	}
	ml_report_free(&r);
}

static void headline_of(const char *file, int kind, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	char h[512];

	REQUIRE_MSG(!load(&r, file, &err), "%s", err.msg);
	if (kind == 0 && r.nw)
		mlr_headline_writes(&r.w[0], h, sizeof(h));
	else if (kind == 1 && r.ns)
		mlr_headline_snaps(&r.s[0], h, sizeof(h));
	else if (kind == 2 && r.nf)
		mlr_headline_faults(&r.f[0], h, sizeof(h));
	else if (kind == 3 && r.nm)
		mlr_headline_migrate(&r.m[0], h, sizeof(h));
	else
		snprintf(h, sizeof(h), "(no section)");
	CHECK_STR(h, want);
	ml_report_free(&r);
}

/* the tracers' lines: leaks (leaktree), slab -i, oom (three kills in a cgroup) */
static void test_tracer_fixtures(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	size_t n, *order;
	char h[512];
	double stacked = 0;
	struct ml_rbuf b;

	REQUIRE_MSG(!load(&r, FIX "leaks.jsonl", &err), "%s", err.msg);
	REQUIRE(r.nl == 1 && r.l[0].have_final);
	CHECK(r.l[0].nstacks == 6 && r.l[0].nsizes == 4);
	/* innermost first in the JSON, outermost first here; offsets dropped */
	CHECK_STR(r.l[0].stacks[0].frames[r.l[0].stacks[0].nframes - 1], "cache_add (leaktree)");
	for (size_t i = 0; i < r.l[0].nstacks; i++)
		stacked += r.l[0].stacks[i].bytes;
	CHECK(stacked == r.l[0].outstanding_bytes);
	mlr_headline_leaks(&r.l[0], h, sizeof(h));
	CHECK_STR(h, "789 KiB outstanding in 816 blocks; 512 KiB (65%) from one call stack: "
		     "cache_add (leaktree) ← cache_fill (leaktree) ← load_cache.constprop.0 "
		     "(leaktree); 6 call stacks in all");
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"icicle\"") != NULL);
	CHECK(strstr(b.p, "data-depth=\"0\" data-bytes=\"807936\" data-count=\"816\"") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);

	/* leaks --sample 16K: the estimates said to be estimates, with their standard error */
	REQUIRE_MSG(!load(&r, FIX "leaks-sampled.jsonl", &err), "%s", err.msg);
	REQUIRE(r.nl == 1 && r.l[0].have_final);
	CHECK(r.l[0].sample_bytes == 16384 && r.l[0].outstanding_bytes_stderr == 343947);
	mlr_headline_leaks(&r.l[0], h, sizeof(h));
	CHECK_STR(h, "about 7.8 MiB outstanding in 2,003 blocks (estimated from one allocation "
		     "sampled per 16 KiB: standard error 336 KiB); 7.8 MiB (100%) from one call "
		     "stack: main (leaky); 24 call stacks in all");
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "3071 sampled allocations and 2628 of their frees seen; about 2003 "
			  "blocks (7.8M) outstanding at the end, estimated") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);

	REQUIRE_MSG(!load(&r, FIX "slab.jsonl", &err), "%s", err.msg);
	REQUIRE(r.nsl == 1 && r.sl[0].have_final && r.sl[0].niv >= 2);
	order = mlr_slab_order(&r.sl[0], &n);
	REQUIRE(order && n >= 1);
	/* the first one changed most */
	for (size_t i = 1; i < n; i++)
		CHECK(fabs(r.sl[0].cache[order[i]].net) <= fabs(r.sl[0].cache[order[0]].net));
	free(order);
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "<g class=\"slabpanel\"") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);

	REQUIRE_MSG(!load(&r, FIX "oom.jsonl", &err), "%s", err.msg);
	REQUIRE(r.no == 1 && r.o[0].nkill == 3 && r.o[0].have_summary && r.o[0].kills == 3);
	mlr_headline_oom(&r.o[0], h, sizeof(h));
	CHECK_STR(h, "3 OOM kills of hog (pid 25124, 25204, 25225); 65 MiB resident in the largest "
		     "victim, at the cgroup limit of 64 MiB");
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "<g class=\"oomkill\" data-pid=\"25204\" data-rss-kb=\"66292\">") !=
	      NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* each section's headline, computed from the fixtures' numbers */
static void test_headline_fixtures(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;

	/* the summary's average: 167792640 B/s */
	headline_of(FIX "writes-one.jsonl", 0, "no hot VMA among 3; 160 MiB/s written on average");
	/* last snapshot: anon 12288 of 12705 resident pages, 4096 swapped, 4133 written */
	headline_of(
		FIX "snapshot.jsonl", 1,
		"50 MiB resident at the end, also the peak: anon 48 MiB (97%), lib-text 1.4 MiB "
		"(3%), heap 80 KiB (<1%); 16 MiB swapped out; 16 MiB written in the last cycle");
	/* minor: 16225 in all, the 8113th in bucket 4 (16..32 µs), the 16063rd in 6 */
	headline_of(FIX "faults.jsonl", 2,
		    "16,225 minor faults, half under 32 µs, 99% under 128 µs; 13 major faults, "
		    "half under 512 µs, 99% under 4.1 ms; most by memwrite (16,390)");
	/* 69992448 / 251658240 B, 526.3 / 475.1 ms; 38797312 B, 262.1 ms */
	headline_of(FIX "migrate.jsonl", 3,
		    "hot-VMA exclusion: 0.28× the bytes, 1.1× the downtime; hot-range exclusion: "
		    "0.15× the bytes, 0.55× the downtime");
	/* at the top of its section, escaped */
	REQUIRE_MSG(!load(&r, FIX "snapshot.jsonl", &err), "%s", err.msg);
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p,
		     "(memlens snapshot)</p>\n<p class=\"headline\">50 MiB resident at the "
		     "end, also the peak: anon 48 MiB (97%), lib-text 1.4 MiB (3%), heap 80 KiB "
		     "(&lt;1%); ") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

static int load_lines(struct ml_report *r, const char *const *lines, size_t n)
{
	struct ml_err err = { 0 };

	ml_report_init(r);
	for (size_t i = 0; i < n; i++) {
		int ret =
			ml_report_load_line(r, "in", (long)i + 1, lines[i], strlen(lines[i]), &err);

		if (ret) {
			printf("# load: %s\n", err.msg);
			return ret;
		}
	}
	return 0;
}

#define REG(start, end, kind, path, ratio, hot)                                                    \
	"{\"start_addr\":\"" start "\",\"end_addr\":\"" end "\",\"kind\":\"" kind "\"" path        \
	",\"dirty_pages\":1,\"written_ratio\":" ratio ",\"hot\":" hot "}"

/* hot VMAs at the end, named by file where they have one, and the mean rate */
static void test_headline_writes(void)
{
	static const char *const lines[] = {
		"{\"type\":\"interval\",\"pid\":3,\"seq\":1,\"t_ms\":500,\"interval_s\":0.5,"
		"\"dirty\":{\"dirty_pages\":256,\"dirty_bytes\":1048576},\"regions\":[" REG(
			"0x1000000", "0x1100000", "anon", "", "1",
			"true") "," REG("0x2000000", "0x2001000", "data",
					",\"path\":\"/opt/app/bin/"
					"srv\"",
					"1", "true") "," REG("0x3000000", "0x3400000", "lib-data",
							     ",\"path\":\"/usr/lib/libz.so.1\"",
							     "0.5", "true") "]}",
		"{\"type\":\"interval\",\"pid\":3,\"seq\":2,\"t_ms\":1000,\"interval_s\":0.5,"
		"\"dirty\":{\"dirty_pages\":768,\"dirty_bytes\":3145728},\"regions\":[" REG(
			"0x1000000", "0x1100000", "anon", "", "1",
			"true") "," REG("0x2000000", "0x2001000", "data", "", "1",
					"true") "," REG("0x3000000", "0x3400000", "lib-data", "",
							"0.5", "false") "]}",
	};
	struct ml_report r;
	struct ml_rbuf b;
	char h[512];

	REQUIRE(!load_lines(&r, lines, 2));
	REQUIRE(r.nw == 1 && r.w[0].nvma == 3);
	/* read from the first line that has it */
	CHECK_STR(r.w[0].vma[1].path, "/opt/app/bin/srv");
	CHECK(r.w[0].vma[0].path == NULL);
	mlr_headline_writes(&r.w[0], h, sizeof(h));
	/* 4 MiB in 1 s; two hot at the end, biggest first; libz was hot before */
	CHECK_STR(h, "2 hot VMAs of 3 (1.0M anon, 4.0K data srv); 3 hot at some time; 4.0 MiB/s "
		     "written on average");
	REQUIRE(!render(&r, NULL, &b));
	/* rows: the file's basename, bold when hot, the full path on hover */
	CHECK(strstr(b.p, "class=\"vma hotvma\"><title>/usr/lib/libz.so.1 "
			  "0x3000000-0x3400000</title>4.0M lib-data libz.so.1</text>") != NULL);
	CHECK(strstr(b.p, "<title>anon 0x1000000-0x1100000</title>1.0M anon 0x1000000</text>") !=
	      NULL);
	ml_rb_free(&b);
	/* a long name is cut to fit the label column */
	free(r.w[0].vma[1].path);
	r.w[0].vma[1].path = strdup("/opt/a-program-with-a-rather-long-name-indeed-v2");
	REQUIRE(!render(&r, NULL, &b));
	CHECK(strstr(b.p, "</title>4.0K data a-program-with-a-rather-long-…</text>") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
	/* one hot VMA, none written */
	REQUIRE(!load_lines(&r, lines, 1));
	r.w[0].iv[0].dirty_pages = 0;
	r.w[0].cell[0].hot = r.w[0].cell[1].hot = false;
	mlr_headline_writes(&r.w[0], h, sizeof(h));
	CHECK_STR(h, "1 hot VMA of 3 (4.0M lib-data libz.so.1); 3 hot at some time; 0 B/s written "
		     "on average");
	ml_report_free(&r);
}

/* a migration model without "none": ratios against the first policy */
static void test_headline_migrate_other(void)
{
	static const char *const lines[] = {
		"{\"type\":\"migrate_model\",\"policies\":[{\"name\":\"hot-vma\",\"rounds\":[{"
		"\"bytes\":100}],\"total_bytes\":400,\"downtime_ms\":10},{\"name\":\"hot-range\","
		"\"rounds\":[{\"bytes\":50}],\"total_bytes\":100,\"downtime_ms\":10.2}]}",
		"{\"type\":\"migrate_model\",\"policies\":[{\"name\":\"none\",\"rounds\":[{"
		"\"bytes\":1048576}],\"total_bytes\":1048576,\"downtime_ms\":8}]}",
	};
	struct ml_report r;
	char h[512];

	REQUIRE(!load_lines(&r, lines, 1));
	mlr_headline_migrate(&r.m[0], h, sizeof(h));
	CHECK_STR(h, "hot-range exclusion: 0.25× the bytes, same downtime (against hot-vma)");
	ml_report_free(&r);
	REQUIRE(!load_lines(&r, lines + 1, 1));
	mlr_headline_migrate(&r.m[0], h, sizeof(h));
	CHECK_STR(h, "none: 1.0 MiB sent, 8 ms downtime");
	ml_report_free(&r);
}

/* the final dumps stand side by side, right of every pre-dump round */
static void test_migrate_final_group(void)
{
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;
	double fx[3], fw = 0, maxpre = 0;
	int nf = 0;

	REQUIRE_MSG(!load(&r, FIX "migrate.jsonl", &err), "%s", err.msg);
	REQUIRE(!render(&r, NULL, &b));
	for (const char *p = b.p; (p = strstr(p, "<rect class=\"bar")); p++) {
		double x, w;
		bool final = !strncmp(p, "<rect class=\"bar final\"", 23);

		REQUIRE(sscanf(strstr(p, " x=\""), " x=\"%lf\" y=\"%*f\" width=\"%lf\"", &x, &w) ==
			2);
		if (final && nf < 3) {
			fx[nf++] = x;
			fw = w;
		} else if (!final) {
			maxpre = x + w > maxpre ? x + w : maxpre;
		}
	}
	REQUIRE(nf == 3);
	CHECK(fabs(fx[1] - fx[0] - fw) < 0.02 && fabs(fx[2] - fx[1] - fw) < 0.02);
	CHECK(fx[0] > maxpre);
	CHECK(strstr(b.p, ">final dump</text>") != NULL);
	/* sizes on the bars, not fractions of a MiB */
	CHECK(strstr(b.p, ">64M</text>") && strstr(b.p, ">512K</text>"));
	ml_rb_free(&b);
	ml_report_free(&r);
}

static void test_group_rows(void)
{
	/* 4 rows of 2 columns: rows 0-1 alike, 2 differs, 3 like 1 but not adjacent */
	static const int v[] = { 1, 2, 1, 2, 0, 0, 1, 2 };
	static const int same[] = { 5, 5, 5, 5, 5, 5 };
	int first[5];

	CHECK_EQ(mlr_group_rows(v, 4, 2, first), 3);
	CHECK(first[0] == 0 && first[1] == 2 && first[2] == 3 && first[3] == 4);
	CHECK_EQ(mlr_group_rows(same, 6, 1, first), 1);
	CHECK(first[0] == 0 && first[1] == 6);
	CHECK_EQ(mlr_group_rows(same, 1, 6, first), 1);
	CHECK(first[0] == 0 && first[1] == 1);
}

/* a VMA written all over, the same in every interval: one row, not 16 */
static void test_ranges_collapse(void)
{
	static const char *const lines[] = {
		"{\"type\":\"interval\",\"pid\":7,\"t_ms\":100,\"interval_s\":0.1,\"regions\":["
		"{\"start_addr\":\"0x10000000\",\"end_addr\":\"0x10100000\",\"kind\":\"anon\","
		"\"dirty_pages\":256,\"written_ratio\":1}],"
		"\"written\":[[\"0x10000000\",\"0x10100000\"]]}",
		"{\"type\":\"interval\",\"pid\":7,\"t_ms\":200,\"interval_s\":0.1,\"regions\":["
		"{\"start_addr\":\"0x10000000\",\"end_addr\":\"0x10100000\",\"kind\":\"anon\","
		"\"dirty_pages\":256,\"written_ratio\":1}],"
		"\"written\":[[\"0x10000000\",\"0x10100000\"]]}",
	};
	struct ml_report r;
	struct ml_rbuf b;
	const char *ranges, *end;

	REQUIRE(!load_lines(&r, lines, 2));
	REQUIRE(!render(&r, NULL, &b));
	ranges = strstr(b.p, "class=\"ranges\"");
	REQUIRE(ranges);
	end = strstr(ranges, "</svg>");
	REQUIRE(end);
	CHECK(strstr(ranges, "inside 1.0M anon at 0x10000000: 16 slices of 64K each") != NULL);
	CHECK_EQ(cells_filled(ranges, end, "#4a0016"), 1);
	CHECK_EQ(count(ranges, "class=\"cell\"") - count(end, "class=\"cell\""), 1);
	CHECK(strstr(ranges, ">+0 (16 slices)</text>") != NULL);
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* the hot mark: its own lane under the cells, a gap between, a colour not of the scale */
static void test_hot_mark_contrast(void)
{
	struct ml_report r;
	struct ml_rbuf b;
	const char *cell, *hot;
	double cy, ch, hy;

	ml_report_init(&r);
	REQUIRE(!add_interval(&r, 1, 1, (double[]){ 1.0 }, (bool[]){ true }));
	REQUIRE(!add_interval(&r, 2, 1, (double[]){ 1.0 }, (bool[]){ true }));
	REQUIRE(!render(&r, NULL, &b));
	cell = strstr(b.p, "<rect class=\"cell\"");
	hot = strstr(b.p, "<rect class=\"hot\"");
	REQUIRE(cell && hot);
	REQUIRE(sscanf(cell,
		       "<rect class=\"cell\" x=\"%*f\" y=\"%lf\" width=\"%*f\" height=\"%lf\"", &cy,
		       &ch) == 2);
	REQUIRE(sscanf(hot, "<rect class=\"hot\" x=\"%*f\" y=\"%lf\"", &hy) == 1);
	CHECK(hy >= cy + ch + 1);
	CHECK(strstr(cell, "fill=\"#4a0016\"") < strstr(cell, "/>"));
	CHECK(strstr(hot, "fill=\"#1f78d1\"") < strstr(hot, "/>"));
	for (int l = 0; l <= HEAT_LEVELS; l++)
		CHECK(strcmp(mlr_heat_level_colour(l), "#1f78d1"));
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* each bar between the edges of its bucket, as memlens faults fills them */
static void test_bucket_edges(void)
{
	static const char line[] = "{\"type\":\"faults\",\"rows\":[],\"minor_hist_us\":[0,0,5,1],"
				   "\"major_hist_us\":[0,0,0,0,2]}";
	struct ml_err err = { 0 };
	struct ml_report r;
	struct ml_rbuf b;
	char e[24];
	const char *p;

	mlr_bucket_edge(0, e, sizeof(e));
	CHECK_STR(e, "0µs");
	mlr_bucket_edge(1, e, sizeof(e));
	CHECK_STR(e, "2µs");
	mlr_bucket_edge(9, e, sizeof(e));
	CHECK_STR(e, "512µs");
	mlr_bucket_edge(10, e, sizeof(e));
	CHECK_STR(e, "1.02ms");
	mlr_bucket_edge(20, e, sizeof(e));
	CHECK_STR(e, "1.05s");
	ml_report_init(&r);
	REQUIRE_MSG(!ml_report_load_line(&r, "f", 1, line, strlen(line), &err), "%s", err.msg);
	REQUIRE(!render(&r, NULL, &b));
	/* buckets 2..4 of both (4 to 32 µs): edges 4, 8, 16, 32 µs, twice */
	p = strstr(b.p, "class=\"hist\"");
	REQUIRE(p);
	CHECK_EQ(count(p, ">4µs</text>"), 2);
	CHECK_EQ(count(p, ">32µs</text>"), 2);
	CHECK_EQ(count(p, ">2µs</text>"), 0);
	CHECK_EQ(count(p, ">64µs</text>"), 0);
	CHECK_EQ(count(p, "<rect class=\"bar\""), 3);
	/* a short buffer: cut, still a string */
	mlr_headline_faults(&r.f[0], e, sizeof(e));
	CHECK_STR(e, "6 minor faults, half un");
	ml_rb_free(&b);
	ml_report_free(&r);
}

/* one snapshot, no written/dirty counts: no chart over time, no empty panel */
static void test_one_snapshot(void)
{
	static const char *const lines[] = {
		"{\"type\":\"snapshot\",\"pid\":8,\"t_ms\":0,\"cycle_us\":207,\"regions\":["
		"{\"kind\":\"anon\",\"size_pages\":1024,\"resident_pages\":256},"
		"{\"kind\":\"lib-text\",\"size_pages\":512,\"resident_pages\":512}]}",
	};
	struct ml_report r;
	struct ml_rbuf b;
	char h[512];

	REQUIRE(!load_lines(&r, lines, 1));
	mlr_headline_snaps(&r.s[0], h, sizeof(h));
	CHECK_STR(h, "3.0 MiB resident: lib-text 2.0 MiB (67%), anon 1.0 MiB (33%)");
	REQUIRE(!render(&r, NULL, &b));
	CHECK_EQ(count(b.p, "class=\"stacked\""), 0);
	CHECK(strstr(b.p, "<p class=\"note\">resident memory over time: one snapshot only") !=
	      NULL);
	CHECK(strstr(b.p, "1 snapshot; it took 207 µs.") != NULL);
	CHECK_EQ(count(b.p, "class=\"kinds\""), 1);
	CHECK(!strstr(b.p, "dirty (page flag)") && !strstr(b.p, "written in the last cycle"));
	CHECK(!strstr(b.p, ">written</text>") && !strstr(b.p, ">dirty</text>"));
	CHECK(strstr(b.p, ">not present</text>") != NULL);
	CHECK(strstr(b.p, ">25.0% of 4.0M</text>") && strstr(b.p, ">100.0% of 2.0M</text>"));
	ml_rb_free(&b);
	ml_report_free(&r);
}

int main(void)
{
	RUN(test_nice_ticks);
	RUN(test_fmt_si);
	RUN(test_html_escape);
	RUN(test_kind_colours_stable);
	RUN(test_load_writes_one);
	RUN(test_json_and_record_merge);
	RUN(test_load_snapshot);
	RUN(test_summary_kinds);
	RUN(test_load_faults_migrate);
	RUN(test_faults_nulls);
	RUN(test_bad_files);
	RUN(test_bad_lines);
	RUN(test_skip_unknown);
	RUN(test_render_all_fixtures);
	RUN(test_render_one_interval);
	RUN(test_hot_marks);
	RUN(test_downsample_mean);
	RUN(test_heat_level);
	RUN(test_page_ranges);
	RUN(test_render_large);
	RUN(test_render_nothing);
	RUN(test_random_lines);
	RUN(test_headline_fixtures);
	RUN(test_headline_writes);
	RUN(test_headline_migrate_other);
	RUN(test_migrate_final_group);
	RUN(test_group_rows);
	RUN(test_ranges_collapse);
	RUN(test_hot_mark_contrast);
	RUN(test_bucket_edges);
	RUN(test_one_snapshot);
	RUN(test_tracer_fixtures);
	return T_DONE();
}
