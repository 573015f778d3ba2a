// SPDX-License-Identifier: MIT
/*
 * The tracers', the models' and the CRIU commands' records of lib/format: each
 * record written to the exact line the commands print, read back to the
 * same record, and malformed lines refused with the field they lack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/format_check.h"
#include "memlens/format_checkpoint.h"
#include "memlens/format_faults.h"
#include "memlens/format_leaks.h"
#include "memlens/format_migrate.h"
#include "memlens/format_migrate_model.h"
#include "memlens/format_oom.h"
#include "memlens/format_restore.h"
#include "memlens/format_slab.h"

/* What a writer wrote: the line, and the line parsed. */
struct out {
	char *buf;
	size_t len;
	FILE *f;
	struct ml_jw w;
};

static void out_open(struct out *o)
{
	memset(o, 0, sizeof(*o));
	o->f = open_memstream(&o->buf, &o->len);
	ml_jw_init(&o->w, o->f);
}

static void out_close(struct out *o)
{
	fclose(o->f);
	o->f = NULL;
}

static struct ml_json *parse(const char *line)
{
	struct ml_err err = { 0 };
	struct ml_json *j = NULL;

	if (ml_json_parse(line, strlen(line), &j, &err))
		T_FAILMSG("%s in '%s'", err.msg, line);
	return j;
}

/* ---- faults ------------------------------------------------------------- */

static struct ml_faults_row_rec fault_rows[] = {
	{ .comm = "memwrite",
	  .pid = 4242,
	  .minor = 16390,
	  .major = 2,
	  .retried = 3,
	  .has_retried = true },
	{ .comm = "cc1 <x&y>", .pid = -1, .minor = 5120, .major = 0 },
};

static const char faults_line[] =
	"{\"type\":\"faults\",\"mode\":\"fentry\",\"recursion_misses\":1,\"rows\":["
	"{\"comm\":\"memwrite\",\"pid\":4242,\"minor\":16390,\"major\":2,\"retried\":3},"
	"{\"comm\":\"cc1 <x&y>\",\"pid\":null,\"minor\":5120,\"major\":0,\"retried\":null}],"
	"\"minor_hist_us\":[0,120,900],\"major_hist_us\":[],"
	"\"kernel\":{\"minor\":21600,\"major\":2},"
	"\"not_seen\":{\"minor\":90,\"major\":0,\"paths\":\"\"},"
	"\"before_tracing\":{\"minor\":34,\"major\":1}}\n";

static void faults_fill(struct ml_faults_rec *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->mode, sizeof(r->mode), "fentry");
	r->recursion_misses = 1;
	r->rows = fault_rows;
	r->nrows = 2;
	r->minor_hist[1] = 120;
	r->minor_hist[2] = 900;
	r->nminor = 26; /* trailing zero slots are not written */
	r->nmajor = 26;
	r->has_kernel = true;
	r->kernel = (struct ml_faults_pair_rec){ 21600, 2 };
	r->not_seen = (struct ml_faults_pair_rec){ 90, 0 };
	r->has_before = true;
	r->before = (struct ml_faults_pair_rec){ 34, 1 };
}

static void faults_same(const struct ml_faults_rec *a, const struct ml_faults_rec *b)
{
	CHECK_EQ(a->interval, b->interval);
	CHECK_EQ(a->elapsed_ms, b->elapsed_ms);
	CHECK_EQ(a->last, b->last);
	CHECK_STR(a->mode, b->mode);
	CHECK_EQ(a->recursion_misses, b->recursion_misses);
	REQUIRE(a->nrows == b->nrows);
	for (size_t i = 0; i < a->nrows; i++) {
		CHECK_STR(a->rows[i].comm, b->rows[i].comm);
		CHECK_EQ(a->rows[i].pid, b->rows[i].pid);
		CHECK_EQ(a->rows[i].minor, b->rows[i].minor);
		CHECK_EQ(a->rows[i].major, b->rows[i].major);
		CHECK_EQ(a->rows[i].has_retried, b->rows[i].has_retried);
		CHECK_EQ(a->rows[i].retried, b->rows[i].retried);
	}
	CHECK(!memcmp(a->minor_hist, b->minor_hist, sizeof(a->minor_hist)));
	CHECK(!memcmp(a->major_hist, b->major_hist, sizeof(a->major_hist)));
	CHECK_EQ(a->has_kernel, b->has_kernel);
	CHECK_EQ(a->has_before, b->has_before);
	if (a->has_kernel) {
		CHECK(!memcmp(&a->kernel, &b->kernel, sizeof(a->kernel)));
		CHECK(!memcmp(&a->not_seen, &b->not_seen, sizeof(a->not_seen)));
	}
	if (a->has_before)
		CHECK(!memcmp(&a->before, &b->before, sizeof(a->before)));
	CHECK_STR(a->not_seen_paths, b->not_seen_paths);
}

/* Write, compare with the exact line, read back, write again: the same line. */
static void faults_round_trip(const struct ml_faults_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_faults_rec back;
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_faults(&o.w, in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_faults_read(j, &back, &err), "%s", err.msg);
	faults_same(in, &back);
	out_open(&o2);
	ml_fmt_faults(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, want);
	ml_fmt_faults_free(&back);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void test_faults_round_trip(void)
{
	struct ml_faults_rec r;

	faults_fill(&r);
	faults_round_trip(&r, faults_line);
}

/* system-wide in tracepoint mode: no pid, no retries, the kernel's counts not known */
static void test_faults_nulls(void)
{
	struct ml_faults_row_rec row = { .comm = "cc1", .pid = -1, .minor = 7 };
	struct ml_faults_rec r = {
		.mode = "tracepoint", .rows = &row, .nrows = 1, .not_seen_paths = "get_user_pages"
	};

	faults_round_trip(&r, "{\"type\":\"faults\",\"mode\":\"tracepoint\",\"recursion_misses\":0,"
			      "\"rows\":[{\"comm\":\"cc1\",\"pid\":null,\"minor\":7,\"major\":0,"
			      "\"retried\":null}],\"minor_hist_us\":[],\"major_hist_us\":[],"
			      "\"kernel\":null,\"not_seen\":{\"minor\":null,\"major\":null,"
			      "\"paths\":\"get_user_pages\"},\"before_tracing\":null}\n");
}

static void test_faults_interval_round_trip(void)
{
	struct ml_faults_rec r;

	faults_fill(&r);
	r.interval = true;
	r.elapsed_ms = 401;
	r.last = true;
	r.has_kernel = r.has_before = false; /* an interval's line has none */
	r.not_seen_paths[0] = '\0';
	faults_round_trip(
		&r,
		"{\"type\":\"faults_interval\",\"elapsed_ms\":401,\"last\":true,\"mode\":"
		"\"fentry\",\"recursion_misses\":1,\"rows\":["
		"{\"comm\":\"memwrite\",\"pid\":4242,\"minor\":16390,\"major\":2,\"retried\":3},"
		"{\"comm\":\"cc1 <x&y>\",\"pid\":null,\"minor\":5120,\"major\":0,\"retried\":"
		"null}],\"minor_hist_us\":[0,120,900],\"major_hist_us\":[]}\n");
}

/* What older files and hand-written lines hold: only rows and histograms. */
static void test_faults_read_lenient(void)
{
	struct ml_json *j = parse("{\"type\":\"faults\",\"rows\":[{\"minor\":5,\"major\":null,"
				  "\"pid\":1.5e300},{}],\"minor_hist_us\":[1,2.0],"
				  "\"major_hist_us\":[]}");
	struct ml_err err = { 0 };
	struct ml_faults_rec r;

	REQUIRE_MSG(!ml_fmt_faults_read(j, &r, &err), "%s", err.msg);
	REQUIRE(r.nrows == 2);
	CHECK_STR(r.rows[0].comm, "?");
	CHECK_EQ(r.rows[0].minor, 5);
	CHECK_EQ(r.rows[0].major, 0);
	CHECK_EQ(r.rows[0].pid, 1000000000000000LL);
	CHECK(!r.rows[0].has_retried);
	CHECK_EQ(r.rows[1].pid, -1);
	CHECK_EQ(r.nminor, 2);
	CHECK_EQ(r.minor_hist[1], 2);
	CHECK(!r.has_kernel && !r.has_before);
	CHECK_STR(r.mode, "");
	ml_fmt_faults_free(&r);
	ml_json_free(j);
}

static void faults_refused(const char *line, const char *why)
{
	struct ml_json *j = parse(line);
	struct ml_err err = { 0 };
	struct ml_faults_rec r;

	CHECK_EQ(ml_fmt_faults_read(j, &r, &err), -EINVAL);
	if (!strstr(err.msg, why))
		T_FAILMSG("\"%s\" lacks \"%s\" (line %s)", err.msg, why, line);
	ml_fmt_faults_free(&r);
	ml_json_free(j);
}

static void test_faults_malformed(void)
{
	faults_refused("{\"type\":\"slab\",\"rows\":[]}", "\"type\"");
	faults_refused("{\"type\":\"faults\",\"minor_hist_us\":[],\"major_hist_us\":[]}",
		       "\"rows\"");
	faults_refused("{\"type\":\"faults\",\"rows\":[1],\"minor_hist_us\":[],"
		       "\"major_hist_us\":[]}",
		       "\"rows\" 0");
	faults_refused("{\"type\":\"faults\",\"rows\":[],\"major_hist_us\":[]}",
		       "\"minor_hist_us\"");
	faults_refused("{\"type\":\"faults\",\"rows\":[],\"minor_hist_us\":[1,-2],"
		       "\"major_hist_us\":[]}",
		       "\"minor_hist_us\" holds");
	faults_refused("{\"type\":\"faults\",\"rows\":[],\"minor_hist_us\":[],"
		       "\"major_hist_us\":{}}",
		       "\"major_hist_us\"");
	faults_refused("{\"type\":\"faults_interval\",\"rows\":[]}", "\"elapsed_ms\"");
	faults_refused("{\"type\":\"faults_interval\",\"elapsed_ms\":1,\"rows\":[],"
		       "\"minor_hist_us\":[\"x\"]}",
		       "\"minor_hist_us\"");
}

/* ---- migrate-model ------------------------------------------------------ */

static struct ml_migrate_model_round_rec none_rounds[] = { { 1, 67108864 }, { 2, 62914560 } },
					 hot_rounds[] = { { 1, 2097152 } };

static struct ml_migrate_model_policy_rec policies[] = {
	{ .name = "none",
	  .rounds = none_rounds,
	  .nrounds = 2,
	  .total_bytes = 130023424,
	  .final_round_bytes = 62914560,
	  .downtime_ms = 475.125,
	  .postcopy_downtime_ms = 250,
	  .postcopy_last_page_ms = 475.125,
	  .dump_ms = 100.5,
	  .restore_ms = 124.625,
	  .restored_bytes = 67108864,
	  .lazy_bytes = 67108864 },
	{ .name = "hot-vma",
	  .rounds = hot_rounds,
	  .nrounds = 1,
	  .total_bytes = 2097152,
	  .final_round_bytes = 2097152,
	  .downtime_ms = 0.1,
	  .postcopy_downtime_ms = 0,
	  .postcopy_last_page_ms = 0.1 },
	{ .name = "hot-range" }, /* no rounds */
};

static const char mm_line[] =
	"{\"type\":\"migrate_model\",\"bandwidth_mbps\":128,\"round_interval_s\":0.5,"
	"\"freeze_overhead_s\":0.25,\"dump_fixed_s\":0.125,\"restore_fixed_s\":0.5,"
	"\"restore_bandwidth_mbps\":512,\"lazy_bandwidth_mbps\":64,\"lazy_faults\":300,"
	"\"lazy_fault_ms\":1.5,\"calibrated_from\":\"m.json\",\"memory\":\"resident\",\"policies\":"
	"["
	"{\"name\":\"none\",\"rounds\":[{\"round\":1,\"bytes\":67108864},"
	"{\"round\":2,\"bytes\":62914560}],\"total_bytes\":130023424,"
	"\"final_round_bytes\":62914560,\"downtime_ms\":475.125,"
	"\"postcopy_downtime_ms\":250,\"postcopy_last_page_ms\":475.125,"
	"\"dump_ms\":100.5,\"restore_ms\":124.625,\"restored_bytes\":67108864,"
	"\"lazy_bytes\":67108864},"
	"{\"name\":\"hot-vma\",\"rounds\":[{\"round\":1,\"bytes\":2097152}],"
	"\"total_bytes\":2097152,\"final_round_bytes\":2097152,\"downtime_ms\":0.1,"
	"\"postcopy_downtime_ms\":0,\"postcopy_last_page_ms\":0.1,\"dump_ms\":0,"
	"\"restore_ms\":0,\"restored_bytes\":0,\"lazy_bytes\":0},"
	"{\"name\":\"hot-range\",\"rounds\":[],\"total_bytes\":0,\"final_round_bytes\":0,"
	"\"downtime_ms\":0,\"postcopy_downtime_ms\":0,\"postcopy_last_page_ms\":0,"
	"\"dump_ms\":0,\"restore_ms\":0,\"restored_bytes\":0,\"lazy_bytes\":0}]}\n";

static void mm_same(const struct ml_migrate_model_rec *a, const struct ml_migrate_model_rec *b)
{
	CHECK(a->bandwidth_mbps == b->bandwidth_mbps);
	CHECK(a->round_interval_s == b->round_interval_s);
	CHECK(a->freeze_overhead_s == b->freeze_overhead_s);
	CHECK(a->dump_fixed_s == b->dump_fixed_s);
	CHECK(a->restore_fixed_s == b->restore_fixed_s);
	CHECK(a->restore_bandwidth_mbps == b->restore_bandwidth_mbps);
	CHECK(a->lazy_bandwidth_mbps == b->lazy_bandwidth_mbps);
	CHECK_EQ(a->lazy_faults, b->lazy_faults);
	CHECK(a->lazy_fault_ms == b->lazy_fault_ms);
	CHECK_STR(a->calibrated_from, b->calibrated_from);
	CHECK(a->memory_resident == b->memory_resident);
	CHECK(a->no_precopy == b->no_precopy);
	REQUIRE(a->npol == b->npol);
	for (size_t i = 0; i < a->npol; i++) {
		const struct ml_migrate_model_policy_rec *p = &a->pol[i], *q = &b->pol[i];

		CHECK_STR(p->name, q->name);
		REQUIRE(p->nrounds == q->nrounds);
		for (size_t j = 0; j < p->nrounds; j++) {
			CHECK_EQ(p->rounds[j].round, q->rounds[j].round);
			CHECK_EQ(p->rounds[j].bytes, q->rounds[j].bytes);
		}
		CHECK_EQ(p->total_bytes, q->total_bytes);
		CHECK_EQ(p->final_round_bytes, q->final_round_bytes);
		CHECK(p->downtime_ms == q->downtime_ms);
		CHECK(p->postcopy_downtime_ms == q->postcopy_downtime_ms);
		CHECK(p->postcopy_last_page_ms == q->postcopy_last_page_ms);
		CHECK(p->dump_ms == q->dump_ms);
		CHECK(p->restore_ms == q->restore_ms);
		CHECK_EQ(p->restored_bytes, q->restored_bytes);
		CHECK_EQ(p->lazy_bytes, q->lazy_bytes);
	}
}

static void test_migrate_model_round_trip(void)
{
	struct ml_migrate_model_rec in = { .bandwidth_mbps = 128,
					   .round_interval_s = 0.5,
					   .freeze_overhead_s = 0.25,
					   .dump_fixed_s = 0.125,
					   .restore_fixed_s = 0.5,
					   .restore_bandwidth_mbps = 512,
					   .lazy_bandwidth_mbps = 64,
					   .lazy_faults = 300,
					   .lazy_fault_ms = 1.5,
					   .calibrated_from = "m.json",
					   .memory_resident = true,
					   .pol = policies,
					   .npol = 3 },
				    back;
	struct ml_err err = { 0 };
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_migrate_model(&o.w, &in);
	out_close(&o);
	CHECK_STR(o.buf, mm_line);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_migrate_model_read(j, &back, &err), "%s", err.msg);
	mm_same(&in, &back);
	out_open(&o2);
	ml_fmt_migrate_model(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, mm_line);
	ml_fmt_migrate_model_free(&back);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

/* older lines: no freeze overhead, no post-copy, no round numbers */
static void test_migrate_model_read_lenient(void)
{
	struct ml_json *j = parse("{\"type\":\"migrate_model\",\"policies\":[{\"rounds\":"
				  "[{\"bytes\":4096}],\"downtime_ms\":null}]}");
	struct ml_err err = { 0 };
	struct ml_migrate_model_rec r;

	REQUIRE_MSG(!ml_fmt_migrate_model_read(j, &r, &err), "%s", err.msg);
	REQUIRE(r.npol == 1 && r.pol[0].nrounds == 1);
	CHECK_STR(r.pol[0].name, "?");
	CHECK_EQ(r.pol[0].rounds[0].bytes, 4096);
	CHECK_EQ(r.pol[0].rounds[0].round, 0);
	CHECK(r.pol[0].downtime_ms == 0 && r.bandwidth_mbps == 0 && r.freeze_overhead_s == 0);
	/* no fixed parts, no restore, not calibrated */
	CHECK(r.dump_fixed_s == 0 && r.restore_fixed_s == 0 && r.restore_bandwidth_mbps == 0);
	CHECK(!r.calibrated_from);
	CHECK(r.pol[0].dump_ms == 0 && r.pol[0].restore_ms == 0 && r.pol[0].restored_bytes == 0);
	/* no lazy pages' parameters nor bytes */
	CHECK(r.lazy_bandwidth_mbps == 0 && r.lazy_faults == 0 && r.lazy_fault_ms == 0);
	CHECK_EQ(r.pol[0].lazy_bytes, 0);
	ml_fmt_migrate_model_free(&r);
	ml_json_free(j);
}

static void mm_refused(const char *line, const char *why)
{
	struct ml_json *j = parse(line);
	struct ml_err err = { 0 };
	struct ml_migrate_model_rec r;

	CHECK_EQ(ml_fmt_migrate_model_read(j, &r, &err), -EINVAL);
	if (!strstr(err.msg, why))
		T_FAILMSG("\"%s\" lacks \"%s\" (line %s)", err.msg, why, line);
	ml_fmt_migrate_model_free(&r);
	ml_json_free(j);
}

static void test_migrate_model_malformed(void)
{
	mm_refused("{\"type\":\"migrate_model\"}", "\"policies\"");
	mm_refused("{\"type\":\"migrate_model\",\"policies\":{}}", "\"policies\"");
	mm_refused("{\"type\":\"migrate_model\",\"policies\":[{\"name\":\"none\"}]}",
		   "policy 0: field \"rounds\"");
	mm_refused("{\"type\":\"migrate_model\",\"policies\":[{\"rounds\":[]},{\"rounds\":"
		   "[{\"round\":1,\"bytes\":\"1\"}]}]}",
		   "policy 1, round 0: field \"bytes\"");
}

/* ---- slab --------------------------------------------------------------- */

static struct ml_slab_row_rec slab_rows[] = {
	{ .cache = "kmalloc-64",
	  .allocs = 1000,
	  .frees = 1200,
	  .net = -200,
	  .net_kb = -12,
	  .unseen_allocs = 3,
	  .window_known = true,
	  .slabinfo_delta = -190,
	  .window_net = -200,
	  .window_unseen_allocs = 3,
	  .objperslab = 64 },
	{ .cache = "dentry", .allocs = 5, .frees = 0, .net = 5, .net_kb = 0, .objperslab = 0 },
};
static struct ml_slab_only_rec slab_only[] = { { "buffer_head", 7, 39 } };
static struct ml_slab_merged_rec slab_merged[] = { { "kmalloc-64", 3, "a b \"c\"" } };

static const char slab_line[] =
	"{\"type\":\"slab\",\"recursion_misses\":0,\"copies\":2,\"rescued\":5,"
	"\"rescued_by_last\":1,\"kmalloc\":\"cache\",\"kfree_unattributed\":4,"
	"\"kmalloc_large\":6,\"unseen_allocs\":3,\"rows\":["
	"{\"cache\":\"kmalloc-64\",\"allocs\":1000,\"frees\":1200,\"net\":-200,"
	"\"net_kb\":-12,\"unseen_allocs\":3,\"slabinfo_delta\":-190,\"window_net\":-200,"
	"\"window_unseen_allocs\":3,\"objperslab\":64},"
	"{\"cache\":\"dentry\",\"allocs\":5,\"frees\":0,\"net\":5,\"net_kb\":0,"
	"\"unseen_allocs\":0,\"slabinfo_delta\":null,\"window_net\":null,"
	"\"window_unseen_allocs\":null,\"objperslab\":0}],"
	"\"slabinfo_only\":[{\"cache\":\"buffer_head\",\"slabinfo_delta\":7,"
	"\"objperslab\":39}],"
	"\"merged\":[{\"cache\":\"kmalloc-64\",\"users\":3,\"aliases\":\"a b \\\"c\\\"\"}]}\n";

static void slab_same(const struct ml_slab_rec *a, const struct ml_slab_rec *b)
{
	CHECK_EQ(a->interval, b->interval);
	CHECK_EQ(a->elapsed_ms, b->elapsed_ms);
	CHECK_EQ(a->last, b->last);
	CHECK_EQ(a->recursion_misses, b->recursion_misses);
	CHECK_EQ(a->copies, b->copies);
	CHECK_EQ(a->rescued, b->rescued);
	CHECK_EQ(a->rescued_by_last, b->rescued_by_last);
	CHECK_STR(a->kmalloc, b->kmalloc);
	CHECK_EQ(a->kfree_unattributed, b->kfree_unattributed);
	CHECK_EQ(a->kmalloc_large, b->kmalloc_large);
	CHECK_EQ(a->unseen_allocs, b->unseen_allocs);
	CHECK_EQ(a->has_slabinfo, b->has_slabinfo);
	REQUIRE(a->nrows == b->nrows && a->nonly == b->nonly && a->nmerged == b->nmerged);
	for (size_t i = 0; i < a->nrows; i++)
		CHECK(!memcmp(&a->rows[i], &b->rows[i], sizeof(a->rows[i])));
	for (size_t i = 0; i < a->nonly; i++)
		CHECK(!memcmp(&a->only[i], &b->only[i], sizeof(a->only[i])));
	for (size_t i = 0; i < a->nmerged; i++) {
		CHECK_STR(a->merged[i].cache, b->merged[i].cache);
		CHECK_EQ(a->merged[i].users, b->merged[i].users);
		CHECK_STR(a->merged[i].aliases, b->merged[i].aliases);
	}
}

static void slab_round_trip(const struct ml_slab_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_slab_rec back;
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_slab(&o.w, in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_slab_read(j, &back, &err), "%s", err.msg);
	slab_same(in, &back);
	out_open(&o2);
	ml_fmt_slab(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, want);
	ml_fmt_slab_free(&back);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void test_slab_round_trip(void)
{
	struct ml_slab_rec r = { .copies = 2,
				 .rescued = 5,
				 .rescued_by_last = 1,
				 .kmalloc = "cache",
				 .kfree_unattributed = 4,
				 .kmalloc_large = 6,
				 .unseen_allocs = 3,
				 .rows = slab_rows,
				 .nrows = 2,
				 .has_slabinfo = true,
				 .only = slab_only,
				 .nonly = 1,
				 .merged = slab_merged,
				 .nmerged = 1 };

	slab_round_trip(&r, slab_line);
}

/* an interval: no --slabinfo fields */
static void test_slab_interval_round_trip(void)
{
	struct ml_slab_row_rec row = { .cache = "dentry", .allocs = 5, .net = 5 };
	struct ml_slab_rec r = { .interval = true,
				 .elapsed_ms = 300,
				 .recursion_misses = 9,
				 .kmalloc = "size",
				 .rows = &row,
				 .nrows = 1 };

	slab_round_trip(&r, "{\"type\":\"slab_interval\",\"elapsed_ms\":300,\"last\":false,"
			    "\"recursion_misses\":9,\"copies\":0,\"rescued\":0,"
			    "\"rescued_by_last\":0,\"kmalloc\":\"size\",\"kfree_unattributed\":0,"
			    "\"kmalloc_large\":0,\"unseen_allocs\":0,\"rows\":[{\"cache\":"
			    "\"dentry\",\"allocs\":5,\"frees\":0,\"net\":5,\"net_kb\":0,"
			    "\"unseen_allocs\":0}],\"merged\":[]}\n");
}

static void slab_refused(const char *line, const char *why)
{
	struct ml_json *j = parse(line);
	struct ml_err err = { 0 };
	struct ml_slab_rec r;

	CHECK_EQ(ml_fmt_slab_read(j, &r, &err), -EINVAL);
	if (!strstr(err.msg, why))
		T_FAILMSG("\"%s\" lacks \"%s\" (line %s)", err.msg, why, line);
	ml_fmt_slab_free(&r);
	ml_json_free(j);
}

static void test_slab_malformed(void)
{
	slab_refused("{\"type\":\"faults\",\"rows\":[]}", "\"type\"");
	slab_refused("{\"type\":\"slab\"}", "\"rows\"");
	slab_refused("{\"type\":\"slab_interval\",\"rows\":[]}", "\"elapsed_ms\"");
	slab_refused("{\"type\":\"slab\",\"rows\":[{\"allocs\":1,\"frees\":1}]}",
		     "row 0: field \"cache\"");
	slab_refused("{\"type\":\"slab\",\"rows\":[{\"cache\":\"a\",\"allocs\":1,"
		     "\"frees\":1},{\"cache\":\"b\",\"allocs\":-1,\"frees\":1}]}",
		     "row 1: field \"allocs\" is missing or not a count");
	slab_refused("{\"type\":\"slab\",\"rows\":[{\"cache\":\"a\",\"allocs\":1}]}", "\"frees\"");
	slab_refused("{\"type\":\"slab\",\"rows\":[],\"merged\":{}}", "\"merged\"");
}

/* ---- oom ---------------------------------------------------------------- */

static void test_oom_kill_round_trip(void)
{
	static const char want[] =
		"{\"type\":\"oom_kill\",\"time_ms\":1796498186935,\"victim_pid\":8757,"
		"\"victim_comm\":\"hog\",\"trigger_pid\":8756,\"trigger_comm\":\"sh\","
		"\"anon_rss_kb\":65152,\"file_rss_kb\":1104,\"shmem_rss_kb\":4,"
		"\"total_vm_kb\":67880,\"limit_kb\":65536,\"scope\":\"cgroup\","
		"\"cgroup\":\"/a/b\",\"source\":\"tracepoint\"}\n";
	struct ml_oom_kill_rec in = { .time_ms = 1796498186935ULL,
				      .victim_pid = 8757,
				      .victim_comm = "hog",
				      .trigger_pid = 8756,
				      .trigger_comm = "sh",
				      .anon_rss_kb = 65152,
				      .file_rss_kb = 1104,
				      .shmem_rss_kb = 4,
				      .total_vm_kb = 67880,
				      .limit_kb = 65536,
				      .scope = "cgroup",
				      .cgroup = "/a/b",
				      .source = "tracepoint" },
			       back;
	struct ml_err err = { 0 };
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_oom_kill(&o.w, &in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_oom_kill_read(j, &back, &err), "%s", err.msg);
	CHECK(!memcmp(&in, &back, sizeof(in)));
	out_open(&o2);
	ml_fmt_oom_kill(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, want);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void oom_count_round_trip(const struct ml_oom_count_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_oom_count_rec back;
	struct out o;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_oom_count(&o.w, in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_oom_count_read(j, &back, &err), "%s", err.msg);
	CHECK_EQ(back.interval, in->interval);
	CHECK_EQ(back.elapsed_ms, in->elapsed_ms);
	CHECK_EQ(back.last, in->last);
	CHECK_EQ(back.kills, in->kills);
	CHECK_EQ(back.lost, in->lost);
	CHECK_EQ(back.recursion_misses, in->recursion_misses);
	ml_json_free(j);
	free(o.buf);
}

static void test_oom_count_round_trip(void)
{
	oom_count_round_trip(
		&(struct ml_oom_count_rec){ .kills = 3, .lost = 1, .recursion_misses = 2 },
		"{\"type\":\"oom_summary\",\"kills\":3,\"lost\":1,"
		"\"recursion_misses\":2}\n");
	oom_count_round_trip(
		&(struct ml_oom_count_rec){
			.interval = true, .elapsed_ms = 600, .last = true, .kills = 1 },
		"{\"type\":\"oom_interval\",\"elapsed_ms\":600,\"last\":true,\"kills\":1,"
		"\"lost\":0,\"recursion_misses\":0}\n");
}

static void test_oom_malformed(void)
{
	static const struct {
		const char *line, *why;
		bool kill;
	} bad[] = {
		{ "{\"type\":\"oom_kill\",\"victim_pid\":1}", "\"time_ms\"", true },
		{ "{\"type\":\"oom_kill\",\"time_ms\":1,\"victim_pid\":-1}", "\"victim_pid\"",
		  true },
		{ "{\"type\":\"oom_summary\"}", "\"kills\"", false },
		{ "{\"type\":\"oom_interval\",\"kills\":1}", "\"elapsed_ms\"", false },
		{ "{\"type\":\"oom_kill\",\"kills\":1}", "\"type\"", false },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ml_json *j = parse(bad[i].line);
		struct ml_err err = { 0 };
		struct ml_oom_count_rec c;
		struct ml_oom_kill_rec k;
		int ret = bad[i].kill ? ml_fmt_oom_kill_read(j, &k, &err)
				      : ml_fmt_oom_count_read(j, &c, &err);

		CHECK_EQ(ret, -EINVAL);
		if (!strstr(err.msg, bad[i].why))
			T_FAILMSG("\"%s\" lacks \"%s\"", err.msg, bad[i].why);
		ml_json_free(j);
	}
}

/* a kill line without a trigger: its pid not known, written null */
static void test_oom_kill_lenient(void)
{
	struct ml_json *j = parse("{\"type\":\"oom_kill\",\"time_ms\":5,\"victim_pid\":7}");
	struct ml_err err = { 0 };
	struct ml_oom_kill_rec r;
	struct out o;

	REQUIRE_MSG(!ml_fmt_oom_kill_read(j, &r, &err), "%s", err.msg);
	CHECK_EQ(r.trigger_pid, -1);
	CHECK_STR(r.scope, "");
	out_open(&o);
	ml_fmt_oom_kill(&o.w, &r);
	out_close(&o);
	CHECK(strstr(o.buf, "\"trigger_pid\":null,") != NULL);
	free(o.buf);
	ml_json_free(j);
}

/* ---- checkpoint and migrate --------------------------------------------- */

static const char caps_obj[] =
	"\"criu\":{\"path\":\"/usr/sbin/criu\",\"version\":\"4.1.1\",\"exclude_options\":true,"
	"\"exclude_range\":true,\"exclude_file\":true,\"no_parent_range\":true,"
	"\"page_granular\":false,\"granularity\":\"vma\",\"mem_dirty_track\":true}";

static const struct ml_criu_caps_rec caps_rec = { .path = "/usr/sbin/criu",
						  .version = "4.1.1",
						  .exclude_options = true,
						  .exclude_range = true,
						  .exclude_file = true,
						  .no_parent_range = true,
						  .granularity = "vma",
						  .mem_dirty_track = true };

static void caps_same(const struct ml_criu_caps_rec *a, const struct ml_criu_caps_rec *b)
{
	CHECK_STR(a->path, b->path);
	CHECK_STR(a->version, b->version);
	CHECK_EQ(a->exclude_options, b->exclude_options);
	CHECK_EQ(a->exclude_range, b->exclude_range);
	CHECK_EQ(a->exclude_file, b->exclude_file);
	CHECK_EQ(a->no_parent_range, b->no_parent_range);
	CHECK_EQ(a->page_granular, b->page_granular);
	CHECK_STR(a->granularity, b->granularity);
	CHECK_EQ(a->mem_dirty_track, b->mem_dirty_track);
}

/* the record of what ml_criu_probe() found, as the commands make it */
static void test_criu_caps_of(void)
{
	struct ml_criu_caps caps = { .path = "/usr/sbin/criu",
				     .version = "4.1.1",
				     .works = true,
				     .exclude_range = true,
				     .exclude_file = true,
				     .no_parent_range = true,
				     .mem_dirty_track = true };
	struct ml_criu_caps_rec r;
	struct out o;

	ml_fmt_criu_caps_of(&r, &caps);
	caps_same(&r, &caps_rec);
	out_open(&o);
	ml_jw_obj(&o.w);
	ml_fmt_criu_caps(&o.w, &r);
	ml_jw_obj_end(&o.w);
	out_close(&o);
	CHECK(!strncmp(o.buf + 1, caps_obj, strlen(caps_obj)) &&
	      !strcmp(o.buf + 1 + strlen(caps_obj), "}\n"));
	free(o.buf);
}

static struct ml_range ckpt_hot[] = { { 0x7f0000001000, 0x7f0000003000 },
				      { 0x55aa0000, 0x55ab0000 } };
static struct ml_profiler_proc ckpt_procs[] = {
	{ .pid = 4242, .comm = "memwrite", .hot_bytes = 8192, .cumulative_dirty_bytes = 65536 },
	{ .pid = 4243, .comm = "child \"x\"", .exited = true, .cumulative_dirty_bytes = -1 },
	{ .pid = 4244, .comm = "other", .failed = true },
};

static const char ckpt_line[] =
	"{\"type\":\"checkpoint\",\"pid\":4242,\"images_dir\":\"/tmp/img\",\"action\":\"dump\","
	"\"ok\":false,\"exit_code\":1,%s,\"command\":\"criu dump -t 4242 'a b'\","
	"\"criu_ran\":true,\"criu_exit_status\":1,\"timed_out\":false,\"duration_ms\":1234,"
	"\"image_bytes\":1048576,\"bytes_written\":2097152,\"pages_written\":512,"
	"\"shpages_written\":-1,\"pages_scanned\":1024,\"pages_skipped_parent\":0,"
	"\"hot_ranges\":[[\"0x7f0000001000\",\"0x7f0000003000\"],[\"0x55aa0000\",\"0x55ab0000\"]],"
	"\"exclusion\":{\"applied\":true,\"skipped\":false,\"exclude_ranges\":2,"
	"\"no_parent_ranges\":1,\"exclude_file_used\":false,\"granularity\":\"vma\","
	"\"note\":\"2 hot ranges left out\"},"
	"\"profiler\":{\"profiled\":true,\"reinit\":true,\"note\":\"\",\"resumed_intervals\":3,"
	"\"processes\":[{\"pid\":4242,\"comm\":\"memwrite\",\"state\":\"profiled\","
	"\"hot_bytes\":8192,\"cumulative_dirty_bytes\":65536},"
	"{\"pid\":4243,\"comm\":\"child \\\"x\\\"\",\"state\":\"exited\",\"hot_bytes\":0,"
	"\"cumulative_dirty_bytes\":-1},"
	"{\"pid\":4244,\"comm\":\"other\",\"state\":\"not profiled\",\"hot_bytes\":0,"
	"\"cumulative_dirty_bytes\":0}],"
	"\"processes_total\":{\"count\":3,\"hot_bytes\":4096,\"cumulative_dirty_bytes\":40960},"
	"\"resumed_tracked_vmas\":7,\"resumed_dirty_pages\":12,"
	"\"resumed_cumulative_dirty_bytes\":49152},"
	"\"tcp\":\"refuse\",\"log\":\"/tmp/img/dump.log\",\"hint\":\"pass --tcp-established\","
	"\"error\":\"CRIU failed\"}\n";

static void ckpt_fill(struct ml_checkpoint_rec *r)
{
	*r = (struct ml_checkpoint_rec){
		.pid = 4242,
		.images_dir = "/tmp/img",
		.exit_code = 1,
		.criu = caps_rec,
		.command = "criu dump -t 4242 'a b'",
		.criu_ran = true,
		.criu_exit_status = 1,
		.duration_ms = 1234,
		.image_bytes = 1048576,
		.bytes_written = 2097152,
		.pages_written = 512,
		.shpages_written = -1,
		.pages_scanned = 1024,
		.hot_ranges = ckpt_hot,
		.nhot_ranges = 2,
		.exclusion = { .applied = true,
			       .exclude_ranges = 2,
			       .no_parent_ranges = 1,
			       .granularity = "vma",
			       .note = "2 hot ranges left out" },
		.profiler = { .profiled = true,
			      .reinit = true,
			      .note = "",
			      .resumed_intervals = 3,
			      .procs = ckpt_procs,
			      .nprocs = 3,
			      .procs_hot_bytes = 4096,
			      .procs_dirty_bytes = 40960,
			      .has_resumed = true,
			      .resumed_tracked_vmas = 7,
			      .resumed_dirty_pages = 12,
			      .resumed_cumulative_dirty_bytes = 49152 },
		.tcp = "refuse",
		.log = "/tmp/img/dump.log",
		.hint = "pass --tcp-established",
		.error = "CRIU failed",
	};
}

/* written, read back and written again: the same line, returned */
static char *write_twice_ckpt(const struct ml_checkpoint_rec *in, struct ml_checkpoint_rec *back,
			      struct ml_json **j)
{
	struct ml_err err = { 0 };
	struct out o, o2;

	out_open(&o);
	ml_fmt_checkpoint(&o.w, in);
	out_close(&o);
	*j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_checkpoint_read(*j, back, &err), "%s", err.msg);
	out_open(&o2);
	ml_fmt_checkpoint(&o2.w, back);
	out_close(&o2);
	CHECK_STR(o2.buf, o.buf);
	free(o2.buf);
	return o.buf;
}

/* @in written is @want; read back and written again, the same line */
static void ckpt_round_trip(const struct ml_checkpoint_rec *in, const char *want,
			    struct ml_checkpoint_rec *back, struct ml_json **j)
{
	char *line = write_twice_ckpt(in, back, j);

	CHECK_STR(line, want);
	free(line);
}

static void test_checkpoint_round_trip(void)
{
	char want[sizeof(ckpt_line) + sizeof(caps_obj)];
	struct ml_checkpoint_rec in, back;
	struct ml_json *j;

	snprintf(want, sizeof(want), ckpt_line, caps_obj);
	ckpt_fill(&in);
	ckpt_round_trip(&in, want, &back, &j);
	CHECK_EQ(back.pid, 4242);
	CHECK(!back.pre_dump && !back.ok);
	CHECK_EQ(back.exit_code, 1);
	caps_same(&back.criu, &caps_rec);
	CHECK_STR(back.command, in.command);
	CHECK_EQ(back.shpages_written, -1);
	REQUIRE(back.nhot_ranges == 2);
	CHECK_EQ(back.hot_ranges[0].start, 0x7f0000001000);
	CHECK_EQ(back.hot_ranges[1].end, 0x55ab0000);
	CHECK_EQ(back.exclusion.no_parent_ranges, 1);
	CHECK_STR(back.exclusion.note, in.exclusion.note);
	REQUIRE(back.profiler.nprocs == 3);
	CHECK_STR(back.profiler.procs[1].comm, "child \"x\"");
	CHECK(back.profiler.procs[1].exited && !back.profiler.procs[1].failed);
	CHECK(back.profiler.procs[2].failed && !back.profiler.procs[2].exited);
	CHECK_EQ(back.profiler.procs[0].hot_bytes, 8192);
	CHECK_EQ(back.profiler.procs_hot_bytes, 4096);
	CHECK_EQ(back.profiler.procs_dirty_bytes, 40960);
	CHECK(back.profiler.has_resumed);
	CHECK_EQ(back.profiler.resumed_cumulative_dirty_bytes, 49152);
	CHECK_STR(back.hint, in.hint);
	CHECK_STR(back.error, in.error);
	ml_fmt_checkpoint_free(&back);
	ml_json_free(j);
}

/* a pre-dump that went well: no hint, no error, nothing profiled after it */
static void test_checkpoint_ok_round_trip(void)
{
	static const char want[] =
		"{\"type\":\"checkpoint\",\"pid\":7,\"images_dir\":\"/i\",\"action\":\"pre-dump\","
		"\"ok\":true,\"exit_code\":0,\"criu\":{\"path\":\"\",\"version\":\"\","
		"\"exclude_options\":false,\"exclude_range\":false,\"exclude_file\":false,"
		"\"no_parent_range\":false,\"page_granular\":false,\"granularity\":\"\","
		"\"mem_dirty_track\":false},\"command\":\"criu pre-dump\",\"criu_ran\":true,"
		"\"criu_exit_status\":0,\"timed_out\":false,\"duration_ms\":5,\"image_bytes\":0,"
		"\"bytes_written\":0,\"pages_written\":0,\"shpages_written\":0,\"pages_scanned\":0,"
		"\"pages_skipped_parent\":0,\"hot_ranges\":[],\"exclusion\":{\"applied\":false,"
		"\"skipped\":true,\"exclude_ranges\":0,\"no_parent_ranges\":0,"
		"\"exclude_file_used\":false,\"granularity\":\"none\",\"note\":\"\"},"
		"\"profiler\":{\"profiled\":false,\"reinit\":false,\"note\":\"not profiled\","
		"\"resumed_intervals\":0,\"processes\":[]},\"tcp\":\"refuse\",\"log\":\"/i/l\"}\n";
	struct ml_checkpoint_rec in = { .pid = 7,
					.images_dir = "/i",
					.pre_dump = true,
					.ok = true,
					.command = "criu pre-dump",
					.criu_ran = true,
					.duration_ms = 5,
					.exclusion = { .skipped = true },
					.profiler = { .note = "not profiled" },
					.tcp = "refuse",
					.log = "/i/l",
					.hint = "" },
				 back;
	struct ml_json *j;

	ckpt_round_trip(&in, want, &back, &j);
	CHECK(back.pre_dump && back.ok && back.exclusion.skipped);
	CHECK(!back.profiler.has_resumed && back.profiler.nprocs == 0 && back.nhot_ranges == 0);
	CHECK(back.hint == NULL && back.error == NULL);
	ml_fmt_checkpoint_free(&back);
	ml_json_free(j);
}

static void ckpt_refused(const char *line, const char *why)
{
	struct ml_json *j = parse(line);
	struct ml_err err = { 0 };
	struct ml_checkpoint_rec r;

	CHECK_EQ(ml_fmt_checkpoint_read(j, &r, &err), -EINVAL);
	if (!strstr(err.msg, why))
		T_FAILMSG("\"%s\" lacks \"%s\" (line %s)", err.msg, why, line);
	ml_fmt_checkpoint_free(&r);
	ml_json_free(j);
}

static void test_checkpoint_malformed(void)
{
#define CK "{\"type\":\"checkpoint\",\"pid\":1,\"action\":\"dump\",\"ok\":true"
	ckpt_refused("{\"type\":\"restore\",\"pid\":1}", "\"type\"");
	ckpt_refused("{\"type\":\"checkpoint\",\"action\":\"dump\"}", "\"pid\"");
	ckpt_refused("{\"type\":\"checkpoint\",\"pid\":1,\"action\":\"undump\"}", "\"action\"");
	ckpt_refused("{\"type\":\"checkpoint\",\"pid\":1,\"action\":\"dump\"}", "\"ok\"");
	ckpt_refused(CK "}", "\"criu\"");
	ckpt_refused(CK ",\"criu\":{}}", "\"hot_ranges\"");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[[\"0x1\"]]}", "\"hot_ranges\" 0");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[[\"0x1\",\"zz\"]]}", "\"hot_ranges\" 0");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[]}", "\"exclusion\"");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[],\"exclusion\":{}}", "\"profiler\"");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[],\"exclusion\":{},\"profiler\":{}}",
		     "\"processes\"");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[],\"exclusion\":{},\"profiler\":"
			"{\"processes\":[1]}}",
		     "\"processes\" 0");
	ckpt_refused(CK ",\"criu\":{},\"hot_ranges\":[],\"exclusion\":{},\"profiler\":"
			"{\"processes\":[],\"processes_total\":[]}}",
		     "\"processes_total\" is not an object");
#undef CK
}

static struct ml_migrate_round_rec mig_rounds[] = {
	{ .round = 1,
	  .pre_dump = true,
	  .pages = 16384,
	  .shpages = 0,
	  .pages_scanned = 20000,
	  .pages_skipped_parent = -1,
	  .bytes = 67108864,
	  .stored_bytes = 67108864,
	  .files_bytes = 67200000,
	  .pages_lazy = -1,
	  .start_ms = 0,
	  .duration_ms = 812,
	  .hot_ranges = 3,
	  .hot_bytes = 3145728,
	  .excluded_ranges = 3,
	  .note = "3 hot ranges left out" },
	{ .round = 2,
	  .pages = 12,
	  .shpages = -1,
	  .pages_scanned = 20000,
	  .pages_skipped_parent = 19000,
	  .bytes = 49152,
	  .stored_bytes = 49152,
	  .images_bytes = 20480,
	  .files_bytes = 70000,
	  .pages_lazy = 768,
	  .start_ms = 1400,
	  .duration_ms = 95,
	  .no_parent_ranges = 1,
	  .note = "" },
};

static const char mig_line[] =
	"{\"type\":\"migrate\",\"pid\":4242,\"container\":{\"id\":\"abc123\",\"name\":\"web\","
	"\"runtime\":\"podman/crun\",\"init_pid\":4242,\"rootfs\":\"/var/lib/c/rootfs\","
	"\"bind_mounts\":2},\"to\":\"10.0.0.2:7070\",\"ok\":false,%s,\"precopy\":true,"
	"\"exclusion\":true,\"rounds\":["
	"{\"round\":1,\"kind\":\"pre-dump\",\"pages\":16384,\"shpages\":0,"
	"\"pages_scanned\":20000,\"pages_skipped_parent\":-1,\"bytes\":67108864,"
	"\"stored_bytes\":67108864,\"images_bytes\":0,\"files_bytes\":67200000,"
	"\"pages_lazy\":-1,\"start_ms\":0,\"duration_ms\":812,\"hot_ranges\":3,"
	"\"hot_bytes\":3145728,\"excluded_ranges\":3,\"no_parent_ranges\":0,"
	"\"note\":\"3 hot ranges left out\"},"
	"{\"round\":2,\"kind\":\"dump\",\"pages\":12,\"shpages\":-1,\"pages_scanned\":20000,"
	"\"pages_skipped_parent\":19000,\"bytes\":49152,\"stored_bytes\":49152,"
	"\"images_bytes\":20480,\"files_bytes\":70000,\"pages_lazy\":768,\"start_ms\":1400,"
	"\"duration_ms\":95,\"hot_ranges\":0,\"hot_bytes\":0,\"excluded_ranges\":0,"
	"\"no_parent_ranges\":1,\"note\":\"\"}],"
	"\"postcopy\":true,\"total_bytes\":67178496,\"tcp\":\"established\","
	"\"lazy\":{\"pages_left\":768,\"pages_total\":768,\"pages_copied\":760,"
	"\"pages_parent\":0,\"bytes\":3112960,\"copy_bytes\":3112960,\"faults\":40,\"faults_"
	"served\":38,"
	"\"fault_wait_avg_us\":250,\"fault_wait_max_us\":1200,\"last_page_ms\":2300,"
	"\"source_done_ms\":2400},"
	"\"downtime_ms\":180,\"final_dump_ms\":95,\"frozen_in_dump_ms\":-1,\"restore_ms\":85,"
	"\"restored_pid\":5151,\"granularity\":\"vma\",\"limits\":\"whole VMAs\","
	"\"error\":\"the destination failed\"}\n";

/* written, read back and written again: the same line, returned */
static char *write_twice_mig(const struct ml_migrate_rec *in, struct ml_migrate_rec *back,
			     struct ml_json **j)
{
	struct ml_err err = { 0 };
	struct out o, o2;

	out_open(&o);
	ml_fmt_migrate(&o.w, in);
	out_close(&o);
	*j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_migrate_read(*j, back, &err), "%s", err.msg);
	out_open(&o2);
	ml_fmt_migrate(&o2.w, back);
	out_close(&o2);
	CHECK_STR(o2.buf, o.buf);
	free(o2.buf);
	return o.buf;
}

static void mig_round_trip(const struct ml_migrate_rec *in, const char *want,
			   struct ml_migrate_rec *back, struct ml_json **j)
{
	char *line = write_twice_mig(in, back, j);

	CHECK_STR(line, want);
	free(line);
}

static void test_migrate_round_trip(void)
{
	char want[sizeof(mig_line) + sizeof(caps_obj)];
	struct ml_migrate_rec in = {
		.pid = 4242,
		.has_container = true,
		.container = { .id = "abc123",
			       .name = "web",
			       .runtime = "podman/crun",
			       .init_pid = 4242,
			       .rootfs = "/var/lib/c/rootfs",
			       .bind_mounts = 2 },
		.to = "10.0.0.2:7070",
		.criu = caps_rec,
		.precopy = true,
		.exclusion = true,
		.rounds = mig_rounds,
		.nrounds = 2,
		.postcopy = true,
		.total_bytes = 67178496,
		.tcp = "established",
		.lazy = { .pages_left = 768,
			  .pages_total = 768,
			  .pages_copied = 760,
			  .bytes = 3112960,
			  .copy_bytes = 3112960,
			  .faults = 40,
			  .faults_served = 38,
			  .fault_wait_avg_us = 250,
			  .fault_wait_max_us = 1200,
			  .last_page_ms = 2300,
			  .source_done_ms = 2400 },
		.downtime_ms = 180,
		.final_dump_ms = 95,
		.frozen_in_dump_ms = -1,
		.restore_ms = 85,
		.restored_pid = 5151,
		.granularity = "vma",
		.limits = "whole VMAs",
		.error = "the destination failed",
	},
			  back;
	struct ml_json *j;

	snprintf(want, sizeof(want), mig_line, caps_obj);
	mig_round_trip(&in, want, &back, &j);
	CHECK(back.has_container && back.postcopy && !back.ok);
	CHECK_STR(back.container.rootfs, in.container.rootfs);
	CHECK_EQ(back.container.bind_mounts, 2);
	caps_same(&back.criu, &caps_rec);
	REQUIRE(back.nrounds == 2);
	CHECK(back.rounds[0].pre_dump && !back.rounds[1].pre_dump);
	CHECK_EQ(back.rounds[0].pages_skipped_parent, -1);
	CHECK_EQ(back.rounds[1].pages_lazy, 768);
	CHECK_STR(back.rounds[0].note, mig_rounds[0].note);
	CHECK_EQ(back.lazy.faults_served, 38);
	CHECK_EQ(back.frozen_in_dump_ms, -1);
	CHECK_STR(back.limits, in.limits);
	CHECK_STR(back.error, in.error);
	ml_fmt_migrate_free(&back);
	ml_json_free(j);
}

/* pre-copy without post-copy or a container, nothing left out, no error */
static void test_migrate_plain_round_trip(void)
{
	static const char want[] =
		"{\"type\":\"migrate\",\"pid\":9,\"to\":\"/"
		"dst\",\"ok\":true,\"criu\":{\"path\":\"\","
		"\"version\":\"\",\"exclude_options\":false,\"exclude_range\":false,"
		"\"exclude_file\":false,\"no_parent_range\":false,\"page_granular\":false,"
		"\"granularity\":\"\",\"mem_dirty_track\":false},\"precopy\":false,"
		"\"exclusion\":false,\"rounds\":[{\"round\":2,\"kind\":\"dump\",\"pages\":12,"
		"\"shpages\":-1,\"pages_scanned\":20000,\"pages_skipped_parent\":19000,"
		"\"bytes\":49152,\"stored_bytes\":49152,\"images_bytes\":20480,\"start_ms\":1400,"
		"\"duration_ms\":95,\"hot_ranges\":0,\"hot_bytes\":0,\"excluded_ranges\":0,"
		"\"no_parent_ranges\":1,\"note\":\"\"}],\"postcopy\":false,\"total_bytes\":69632,"
		"\"tcp\":\"refuse\",\"downtime_ms\":200,\"final_dump_ms\":95,"
		"\"frozen_in_dump_ms\":40,\"restore_ms\":105,\"restored_pid\":9,"
		"\"granularity\":\"none\"}\n";
	struct ml_migrate_rec in = { .pid = 9,
				     .to = "/dst",
				     .ok = true,
				     .rounds = &mig_rounds[1],
				     .nrounds = 1,
				     .total_bytes = 69632,
				     .tcp = "refuse",
				     .lazy = { .faults = 3 }, /* not written without post-copy */
				     .downtime_ms = 200,
				     .final_dump_ms = 95,
				     .frozen_in_dump_ms = 40,
				     .restore_ms = 105,
				     .restored_pid = 9,
				     .granularity = "none",
				     .error = "" },
			      back;
	struct ml_json *j;

	mig_round_trip(&in, want, &back, &j);
	CHECK(!back.has_container && !back.postcopy && back.ok);
	CHECK(back.limits == NULL && back.error == NULL && back.lazy.faults == 0);
	REQUIRE(back.nrounds == 1);
	CHECK_EQ(back.rounds[0].files_bytes, 0);
	CHECK_EQ(back.rounds[0].pages_lazy, 0);
	ml_fmt_migrate_free(&back);
	ml_json_free(j);
}

static void mig_refused(const char *line, const char *why)
{
	struct ml_json *j = parse(line);
	struct ml_err err = { 0 };
	struct ml_migrate_rec r;

	CHECK_EQ(ml_fmt_migrate_read(j, &r, &err), -EINVAL);
	if (!strstr(err.msg, why))
		T_FAILMSG("\"%s\" lacks \"%s\" (line %s)", err.msg, why, line);
	ml_fmt_migrate_free(&r);
	ml_json_free(j);
}

static void test_migrate_malformed(void)
{
#define MG "{\"type\":\"migrate\",\"pid\":1,\"ok\":true"
	mig_refused("{\"type\":\"migrate_model\",\"pid\":1}", "\"type\"");
	mig_refused("{\"type\":\"migrate\",\"pid\":\"1\"}", "\"pid\"");
	mig_refused("{\"type\":\"migrate\",\"pid\":1}", "\"ok\"");
	mig_refused(MG ",\"container\":[]}", "\"container\"");
	mig_refused(MG "}", "\"criu\"");
	mig_refused(MG ",\"criu\":{}}", "\"rounds\"");
	mig_refused(MG ",\"criu\":{},\"rounds\":[{\"kind\":\"dump\"},2]}", "\"rounds\" 1");
	mig_refused(MG ",\"criu\":{},\"rounds\":[{\"round\":1}]}", "round 0: field \"kind\"");
	mig_refused(MG ",\"criu\":{},\"rounds\":[],\"postcopy\":true}", "\"lazy\"");
#undef MG
}

/* ---- preflight, and migrate's processes ------------------------------------ */

static const struct ml_criu_preflight pf_two = {
	.f = { { .kind = ML_CRIU_FINDING_UNIX_PEER,
		 .pid = 42,
		 .comm = "redis-server",
		 .resource = "fd 4: a unix stream socket connected to a socket of pid 7 (sh)",
		 .fix = "start the peer in the same process tree" },
	       { .kind = ML_CRIU_FINDING_TCP,
		 .absorbed = true,
		 .pid = 43,
		 .comm = "worker \"x\"",
		 .resource = "fd 5: an established TCP connection 10.0.0.1:80 <-> 10.0.0.2:5000",
		 .fix = "absorbed by --tcp close" } },
	.n = 2,
	.nfound = 5, /* more found than kept */
	.nrefused = 4,
	.nprocs = 3,
};

static void pf_same(const struct ml_criu_preflight *a, const struct ml_criu_preflight *b)
{
	REQUIRE(b && a->n == b->n);
	CHECK_EQ(b->nfound, a->nfound);
	CHECK_EQ(b->nrefused, a->nrefused);
	CHECK_EQ(b->nprocs, a->nprocs);
	for (size_t i = 0; i < a->n; i++) {
		CHECK_EQ(b->f[i].kind, a->f[i].kind);
		CHECK(b->f[i].absorbed == a->f[i].absorbed);
		CHECK_EQ(b->f[i].pid, a->f[i].pid);
		CHECK_STR(b->f[i].comm, a->f[i].comm);
		CHECK_STR(b->f[i].resource, a->f[i].resource);
		CHECK_STR(b->f[i].fix, a->f[i].fix);
	}
}

static void test_checkpoint_preflight_round_trip(void)
{
	struct ml_checkpoint_rec in = { .pid = 42,
					.images_dir = "/i",
					.exit_code = 6,
					.command = "",
					.exclusion = { .skipped = true },
					.profiler = { .note = "not profiled" },
					.tcp = "close",
					.log = "",
					.preflight = &pf_two,
					.check_only = true },
				 back;
	struct ml_json *j;
	char *line = write_twice_ckpt(&in, &back, &j);

	CHECK(strstr(line, "\"preflight\":{\"refused\":4,\"found\":5,\"processes\":3,"
			   "\"findings\":[{\"kind\":\"unix_peer\",\"pid\":42,"
			   "\"comm\":\"redis-server\",") != NULL);
	CHECK(strstr(line, "\"absorbed\":true}]},\"check_only\":true}") != NULL);
	pf_same(&pf_two, back.preflight);
	CHECK(back.check_only);
	ml_fmt_checkpoint_free(&back);
	CHECK(back.preflight == NULL);
	ml_json_free(j);
	free(line);

	/* nothing found, not --check-only */
	struct ml_criu_preflight none = { .nprocs = 1 };

	in.preflight = &none;
	in.check_only = false;
	line = write_twice_ckpt(&in, &back, &j);
	CHECK(strstr(line, "\"preflight\":{\"refused\":0,\"found\":0,\"processes\":1,"
			   "\"findings\":[]},\"check_only\":false}") != NULL);
	pf_same(&none, back.preflight);
	CHECK(!back.check_only);
	ml_fmt_checkpoint_free(&back);
	ml_json_free(j);
	free(line);

	/* none written: none read */
	in.preflight = NULL;
	line = write_twice_ckpt(&in, &back, &j);
	CHECK(!strstr(line, "preflight") && back.preflight == NULL);
	ml_fmt_checkpoint_free(&back);
	ml_json_free(j);
	free(line);
}

/* more findings than a record keeps: the first ones, all counted */
static void test_preflight_read_many(void)
{
	char line[8192];
	struct ml_err err = { 0 };
	struct ml_criu_preflight *p;
	struct ml_json *j;
	int n = snprintf(line, sizeof(line),
			 "{\"refused\":0,\"found\":1,\"processes\":2,\"findings\":[");

	for (int i = 0; i < ML_CRIU_PREFLIGHT_MAX + 3; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      "%s{\"kind\":\"file_lock\",\"pid\":%d,\"comm\":"
			      "\"a-comm-longer-than-sixteen\",\"absorbed\":true}",
			      i ? "," : "", 100 + i);
	snprintf(line + n, sizeof(line) - (size_t)n, "]}");
	j = parse(line);
	REQUIRE_MSG(!ml_fmt_criu_preflight_read(j, &p, &err), "%s", err.msg);
	CHECK_EQ(p->n, ML_CRIU_PREFLIGHT_MAX);
	CHECK_EQ(p->nfound, ML_CRIU_PREFLIGHT_MAX + 3);
	CHECK_EQ(p->f[ML_CRIU_PREFLIGHT_MAX - 1].pid, 100 + ML_CRIU_PREFLIGHT_MAX - 1);
	CHECK(p->f[0].kind == ML_CRIU_FINDING_FILE_LOCK && p->f[0].absorbed);
	CHECK_STR(p->f[0].comm, "a-comm-longer-t"); /* cut to the field */
	CHECK(p->f[0].resource[0] == '\0' && p->f[0].fix[0] == '\0');
	free(p);
	ml_json_free(j);
}

static void test_checkpoint_preflight_malformed(void)
{
#define CK                                                                                         \
	"{\"type\":\"checkpoint\",\"pid\":1,\"action\":\"dump\",\"ok\":true,\"criu\":{},"          \
	"\"hot_ranges\":[],\"exclusion\":{},\"profiler\":{\"processes\":[]}"
#define PF "\"preflight\":{\"refused\":1,\"found\":1,\"processes\":1"
	ckpt_refused(CK ",\"preflight\":[]}", "\"preflight\" is not an object");
	ckpt_refused(CK ",\"preflight\":{}}", "\"refused\"");
	ckpt_refused(CK ",\"preflight\":{\"refused\":1,\"found\":-1}}", "\"found\"");
	ckpt_refused(CK ",\"preflight\":{\"refused\":1,\"found\":1}}", "\"processes\"");
	ckpt_refused(CK "," PF "}}", "\"findings\"");
	ckpt_refused(CK "," PF ",\"findings\":{}}}", "\"findings\"");
	ckpt_refused(CK "," PF ",\"findings\":[1]}}", "finding 0 is not an object");
	ckpt_refused(CK "," PF ",\"findings\":[{\"kind\":\"tcp\",\"pid\":1},{\"pid\":2}]}}",
		     "finding 1: field \"kind\"");
	ckpt_refused(CK "," PF ",\"findings\":[{\"kind\":\"gremlin\",\"pid\":2}]}}",
		     "finding 0: field \"kind\"");
	ckpt_refused(CK "," PF ",\"findings\":[{\"kind\":\"tcp\",\"pid\":\"2\"}]}}",
		     "finding 0: field \"pid\"");
#undef PF
#undef CK
}

static const struct ml_profiler_proc mig_procs[] = {
	{ .pid = 100,
	  .ppid = 1,
	  .comm = "redis-server",
	  .hot_bytes = 8192,
	  .cumulative_dirty_bytes = 1 << 20 },
	{ .pid = 101, .ppid = 100, .comm = "child \"y\"", .exited = true, .hot_bytes = 4096 },
	{ .pid = 102, .ppid = 100, .comm = "bgsave", .failed = true },
};

static void test_migrate_procs_preflight_round_trip(void)
{
	struct ml_migrate_rec in = { .pid = 100,
				     .to = "/dst",
				     .rounds = &mig_rounds[1],
				     .nrounds = 1,
				     .tcp = "refuse",
				     .granularity = "none",
				     .procs = mig_procs,
				     .nprocs = 3,
				     .nprocs_total = 7,
				     .procs_profiled = true,
				     /* the tree's: shared memory once, the 4 past the rows too */
				     .procs_hot_bytes = 4096,
				     .procs_dirty_bytes = 3 << 20,
				     .preflight = &pf_two },
			      back;
	struct ml_json *j;
	char *line = write_twice_mig(&in, &back, &j);

	CHECK(strstr(line, "\"processes\":[{\"pid\":100,\"ppid\":1,\"comm\":\"redis-server\","
			   "\"state\":\"profiled\",\"hot_bytes\":8192,"
			   "\"cumulative_dirty_bytes\":1048576},") != NULL);
	CHECK(strstr(line, "\"processes_total\":{\"count\":7,\"hot_bytes\":4096,"
			   "\"cumulative_dirty_bytes\":3145728}") != NULL);
	REQUIRE(back.nprocs == 3);
	CHECK_EQ(back.nprocs_total, 7);
	CHECK(back.procs_profiled);
	CHECK_EQ(back.procs[1].ppid, 100);
	CHECK_STR(back.procs[1].comm, "child \"y\"");
	CHECK(back.procs[1].exited && !back.procs[1].failed);
	CHECK(back.procs[2].failed && !back.procs[2].exited);
	CHECK_EQ(back.procs[0].hot_bytes, 8192);
	CHECK_EQ(back.procs[0].cumulative_dirty_bytes, 1 << 20);
	CHECK_EQ(back.procs_hot_bytes, 4096);
	CHECK_EQ(back.procs_dirty_bytes, 3 << 20);
	pf_same(&pf_two, back.preflight);
	CHECK(!back.check_only);
	ml_fmt_migrate_free(&back);
	CHECK(back.procs == NULL && back.nprocs == 0 && back.preflight == NULL);
	ml_json_free(j);
	free(line);

	/* listed, not profiled; none of them kept past the count */
	in.procs_profiled = false;
	in.nprocs = 1;
	in.nprocs_total = 0;
	in.preflight = NULL;
	line = write_twice_mig(&in, &back, &j);
	CHECK(strstr(line, "\"state\":\"listed\"") != NULL);
	CHECK(strstr(line, "\"processes_total\":{\"count\":1,\"hot_bytes\":0,"
			   "\"cumulative_dirty_bytes\":0}") != NULL);
	REQUIRE(back.nprocs == 1);
	CHECK(!back.procs_profiled && back.preflight == NULL);
	CHECK(back.procs_hot_bytes == 0 && back.procs_dirty_bytes == 0);
	CHECK_EQ(back.nprocs_total, 1);
	ml_fmt_migrate_free(&back);
	ml_json_free(j);
	free(line);

	/* none written: none read */
	in.nprocs = 0;
	line = write_twice_mig(&in, &back, &j);
	CHECK(!strstr(line, "processes") && back.nprocs == 0 && back.procs == NULL);
	ml_fmt_migrate_free(&back);
	ml_json_free(j);
	free(line);
}

static void test_migrate_procs_preflight_malformed(void)
{
#define MG "{\"type\":\"migrate\",\"pid\":1,\"ok\":true,\"criu\":{},\"rounds\":[]"
#define TOT "\"processes_total\":{\"count\":1}"
	mig_refused(MG ",\"processes\":{}}", "\"processes\" is not an array");
	mig_refused(MG ",\"processes\":[]}", "\"processes_total\"");
	mig_refused(MG ",\"processes\":[],\"processes_total\":[]}", "\"processes_total\"");
	mig_refused(MG ",\"processes\":[],\"processes_total\":{}}", "\"count\"");
	mig_refused(MG ",\"processes\":[{\"pid\":1},2]," TOT "}", "\"processes\" 1");
	mig_refused(MG ",\"preflight\":7}", "\"preflight\" is not an object");
	mig_refused(MG ",\"preflight\":{\"refused\":0,\"found\":0,\"processes\":1,"
		       "\"findings\":[{\"kind\":\"sysv_ipc\"}]}}",
		    "finding 0: field \"pid\"");
#undef TOT
#undef MG
}

/* ---- check ---------------------------------------------------------------- */

static const struct ml_feature check_features[] = {
	{ .group = "memory",
	  .name = "pagemap_scan",
	  .state = ML_FEATURE_OK,
	  .core = true,
	  .detail = "PAGEMAP_SCAN works",
	  .used_by = "writes, snapshot" },
	{ .group = "criu",
	  .name = "criu",
	  .state = ML_FEATURE_MISSING,
	  .detail = "no \"criu\" on PATH",
	  .used_by = "checkpoint, restore",
	  .fix = "install CRIU" },
	{ .group = "process",
	  .name = "pid_ns",
	  .state = ML_FEATURE_INFO,
	  .detail = "",
	  .used_by = "" },
};

static const char check_line[] =
	"{\"type\":\"check\",\"kernel\":\"6.12.1\",\"arch\":\"x86_64\",\"root\":true,"
	"\"core_ok\":false,\"features\":["
	"{\"group\":\"memory\",\"name\":\"pagemap_scan\",\"state\":\"ok\",\"core\":true,"
	"\"detail\":\"PAGEMAP_SCAN works\",\"used_by\":\"writes, snapshot\"},"
	"{\"group\":\"criu\",\"name\":\"criu\",\"state\":\"missing\",\"core\":false,"
	"\"detail\":\"no \\\"criu\\\" on PATH\",\"used_by\":\"checkpoint, restore\","
	"\"fix\":\"install CRIU\"},"
	"{\"group\":\"process\",\"name\":\"pid_ns\",\"state\":\"info\",\"core\":false,"
	"\"detail\":\"\",\"used_by\":\"\"}]}\n";

static void test_check_round_trip(void)
{
	struct ml_check_rec in = { .kernel = "6.12.1",
				   .arch = "x86_64",
				   .root = true,
				   .features = check_features,
				   .nfeatures = 3 },
			    back;
	struct ml_err err = { 0 };
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_check(&o.w, &in);
	out_close(&o);
	CHECK_STR(o.buf, check_line);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_check_read(j, &back, &err), "%s", err.msg);
	CHECK_STR(back.kernel, "6.12.1");
	CHECK_STR(back.arch, "x86_64");
	CHECK(back.root && !back.core_ok);
	REQUIRE(back.nfeatures == 3);
	for (size_t i = 0; i < 3; i++) {
		const struct ml_feature *a = &check_features[i], *b = &back.features[i];

		CHECK_STR(a->group, b->group);
		CHECK_STR(a->name, b->name);
		CHECK_EQ(a->state, b->state);
		CHECK_EQ(a->core, b->core);
		CHECK_STR(a->detail, b->detail);
		CHECK_STR(a->used_by, b->used_by);
		CHECK_EQ(!a->fix, !b->fix);
	}
	CHECK_STR(back.features[1].fix, "install CRIU");
	out_open(&o2);
	ml_fmt_check(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, check_line);
	ml_fmt_check_free(&back);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void test_check_malformed(void)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "{\"type\":\"restore\",\"core_ok\":true,\"features\":[]}", "\"type\"" },
		{ "{\"type\":\"check\",\"features\":[]}", "\"core_ok\"" },
		{ "{\"type\":\"check\",\"core_ok\":true}", "\"features\"" },
		{ "{\"type\":\"check\",\"core_ok\":true,\"features\":[1]}", "feature 0" },
		{ "{\"type\":\"check\",\"core_ok\":true,\"features\":[{\"name\":\"x\","
		  "\"state\":\"ok\"}]}",
		  "feature 0: field \"group\"" },
		{ "{\"type\":\"check\",\"core_ok\":true,\"features\":[{\"group\":\"g\","
		  "\"name\":\"x\",\"state\":\"ok\"},{\"group\":\"g\",\"name\":\"y\","
		  "\"state\":\"gone\"}]}",
		  "feature 1: field \"state\"" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ml_json *j = parse(bad[i].line);
		struct ml_err err = { 0 };
		struct ml_check_rec r;

		CHECK_EQ(ml_fmt_check_read(j, &r, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].why))
			T_FAILMSG("\"%s\" lacks \"%s\"", err.msg, bad[i].why);
		ml_fmt_check_free(&r);
		ml_json_free(j);
	}
}

/* ---- restore -------------------------------------------------------------- */

static const char restore_fmt[] =
	"{\"type\":\"restore\",\"images_dir\":\"/tmp/img\",\"ok\":%s,\"exit_code\":%s,"
	"\"pid\":%s,%s,\"command\":\"criu restore -D /tmp/img -d\","
	"\"criu_exit_status\":%s,\"timed_out\":false,\"duration_ms\":321,"
	"\"repeated\":\"%s\",\"log\":\"/tmp/img/restore.log\"%s}\n";

static void restore_round_trip(const struct ml_restore_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_restore_rec back;
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_restore(&o.w, in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_restore_read(j, &back, &err), "%s", err.msg);
	CHECK_STR(back.images_dir, in->images_dir);
	CHECK_EQ(back.ok, in->ok);
	CHECK_EQ(back.exit_code, in->exit_code);
	CHECK_EQ(back.pid, in->pid);
	caps_same(&back.criu, &in->criu);
	CHECK_STR(back.command, in->command);
	CHECK_EQ(back.criu_exit_status, in->criu_exit_status);
	CHECK_EQ(back.timed_out, in->timed_out);
	CHECK_EQ(back.duration_ms, in->duration_ms);
	CHECK_STR(back.repeated, in->repeated);
	CHECK_STR(back.log, in->log);
	CHECK_EQ(!back.error, !in->error);
	out_open(&o2);
	ml_fmt_restore(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, want);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void test_restore_round_trip(void)
{
	struct ml_restore_rec r = { .images_dir = "/tmp/img",
				    .ok = true,
				    .pid = 4321,
				    .criu = caps_rec,
				    .command = "criu restore -D /tmp/img -d",
				    .duration_ms = 321,
				    .repeated = "--tcp-established",
				    .log = "/tmp/img/restore.log",
				    .hint = "" };
	char want[2048];

	snprintf(want, sizeof(want), restore_fmt, "true", "0", "4321", caps_obj, "0",
		 "--tcp-established", "");
	restore_round_trip(&r, want);
	/* CRIU failed: no pid, its status, the hint and the error written */
	r.ok = false;
	r.exit_code = 1;
	r.pid = 0;
	r.criu_exit_status = 1;
	r.repeated = "";
	r.hint = "pass --tcp-established";
	r.error = "criu restore failed \"x\"";
	snprintf(want, sizeof(want), restore_fmt, "false", "1", "0", caps_obj, "1", "",
		 ",\"hint\":\"pass --tcp-established\","
		 "\"error\":\"criu restore failed \\\"x\\\"\"");
	restore_round_trip(&r, want);
}

static void test_restore_malformed(void)
{
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "{\"type\":\"checkpoint\",\"ok\":true,\"criu\":{}}", "\"type\"" },
		{ "{\"type\":\"restore\",\"ok\":1,\"criu\":{}}", "\"ok\"" },
		{ "{\"type\":\"restore\",\"ok\":true}", "\"criu\"" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ml_json *j = parse(bad[i].line);
		struct ml_err err = { 0 };
		struct ml_restore_rec r;

		CHECK_EQ(ml_fmt_restore_read(j, &r, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].why))
			T_FAILMSG("\"%s\" lacks \"%s\"", err.msg, bad[i].why);
		ml_json_free(j);
	}
}

/* ---- leaks ---------------------------------------------------------------- */

static struct ml_leaks_size_rec leaks_sizes[] = {
	{ .size = 4096, .count = 160, .bytes = 655360, .sampled = 40 },
	{ .size = 24, .count = 3, .bytes = 72, .sampled = 1 },
};
static const char *leaks_lines0[] = { "leaf+0x1d (/usr/bin/leaky)", "main+0x42 (/usr/bin/leaky)" };
static struct ml_leaks_frame_rec leaks_frames0[] = {
	{ .address = 0x401d2d,
	  .function = "leaf",
	  .has_offset = true,
	  .offset = 0x1d,
	  .object = "/usr/bin/leaky",
	  .file = "leaky.c",
	  .line = 12 },
	{ .address = 0x401d2d, .function = "helper", .inlined = true, .object = "/usr/bin/leaky" },
	{ .address = 0x7f00000010, .object = "" },
};
static struct ml_leaks_stack_rec leaks_stacks[] = {
	{ .count = 160,
	  .bytes = 655360,
	  .sampled = 40,
	  .sampled_bytes = 163840,
	  .bytes_stderr = 9000,
	  .stack = leaks_lines0,
	  .nstack = 2,
	  .frames = leaks_frames0,
	  .nframes = 3 },
	{ .count = 3, .bytes = 72, .sampled = 1, .sampled_bytes = 24 }, /* no stack */
};

static const char leaks_line[] =
	"{\"type\":\"leaks\",\"pid\":4242,\"allocator\":\"/usr/lib/libc.so.6\","
	"\"allocator_prefixed\":\"/usr/lib/libjemalloc.so.2\",\"mode\":\"uprobe_multi\","
	"\"stacks_mode\":\"dwarf\",\"mallocs\":1000,\"frees\":800,\"untracked_frees\":2,"
	"\"exit_frees\":3,\"missed_frees\":4,\"failed\":5,\"lost\":6,\"table_full\":true,"
	"\"stale_calls\":7,\"unpaired_returns\":8,\"recursion_misses\":9,\"estimated\":true,"
	"\"sample_bytes\":16384,\"allocation_calls\":1000,\"allocation_call_bytes\":900000,"
	"\"sampled_outstanding\":41,\"sampled_outstanding_bytes\":163864,"
	"\"outstanding_bytes_stderr\":9001,\"outstanding\":163,\"outstanding_bytes\":655432,"
	"\"table_unread\":false,\"stacks_kept\":2,\"max_stacks\":262144,\"stacks_lost\":10,"
	"\"stacks_lost_by_reason\":{\"table_full\":1,\"not_walked\":2,\"hash_collision\":3,"
	"\"dropped\":4},\"outstanding_no_stack\":3,\"outstanding_no_stack_bytes\":72,"
	"\"outstanding_no_stack_by_reason\":{\"table_full\":{\"count\":0,\"bytes\":0},"
	"\"not_walked\":{\"count\":3,\"bytes\":72},\"hash_collision\":{\"count\":0,\"bytes\":0},"
	"\"dropped\":{\"count\":0,\"bytes\":0}},"
	"\"by_size\":[{\"size\":4096,\"count\":160,\"bytes\":655360,\"estimated\":true,"
	"\"sampled\":40},{\"size\":24,\"count\":3,\"bytes\":72,\"estimated\":true,"
	"\"sampled\":1}],"
	"\"by_stack\":[{\"count\":160,\"bytes\":655360,\"estimated\":true,\"sampled\":40,"
	"\"sampled_bytes\":163840,\"bytes_stderr\":9000,"
	"\"stack\":[\"leaf+0x1d (/usr/bin/leaky)\",\"main+0x42 (/usr/bin/leaky)\"],"
	"\"frames\":[{\"address\":\"0x401d2d\",\"function\":\"leaf\",\"offset\":29,"
	"\"inlined\":false,\"object\":\"/usr/bin/leaky\",\"file\":\"leaky.c\",\"line\":12},"
	"{\"address\":\"0x401d2d\",\"function\":\"helper\",\"inlined\":true,"
	"\"object\":\"/usr/bin/leaky\"},{\"address\":\"0x7f00000010\",\"inlined\":false}]},"
	"{\"count\":3,\"bytes\":72,\"estimated\":true,\"sampled\":1,\"sampled_bytes\":24,"
	"\"bytes_stderr\":0,\"stack\":[],\"frames\":[]}],"
	"\"stack_depth\":{\"stacks\":1,\"mean\":2.5,\"max\":3},"
	"\"unwind\":{\"stack_size\":8192,\"stacks\":50,\"us_per_stack\":1.25,"
	"\"frames_mean\":6.5,\"frames_max\":20,\"max_frames\":127,\"complete\":40,\"cut\":1,"
	"\"out_of_copy\":5,\"no_cfi\":4,\"not_unwound_fully\":9,\"table_full\":2}}\n";

static void leaks_fill(struct ml_leaks_rec *r)
{
	*r = (struct ml_leaks_rec){
		.pid = 4242,
		.allocator = "/usr/lib/libc.so.6",
		.allocator_prefixed = "/usr/lib/libjemalloc.so.2",
		.mode = "uprobe_multi",
		.stacks_mode = "dwarf",
		.mallocs = 1000,
		.frees = 800,
		.untracked_frees = 2,
		.exit_frees = 3,
		.missed_frees = 4,
		.failed = 5,
		.lost = 6,
		.stale_calls = 7,
		.unpaired_returns = 8,
		.recursion_misses = 9,
		.sample_bytes = 16384,
		.allocation_calls = 1000,
		.allocation_call_bytes = 900000,
		.sampled_outstanding = 41,
		.sampled_outstanding_bytes = 163864,
		.outstanding_bytes_stderr = 9001,
		.outstanding = 163,
		.outstanding_bytes = 655432,
		.stacks_kept = 2,
		.max_stacks = 262144,
		.stacks_lost = 10,
		.stacks_lost_by_reason = { 1, 2, 3, 4 },
		.outstanding_no_stack = 3,
		.outstanding_no_stack_bytes = 72,
		.outstanding_no_stack_by_reason = { [ML_LEAKS_REASON_NOT_WALKED] = { 3, 72 } },
		.sizes = leaks_sizes,
		.nsizes = 2,
		.stacks = leaks_stacks,
		.nstacks = 2,
		.has_depth = true,
		.depth_stacks = 1,
		.depth_mean = 2.5,
		.depth_max = 3,
		.has_unwind = true,
		.unwind = { .stack_size = 8192,
			    .stacks = 50,
			    .us_per_stack = 1.25,
			    .frames_mean = 6.5,
			    .frames_max = 20,
			    .max_frames = 127,
			    .complete = 40,
			    .cut = 1,
			    .out_of_copy = 5,
			    .no_cfi = 4,
			    .not_unwound_fully = 9,
			    .table_full = 2 },
	};
}

static void leaks_same(const struct ml_leaks_rec *a, const struct ml_leaks_rec *b)
{
	CHECK_EQ(a->interval, b->interval);
	CHECK_EQ(a->elapsed_ms, b->elapsed_ms);
	CHECK_EQ(a->last, b->last);
	CHECK_EQ(a->interval_mallocs, b->interval_mallocs);
	CHECK_EQ(a->interval_frees, b->interval_frees);
	CHECK_EQ(a->pid, b->pid);
	CHECK_STR(a->allocator, b->allocator);
	CHECK_STR(a->mode, b->mode);
	CHECK_STR(a->stacks_mode, b->stacks_mode);
	CHECK_EQ(a->mallocs, b->mallocs);
	CHECK_EQ(a->frees, b->frees);
	CHECK_EQ(a->lost, b->lost);
	CHECK_EQ(a->sample_bytes, b->sample_bytes);
	CHECK_EQ(a->outstanding_bytes_stderr, b->outstanding_bytes_stderr);
	CHECK_EQ(a->outstanding, b->outstanding);
	CHECK_EQ(a->outstanding_bytes, b->outstanding_bytes);
	CHECK_EQ(a->stacks_kept, b->stacks_kept);
	CHECK_EQ(a->max_stacks, b->max_stacks);
	CHECK(!memcmp(a->stacks_lost_by_reason, b->stacks_lost_by_reason,
		      sizeof(a->stacks_lost_by_reason)));
	CHECK(!memcmp(a->outstanding_no_stack_by_reason, b->outstanding_no_stack_by_reason,
		      sizeof(a->outstanding_no_stack_by_reason)));
	REQUIRE(a->nsizes == b->nsizes);
	for (size_t i = 0; i < a->nsizes; i++)
		CHECK(!memcmp(&a->sizes[i], &b->sizes[i], sizeof(a->sizes[i])));
	REQUIRE(a->nstacks == b->nstacks);
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct ml_leaks_stack_rec *s = &a->stacks[i], *t = &b->stacks[i];

		CHECK_EQ(s->count, t->count);
		CHECK_EQ(s->bytes, t->bytes);
		CHECK_EQ(s->sampled_bytes, t->sampled_bytes);
		REQUIRE(s->nstack == t->nstack && s->nframes == t->nframes);
		for (size_t k = 0; k < s->nstack; k++)
			CHECK_STR(s->stack[k], t->stack[k]);
		for (size_t k = 0; k < s->nframes; k++) {
			CHECK_EQ(s->frames[k].address, t->frames[k].address);
			CHECK_EQ(!s->frames[k].function, !t->frames[k].function);
			CHECK_EQ(s->frames[k].offset, t->frames[k].offset);
			CHECK_EQ(s->frames[k].inlined, t->frames[k].inlined);
			CHECK_EQ(s->frames[k].line, t->frames[k].line);
		}
	}
	CHECK_EQ(a->has_depth, b->has_depth);
	CHECK_EQ(a->depth_max, b->depth_max);
	CHECK(a->depth_mean == b->depth_mean);
	CHECK_EQ(a->has_unwind, b->has_unwind);
	CHECK(a->unwind.us_per_stack == b->unwind.us_per_stack);
	CHECK_EQ(a->unwind.no_cfi, b->unwind.no_cfi);
	CHECK_EQ(a->unwind.table_full, b->unwind.table_full);
}

/* Write, compare with the exact line, read back, write again: the same line. */
static void leaks_round_trip(const struct ml_leaks_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct ml_leaks_rec back;
	struct out o, o2;
	struct ml_json *j;

	out_open(&o);
	ml_fmt_leaks(&o.w, in);
	out_close(&o);
	CHECK_STR(o.buf, want);
	j = parse(o.buf);
	REQUIRE_MSG(!ml_fmt_leaks_read(j, &back, &err), "%s", err.msg);
	leaks_same(in, &back);
	out_open(&o2);
	ml_fmt_leaks(&o2.w, &back);
	out_close(&o2);
	CHECK_STR(o2.buf, want);
	ml_fmt_leaks_free(&back);
	ml_json_free(j);
	free(o.buf);
	free(o2.buf);
}

static void test_leaks_round_trip(void)
{
	struct ml_leaks_rec r;

	leaks_fill(&r);
	leaks_round_trip(&r, leaks_line);
}

/* -i with --no-stacks, every call traced: no sampling fields, no stack_depth */
static void test_leaks_interval_round_trip(void)
{
	struct ml_leaks_size_rec size = { .size = 64, .count = 2, .bytes = 128 };
	struct ml_leaks_rec r = { .interval = true,
				  .elapsed_ms = 1000,
				  .last = true,
				  .interval_mallocs = 5,
				  .interval_frees = 3,
				  .pid = 7,
				  .allocator = "/lib/libc.so.6",
				  .mode = "uprobe",
				  .stacks_mode = "none",
				  .mallocs = 5,
				  .frees = 3,
				  .outstanding = 2,
				  .outstanding_bytes = 128,
				  .sizes = &size,
				  .nsizes = 1 };

	leaks_round_trip(
		&r,
		"{\"type\":\"leaks_interval\",\"elapsed_ms\":1000,\"last\":true,"
		"\"interval_mallocs\":5,\"interval_frees\":3,\"pid\":7,\"allocator\":"
		"\"/lib/libc.so.6\",\"mode\":\"uprobe\",\"stacks_mode\":\"none\",\"mallocs\":5,"
		"\"frees\":3,\"untracked_frees\":0,\"exit_frees\":0,\"missed_frees\":0,"
		"\"failed\":0,\"lost\":0,\"table_full\":false,\"stale_calls\":0,"
		"\"unpaired_returns\":0,\"recursion_misses\":0,\"estimated\":false,"
		"\"outstanding\":2,\"outstanding_bytes\":128,\"table_unread\":false,"
		"\"stacks_kept\":0,\"max_stacks\":0,\"stacks_lost\":0,\"stacks_lost_by_reason\":"
		"{\"table_full\":0,\"not_walked\":0,\"hash_collision\":0,\"dropped\":0},"
		"\"outstanding_no_stack\":0,\"outstanding_no_stack_bytes\":0,"
		"\"outstanding_no_stack_by_reason\":{\"table_full\":{\"count\":0,\"bytes\":0},"
		"\"not_walked\":{\"count\":0,\"bytes\":0},\"hash_collision\":{\"count\":0,"
		"\"bytes\":0},\"dropped\":{\"count\":0,\"bytes\":0}},"
		"\"by_size\":[{\"size\":64,\"count\":2,\"bytes\":128}],\"by_stack\":[]}\n");
}

/* older lines: three reasons, no frames; an interval without its tables */
static void test_leaks_read_lenient(void)
{
	struct ml_json *j = parse(
		"{\"type\":\"leaks\",\"pid\":5,\"outstanding_bytes\":10,"
		"\"stacks_lost_by_reason\":{\"table_full\":1,\"not_walked\":2,\"hash_collision\":3}"
		","
		"\"by_size\":[],\"by_stack\":[{\"count\":1,\"bytes\":10,\"stack\":[\"main\"]}]}");
	struct ml_err err = { 0 };
	struct ml_leaks_rec r;

	REQUIRE_MSG(!ml_fmt_leaks_read(j, &r, &err), "%s", err.msg);
	CHECK_EQ(r.pid, 5);
	CHECK_EQ(r.outstanding_bytes, 10);
	CHECK_EQ(r.stacks_lost_by_reason[ML_LEAKS_REASON_HASH_COLLISION], 3);
	CHECK_EQ(r.stacks_lost_by_reason[ML_LEAKS_REASON_DROPPED], 0);
	REQUIRE(r.nstacks == 1);
	CHECK_EQ(r.stacks[0].nframes, 0);
	CHECK_STR(r.stacks[0].stack[0], "main");
	CHECK(!r.has_depth && !r.has_unwind);
	ml_fmt_leaks_free(&r);
	ml_json_free(j);
	j = parse("{\"type\":\"leaks_interval\",\"elapsed_ms\":500,\"outstanding\":4}");
	REQUIRE_MSG(!ml_fmt_leaks_read(j, &r, &err), "%s", err.msg);
	CHECK(r.interval && r.elapsed_ms == 500 && r.outstanding == 4 && !r.nsizes);
	ml_fmt_leaks_free(&r);
	ml_json_free(j);
}

static void test_leaks_malformed(void)
{
#define LK "{\"type\":\"leaks\",\"outstanding_bytes\":1"
	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "{\"type\":\"slab\",\"outstanding_bytes\":1}", "\"type\"" },
		{ "{\"type\":\"leaks_interval\"}",
		  "field \"elapsed_ms\" is missing or not a number" },
		{ "{\"type\":\"leaks\",\"outstanding_bytes\":-1}",
		  "field \"outstanding_bytes\" is missing or not a count" },
		{ LK "}", "field \"by_size\" is missing or not an array" },
		{ LK ",\"by_size\":[]}", "field \"by_stack\" is missing or not an array" },
		{ LK ",\"by_size\":[{\"size\":1,\"count\":1}],\"by_stack\":[]}",
		  "field \"bytes\" is missing or not a count" },
		{ LK ",\"by_size\":[],\"by_stack\":[{\"count\":1,\"bytes\":1}]}",
		  "field \"stack\" is missing or not an array" },
		{ LK ",\"by_size\":[],\"by_stack\":[{\"count\":1,\"bytes\":1,\"stack\":[1]}]}",
		  "\"stack\" holds something other than strings" },
		{ LK ",\"by_size\":[],\"by_stack\":[{\"count\":1,\"bytes\":1,\"stack\":[],"
		     "\"frames\":[{\"address\":1}]}]}",
		  "\"frames\" 0" },
		{ "{\"type\":\"leaks_interval\",\"elapsed_ms\":1,\"by_size\":[]}",
		  "field \"by_stack\"" },
	};
#undef LK

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ml_json *j = parse(bad[i].line);
		struct ml_err err = { 0 };
		struct ml_leaks_rec r;

		CHECK_EQ(ml_fmt_leaks_read(j, &r, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].why))
			T_FAILMSG("\"%s\" lacks \"%s\"", err.msg, bad[i].why);
		ml_fmt_leaks_free(&r);
		ml_json_free(j);
	}
}

int main(void)
{
	RUN(test_faults_round_trip);
	RUN(test_faults_nulls);
	RUN(test_faults_interval_round_trip);
	RUN(test_faults_read_lenient);
	RUN(test_faults_malformed);
	RUN(test_migrate_model_round_trip);
	RUN(test_migrate_model_read_lenient);
	RUN(test_migrate_model_malformed);
	RUN(test_slab_round_trip);
	RUN(test_slab_interval_round_trip);
	RUN(test_slab_malformed);
	RUN(test_oom_kill_round_trip);
	RUN(test_oom_count_round_trip);
	RUN(test_oom_malformed);
	RUN(test_oom_kill_lenient);
	RUN(test_criu_caps_of);
	RUN(test_checkpoint_round_trip);
	RUN(test_checkpoint_ok_round_trip);
	RUN(test_checkpoint_malformed);
	RUN(test_migrate_round_trip);
	RUN(test_migrate_plain_round_trip);
	RUN(test_migrate_malformed);
	RUN(test_checkpoint_preflight_round_trip);
	RUN(test_preflight_read_many);
	RUN(test_checkpoint_preflight_malformed);
	RUN(test_migrate_procs_preflight_round_trip);
	RUN(test_migrate_procs_preflight_malformed);
	RUN(test_check_round_trip);
	RUN(test_check_malformed);
	RUN(test_restore_round_trip);
	RUN(test_restore_malformed);
	RUN(test_leaks_round_trip);
	RUN(test_leaks_interval_round_trip);
	RUN(test_leaks_read_lenient);
	RUN(test_leaks_malformed);
	return T_DONE();
}
