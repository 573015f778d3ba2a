// SPDX-License-Identifier: MIT
/* CRIU arguments from the heat map (seed §5.3) and the stats-dump decoder. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/criu.h"

static const struct criu_caps fork_caps = {
	.path = "/fork/criu",
	.exclude_range = true,
	.exclude_file = true,
	.no_parent_range = true,
};
static const struct criu_caps upstream_caps = { .path = "/usr/sbin/criu" };

static char tmpdir[64];

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/memlens-test-args-XXXXXX");
	REQUIRE(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, CRIU_EXCLUDE_FILE_NAME);
	unlink(p);
	snprintf(p, sizeof(p), "%s/link", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", tmpdir);
	rmdir(p);
	rmdir(tmpdir);
}

static void add_n(struct rangeset *s, int n)
{
	for (int i = 0; i < n; i++)
		REQUIRE(!rangeset_add(s, 0x7f1234000000ULL + (uint64_t)i * 0x200000,
				      0x7f1234100000ULL + (uint64_t)i * 0x200000));
}

static void test_ten_ranges_inline(void)
{
	struct criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct criu_argv a;
	struct rangeset s;

	criu_argv_init(&a);
	rangeset_init(&s);
	add_n(&s, 10);
	REQUIRE(!criu_exclude_args(&a, &s, NULL, &fork_caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 20);
	CHECK_STR(a.v[0], "--exclude-range");
	CHECK_STR(a.v[1], "7f1234000000:7f1234100000");
	CHECK_STR(a.v[19], "7f1235200000:7f1235300000");
	CHECK(a.v[20] == NULL);
	CHECK_EQ(rep.nexclude, 10);
	CHECK(!rep.used_file && !rep.skipped);
	criu_argv_free(&a);
	rangeset_free(&s);
}

static void test_eleven_ranges_file(void)
{
	struct criu_exclude_report rep;
	struct ml_err err = { 0 };
	char buf[1024], want[1024] = "";
	struct criu_argv a;
	struct rangeset s;
	struct stat st;
	ssize_t n;
	int fd;

	make_tmpdir();
	criu_argv_init(&a);
	rangeset_init(&s);
	add_n(&s, 11);
	REQUIRE(!criu_exclude_args(&a, &s, NULL, &fork_caps, tmpdir, &rep, &err));
	CHECK_EQ(a.n, 2);
	CHECK_STR(a.v[0], "--exclude-file");
	CHECK(rep.used_file);
	CHECK_STR(a.v[1], rep.file);
	REQUIRE(stat(rep.file, &st) == 0);
	CHECK_EQ(st.st_mode & 0777, 0600);
	fd = open(rep.file, O_RDONLY);
	REQUIRE(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	REQUIRE(n > 0);
	buf[n] = '\0';
	for (int i = 0; i < 11; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%llx %llx\n",
			 0x7f1234000000ULL + (unsigned long long)i * 0x200000,
			 0x7f1234100000ULL + (unsigned long long)i * 0x200000);
	CHECK_STR(buf, want);
	CHECK(!strncmp(buf, "7f1234000000 7f1234100000\n7f1234200000 7f1234300000\n", 52));
	criu_argv_free(&a);
	rangeset_free(&s);
	rm_tmpdir();
}

static void test_transitions(void)
{
	struct rangeset prev, cur, np;
	struct criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct criu_argv a;

	rangeset_init(&prev);
	rangeset_init(&cur);
	rangeset_init(&np);
	criu_argv_init(&a);
	/* A and B were hot; now B and C are: A turned cold */
	rangeset_add(&prev, 0x1000000, 0x2000000);
	rangeset_add(&prev, 0x5000000, 0x6000000);
	rangeset_add(&cur, 0x5000000, 0x6000000);
	rangeset_add(&cur, 0x9000000, 0xa000000);
	REQUIRE(!criu_transitions(&prev, &cur, &np));
	REQUIRE(np.n == 1);
	CHECK_EQ(np.r[0].start, 0x1000000);
	CHECK_EQ(np.r[0].end, 0x2000000);
	REQUIRE(!criu_exclude_args(&a, &cur, &np, &fork_caps, NULL, &rep, &err));
	REQUIRE(a.n == 6);
	CHECK_STR(a.v[0], "--exclude-range");
	CHECK_STR(a.v[1], "5000000:6000000");
	CHECK_STR(a.v[3], "9000000:a000000");
	CHECK_STR(a.v[4], "--no-parent-range");
	CHECK_STR(a.v[5], "1000000:2000000");
	CHECK_EQ(rep.nno_parent, 1);
	/* a hot VMA that shrank: only the part no longer hot gets no parent */
	rangeset_clear(&cur);
	rangeset_add(&cur, 0x5000000, 0x5800000);
	REQUIRE(!criu_transitions(&prev, &cur, &np));
	REQUIRE(np.n == 2);
	CHECK_EQ(np.r[1].start, 0x5800000);
	CHECK_EQ(np.r[1].end, 0x6000000);
	/* nothing before: no transitions */
	rangeset_clear(&prev);
	REQUIRE(!criu_transitions(&prev, &cur, &np));
	CHECK_EQ(np.n, 0);
	criu_argv_free(&a);
	rangeset_free(&prev);
	rangeset_free(&cur);
	rangeset_free(&np);
}

static void test_upstream_gets_none(void)
{
	struct criu_exclude_report rep;
	struct ml_err err = { 0 };
	struct rangeset s, np;
	struct criu_argv a;

	criu_argv_init(&a);
	rangeset_init(&s);
	rangeset_init(&np);
	add_n(&s, 3);
	rangeset_add(&np, 0x1000, 0x2000);
	criu_argv_add(&a, "criu");
	REQUIRE(!criu_exclude_args(&a, &s, &np, &upstream_caps, NULL, &rep, &err));
	CHECK_EQ(a.n, 1);
	CHECK(rep.skipped);
	CHECK_EQ(rep.nexclude, 0);
	CHECK(strstr(rep.note, "only in a CRIU fork") != NULL);
	CHECK(strstr(rep.note, "3 hot range(s)") != NULL);
	/* exclude-range but no no-parent-range: all or nothing */
	struct criu_caps half = fork_caps;

	half.no_parent_range = false;
	REQUIRE(!criu_exclude_args(&a, &s, &np, &half, NULL, &rep, &err));
	CHECK_EQ(a.n, 1);
	CHECK(rep.skipped);
	/* nothing hot: nothing passed, not "skipped" */
	rangeset_clear(&s);
	rangeset_clear(&np);
	REQUIRE(!criu_exclude_args(&a, &s, &np, &upstream_caps, NULL, &rep, &err));
	CHECK(!rep.skipped);
	CHECK_EQ(a.n, 1);
	criu_argv_free(&a);
	rangeset_free(&s);
	rangeset_free(&np);
}

static void test_unsafe_paths_refused(void)
{
	struct ml_err err = { 0 };
	struct rangeset s;
	char path[256], p2[256];
	int fd;

	make_tmpdir();
	rangeset_init(&s);
	add_n(&s, 2);
	/* a symlink to the directory */
	snprintf(p2, sizeof(p2), "%s/link", tmpdir);
	REQUIRE(symlink(tmpdir, p2) == 0);
	CHECK(criu_write_exclude_file(p2, &s, path, sizeof(path), &err) < 0);
	unlink(p2);
	/* a directory others may write to */
	snprintf(p2, sizeof(p2), "%s/sub", tmpdir);
	REQUIRE(mkdir(p2, 0777) == 0);
	chmod(p2, 0777);
	CHECK(criu_write_exclude_file(p2, &s, path, sizeof(path), &err) == -EPERM);
	CHECK(strstr(err.msg, "not writable by group or others") != NULL);
	rmdir(p2);
	/* the file name is a symlink planted in advance */
	snprintf(p2, sizeof(p2), "%s/%s", tmpdir, CRIU_EXCLUDE_FILE_NAME);
	REQUIRE(symlink("/tmp/memlens-should-not-be-created", p2) == 0);
	CHECK(criu_write_exclude_file(tmpdir, &s, path, sizeof(path), &err) == -EEXIST);
	CHECK(access("/tmp/memlens-should-not-be-created", F_OK) < 0);
	unlink(p2);
	/* an existing file is never overwritten */
	fd = open(p2, O_CREAT | O_WRONLY, 0600);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK(criu_write_exclude_file(tmpdir, &s, path, sizeof(path), &err) == -EEXIST);
	unlink(p2);
	/* a missing directory */
	CHECK(criu_write_exclude_file("/nonexistent/memlens", &s, path, sizeof(path), &err) ==
	      -ENOENT);
	/* and a good one works */
	CHECK(criu_write_exclude_file(tmpdir, &s, path, sizeof(path), &err) == 0);
	rangeset_free(&s);
	rm_tmpdir();
}

static void test_argv_format(void)
{
	struct criu_argv a;
	char buf[128];

	criu_argv_init(&a);
	criu_argv_add(&a, "/usr/sbin/criu");
	criu_argv_add(&a, "dump");
	criu_argv_addf(&a, "--images-dir=%s", "/tmp/a b");
	criu_argv_add(&a, "it's");
	criu_argv_format(&a, buf, sizeof(buf));
	CHECK_STR(buf, "/usr/sbin/criu dump '--images-dir=/tmp/a b' 'it'\\''s'");
	criu_argv_format(&a, buf, 16);
	CHECK_EQ(strlen(buf), 15);
	CHECK(!strcmp(buf + 12, "..."));
	criu_argv_free(&a);
}

/* stats-dump: magics, length, stats_entry{ dump = 1: dump_stats_entry } */
static void test_stats_dump(void)
{
	uint8_t img[64] = { 0x40, 0x59, 0x10, 0x55, 0x06, 0x33, 0x09, 0x57 };
	uint8_t entry[] = { 0x0a, 0,	0x08, 0x05, 0x10, 0x01, 0x28, 0xac,
			    0x20, 0x30, 0x00, 0x38, 0x9e, 0x20, 0x60, 0x07 };
	int64_t sc, sk, wr;

	entry[1] = sizeof(entry) - 2;
	img[8] = sizeof(entry);
	memcpy(img + 12, entry, sizeof(entry));
	CHECK_EQ(criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr), 0);
	CHECK_EQ(sc, 4140); /* 0xac 0x20 */
	CHECK_EQ(sk, 0);
	CHECK_EQ(wr, 4126); /* 0x9e 0x20 */
	/* truncated, wrong magic, length beyond the buffer */
	CHECK(criu_parse_dump_stats(img, 12 + sizeof(entry) - 3, &sc, &sk, &wr) < 0);
	CHECK_EQ(wr, -1);
	img[0] ^= 1;
	CHECK(criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr) == -EINVAL);
	img[0] ^= 1;
	img[8] = 200;
	CHECK(criu_parse_dump_stats(img, 12 + sizeof(entry), &sc, &sk, &wr) == -EINVAL);
	/* a restore-only stats image has no dump entry */
	uint8_t rimg[16] = { 0x40, 0x59, 0x10, 0x55, 0x06, 0x33, 0x09, 0x57, 2, 0, 0, 0, 0x12, 0 };

	CHECK(criu_parse_dump_stats(rimg, 14, &sc, &sk, &wr) == -ENOENT);
}

int main(void)
{
	RUN(test_ten_ranges_inline);
	RUN(test_eleven_ranges_file);
	RUN(test_transitions);
	RUN(test_upstream_gets_none);
	RUN(test_unsafe_paths_refused);
	RUN(test_argv_format);
	RUN(test_stats_dump);
	return T_DONE();
}
