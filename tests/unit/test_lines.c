// SPDX-License-Identifier: MIT
/* The bounded line reader of report and migrate-model. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/lines.h"

static FILE *mem(const char *s, size_t n)
{
	FILE *f = fmemopen((void *)s, n, "r");

	REQUIRE(f);
	return f;
}

static void test_lines_and_nul(void)
{
	static const char in[] = "a\n\nbc\0d\nlast";
	struct ml_err err = { 0 };
	FILE *f = mem(in, sizeof(in) - 1);
	struct ml_lines l;
	const char *p;
	size_t n;

	ml_lines_init(&l, f, "in", 16);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 1);
	CHECK_EQ(n, 1);
	CHECK_STR(p, "a");
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 1);
	CHECK_EQ(n, 0);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 1);
	CHECK_EQ(n, 4); /* the NUL byte is kept */
	CHECK(!memcmp(p, "bc\0d", 4));
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 1); /* no final newline */
	CHECK_STR(p, "last");
	CHECK_EQ(l.lineno, 4);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 0);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 0);
	ml_lines_free(&l);
	fclose(f);
}

/* exactly the limit passes, one byte more is refused with FILE:LINE */
static void test_limit(void)
{
	char in[64];
	struct ml_err err = { 0 };
	struct ml_lines l;
	const char *p;
	size_t n;
	FILE *f;

	memset(in, 'x', sizeof(in));
	in[8] = '\n'; /* line 1: 8 bytes */
	in[18] = '\n'; /* line 2: 9 bytes */
	f = mem(in, 19);
	ml_lines_init(&l, f, "t.jsonl", 8);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), 1);
	CHECK_EQ(n, 8);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), -EINVAL);
	CHECK_STR(err.msg, "t.jsonl:2: line longer than 8 bytes");
	ml_lines_free(&l);
	fclose(f);
}

/* /dev/zero: refused after reading the limit, in bounded memory */
static void test_dev_zero(void)
{
	struct ml_err err = { 0 };
	struct ml_lines l;
	const char *p;
	size_t n;
	FILE *f = fopen("/dev/zero", "re");

	if (!f)
		SKIP("no /dev/zero");
	ml_lines_init(&l, f, "/dev/zero", 1 << 20);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), -EINVAL);
	CHECK_STR(err.msg, "/dev/zero:1: line longer than 1048576 bytes");
	CHECK(l.cap <= (1u << 20) + 1);
	ml_lines_free(&l);
	fclose(f);
}

static void test_directory(void)
{
	struct ml_err err = { 0 };
	struct ml_lines l;
	const char *p;
	size_t n;
	FILE *f = fopen("/", "re");

	REQUIRE(f);
	CHECK_EQ(ml_lines_check_file(f, "/", &err), -EISDIR);
	CHECK_STR(err.msg, "/: is a directory; give a JSON Lines file");
	/* and if read anyway */
	ml_lines_init(&l, f, "/", 0);
	CHECK_EQ(ml_lines_next(&l, &p, &n, &err), -EISDIR);
	ml_lines_free(&l);
	fclose(f);
}

static void test_default_limit(void)
{
	struct ml_lines l;

	ml_lines_init(&l, stdin, "x", 0);
	CHECK_EQ(l.max, ML_MAX_LINE);
	CHECK_EQ(ML_MAX_LINE, 64 << 20);
}

int main(void)
{
	RUN(test_lines_and_nul);
	RUN(test_limit);
	RUN(test_dev_zero);
	RUN(test_directory);
	RUN(test_default_limit);
	return T_DONE();
}
