// SPDX-License-Identifier: MIT
/*
 * The control connection of a migration (lib/migrate/migrate_wire.c): its
 * lines and FILE records sent and read back over a socket pair, truncated
 * and malformed input, the names a receiver accepts and HOST:PORT.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "../../lib/migrate/migrate_wire.h"

/* @a and @b connected; @b's end read and written through @w */
struct link {
	struct wire a, b;
	int raw; /* @a's socket, for bytes the wire would never send */
};

static void link_close(struct link *l)
{
	mli_wire_close(&l->a);
	mli_wire_close(&l->b);
	free(l);
}

static struct link *link_open(void)
{
	struct link *l = calloc(1, sizeof(*l));
	int sv[2];

	REQUIRE(l);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	REQUIRE(mli_wire_open(&l->a, sv[0]) == 0);
	REQUIRE(mli_wire_open(&l->b, sv[1]) == 0);
	l->raw = sv[0];
	T_DEFER(link_close, l);
	return l;
}

/* the bytes @a's socket sends next, not through its stream; then its end */
static void raw_then_eof(struct link *l, const char *s, size_t n)
{
	REQUIRE(write(l->raw, s, n) == (ssize_t)n);
	REQUIRE(shutdown(l->raw, SHUT_WR) == 0);
}

static void rmtree(char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
	}
	free(dir);
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/memlens-wire.XXXXXX");

	REQUIRE(d && mkdtemp(d));
	T_DEFER(rmtree, d);
	return d;
}

static void test_lines_round_trip(void)
{
	struct link *l = link_open();
	char buf[64];

	CHECK_EQ(mli_wire_send(&l->a, "%s", MIGRATE_HELLO), 0);
	CHECK_EQ(mli_wire_send(&l->a, "ROUND %d", 3), 0);
	CHECK_EQ(mli_wire_send(&l->a, "%s", ""), 0);
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, MIGRATE_HELLO);
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "ROUND 3");
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "");
	/* and the other way */
	CHECK_EQ(mli_wire_send(&l->b, "STORED %d %llu", 3, 123456789012ULL), 0);
	CHECK_EQ(mli_wire_recv(&l->a, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "STORED 3 123456789012");
}

static void test_line_too_long(void)
{
	struct link *l = link_open();
	char buf[8];

	/* 7 characters and the newline fit in 8 bytes but no NUL: too long */
	CHECK_EQ(mli_wire_send(&l->a, "%s", "1234567"), 0);
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), -E2BIG);
	CHECK_EQ(mli_wire_send(&l->a, "%s", "123456"), 0);
	/* what was left of the long line, then the next one */
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "");
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "123456");
}

static void test_line_cut_short(void)
{
	struct link *l = link_open();
	char buf[64];

	raw_then_eof(l, "DONE 1\nDONE", 11);
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "DONE 1");
	/* no newline before the end of the stream: not a line */
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), -EPIPE);
	CHECK_EQ(mli_wire_recv(&l->b, buf, sizeof(buf)), -EPIPE);
}

static void write_file(const char *dir, const char *name, size_t n)
{
	char path[PATH_MAX];
	unsigned char *b = malloc(n ? n : 1);
	int fd;

	REQUIRE(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 131 + i / 251);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, b, n) == (ssize_t)n);
	close(fd);
	free(b);
}

static bool same_file(const char *d1, const char *d2, const char *name)
{
	char cmd[2 * PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s/%s' '%s/%s'", d1, name, d2, name);
	return system(cmd) == 0;
}

static void test_file_round_trip(void)
{
	struct link *l = link_open();
	char *src = tmpdir(), *dst = tmpdir();
	/* more than one 64 KiB chunk, less than the socket pair holds */
	static const struct {
		const char *name;
		size_t size;
	} f[] = { { "pages-1.img", 70000 }, { "empty.img", 0 }, { "core-7.img", 12 } };
	char line[512], name[256];
	unsigned long long size;
	struct stat st;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		write_file(src, f[i].name, f[i].size);
		REQUIRE(mli_wire_send_file(&l->a, src, f[i].name) == 0);
		CHECK_EQ(mli_wire_send(&l->a, "DONE %zu", i), 0);
	}
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char want[32];

		REQUIRE(mli_wire_recv(&l->b, line, sizeof(line)) == 0);
		REQUIRE_MSG(sscanf(line, "FILE %255s %llu", name, &size) == 2, "got '%s'", line);
		CHECK_STR(name, f[i].name);
		CHECK_EQ(size, f[i].size);
		CHECK_EQ(mli_wire_recv_file(&l->b, dst, name, size), 0);
		CHECK(same_file(src, dst, name));
		/* the record ends exactly where its size says */
		snprintf(want, sizeof(want), "DONE %zu", i);
		CHECK_EQ(mli_wire_recv(&l->b, line, sizeof(line)), 0);
		CHECK_STR(line, want);
	}
	snprintf(line, sizeof(line), "%s/pages-1.img", dst);
	REQUIRE(stat(line, &st) == 0);
	CHECK_EQ(st.st_mode & 0777, 0600);
	/* a file not there: nothing sent */
	CHECK_EQ(mli_wire_send_file(&l->a, src, "missing.img"), -ENOENT);
}

static void test_file_truncated(void)
{
	struct link *l = link_open();
	char *dst = tmpdir();
	char line[64], path[PATH_MAX];
	struct stat st;

	raw_then_eof(l, "FILE x.img 1000\n0123456789", 26);
	REQUIRE(mli_wire_recv(&l->b, line, sizeof(line)) == 0);
	CHECK_STR(line, "FILE x.img 1000");
	CHECK_EQ(mli_wire_recv_file(&l->b, dst, "x.img", 1000), -EPIPE);
	/* what came is stored, no more */
	snprintf(path, sizeof(path), "%s/x.img", dst);
	REQUIRE(stat(path, &st) == 0);
	CHECK_EQ(st.st_size, 10);
}

static void test_file_bad_name(void)
{
	static const char *const bad[] = { "", ".", "..", ".hidden", "../x", "a/b", "/etc" };
	struct link *l = link_open();
	char *dst = tmpdir();
	char line[64], longname[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(!mli_wire_name_ok(bad[i]));
		CHECK_EQ(mli_wire_recv_file(&l->b, dst, bad[i], 0), -EINVAL);
	}
	memset(longname, 'a', 200);
	longname[200] = '\0';
	CHECK(!mli_wire_name_ok(longname));
	longname[199] = '\0';
	CHECK(mli_wire_name_ok(longname));
	CHECK(mli_wire_name_ok("pages-1.img"));
	CHECK(mli_wire_name_ok("a..b"));
	/* a refused name's bytes are not read: the next line follows them */
	raw_then_eof(l, "NEXT\n", 5);
	CHECK_EQ(mli_wire_recv(&l->b, line, sizeof(line)), 0);
	CHECK_STR(line, "NEXT");
}

static void test_hostport(void)
{
	char host[16];
	int port = -1;

	CHECK_EQ(mli_wire_parse_hostport("10.0.0.2:7070", host, sizeof(host), &port), 0);
	CHECK_STR(host, "10.0.0.2");
	CHECK_EQ(port, 7070);
	CHECK_EQ(mli_wire_parse_hostport("[::1]:0", host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK_EQ(port, 0);
	CHECK_EQ(mli_wire_parse_hostport("fe80::1:65535", host, sizeof(host), &port), 0);
	CHECK_STR(host, "fe80::1");
	CHECK_EQ(port, 65535);

	static const char *const bad[] = {
		"/srv/images", "host",	     ":80",
		"host:",       "host:65536", "host:-1",
		"host:80x",    "[]:80",	     "a-host-name-too-long-for-it:80",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		port = -1;
		CHECK_EQ(mli_wire_parse_hostport(bad[i], host, sizeof(host), &port), -EINVAL);
		CHECK_EQ(port, -1);
	}
}

int main(void)
{
	RUN(test_lines_round_trip);
	RUN(test_line_too_long);
	RUN(test_line_cut_short);
	RUN(test_file_round_trip);
	RUN(test_file_truncated);
	RUN(test_file_bad_name);
	RUN(test_hostport);
	return T_DONE();
}
