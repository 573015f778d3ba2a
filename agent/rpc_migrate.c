// SPDX-License-Identifier: MIT
/*
 * The Migrate RPC: live-migrate the agent's target with the flow of
 * `memlens migrate` (memlens/migrate.h), to a `memlens migrate
 * --receive` at HOST:PORT or to a directory on this machine, once the
 * tree is checked for what CRIU would refuse (rpc_refuse_preflight()).
 * Holds the agent's write lock for the whole migration: no other
 * checkpoint and no profiler change meanwhile. The agent's own profiler, when it profiles
 * the target, decides what is hot.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <grpc/support/time.h>

#include "container_find.h"
#include "migrate_msg.h"
#include "memlens/migrate.h"
#include "rpc_handlers.h"

#define DEFAULT_ROUNDS 5
#define DEFAULT_THRESHOLD_MIB 16
#define DEFAULT_ROUND_S 2
#define DEFAULT_INTERVAL_MS 500
#define MAX_TIMEOUT_MS 86400000u

struct mig_call {
	uint64_t deadline_ns; /* the call's deadline (gRPC's monotonic clock), 0: none */
	struct container_migrate *cm; /* the request's container, or NULL */
	struct criu_cli_opts extra; /* the agent's --criu-opt, and what a container needs */
};

static uint64_t grpc_now_ns(void)
{
	gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);

	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static int pause_call(unsigned int ms, void *arg)
{
	const struct mig_call *c = arg;
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	if (c->deadline_ns && grpc_now_ns() >= c->deadline_ns)
		return -ETIMEDOUT;
	nanosleep(&ts, NULL);
	return 0;
}

static void count_round(const struct ml_migrate_round *r, void *arg)
{
	(void)arg;
	metrics_checkpoint(r->pre_dump ? CKPT_PRE_DUMP : CKPT_DUMP, true, r->duration_ms);
}

/*
 * Why the request's container is no name, ID or cgroup directory, or NULL:
 * it goes to podman, runc and crun as an argument, and a path is read.
 */
static const char *container_arg_bad(const char *s)
{
	size_t n = strlen(s);

	if (n >= PATH_MAX - 32)
		return "too long";
	if (s[0] == '-')
		return "it starts with '-'";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return "it has a space, a control or a non-ASCII character";
	if (!strchr(s, '/'))
		return NULL;
	if (s[0] == '/' && strncmp(s, "/sys/fs/cgroup/", 15))
		return "a cgroup directory is under /sys/fs/cgroup";
	if (!strcmp(s, "..") || !strncmp(s, "../", 3) || strstr(s, "/../") ||
	    (n >= 3 && !strcmp(s + n - 3, "/..")))
		return "a cgroup directory has no '..'";
	return NULL;
}

/* The request's numbers, defaults for zeros; false (answered) when out of range. */
static bool check_request(const Agent__MigrateRequest *q, struct ml_migrate_opts *o,
			  struct rpc_reply *out)
{
	if (!q->destination[0] == !q->destination_dir[0])
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: give exactly one of destination (HOST:PORT of a "
				 "`memlens migrate --receive`) and destination_dir (restore on "
				 "this machine)");
	if (!q->images_dir[0])
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: images_dir (the source's images) is required");
	if (q->max_rounds < 0 || q->max_rounds > ML_MIGRATE_MAX_ROUNDS)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: max_rounds must be 1..%d (0: %d), not %d",
				 ML_MIGRATE_MAX_ROUNDS, DEFAULT_ROUNDS, q->max_rounds);
	if (!isfinite(q->threshold_mib) || q->threshold_mib < 0 || q->threshold_mib > 1 << 20)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: threshold_mib must be 0..1048576 (0: %d), not %g",
				 DEFAULT_THRESHOLD_MIB, q->threshold_mib);
	if (!isfinite(q->round_seconds) || q->round_seconds < 0 || q->round_seconds > 3600)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: round_seconds must be 0..3600 (0: %d), not %g",
				 DEFAULT_ROUND_S, q->round_seconds);
	if (q->interval_ms && (q->interval_ms < 10 || q->interval_ms > 600000))
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: interval_ms must be 10..600000 (0: %d), not %d",
				 DEFAULT_INTERVAL_MS, q->interval_ms);
	if (q->timeout_ms > MAX_TIMEOUT_MS)
		return !rpc_fail(
			out, RPC_INVALID_ARGUMENT,
			"Migrate: timeout_ms must be at most %u (0: the agent's default), not %u",
			MAX_TIMEOUT_MS, q->timeout_ms);
	if (q->container[0] && q->pid)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: give container or pid, not both (neither: the "
				 "agent's target)");
	if (q->pid < 0)
		return !rpc_fail(
			out, RPC_INVALID_ARGUMENT,
			"Migrate: pid must be a process id (0: the agent's target), not %d",
			q->pid);
	if (q->container[0] && q->postcopy)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: postcopy is not for a container (its restore needs "
				 "the pages at once)");
	if (q->container[0]) {
		const char *why = container_arg_bad(q->container);

		if (why)
			return !rpc_fail(out, RPC_INVALID_ARGUMENT,
					 "Migrate: container must be a container's name or ID, "
					 "or its cgroup directory; '%.200s' is not: %s",
					 q->container, why);
	}
	if (q->destination[0]) {
		char host[256];
		int port;

		if (ml_migrate_parse_hostport(q->destination, host, sizeof(host), &port) || !port)
			return !rpc_fail(out, RPC_INVALID_ARGUMENT,
					 "Migrate: destination must be HOST:PORT with a port "
					 "1..65535, not '%s'",
					 q->destination);
	}
	o->max_rounds = q->stop_and_copy ? 0 : q->max_rounds ? q->max_rounds : DEFAULT_ROUNDS;
	o->threshold_mib = q->threshold_mib ? q->threshold_mib : DEFAULT_THRESHOLD_MIB;
	o->round_s = q->round_seconds ? q->round_seconds : DEFAULT_ROUND_S;
	o->interval_ms = q->interval_ms ? (unsigned int)q->interval_ms : DEFAULT_INTERVAL_MS;
	o->no_exclude = q->no_exclude;
	o->shell_job = q->shell_job;
	o->postcopy = q->postcopy;
	o->keep_hot_out = q->keep_hot_out;
	return true;
}

static void migrate_response(const struct agent *a, const struct ml_migrate_opts *o,
			     const struct container_migrate *cm, const struct ml_migration *mig,
			     struct rpc_reply *out)
{
	const struct ml_migrate_result *x = ml_migration_result(mig);
	Agent__MigrateResponse resp = AGENT__MIGRATE_RESPONSE__INIT;
	Agent__MigrateRound *rs = calloc((size_t)x->nr + 1, sizeof(*rs));
	Agent__MigrateRound **ptrs = calloc((size_t)x->nr + 1, sizeof(*ptrs));

	if (!rs || !ptrs) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	for (int i = 0; i < x->nr; i++) {
		const struct ml_migrate_round *r = ml_migration_round(mig, i);

		agent__migrate_round__init(&rs[i]);
		rs[i].round = r->k;
		rs[i].kind = (char *)(r->pre_dump ? "pre-dump" : "dump");
		rs[i].pages = r->pages;
		rs[i].pages_scanned = r->pages_scanned;
		rs[i].pages_skipped_parent = r->pages_skipped_parent;
		rs[i].bytes = r->bytes;
		rs[i].stored_bytes = r->stored;
		rs[i].shpages = r->shpages;
		rs[i].images_bytes = r->images;
		rs[i].start_ms = (int64_t)r->start_ms;
		rs[i].duration_ms = (int64_t)r->duration_ms;
		rs[i].hot_ranges = (int32_t)r->hot_ranges;
		rs[i].hot_bytes = r->hot_bytes;
		rs[i].excluded_ranges = (int32_t)r->excluded;
		rs[i].no_parent_ranges = (int32_t)r->no_parent;
		rs[i].note = (char *)r->note;
		rs[i].pages_lazy = r->pages_lazy;
		rs[i].files_bytes = r->files_bytes;
		ptrs[i] = &rs[i];
	}
	resp.success = true;
	resp.error = "";
	resp.precopy = x->precopy;
	resp.exclusion = x->exclude;
	resp.n_rounds = (size_t)x->nr;
	resp.rounds = ptrs;
	resp.total_bytes = x->total;
	resp.downtime_ms = (int64_t)x->downtime_ms;
	resp.final_dump_ms = (int64_t)x->dump_ms;
	resp.frozen_in_dump_ms = x->frozen_us >= 0 ? x->frozen_us / 1000 : -1;
	resp.restore_ms = (int64_t)x->restore_ms;
	resp.restored_pid = x->restored;
	resp.limits = (char *)(!x->exclude	       ? ""
			       : a->caps.page_granular ? ML_MIGRATE_LIMITS_PAGE
						       : ML_MIGRATE_LIMITS_VMA);
	resp.criu_version = (char *)a->caps.version;
	resp.postcopy = o->postcopy;
	resp.lazy_pages_copied = x->lazy.pages_copied;
	resp.lazy_bytes = x->lazy.bytes;
	resp.lazy_faults = x->lazy.faults;
	resp.lazy_fault_wait_avg_us =
		x->lazy.faults_served ? x->lazy.wait_sum_us / x->lazy.faults_served : 0;
	resp.lazy_fault_wait_max_us = x->lazy.wait_max_us;
	resp.last_page_ms = (int64_t)x->lazy.last_page_ms;
	resp.pid = o->pid;
	if (cm) {
		resp.container_id = (char *)cm->ctr.id;
		resp.container_name = (char *)cm->ctr.name;
		resp.container_runtime = (char *)cm->ctr.runtime;
		resp.container_rootfs = (char *)cm->ctr.rootfs;
	}
	rpc_pack(out, &resp.base);
out:
	free(rs);
	free(ptrs);
}

static int status_for(int r, bool dumped)
{
	if (dumped)
		return RPC_ABORTED; /* the tree left the source: no retry here */
	if (r == -EIO || r == -EPROTO)
		return RPC_ABORTED;
	if (r == -ECONNREFUSED || r == -EHOSTUNREACH || r == -ENETUNREACH || r == -ECONNRESET ||
	    r == -EPIPE)
		return RPC_UNAVAILABLE;
	if (r == -EINVAL || r == -EOPNOTSUPP)
		return RPC_FAILED_PRECONDITION;
	return rpc_code_for_errno(r);
}

/* Under the write lock. @o->pid: the request's tree, 0: the agent's target. */
static void migrate_locked(struct agent *a, struct ml_migrate_opts *o,
			   const struct container_migrate *cm, const char *dest_dir,
			   struct rpc_reply *out)
{
	struct ml_migration *mig = NULL;
	const struct ml_migrate_result *x;
	const struct ml_migrate_round *last;
	struct ml_err e = { 0 }, ignored = { 0 };
	pid_t target = 0;
	bool dumped, own;
	int r;

	r = agent_criu(a, &e);
	if (r) {
		rpc_fail(out, RPC_FAILED_PRECONDITION, "Migrate: %s", e.msg);
		goto out;
	}
	if (!o->pid) {
		r = agent_target(a, &o->pid, &e);
		target = o->pid;
	} else if (agent_target(a, &target, &ignored)) {
		/* the request's tree: the agent's target only when it is that one */
		target = 0;
	}
	own = target == o->pid;
	if (!r)
		r = ml_criu_dump_target_check(o->pid, &e);
	if (r) {
		rpc_fail(out, r == -EINVAL ? RPC_FAILED_PRECONDITION : rpc_code_for_errno(r),
			 "Migrate: %s", e.msg);
		goto out;
	}
	/* what CRIU would refuse, before anything is frozen (the TCP policy
	 * and the options given absorb what they take care of) */
	ML_OPTS(ml_criu_preflight_opts, po, .tcp = o->tcp, .extra_args = o->extra_args,
		.shell_job = o->shell_job);
	if (rpc_refuse_preflight(a, o->pid, &po, "Migrate", out))
		goto out;
	o->caps = &a->caps;
	/* the agent's profiler decides what is hot when it profiles this tree */
	o->prof = a->prof && ml_profiler_running(a->prof) && ml_profiler_pid(a->prof) == o->pid
			  ? a->prof
			  : NULL;
	r = ml_migration_open(&mig, o, &e);
	if (r) {
		rpc_fail(out, RPC_INVALID_ARGUMENT, "Migrate: %s", e.msg);
		goto out;
	}
	r = ml_migration_run(mig);
	x = ml_migration_result(mig);
	last = ml_migration_round(mig, x->nr - 1);
	dumped = last && !last->pre_dump;
	if (dumped || !r) {
		a->checkpoints += x->nr;
		if (a->prof && own) {
			/* its target is frozen in the images, or gone */
			ml_profiler_close(a->prof);
			a->prof = NULL;
			metrics_profiling(false, 0);
		}
	}
	if (r && dumped)
		rpc_fail(out, status_for(r, true),
			 "Migrate: %s; the tree was dumped: its complete images are at the "
			 "destination, in round %d's directory (restore them there)",
			 x->error[0] ? x->error : strerror(-r), last->k);
	else if (r)
		rpc_fail(out, status_for(r, false),
			 "Migrate: %s; the process tree is still running at the source",
			 x->error[0] ? x->error : strerror(-r));
	else {
		/* the agent's target restored on this machine: its next target */
		if (own)
			a->restored_pid = dest_dir ? x->restored : 0;
		migrate_response(a, o, cm, mig, out);
	}
out:
	ml_migration_close(mig);
}

/*
 * The request's container: what CRIU needs for it on top of the agent's
 * options, as `memlens migrate --container` has it. false: answered.
 */
static bool find_container(struct agent *a, const char *name, struct mig_call *call,
			   struct ml_migrate_opts *o, struct rpc_reply *out)
{
	struct ml_err e = { 0 };
	char why[256];
	int r;

	call->cm = calloc(1, sizeof(*call->cm));
	if (!call->cm)
		return !rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
	r = container_migrate_find(name, call->cm, &e);
	if (r == -ENOENT)
		return !rpc_fail(out, RPC_NOT_FOUND,
				 "Migrate: container: %s; give the name or ID of a running "
				 "container (`podman ps`, `runc list`) or its cgroup directory",
				 e.msg);
	if (r == -ESRCH || r == -EINVAL)
		return !rpc_fail(out, RPC_FAILED_PRECONDITION, "Migrate: container: %s; %s", e.msg,
				 r == -ESRCH ? "start it first"
					     : "give the cgroup of one container (its init and "
					       "what that started)");
	if (r)
		return !rpc_fail(out, rpc_code_for_errno(r), "Migrate: container '%s': %s", name,
				 e.msg);
	call->extra = a->cfg.criu_opts;
	if (criu_cli_opt_fn(&call->extra, CONTAINER_DUMP_OPT, why, sizeof(why)))
		return !rpc_fail(out, RPC_FAILED_PRECONDITION,
				 "Migrate: container: the agent's --criu-opt and %s: %s",
				 CONTAINER_DUMP_OPT, why);
	o->pid = call->cm->ctr.pid;
	o->extra_args = call->extra.v;
	o->restore_args = call->cm->restore;
	o->settle_dirs = call->cm->settle_v;
	return true;
}

void rpc_migrate(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		 struct rpc_reply *out)
{
	char dir[PATH_MAX], dest[PATH_MAX];
	struct mig_call call = { .deadline_ns = deadline };
	Agent__MigrateRequest *q;
	struct ml_err e = { 0 };

	q = agent__migrate_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "MigrateRequest", len);
		return;
	}
	struct ml_migrate_opts o = {
		.sz = sizeof(struct ml_migrate_opts),
		.work = dir,
		.timeout_s =
			((q->timeout_ms ? q->timeout_ms : a->cfg.criu_timeout_ms) + 999) / 1000,
		.off_note = "exclusion off (no_exclude in the request)",
		.extra_args = a->cfg.criu_opts.n ? a->cfg.criu_opts.v : NULL,
		.tcp = a->cfg.tcp,
		.on_round = count_round,
		.pause = pause_call,
		.on_event = migrate_print_event,
		.arg = &call,
	};

	if (!check_request(q, &o, out) || rpc_refuse_without_sys_admin("Migrate", out))
		goto out;
	o.pid = q->pid;
	if (q->pid && kill(q->pid, 0) && errno == ESRCH) {
		rpc_fail(out, RPC_NOT_FOUND,
			 "Migrate: no process %d (the request's pid); give a running process's "
			 "pid, or none for the agent's target",
			 q->pid);
		goto out;
	}
	/* before the lock: podman may take a while to answer */
	if (q->container[0] && !find_container(a, q->container, &call, &o, out))
		goto out;
	if (agent_images_path(a, q->images_dir, dir, sizeof(dir), &e)) {
		rpc_fail(out, RPC_INVALID_ARGUMENT, "Migrate: %s", e.msg);
		goto out;
	}
	if (q->destination_dir[0] &&
	    agent_images_path(a, q->destination_dir, dest, sizeof(dest), &e)) {
		rpc_fail(out, RPC_INVALID_ARGUMENT, "Migrate: destination_dir: %s", e.msg);
		goto out;
	}
	if (q->destination_dir[0] && !strcmp(dir, dest)) {
		rpc_fail(out, RPC_INVALID_ARGUMENT,
			 "Migrate: images_dir and destination_dir must differ (both are %s)", dir);
		goto out;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		rpc_fail(out, rpc_code_for_errno(-errno), "Migrate: cannot create %s: %s", dir,
			 strerror(errno));
		goto out;
	}
	o.to = q->destination_dir[0] ? dest : q->destination;
	pthread_rwlock_wrlock(&a->lock);
	migrate_locked(a, &o, call.cm, q->destination_dir[0] ? dest : NULL, out);
	pthread_rwlock_unlock(&a->lock);
out:
	free(call.cm);
	agent__migrate_request__free_unpacked(q, NULL);
}
