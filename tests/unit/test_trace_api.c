// SPDX-License-Identifier: MIT
/*
 * The tracer library's public API (memlens/trace_oom.h, trace_faults.h,
 * trace_slab.h, trace_leaks.h) where it needs no BPF: options without their size or with
 * fields this library does not know are refused before anything is
 * loaded, close (and the leak tracer's fd and poll) take NULL, and the
 * helpers that read sysfs say nothing of a cache that is not there.
 */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "memlens/opts.h"
#include "memlens/trace_faults.h"
#include "memlens/trace_leaks.h"
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

static void test_leaks_opts_without_size(void)
{
	struct ml_leaks_tracer_opts lo = { .pid = 1 };
	struct ml_leaks_tracer *lt = (void *)1;
	struct ml_err err = { 0 };

	CHECK_EQ(ml_leaks_tracer_open(&lt, &lo, &err), -EINVAL);
	CHECK(lt == NULL);
	CHECK(strstr(err.msg, "ml_leaks_tracer_opts") != NULL);
}

/* likewise, from a caller built against a newer header */
static void test_leaks_opts_unknown_field(void)
{
	struct {
		struct ml_leaks_tracer_opts o;
		long newer;
	} big;
	struct ml_leaks_tracer *lt = (void *)1;
	struct ml_err err = { 0 };

	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.pid = 1;
	big.newer = 1;
	CHECK_EQ(ml_leaks_tracer_open(&lt, &big.o, &err), -EINVAL);
	CHECK(lt == NULL);
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
	struct ml_leaks_outstanding lo = { 0 };

	ml_oom_tracer_close(NULL);
	ml_faults_tracer_close(NULL);
	ml_slab_tracer_close(NULL);
	ml_leaks_tracer_detach(NULL);
	ml_leaks_tracer_close(NULL);
	ml_faults_counts_free(&fc);
	ml_slab_counts_free(&sc);
	ml_leaks_outstanding_free(&lo);
	CHECK(fc.rows == NULL && sc.rows == NULL);
	CHECK(lo.sizes == NULL && lo.stacks == NULL && lo.nsizes == 0 && lo.nstacks == 0);
}

/* the ring buffer of stack copies: nothing to poll without a tracer */
static void test_leaks_poll_null(void)
{
	CHECK_EQ(ml_leaks_tracer_fd(NULL), -EINVAL);
	CHECK_EQ(ml_leaks_tracer_poll(NULL, 0), -EINVAL);
	CHECK_EQ(ml_leaks_tracer_poll(NULL, 10), -EINVAL);
	CHECK_EQ(ml_leaks_tracer_poll(NULL, -1), -EINVAL); /* does not wait forever */
}

/* nor with the handle an open that failed leaves */
static void test_leaks_poll_after_failed_open(void)
{
	struct ml_leaks_tracer_opts lo = { .pid = 1 };
	struct ml_leaks_tracer *lt = (void *)1;
	struct ml_err err = { 0 };

	CHECK_EQ(ml_leaks_tracer_open(&lt, &lo, &err), -EINVAL);
	CHECK(lt == NULL);
	CHECK_EQ(ml_leaks_tracer_fd(lt), -EINVAL);
	CHECK_EQ(ml_leaks_tracer_poll(lt, 0), -EINVAL);
	ml_leaks_tracer_close(lt);
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
	RUN(test_leaks_opts_without_size);
	RUN(test_leaks_opts_unknown_field);
	RUN(test_close_null);
	RUN(test_leaks_poll_null);
	RUN(test_leaks_poll_after_failed_open);
	RUN(test_merged_names_of_no_cache);
	return T_DONE();
}
