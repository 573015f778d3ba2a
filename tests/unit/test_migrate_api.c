// SPDX-License-Identifier: MIT
/*
 * The options of the live-migration API (memlens/migrate.h) as libbpf's
 * _opts: a caller built against an older, smaller struct ml_migrate_opts
 * is accepted and the fields it did not know read as 0 (the bytes after
 * its struct are never read); a newer, larger one is accepted while its
 * extra bytes are 0 and refused with -EINVAL when one is not; an unset sz
 * is refused. The same for ml_migrate_recv_opts, which is refused before
 * the socket is touched. Nothing here migrates: the options are checked
 * and the run planned (ml_migration_open()), no CRIU runs.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/migrate.h"

static struct ml_criu_caps caps = { .mem_dirty_track = true, .exclude_range = true };

/* a full struct and the bytes after it, for a caller of another size */
struct padded {
	struct ml_migrate_opts o;
	unsigned char tail[64];
};

static void fill(struct padded *p)
{
	memset(p, 0, sizeof(*p));
	p->o = (struct ml_migrate_opts){ .sz = sizeof(struct ml_migrate_opts),
					 .pid = 1,
					 .to = "/nonexistent/dest",
					 .work = "/nonexistent/work",
					 .caps = &caps,
					 .max_rounds = 3 };
}

static void test_current(void)
{
	struct padded in;
	struct ml_migration *m = NULL;
	struct ml_err err = { 0 };
	const struct ml_migrate_result *x;

	fill(&in);
	REQUIRE_MSG(!ml_migration_open(&m, &in.o, &err), "%s", err.msg);
	x = ml_migration_result(m);
	CHECK(x->precopy); /* soft-dirty and rounds > 0 */
	CHECK(x->exclude); /* this CRIU leaves memory out */
	CHECK_EQ(x->nr, 0);
	CHECK(ml_migration_round(m, 0) == NULL);
	CHECK(ml_migration_round(m, -1) == NULL);
	CHECK(ml_migration_proc(m, 0) == NULL);
	CHECK_EQ(ml_migration_check_postcopy(m), 0); /* no postcopy asked */
	ml_migration_close(m);
}

/*
 * A caller whose struct ended before no_exclude: the library must read
 * no_exclude, off_note and postcopy as 0 whatever the bytes after its sz
 * hold (here: all set).
 */
static void test_older_caller(void)
{
	struct padded in;
	struct ml_migration *m = NULL;
	struct ml_err err = { 0 };
	const struct ml_migrate_result *x;

	fill(&in);
	in.o.no_exclude = true;
	in.o.postcopy = true;
	in.o.off_note = "set past the old struct";
	in.o.sz = offsetof(struct ml_migrate_opts, no_exclude);
	REQUIRE_MSG(!ml_migration_open(&m, &in.o, &err), "%s", err.msg);
	x = ml_migration_result(m);
	CHECK(x->exclude); /* no_exclude read as 0 */
	CHECK_STR(x->why, ""); /* off_note not read */
	CHECK_EQ(ml_migration_check_postcopy(m), 0); /* postcopy read as 0 */
	ml_migration_close(m);

	/* the same fields inside the caller's struct are read */
	in.o.sz = sizeof(struct ml_migrate_opts);
	REQUIRE_MSG(!ml_migration_open(&m, &in.o, &err), "%s", err.msg);
	x = ml_migration_result(m);
	CHECK(!x->exclude);
	CHECK_STR(x->why, "set past the old struct");
	ml_migration_close(m);
}

static void test_newer_caller(void)
{
	struct padded in;
	struct ml_migration *m = NULL;
	struct ml_err err = { 0 };

	/* larger, its extra bytes 0: accepted */
	fill(&in);
	in.o.sz = sizeof(in);
	REQUIRE_MSG(!ml_migration_open(&m, &in.o, &err), "%s", err.msg);
	ml_migration_close(m);

	/* larger with a field this library does not know set: refused */
	in.tail[sizeof(in.tail) - 1] = 1;
	m = (struct ml_migration *)&in; /* must be reset */
	CHECK_EQ(ml_migration_open(&m, &in.o, &err), -EINVAL);
	CHECK(m == NULL);
	CHECK(strstr(err.msg, "ml_migrate_opts") != NULL);
	CHECK(strstr(err.msg, "does not know") != NULL);
}

static void test_refused(void)
{
	struct padded in;
	struct ml_migration *m = NULL;
	struct ml_err err = { 0 };

	fill(&in);
	in.o.sz = 0;
	CHECK_EQ(ml_migration_open(&m, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "ML_OPTS") != NULL);
	CHECK_EQ(ml_migration_open(&m, NULL, &err), -EINVAL);
	fill(&in);
	in.o.caps = NULL;
	CHECK_EQ(ml_migration_open(&m, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "caps") != NULL);
	fill(&in);
	in.o.max_rounds = ML_MIGRATE_MAX_ROUNDS + 1;
	CHECK_EQ(ml_migration_open(&m, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "max_rounds") != NULL);
	CHECK(m == NULL);
	ml_migration_close(NULL);
}

static void test_recv_opts(void)
{
	struct {
		struct ml_migrate_recv_opts o;
		unsigned char tail[16];
	} in;
	struct ml_err err = { 0 };

	/* -1: a socket that is never touched when the options are refused */
	memset(&in, 0, sizeof(in));
	in.o = (struct ml_migrate_recv_opts){
		.sz = sizeof(in), .dir = "/nonexistent", .host = "127.0.0.1", .caps = &caps
	};
	in.tail[3] = 7;
	CHECK_EQ(ml_migrate_receive(-1, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_migrate_recv_opts") != NULL);
	in.o.sz = 0;
	CHECK_EQ(ml_migrate_receive(-1, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "ML_OPTS") != NULL);
	/* an older caller without host and caps: they read as NULL, refused */
	in.o.sz = offsetof(struct ml_migrate_recv_opts, host);
	CHECK_EQ(ml_migrate_receive(-1, &in.o, &err), -EINVAL);
	CHECK(strstr(err.msg, "host") != NULL);
}

static void test_hostport(void)
{
	char host[64];
	int port = 0;

	CHECK_EQ(ml_migrate_parse_hostport("[::1]:7411", host, sizeof(host), &port), 0);
	CHECK_STR(host, "::1");
	CHECK_EQ(port, 7411);
	CHECK(ml_migrate_parse_hostport("nohost", host, sizeof(host), &port) < 0);
}

int main(void)
{
	RUN(test_current);
	RUN(test_older_caller);
	RUN(test_newer_caller);
	RUN(test_refused);
	RUN(test_recv_opts);
	RUN(test_hostport);
	return T_DONE();
}
