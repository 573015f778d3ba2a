// SPDX-License-Identifier: MIT
/* StartProfiling, StopProfiling, GetHotRegions, GetDirtyVolume; GetStatus. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memlens/heat.h"
#include "memlens/hotrange.h"
#include "memlens/maps.h"
#include "memlens/sample.h"
#include "rpc_handlers.h"
#include "memlens/clock.h"

#ifndef MEMLENS_VERSION
#define MEMLENS_VERSION "0.1.0"
#endif

#define INTERVAL_MIN 10
#define INTERVAL_MAX 600000

/* StartProfiling parameters; proto3 zero means "not set": the default. */
static int validate_start(const Agent__StartProfilingRequest *q, struct ml_profiler_opts *po,
			  struct rpc_reply *out)
{
	memset(po, 0, sizeof(*po));
	po->sz = sizeof(*po);
	if (q->interval_ms && (q->interval_ms < INTERVAL_MIN || q->interval_ms > INTERVAL_MAX))
		return rpc_fail(
			out, RPC_INVALID_ARGUMENT,
			"interval_ms must be %d..%d milliseconds (0 for the default %d), not %d",
			INTERVAL_MIN, INTERVAL_MAX, ML_PROFILER_DEFAULT_INTERVAL_MS,
			q->interval_ms);
	if (isnan(q->hot_threshold))
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"hot_threshold is NaN: give a written ratio in (0, 1] (0 for the "
				"default %.1f)",
				ML_HEAT_DEFAULT_THRESHOLD);
	if (q->hot_threshold != 0 && !(q->hot_threshold > 0 && q->hot_threshold <= 1))
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"hot_threshold must be a written ratio in (0, 1] (0 for the "
				"default %.1f), not %g",
				ML_HEAT_DEFAULT_THRESHOLD, q->hot_threshold);
	if (q->hot_consecutive && (q->hot_consecutive < 1 || q->hot_consecutive > ML_HEAT_WINDOW))
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"hot_consecutive must be 1..%d intervals, the heat window (0 for "
				"the default %d), not %d",
				ML_HEAT_WINDOW, ML_HEAT_DEFAULT_CONSECUTIVE, q->hot_consecutive);
	if (q->hot_cool < 0 || q->hot_cool > ML_HOTRANGE_MAX_INTERVALS)
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"hot_cool must be 1..%d intervals (0: hot_consecutive), not %d",
				ML_HOTRANGE_MAX_INTERVALS, q->hot_cool);
	if (q->max_hot_ranges < 0 || q->max_hot_ranges > ML_HOTRANGE_MAX_MAX)
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"max_hot_ranges must be 1..%d (0 for the default %d), not %d",
				ML_HOTRANGE_MAX_MAX, ML_HOTRANGE_DEFAULT_MAX, q->max_hot_ranges);
	if (q->sample_k < 0 || q->sample_k > ML_SAMPLE_K_MAX)
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"sample_k must be 1..%d (0: every page), not %d", ML_SAMPLE_K_MAX,
				q->sample_k);
	if (!(q->max_overhead_pct >= 0 && q->max_overhead_pct <= 100))
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"max_overhead_pct must be a percent of one CPU in (0, 100] (0: no "
				"bound), not %g",
				q->max_overhead_pct);
	if (q->max_error_pct != 0 && !(q->max_error_pct >= 0.1 && q->max_error_pct <= 100))
		return rpc_fail(out, RPC_INVALID_ARGUMENT,
				"max_error_pct must be a percent in [0.1, 100] (0: no bound), "
				"not %g",
				q->max_error_pct);
	po->sample_k = (unsigned int)q->sample_k;
	po->max_overhead = q->max_overhead_pct / 100;
	po->max_error = q->max_error_pct / 100;
	po->interval_ms = (unsigned int)q->interval_ms;
	po->hot_threshold = q->hot_threshold;
	po->hot_consecutive = q->hot_consecutive;
	po->hot_cool = q->hot_cool;
	po->hot_ranges_max = (unsigned int)q->max_hot_ranges;
	po->tree = true; /* CRIU dumps the whole tree: every process of it is profiled */
	return 0;
}

static int count_writable(pid_t pid)
{
	struct ml_vma_set set;
	struct ml_err e;
	int n = 0;

	ml_vma_set_init(&set);
	if (!ml_maps_read(pid, &set, &e))
		for (size_t i = 0; i < set.n; i++)
			n += ml_vma_is_writable_private(&set.v[i]);
	ml_vma_set_free(&set);
	return n;
}

static void start_locked(struct agent *a, const struct ml_profiler_opts *po, struct rpc_reply *out)
{
	Agent__StartProfilingResponse resp = AGENT__START_PROFILING_RESPONSE__INIT;
	struct ml_err err = { 0 };
	struct ml_profiler *p = NULL;
	pid_t pid;
	int r;

	if (a->prof && ml_profiler_running(a->prof)) {
		rpc_fail(out, RPC_FAILED_PRECONDITION,
			 "profiling is already active on pid %d: call StopProfiling first",
			 (int)ml_profiler_pid(a->prof));
		return;
	}
	if (a->prof) { /* it stopped by itself (the target exited) */
		ml_profiler_close(a->prof);
		a->prof = NULL;
	}
	r = agent_target(a, &pid, &err);
	if (!r)
		r = ml_profiler_open(&p, pid, po, &err);
	pthread_mutex_lock(&a->tick_lock);
	a->ticks_over = a->tick_ns_max = a->tick_ns_last = 0;
	pthread_mutex_unlock(&a->tick_lock);
	if (!r)
		r = ml_profiler_start(p, agent_tick, a, &err);
	if (r) {
		ml_profiler_close(p);
		snprintf(a->last_error, sizeof(a->last_error), "%s", err.msg);
		rpc_fail(out, rpc_code_for_errno(r), "StartProfiling: %s", err.msg);
		return;
	}
	a->prof = p;
	a->last_error[0] = '\0';
	metrics_injection(ml_profiler_attach_stats(p)->stopped_ns);
	metrics_profiling(true, pid);
	resp.success = true;
	resp.error = "";
	resp.pid = pid;
	resp.vma_count = count_writable(pid);
	rpc_pack(out, &resp.base);
}

void rpc_start_profiling(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			 struct rpc_reply *out)
{
	Agent__StartProfilingRequest *q;
	struct ml_profiler_opts po;

	(void)deadline;
	q = agent__start_profiling_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "StartProfilingRequest", len);
		return;
	}
	if (!validate_start(q, &po, out)) {
		pthread_rwlock_wrlock(&a->lock);
		start_locked(a, &po, out);
		pthread_rwlock_unlock(&a->lock);
	}
	agent__start_profiling_request__free_unpacked(q, NULL);
}

void rpc_stop_profiling(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			struct rpc_reply *out)
{
	Agent__StopProfilingResponse resp = AGENT__STOP_PROFILING_RESPONSE__INIT;
	Agent__StopProfilingRequest *q;

	(void)deadline;
	q = agent__stop_profiling_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "StopProfilingRequest", len);
		return;
	}
	agent__stop_profiling_request__free_unpacked(q, NULL);
	pthread_rwlock_wrlock(&a->lock);
	if (a->prof) {
		ml_profiler_close(a->prof);
		a->prof = NULL;
		metrics_profiling(false, 0);
	}
	pthread_rwlock_unlock(&a->lock);
	resp.success = true;
	rpc_pack(out, &resp.base);
}

/* Under the read lock: the latest sample, or FAILED_PRECONDITION. */
static int latest(struct agent *a, struct ml_profiler_sample *s, const char *what,
		  struct rpc_reply *out)
{
	struct ml_err e = { 0 };

	memset(s, 0, sizeof(*s));
	if (!a->prof)
		return rpc_fail(out, RPC_FAILED_PRECONDITION,
				"%s: profiling is not active: call StartProfiling first", what);
	if (!ml_profiler_running(a->prof)) {
		/* it ended by itself (the target exited, an error): old data is no answer */
		if (!ml_profiler_error(a->prof, &e))
			snprintf(e.msg, sizeof(e.msg), "%s", "it was stopped");
		return rpc_fail(out, RPC_FAILED_PRECONDITION,
				"%s: profiling of pid %d has ended: %s; call StartProfiling again "
				"(GetStatus says why too)",
				what, (int)ml_profiler_pid(a->prof), e.msg);
	}
	if (ml_profiler_latest(a->prof, s))
		return rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "%s: out of memory", what);
	return 0;
}

/* The hot ranges inside the VMAs into @resp; @rs and @ptrs have room for them all. */
static void hot_ranges(const struct ml_hotrange_set *h, Agent__GetHotRegionsResponse *resp,
		       Agent__HotRangeProto *rs, Agent__HotRangeProto **ptrs)
{
	for (size_t i = 0; i < h->n; i++) {
		agent__hot_range_proto__init(&rs[i]);
		rs[i].start_addr = h->r[i].start;
		rs[i].end_addr = h->r[i].end;
		rs[i].pages = (int64_t)((h->r[i].end - h->r[i].start) / 4096);
		rs[i].hot_pages = (int64_t)h->r[i].hot_pages;
		rs[i].pid = h->r[i].pid;
		ptrs[i] = &rs[i];
	}
	resp->n_hot_ranges = h->n;
	resp->hot_ranges = ptrs;
	resp->hot_ranges_unmerged = (int32_t)h->unmerged;
	resp->hot_range_bytes = h->hot_bytes;
	resp->hot_range_merge_cost_bytes = h->merge_cost_bytes;
}

/* An interval's error in percent: 0 exact or without a bound, -1 not known */
static double error_pct(const struct ml_profiler_sampling *s)
{
	if (!(s->max_error > 0))
		return 0;
	return s->error >= 0 ? s->error * 100 : -1;
}

static void hot_regions(const struct ml_profiler_sample *s, struct rpc_reply *out)
{
	Agent__GetHotRegionsResponse resp = AGENT__GET_HOT_REGIONS_RESPONSE__INIT;
	Agent__HotRegionProto *regs = calloc(s->nregions + 1, sizeof(*regs));
	Agent__HotRegionProto **ptrs = calloc(s->nregions + 1, sizeof(*ptrs));
	Agent__HotRangeProto *rs = calloc(s->hot.n + 1, sizeof(*rs));
	Agent__HotRangeProto **rptrs = calloc(s->hot.n + 1, sizeof(*rptrs));
	Agent__ProcessWritesProto *procs = calloc(s->nprocs + 1, sizeof(*procs));
	Agent__ProcessWritesProto **pptrs = calloc(s->nprocs + 1, sizeof(*pptrs));
	size_t n = 0;

	if (!regs || !ptrs || !rs || !rptrs || !procs || !pptrs) {
		rpc_fail(out, RPC_RESOURCE_EXHAUSTED, "GetHotRegions: out of memory");
		goto out;
	}
	for (size_t i = 0; i < s->nregions; i++) {
		const struct ml_profiler_region *r = &s->regions[i];

		if (!r->hot)
			continue;
		agent__hot_region_proto__init(&regs[n]);
		regs[n].start_addr = r->start;
		regs[n].end_addr = r->end;
		regs[n].written_ratio = r->written_ratio;
		regs[n].consecutive_hot = r->consecutive_hot;
		regs[n].pid = r->pid;
		regs[n].shared = r->shared;
		ptrs[n] = &regs[n];
		n++;
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ml_profiler_proc *p = &s->procs[i];

		agent__process_writes_proto__init(&procs[i]);
		procs[i].pid = p->pid;
		procs[i].ppid = p->ppid;
		procs[i].comm = (char *)p->comm;
		procs[i].exited = p->exited;
		procs[i].dirty_pages = p->dirty_pages;
		procs[i].shared_dirty_pages = p->shared_dirty_pages;
		procs[i].cumulative_dirty_bytes = p->cumulative_dirty_bytes;
		procs[i].hot_bytes = p->hot_bytes;
		procs[i].note = (char *)(p->failed ? p->note : "");
		pptrs[i] = &procs[i];
	}
	resp.n_processes = s->nprocs;
	resp.processes = pptrs;
	resp.shared_dirty_pages = s->shared_dirty_pages;
	resp.n_regions = n;
	resp.regions = ptrs;
	resp.timestamp_ms = s->seq ? s->dirty.timestamp_ms : ml_wall_ms();
	resp.total_vmas = s->total_vmas;
	resp.hot_vmas = s->hot_vmas;
	resp.estimated = s->sampling.k > 1;
	resp.sample_fraction = 1.0 / (s->sampling.k ? s->sampling.k : 1);
	resp.overhead_pct = s->sampling.cost * 100;
	resp.fault_ns = s->sampling.fault_ns;
	resp.fault_ns_measured = s->sampling.fault_ns_measured;
	resp.tracked_faults = s->sampling.faults;
	resp.max_error_pct = s->sampling.max_error * 100;
	resp.error_pct = error_pct(&s->sampling);
	hot_ranges(&s->hot, &resp, rs, rptrs);
	rpc_pack(out, &resp.base);
out:
	free(regs);
	free(ptrs);
	free(rs);
	free(rptrs);
	free(procs);
	free(pptrs);
}

void rpc_get_hot_regions(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			 struct rpc_reply *out)
{
	Agent__GetHotRegionsRequest *q;
	struct ml_profiler_sample s;

	(void)deadline;
	q = agent__get_hot_regions_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "GetHotRegionsRequest", len);
		return;
	}
	agent__get_hot_regions_request__free_unpacked(q, NULL);
	pthread_rwlock_rdlock(&a->lock);
	if (!latest(a, &s, "GetHotRegions", out))
		hot_regions(&s, out);
	pthread_rwlock_unlock(&a->lock);
	ml_profiler_sample_free(&s);
}

void rpc_get_dirty_volume(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			  struct rpc_reply *out)
{
	Agent__GetDirtyVolumeResponse resp = AGENT__GET_DIRTY_VOLUME_RESPONSE__INIT;
	Agent__GetDirtyVolumeRequest *q;
	struct ml_profiler_sample s;

	(void)deadline;
	q = agent__get_dirty_volume_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "GetDirtyVolumeRequest", len);
		return;
	}
	agent__get_dirty_volume_request__free_unpacked(q, NULL);
	pthread_rwlock_rdlock(&a->lock);
	if (!latest(a, &s, "GetDirtyVolume", out)) {
		resp.dirty_pages = s.dirty.dirty_pages;
		resp.dirty_bytes = s.dirty.dirty_bytes;
		resp.dirty_rate_pages_per_sec = s.dirty.dirty_rate_pages_per_sec;
		resp.cumulative_dirty_bytes = s.dirty.cumulative_dirty_bytes;
		resp.avg_dirty_rate = s.dirty.avg_dirty_rate;
		resp.estimated = s.sampling.k > 1;
		resp.sample_fraction = 1.0 / (s.sampling.k ? s.sampling.k : 1);
		resp.overhead_pct = s.sampling.cost * 100;
		resp.fault_ns = s.sampling.fault_ns;
		resp.fault_ns_measured = s.sampling.fault_ns_measured;
		resp.tracked_faults = s.sampling.faults;
		resp.max_error_pct = s.sampling.max_error * 100;
		resp.error_pct = error_pct(&s.sampling);
		resp.timestamp_ms = s.seq ? s.dirty.timestamp_ms : ml_wall_ms();
		rpc_pack(out, &resp.base);
	}
	pthread_rwlock_unlock(&a->lock);
	ml_profiler_sample_free(&s);
}

static void status_profiler(struct agent *a, Agent__GetStatusResponse *r,
			    struct ml_profiler_sample *s, char *lasterr, size_t len)
{
	const struct ml_profiler_opts *o = ml_profiler_options(a->prof);
	struct ml_err e = { 0 };

	r->profiling = ml_profiler_running(a->prof);
	r->pid = ml_profiler_pid(a->prof);
	r->interval_ms = (int32_t)o->interval_ms;
	r->hot_threshold = o->hot_threshold;
	r->hot_consecutive = o->hot_consecutive;
	r->hot_cool = o->hot_cool;
	r->max_hot_ranges = (int32_t)o->hot_ranges_max;
	r->sample_k = (int32_t)o->sample_k;
	r->max_overhead_pct = o->max_overhead * 100;
	r->max_error_pct = o->max_error * 100;
	if (o->sample_k > 1 || o->max_overhead > 0) {
		/* before the first interval: the one the profiler took, the measured one if so */
		r->fault_ns = o->fault_ns;
		r->fault_ns_measured = o->fault_ns && o->fault_ns == ml_wp_fault_ns();
	}
	if (!ml_profiler_latest(a->prof, s)) {
		r->intervals = (int64_t)s->seq;
		r->total_vmas = s->total_vmas;
		r->tracked_vmas = s->tracked_vmas;
		r->hot_vmas = s->hot_vmas;
		if (s->sampling.on) {
			r->fault_ns = s->sampling.fault_ns;
			r->fault_ns_measured = s->sampling.fault_ns_measured;
			r->error_pct = error_pct(&s->sampling);
		}
	}
	pthread_mutex_lock(&a->tick_lock);
	r->ticks_over_interval = (int64_t)a->ticks_over;
	r->tick_ms_max = (double)a->tick_ns_max / 1e6;
	r->tick_ms_last = (double)a->tick_ns_last / 1e6;
	r->interval_kept = !a->ticks_over;
	pthread_mutex_unlock(&a->tick_lock);
	if (ml_profiler_error(a->prof, &e))
		snprintf(lasterr, len, "%s", e.msg);
}

void rpc_get_status(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		    struct rpc_reply *out)
{
	Agent__GetStatusResponse resp = AGENT__GET_STATUS_RESPONSE__INIT;
	Agent__GetStatusRequest *q;
	struct ml_profiler_sample s = { 0 };
	char lasterr[1024], comm[16], how[96];
	char *caps[8];
	size_t ncaps = 0;
	struct timespec ts;

	(void)deadline;
	q = agent__get_status_request__unpack(NULL, len, req);
	if (!q) {
		rpc_malformed(out, "GetStatusRequest", len);
		return;
	}
	agent__get_status_request__free_unpacked(q, NULL);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_rwlock_rdlock(&a->lock);
	snprintf(lasterr, sizeof(lasterr), "%s", a->last_error);
	resp.interval_kept = true; /* no tick yet */
	if (a->prof)
		status_profiler(a, &resp, &s, lasterr, sizeof(lasterr));
	else
		resp.pid = a->restored_pid ? a->restored_pid : a->cfg.target.pid;
	resp.version = MEMLENS_VERSION;
	resp.last_error = lasterr;
	resp.uptime_ms = (int64_t)(((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec -
				    a->start_ns) /
				   1000000);
	resp.checkpoints = a->checkpoints;
	pthread_mutex_lock(&a->criu_lock);
	resp.criu_path = a->criu_probed && !a->criu_rc ? a->caps.path : "";
	resp.criu_version = a->criu_probed && !a->criu_rc ? a->caps.version : "";
	resp.criu_works = a->criu_probed && !a->criu_rc && a->caps.works;
	resp.criu_exclude = resp.criu_works && (a->caps.exclude_range || a->caps.exclude_file);
	resp.criu_pre_dump = resp.criu_works && a->caps.mem_dirty_track;
	resp.target_pid = agent_found(a, comm, sizeof(comm), how, sizeof(how));
	resp.target_comm = resp.target_pid ? comm : "";
	resp.target_chosen_by = resp.target_pid ? how : "";
	resp.state = a->prof	       ? (resp.profiling ? "profiling" : "profiling_stopped")
		     : resp.target_pid ? "ready"
				       : "waiting_for_target";
	if (a->can_profile)
		caps[ncaps++] = "profile_writes";
	if (resp.criu_works) {
		caps[ncaps++] = "checkpoint";
		caps[ncaps++] = "restore";
		caps[ncaps++] = "migrate";
	}
	if (resp.criu_pre_dump)
		caps[ncaps++] = "pre_dump";
	if (resp.criu_exclude)
		caps[ncaps++] = a->caps.page_granular ? "exclude_pages" : "exclude_vmas";
	resp.capabilities = caps;
	resp.n_capabilities = ncaps;
	rpc_pack(out, &resp.base);
	pthread_mutex_unlock(&a->criu_lock);
	pthread_rwlock_unlock(&a->lock);
	ml_profiler_sample_free(&s);
}
