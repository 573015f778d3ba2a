// SPDX-License-Identifier: MIT
/* The `writes` JSON Lines schema, written and read (see memlens/format_writes.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_writes.h"
#include "memlens/maps.h"

static void put_attach(struct ml_jw *w, const struct ml_attach_stats *a)
{
	ml_jw_key(w, "attach");
	ml_jw_obj(w);
	ml_jw_kdbl(w, "stopped_ms", a->stopped_ns / 1e6);
	ml_jw_kuint(w, "threads_held", a->threads_held);
	ml_jw_kuint(w, "threads_in_nonrestartable_wait", a->in_nonrestartable);
	ml_jw_kuint(w, "waits_restarted", a->restarted);
	ml_jw_kuint(w, "syscalls_injected", a->syscalls);
	ml_jw_obj_end(w);
}

static void put_region(struct ml_jw *w, const struct ml_profiler_region *r, bool tree)
{
	ml_jw_obj(w);
	if (tree)
		ml_jw_kint(w, "pid", r->pid);
	ml_jw_khex(w, "start_addr", r->start);
	ml_jw_khex(w, "end_addr", r->end);
	ml_jw_kstr(w, "kind", ml_vma_kind_name(r->kind));
	if (r->path && r->path[0])
		ml_jw_kstr(w, "path", r->path);
	ml_jw_kuint(w, "total_pages", r->total_pages);
	ml_jw_kuint(w, "dirty_pages", r->dirty_pages);
	ml_jw_kdbl(w, "written_ratio", r->written_ratio);
	ml_jw_kint(w, "consecutive_hot", r->consecutive_hot);
	ml_jw_kbool(w, "hot", r->hot);
	if (r->has_resident)
		ml_jw_kuint(w, "resident_pages", r->resident_pages);
	if (r->estimated) {
		/* a sampled interval: dirty_pages and written_ratio are estimates */
		ml_jw_kbool(w, "estimated", true);
		ml_jw_kuint(w, "sampled_pages", r->sampled_pages);
		ml_jw_kuint(w, "sampled_dirty_pages", r->sampled_dirty);
		ml_jw_kdbl(w, "ratio_stderr", r->ratio_stderr);
	}
	if (r->shared) {
		ml_jw_key(w, "shared");
		ml_jw_obj(w);
		ml_jw_kuint(w, "dev", r->dev);
		ml_jw_kuint(w, "inode", r->inode);
		ml_jw_kuint(w, "pgoff", r->pgoff);
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

/* A tree's rows: one per process. */
static void put_processes(struct ml_jw *w, const struct ml_profiler_sample *s)
{
	ml_jw_key(w, "processes");
	ml_jw_arr(w);
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ml_profiler_proc *p = &s->procs[i];

		ml_jw_obj(w);
		ml_jw_kint(w, "pid", p->pid);
		ml_jw_kint(w, "ppid", p->ppid);
		ml_jw_kstr(w, "comm", p->comm);
		ml_jw_kstr(w, "state",
			   p->exited   ? "exited"
			   : p->failed ? "not profiled"
				       : "profiled");
		if (p->note[0] && !p->exited)
			ml_jw_kstr(w, "note", p->note);
		ml_jw_kint(w, "tracked_vmas", p->tracked_vmas);
		ml_jw_kint(w, "dirty_pages", p->dirty_pages);
		ml_jw_kint(w, "shared_dirty_pages", p->shared_dirty_pages);
		ml_jw_kint(w, "cumulative_dirty_bytes", p->cumulative_dirty_bytes);
		ml_jw_kuint(w, "hot_bytes", p->hot_bytes);
		if (p->shared_untracked)
			ml_jw_kint(w, "shared_untracked_vmas", p->shared_untracked);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
}

/* What every interval and the summary say of the tree and of shared memory. */
static void put_tree(struct ml_jw *w, const struct ml_profiler_sample *s)
{
	if (s->shared_untracked)
		ml_jw_kint(w, "shared_untracked_vmas", s->shared_untracked);
	if (!s->tree)
		return;
	ml_jw_kbool(w, "tree", true);
	ml_jw_kint(w, "shared_dirty_pages", s->shared_dirty_pages);
	put_processes(w, s);
}

/* The hot ranges inside the VMAs (memlens/hotrange.h), after merging to the bound. */
static void put_hot_ranges(struct ml_jw *w, const struct ml_hotrange_set *h, bool tree)
{
	ml_jw_key(w, "hot_ranges");
	ml_jw_obj(w);
	if (h->estimated)
		ml_jw_kbool(w, "estimated", true);
	ml_jw_kuint(w, "count", h->n);
	ml_jw_kuint(w, "unmerged", h->unmerged);
	ml_jw_kuint(w, "hot_bytes", h->hot_bytes);
	ml_jw_kuint(w, "merge_cost_bytes", h->merge_cost_bytes);
	ml_jw_key(w, "ranges");
	ml_jw_arr(w);
	for (size_t i = 0; i < h->n; i++) {
		ml_jw_obj(w);
		if (tree)
			ml_jw_kint(w, "pid", h->r[i].pid);
		ml_jw_khex(w, "start_addr", h->r[i].start);
		ml_jw_khex(w, "end_addr", h->r[i].end);
		ml_jw_kuint(w, "pages", (h->r[i].end - h->r[i].start) / 4096);
		ml_jw_kuint(w, "hot_pages", h->r[i].hot_pages);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

/* How the interval was tracked, when sampling was asked for (memlens/sample.h). */
static void put_sampling(struct ml_jw *w, const struct ml_profiler_sampling *s)
{
	if (!s->on)
		return;
	ml_jw_key(w, "sampling");
	ml_jw_obj(w);
	ml_jw_kdbl(w, "fraction", 1.0 / (s->k ? s->k : 1));
	ml_jw_kuint(w, "k", s->k);
	ml_jw_kuint(w, "faults", s->faults);
	ml_jw_kdbl(w, "overhead_pct", s->cost * 100);
	ml_jw_kuint(w, "target_minflt", s->minflt);
	ml_jw_kdbl(w, "next_fraction", 1.0 / (s->next_k ? s->next_k : 1));
	ml_jw_kuint(w, "next_interval_ms", s->next_interval_ms);
	ml_jw_kuint(w, "fault_ns", s->fault_ns);
	ml_jw_kbool(w, "fault_ns_measured", s->fault_ns_measured);
	if (s->max_error > 0) {
		ml_jw_kdbl(w, "max_error_pct", s->max_error * 100);
		if (s->error >= 0)
			ml_jw_kdbl(w, "error_pct", s->error * 100);
		if (s->next_error >= 0)
			ml_jw_kdbl(w, "next_error_pct", s->next_error * 100);
	}
	ml_jw_obj_end(w);
}

static void put_dirty(struct ml_jw *w, const struct ml_profiler_dirty *d)
{
	ml_jw_key(w, "dirty");
	ml_jw_obj(w);
	ml_jw_kint(w, "dirty_pages", d->dirty_pages);
	ml_jw_kint(w, "dirty_bytes", d->dirty_bytes);
	ml_jw_kdbl(w, "dirty_rate_pages_per_sec", d->dirty_rate_pages_per_sec);
	ml_jw_kint(w, "cumulative_dirty_bytes", d->cumulative_dirty_bytes);
	ml_jw_kdbl(w, "avg_dirty_rate", d->avg_dirty_rate);
	ml_jw_kint(w, "timestamp_ms", d->timestamp_ms);
	ml_jw_obj_end(w);
}

void ml_fmt_writes_interval(struct ml_jw *w, pid_t pid, const struct ml_profiler_sample *s,
			    bool with_written)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "interval");
	ml_jw_kint(w, "pid", pid);
	ml_jw_kuint(w, "seq", s->seq);
	ml_jw_kint(w, "t_ms", s->t_ms);
	ml_jw_kdbl(w, "interval_s", s->interval_s);
	ml_jw_kint(w, "total_vmas", s->total_vmas);
	ml_jw_kint(w, "tracked_vmas", s->tracked_vmas);
	ml_jw_kint(w, "hot_vmas", s->hot_vmas);
	ml_jw_kuint(w, "tick_us", s->tick_ns / 1000);
	if (s->interval_ms) {
		ml_jw_kuint(w, "interval_ms", s->interval_ms);
		ml_jw_kbool(w, "tick_over_interval", s->tick_over_interval);
	}
	put_dirty(w, &s->dirty);
	put_tree(w, s);
	put_sampling(w, &s->sampling);
	ml_jw_key(w, "regions");
	ml_jw_arr(w);
	for (size_t i = 0; i < s->nregions; i++)
		put_region(w, &s->regions[i], s->tree);
	ml_jw_arr_end(w);
	put_hot_ranges(w, &s->hot, s->tree);
	if (with_written) {
		ml_jw_key(w, "written");
		ml_jw_arr(w);
		for (size_t i = 0; i < s->nwritten; i++) {
			ml_jw_arr(w);
			ml_jw_hex(w, s->written[i].start);
			ml_jw_hex(w, s->written[i].end);
			ml_jw_arr_end(w);
		}
		ml_jw_arr_end(w);
		if (s->written_pid) {
			/* a tree's: the process of each written range */
			ml_jw_key(w, "written_pid");
			ml_jw_arr(w);
			for (size_t i = 0; i < s->nwritten; i++)
				ml_jw_int(w, s->written_pid[i]);
			ml_jw_arr_end(w);
		}
	}
	ml_jw_obj_end(w);
}

void ml_fmt_writes_summary(struct ml_jw *w, const struct ml_writes_summary *sum)
{
	const struct ml_profiler_sample *s = sum->last;
	struct ml_profiler_dirty zero = { 0 };
	struct ml_hotrange_set none = { 0 };

	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "summary");
	ml_jw_kint(w, "pid", sum->pid);
	ml_jw_kuint(w, "intervals", sum->intervals);
	ml_jw_kint(w, "total_vmas", s ? s->total_vmas : 0);
	ml_jw_kint(w, "tracked_vmas", s ? s->tracked_vmas : 0);
	ml_jw_kint(w, "hot_vmas", s ? s->hot_vmas : 0);
	if (sum->interval_ms) {
		ml_jw_kuint(w, "interval_ms", sum->interval_ms);
		ml_jw_kuint(w, "intervals_wanted", sum->intervals_wanted);
		ml_jw_kbool(w, "interval_kept", sum->interval_kept);
		ml_jw_kdbl(w, "tick_ms_max", (double)sum->tick_ns_max / 1e6);
		ml_jw_kuint(w, "ticks_over_interval", sum->ticks_over_interval);
	}
	ml_jw_kstr(w, "stopped_because", ml_stop_token(sum->why));
	if (sum->attach)
		put_attach(w, sum->attach);
	ml_jw_key(w, "regions");
	ml_jw_arr(w);
	for (size_t i = 0; s && i < s->nregions; i++)
		if (s->regions[i].hot)
			put_region(w, &s->regions[i], s->tree);
	ml_jw_arr_end(w);
	put_hot_ranges(w, s ? &s->hot : &none, s && s->tree);
	put_dirty(w, s ? &s->dirty : &zero);
	if (s)
		put_tree(w, s);
	if (s)
		put_sampling(w, &s->sampling);
	if (sum->ratio_stderr_over) {
		ml_jw_key(w, "sampling_error");
		ml_jw_obj(w);
		ml_jw_kdbl(w, "ratio_stderr_max", sum->ratio_stderr_max);
		ml_jw_kdbl(w, "ratio_stderr_note_above", ML_WRITES_STDERR_NOTE);
		ml_jw_kuint(w, "intervals_over", sum->ratio_stderr_over);
		ml_jw_kstr(w, "note", ML_WRITES_STDERR_ADVICE);
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

/* An optional number: 0 when absent, null (NaN is written as null) or not a number. */
static double num_or0(const struct ml_json *o, const char *key)
{
	double v = 0;

	if (ml_json_get_double(o, key, &v) || !isfinite(v))
		return 0;
	return v;
}

static void read_dirty(const struct ml_json *d, struct ml_writes_dirty_rec *r)
{
	r->dirty_pages = num_or0(d, "dirty_pages");
	r->dirty_bytes = num_or0(d, "dirty_bytes");
	r->rate_pps = num_or0(d, "dirty_rate_pages_per_sec");
	r->cumulative_dirty_bytes = num_or0(d, "cumulative_dirty_bytes");
	r->avg_dirty_rate = num_or0(d, "avg_dirty_rate");
	r->timestamp_ms = num_or0(d, "timestamp_ms");
}

static int read_region(const struct ml_json *o, size_t i, struct ml_writes_region_rec *r,
		       struct ml_err *err)
{
	const char *kind = ml_json_get_str(o, "kind"), *path = ml_json_get_str(o, "path");
	double v;

	if (ml_json_get_hex(o, "start_addr", &r->start) || ml_json_get_hex(o, "end_addr", &r->end))
		return ml_err_set(err, EINVAL,
				  "region %zu lacks \"start_addr\"/\"end_addr\" as a \"0x...\" "
				  "string",
				  i);
	snprintf(r->kind, sizeof(r->kind), "%s", kind ? kind : "");
	snprintf(r->path, sizeof(r->path), "%s", path ? path : "");
	r->written_ratio = !ml_json_get_double(o, "written_ratio", &v) && isfinite(v) ? v : NAN;
	r->total_pages = num_or0(o, "total_pages");
	r->dirty_pages = num_or0(o, "dirty_pages");
	r->consecutive_hot = num_or0(o, "consecutive_hot");
	r->has_hot = !ml_json_get_bool(o, "hot", &r->hot);
	r->has_resident = !ml_json_get_double(o, "resident_pages", &v) && isfinite(v) && v >= 0;
	r->resident_pages = r->has_resident ? v : 0;
	if (ml_json_get_int(o, "pid", &r->pid))
		r->pid = 0;
	r->shared = ml_json_type(ml_json_get(o, "shared")) == ML_JSON_OBJECT;
	return 0;
}

static int read_regions(const struct ml_json *a, struct ml_writes_region_rec **out, size_t *n,
			struct ml_err *err)
{
	size_t cnt = ml_json_count(a);
	int ret;

	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"regions\" is missing or not an array");
	*out = calloc(cnt ? cnt : 1, sizeof(**out));
	if (!*out)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < cnt; i++) {
		ret = read_region(ml_json_at(a, i), i, &(*out)[i], err);
		if (ret)
			return ret;
		(*n)++;
	}
	return 0;
}

static int read_written(const struct ml_json *a, struct ml_writes_interval_rec *r,
			struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (!a)
		return 0; /* `writes --json`: no ranges */
	r->has_written = true;
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"written\" is not an array");
	r->written = calloc(n ? n : 1, sizeof(*r->written));
	if (!r->written)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *pair = ml_json_at(a, i);
		struct ml_range *rg = &r->written[i];

		if (ml_json_type(pair) != ML_JSON_ARRAY || ml_json_count(pair) != 2 ||
		    ml_json_as_hex(ml_json_at(pair, 0), &rg->start) ||
		    ml_json_as_hex(ml_json_at(pair, 1), &rg->end) || rg->end < rg->start)
			return ml_err_set(err, EINVAL,
					  "\"written\" range %zu is not a [\"0xSTART\", \"0xEND\"] "
					  "pair with START <= END",
					  i);
		r->nwritten++;
	}
	return 0;
}

/* A tree's "written_pid", when present: one pid per "written" range. */
static int read_written_pid(const struct ml_json *a, struct ml_writes_interval_rec *r,
			    struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (!a)
		return 0;
	if (ml_json_type(a) != ML_JSON_ARRAY || n != r->nwritten)
		return ml_err_set(
			err, EINVAL,
			"field \"written_pid\" must be an array of one pid per \"written\" "
			"range (%zu)",
			r->nwritten);
	r->written_pid = calloc(n ? n : 1, sizeof(*r->written_pid));
	if (!r->written_pid)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (ml_json_as_int(ml_json_at(a, i), &r->written_pid[i]))
			return ml_err_set(err, EINVAL, "\"written_pid\" %zu is not a pid", i);
	return 0;
}

/* "hot_ranges", when present: {"count", ..., "ranges": [{"start_addr", "end_addr", ...}]}. */
static int read_hot_ranges(const struct ml_json *o, struct ml_writes_hot_rec *h, struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, "ranges");
	size_t n = ml_json_count(a);

	if (!o)
		return 0; /* written before hot ranges existed */
	h->present = true;
	if (ml_json_type(o) != ML_JSON_OBJECT || ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL,
				  "field \"hot_ranges\" is not an object with a \"ranges\" array");
	h->unmerged = num_or0(o, "unmerged");
	h->hot_bytes = num_or0(o, "hot_bytes");
	h->merge_cost_bytes = num_or0(o, "merge_cost_bytes");
	h->r = calloc(n ? n : 1, sizeof(*h->r));
	if (!h->r)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *r = ml_json_at(a, i);
		struct ml_hotrange_range *x = &h->r[i];

		if (ml_json_get_hex(r, "start_addr", &x->start) ||
		    ml_json_get_hex(r, "end_addr", &x->end) || x->end < x->start)
			return ml_err_set(err, EINVAL,
					  "hot range %zu lacks \"start_addr\" <= \"end_addr\" as "
					  "\"0x...\" strings",
					  i);
		x->hot_pages = (uint64_t)num_or0(r, "hot_pages");
		x->pid = (pid_t)num_or0(r, "pid");
		h->n++;
	}
	return 0;
}

int ml_fmt_writes_interval_read(const struct ml_json *o, struct ml_writes_interval_rec *r,
				struct ml_err *err)
{
	int ret;

	memset(r, 0, sizeof(*r));
	if (ml_json_get_double(o, "t_ms", &r->t_ms) || !isfinite(r->t_ms))
		return ml_err_set(err, EINVAL, "field \"t_ms\" is missing or not a number");
	r->t_ms_is_int = !ml_json_get_int(o, "t_ms", &r->t_ms_int);
	r->pid = num_or0(o, "pid");
	r->seq = num_or0(o, "seq");
	r->interval_s = num_or0(o, "interval_s");
	r->total_vmas = num_or0(o, "total_vmas");
	r->tracked_vmas = num_or0(o, "tracked_vmas");
	r->hot_vmas = num_or0(o, "hot_vmas");
	r->tick_us = num_or0(o, "tick_us");
	read_dirty(ml_json_get(o, "dirty"), &r->dirty);
	ret = read_regions(ml_json_get(o, "regions"), &r->regions, &r->nregions, err);
	if (!ret)
		ret = read_hot_ranges(ml_json_get(o, "hot_ranges"), &r->hot, err);
	if (ret)
		return ret;
	ret = read_written(ml_json_get(o, "written"), r, err);
	return ret ? ret : read_written_pid(ml_json_get(o, "written_pid"), r, err);
}

void ml_fmt_writes_interval_free(struct ml_writes_interval_rec *r)
{
	free(r->regions);
	free(r->written);
	free(r->written_pid);
	free(r->hot.r);
	r->regions = NULL;
	r->written = NULL;
	r->written_pid = NULL;
	r->nregions = r->nwritten = 0;
	memset(&r->hot, 0, sizeof(r->hot));
}

int ml_fmt_writes_summary_read(const struct ml_json *o, struct ml_writes_summary_rec *r,
			       struct ml_err *err)
{
	const char *why = ml_json_get_str(o, "stopped_because");
	const struct ml_json *a = ml_json_get(o, "attach"), *regs = ml_json_get(o, "regions");
	int ret;

	memset(r, 0, sizeof(*r));
	r->pid = num_or0(o, "pid");
	r->intervals = num_or0(o, "intervals");
	r->total_vmas = num_or0(o, "total_vmas");
	r->tracked_vmas = num_or0(o, "tracked_vmas");
	r->hot_vmas = num_or0(o, "hot_vmas");
	r->why = ml_stop_parse(why);
	snprintf(r->why_word, sizeof(r->why_word), "%s", why ? why : "");
	r->has_attach = ml_json_type(a) == ML_JSON_OBJECT;
	r->attach.stopped_ms = num_or0(a, "stopped_ms");
	r->attach.threads_held = num_or0(a, "threads_held");
	r->attach.in_nonrestartable = num_or0(a, "threads_in_nonrestartable_wait");
	r->attach.restarted = num_or0(a, "waits_restarted");
	r->attach.syscalls = num_or0(a, "syscalls_injected");
	read_dirty(ml_json_get(o, "dirty"), &r->dirty);
	ret = read_hot_ranges(ml_json_get(o, "hot_ranges"), &r->hot, err);
	if (ret || !regs)
		return ret;
	return read_regions(regs, &r->regions, &r->nregions, err);
}

void ml_fmt_writes_summary_free(struct ml_writes_summary_rec *r)
{
	free(r->regions);
	free(r->hot.r);
	r->regions = NULL;
	r->nregions = 0;
	memset(&r->hot, 0, sizeof(r->hot));
}
