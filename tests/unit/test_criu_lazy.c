// SPDX-License-Identifier: MIT
/*
 * Post-copy's numbers from CRIU's logs (lib/criu/criu_lazy_log.c), and the
 * two-step run of CRIU the lazy dump needs (lib/criu/criu_exec.c).
 */
#include <errno.h>
#include <unistd.h>

#include <string.h>

#include "harness.h"
#include "memlens/criu.h"
#include "../../lib/criu/criu_exec.h"

/* lines as criu/uffd.c writes them at -v4 (older CRIUs: without "uffd: ") */
static const char lazy_log[] =
	"(00.000010) Waiting for incoming connections on /d/lazy-pages.socket\n"
	"(00.100000) uffd: 1-5: Found 10 pages to be handled by UFFD\n"
	"(00.200000) uffd: 1-5: #PF at 0x7f0000002000\n"
	"(00.200500) 1-5: #PF at 0x7f0000009000\n"
	"(00.201000) 1-5: uffd_copy: 0x7f0000002000/4096\n"
	"(00.202000) 1-5: zero page at 0x7f0000009000\n"
	"(00.300000) 1-5: uffd_copy: 0x7f0000000000/8192\n"
	"(00.310000) 1-5: #PF at 0x7f0000004000\n"
	"(00.330000) 1-5: uffd_copy: 0x7f0000003000/28672\n"
	"(00.400000) uffd: 1-5: UFFD transferred pages: (10/10)\n";

static void test_lazy_log(void)
{
	ML_RESULT(ml_criu_lazy_stats, st);

	REQUIRE(ml_criu_parse_lazy_log(lazy_log, sizeof(lazy_log) - 1, &st) == 0);
	CHECK_EQ(st.pages_total, 10);
	CHECK_EQ(st.pages_copied, 10);
	CHECK_EQ(st.copies, 3u);
	CHECK_EQ(st.copy_bytes, 4096u + 8192 + 28672);
	CHECK_EQ(st.zero_pages, 1u);
	CHECK_EQ(st.faults, 3u);
	CHECK_EQ(st.faults_served, 3u);
	/* 1000 us, 1500 us (the zero page), 20000 us (a later, larger copy) */
	CHECK_EQ(st.wait_sum_us, 1000u + 1500 + 20000);
	CHECK_EQ(st.wait_max_us, 20000u);
	CHECK_EQ(st.first_us, 201000);
	CHECK_EQ(st.last_us, 330000);
	CHECK_EQ(st.nprocs, 1);
	CHECK_EQ(st.pages_parent, 0);
	CHECK(!st.errors);
}

/* a CRIU with the project's patches also says what it read from the parents */
static void test_lazy_log_parent_pages(void)
{
	static const char log[] = "(00.1) uffd: 1-5: Found 30 pages to be handled by UFFD\n"
				  "(00.2) uffd: 1-5: UFFD transferred pages: (30/30)\n"
				  "(00.2) uffd: 1-5: UFFD pages from the parent images: 20\n"
				  "(00.3) uffd: 2-6: UFFD transferred pages: (4/30)\n"
				  "(00.3) uffd: 2-6: UFFD pages from the parent images: 3\n";
	ML_RESULT(ml_criu_lazy_stats, st);

	REQUIRE(ml_criu_parse_lazy_log(log, sizeof(log) - 1, &st) == 0);
	CHECK_EQ(st.pages_total, 30);
	CHECK_EQ(st.pages_copied, 34);
	CHECK_EQ(st.pages_parent, 23);
	CHECK_EQ(st.nprocs, 2);
}

static void test_lazy_log_errors(void)
{
	static const char bad[] = "(00.1) 1-5: #PF at 0x1000\n"
				  "(00.2) Error (criu/uffd.c:1) 1-5: failed reading pages\n";
	ML_RESULT(ml_criu_lazy_stats, st);

	REQUIRE(ml_criu_parse_lazy_log(bad, sizeof(bad) - 1, &st) == 0);
	CHECK(st.errors);
	CHECK(strstr(st.error, "failed reading pages"));
	CHECK_EQ(st.faults, 1u);
	CHECK_EQ(st.faults_served, 0u); /* never served: no wait counted */
	CHECK_EQ(ml_criu_parse_lazy_log("no log\n", 7, &st), -EINVAL);
}

static void test_dump_log(void)
{
	static const char log[] =
		"(00.010000) Seized task 42, state 0\n"
		"(00.020000) Seized task 43, state 0\n"
		"(00.100000) Pagemap generated: 12 pages (8 lazy) 3 holes 0 excluded\n"
		"(00.110000) Pagemap generated: 5 pages (0 lazy) 1 holes\n";
	int64_t w, l, h, fz;

	REQUIRE(ml_criu_parse_dump_log(log, sizeof(log) - 1, &w, &l, &h, &fz) == 0);
	CHECK_EQ(w, 9);
	CHECK_EQ(l, 8);
	CHECK_EQ(h, 4);
	CHECK_EQ(fz, 10000);
	CHECK_EQ(ml_criu_parse_dump_log("x\n", 2, &w, &l, &h, &fz), -EINVAL);
	CHECK_EQ(w, -1);
}

static void test_exec_start_wait(void)
{
	char *argv[] = { "/bin/sh", "-c", "sleep 0.3; echo done; exit 4", NULL };
	struct criu_exec x = { .argv = argv };
	struct ml_err err = { 0 };
	struct criu_child c;

	REQUIRE(mli_criu_exec_start(&x, &c, &err) == 0);
	CHECK(mli_criu_exec_running(&c));
	REQUIRE(mli_criu_exec_wait(&x, &c, &err) == 0);
	CHECK_EQ(x.status, 4);
	CHECK(x.duration_ms >= 250);
	CHECK(x.output && strstr(x.output, "done\n"));
	free(x.output);
}

/* The stats' size (memlens/opts.h): unset, refused and nothing written. */
static void test_stats_size(void)
{
	struct ml_criu_lazy_stats st;

	memset(&st, 0xa5, sizeof(st));
	st.sz = 0;
	CHECK_EQ(ml_criu_parse_lazy_log(lazy_log, sizeof(lazy_log) - 1, &st), -EINVAL);
	CHECK_EQ(st.pages_total, (int64_t)0xa5a5a5a5a5a5a5a5ULL);
	st.sz = sizeof(st);
	CHECK_EQ(ml_criu_parse_lazy_log(lazy_log, sizeof(lazy_log) - 1, &st), 0);
	CHECK_EQ(st.sz, sizeof(st));
	CHECK(st.pages_total > 0);
}

int main(void)
{
	RUN(test_lazy_log);
	RUN(test_lazy_log_parent_pages);
	RUN(test_lazy_log_errors);
	RUN(test_dump_log);
	RUN(test_exec_start_wait);
	RUN(test_stats_size);
	return T_DONE();
}
