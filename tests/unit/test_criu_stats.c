// SPDX-License-Identifier: MIT
/*
 * CRIU's stats-dump image decoded by libmemlens (protobuf-c, from CRIU's
 * stats.proto) against what crit decode prints for it: a real image from a
 * CRIU 4.1.1 dump, tests/data/criu/stats-dump, and crit's output for it,
 * tests/data/criu/stats-dump.crit.json (tests/data/criu/README). Every
 * field crit prints must be decoded with the same value, and no other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/criu.h"

#define IMG "tests/data/criu/stats-dump"
#define CRIT_JSON "tests/data/criu/stats-dump.crit.json"

/* a field's name, as stats.proto (and crit) names it, and its place */
#define F(x) #x, offsetof(struct ml_criu_dump_stats, x)
static const struct {
	const char *name;
	size_t off;
} fields[] = {
	{ F(freezing_time) },
	{ F(frozen_time) },
	{ F(memdump_time) },
	{ F(memwrite_time) },
	{ F(pages_scanned) },
	{ F(pages_skipped_parent) },
	{ F(pages_written) },
	{ F(irmap_resolve) },
	{ F(pages_lazy) },
	{ F(page_pipes) },
	{ F(page_pipe_bufs) },
	{ F(shpages_scanned) },
	{ F(shpages_skipped_parent) },
	{ F(shpages_written) },
	{ F(pages_excluded) },
};
#undef F
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static int64_t field(const struct ml_criu_dump_stats *s, size_t i)
{
	return *(const int64_t *)((const char *)s + fields[i].off);
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

static uint8_t img[4096];
static size_t img_len;

static void load_image(void)
{
	if (!img_len)
		img_len = slurp(IMG, (char *)img, sizeof(img));
	if (!img_len)
		SKIP("%s not found: run from the top of the source tree (tests/run.sh does)", IMG);
}

/* the "dump" object of crit's JSON: flat "name": number pairs */
static void test_equals_crit_decode(void)
{
	char json[8192], *p, *end;
	struct ml_criu_dump_stats s;
	bool seen[NFIELDS] = { false };
	int nseen = 0;

	load_image();
	REQUIRE(slurp(CRIT_JSON, json, sizeof(json)) > 0);
	CHECK_EQ(ml_criu_stats_parse(img, img_len, &s), 0);
	p = strstr(json, "\"dump\": {");
	REQUIRE(p);
	p += strlen("\"dump\": {");
	end = strchr(p, '}');
	REQUIRE(end);
	*end = 0;
	while ((p = strchr(p, '"'))) {
		char name[64];
		long long v;
		size_t i;
		int used = 0;

		REQUIRE(sscanf(p, "\"%63[a-z_]\": %lld%n", name, &v, &used) == 2 && used > 0);
		p += used;
		for (i = 0; i < NFIELDS && strcmp(fields[i].name, name); i++)
			;
		REQUIRE_MSG(i < NFIELDS, "crit prints a field memlens does not know: %s", name);
		seen[i] = true;
		nseen++;
		if (field(&s, i) != v)
			T_FAILMSG("%s: memlens %lld, crit %lld", name, (long long)field(&s, i), v);
	}
	CHECK_EQ(nseen, 14); /* this image has every field of dump_stats_entry */
	for (size_t i = 0; i < NFIELDS; i++)
		if (!seen[i] && field(&s, i) != -1)
			T_FAILMSG("%s: memlens decodes %lld, crit prints none", fields[i].name,
				  (long long)field(&s, i));
}

/* the three-value API reads the same image the same way */
static void test_old_api_same(void)
{
	struct ml_criu_dump_stats s;
	int64_t sc, sk, wr, fr;

	load_image();
	CHECK_EQ(ml_criu_stats_parse(img, img_len, &s), 0);
	CHECK_EQ(ml_criu_parse_dump_stats(img, img_len, &sc, &sk, &wr), 0);
	CHECK_EQ(ml_criu_parse_dump_frozen(img, img_len, &fr), 0);
	CHECK_EQ(sc, s.pages_scanned);
	CHECK_EQ(sk, s.pages_skipped_parent);
	CHECK_EQ(wr, s.pages_written);
	CHECK_EQ(fr, s.frozen_time);
}

/* every truncation is refused, and leaves every field unknown */
static void test_truncated(void)
{
	struct ml_criu_dump_stats s;

	load_image();
	for (size_t n = 0; n < img_len; n++) {
		CHECK(ml_criu_stats_parse(img, n, &s) == -EINVAL);
		for (size_t i = 0; i < NFIELDS; i++)
			CHECK_EQ(field(&s, i), -1);
	}
}

/* images of format v1.0 have no head magic: the same entry decodes */
static void test_no_head_magic(void)
{
	struct ml_criu_dump_stats a, b;

	load_image();
	CHECK_EQ(ml_criu_stats_parse(img, img_len, &a), 0);
	CHECK_EQ(ml_criu_stats_parse(img + 4, img_len - 4, &b), 0);
	CHECK(!memcmp(&a, &b, sizeof(a)));
}

/* a dump_stats_entry without pages_lazy (required by stats.proto) */
static void test_missing_required(void)
{
	struct ml_criu_dump_stats s;
	uint8_t bad[64];
	size_t n = 12, entry;

	load_image();
	memcpy(bad, img, 8); /* the two magics */
	bad[n++] = 0x0a; /* stats_entry.dump, length-delimited */
	entry = n++;
	for (int f = 1; f <= 7; f++) { /* fields 1..7 = 0; no field 9 */
		bad[n++] = (uint8_t)(f << 3);
		bad[n++] = 0;
	}
	bad[entry] = (uint8_t)(n - entry - 1);
	bad[8] = (uint8_t)(n - 12);
	bad[9] = bad[10] = bad[11] = 0;
	CHECK(ml_criu_stats_parse(bad, n, &s) == -EINVAL);
	bad[n++] = 9 << 3; /* pages_lazy = 0 */
	bad[n++] = 0;
	bad[entry] += 2;
	bad[8] += 2;
	CHECK_EQ(ml_criu_stats_parse(bad, n, &s), 0);
	CHECK_EQ(s.pages_lazy, 0);
	CHECK_EQ(s.page_pipes, -1); /* optional, absent */
}

/* a directory without the image: -ENOENT and a message naming the file */
static void test_read_missing(void)
{
	struct ml_criu_dump_stats s;
	struct ml_err err = { 0 };

	CHECK(ml_criu_stats_read("/nonexistent-dir", &s, &err) == -ENOENT);
	CHECK(strstr(err.msg, "/nonexistent-dir/stats-dump") != NULL);
	CHECK_EQ(s.pages_written, -1);
}

int main(void)
{
	RUN(test_equals_crit_decode);
	RUN(test_old_api_same);
	RUN(test_truncated);
	RUN(test_no_head_magic);
	RUN(test_missing_required);
	RUN(test_read_missing);
	return T_DONE();
}
