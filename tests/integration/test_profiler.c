// SPDX-License-Identifier: MIT
/*
 * The write profiler against real processes (workloads/pagewriter): exact
 * written-page counts, idle intervals, new and removed VMAs, a VMA replaced
 * at the same address, hot -> cold, multi-threaded targets, target exit,
 * and a clean detach (no uw VMAs, no uffd fd, the same maps).
 */
#include <errno.h>
#include <time.h>

#include "harness.h"
#include "machine.h"
#include "integration/target.h"
#include "../../lib/scan/pagescan.h"
#include "memlens/profiler.h"

static struct target T;
static struct ml_profiler *P;

static void start_target(void)
{
	char *argv[] = { "pagewriter", NULL };

	REQUIRE(target_start(&T, workload("pagewriter"), argv) == 0);
	REQUIRE(target_cmd(&T, "pid") != NULL);
}

static void open_profiler(double thr, int cons, bool record)
{
	ML_OPTS(ml_profiler_opts, o, .hot_threshold = thr, .hot_consecutive = cons,
		.record_ranges = record);
	struct ml_err err = { 0 };
	int r;

	target_wait_blocked(T.pid);
	r = ml_profiler_open(&P, T.pid, &o, &err);

	REQUIRE_MSG(r == 0, "profiler_open: %s", err.msg);
	/*
	 * Stopping the thread for the injection makes the kernel refresh its
	 * rseq area (in the TLS page) when it next returns to user space,
	 * which may come after the baseline: one real write, caused by us.
	 * Let it happen and scan it away before the test measures.
	 */
	struct ml_profiler_sample s;

	target_wait_blocked(T.pid);
	REQUIRE_MSG(ml_profiler_tick(P, &s, &err) == 0, "profiler_tick: %s", err.msg);
	ml_profiler_sample_free(&s);
}

static void finish(void)
{
	if (P)
		ml_profiler_close(P);
	P = NULL;
	target_stop(&T);
}

static const struct ml_profiler_region *region_at(const struct ml_profiler_sample *s,
						  uint64_t start)
{
	for (size_t i = 0; i < s->nregions; i++)
		if (s->regions[i].start <= start && start < s->regions[i].end)
			return &s->regions[i];
	return NULL;
}

static void tick(struct ml_profiler_sample *s)
{
	struct ml_err err = { 0 };
	int r;

	target_wait_blocked(T.pid);
	r = ml_profiler_tick(P, s, &err);

	REQUIRE_MSG(r == 0, "profiler_tick: %s", err.msg);
}

static void test_exact_counts_and_idle(void)
{
	struct ml_profiler_sample s;
	uint64_t a, b;

	start_target();
	REQUIRE(target_map(&T, "A", 1000, &a, &b) == 0);
	REQUIRE(target_cmd(&T, "write A 1")); /* populate every page */
	open_profiler(0, 0, false);

	tick(&s); /* nothing written since the baseline */
	CHECK_EQ(s.dirty.dirty_pages, 0);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->total_pages, 1000);
	int64_t cum0 = s.dirty.cumulative_dirty_bytes;
	ml_profiler_sample_free(&s);

	CHECK_STR(target_cmd(&T, "write A 3"), "wrote 334");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 334);
	CHECK(region_at(&s, a)->written_ratio > 0.333 && region_at(&s, a)->written_ratio < 0.335);
	/* the target's own stack, stdio and libc data were written too */
	CHECK(s.dirty.dirty_pages >= 334);
	CHECK_EQ(s.dirty.dirty_bytes, s.dirty.dirty_pages * 4096);
	CHECK_EQ(s.dirty.cumulative_dirty_bytes, cum0 + s.dirty.dirty_bytes);
	int64_t cum = s.dirty.cumulative_dirty_bytes;
	ml_profiler_sample_free(&s);

	tick(&s); /* immediate rescan of an idle target: nothing at all */
	CHECK_EQ(s.dirty.dirty_pages, 0);
	CHECK_EQ(s.dirty.cumulative_dirty_bytes, cum);
	ml_profiler_sample_free(&s);

	/* reads do not count, first touches of untouched pages do */
	REQUIRE(target_cmd(&T, "read A"));
	REQUIRE(target_map(&T, "B", 64, &a, &b) == 0);
	tick(&s); /* B registered now */
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 0);
	ml_profiler_sample_free(&s);
	CHECK_STR(target_cmd(&T, "write B 2"), "wrote 32");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 32);
	ml_profiler_sample_free(&s);
	finish();
}

static void test_new_and_removed_vmas(void)
{
	struct ml_profiler_sample s;
	uint64_t a, b, c, d;

	start_target();
	open_profiler(0, 0, false);
	REQUIRE(target_map(&T, "N", 128, &a, &b) == 0);
	tick(&s);
	CHECK(region_at(&s, a) != NULL);
	ml_profiler_sample_free(&s);
	CHECK_STR(target_cmd(&T, "write N 1"), "wrote 128");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 128);
	ml_profiler_sample_free(&s);

	CHECK_STR(target_cmd(&T, "unmap N"), "ok");
	tick(&s);
	CHECK(region_at(&s, a) == NULL);
	ml_profiler_sample_free(&s);

	/* read-only VMAs are not tracked, so never hot */
	REQUIRE(target_map(&T, "R", 32, &c, &d) == 0);
	REQUIRE(target_cmd(&T, "write R 1"));
	CHECK_STR(target_cmd(&T, "ro R"), "ok");
	tick(&s);
	CHECK(region_at(&s, c) == NULL);
	ml_profiler_sample_free(&s);
	finish();
}

static void test_replaced_vma_same_address(void)
{
	struct ml_profiler_sample s;
	uint64_t a, b, a2, b2;
	char want[64];

	start_target();
	REQUIRE(target_map(&T, "D", 100, &a, &b) == 0);
	open_profiler(0, 0, false);
	tick(&s);
	ml_profiler_sample_free(&s);
	/* munmap + mmap at the same place: the new VMA is not registered */
	const char *ans = target_cmd(&T, "remap D");
	snprintf(want, sizeof(want), "mapped D %#llx", (unsigned long long)a);
	REQUIRE(ans && !strncmp(ans, want, strlen(want)));
	(void)a2;
	(void)b2;
	CHECK_STR(target_cmd(&T, "write D 1"), "wrote 100");
	tick(&s); /* detects the replacement, registers it, counts its pages */
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 100);
	ml_profiler_sample_free(&s);
	CHECK_STR(target_cmd(&T, "write D 1"), "wrote 100");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 100);
	ml_profiler_sample_free(&s);
	finish();
}

/* a mapping created and written between two scans is not missed */
static void test_new_vma_written_before_first_scan(void)
{
	struct ml_profiler_sample s;
	uint64_t a, b;

	start_target();
	open_profiler(0, 0, true);
	REQUIRE(target_map(&T, "E", 50, &a, &b) == 0);
	CHECK_STR(target_cmd(&T, "write E 1"), "wrote 50");
	REQUIRE(target_cmd(&T, "read E"));
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 50);
	uint64_t in_e = 0;
	for (size_t i = 0; i < s.nwritten; i++)
		if (s.written[i].start >= a && s.written[i].end <= b)
			in_e += (s.written[i].end - s.written[i].start) / 4096;
	CHECK_EQ(in_e, 50);
	ml_profiler_sample_free(&s);
	/* only read since: nothing */
	REQUIRE(target_cmd(&T, "read E"));
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 0);
	ml_profiler_sample_free(&s);
	/*
	 * mapped and only read: zero pages, nothing written; where reads map
	 * fresh pages instead, each was populated by the read fault without
	 * write protection, and reads as written (content a pre-dump must send)
	 */
	REQUIRE(target_map(&T, "Z", 40, &a, &b) == 0);
	REQUIRE(target_cmd(&T, "read Z"));
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, t_zero_page() ? 0 : 40);
	ml_profiler_sample_free(&s);
	finish();
}

static void test_hot_then_cold(void)
{
	struct ml_profiler_sample s;
	uint64_t a, b;

	start_target();
	REQUIRE(target_map(&T, "H", 200, &a, &b) == 0);
	REQUIRE(target_cmd(&T, "write H 1"));
	open_profiler(0.3, 2, false);
	for (int i = 1; i <= 3; i++) {
		CHECK_STR(target_cmd(&T, "write H 2"), "wrote 100"); /* ratio 0.5 */
		tick(&s);
		REQUIRE(region_at(&s, a));
		CHECK_EQ(region_at(&s, a)->consecutive_hot, i);
		CHECK(region_at(&s, a)->hot == (i >= 2));
		ml_profiler_sample_free(&s);
	}
	CHECK_STR(target_cmd(&T, "write H 10"), "wrote 20"); /* ratio 0.1: cold */
	tick(&s);
	REQUIRE(region_at(&s, a));
	struct ml_profiler_sample latest;
	REQUIRE(ml_profiler_latest(P, &latest) == 0); /* hand ticks update it too */
	CHECK_EQ(latest.seq, s.seq);
	CHECK_EQ(latest.nregions, s.nregions);
	ml_profiler_sample_free(&latest);
	CHECK(!region_at(&s, a)->hot);
	CHECK_EQ(region_at(&s, a)->consecutive_hot, 0);
	ml_profiler_sample_free(&s);
	finish();
}

static void test_multithreaded_target(void)
{
	struct ml_profiler_sample s;
	const char *ans;
	uint64_t total = 0;

	start_target();
	ans = target_cmd(&T, "threads 4");
	REQUIRE(ans && !strcmp(ans, "ok"));
	open_profiler(0, 0, true);
	usleep(100000);
	tick(&s);
	ml_profiler_sample_free(&s);
	usleep(200000);
	tick(&s);
	for (size_t i = 0; i < s.nwritten; i++)
		total += (s.written[i].end - s.written[i].start) / 4096;
	/* 4 threads x 16 pages rewritten every ms, plus their stacks */
	CHECK(total >= 64);
	CHECK_EQ((int64_t)total, s.dirty.dirty_pages);
	ml_profiler_sample_free(&s);
	/* the target's threads are still running and it still answers */
	CHECK(target_cmd(&T, "pid") != NULL);
	finish();
}

static void test_target_exit(void)
{
	struct ml_profiler_sample s;
	struct ml_err err = { 0 };
	int status, r;

	start_target();
	open_profiler(0, 0, false);
	tick(&s);
	ml_profiler_sample_free(&s);
	fputs("exit\n", T.in);
	fflush(T.in);
	waitpid(T.pid, &status, 0);
	r = ml_profiler_tick(P, &s, &err);
	CHECK_EQ(r, -ESRCH);
	CHECK(s.target_exited);
	CHECK(strstr(err.msg, "exited") != NULL);
	ml_profiler_sample_free(&s);
	ml_profiler_close(P);
	P = NULL;
	T.pid = 0;
	fclose(T.in);
	fclose(T.out);
	T.in = T.out = NULL;
}

static void test_clean_detach(void)
{
	struct ml_profiler_sample s;
	char path[64], *before, *after;
	uint64_t a, b;

	start_target();
	REQUIRE(target_map(&T, "C", 256, &a, &b) == 0);
	REQUIRE(target_cmd(&T, "write C 1"));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)T.pid);
	before = read_file(path);
	open_profiler(0, 0, false);
	CHECK(count_uw_vmas(T.pid) > 0);
	CHECK_EQ(count_uffd_fds(T.pid), 0); /* the target never keeps the uffd */
	REQUIRE(target_cmd(&T, "write C 2"));
	tick(&s);
	ml_profiler_sample_free(&s);
	ml_profiler_close(P);
	P = NULL;
	CHECK_EQ(count_uw_vmas(T.pid), 0);
	CHECK_EQ(count_uffd_fds(T.pid), 0);
	after = read_file(path);
	REQUIRE(before && after);
	CHECK_STR(after, before);
	/* and it still works */
	CHECK_STR(target_cmd(&T, "write C 1"), "wrote 256");
	free(before);
	free(after);
	finish();
}

/* a bounded vector: scans page through walk_end and miss nothing */
static void test_scan_paging_small_vector(void)
{
	struct pagescan ps;
	struct ml_err err = { 0 };
	uint64_t a, b;
	long n;

	start_target();
	REQUIRE(target_map(&T, "V", 100, &a, &b) == 0);
	CHECK_STR(target_cmd(&T, "write V 2"), "wrote 50"); /* 50 separate runs */
	REQUIRE_MSG(mli_pagescan_open(&ps, T.pid, 2, &err) == 0, "%s", err.msg);
	n = mli_pagescan_query(&ps, a, b, 0, 0, PAGE_IS_PRESENT, PAGE_IS_PRESENT, NULL, NULL, &err);
	CHECK_EQ(n, 50);
	CHECK(ps.ioctls >= 25);
	mli_pagescan_close(&ps);
	finish();
}

static void test_attach_errors(void)
{
	struct ml_err err = { 0 };
	struct ml_profiler *p = NULL;
	int r;

	r = ml_profiler_open(&p, 999999, NULL, &err);
	CHECK_EQ(r, -ESRCH);
	CHECK(strstr(err.msg, "no process") != NULL);
	if (kthread_pid()) {
		r = ml_profiler_open(&p, kthread_pid(), NULL, &err);
		CHECK_EQ(r, -EINVAL);
		CHECK(strstr(err.msg, "kernel thread") != NULL);
	} else {
		printf("# no kernel thread is visible in this PID namespace: not tried\n");
	}
	r = ml_profiler_open(&p, getpid(), NULL, &err);
	CHECK_EQ(r, -EINVAL);
	ML_OPTS(ml_profiler_opts, o, .hot_threshold = 1.5);
	start_target();
	r = ml_profiler_open(&p, T.pid, &o, &err);
	CHECK_EQ(r, -EINVAL);
	CHECK(strstr(err.msg, "threshold") != NULL);
	finish();
}

/* A loop started without a callback runs again after release + reinit. */
static void test_reinit_restarts_loop(void)
{
	struct ml_profiler_sample s;
	struct ml_err err = { 0 };
	uint64_t a, b, seq = 0;

	start_target();
	REQUIRE(target_map(&T, "H", 64, &a, &b) == 0);
	REQUIRE(target_cmd(&T, "write H 1"));
	open_profiler(0.3, 2, false);
	REQUIRE_MSG(ml_profiler_start(P, NULL, NULL, &err) == 0, "profiler_start: %s", err.msg);
	CHECK(ml_profiler_release(P, &err) == 0);
	CHECK(!ml_profiler_running(P));
	REQUIRE_MSG(ml_profiler_reinit(P, &err) == 0, "profiler_reinit: %s", err.msg);
	CHECK(ml_profiler_running(P));
	/* new intervals come: sequence numbers from 1 again, then growing */
	for (int i = 0; i < 500 && seq < 2; i++) {
		memset(&s, 0, sizeof(s));
		if (ml_profiler_latest(P, &s) == 0) {
			seq = s.seq;
			ml_profiler_sample_free(&s);
		}
		usleep(20000);
	}
	CHECK(seq >= 2); /* the stale sample before the release has seq 1 */
	finish();
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip - test_profiler: needs root (ptrace and /proc/PID/pagemap of another "
		       "process)\n");
		return 0;
	}
	RUN(test_exact_counts_and_idle);
	RUN(test_new_and_removed_vmas);
	RUN(test_replaced_vma_same_address);
	RUN(test_new_vma_written_before_first_scan);
	RUN(test_hot_then_cold);
	RUN(test_multithreaded_target);
	RUN(test_target_exit);
	RUN(test_clean_detach);
	RUN(test_scan_paging_small_vector);
	RUN(test_attach_errors);
	RUN(test_reinit_restarts_loop);
	return T_DONE();
}
