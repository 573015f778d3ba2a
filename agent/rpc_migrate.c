// SPDX-License-Identifier: MIT
/*
 * The Migrate RPC: live-migrate the agent's target with the flow of
 * `memlens migrate` (common/migrate_run.c), to a `memlens migrate
 * --receive` at HOST:PORT or to a directory on this machine. Holds the
 * agent's write lock for the whole migration: no other checkpoint and no
 * profiler change meanwhile. The agent's own profiler, when it profiles
 * the target, decides what is hot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <grpc/support/time.h>

#include "migrate_run.h"
#include "migrate_wire.h"
#include "rpc_handlers.h"

#define DEFAULT_ROUNDS 5
#define DEFAULT_THRESHOLD_MIB 16
#define DEFAULT_ROUND_S 2
#define DEFAULT_INTERVAL_MS 500
#define MAX_TIMEOUT_MS 86400000u

struct mig_call {
	uint64_t deadline_ns; /* the call's deadline (gRPC's monotonic clock), 0: none */
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

static void count_round(const struct migrate_round *r, void *arg)
{
	(void)arg;
	metrics_checkpoint(r->pre_dump ? CKPT_PRE_DUMP : CKPT_DUMP, true, r->duration_ms);
}

/* The request's numbers, defaults for zeros; false (answered) when out of range. */
static bool check_request(const Agent__MigrateRequest *q, struct migrate_opts *o,
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
	if (q->max_rounds < 0 || q->max_rounds > MIGRATE_MAX_ROUNDS)
		return !rpc_fail(out, RPC_INVALID_ARGUMENT,
				 "Migrate: max_rounds must be 1..%d (0: %d), not %d",
				 MIGRATE_MAX_ROUNDS, DEFAULT_ROUNDS, q->max_rounds);
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
	if (q->destination[0]) {
		char host[256];
		int port;

		if (wire_parse_hostport(q->destination, host, sizeof(host), &port) || !port)
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
	return true;
}

static void migrate_response(const struct agent *a, const struct migrate_opts *o,
			     const struct migrate_result *x, struct rpc_reply *out)
{
	Agent__MigrateResponse resp = AGENT__MIGRATE_RESPONSE__INIT;
	Agent__MigrateRound *rs = calloc((size_t)x->nr + 1, sizeof(*rs));
	Agent__MigrateRound **ptrs = calloc((size_t)x->nr + 1, sizeof(*ptrs));

	if (!rs || !ptrs) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	for (int i = 0; i < x->nr; i++) {
		const struct migrate_round *r = &x->r[i];

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
			       : a->caps.page_granular ? MIGRATE_LIMITS_PAGE
						       : MIGRATE_LIMITS_VMA);
	resp.criu_version = (char *)a->caps.version;
	resp.postcopy = o->postcopy;
	resp.lazy_pages_copied = x->lazy.pages_copied;
	resp.lazy_bytes = x->lazy.bytes;
	resp.lazy_faults = x->lazy.faults;
	resp.lazy_fault_wait_avg_us =
		x->lazy.faults_served ? x->lazy.wait_sum_us / x->lazy.faults_served : 0;
	resp.lazy_fault_wait_max_us = x->lazy.wait_max_us;
	resp.last_page_ms = (int64_t)x->lazy.last_page_ms;
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

/* Under the write lock. */
static void migrate_locked(struct agent *a, struct migrate_opts *o, const char *dest_dir,
			   struct rpc_reply *out)
{
	struct migrate_result *x = calloc(1, sizeof(*x));
	struct ml_err e = { 0 };
	bool dumped;
	int r;

	if (!x) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	r = agent_criu(a, &e);
	if (r) {
		rpc_fail(out, RPC_FAILED_PRECONDITION, "Migrate: %s", e.msg);
		goto out;
	}
	r = agent_target(a, &o->pid, &e);
	if (!r)
		r = ml_criu_dump_target_check(o->pid, &e);
	if (r) {
		rpc_fail(out, r == -EINVAL ? RPC_FAILED_PRECONDITION : rpc_code_for_errno(r),
			 "Migrate: %s", e.msg);
		goto out;
	}
	o->caps = &a->caps;
	o->prof = a->prof && ml_profiler_running(a->prof) ? a->prof : NULL;
	r = migrate_run(o, x);
	dumped = x->nr && !x->r[x->nr - 1].pre_dump;
	if (dumped || !r) {
		a->checkpoints += x->nr;
		if (a->prof) {
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
			 x->error[0] ? x->error : strerror(-r), x->r[x->nr - 1].k);
	else if (r)
		rpc_fail(out, status_for(r, false),
			 "Migrate: %s; the process tree is still running at the source",
			 x->error[0] ? x->error : strerror(-r));
	else {
		/* restored on this machine: the agent's next target */
		a->restored_pid = dest_dir ? x->restored : 0;
		migrate_response(a, o, x, out);
	}
out:
	free(x);
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
	struct migrate_opts o = {
		.work = dir,
		.timeout_s =
			((q->timeout_ms ? q->timeout_ms : a->cfg.criu_timeout_ms) + 999) / 1000,
		.off_note = "exclusion off (no_exclude in the request)",
		.extra_args = a->cfg.criu_opts.n ? a->cfg.criu_opts.v : NULL,
		.tcp = a->cfg.tcp,
		.on_round = count_round,
		.pause = pause_call,
		.arg = &call,
	};

	if (!check_request(q, &o, out))
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
	migrate_locked(a, &o, q->destination_dir[0] ? dest : NULL, out);
	pthread_rwlock_unlock(&a->lock);
out:
	agent__migrate_request__free_unpacked(q, NULL);
}
