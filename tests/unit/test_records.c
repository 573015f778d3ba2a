// SPDX-License-Identifier: MIT
/*
 * The tracers' and the models' JSON Lines records of lib/format: each
 * record written to the exact line the commands print, read back to the
 * same record, and malformed lines refused with the field they lack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/format_faults.h"
#include "memlens/format_migrate_model.h"
#include "memlens/format_oom.h"
#include "memlens/format_slab.h"

/* What a writer wrote: the line, and the line parsed. */
struct out {
	char *buf;
	size_t len;
	FILE *f;
	struct jw w;
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

static struct json *parse(const char *line)
{
	struct ml_err err = { 0 };
	struct json *j = NULL;

	if (ml_json_parse(line, strlen(line), &j, &err))
		T_FAILMSG("%s in '%s'", err.msg, line);
	return j;
}

/* ---- faults ------------------------------------------------------------- */

static struct faults_row_rec fault_rows[] = {
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

static void faults_fill(struct faults_rec *r)
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
	r->kernel = (struct faults_pair_rec){ 21600, 2 };
	r->not_seen = (struct faults_pair_rec){ 90, 0 };
	r->has_before = true;
	r->before = (struct faults_pair_rec){ 34, 1 };
}

static void faults_same(const struct faults_rec *a, const struct faults_rec *b)
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
static void faults_round_trip(const struct faults_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct faults_rec back;
	struct out o, o2;
	struct json *j;

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
	struct faults_rec r;

	faults_fill(&r);
	faults_round_trip(&r, faults_line);
}

/* system-wide in tracepoint mode: no pid, no retries, the kernel's counts not known */
static void test_faults_nulls(void)
{
	struct faults_row_rec row = { .comm = "cc1", .pid = -1, .minor = 7 };
	struct faults_rec r = {
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
	struct faults_rec r;

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
	struct json *j = parse("{\"type\":\"faults\",\"rows\":[{\"minor\":5,\"major\":null,"
			       "\"pid\":1.5e300},{}],\"minor_hist_us\":[1,2.0],"
			       "\"major_hist_us\":[]}");
	struct ml_err err = { 0 };
	struct faults_rec r;

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
	struct json *j = parse(line);
	struct ml_err err = { 0 };
	struct faults_rec r;

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

static struct migrate_model_round_rec none_rounds[] = { { 1, 67108864 }, { 2, 62914560 } },
				      hot_rounds[] = { { 1, 2097152 } };

static struct migrate_model_policy_rec policies[] = {
	{ .name = "none",
	  .rounds = none_rounds,
	  .nrounds = 2,
	  .total_bytes = 130023424,
	  .final_round_bytes = 62914560,
	  .downtime_ms = 475.125,
	  .postcopy_downtime_ms = 250,
	  .postcopy_last_page_ms = 475.125 },
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
	"\"freeze_overhead_s\":0.25,\"policies\":["
	"{\"name\":\"none\",\"rounds\":[{\"round\":1,\"bytes\":67108864},"
	"{\"round\":2,\"bytes\":62914560}],\"total_bytes\":130023424,"
	"\"final_round_bytes\":62914560,\"downtime_ms\":475.125,"
	"\"postcopy_downtime_ms\":250,\"postcopy_last_page_ms\":475.125},"
	"{\"name\":\"hot-vma\",\"rounds\":[{\"round\":1,\"bytes\":2097152}],"
	"\"total_bytes\":2097152,\"final_round_bytes\":2097152,\"downtime_ms\":0.1,"
	"\"postcopy_downtime_ms\":0,\"postcopy_last_page_ms\":0.1},"
	"{\"name\":\"hot-range\",\"rounds\":[],\"total_bytes\":0,\"final_round_bytes\":0,"
	"\"downtime_ms\":0,\"postcopy_downtime_ms\":0,\"postcopy_last_page_ms\":0}]}\n";

static void mm_same(const struct migrate_model_rec *a, const struct migrate_model_rec *b)
{
	CHECK(a->bandwidth_mbps == b->bandwidth_mbps);
	CHECK(a->round_interval_s == b->round_interval_s);
	CHECK(a->freeze_overhead_s == b->freeze_overhead_s);
	REQUIRE(a->npol == b->npol);
	for (size_t i = 0; i < a->npol; i++) {
		const struct migrate_model_policy_rec *p = &a->pol[i], *q = &b->pol[i];

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
	}
}

static void test_migrate_model_round_trip(void)
{
	struct migrate_model_rec in = { .bandwidth_mbps = 128,
					.round_interval_s = 0.5,
					.freeze_overhead_s = 0.25,
					.pol = policies,
					.npol = 3 },
				 back;
	struct ml_err err = { 0 };
	struct out o, o2;
	struct json *j;

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
	struct json *j = parse("{\"type\":\"migrate_model\",\"policies\":[{\"rounds\":"
			       "[{\"bytes\":4096}],\"downtime_ms\":null}]}");
	struct ml_err err = { 0 };
	struct migrate_model_rec r;

	REQUIRE_MSG(!ml_fmt_migrate_model_read(j, &r, &err), "%s", err.msg);
	REQUIRE(r.npol == 1 && r.pol[0].nrounds == 1);
	CHECK_STR(r.pol[0].name, "?");
	CHECK_EQ(r.pol[0].rounds[0].bytes, 4096);
	CHECK_EQ(r.pol[0].rounds[0].round, 0);
	CHECK(r.pol[0].downtime_ms == 0 && r.bandwidth_mbps == 0 && r.freeze_overhead_s == 0);
	ml_fmt_migrate_model_free(&r);
	ml_json_free(j);
}

static void mm_refused(const char *line, const char *why)
{
	struct json *j = parse(line);
	struct ml_err err = { 0 };
	struct migrate_model_rec r;

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

static struct slab_row_rec slab_rows[] = {
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
static struct slab_only_rec slab_only[] = { { "buffer_head", 7, 39 } };
static struct slab_merged_rec slab_merged[] = { { "kmalloc-64", 3, "a b \"c\"" } };

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

static void slab_same(const struct slab_rec *a, const struct slab_rec *b)
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

static void slab_round_trip(const struct slab_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct slab_rec back;
	struct out o, o2;
	struct json *j;

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
	struct slab_rec r = { .copies = 2,
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
	struct slab_row_rec row = { .cache = "dentry", .allocs = 5, .net = 5 };
	struct slab_rec r = { .interval = true,
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
	struct json *j = parse(line);
	struct ml_err err = { 0 };
	struct slab_rec r;

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
	struct oom_kill_rec in = { .time_ms = 1796498186935ULL,
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
	struct json *j;

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

static void oom_count_round_trip(const struct oom_count_rec *in, const char *want)
{
	struct ml_err err = { 0 };
	struct oom_count_rec back;
	struct out o;
	struct json *j;

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
		&(struct oom_count_rec){ .kills = 3, .lost = 1, .recursion_misses = 2 },
		"{\"type\":\"oom_summary\",\"kills\":3,\"lost\":1,"
		"\"recursion_misses\":2}\n");
	oom_count_round_trip(
		&(struct oom_count_rec){
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
		struct json *j = parse(bad[i].line);
		struct ml_err err = { 0 };
		struct oom_count_rec c;
		struct oom_kill_rec k;
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
	struct json *j = parse("{\"type\":\"oom_kill\",\"time_ms\":5,\"victim_pid\":7}");
	struct ml_err err = { 0 };
	struct oom_kill_rec r;
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
	return T_DONE();
}
