// SPDX-License-Identifier: MIT
/*
 * The checkpoint RPCs on include/memlens/criu.h: PreCheckpoint and
 * FinalDump run the checkpoint flow (check the tree for what CRIU would
 * refuse, release the profiler, exclude hot VMAs, CRIU, re-init), Restore
 * and StartPageServer run CRIU directly.
 * They hold the agent's write lock: one checkpoint at a time, and no
 * profiler change underneath.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mntns.h"
#include "rpc_handlers.h"

static int criu_status(int r)
{
	/* CRIU ran and failed (-EIO): ABORTED; everything else by its errno */
	if (r == -EIO)
		return RPC_ABORTED;
	return r == -EOPNOTSUPP ? RPC_FAILED_PRECONDITION : rpc_code_for_errno(r);
}

/* CAP_SYS_ADMIN in the agent's effective set (CRIU inherits it). */
static bool has_sys_admin(void)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return true; /* cannot tell: let CRIU say */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return !found || (eff >> 21 & 1); /* CAP_SYS_ADMIN is 21 */
}

bool rpc_refuse_without_sys_admin(const char *what, struct rpc_reply *out)
{
	if (has_sys_admin())
		return false;
	rpc_fail(out, RPC_FAILED_PRECONDITION,
		 "%s: the agent lacks CAP_SYS_ADMIN, which CRIU needs to dump or restore a "
		 "process; CRIU was not run. An agent in a sidecar container profiles only "
		 "(StartProfiling, GetHotRegions, metrics): dumps are done from the node, "
		 "with `memlens migrate --container NAME`",
		 what);
	return true;
}

/* No usable CRIU on this host: the server lacks a component. */
static void fail_no_criu(struct rpc_reply *out, const char *what, const struct ml_err *e)
{
	rpc_fail(out, RPC_FAILED_PRECONDITION, "%s: %s", what, e->msg);
}

static void fail_criu(struct rpc_reply *out, const char *what, int r, const struct ml_err *e,
		      const struct ml_criu_result *res)
{
	/* the library's messages usually name the log already */
	if (res && res->ran && !strstr(e->msg, res->log_path))
		rpc_fail(out, criu_status(r), "%s: %s%s%s (log: %s)", what, e->msg,
			 res->log_tail[0] ? ": " : "", res->log_tail, res->log_path);
	else
		rpc_fail(out, criu_status(r), "%s: %s", what, e->msg);
}

/* The start of every CRIU RPC: its result, and a CRIU to run. NULL: answered. */
static struct ml_criu_result *criu_begin(struct agent *a, const char *what, struct rpc_reply *out)
{
	struct ml_criu_result *res = calloc(1, sizeof(*res));
	struct ml_err e = { 0 };

	if (!res) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return NULL;
	}
	if (agent_criu(a, &e)) {
		fail_no_criu(out, what, &e);
		free(res);
		return NULL;
	}
	return res;
}

/* After CRIU ran: its metrics, and on failure the answer. Returns r. */
static int criu_end(enum ckpt_kind kind, int r, const char *what, const struct ml_err *e,
		    const struct ml_criu_result *res, struct rpc_reply *out)
{
	metrics_checkpoint(kind, !r, res->duration_ms);
	if (r)
		fail_criu(out, what, r, e, res);
	return r;
}

/* images_dir and parent_dir of a request, resolved under --images-root. */
static int dirs(struct agent *a, const char *images, const char *parent, char *dir, char *pdir,
		struct rpc_reply *out, const char *what)
{
	struct ml_err e = { 0 };

	if (agent_images_path(a, images, dir, PATH_MAX, &e) ||
	    (parent && *parent && agent_images_path(a, parent, pdir, PATH_MAX, &e)))
		return rpc_fail(out, RPC_INVALID_ARGUMENT, "%s: %s", what, e.msg);
	return 0;
}

/*
 * The ranges left out, each with its process: every process's own hot
 * set (@procs), or, a profiler of one process, @hot as @pid's.
 */
static void ckpt_response(const struct ml_criu_result *res, const struct ml_rangeset *hot,
			  const struct ml_criu_hot_procs *procs, pid_t pid, const char *dir,
			  struct rpc_reply *out)
{
	Agent__CheckpointResponse resp = AGENT__CHECKPOINT_RESPONSE__INIT;
	size_t n = procs->n ? 0 : hot->n;
	Agent__HotRegionProto *regs;
	Agent__HotRegionProto **ptrs;

	for (size_t i = 0; i < procs->n; i++)
		n += procs->procs[i].ranges->n;
	regs = calloc(n + 1, sizeof(*regs));
	ptrs = calloc(n + 1, sizeof(*ptrs));
	if (!regs || !ptrs) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < (procs->n ? procs->n : 1) && res->exclude.nexclude; k++) {
		const struct ml_rangeset *set = procs->n ? procs->procs[k].ranges : hot;

		for (size_t i = 0; i < set->n; i++) {
			Agent__HotRegionProto *g = &regs[resp.n_excluded];

			agent__hot_region_proto__init(g);
			g->start_addr = set->r[i].start;
			g->end_addr = set->r[i].end;
			g->pid = procs->n ? procs->procs[k].pid : pid;
			ptrs[resp.n_excluded++] = g;
		}
	}
	resp.excluded = ptrs;
	resp.success = true;
	resp.error = "";
	resp.images_dir = (char *)dir;
	resp.no_parent_ranges = (int32_t)res->exclude.nno_parent;
	resp.exclude_skipped = res->exclude.skipped;
	resp.note = (char *)(res->exclude.note[0] ? res->exclude.note : res->profiler_note);
	resp.duration_ms = (int64_t)res->duration_ms;
	resp.image_bytes = res->image_bytes;
	resp.pages_written = res->pages_written;
	resp.bytes_written = res->bytes_written;
	resp.shpages_written = res->shpages_written;
	resp.profiler_reinit = res->profiler_reinit;
	resp.log_path = (char *)res->log_path;
	resp.cmdline = (char *)res->cmdline;
	rpc_pack(out, &resp.base);
out:
	free(regs);
	free(ptrs);
}

bool rpc_refuse_preflight(const struct agent *a, pid_t pid, const struct ml_criu_preflight_opts *o,
			  const char *what, struct rpc_reply *out)
{
	struct ml_criu_preflight_opts x = *o;
	struct ml_criu_preflight *p = calloc(1, sizeof(*p));
	struct ml_err e = { 0 };
	char list[sizeof(out->msg)];
	size_t pos = 0;
	int r;

	if (!p)
		return !!rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
	x.criu_version = a->caps.version;
	p->sz = sizeof(*p);
	r = ml_criu_preflight(pid, &x, p, &e);
	if (r) {
		rpc_fail(out, r == -ESRCH ? RPC_NOT_FOUND : rpc_code_for_errno(r), "%s: %s", what,
			 e.msg);
		free(p);
		return true;
	}
	if (!p->nrefused) {
		free(p);
		return false;
	}
	list[0] = '\0';
	for (size_t i = 0; i < p->n && pos < sizeof(list); i++) {
		const struct ml_criu_finding *f = &p->f[i];
		int k;

		if (f->absorbed)
			continue;
		k = snprintf(list + pos, sizeof(list) - pos, "%spid %d (%s): %s; fix: %s",
			     pos ? "; " : "", (int)f->pid, f->comm, f->resource, f->fix);
		pos += k > 0 ? (size_t)k : 0;
	}
	if (p->nfound > p->n && pos < sizeof(list))
		snprintf(list + pos, sizeof(list) - pos, "; and %zu more", p->nfound - p->n);
	rpc_fail(out, RPC_FAILED_PRECONDITION,
		 "%s: CRIU would refuse the process tree of pid %d (%zu process%s), CRIU was not "
		 "run and nothing was frozen: %s",
		 what, (int)pid, p->nprocs, p->nprocs == 1 ? "" : "es", list);
	free(p);
	return true;
}

/* Under the write lock. */
static void checkpoint_locked(struct agent *a, struct ml_criu_dump_req *req, const char *what,
			      struct rpc_reply *out)
{
	enum ckpt_kind kind = req->pre_dump ? CKPT_PRE_DUMP : CKPT_DUMP;
	struct ml_criu_result *res = criu_begin(a, what, out);
	struct ml_err e = { 0 };
	struct ml_criu_hot_procs procs = { 0 };
	struct ml_rangeset hot;
	struct mntns_keep *keep = calloc(1, sizeof(*keep));
	int r;

	if (!res || !keep) {
		if (res)
			rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out_free;
	}
	ml_rangeset_init(&hot);
	r = agent_target(a, &req->pid, &e);
	if (r) {
		fail_criu(out, what, r, &e, NULL);
		goto out;
	}
	/* a dump to restore: where the restore finds the target's mounts */
	if (!req->pre_dump && mntns_prepare(req->pid, req->extra_args, req->images_dir, keep, &e)) {
		rpc_fail(out, RPC_FAILED_PRECONDITION, "%s: CRIU was not run: %s", what, e.msg);
		goto out;
	}
	if (keep->keeper)
		req->restore_args = keep->restore;
	ML_OPTS(ml_criu_preflight_opts, po, .tcp = req->tcp, .extra_args = req->extra_args,
		.shell_job = req->shell_job, .pre_dump = req->pre_dump);
	if (rpc_refuse_preflight(a, req->pid, &po, what, out))
		goto out;
	r = ml_criu_checkpoint_procs(a->session, a->prof, req, res, &hot, &procs, &e);
	if (r == -EOPNOTSUPP && req->pre_dump && !a->caps.mem_dirty_track)
		/* say it in the requests' words: the client has no command line */
		ml_err_set(&e, EOPNOTSUPP,
			   "pre-dump needs soft-dirty page tracking, which this kernel lacks "
			   "(CONFIG_MEM_SOFT_DIRTY); CRIU was not run. Call FinalDump instead "
			   "(leave_running: true keeps the target running), or Migrate, which "
			   "does one stop-and-copy dump here");
	/* the client's arguments were checked above: -EINVAL is about the
	 * target (CRIU refuses a process in session 0), a precondition */
	if (criu_end(kind, r == -EINVAL ? -EOPNOTSUPP : r, what, &e, res, out))
		goto out;
	a->checkpoints++;
	if (mntns_write(keep, req->images_dir, &e)) {
		rpc_fail(out, RPC_INTERNAL, "%s: the dump is written, its restore cannot be: %s",
			 what, e.msg);
		goto out;
	}
	if (a->prof && !res->profiler_reinit) {
		/* the target is gone or frozen in the images: stop profiling it */
		ml_profiler_close(a->prof);
		a->prof = NULL;
		metrics_profiling(false, 0);
	}
	ckpt_response(res, &hot, &procs, req->pid, req->images_dir, out);
out:
	ml_criu_hot_procs_free(&procs);
	ml_rangeset_free(&hot);
out_free:
	free(keep);
	free(res);
}

/* --criu-opt values for the library (NULL-terminated), or NULL */
static const char *const *criu_opts(const struct agent *a)
{
	return a->cfg.criu_opts.n ? a->cfg.criu_opts.v : NULL;
}

#define MAX_CRIU_TIMEOUT_MS 86400000u

/* A request's timeout_ms: 0 (the agent's --criu-timeout) up to a day. */
static bool bad_timeout(uint32_t ms, const char *what, struct rpc_reply *out)
{
	if (ms <= MAX_CRIU_TIMEOUT_MS)
		return false;
	rpc_fail(out, RPC_INVALID_ARGUMENT,
		 "%s: timeout_ms must be at most %u (0: the agent's default), not %u", what,
		 MAX_CRIU_TIMEOUT_MS, ms);
	return true;
}

void rpc_pre_checkpoint(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			struct rpc_reply *out)
{
	Agent__PreCheckpointRequest *q;
	char dir[PATH_MAX], pdir[PATH_MAX];

	(void)deadline;
	q = agent__pre_checkpoint_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "PreCheckpointRequest", len);
		return;
	}
	if (bad_timeout(q->timeout_ms, "PreCheckpoint", out) ||
	    rpc_refuse_without_sys_admin("PreCheckpoint", out)) {
		/* answered */
	} else if (!dirs(a, q->images_dir, q->parent_dir, dir, pdir, out, "PreCheckpoint")) {
		struct ml_criu_dump_req r = {
			.images_dir = dir,
			.parent_dir = q->parent_dir[0] ? pdir : NULL,
			.pre_dump = true,
			.shell_job = q->shell_job,
			.no_exclude = q->no_exclude,
			.timeout_ms = q->timeout_ms,
			.extra_args = criu_opts(a),
			.tcp = a->cfg.tcp,
		};

		pthread_rwlock_wrlock(&a->lock);
		checkpoint_locked(a, &r, "PreCheckpoint", out);
		pthread_rwlock_unlock(&a->lock);
	}
	agent__pre_checkpoint_request__free_unpacked(q, NULL);
}

void rpc_final_dump(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		    struct rpc_reply *out)
{
	Agent__FinalDumpRequest *q;
	char dir[PATH_MAX], pdir[PATH_MAX];

	(void)deadline;
	q = agent__final_dump_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "FinalDumpRequest", len);
		return;
	}
	if (q->page_server_port < 0 || q->page_server_port > 65535 ||
	    (q->page_server_port && !q->page_server_address[0])) {
		rpc_fail(out, RPC_INVALID_ARGUMENT,
			 "FinalDump: page_server_port must be 1..65535 together with "
			 "page_server_address (or 0 to write pages into images_dir), not %d",
			 q->page_server_port);
	} else if (bad_timeout(q->timeout_ms, "FinalDump", out) ||
		   rpc_refuse_without_sys_admin("FinalDump", out)) {
		/* answered */
	} else if (!dirs(a, q->images_dir, q->parent_dir, dir, pdir, out, "FinalDump")) {
		struct ml_criu_dump_req r = {
			.images_dir = dir,
			.parent_dir = q->parent_dir[0] ? pdir : NULL,
			.leave_running = q->leave_running,
			.shell_job = q->shell_job,
			.no_exclude = q->no_exclude,
			.page_server_addr = q->page_server_port ? q->page_server_address : NULL,
			.page_server_port = q->page_server_port,
			.timeout_ms = q->timeout_ms,
			.extra_args = criu_opts(a),
			.tcp = a->cfg.tcp,
		};

		pthread_rwlock_wrlock(&a->lock);
		checkpoint_locked(a, &r, "FinalDump", out);
		pthread_rwlock_unlock(&a->lock);
	}
	agent__final_dump_request__free_unpacked(q, NULL);
}

static unsigned int timeout_for(const struct agent *a, uint32_t req_ms)
{
	return req_ms ? req_ms : a->cfg.criu_timeout_ms;
}

static void restore_locked(struct agent *a, const Agent__RestoreRequest *q, const char *dir,
			   struct rpc_reply *out)
{
	Agent__RestoreResponse resp = AGENT__RESTORE_RESPONSE__INIT;
	struct ml_criu_restore_req rq = { .images_dir = dir,
					  .shell_job = q->shell_job,
					  .extra_args = criu_opts(a),
					  .tcp = a->cfg.tcp };
	ML_OPTS(ml_criu_run_opts, o, .timeout_ms = timeout_for(a, q->timeout_ms));
	struct ml_criu_result *res = criu_begin(a, "Restore", out);
	struct ml_err e = { 0 };
	bool staged = false;
	int r;

	if (!res)
		return;
	/* the application's own mount namespace, through its keeper */
	if (mntns_stage(dir, &staged, &e)) {
		rpc_fail(out, RPC_FAILED_PRECONDITION, "Restore: CRIU was not run: %s", e.msg);
		goto out;
	}
	r = ml_criu_restore(&a->caps, &rq, &o, res, &e);
	if (staged)
		mntns_unstage(dir);
	if (criu_end(CKPT_RESTORE, r, "Restore", &e, res, out))
		goto out;
	a->restored_pid = res->restored_pid;
	resp.success = true;
	resp.error = "";
	resp.pid = res->restored_pid;
	resp.duration_ms = (int64_t)res->duration_ms;
	resp.log_path = res->log_path;
	resp.repeated = res->repeated;
	rpc_pack(out, &resp.base);
out:
	free(res);
}

void rpc_restore(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		 struct rpc_reply *out)
{
	Agent__RestoreRequest *q;
	char dir[PATH_MAX], unused[PATH_MAX];

	(void)deadline;
	q = agent__restore_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "RestoreRequest", len);
		return;
	}
	if (bad_timeout(q->timeout_ms, "Restore", out) ||
	    rpc_refuse_without_sys_admin("Restore", out)) {
		/* answered */
	} else if (!dirs(a, q->images_dir, NULL, dir, unused, out, "Restore")) {
		pthread_rwlock_wrlock(&a->lock);
		if (a->prof && ml_profiler_running(a->prof))
			rpc_fail(out, RPC_FAILED_PRECONDITION,
				 "Restore: the agent is profiling pid %d: call StopProfiling first",
				 (int)ml_profiler_pid(a->prof));
		else
			restore_locked(a, q, dir, out);
		pthread_rwlock_unlock(&a->lock);
	}
	agent__restore_request__free_unpacked(q, NULL);
}

static void page_server(struct agent *a, const Agent__StartPageServerRequest *q, const char *dir,
			const char *pdir, struct rpc_reply *out)
{
	Agent__StartPageServerResponse resp = AGENT__START_PAGE_SERVER_RESPONSE__INIT;
	struct ml_criu_page_server_req rq = {
		.images_dir = dir,
		.addr = q->address[0] ? q->address : NULL,
		.port = q->port,
		.parent_dir = q->parent_dir[0] ? pdir : NULL,
	};
	ML_OPTS(ml_criu_run_opts, o, .timeout_ms = a->cfg.criu_timeout_ms);
	struct ml_criu_result *res = criu_begin(a, "StartPageServer", out);
	struct ml_err e = { 0 };
	pid_t pid = 0;

	if (!res)
		return;
	if (criu_end(CKPT_PAGE_SERVER, ml_criu_page_server_start(&a->caps, &rq, &o, &pid, res, &e),
		     "StartPageServer", &e, res, out))
		goto out;
	resp.success = true;
	resp.error = "";
	resp.pid = pid;
	resp.port = q->port ? q->port : 1234;
	rpc_pack(out, &resp.base);
out:
	free(res);
}

void rpc_start_page_server(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			   struct rpc_reply *out)
{
	Agent__StartPageServerRequest *q;
	char dir[PATH_MAX], pdir[PATH_MAX];

	(void)deadline;
	q = agent__start_page_server_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "StartPageServerRequest", len);
		return;
	}
	if (q->port < 0 || q->port > 65535)
		rpc_fail(out, RPC_INVALID_ARGUMENT,
			 "StartPageServer: port must be 1..65535 (0: 1234), not %d", q->port);
	else if (!dirs(a, q->images_dir, q->parent_dir, dir, pdir, out, "StartPageServer"))
		page_server(a, q, dir, pdir, out);
	agent__start_page_server_request__free_unpacked(q, NULL);
}
