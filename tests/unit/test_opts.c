// SPDX-License-Identifier: MIT
/*
 * Options structs with a size field (memlens/opts.h): a caller built
 * against older headers (a smaller sz) gets 0 for the fields it did not
 * know; one built against newer headers may pass unknown fields only as 0;
 * an unset sz is refused with a message that says how to set it.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "memlens/criu.h"
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

/*
 * Results a caller allocates (ml_result_store()): an older caller's smaller
 * struct gets the fields it knows and nothing past it; a newer caller's
 * larger one gets the library's fields, the rest zeroed, its own sz kept;
 * an unset or too small sz is refused and nothing is written.
 */
struct cur_res {
	size_t sz;
	int a;
	int b;
	double c;
};

struct old_res {
	size_t sz;
	int a;
};

static void test_result_sizes(void)
{
	const struct cur_res lib = { .sz = sizeof(lib), .a = 1, .b = 2, .c = 3.5 };
	struct {
		struct old_res r;
		unsigned char guard[32];
	} old;
	struct {
		struct cur_res r;
		uint64_t d;
	} newer;
	struct ml_err err = { 0 };

	memset(&old, 0xa5, sizeof(old));
	old.r.sz = sizeof(old.r);
	REQUIRE(!ml_result_store(&old.r, &lib, sizeof(lib), sizeof(old.r), "cur_res", &err));
	CHECK_EQ(old.r.sz, sizeof(struct old_res));
	CHECK_EQ(old.r.a, 1);
	for (size_t i = 0; i < sizeof(old.guard); i++)
		if (old.guard[i] != 0xa5)
			T_FAILMSG("byte %zu after the older caller's struct was written", i);

	memset(&newer, 0xa5, sizeof(newer));
	newer.r.sz = sizeof(newer);
	REQUIRE(!ml_result_store(&newer, &lib, sizeof(lib), sizeof(old.r), "cur_res", &err));
	CHECK_EQ(newer.r.sz, sizeof(newer));
	CHECK_EQ(newer.r.b, 2);
	CHECK(newer.r.c == 3.5);
	CHECK_EQ(newer.d, 0); /* what this library does not know: 0 */

	memset(&old, 0xa5, sizeof(old));
	old.r.sz = 0;
	CHECK_EQ(ml_result_store(&old.r, &lib, sizeof(lib), sizeof(old.r), "cur_res", &err),
		 -EINVAL);
	CHECK(strstr(err.msg, "cur_res") != NULL);
	CHECK_EQ(old.r.a, (int)0xa5a5a5a5);
	old.r.sz = sizeof(size_t); /* smaller than the fields every version had */
	CHECK_EQ(ml_result_store(&old.r, &lib, sizeof(lib), sizeof(old.r), "cur_res", NULL),
		 -EINVAL);
	CHECK_EQ(old.r.a, (int)0xa5a5a5a5);
}

/*
 * A library function given a result without its sz refuses it before it
 * does anything (no CRIU is run here) and leaves it as it was; with its sz
 * a call that fails still clears it (what the library knows of it).
 */
static void test_result_unset_refused(void)
{
	struct ml_criu_caps *caps = malloc(sizeof(*caps));
	struct ml_err err = { 0 };

	REQUIRE(caps);
	memset(caps, 0xa5, sizeof(*caps));
	caps->sz = 0;
	CHECK_EQ(ml_criu_probe("/nonexistent/criu", caps, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_criu_caps") != NULL);
	CHECK_EQ(caps->path[0], (char)0xa5);
	caps->sz = sizeof(*caps);
	CHECK(ml_criu_probe("/nonexistent/criu", caps, &err) < 0);
	CHECK_EQ(caps->sz, sizeof(*caps));
	CHECK(!caps->works && !caps->exclude_range && !caps->check_msg[0]);
	free(caps);
}

int main(void)
{
	RUN(test_same_size);
	RUN(test_older_caller);
	RUN(test_newer_caller);
	RUN(test_sz_unset);
	RUN(test_library_refuses);
	RUN(test_result_sizes);
	RUN(test_result_unset_refused);
	return T_DONE();
}
