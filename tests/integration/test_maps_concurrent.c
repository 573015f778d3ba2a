// SPDX-License-Identifier: MIT
/*
 * A target whose VMAs change all the time (workloads/stress_vmagrow: mprotect
 * growth, splits and merges, mremap): the kernel's maps text of it is now
 * and then inconsistent (a VMA twice, or out of order); the maps reader,
 * the profiler and the snapshot collector must read again and go on.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "integration/target.h"
#include "memlens/maps.h"
#include "memlens/profiler.h"
#include "memlens/snapshot.h"

#define READS 3000

static pid_t target;
static char result_path[64];

static void stop_vmagrow(void)
{
	if (target > 0) {
		kill(target, SIGKILL);
		waitpid(target, NULL, 0);
	}
	target = 0;
	unlink(result_path);
}

static void start_vmagrow(void)
{
	char *argv[] = { "stress_vmagrow", "-r", result_path, "-t", "120", NULL };
	char line[128] = "";
	int p[2];
	FILE *f;

	stop_vmagrow(); /* one a failed test left */
	snprintf(result_path, sizeof(result_path), "/tmp/memlens-test-vmagrow.%d", (int)getpid());
	REQUIRE(pipe(p) == 0);
	target = fork();
	REQUIRE(target >= 0);
	if (target == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(workload("stress_vmagrow"), argv);
		_exit(127);
	}
	T_CHILD(target);
	close(p[1]);
	f = fdopen(p[0], "r");
	REQUIRE(f && fgets(line, sizeof(line), f));
	fclose(f);
	REQUIRE_MSG(!strncmp(line, "ready", 5), "stress_vmagrow did not start: %s", line);
}

static int maps_fd(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)target);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The condition is real: single reads of this target's maps disagree with
 * themselves now and then (on this kernel: per-VMA locked maps reads). */
static void test_raw_reads_see_changes(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;
	char *buf = NULL;
	size_t sz = 0;
	int fd, changed = 0;

	start_vmagrow();
	fd = maps_fd();
	REQUIRE(fd >= 0);
	ml_vma_set_init(&s);
	for (int i = 0; i < READS; i++) {
		ssize_t n = ml_maps_read_raw(fd, &buf, &sz, &err);
		int r;

		REQUIRE_MSG(n > 0, "%s", err.msg);
		r = ml_maps_parse(buf, (size_t)n, &s, &err);
		REQUIRE_MSG(r == 0 || r == -EAGAIN, "%s", err.msg);
		changed += r == -EAGAIN;
	}
	printf("#   %d of %d single reads saw the map change under them\n", changed, READS);
	close(fd);
	free(buf);
	ml_vma_set_free(&s);
	stop_vmagrow();
	if (!changed)
		SKIP("no read of %d saw the map change (the retry is not exercised here)", READS);
}

static void test_maps_read_settles(void)
{
	struct ml_err err = { 0 };
	struct ml_vma_set s;

	start_vmagrow();
	ml_vma_set_init(&s);
	for (int i = 0; i < READS; i++) {
		int r = ml_maps_read(target, &s, &err);

		REQUIRE_MSG(r == 0, "read %d: %s", i, err.msg);
		for (size_t k = 1; k < s.n; k++)
			REQUIRE(s.v[k].start >= s.v[k - 1].end);
	}
	ml_vma_set_free(&s);
	stop_vmagrow();
}

static void test_profiler_goes_on(void)
{
	ML_OPTS(ml_profiler_opts, o, .interval_ms = 10);
	struct ml_err err = { 0 };
	struct ml_profiler *p = NULL;
	int ticks = 0, failed = 0;

	start_vmagrow();
	REQUIRE_MSG(ml_profiler_open(&p, target, &o, &err) == 0, "profiler_open: %s", err.msg);
	for (int i = 0; i < 300; i++) {
		struct ml_profiler_sample smp;
		struct timespec ms = { 0, 2000000 };
		int r = ml_profiler_tick(p, &smp, &err);

		if (r) {
			printf("#   tick %d: %s\n", i, err.msg);
			failed++;
		} else {
			ticks++;
			ml_profiler_sample_free(&smp);
		}
		nanosleep(&ms, NULL);
	}
	CHECK_EQ(failed, 0);
	CHECK_EQ(ticks, 300);
	ml_profiler_close(p);
	stop_vmagrow();
}

/* The profiler's own thread (as `memlens writes` and the agent run it). */
static int samples;
static void count_sample(const struct ml_profiler_sample *s, void *arg)
{
	(void)s;
	(void)arg;
	__atomic_add_fetch(&samples, 1, __ATOMIC_RELAXED);
}

static void test_profiler_thread_goes_on(void)
{
	ML_OPTS(ml_profiler_opts, o, .interval_ms = 10);
	struct ml_err err = { 0 };
	struct ml_profiler *p = NULL;
	struct timespec two = { 2, 0 };

	start_vmagrow();
	REQUIRE_MSG(ml_profiler_open(&p, target, &o, &err) == 0, "profiler_open: %s", err.msg);
	samples = 0;
	REQUIRE_MSG(ml_profiler_start(p, count_sample, NULL, &err) == 0, "%s", err.msg);
	nanosleep(&two, NULL);
	CHECK(ml_profiler_running(p));
	CHECK_EQ(ml_profiler_error(p, &err), 0);
	CHECK(__atomic_load_n(&samples, __ATOMIC_RELAXED) > 0);
	ml_profiler_close(p);
	stop_vmagrow();
}

static void test_snapshot_goes_on(void)
{
	ML_OPTS(ml_snapshot_opts, o);
	struct ml_err err = { 0 };
	struct ml_snapshotter *s = NULL;
	struct ml_snapshot snap;

	start_vmagrow();
	REQUIRE_MSG(ml_snapshot_open(&s, target, &o, &err) == 0, "snapshot_open: %s", err.msg);
	ml_snapshot_init(&snap);
	for (int i = 0; i < 300; i++) {
		int r = ml_snapshot_take(s, &snap, &err);

		REQUIRE_MSG(r == 0, "snapshot %d: %s", i, err.msg);
		for (size_t k = 1; k < snap.vmas.n; k++)
			REQUIRE(snap.vmas.v[k].start >= snap.vmas.v[k - 1].end);
	}
	ml_snapshot_free(&snap);
	ml_snapshot_close(s);
	stop_vmagrow();
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_raw_reads_see_changes);
	RUN(test_maps_read_settles);
	RUN(test_profiler_goes_on);
	RUN(test_profiler_thread_goes_on);
	RUN(test_snapshot_goes_on);
	stop_vmagrow();
	return T_DONE();
}
