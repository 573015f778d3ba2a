// SPDX-License-Identifier: MIT
/* The `checkpoint` JSON schema, written and read (see memlens/format_checkpoint.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_checkpoint.h"
#include "rec.h"

static void put_ranges(struct ml_jw *w, const char *key, const struct ml_range *r, size_t n)
{
	ml_jw_key(w, key);
	ml_jw_arr(w);
	for (size_t i = 0; i < n; i++) {
		ml_jw_arr(w);
		ml_jw_hex(w, r[i].start);
		ml_jw_hex(w, r[i].end);
		ml_jw_arr_end(w);
	}
	ml_jw_arr_end(w);
}

static void put_exclusion(struct ml_jw *w, const struct ml_checkpoint_exclusion_rec *x)
{
	ml_jw_key(w, "exclusion");
	ml_jw_obj(w);
	ml_jw_kbool(w, "applied", x->applied);
	ml_jw_kbool(w, "skipped", x->skipped);
	ml_jw_kuint(w, "exclude_ranges", x->exclude_ranges);
	ml_jw_kuint(w, "no_parent_ranges", x->no_parent_ranges);
	ml_jw_kbool(w, "exclude_file_used", x->exclude_file_used);
	ml_jw_kstr(w, "granularity", x->granularity ? x->granularity : "none");
	ml_jw_kstr(w, "note", x->note);
	ml_jw_obj_end(w);
}

static const char *proc_state(const struct ml_profiler_proc *p)
{
	return p->exited ? "exited" : p->failed ? "not profiled" : "profiled";
}

static void put_profiler(struct ml_jw *w, const struct ml_checkpoint_profiler_rec *p)
{
	ml_jw_key(w, "profiler");
	ml_jw_obj(w);
	ml_jw_kbool(w, "profiled", p->profiled);
	ml_jw_kbool(w, "reinit", p->reinit);
	ml_jw_kstr(w, "note", p->note);
	ml_jw_kuint(w, "resumed_intervals", p->resumed_intervals);
	/* CRIU dumps the tree: every process of it was profiled */
	ml_jw_key(w, "processes");
	ml_jw_arr(w);
	for (size_t i = 0; i < p->nprocs; i++) {
		const struct ml_profiler_proc *q = &p->procs[i];

		ml_jw_obj(w);
		ml_jw_kint(w, "pid", q->pid);
		ml_jw_kstr(w, "comm", q->comm);
		ml_jw_kstr(w, "state", proc_state(q));
		ml_jw_kuint(w, "hot_bytes", q->hot_bytes);
		ml_jw_kint(w, "cumulative_dirty_bytes", q->cumulative_dirty_bytes);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	if (p->nprocs) {
		ml_jw_key(w, "processes_total");
		ml_jw_obj(w);
		ml_jw_kuint(w, "count", p->nprocs);
		ml_jw_kuint(w, "hot_bytes", p->procs_hot_bytes);
		ml_jw_kint(w, "cumulative_dirty_bytes", p->procs_dirty_bytes);
		ml_jw_obj_end(w);
	}
	if (p->has_resumed) {
		ml_jw_kint(w, "resumed_tracked_vmas", p->resumed_tracked_vmas);
		ml_jw_kint(w, "resumed_dirty_pages", p->resumed_dirty_pages);
		ml_jw_kint(w, "resumed_cumulative_dirty_bytes", p->resumed_cumulative_dirty_bytes);
	}
	ml_jw_obj_end(w);
}

void ml_fmt_checkpoint(struct ml_jw *w, const struct ml_checkpoint_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "checkpoint");
	ml_jw_kint(w, "pid", r->pid);
	ml_jw_kstr(w, "images_dir", r->images_dir);
	ml_jw_kstr(w, "action", r->pre_dump ? "pre-dump" : "dump");
	ml_jw_kbool(w, "ok", r->ok);
	ml_jw_kint(w, "exit_code", r->exit_code);
	ml_fmt_criu_caps(w, &r->criu);
	ml_jw_kstr(w, "command", r->command);
	ml_jw_kbool(w, "criu_ran", r->criu_ran);
	ml_jw_kint(w, "criu_exit_status", r->criu_exit_status);
	ml_jw_kbool(w, "timed_out", r->timed_out);
	ml_jw_kuint(w, "duration_ms", r->duration_ms);
	ml_jw_kuint(w, "image_bytes", r->image_bytes);
	ml_jw_kuint(w, "bytes_written", r->bytes_written);
	ml_jw_kint(w, "pages_written", r->pages_written);
	ml_jw_kint(w, "shpages_written", r->shpages_written);
	ml_jw_kint(w, "pages_scanned", r->pages_scanned);
	ml_jw_kint(w, "pages_skipped_parent", r->pages_skipped_parent);
	put_ranges(w, "hot_ranges", r->hot_ranges, r->nhot_ranges);
	put_exclusion(w, &r->exclusion);
	put_profiler(w, &r->profiler);
	ml_jw_kstr(w, "tcp", r->tcp);
	ml_jw_kstr(w, "log", r->log);
	if (r->hint && r->hint[0])
		ml_jw_kstr(w, "hint", r->hint);
	if (r->error)
		ml_jw_kstr(w, "error", r->error);
	if (r->preflight) {
		ml_fmt_criu_preflight(w, r->preflight);
		ml_jw_kbool(w, "check_only", r->check_only);
	}
	ml_jw_obj_end(w);
}

static int read_ranges(const struct ml_json *a, struct ml_checkpoint_rec *r, struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"hot_ranges\" is missing or not an array");
	r->hot_ranges = calloc(n ? n : 1, sizeof(*r->hot_ranges));
	if (!r->hot_ranges)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *p = ml_json_at(a, i);
		struct ml_range *g = &r->hot_ranges[i];

		if (ml_json_type(p) != ML_JSON_ARRAY || ml_json_count(p) != 2 ||
		    ml_json_as_hex(ml_json_at(p, 0), &g->start) ||
		    ml_json_as_hex(ml_json_at(p, 1), &g->end))
			return ml_err_set(err, EINVAL,
					  "\"hot_ranges\" %zu is not a pair of hex strings", i);
		r->nhot_ranges++;
	}
	return 0;
}

static int read_exclusion(const struct ml_json *o, struct ml_checkpoint_exclusion_rec *x,
			  struct ml_err *err)
{
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"exclusion\" is missing or not an object");
	ml_json_get_bool(o, "applied", &x->applied);
	ml_json_get_bool(o, "skipped", &x->skipped);
	x->exclude_ranges = mli_rec_count_or0(o, "exclude_ranges");
	x->no_parent_ranges = mli_rec_count_or0(o, "no_parent_ranges");
	ml_json_get_bool(o, "exclude_file_used", &x->exclude_file_used);
	x->granularity = ml_json_get_str(o, "granularity");
	x->note = ml_json_get_str(o, "note");
	return 0;
}

static int read_procs(const struct ml_json *a, struct ml_checkpoint_profiler_rec *p,
		      struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL,
				  "field \"profiler\".\"processes\" is missing or not an array");
	p->procs = calloc(n ? n : 1, sizeof(*p->procs));
	if (!p->procs)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *o = ml_json_at(a, i);
		struct ml_profiler_proc *q = &p->procs[p->nprocs++];
		const char *state = ml_json_get_str(o, "state");

		if (ml_json_type(o) != ML_JSON_OBJECT)
			return ml_err_set(err, EINVAL, "\"processes\" %zu is not an object", i);
		q->pid = (pid_t)mli_rec_int_or0(o, "pid");
		mli_rec_str(o, "comm", q->comm, sizeof(q->comm));
		q->exited = state && !strcmp(state, "exited");
		q->failed = state && !strcmp(state, "not profiled");
		q->hot_bytes = mli_rec_count_or0(o, "hot_bytes");
		q->cumulative_dirty_bytes = mli_rec_int_or0(o, "cumulative_dirty_bytes");
	}
	return 0;
}

static int read_profiler(const struct ml_json *o, struct ml_checkpoint_profiler_rec *p,
			 struct ml_err *err)
{
	const struct ml_json *t = ml_json_get(o, "processes_total");

	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"profiler\" is missing or not an object");
	ml_json_get_bool(o, "profiled", &p->profiled);
	ml_json_get_bool(o, "reinit", &p->reinit);
	p->note = ml_json_get_str(o, "note");
	p->resumed_intervals = mli_rec_count_or0(o, "resumed_intervals");
	p->has_resumed = ml_json_get(o, "resumed_tracked_vmas") != NULL;
	p->resumed_tracked_vmas = mli_rec_int_or0(o, "resumed_tracked_vmas");
	p->resumed_dirty_pages = mli_rec_int_or0(o, "resumed_dirty_pages");
	p->resumed_cumulative_dirty_bytes = mli_rec_int_or0(o, "resumed_cumulative_dirty_bytes");
	if (t && ml_json_type(t) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL,
				  "field \"profiler\".\"processes_total\" is not an object");
	p->procs_hot_bytes = mli_rec_count_or0(t, "hot_bytes");
	p->procs_dirty_bytes = mli_rec_int_or0(t, "cumulative_dirty_bytes");
	return read_procs(ml_json_get(o, "processes"), p, err);
}

int ml_fmt_checkpoint_read(const struct ml_json *o, struct ml_checkpoint_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type"), *action = ml_json_get_str(o, "action");
	double v;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || strcmp(type, "checkpoint"))
		return ml_err_set(err, EINVAL, "field \"type\" is not \"checkpoint\"");
	if (!ml_json_get_finite(o, "pid", &v))
		return ml_err_set(err, EINVAL, "field \"pid\" is missing or not a number");
	r->pid = mli_rec_pid(v);
	if (!action || (strcmp(action, "dump") && strcmp(action, "pre-dump")))
		return ml_err_set(err, EINVAL, "field \"action\" is not \"dump\" or \"pre-dump\"");
	r->pre_dump = !strcmp(action, "pre-dump");
	if (ml_json_get_bool(o, "ok", &r->ok))
		return ml_err_set(err, EINVAL, "field \"ok\" is missing or not a boolean");
	r->images_dir = ml_json_get_str(o, "images_dir");
	r->exit_code = mli_rec_int_or0(o, "exit_code");
	ret = ml_fmt_criu_caps_read(ml_json_get(o, "criu"), &r->criu, err);
	if (ret)
		return ret;
	r->command = ml_json_get_str(o, "command");
	ml_json_get_bool(o, "criu_ran", &r->criu_ran);
	r->criu_exit_status = mli_rec_int_or0(o, "criu_exit_status");
	ml_json_get_bool(o, "timed_out", &r->timed_out);
	r->duration_ms = mli_rec_count_or0(o, "duration_ms");
	r->image_bytes = mli_rec_count_or0(o, "image_bytes");
	r->bytes_written = mli_rec_count_or0(o, "bytes_written");
	r->pages_written = mli_rec_int_or0(o, "pages_written");
	r->shpages_written = mli_rec_int_or0(o, "shpages_written");
	r->pages_scanned = mli_rec_int_or0(o, "pages_scanned");
	r->pages_skipped_parent = mli_rec_int_or0(o, "pages_skipped_parent");
	ret = read_ranges(ml_json_get(o, "hot_ranges"), r, err);
	if (!ret)
		ret = read_exclusion(ml_json_get(o, "exclusion"), &r->exclusion, err);
	if (!ret)
		ret = read_profiler(ml_json_get(o, "profiler"), &r->profiler, err);
	if (ret)
		return ret;
	r->tcp = ml_json_get_str(o, "tcp");
	r->log = ml_json_get_str(o, "log");
	r->hint = ml_json_get_str(o, "hint");
	r->error = ml_json_get_str(o, "error");
	return mli_rec_read_preflight(o, &r->preflight, &r->check_only, err);
}

void ml_fmt_checkpoint_free(struct ml_checkpoint_rec *r)
{
	free(r->hot_ranges);
	r->hot_ranges = NULL;
	r->nhot_ranges = 0;
	free(r->profiler.procs);
	r->profiler.procs = NULL;
	r->profiler.nprocs = 0;
	free((struct ml_criu_preflight *)r->preflight);
	r->preflight = NULL;
}
