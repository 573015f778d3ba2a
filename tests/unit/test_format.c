// SPDX-License-Identifier: MIT
/*
 * The JSON Lines schemas of lib/format: each written from the library's
 * structs and read back (exact values), the bytes of a writes interval
 * line, the stopped_because tokens (and the sentences older files hold).
 */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comma_locale.h"
#include "harness.h"
#include "memlens/format_snapshot.h"
#include "memlens/format_writes.h"
#include "memlens/report.h"

/* What a writer wrote, parsed back: one line, one object. */
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

static struct ml_json *out_parse(struct out *o)
{
	struct ml_err err = { 0 };
	struct ml_json *j = NULL;

	fclose(o->f);
	o->f = NULL;
	if (!o->len || o->buf[o->len - 1] != '\n' || memchr(o->buf, '\n', o->len - 1))
		T_FAILMSG("not one line: '%s'", o->buf);
	if (ml_json_parse(o->buf, o->len, &j, &err))
		T_FAILMSG("%s in '%s'", err.msg, o->buf);
	return j;
}

static struct ml_profiler_region regions[] = {
	{ .start = 0x7f0000000000ULL,
	  .end = 0x7f0004000000ULL,
	  .kind = ML_VMA_HEAP,
	  .total_pages = 16384,
	  .dirty_pages = 16384,
	  .written_ratio = 1,
	  .consecutive_hot = 3,
	  .hot = true },
	{ .start = 0x555555554000ULL,
	  .end = 0x555555558000ULL,
	  .kind = ML_VMA_BSS,
	  .total_pages = 4,
	  .dirty_pages = 1,
	  .written_ratio = 0.25,
	  .consecutive_hot = 0,
	  .hot = false },
};

static struct ml_range written[] = {
	{ 0x7f0000000000ULL, 0x7f0000001000ULL },
	{ 0x7f0000003000ULL, 0x7f0000007000ULL },
};

/* two runs of 1 and 4 pages merged over a 2-page gap, and one of 2 pages */
static struct ml_hotrange_range hot[] = {
	{ 0x7f0000000000ULL, 0x7f0000007000ULL, 5, 0 },
	{ 0x7f0000100000ULL, 0x7f0000102000ULL, 2, 0 },
};

static const struct ml_profiler_sample sample = {
	.seq = 3,
	.t_ms = 3001,
	.interval_s = 1.0005,
	.dirty = { .dirty_pages = 16385,
		   .dirty_bytes = 67112960,
		   .dirty_rate_pages_per_sec = 16376.8,
		   .cumulative_dirty_bytes = 9007199254740992LL,
		   .avg_dirty_rate = 33554432.25,
		   .timestamp_ms = 1795997516441LL },
	.total_vmas = 25,
	.tracked_vmas = 2,
	.hot_vmas = 1,
	.regions = regions,
	.nregions = 2,
	.written = written,
	.nwritten = 2,
	.hot = { .r = hot,
		 .n = 2,
		 .unmerged = 3,
		 .hot_bytes = 7 * 4096,
		 .merge_cost_bytes = 2 * 4096 },
	.tick_ns = 1234567,
};

static void check_hot(const struct ml_writes_hot_rec *h, const struct ml_hotrange_set *want)
{
	CHECK(h->present);
	CHECK_EQ(h->n, want->n);
	for (size_t i = 0; i < h->n && i < want->n; i++) {
		CHECK_EQ(h->r[i].start, want->r[i].start);
		CHECK_EQ(h->r[i].end, want->r[i].end);
		CHECK_EQ(h->r[i].hot_pages, want->r[i].hot_pages);
	}
	CHECK(h->unmerged == (double)want->unmerged);
	CHECK(h->hot_bytes == (double)want->hot_bytes);
	CHECK(h->merge_cost_bytes == (double)want->merge_cost_bytes);
}

static void check_region(const struct ml_writes_region_rec *r, const struct ml_profiler_region *p)
{
	CHECK_EQ(r->start, p->start);
	CHECK_EQ(r->end, p->end);
	CHECK_STR(r->kind, ml_vma_kind_name(p->kind));
	CHECK(r->total_pages == (double)p->total_pages);
	CHECK(r->dirty_pages == (double)p->dirty_pages);
	CHECK(r->written_ratio == p->written_ratio);
	CHECK(r->consecutive_hot == p->consecutive_hot);
	CHECK(r->has_hot && r->hot == p->hot);
}

static void check_dirty(const struct ml_writes_dirty_rec *r, const struct ml_profiler_dirty *d)
{
	CHECK(r->dirty_pages == (double)d->dirty_pages);
	CHECK(r->dirty_bytes == (double)d->dirty_bytes);
	CHECK(r->rate_pps == d->dirty_rate_pages_per_sec);
	CHECK(r->cumulative_dirty_bytes == (double)d->cumulative_dirty_bytes);
	CHECK(r->avg_dirty_rate == d->avg_dirty_rate);
	CHECK(r->timestamp_ms == (double)d->timestamp_ms);
}

static void test_writes_interval_round_trip(void)
{
	struct ml_writes_interval_rec rec;
	struct ml_err err = { 0 };
	struct ml_json *j;
	struct out o;

	for (int with = 0; with < 2; with++) {
		out_open(&o);
		ml_fmt_writes_interval(&o.w, 4242, &sample, with);
		j = out_parse(&o);
		REQUIRE(j);
		CHECK_STR(ml_json_get_str(j, "type"), "interval");
		REQUIRE_MSG(!ml_fmt_writes_interval_read(j, &rec, &err), "%s", err.msg);
		CHECK(rec.pid == 4242);
		CHECK(rec.seq == 3);
		CHECK(rec.t_ms == 3001 && rec.t_ms_is_int && rec.t_ms_int == 3001);
		CHECK(rec.interval_s == 1.0005);
		CHECK(rec.total_vmas == 25 && rec.tracked_vmas == 2 && rec.hot_vmas == 1);
		CHECK(rec.tick_us == 1234);
		check_dirty(&rec.dirty, &sample.dirty);
		CHECK_EQ(rec.nregions, 2);
		for (size_t i = 0; i < rec.nregions && i < 2; i++)
			check_region(&rec.regions[i], &regions[i]);
		CHECK_EQ(rec.has_written, (bool)with);
		CHECK_EQ(rec.nwritten, with ? 2 : 0);
		for (size_t i = 0; i < rec.nwritten && i < 2; i++) {
			CHECK_EQ(rec.written[i].start, written[i].start);
			CHECK_EQ(rec.written[i].end, written[i].end);
		}
		check_hot(&rec.hot, &sample.hot);
		ml_fmt_writes_interval_free(&rec);
		ml_json_free(j);
		free(o.buf);
	}
}

/* The bytes of an interval line (what earlier versions wrote, field for field). */
static void test_writes_interval_bytes(void)
{
	struct ml_profiler_sample s = sample;
	struct out o;

	s.nregions = 1;
	s.nwritten = 1;
	s.hot.n = 1;
	out_open(&o);
	ml_fmt_writes_interval(&o.w, 42, &s, true);
	fclose(o.f);
	CHECK_STR(o.buf,
		  "{\"type\":\"interval\",\"pid\":42,\"seq\":3,\"t_ms\":3001,\"interval_s\":1.0005,"
		  "\"total_vmas\":25,\"tracked_vmas\":2,\"hot_vmas\":1,\"tick_us\":1234,"
		  "\"dirty\":{\"dirty_pages\":16385,\"dirty_bytes\":67112960,"
		  "\"dirty_rate_pages_per_sec\":16376.8,\"cumulative_dirty_bytes\":"
		  "9007199254740992,\"avg_dirty_rate\":33554432.25,\"timestamp_ms\":"
		  "1795997516441},\"regions\":[{\"start_addr\":\"0x7f0000000000\",\"end_addr\":"
		  "\"0x7f0004000000\",\"kind\":\"heap\",\"total_pages\":16384,\"dirty_pages\":"
		  "16384,\"written_ratio\":1,\"consecutive_hot\":3,\"hot\":true}],"
		  "\"hot_ranges\":{\"count\":1,\"unmerged\":3,\"hot_bytes\":28672,"
		  "\"merge_cost_bytes\":8192,\"ranges\":[{\"start_addr\":\"0x7f0000000000\","
		  "\"end_addr\":\"0x7f0000007000\",\"pages\":7,\"hot_pages\":5}]},\"written\":"
		  "[[\"0x7f0000000000\",\"0x7f0000001000\"]]}\n");
	free(o.buf);
}

/* A sampled interval: its fraction and cost, the estimates marked; the rest as ever. */
static void test_writes_interval_sampled(void)
{
	struct ml_profiler_sample s = sample;
	struct ml_profiler_region r = regions[0];
	struct ml_writes_interval_rec rec;
	struct ml_err err = { 0 };
	struct ml_json *j;
	struct out o;

	r.estimated = true;
	r.sampled_pages = 1638;
	r.sampled_dirty = 1638;
	r.ratio_stderr = 0;
	s.regions = &r;
	s.nregions = 1;
	s.nwritten = 0;
	s.hot.n = 0;
	s.hot.estimated = true;
	s.sampling = (struct ml_profiler_sampling){ .on = true,
						    .k = 10,
						    .faults = 1638,
						    .cost = 0.0327,
						    .next_k = 20,
						    .next_interval_ms = 1000,
						    .fault_ns = 720,
						    .fault_ns_measured = true };
	out_open(&o);
	ml_fmt_writes_interval(&o.w, 42, &s, false);
	j = out_parse(&o);
	REQUIRE(j);
	CHECK(strstr(o.buf, "\"sampling\":{\"fraction\":0.1,\"k\":10,\"faults\":1638,"
			    "\"overhead_pct\":3.27,\"target_minflt\":0,\"next_fraction\":0.05,"
			    "\"next_interval_ms\":1000,\"fault_ns\":720,"
			    "\"fault_ns_measured\":true}") != NULL);
	CHECK(strstr(o.buf, "\"hot\":true,\"estimated\":true,\"sampled_pages\":1638,"
			    "\"sampled_dirty_pages\":1638,\"ratio_stderr\":0}") != NULL);
	CHECK(strstr(o.buf, "\"hot_ranges\":{\"estimated\":true,\"count\":0") != NULL);
	/* readers of exact intervals read it as before */
	REQUIRE_MSG(!ml_fmt_writes_interval_read(j, &rec, &err), "%s", err.msg);
	CHECK_EQ(rec.nregions, 1);
	check_region(&rec.regions[0], &r);
	ml_fmt_writes_interval_free(&rec);
	ml_json_free(j);
	free(o.buf);
}

static void test_writes_summary_round_trip(void)
{
	struct ml_attach_stats st = { .stopped_ns = 1250000,
				      .syscalls = 17,
				      .threads_held = 4,
				      .in_nonrestartable = 1,
				      .restarted = 2 };
	struct ml_writes_summary sum = {
		.pid = 4242, .intervals = 7, .why = ML_STOP_DURATION, .attach = &st, .last = &sample
	};
	struct ml_writes_summary_rec rec;
	struct ml_err err = { 0 };
	struct ml_json *j;
	struct out o;

	out_open(&o);
	ml_fmt_writes_summary(&o.w, &sum);
	j = out_parse(&o);
	REQUIRE(j);
	CHECK(strstr(o.buf, "\"stopped_because\":\"duration\",") != NULL);
	REQUIRE_MSG(!ml_fmt_writes_summary_read(j, &rec, &err), "%s", err.msg);
	CHECK(rec.pid == 4242 && rec.intervals == 7);
	CHECK(rec.total_vmas == 25 && rec.tracked_vmas == 2 && rec.hot_vmas == 1);
	CHECK_EQ(rec.why, ML_STOP_DURATION);
	CHECK_STR(rec.why_word, "duration");
	CHECK(rec.has_attach);
	CHECK(rec.attach.stopped_ms == 1.25 && rec.attach.threads_held == 4);
	CHECK(rec.attach.in_nonrestartable == 1 && rec.attach.restarted == 2);
	CHECK(rec.attach.syscalls == 17);
	CHECK_EQ(rec.nregions, 1); /* the hot ones */
	if (rec.nregions == 1)
		check_region(&rec.regions[0], &regions[0]);
	check_dirty(&rec.dirty, &sample.dirty);
	check_hot(&rec.hot, &sample.hot);
	ml_fmt_writes_summary_free(&rec);
	ml_json_free(j);
	free(o.buf);

	/* no interval yet, no attach: zeros */
	sum = (struct ml_writes_summary){ .pid = 7, .why = ML_STOP_SIGNAL };
	out_open(&o);
	ml_fmt_writes_summary(&o.w, &sum);
	j = out_parse(&o);
	REQUIRE(j);
	REQUIRE_MSG(!ml_fmt_writes_summary_read(j, &rec, &err), "%s", err.msg);
	CHECK(rec.pid == 7 && rec.intervals == 0 && rec.hot_vmas == 0 && !rec.has_attach);
	CHECK_EQ(rec.why, ML_STOP_SIGNAL);
	CHECK_EQ(rec.nregions, 0);
	CHECK(rec.hot.present && rec.hot.n == 0);
	CHECK(rec.dirty.cumulative_dirty_bytes == 0 && rec.dirty.timestamp_ms == 0);
	CHECK(strstr(o.buf, "sampling_error") == NULL); /* nothing over the note's threshold */
	ml_fmt_writes_summary_free(&rec);
	ml_json_free(j);
	free(o.buf);

	/* a sampled run whose stated errors were large: the note, and it still reads */
	sum = (struct ml_writes_summary){
		.pid = 7, .why = ML_STOP_DURATION, .ratio_stderr_max = 0.25, .ratio_stderr_over = 3
	};
	out_open(&o);
	ml_fmt_writes_summary(&o.w, &sum);
	j = out_parse(&o);
	REQUIRE(j);
	CHECK(strstr(o.buf,
		     "\"sampling_error\":{\"ratio_stderr_max\":0.25,"
		     "\"ratio_stderr_note_above\":0.05,\"intervals_over\":3,\"note\":\"") != NULL);
	REQUIRE_MSG(!ml_fmt_writes_summary_read(j, &rec, &err), "%s", err.msg);
	CHECK(rec.pid == 7);
	ml_fmt_writes_summary_free(&rec);
	ml_json_free(j);
	free(o.buf);
}

static void read_interval_error(const char *line, const char *what)
{
	struct ml_writes_interval_rec rec;
	struct ml_err err = { 0 };
	struct ml_json *j = NULL;

	if (ml_json_parse(line, strlen(line), &j, &err)) {
		T_FAILMSG("%s", err.msg);
		return;
	}
	CHECK_EQ(ml_fmt_writes_interval_read(j, &rec, &err), -EINVAL);
	if (!strstr(err.msg, what))
		T_FAILMSG("message \"%s\" lacks \"%s\"", err.msg, what);
	ml_fmt_writes_interval_free(&rec);
	ml_json_free(j);
}

static void test_writes_interval_errors(void)
{
	read_interval_error("{\"type\":\"interval\",\"regions\":[]}", "\"t_ms\"");
	read_interval_error("{\"t_ms\":1,\"regions\":{}}", "\"regions\"");
	read_interval_error("{\"t_ms\":1,\"regions\":[{\"start_addr\":\"0x1\"}]}", "end_addr");
	read_interval_error("{\"t_ms\":1,\"regions\":[],\"written\":[[\"0x2\",\"0x1\"]]}",
			    "\"written\" range 0");
	read_interval_error("{\"t_ms\":1,\"regions\":[],\"written\":7}", "\"written\"");
	read_interval_error("{\"t_ms\":1,\"regions\":[],\"hot_ranges\":[]}", "\"hot_ranges\"");
	read_interval_error("{\"t_ms\":1,\"regions\":[],\"hot_ranges\":{\"ranges\":"
			    "[{\"start_addr\":\"0x2000\",\"end_addr\":\"0x1000\"}]}}",
			    "hot range 0");
}

/* A two-VMA snapshot, a diff against an older one, by hand. */
static void make_snapshot(struct ml_snapshot *s, struct ml_snapshot_diff *d)
{
	static const char maps[] =
		"555555554000-555555558000 rw-p 00002000 08:01 1234 /usr/bin/a b\n"
		"7f0000000000-7f0004000000 rw-p 00000000 00:00 0 \n";
	struct ml_err err = { 0 };

	ml_snapshot_init(s);
	if (ml_maps_parse(maps, sizeof(maps) - 1, &s->vmas, &err) || s->vmas.n != 2)
		return;
	s->vmas.v[0].kind = ML_VMA_DATA;
	s->vmas.v[1].kind = ML_VMA_HEAP;
	s->pid = 4242;
	s->cycle_ns = 3456789;
	s->flags = ML_SNAP_HAVE_PAGES | ML_SNAP_HAVE_WRITTEN;
	s->scan_threads = 2;
	s->recounts = 1;
	s->exact = false;
	s->check = ML_SNAP_CHECK_RSS_CHANGED;
	s->c = calloc(2, sizeof(*s->c));
	if (!s->c)
		return;
	s->c[0] = (struct ml_snap_counts){ 4, 3, 1, 3, 0, 0, 2, 1, 3, 2, 3,
					   0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	s->c[1] = (struct ml_snap_counts){ 16384, 16000, 384, 0,     15872, 12,	   9000,
					   8000,  100,	 50,  16000, 16000, 16000, 7,
					   0,	  0,	 0,   0,     0,	    0,	   0 };
	s->totals = (struct ml_snap_counts){ 16388, 16003, 385, 3,     15872, 12,    9002,
					     8001,  103,   52,	16003, 16000, 16000, 7,
					     0,	    0,	   0,	0,     0,     0,     0 };
	s->kinds[ML_VMA_DATA] = s->c[0];
	s->kinds[ML_VMA_HEAP] = s->c[1];
	s->mm = (struct ml_snap_mm){ 70000, 64012, 64000, 12, 0, 1536, 70000, 0, 64012 };
	memset(d, 0, sizeof(*d));
	d->n = 2;
	d->prev = calloc(2, sizeof(*d->prev));
	d->d = calloc(2, sizeof(*d->d));
	if (!d->prev || !d->d)
		return;
	d->prev[0] = 0;
	d->prev[1] = -1;
	d->d[0] = (struct ml_snap_dcounts){ 0, -2, 1, 0, 0, 0 };
	d->d[1] = (struct ml_snap_dcounts){ 16384, 16000, 384, 0, 15872, 12 };
	d->totals = (struct ml_snap_dcounts){ 16384, 15998, 385, 0, 15872, 12 };
	d->added = 1;
	d->removed = 3;
	d->dt_ns = 1500000000;
}

static void check_counts(const struct ml_snap_counts_rec *r, const struct ml_snap_counts *c)
{
	CHECK(r->size_pages == c->size_pages && r->resident_pages == c->resident_pages);
	CHECK(r->swapped_pages == c->swapped_pages && r->file_pages == c->file_pages);
	CHECK(r->huge_pages == c->huge_pages && r->zero_pages == c->zero_pages);
	CHECK(r->has_written && r->written_pages == c->written_pages);
	CHECK(r->has_flags && r->dirty == c->dirty_pages);
	CHECK(r->referenced == c->referenced_pages && r->active == c->active_pages);
	CHECK(r->lru == c->lru_pages && r->anon == c->anon_pages);
	CHECK(r->swapbacked == c->swapbacked_pages && r->shared == c->shared_pages);
}

static void test_snapshot_round_trip(void)
{
	struct ml_snapshot_diff d = { 0 };
	struct ml_err err = { 0 };
	struct ml_snapshot_rec rec;
	struct ml_snapshot s;
	struct ml_json *j;
	struct out o;

	make_snapshot(&s, &d);
	REQUIRE(s.vmas.n == 2 && s.c && d.prev && d.d);
	out_open(&o);
	ml_fmt_snapshot(&o.w, &s, &d, 5, 6000);
	j = out_parse(&o);
	REQUIRE(j);
	CHECK_STR(ml_json_get_str(j, "type"), "snapshot");
	REQUIRE_MSG(!ml_fmt_snapshot_read(j, &rec, &err), "%s", err.msg);
	CHECK(rec.pid == 4242 && rec.seq == 5 && rec.t_ms == 6000);
	CHECK(rec.cycle_us == 3456 && rec.scan_threads == 2 && rec.recounts == 1);
	CHECK(rec.page_size == 4096 && rec.vmas == 2);
	CHECK(!rec.exact); /* said, with why */
	CHECK_STR(ml_json_get_str(j, "not_exact_because"),
		  ml_snap_check_text(ML_SNAP_CHECK_RSS_CHANGED));
	check_counts(&rec.totals, &s.totals);
	CHECK_EQ(rec.nregions, 2);
	for (size_t i = 0; i < rec.nregions && i < 2; i++) {
		const struct ml_snap_region_rec *r = &rec.regions[i];

		CHECK_EQ(r->start, s.vmas.v[i].start);
		CHECK_EQ(r->end, s.vmas.v[i].end);
		CHECK_STR(r->perms, "rw-p");
		CHECK_STR(r->kind, i ? "heap" : "data");
		CHECK_STR(r->path, ml_vma_path(&s.vmas, &s.vmas.v[i]));
		check_counts(&r->c, &s.c[i]);
		CHECK(r->has_delta && r->is_new == (i == 1));
		CHECK(r->d_size == d.d[i].size_pages && r->d_resident == d.d[i].resident_pages);
		CHECK(r->d_swapped == d.d[i].swapped_pages && r->d_file == d.d[i].file_pages);
		CHECK(r->d_huge == d.d[i].huge_pages && r->d_zero == d.d[i].zero_pages);
	}
	if (rec.nregions == 2)
		CHECK_STR(rec.regions[0].path, "/usr/bin/a b");
	/* the derived parts: deltas of the totals, mm counters, per-kind shares */
	CHECK(!strcmp(ml_json_get_str(ml_json_at(ml_json_get(j, "regions"), 1), "kind"), "heap"));
	{
		const struct ml_json *dt = ml_json_get(j, "deltas"), *mm = ml_json_get(j, "mm");
		const struct ml_json *k = ml_json_get(ml_json_get(j, "by_kind"), "heap");
		int64_t v = 0;
		double p = 0;

		CHECK(!ml_json_get_int(dt, "resident_pages", &v) && v == 15998);
		CHECK(!ml_json_get_int(dt, "vmas_removed", &v) && v == 3);
		CHECK(!ml_json_get_int(dt, "dt_ms", &v) && v == 1500);
		CHECK(!ml_json_get_int(mm, "VmSwap_kb", &v) && v == 1536);
		CHECK(!ml_json_get_double(k, "dirty_pct", &p) && p == 50);
		CHECK_EQ(ml_json_count(ml_json_get(j, "by_kind")), 2);
	}
	ml_fmt_snapshot_free(&rec);
	ml_json_free(j);
	free(o.buf);
	/* without flags nor write tracking, and without a diff */
	s.flags = 0;
	out_open(&o);
	ml_fmt_snapshot(&o.w, &s, NULL, 1, 0);
	j = out_parse(&o);
	REQUIRE(j);
	REQUIRE_MSG(!ml_fmt_snapshot_read(j, &rec, &err), "%s", err.msg);
	CHECK(!rec.totals.has_written && !rec.totals.has_flags);
	CHECK(rec.nregions == 2 && !rec.regions[1].has_delta && !rec.regions[1].c.has_flags);
	CHECK(ml_json_get(j, "deltas") == NULL);
	ml_fmt_snapshot_free(&rec);
	ml_json_free(j);
	free(o.buf);
	free(d.prev);
	free(d.d);
	ml_snapshot_free(&s);
}

static void test_snapshot_summary_round_trip(void)
{
	struct ml_snapshot_summary sum = { .pid = 99,
					   .cycles = 12,
					   .cycle_us_min = 2900,
					   .cycle_us_median = 3100,
					   .cycle_us_max = 4100,
					   .cycle_us_mean = 3150,
					   .cycles_not_exact = 2,
					   .why = ML_STOP_COUNT };
	struct ml_snapshot_summary_rec rec;
	struct ml_json *j;
	struct out o;

	out_open(&o);
	ml_fmt_snapshot_summary(&o.w, &sum);
	j = out_parse(&o);
	REQUIRE(j);
	CHECK_STR(o.buf, "{\"type\":\"summary\",\"pid\":99,\"cycles\":12,\"cycle_us_min\":2900,"
			 "\"cycle_us_median\":3100,\"cycle_us_max\":4100,\"cycle_us_mean\":3150,"
			 "\"cycles_not_exact\":2,\"stopped_because\":\"count\"}\n");
	ml_fmt_snapshot_summary_read(j, &rec);
	CHECK(rec.pid == 99 && rec.cycles == 12 && rec.cycle_us_min == 2900);
	CHECK(rec.cycle_us_median == 3100 && rec.cycle_us_max == 4100 && rec.cycle_us_mean == 3150);
	CHECK_EQ(rec.cycles_not_exact, 2);
	CHECK_EQ(rec.why, ML_STOP_COUNT);
	ml_json_free(j);
	free(o.buf);
}

static void test_stop_tokens(void)
{
	static const struct {
		enum ml_stop s;
		const char *token, *old;
	} t[] = {
		{ ML_STOP_DURATION, "duration", "the duration elapsed" },
		{ ML_STOP_SIGNAL, "signal", "interrupted" },
		{ ML_STOP_TARGET_EXITED, "target_exited", "the target exited" },
		{ ML_STOP_ERROR, "error", "error" },
		{ ML_STOP_COUNT, "count", "the count was reached" },
		{ ML_STOP_SINGLE, "single", "single snapshot" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK_STR(ml_stop_token(t[i].s), t[i].token);
		CHECK_STR(ml_stop_text(t[i].s), t[i].old); /* what people read */
		CHECK_EQ(ml_stop_parse(t[i].token), t[i].s);
		CHECK_EQ(ml_stop_parse(t[i].old), t[i].s); /* older files */
	}
	CHECK_EQ(ml_stop_parse(NULL), ML_STOP_UNKNOWN);
	CHECK_EQ(ml_stop_parse(""), ML_STOP_UNKNOWN);
	CHECK_EQ(ml_stop_parse("Duration"), ML_STOP_UNKNOWN);
	CHECK_STR(ml_stop_token(ML_STOP_UNKNOWN), "");
	CHECK_STR(ml_stop_token((enum ml_stop)99), "");
}

/* report shows the sentence for a token, an older file's sentence as it is, other words too. */
static void test_report_stop_words(void)
{
	static const char *const lines[] = {
		"{\"type\":\"summary\",\"pid\":1,\"stopped_because\":\"target_exited\"}",
		"{\"type\":\"summary\",\"pid\":2,\"stopped_because\":\"the duration elapsed\"}",
		"{\"type\":\"summary\",\"pid\":3,\"stopped_because\":\"moon phase\"}",
		"{\"type\":\"summary\",\"pid\":4,\"cycles\":1,\"stopped_because\":\"single\"}",
	};
	struct ml_err err = { 0 };
	struct ml_report r;

	ml_report_init(&r);
	for (size_t i = 0; i < 4; i++)
		REQUIRE_MSG(!ml_report_load_line(&r, "f", (long)i + 1, lines[i], strlen(lines[i]),
						 &err),
			    "%s", err.msg);
	REQUIRE(r.nw == 3 && r.ns == 1);
	CHECK_STR(r.w[0].stopped_because, "the target exited");
	CHECK_STR(r.w[1].stopped_because, "the duration elapsed");
	CHECK_STR(r.w[2].stopped_because, "moon phase");
	CHECK_STR(r.s[0].stopped_because, "single snapshot");
	ml_report_free(&r);
}

/* The writer puts a '.' in numbers whatever LC_NUMERIC says. */
static void test_writer_locale(void)
{
	bool have = comma_locale_enter();
	char probe[16] = "";
	struct out o;

	if (have) {
		snprintf(probe, sizeof(probe), "%.2f", 0.5);
		out_open(&o);
		ml_jw_arr(&o.w);
		ml_jw_dbl(&o.w, 0.5);
		ml_jw_dbl(&o.w, -1234.125);
		ml_jw_arr_end(&o.w);
		fclose(o.f);
	}
	comma_locale_leave();
	if (!have)
		SKIP("no locale with a ',' decimal point: no de_DE.UTF-8, and localedef could "
		     "not make one");
	CHECK_STR(probe, "0,50"); /* the test can fail: printf writes ',' there */
	CHECK_STR(o.buf, "[0.5,-1234.125]\n");
	free(o.buf);
}

int main(void)
{
	RUN(test_writes_interval_round_trip);
	RUN(test_writes_interval_bytes);
	RUN(test_writes_interval_sampled);
	RUN(test_writes_summary_round_trip);
	RUN(test_writes_interval_errors);
	RUN(test_snapshot_round_trip);
	RUN(test_snapshot_summary_round_trip);
	RUN(test_stop_tokens);
	RUN(test_report_stop_words);
	RUN(test_writer_locale);
	return T_DONE();
}
