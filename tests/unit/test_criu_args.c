// SPDX-License-Identifier: MIT
/* CRIU arguments from the heat map and the stats-dump decoder. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/criu.h"

static const struct ml_criu_caps fork_caps = {
	.path = "/fork/criu",
	.exclude_range = true,
	.exclude_file = true,
	.no_parent_range = true,
};
static const struct ml_criu_caps upstream_caps = { .path = "/usr/sbin/criu" };

static char tmpdir[64];

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/memlens-test-args-XXXXXX");
	REQUIRE(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, ML_CRIU_EXCLUDE_FILE_NAME);
	unlink(p);
	snprintf(p, sizeof(p), "%s/link", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", tmpdir);
	rmdir(p);
	rmdir(tmpdir);
}

/* The text of @path into @buf (NUL-terminated); it must not be empty. */
static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	REQUIRE(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	REQUIRE(n > 0);
	buf[n] = '\0';
}

static void add_n(struct ml_rangeset *s, int n)
{
	for (int i = 0; i < n; i++)
		REQUIRE(!ml_rangeset_add(s, 0x7f1234000000ULL + (uint64_t)i * 0x200000,
					 0x7f1234100000ULL + (uint64_t)i * 0x200000));
}

static void test_ten_ranges_inline(void)
{
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_criu_argv a;
	struct ml_rangeset s;

	ml_criu_argv_init(&a);
	ml_rangeset_init(&s);
	add_n(&s, 10);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, NULL, &fork_caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 20);
	CHECK_STR(a.v[0], "--exclude-range");
	CHECK_STR(a.v[1], "7f1234000000:7f1234100000");
	CHECK_STR(a.v[19], "7f1235200000:7f1235300000");
	CHECK(a.v[20] == NULL);
	CHECK_EQ(rep.nexclude, 10);
	CHECK(!rep.used_file && !rep.skipped);
	ml_criu_argv_free(&a);
	ml_rangeset_free(&s);
}

static void test_eleven_ranges_file(void)
{
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	char buf[1024], want[1024] = "";
	struct ml_criu_argv a;
	struct ml_rangeset s;
	struct stat st;

	make_tmpdir();
	ml_criu_argv_init(&a);
	ml_rangeset_init(&s);
	add_n(&s, 11);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, NULL, &fork_caps, tmpdir, &rep, &err));
	CHECK_EQ(a.n, 2);
	CHECK_STR(a.v[0], "--exclude-file");
	CHECK(rep.used_file);
	CHECK_STR(a.v[1], rep.file);
	REQUIRE(stat(rep.file, &st) == 0);
	CHECK_EQ(st.st_mode & 0777, 0600);
	read_text(rep.file, buf, sizeof(buf));
	for (int i = 0; i < 11; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%llx %llx\n",
			 0x7f1234000000ULL + (unsigned long long)i * 0x200000,
			 0x7f1234100000ULL + (unsigned long long)i * 0x200000);
	CHECK_STR(buf, want);
	CHECK(!strncmp(buf, "7f1234000000 7f1234100000\n7f1234200000 7f1234300000\n", 52));
	ml_criu_argv_free(&a);
	ml_rangeset_free(&s);
	rm_tmpdir();
}

/*
 * A CRIU with memlens's patches takes a PID in each range, inline and in the
 * file; the fork does not, and must not get one even when a PID is given.
 */
static void test_page_granular_ranges_name_the_pid(void)
{
	static const struct ml_criu_caps page_caps = { .works = true,
						       .exclude_range = true,
						       .exclude_file = true,
						       .no_parent_range = true,
						       .page_granular = true };
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_criu_argv a;
	struct ml_rangeset s, parent;
	char buf[1024];

	ml_criu_argv_init(&a);
	ml_rangeset_init(&s);
	ml_rangeset_init(&parent);
	REQUIRE(!ml_rangeset_add(&s, 0x7f0000001000ULL, 0x7f0000003000ULL));
	REQUIRE(!ml_rangeset_add(&parent, 0x7f0000010000ULL, 0x7f0000011000ULL));
	REQUIRE(!ml_criu_exclude_args(&a, 4242, &s, &parent, &page_caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 4);
	CHECK_STR(a.v[0], "--exclude-range");
	CHECK_STR(a.v[1], "4242:7f0000001000:7f0000003000");
	CHECK_STR(a.v[2], "--no-parent-range");
	CHECK_STR(a.v[3], "4242:7f0000010000:7f0000011000");
	CHECK_STR(rep.granularity, "page");
	CHECK(strstr(rep.note, "page by page") != NULL);
	ml_criu_argv_free(&a);

	ml_criu_argv_init(&a);
	REQUIRE(!ml_criu_exclude_args(&a, 4242, &s, NULL, &fork_caps, NULL, &rep, &err));
	CHECK_STR(a.v[1], "7f0000001000:7f0000003000");
	CHECK_STR(rep.granularity, "vma");
	CHECK(strstr(rep.note, "whole VMAs") != NULL);
	ml_criu_argv_free(&a);

	ml_criu_argv_init(&a);
	REQUIRE(!ml_criu_exclude_args(&a, 4242, &s, NULL, &upstream_caps, NULL, &rep, &err));
	CHECK_STR(rep.granularity, "none");
	CHECK(rep.skipped);
	ml_criu_argv_free(&a);

	make_tmpdir();
	add_n(&s, 11);
	ml_criu_argv_init(&a);
	REQUIRE(!ml_criu_exclude_args(&a, 4242, &s, NULL, &page_caps, tmpdir, &rep, &err));
	CHECK_STR(a.v[0], "--exclude-file");
	read_text(rep.file, buf, sizeof(buf));
	CHECK(!strncmp(buf, "4242 7f0000001000 7f0000003000\n4242 7f1234000000 7f1234100000\n",
		       62));
	ml_criu_argv_free(&a);
	ml_rangeset_free(&s);
	ml_rangeset_free(&parent);
	rm_tmpdir();
}

static void test_transitions(void)
{
	struct ml_rangeset prev, cur, np;
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_criu_argv a;

	ml_rangeset_init(&prev);
	ml_rangeset_init(&cur);
	ml_rangeset_init(&np);
	ml_criu_argv_init(&a);
	/* A and B were hot; now B and C are: A turned cold */
	ml_rangeset_add(&prev, 0x1000000, 0x2000000);
	ml_rangeset_add(&prev, 0x5000000, 0x6000000);
	ml_rangeset_add(&cur, 0x5000000, 0x6000000);
	ml_rangeset_add(&cur, 0x9000000, 0xa000000);
	REQUIRE(!ml_criu_transitions(&prev, &cur, &np));
	REQUIRE(np.n == 1);
	CHECK_EQ(np.r[0].start, 0x1000000);
	CHECK_EQ(np.r[0].end, 0x2000000);
	/* given what the parent left out, the args compute the same transition */
	REQUIRE(!ml_criu_exclude_args(&a, 0, &cur, &prev, &fork_caps, NULL, &rep, &err));
	REQUIRE(a.n == 6);
	CHECK_STR(a.v[0], "--exclude-range");
	CHECK_STR(a.v[1], "5000000:6000000");
	CHECK_STR(a.v[3], "9000000:a000000");
	CHECK_STR(a.v[4], "--no-parent-range");
	CHECK_STR(a.v[5], "1000000:2000000");
	CHECK_EQ(rep.nno_parent, 1);
	/* a hot VMA that shrank: only the part no longer hot gets no parent */
	ml_rangeset_clear(&cur);
	ml_rangeset_add(&cur, 0x5000000, 0x5800000);
	REQUIRE(!ml_criu_transitions(&prev, &cur, &np));
	REQUIRE(np.n == 2);
	CHECK_EQ(np.r[1].start, 0x5800000);
	CHECK_EQ(np.r[1].end, 0x6000000);
	/* nothing before: no transitions */
	ml_rangeset_clear(&prev);
	REQUIRE(!ml_criu_transitions(&prev, &cur, &np));
	CHECK_EQ(np.n, 0);
	ml_criu_argv_free(&a);
	ml_rangeset_free(&prev);
	ml_rangeset_free(&cur);
	ml_rangeset_free(&np);
}

static void test_upstream_gets_none(void)
{
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_rangeset s, np;
	struct ml_criu_argv a;

	ml_criu_argv_init(&a);
	ml_rangeset_init(&s);
	ml_rangeset_init(&np);
	add_n(&s, 3);
	ml_rangeset_add(&np, 0x1000, 0x2000);
	ml_criu_argv_add(&a, "criu");
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, &np, &upstream_caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 1);
	CHECK(rep.skipped);
	CHECK_EQ(rep.nexclude, 0);
	CHECK(strstr(rep.note, "an older CRIU fork of 4.0 have them") != NULL);
	CHECK(strstr(rep.note, "3 hot range(s)") != NULL);
	/* the parent left @np out and this CRIU cannot say so: the parent is unusable */
	CHECK(rep.parent_unusable);
	CHECK_EQ(rep.nno_parent_missing, 1);
	CHECK(strstr(rep.note, "parent is not used") != NULL);
	/* --exclude-range but no --no-parent-range: use what is there */
	struct ml_criu_caps half = fork_caps;

	half.no_parent_range = false;
	half.exclude_file = false;
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, &np, &half, NULL, &rep, &err));
	CHECK_EQ(a.n, 7);
	CHECK_STR(a.v[1], "--exclude-range");
	CHECK(!rep.skipped);
	CHECK_EQ(rep.nexclude, 3);
	CHECK(rep.parent_unusable);
	/* nothing hot: nothing passed, not "skipped" */
	ml_criu_argv_free(&a);
	ml_criu_argv_init(&a);
	ml_criu_argv_add(&a, "criu");
	ml_rangeset_clear(&s);
	ml_rangeset_clear(&np);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, &np, &upstream_caps, NULL, &rep, &err));
	CHECK(!rep.skipped && !rep.parent_unusable);
	CHECK_EQ(a.n, 1);
	ml_criu_argv_free(&a);
	ml_rangeset_free(&s);
	ml_rangeset_free(&np);
}

/* More than 10 ranges and no --exclude-file: every range as --exclude-range. */
static void test_many_ranges_without_file(void)
{
	struct ml_criu_caps caps = fork_caps;
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_criu_argv a;
	struct ml_rangeset s;

	make_tmpdir();
	caps.exclude_file = false;
	ml_criu_argv_init(&a);
	ml_rangeset_init(&s);
	add_n(&s, 12);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, NULL, &caps, tmpdir, &rep, &err));
	CHECK_EQ(a.n, 24);
	CHECK_STR(a.v[22], "--exclude-range");
	CHECK_STR(a.v[23], "7f1235600000:7f1235700000");
	CHECK_EQ(rep.nexclude, 12);
	CHECK(!rep.used_file && !rep.skipped);
	CHECK(access(tmpdir, F_OK) == 0);
	/* only --exclude-file: a file even for 3 ranges */
	ml_criu_argv_free(&a);
	ml_criu_argv_init(&a);
	ml_rangeset_clear(&s);
	add_n(&s, 3);
	caps.exclude_file = true;
	caps.exclude_range = false;
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, NULL, &caps, tmpdir, &rep, &err));
	CHECK_EQ(a.n, 2);
	CHECK_STR(a.v[0], "--exclude-file");
	CHECK(rep.used_file);
	/* only --exclude-file and nowhere to write it: skipped, said so */
	ml_criu_argv_free(&a);
	ml_criu_argv_init(&a);
	unlink(rep.file);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &s, NULL, &caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 0);
	CHECK(rep.skipped);
	ml_criu_argv_free(&a);
	ml_rangeset_free(&s);
	rm_tmpdir();
}

/*
 * Exclusion off (or a final dump: no exclude set) after a parent that left
 * A and B out: both go as --no-parent-range; cold -> hot C is only excluded.
 */
static void test_no_exclude_keeps_no_parent(void)
{
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_rangeset parent, cur;
	struct ml_criu_argv a;

	ml_criu_argv_init(&a);
	ml_rangeset_init(&parent);
	ml_rangeset_init(&cur);
	ml_rangeset_add(&parent, 0x1000000, 0x2000000);
	ml_rangeset_add(&parent, 0x5000000, 0x6000000);
	REQUIRE(!ml_criu_exclude_args(&a, 0, NULL, &parent, &fork_caps, NULL, &rep, &err));
	REQUIRE(a.n == 4);
	CHECK_STR(a.v[0], "--no-parent-range");
	CHECK_STR(a.v[1], "1000000:2000000");
	CHECK_STR(a.v[3], "5000000:6000000");
	CHECK_EQ(rep.nno_parent, 2);
	CHECK_EQ(rep.nexclude, 0);
	/* the CRIU lacks both exclude options but has the parent's: still marked */
	struct ml_criu_caps np_only = upstream_caps;

	np_only.no_parent_range = true;
	ml_criu_argv_free(&a);
	ml_criu_argv_init(&a);
	ml_rangeset_add(&cur, 0x9000000, 0xa000000);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &cur, &parent, &np_only, NULL, &rep, &err));
	CHECK(rep.skipped);
	CHECK_EQ(a.n, 4);
	CHECK_EQ(rep.nno_parent, 2);
	/* cold -> hot: nothing left out before, C excluded now */
	ml_criu_argv_free(&a);
	ml_criu_argv_init(&a);
	ml_rangeset_clear(&parent);
	REQUIRE(!ml_criu_exclude_args(&a, 0, &cur, &parent, &fork_caps, NULL, &rep, &err));
	REQUIRE(a.n == 2);
	CHECK_STR(a.v[1], "9000000:a000000");
	CHECK_EQ(rep.nno_parent, 0);
	ml_criu_argv_free(&a);
	ml_rangeset_free(&parent);
	ml_rangeset_free(&cur);
}

/* The records of what an images directory left out. */
static void test_records(void)
{
	static const char hot_iovs[] =
		"{\n  \"excluded\": [\n"
		"    {\"start\": \"0x7f0000000000\", \"end\": \"0x7f0004000000\"},\n"
		"    {\"start\": \"0x7f0010000000\", \"end\": \"0x7f0012000000\"}\n"
		"  ],\n  \"no_parent\": [\n"
		"    {\"start\": \"0x1000\", \"end\": \"0x2000\"}\n  ]\n}\n";
	static const char empty_iovs[] =
		"{\n  \"excluded\": [\n\n  ],\n  \"no_parent\": [\n"
		"    {\"start\": \"0x1000\", \"end\": \"0x2000\"}\n  ]\n}\n";
	struct ml_err err = { 0 };
	struct ml_rangeset s;
	char path[160];
	int found, fd;

	ml_rangeset_init(&s);
	REQUIRE(!ml_criu_parse_hot_iovs(hot_iovs, strlen(hot_iovs), &s));
	REQUIRE(s.n == 2);
	CHECK_EQ(s.r[0].start, 0x7f0000000000ULL);
	CHECK_EQ(s.r[1].end, 0x7f0012000000ULL);
	ml_rangeset_clear(&s);
	REQUIRE(!ml_criu_parse_hot_iovs(empty_iovs, strlen(empty_iovs), &s));
	CHECK_EQ(s.n, 0);
	{
		static const char no_end[] = "{\"excluded\": [{\"start\": \"0x2\"}]}";

		CHECK(ml_criu_parse_hot_iovs(no_end, sizeof(no_end) - 1, &s) == -EINVAL);
	}
	CHECK(ml_criu_parse_hot_iovs("{}", 2, &s) == -EINVAL);
	REQUIRE(!ml_criu_parse_record("# c\n1000 2000\n\n5000 6000\n", 25, &s));
	REQUIRE(s.n == 2);
	CHECK_EQ(s.r[1].start, 0x5000);
	CHECK(ml_criu_parse_record("1000\n", 5, &s) == -EINVAL);
	CHECK(ml_criu_parse_record("2000 1000\n", 10, &s) == -EINVAL);
	CHECK(ml_criu_parse_record("1000 2000 x\n", 12, &s) == -EINVAL);
	/* written, read back, united with the fork's record */
	make_tmpdir();
	REQUIRE(!ml_criu_record_read(tmpdir, &s, &found, &err));
	CHECK_EQ(found, 0);
	CHECK_EQ(s.n, 0);
	ml_rangeset_add(&s, 0x7f0020000000ULL, 0x7f0021000000ULL);
	REQUIRE(!ml_criu_record_write(tmpdir, &s, &err));
	snprintf(path, sizeof(path), "%s/%s", tmpdir, ML_CRIU_HOT_IOVS_NAME);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, hot_iovs, strlen(hot_iovs)) == (ssize_t)strlen(hot_iovs));
	close(fd);
	REQUIRE(!ml_criu_record_read(tmpdir, &s, &found, &err));
	CHECK_EQ(found, 3);
	CHECK_EQ(s.n, 3);
	CHECK_EQ(ml_rangeset_bytes(&s), 0x4000000 + 0x2000000 + 0x1000000);
	/* malformed: an error that says what to do */
	fd = open(path, O_WRONLY | O_TRUNC);
	REQUIRE(write(fd, "{\"excluded\": [{", 15) == 15);
	close(fd);
	CHECK(ml_criu_record_read(tmpdir, &s, &found, &err) == -EINVAL);
	CHECK(strstr(err.msg, "use another parent") != NULL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, ML_CRIU_RECORD_NAME);
	unlink(path);
	ml_rangeset_free(&s);
	rm_tmpdir();
}

static void test_unsafe_paths_refused(void)
{
	struct ml_err err = { 0 };
	struct ml_rangeset s;
	char path[256], p2[256];
	int fd;

	make_tmpdir();
	ml_rangeset_init(&s);
	add_n(&s, 2);
	/* a symlink to the directory */
	snprintf(p2, sizeof(p2), "%s/link", tmpdir);
	REQUIRE(symlink(tmpdir, p2) == 0);
	CHECK(ml_criu_write_exclude_file(p2, 0, &s, path, sizeof(path), &err) < 0);
	unlink(p2);
	/* a directory others may write to */
	snprintf(p2, sizeof(p2), "%s/sub", tmpdir);
	REQUIRE(mkdir(p2, 0777) == 0);
	chmod(p2, 0777);
	CHECK(ml_criu_write_exclude_file(p2, 0, &s, path, sizeof(path), &err) == -EPERM);
	CHECK(strstr(err.msg, "not writable by group or others") != NULL);
	rmdir(p2);
	/* the file name is a symlink planted in advance */
	snprintf(p2, sizeof(p2), "%s/%s", tmpdir, ML_CRIU_EXCLUDE_FILE_NAME);
	REQUIRE(symlink("/tmp/memlens-should-not-be-created", p2) == 0);
	CHECK(ml_criu_write_exclude_file(tmpdir, 0, &s, path, sizeof(path), &err) == -EEXIST);
	CHECK(access("/tmp/memlens-should-not-be-created", F_OK) < 0);
	unlink(p2);
	/* an existing file is never overwritten */
	fd = open(p2, O_CREAT | O_WRONLY, 0600);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK(ml_criu_write_exclude_file(tmpdir, 0, &s, path, sizeof(path), &err) == -EEXIST);
	unlink(p2);
	/* a missing directory */
	CHECK(ml_criu_write_exclude_file("/nonexistent/memlens", 0, &s, path, sizeof(path), &err) ==
	      -ENOENT);
	/* and a good one works */
	CHECK(ml_criu_write_exclude_file(tmpdir, 0, &s, path, sizeof(path), &err) == 0);
	ml_rangeset_free(&s);
	rm_tmpdir();
}

static void test_argv_format(void)
{
	struct ml_criu_argv a;
	char buf[128];

	ml_criu_argv_init(&a);
	ml_criu_argv_add(&a, "/usr/sbin/criu");
	ml_criu_argv_add(&a, "dump");
	ml_criu_argv_addf(&a, "--images-dir=%s", "/tmp/a b");
	ml_criu_argv_add(&a, "it's");
	ml_criu_argv_format(&a, buf, sizeof(buf));
	CHECK_STR(buf, "/usr/sbin/criu dump '--images-dir=/tmp/a b' 'it'\\''s'");
	ml_criu_argv_format(&a, buf, 16);
	CHECK_EQ(strlen(buf), 15);
	CHECK(!strcmp(buf + 12, "..."));
	ml_criu_argv_free(&a);
}

/*
 * stats-dump: magics, length, stats_entry{ dump = 1: dump_stats_entry },
 * with every field stats.proto requires (3, 4 and 9 are 0 here)
 */
static void test_stats_dump(void)
{
	uint8_t img[64] = { 0x40, 0x59, 0x10, 0x55, 0x06, 0x33, 0x09, 0x57 };
	uint8_t entry[] = { 0x0a, 0,	0x08, 0x05, 0x10, 0x01, 0x18, 0x00, 0x20, 0x00, 0x28,
			    0xac, 0x20, 0x30, 0x00, 0x38, 0x9e, 0x20, 0x48, 0x00, 0x60, 0x07 };
	int64_t sc, sk, wr;

	entry[1] = sizeof(entry) - 2;
	img[8] = sizeof(entry);
	memcpy(img + 12, entry, sizeof(entry));
	CHECK_EQ(ml_criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr), 0);
	CHECK_EQ(sc, 4140); /* 0xac 0x20 */
	CHECK_EQ(sk, 0);
	CHECK_EQ(wr, 4126); /* 0x9e 0x20 */
	{
		int64_t frozen;

		CHECK_EQ(ml_criu_parse_dump_frozen(img, 12 + sizeof(entry), &frozen), 0);
		CHECK_EQ(frozen, 1); /* field 2: 0x10 0x01 */
	}
	/* truncated, wrong magic, length beyond the buffer */
	CHECK(ml_criu_parse_dump_stats(img, 12 + sizeof(entry) - 3, &sc, &sk, &wr) < 0);
	CHECK_EQ(wr, -1);
	img[0] ^= 1;
	CHECK(ml_criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr) == -EINVAL);
	img[0] ^= 1;
	img[8] = 200;
	CHECK(ml_criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr) == -EINVAL);
	/* a restore-only stats image (its required fields 1-4) has no dump entry */
	uint8_t rimg[24] = { 0x40, 0x59, 0x10, 0x55, 0x06, 0x33, 0x09, 0x57, 10,   0,	 0,
			     0,	   0x12, 0x08, 0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00 };

	CHECK(ml_criu_parse_dump_stats(rimg, 22, &sc, &sk, &wr) == -ENOENT);
}

/*
 * A tree: each process's ranges with its own PID to a page-granular CRIU,
 * inline and in the file; --no-parent-range for the root only.
 */
static void test_tree_ranges_per_process(void)
{
	static const struct ml_criu_caps page_caps = { .works = true,
						       .exclude_range = true,
						       .exclude_file = true,
						       .no_parent_range = true,
						       .page_granular = true };
	struct ml_criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct ml_criu_argv a;
	struct ml_rangeset r1, r2, parent;
	char buf[1024];

	ml_rangeset_init(&r1);
	ml_rangeset_init(&r2);
	ml_rangeset_init(&parent);
	REQUIRE(!ml_rangeset_add(&r1, 0x7f0000001000ULL, 0x7f0000003000ULL));
	REQUIRE(!ml_rangeset_add(&r2, 0x7f0000001000ULL, 0x7f0000002000ULL));
	REQUIRE(!ml_rangeset_add(&parent, 0x7f0000010000ULL, 0x7f0000011000ULL));
	const struct ml_criu_proc_ranges procs[] = { { 100, &r1 }, { 101, &r2 } };

	ml_criu_argv_init(&a);
	REQUIRE(!ml_criu_exclude_args_procs(&a, 100, procs, 2, &parent, &page_caps, NULL, &rep,
					    &err));
	CHECK_EQ(a.n, 6);
	CHECK_STR(a.v[1], "100:7f0000001000:7f0000003000");
	CHECK_STR(a.v[3], "101:7f0000001000:7f0000002000");
	CHECK_STR(a.v[4], "--no-parent-range");
	CHECK_STR(a.v[5], "100:7f0000010000:7f0000011000");
	CHECK_EQ(rep.nexclude, 2);
	CHECK(strstr(rep.note, "(12 KiB)") != NULL); /* the two processes' bytes, summed */
	ml_criu_argv_free(&a);

	make_tmpdir();
	add_n(&r2, 11);
	ml_criu_argv_init(&a);
	REQUIRE(!ml_criu_exclude_args_procs(&a, 100, procs, 2, NULL, &page_caps, tmpdir, &rep,
					    &err));
	CHECK_STR(a.v[0], "--exclude-file");
	read_text(rep.file, buf, sizeof(buf));
	CHECK(!strncmp(buf, "100 7f0000001000 7f0000003000\n101 7f0000001000 7f0000002000\n", 60));
	ml_criu_argv_free(&a);
	ml_rangeset_free(&r1);
	ml_rangeset_free(&r2);
	ml_rangeset_free(&parent);
	rm_tmpdir();
}

int main(void)
{
	RUN(test_ten_ranges_inline);
	RUN(test_eleven_ranges_file);
	RUN(test_transitions);
	RUN(test_page_granular_ranges_name_the_pid);
	RUN(test_tree_ranges_per_process);
	RUN(test_upstream_gets_none);
	RUN(test_many_ranges_without_file);
	RUN(test_no_exclude_keeps_no_parent);
	RUN(test_records);
	RUN(test_unsafe_paths_refused);
	RUN(test_argv_format);
	RUN(test_stats_dump);
	return T_DONE();
}
