// SPDX-License-Identifier: MIT
/*
 * A maps text that changed while the kernel printed it (a VMA twice, or
 * out of order) is read again, a bounded number of times. The reads are
 * served by a pread() of this program (it overrides the C library's for one
 * made-up fd), so each test knows exactly which text each read returns and
 * how many reads there were.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/maps.h"

#define FAKE_FD 1000

/* a VMA that grew while the kernel printed the maps: printed twice */
static const char repeated[] = "1000-2000 rw-p 00000000 00:00 0\n"
			       "3000-4000 rw-p 00000000 00:00 0\n"
			       "3000-6000 rw-p 00000000 00:00 0\n"
			       "8000-9000 rw-p 00000000 00:00 0\n";
/* a VMA that shrank while its neighbour grew down: out of order */
static const char backwards[] = "1000-2000 rw-p 00000000 00:00 0\n"
				"3000-6000 rw-p 00000000 00:00 0\n"
				"5000-7000 r--p 00000000 00:00 0\n";
static const char settled[] = "1000-2000 rw-p 00000000 00:00 0\n"
			      "3000-6000 rw-p 00000000 00:00 0\n"
			      "8000-9000 rw-p 00000000 00:00 0\n";
static const char malformed[] = "1000-2000 rw-p 00000000 00:00 0\n"
				"3000-zzzz rw-p 00000000 00:00 0\n";

/* the texts the next reads of FAKE_FD return (each read from offset 0 on) */
static const char *script[16];
static int nscript, served;

ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
	const char *t;
	size_t len;

	if (fd != FAKE_FD)
		return syscall(SYS_pread64, fd, buf, count, off);
	/* a read from offset 0 starts the next text of the script */
	if (off == 0)
		served++;
	if (served < 1 || served > nscript) {
		errno = EIO;
		return -1;
	}
	t = script[served - 1];
	len = strlen(t);
	if ((size_t)off >= len)
		return 0;
	if (count > len - (size_t)off)
		count = len - (size_t)off;
	memcpy(buf, t + off, count);
	return (ssize_t)count;
}

static void play(int n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		script[i] = va_arg(ap, const char *);
	va_end(ap);
	nscript = n;
	served = 0;
}

static void test_parse_says_again(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;

	ml_vma_set_init(&s);
	CHECK_EQ(ml_maps_parse(repeated, strlen(repeated), &s, &err), -EAGAIN);
	CHECK(strstr(err.msg, "maps line 3 overlaps") != NULL);
	CHECK(strstr(err.msg, "changed while it was read") != NULL);
	CHECK_EQ(ml_maps_parse(backwards, strlen(backwards), &s, &err), -EAGAIN);
	CHECK(strstr(err.msg, "maps line 3") != NULL);
	/* a malformed line is not a change: no second chance */
	CHECK_EQ(ml_maps_parse(malformed, strlen(malformed), &s, &err), -EINVAL);
	ml_vma_set_free(&s);
}

static void test_read_again_until_settled(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;
	char *buf = NULL;
	size_t sz = 0;

	ml_vma_set_init(&s);
	play(3, repeated, backwards, settled);
	REQUIRE_MSG(ml_maps_read_fd(FAKE_FD, &buf, &sz, &s, &err) == 0, "%s", err.msg);
	CHECK_EQ(served, 3);
	CHECK_EQ(s.n, 3);
	CHECK_EQ(s.v[1].start, 0x3000);
	CHECK_EQ(s.v[1].end, 0x6000);
	CHECK_EQ(s.v[2].start, 0x8000);

	/* a consistent first read is parsed once: no second read */
	play(2, settled, repeated);
	REQUIRE_MSG(ml_maps_read_fd(FAKE_FD, &buf, &sz, &s, &err) == 0, "%s", err.msg);
	CHECK_EQ(served, 1);
	CHECK_EQ(s.n, 3);
	free(buf);
	ml_vma_set_free(&s);
}

static void test_parse_fd_returns_the_new_text(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;
	size_t sz = 4096;
	char *buf = malloc(sz);
	ssize_t n;

	REQUIRE(buf);
	ml_vma_set_init(&s);
	/* the caller read the first text itself (the profiler compares it
	 * with the last one first) */
	memcpy(buf, repeated, strlen(repeated));
	play(1, settled);
	n = ml_maps_parse_fd(FAKE_FD, &buf, &sz, strlen(repeated), &s, &err);
	CHECK_EQ(n, (ssize_t)strlen(settled));
	CHECK_EQ(served, 1);
	CHECK(n > 0 && !memcmp(buf, settled, (size_t)n));
	CHECK_EQ(s.n, 3);
	free(buf);
	ml_vma_set_free(&s);
}

static void test_bounded(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;
	char *buf = NULL;
	size_t sz = 0;

	ml_vma_set_init(&s);
	play(16, repeated, backwards, repeated, backwards, repeated, backwards, repeated, backwards,
	     repeated, backwards, repeated, backwards, repeated, backwards, repeated, settled);
	CHECK_EQ(ml_maps_read_fd(FAKE_FD, &buf, &sz, &s, &err), -EAGAIN);
	CHECK_EQ(served, ML_MAPS_READ_TRIES);
	CHECK(strstr(err.msg, "kept changing") != NULL);
	CHECK(strstr(err.msg, "8 reads in a row") != NULL);

	/* a malformed text is an error at once */
	play(2, malformed, settled);
	CHECK_EQ(ml_maps_read_fd(FAKE_FD, &buf, &sz, &s, &err), -EINVAL);
	CHECK_EQ(served, 1);

	/* the process exits between two reads: that error, not a retry count */
	play(2, repeated, "");
	CHECK_EQ(ml_maps_read_fd(FAKE_FD, &buf, &sz, &s, &err), -ESRCH);
	CHECK_EQ(served, 2);
	free(buf);
	ml_vma_set_free(&s);
}

int main(void)
{
	RUN(test_parse_says_again);
	RUN(test_read_again_until_settled);
	RUN(test_parse_fd_returns_the_new_text);
	RUN(test_bounded);
	return T_DONE();
}
