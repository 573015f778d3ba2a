// SPDX-License-Identifier: MIT
/*
 * The checkpoint flow of the library with a real CRIU and a real
 * target (workloads/pagewriter): hot set -> release -> criu dump -> re-init,
 * then exact written-page counts again; CRIU failing and the target gone
 * leave the target running and tracked. Needs a CRIU: $MEMLENS_CRIU, else
 * scripts/ensure-criu.sh (which builds one when missing).
 */
#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "integration/target.h"
#include "memlens/criu.h"
#include "memlens/profiler.h"

static struct ml_criu_caps CAPS;
static bool have_criu;
static char criu_why[200] = "no CRIU";
static struct target T;
static struct ml_profiler *P;
static char dir_tmpl[] = "/tmp/memlens-criu-flow-XXXXXX";

static void find_criu(void)
{
	struct ml_err err = { 0 };
	char path[4096] = "";
	const char *env = getenv("MEMLENS_CRIU");
	FILE *f;

	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else if ((f = popen("scripts/ensure-criu.sh 2>/dev/null", "r"))) {
		if (!fgets(path, sizeof(path), f))
			path[0] = '\0';
		pclose(f);
		path[strcspn(path, "\n")] = '\0';
	}
	if (!path[0]) {
		snprintf(criu_why, sizeof(criu_why),
			 "no CRIU: scripts/ensure-criu.sh found or built none");
		return;
	}
	CAPS.sz = sizeof(CAPS);
	if (ml_criu_probe(path, &CAPS, &err)) {
		snprintf(criu_why, sizeof(criu_why), "CRIU %.60s: %.120s", path, err.msg);
		return;
	}
	if (!CAPS.works) {
		snprintf(criu_why, sizeof(criu_why), "CRIU %.150s fails criu check", path);
		return;
	}
	have_criu = true;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* After a failure: the tail of each CRIU log of DIR, where the runner shows it. */
static void show_logs(const char *dir)
{
	char pattern[128], line[512];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "%s/*.log", dir);
	if (glob(pattern, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char cmd[300];
		FILE *f;

		snprintf(cmd, sizeof(cmd), "tail -n 12 '%s'", g.gl_pathv[i]);
		printf("#   --- %s:\n", g.gl_pathv[i]);
		if (!(f = popen(cmd, "r")))
			continue;
		while (fgets(line, sizeof(line), f))
			printf("#   %s", line);
		pclose(f);
	}
	globfree(&g);
}

static void rm_images(const char *dir)
{
	if (t_cur_failed)
		show_logs(dir);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void noop(const struct ml_profiler_sample *s, void *arg)
{
	(void)s;
	(void)arg;
}

static void setup(uint64_t *a, uint64_t *b)
{
	char *argv[] = { "pagewriter", NULL };
	ML_OPTS(ml_profiler_opts, o, .interval_ms = 100, .hot_threshold = 0.3,
		.hot_consecutive = 2);
	struct ml_err err = { 0 };

	if (!have_criu)
		SKIP("%s", criu_why);
	REQUIRE(target_start(&T, workload("pagewriter"), argv) == 0);
	REQUIRE(target_cmd(&T, "pid") != NULL);
	REQUIRE(target_map(&T, "A", 64, a, b) == 0);
	REQUIRE(target_cmd(&T, "write A 1"));
	REQUIRE_MSG(ml_profiler_open(&P, T.pid, &o, &err) == 0, "profiler_open: %s", err.msg);
	REQUIRE_MSG(ml_profiler_start(P, noop, NULL, &err) == 0, "profiler_start: %s", err.msg);
}

static void finish(void)
{
	if (P)
		ml_profiler_close(P);
	P = NULL;
	if (T.pid)
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

/* Keep writing all of A until the profiler calls it hot (bounded wait). */
static bool make_hot(uint64_t a)
{
	struct timespec ts = { 0, 50 * 1000000L };

	for (int i = 0; i < 200; i++) {
		struct ml_profiler_sample s = { 0 };
		bool hot = false;

		target_cmd(&T, "write A 1");
		nanosleep(&ts, NULL);
		if (!ml_profiler_latest(P, &s) && region_at(&s, a))
			hot = region_at(&s, a)->hot;
		ml_profiler_sample_free(&s);
		if (hot)
			return true;
	}
	return false;
}

static void tick(struct ml_profiler_sample *s)
{
	struct ml_err err = { 0 };

	REQUIRE_MSG(ml_profiler_tick(P, s, &err) == 0, "profiler_tick: %s", err.msg);
}

static void test_checkpoint_then_exact_counts(void)
{
	struct ml_criu_dump_req req = { 0 };
	struct ml_criu_session *sess = NULL;
	struct ml_profiler_sample s = { 0 }, before = { 0 };
	struct ml_criu_result res;
	struct ml_err err = { 0 };
	struct ml_rangeset hot;
	char dir[64];
	uint64_t a, b;
	int r;

	setup(&a, &b);
	ml_rangeset_init(&hot);
	REQUIRE(make_hot(a));
	REQUIRE(!ml_profiler_latest(P, &before));
	strcpy(dir, dir_tmpl);
	REQUIRE(mkdtemp(dir));
	REQUIRE(ml_criu_session_open(&sess, &CAPS, NULL, &err) == 0);
	req.pid = T.pid;
	req.images_dir = dir;
	req.leave_running = true;
	req.shell_job = true; /* harmless: the target leads its own session */
	r = ml_criu_checkpoint(sess, P, &req, &res, &hot, &err);
	if (r)
		show_logs(dir);
	REQUIRE_MSG(r == 0, "criu_checkpoint: %s", err.msg);
	CHECK_EQ(res.exit_status, 0);
	CHECK(ml_rangeset_covers(&hot, a, b));
	CHECK(res.pages_written >= 64);
	CHECK(res.image_bytes >= 64 * 4096);
	CHECK(res.profiler_reinit);
	CHECK(ml_profiler_running(P)); /* the loop was restarted */
	/* a dump writes every VMA (the fork skips excluded ones in pre-dumps
	 * only): the hot ranges are reported, not passed */
	CHECK(res.exclude.nexclude == 0 && !strstr(res.cmdline, "--exclude"));
	CHECK(strstr(res.exclude.note, "a dump writes every VMA") != NULL);
	CHECK(target_cmd(&T, "pid") != NULL); /* it still answers */

	/* tracking again, exactly: idle, then every 2nd page of A */
	ml_profiler_stop(P);
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 0);
	ml_profiler_sample_free(&s);
	CHECK_STR(target_cmd(&T, "write A 2"), "wrote 32");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 32);
	/* the cumulative counter restarted at the re-init */
	CHECK(s.dirty.cumulative_dirty_bytes >= 32 * 4096);
	CHECK(s.dirty.cumulative_dirty_bytes < before.dirty.cumulative_dirty_bytes);
	ml_profiler_sample_free(&s);
	ml_profiler_sample_free(&before);

	/* a second checkpoint in the same session */
	rm_images(dir);
	strcpy(dir, dir_tmpl);
	REQUIRE(mkdtemp(dir));
	req.images_dir = dir;
	r = ml_criu_checkpoint(sess, P, &req, &res, &hot, &err);
	if (r)
		T_FAILMSG("second checkpoint: %s", err.msg);
	CHECK(target_cmd(&T, "pid") != NULL);
	rm_images(dir);
	ml_criu_session_close(sess);
	ml_rangeset_free(&hot);
	finish();
}

static void test_criu_fails_target_kept(void)
{
	struct ml_criu_dump_req req = { 0 };
	struct ml_criu_session *sess = NULL;
	struct ml_profiler_sample s = { 0 };
	struct ml_criu_result res;
	struct ml_err err = { 0 };
	char dir[64];
	uint64_t a, b;

	setup(&a, &b);
	strcpy(dir, dir_tmpl);
	REQUIRE(mkdtemp(dir));
	REQUIRE(ml_criu_session_open(&sess, &CAPS, NULL, &err) == 0);
	req.pid = T.pid;
	req.images_dir = dir;
	req.leave_running = true;
	req.shell_job = true;
	req.page_server_addr = "127.0.0.1";
	req.page_server_port = 1; /* nobody listens: CRIU fails */
	CHECK_EQ(ml_criu_checkpoint(sess, P, &req, &res, NULL, &err), -EIO);
	CHECK(res.ran && res.exit_status != 0);
	CHECK(strstr(err.msg, "criu dump failed") && strstr(err.msg, "dump.log"));
	CHECK(res.profiler_reinit);
	ml_profiler_stop(P);
	tick(&s);
	ml_profiler_sample_free(&s);
	CHECK_STR(target_cmd(&T, "write A 4"), "wrote 16");
	tick(&s);
	REQUIRE(region_at(&s, a));
	CHECK_EQ(region_at(&s, a)->dirty_pages, 16);
	ml_profiler_sample_free(&s);
	rm_images(dir);
	ml_criu_session_close(sess);
	finish();
}

static void test_refused_before_criu(void)
{
	struct ml_criu_caps no_sd = CAPS;
	struct ml_criu_dump_req req = { 0 };
	struct ml_criu_result res;
	struct ml_err err = { 0 };
	pid_t dead;

	if (!have_criu)
		SKIP("%s", criu_why);
	/* pre-dump without soft-dirty: refused, CRIU not run */
	no_sd.mem_dirty_track = false;
	req.pid = getpid();
	req.images_dir = "/tmp/memlens-criu-flow-never";
	req.pre_dump = true;
	CHECK_EQ(ml_criu_dump(&no_sd, &req, NULL, &res, &err), -EOPNOTSUPP);
	CHECK(!res.ran);
	CHECK(strstr(err.msg, "soft-dirty") != NULL);
	CHECK(access(req.images_dir, F_OK) < 0);
	/* a process that is gone */
	dead = fork();
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	req.pre_dump = false;
	req.pid = dead;
	CHECK_EQ(ml_criu_dump(&CAPS, &req, NULL, &res, &err), -ESRCH);
	CHECK(!res.ran);
}

/* A checkpoint CRIU would refuse does not take the profiler down for nothing. */
static void test_refused_keeps_profiling(void)
{
	struct ml_criu_caps no_sd = CAPS;
	struct ml_criu_dump_req req = { 0 };
	struct ml_criu_session *sess = NULL;
	struct ml_profiler_sample s = { 0 };
	struct ml_criu_result res;
	struct ml_err err = { 0 };
	struct ml_rangeset hot;
	uint64_t a, b;

	setup(&a, &b);
	ml_rangeset_init(&hot);
	REQUIRE(make_hot(a));
	no_sd.mem_dirty_track = false;
	REQUIRE(ml_criu_session_open(&sess, &no_sd, NULL, &err) == 0);
	req.pid = T.pid;
	req.images_dir = "/tmp/memlens-criu-flow-never";
	req.pre_dump = true;
	req.leave_running = true;
	CHECK_EQ(ml_criu_checkpoint(sess, P, &req, &res, &hot, &err), -EOPNOTSUPP);
	CHECK(strstr(err.msg, "soft-dirty") != NULL);
	CHECK(!res.ran);
	CHECK(!res.profiler_reinit); /* never released, so never re-initialised */
	CHECK(ml_profiler_running(P));
	/* still tracking the target's writes: written again, the region is hot (or still is).
	 * Not "hot at once": under load enough intervals may pass for it to cool meanwhile. */
	CHECK(!ml_profiler_latest(P, &s) && region_at(&s, a));
	ml_profiler_sample_free(&s);
	CHECK(make_hot(a));
	CHECK(access(req.images_dir, F_OK) < 0);
	ml_criu_session_close(sess);
	ml_rangeset_free(&hot);
	finish();
}

static bool has_pages(const char *dir)
{
	char pattern[128];
	glob_t g;
	bool found;

	snprintf(pattern, sizeof(pattern), "%s/pages-*.img", dir);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return found;
}

/* ml_criu_page_server_start(): a dump sends its pages there, not to its own -D. */
static void test_page_server(void)
{
	struct ml_criu_page_server_req ps = { .addr = "127.0.0.1" };
	struct ml_criu_dump_req req = { 0 };
	struct ml_criu_result res;
	struct ml_err err = { 0 };
	char sdir[64], ddir[64];
	uint64_t a, b;
	pid_t spid = 0;
	int r;

	setup(&a, &b);
	strcpy(sdir, dir_tmpl);
	strcpy(ddir, dir_tmpl);
	REQUIRE(mkdtemp(sdir) && mkdtemp(ddir));
	ps.images_dir = sdir;
	ps.port = 20000 + getpid() % 20000;
	r = ml_criu_page_server_start(&CAPS, &ps, NULL, &spid, &res, &err);
	REQUIRE_MSG(r == 0, "criu_page_server_start: %s", err.msg);
	CHECK(spid > 0 && kill(spid, 0) == 0);
	req.pid = T.pid;
	req.images_dir = ddir;
	req.leave_running = true;
	req.shell_job = true;
	req.page_server_addr = "127.0.0.1";
	req.page_server_port = ps.port;
	r = ml_criu_dump(&CAPS, &req, NULL, &res, &err);
	if (r)
		T_FAILMSG("criu_dump to the page server: %s", err.msg);
	CHECK(strstr(res.cmdline, "--page-server") != NULL);
	CHECK(target_cmd(&T, "pid") != NULL);
	/* it serves one dump, writes its images and exits; stopping it again is harmless */
	for (int i = 0; i < 100 && kill(spid, 0) == 0; i++)
		usleep(50000);
	CHECK(has_pages(sdir));
	CHECK(!has_pages(ddir));
	CHECK_EQ(ml_criu_page_server_stop(spid, &err), 0);
	/* a second one, stopped before any dump */
	r = ml_criu_page_server_start(&CAPS, &ps, NULL, &spid, &res, &err);
	REQUIRE_MSG(r == 0, "second criu_page_server_start: %s", err.msg);
	CHECK_EQ(ml_criu_page_server_stop(spid, &err), 0);
	for (int i = 0; i < 100 && kill(spid, 0) == 0; i++)
		usleep(50000);
	CHECK(kill(spid, 0) < 0);
	CHECK(ml_criu_page_server_stop(0, &err) == -EINVAL);
	if (!getenv("KEEP"))
		rm_images(sdir), rm_images(ddir);
	else
		printf("# kept %s %s\n", sdir, ddir);
	finish();
}

int main(void)
{
	find_criu();
	RUN(test_checkpoint_then_exact_counts);
	RUN(test_criu_fails_target_kept);
	RUN(test_refused_before_criu);
	RUN(test_refused_keeps_profiling);
	RUN(test_page_server);
	return T_DONE();
}
