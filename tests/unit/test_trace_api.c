// SPDX-License-Identifier: MIT
/*
 * The tracer library's public API (memlens/trace_oom.h, trace_faults.h,
 * trace_slab.h) where it needs no BPF: options without their size or with
 * fields this library does not know are refused before anything is
 * loaded, close takes NULL, and the helpers that read sysfs say nothing
 * of a cache that is not there.
 */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "memlens/opts.h"
#include "memlens/trace_faults.h"
#include "memlens/trace_oom.h"
#include "memlens/trace_slab.h"

static void test_opts_without_size(void)
{
	struct ml_oom_tracer_opts oo = { 0 };
	struct ml_faults_tracer_opts fo = { 0 };
	struct ml_slab_tracer_opts so = { 0 };
	struct ml_oom_tracer *ot = (void *)1;
	struct ml_faults_tracer *ft = (void *)1;
	struct ml_slab_tracer *st = (void *)1;
	struct ml_err err = { 0 };

	CHECK_EQ(ml_oom_tracer_open(&ot, &oo, &err), -EINVAL);
	CHECK(ot == NULL);
	CHECK(strstr(err.msg, "ml_oom_tracer_opts") != NULL);
	CHECK_EQ(ml_faults_tracer_open(&ft, &fo, &err), -EINVAL);
	CHECK(ft == NULL);
	CHECK(strstr(err.msg, "ml_faults_tracer_opts") != NULL);
	CHECK_EQ(ml_slab_tracer_open(&st, &so, &err), -EINVAL);
	CHECK(st == NULL);
	CHECK(strstr(err.msg, "ml_slab_tracer_opts") != NULL);
}

/* a caller built against a newer header, setting a field this library lacks */
static void test_opts_unknown_field(void)
{
	struct {
		struct ml_slab_tracer_opts o;
		long newer;
	} big;
	struct ml_slab_tracer *st = (void *)1;
	struct ml_err err = { 0 };

	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.newer = 1;
	CHECK_EQ(ml_slab_tracer_open(&st, &big.o, &err), -EINVAL);
	CHECK(st == NULL);
}

static void test_close_null(void)
{
	struct ml_faults_counts fc = { 0 };
	struct ml_slab_counts sc = { 0 };

	ml_oom_tracer_close(NULL);
	ml_faults_tracer_close(NULL);
	ml_slab_tracer_close(NULL);
	ml_faults_counts_free(&fc);
	ml_slab_counts_free(&sc);
	CHECK(fc.rows == NULL && sc.rows == NULL);
}

static void test_merged_names_of_no_cache(void)
{
	char names[64] = "x";

	ml_slab_merged_names("no-such-cache-memlens", names, sizeof(names));
	CHECK_STR(names, "");
}

int main(void)
{
	RUN(test_opts_without_size);
	RUN(test_opts_unknown_field);
	RUN(test_close_null);
	RUN(test_merged_names_of_no_cache);
	return T_DONE();
}
