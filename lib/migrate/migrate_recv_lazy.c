// SPDX-License-Identifier: MIT
/*
 * Post-copy, the destination side of a live migration: each round's
 * images arrive as files (the round's `parent` link made here), then
 * `criu lazy-pages` fetches the pages the final dump left at the source
 * while `criu restore --lazy-pages` runs the tree; its log (-v4) says
 * how many pages came and which faults waited for them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memlens/clock.h"
#include "memlens/proc.h"
#include "migrate_recvst.h"

#define TREE_MAX 4096

int mli_mig_recv_can_lazy(struct recv_state *s)
{
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = s->o->timeout_s * 1000);
	struct ml_err e = { 0 };

	if (ml_criu_check_feature(s->o->caps, "uffd-noncoop", &ro, &e))
		return mli_wire_send(&s->w,
				     "ERR post-copy needs userfaultfd (with its non-cooperative "
				     "events) at the destination: %s",
				     e.msg);
	return mli_wire_send(&s->w, "OK");
}

int mli_mig_recv_files_round(struct recv_state *s, int k)
{
	char dir[PATH_MAX], link[PATH_MAX + 8], parent[32];

	if (k != s->round + 1 || s->ps_pid)
		return mli_wire_send(&s->w, "ERR round %d out of order (expected %d)", k,
				     s->round + 1);
	mli_mig_recv_round_dir(s, k, dir, sizeof(dir));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return mli_wire_send(&s->w, "ERR cannot create %s: %s", dir, strerror(errno));
	snprintf(link, sizeof(link), "%s/parent", dir);
	unlink(link);
	snprintf(parent, sizeof(parent), "../%d", k - 1);
	if (k > 1 && symlink(parent, link) < 0)
		return mli_wire_send(&s->w, "ERR cannot link %s to its parent: %s", link,
				     strerror(errno));
	s->round = k;
	s->files_round = true;
	return mli_wire_send(&s->w, "READY %d", k);
}

/* Wait for the daemon to exit (it copied every page in), up to @ms. */
static bool daemon_wait(pid_t pid, uint64_t ms)
{
	uint64_t t0 = ml_mono_ms();

	while (!ml_proc_exited(pid, 0)) {
		if (ml_mono_ms() - t0 > ms)
			return false;
		usleep(5000);
	}
	waitpid(pid, NULL, WNOHANG); /* ours when we are its reaper */
	return true;
}

static void kill_tree(pid_t root)
{
	pid_t t[TREE_MAX];
	size_t n = ml_proc_tree(root, t, TREE_MAX);

	for (size_t i = 0; i < n; i++)
		kill(t[i], SIGKILL);
}

static int lazy_result(struct recv_state *s, const char *dir, pid_t lpid, pid_t restored,
		       uint64_t t_spawn, uint64_t t_restored)
{
	char log[PATH_MAX + 32];
	ML_RESULT(ml_criu_lazy_stats, st);
	struct ml_err e = { 0 };
	bool done = daemon_wait(lpid, (uint64_t)s->o->timeout_s * 1000);
	long long after;

	snprintf(log, sizeof(log), "%s/lazy-pages.log", dir);
	if (!done)
		ml_criu_page_server_stop(lpid, &e);
	if (ml_criu_read_lazy_log(log, &st, &e) || !done || st.errors) {
		/* pages are missing: what runs here cannot go on */
		kill_tree(restored);
		return mli_wire_send(&s->w, "LAZYFAILED %s; see %s",
				     !done	 ? "criu lazy-pages did not finish in time"
				     : st.errors ? st.error
						 : e.msg,
				     log);
	}
	after = st.last_us >= 0
			? (long long)(t_spawn + (uint64_t)st.last_us / 1000) - (long long)t_restored
			: 0;
	if (s->o->verbose) {
		struct ml_mig_event ev = { .kind = ML_MIG_EV_LAZY_DONE,
					   .dir = dir,
					   .pid = restored };

		mli_mig_emit(s->o->on_event, s->o->arg, &ev,
			     "%lld of %lld lazy page(s) arrived; %llu fault(s) waited %.1f ms on "
			     "average, %.1f ms at most",
			     (long long)st.pages_copied, (long long)st.pages_total,
			     (unsigned long long)st.faults,
			     st.faults_served ? st.wait_sum_us / 1000.0 / st.faults_served : 0.0,
			     st.wait_max_us / 1000.0);
	}
	return mli_wire_send(&s->w, "LAZYDONE %lld %lld %llu %llu %llu %llu %llu %lld %lld",
			     (long long)st.pages_copied, (long long)st.pages_total,
			     (unsigned long long)st.copy_bytes, (unsigned long long)st.faults,
			     (unsigned long long)st.faults_served,
			     (unsigned long long)st.wait_sum_us, (unsigned long long)st.wait_max_us,
			     after, (long long)st.pages_parent);
}

int mli_mig_recv_restore_lazy(struct recv_state *s, int k, int shell_job, const char *addr,
			      int port)
{
	ML_OPTS(ml_criu_run_opts, ro, .timeout_ms = s->o->timeout_s * 1000);
	struct ml_criu_lazy_pages_req lq = { .addr = addr, .port = port };
	struct ml_criu_restore_req rq = { .shell_job = shell_job != 0, .lazy_pages = true };
	struct ml_criu_result res;
	struct ml_err e = { 0 };
	char dir[PATH_MAX];
	uint64_t t_spawn, t_restored;
	pid_t lpid;
	int r;

	if (k != s->round || !s->files_round)
		return mli_wire_send(&s->w, "ERR lazy restore of round %d, but round %d came last",
				     k, s->round);
	mli_mig_recv_round_dir(s, k, dir, sizeof(dir));
	lq.images_dir = dir;
	rq.images_dir = dir;
	t_spawn = ml_mono_ms();
	r = ml_criu_lazy_pages_start(s->o->caps, &lq, &ro, &lpid, &res, &e);
	if (r)
		return mli_wire_send(&s->w, "ERR %s", e.msg);
	r = ml_criu_restore(s->o->caps, &rq, &ro, &res, &e);
	if (r) {
		struct ml_err e2;

		ml_criu_page_server_stop(lpid, &e2);
		return mli_wire_send(&s->w, "ERR %s", e.msg);
	}
	t_restored = ml_mono_ms();
	if (s->o->verbose) {
		struct ml_mig_event ev = { .kind = ML_MIG_EV_RESTORED_LAZY,
					   .dir = dir,
					   .pid = res.restored_pid,
					   .ms = res.duration_ms };

		mli_mig_emit(s->o->on_event, s->o->arg, &ev,
			     "restored pid %d from %s in %.2f s; lazy pages follow",
			     (int)res.restored_pid, dir, res.duration_ms / 1000.0);
	}
	r = mli_wire_send(&s->w, "RESTORED %d %llu", (int)res.restored_pid,
			  (unsigned long long)res.duration_ms);
	if (r) {
		/* the source cannot learn the end: it resumes its tree */
		daemon_wait(lpid, (uint64_t)s->o->timeout_s * 1000);
		kill_tree(res.restored_pid);
		return r;
	}
	return lazy_result(s, dir, lpid, res.restored_pid, t_spawn, t_restored);
}
