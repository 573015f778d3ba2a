// SPDX-License-Identifier: MIT
/*
 * Options structs with a size field (memlens/opts.h): a caller built
 * against older headers (a smaller sz) gets 0 for the fields it did not
 * know; one built against newer headers may pass unknown fields only as 0;
 * an unset sz is refused with a message that says how to set it.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "memlens/migrate_model.h"
#include "memlens/opts.h"
#include "memlens/profiler.h"

/* what the library knows: the current struct */
struct cur_opts {
	size_t sz;
	int a;
	int b;
	double c;
};

/* an older caller knew only sz and a */
struct old_opts {
	size_t sz;
	int a;
};

/* a newer caller knows one field more */
struct new_opts {
	size_t sz;
	int a;
	int b;
	double c;
	uint64_t d;
};

static void test_same_size(void)
{
	ML_OPTS(cur_opts, in, .a = 1, .b = 2, .c = 3.5);
	struct cur_opts out;
	struct ml_err err = { 0 };

	REQUIRE(!ml_opts_load(&out, sizeof(out), &in, "cur_opts", &err));
	CHECK_EQ(out.sz, sizeof(struct cur_opts));
	CHECK_EQ(out.a, 1);
	CHECK_EQ(out.b, 2);
	CHECK(out.c == 3.5);
}

static void test_older_caller(void)
{
	/* the bytes after the old struct must not be read: poison them */
	struct {
		struct old_opts o;
		unsigned char poison[64];
	} in;
	struct cur_opts out;
	struct ml_err err = { 0 };

	memset(&in, 0xa5, sizeof(in));
	/* what ML_OPTS(old_opts, ...) does: its padding is zero */
	memset(&in.o, 0, sizeof(in.o));
	in.o.sz = sizeof(struct old_opts);
	in.o.a = 7;
	REQUIRE(!ml_opts_load(&out, sizeof(out), &in.o, "cur_opts", &err));
	CHECK_EQ(out.sz, sizeof(struct cur_opts));
	CHECK_EQ(out.a, 7);
	CHECK_EQ(out.b, 0);
	CHECK(out.c == 0);
}

static void test_newer_caller(void)
{
	ML_OPTS(new_opts, in, .a = 4, .b = 5);
	struct cur_opts out;
	struct ml_err err = { 0 };

	/* an unknown field left 0: accepted */
	REQUIRE(!ml_opts_load(&out, sizeof(out), &in, "cur_opts", &err));
	CHECK_EQ(out.a, 4);
	CHECK_EQ(out.b, 5);
	CHECK_EQ(out.sz, sizeof(struct cur_opts));
	/* set: refused, and the message says which sizes */
	in.d = 1;
	CHECK_EQ(ml_opts_load(&out, sizeof(out), &in, "cur_opts", &err), -EINVAL);
	CHECK(strstr(err.msg, "does not know") != NULL);
	CHECK(strstr(err.msg, "cur_opts") != NULL);
}

static void test_sz_unset(void)
{
	struct cur_opts in = { .a = 1 };
	struct cur_opts out;
	struct ml_err err = { 0 };

	CHECK_EQ(ml_opts_load(&out, sizeof(out), &in, "cur_opts", &err), -EINVAL);
	CHECK(strstr(err.msg, "ML_OPTS") != NULL);
	/* NULL: every default */
	REQUIRE(!ml_opts_load(&out, sizeof(out), NULL, "cur_opts", &err));
	CHECK_EQ(out.sz, sizeof(struct cur_opts));
	CHECK_EQ(out.a, 0);
}

/* the library's own entry points refuse a struct without sz */
static void test_library_refuses(void)
{
	struct ml_mm_params p = { .bandwidth_mbps = 1, .round_interval_s = 2 };
	ML_MM_RESULTS(res);
	struct ml_mm_trace t;
	struct ml_err err = { 0 };
	struct ml_profiler *prof = NULL;
	struct ml_profiler_opts po = { .interval_ms = 10 };

	ml_mm_trace_init(&t);
	CHECK_EQ(ml_mm_run(&t, &p, res, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_mm_params") != NULL);
	ml_mm_trace_free(&t);
	CHECK_EQ(ml_profiler_open(&prof, 1, &po, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_profiler_opts") != NULL);
	CHECK(prof == NULL);
}

int main(void)
{
	RUN(test_same_size);
	RUN(test_older_caller);
	RUN(test_newer_caller);
	RUN(test_sz_unset);
	RUN(test_library_refuses);
	return T_DONE();
}
