// SPDX-License-Identifier: MIT
/* The `migrate` JSON schema, written and read (see memlens/format_migrate.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_migrate.h"
#include "rec.h"

static void put_container(struct ml_jw *w, const struct ml_migrate_container_rec *k)
{
	ml_jw_key(w, "container");
	ml_jw_obj(w);
	ml_jw_kstr(w, "id", k->id);
	ml_jw_kstr(w, "name", k->name);
	ml_jw_kstr(w, "runtime", k->runtime);
	ml_jw_kint(w, "init_pid", k->init_pid);
	ml_jw_kstr(w, "rootfs", k->rootfs);
	ml_jw_kuint(w, "bind_mounts", k->bind_mounts);
	ml_jw_obj_end(w);
}

static void put_round(struct ml_jw *w, const struct ml_migrate_round_rec *r, bool postcopy)
{
	ml_jw_obj(w);
	ml_jw_kint(w, "round", r->round);
	ml_jw_kstr(w, "kind", r->pre_dump ? "pre-dump" : "dump");
	ml_jw_kint(w, "pages", r->pages);
	ml_jw_kint(w, "shpages", r->shpages);
	ml_jw_kint(w, "pages_scanned", r->pages_scanned);
	ml_jw_kint(w, "pages_skipped_parent", r->pages_skipped_parent);
	ml_jw_kuint(w, "bytes", r->bytes);
	ml_jw_kuint(w, "stored_bytes", r->stored_bytes);
	ml_jw_kuint(w, "images_bytes", r->images_bytes);
	if (postcopy) {
		ml_jw_kuint(w, "files_bytes", r->files_bytes);
		ml_jw_kint(w, "pages_lazy", r->pages_lazy);
	}
	ml_jw_kuint(w, "start_ms", r->start_ms);
	ml_jw_kuint(w, "duration_ms", r->duration_ms);
	ml_jw_kuint(w, "hot_ranges", r->hot_ranges);
	ml_jw_kuint(w, "hot_bytes", r->hot_bytes);
	ml_jw_kuint(w, "excluded_ranges", r->excluded_ranges);
	ml_jw_kuint(w, "no_parent_ranges", r->no_parent_ranges);
	ml_jw_kstr(w, "note", r->note);
	ml_jw_obj_end(w);
}

static void put_lazy(struct ml_jw *w, const struct ml_migrate_lazy_rec *l)
{
	ml_jw_key(w, "lazy");
	ml_jw_obj(w);
	ml_jw_kint(w, "pages_left", l->pages_left);
	ml_jw_kint(w, "pages_total", l->pages_total);
	ml_jw_kint(w, "pages_copied", l->pages_copied);
	ml_jw_kint(w, "pages_parent", l->pages_parent);
	ml_jw_kuint(w, "bytes", l->bytes);
	ml_jw_kuint(w, "copy_bytes", l->copy_bytes);
	ml_jw_kuint(w, "faults", l->faults);
	ml_jw_kuint(w, "faults_served", l->faults_served);
	ml_jw_kuint(w, "fault_wait_avg_us", l->fault_wait_avg_us);
	ml_jw_kuint(w, "fault_wait_max_us", l->fault_wait_max_us);
	ml_jw_kuint(w, "last_page_ms", l->last_page_ms);
	ml_jw_kuint(w, "source_done_ms", l->source_done_ms);
	ml_jw_obj_end(w);
}

static void put_procs(struct ml_jw *w, const struct ml_migrate_rec *r)
{
	ml_jw_key(w, "processes");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ml_profiler_proc *q = &r->procs[i];

		ml_jw_obj(w);
		ml_jw_kint(w, "pid", q->pid);
		ml_jw_kint(w, "ppid", q->ppid);
		ml_jw_kstr(w, "comm", q->comm);
		ml_jw_kstr(w, "state",
			   !r->procs_profiled ? "listed"
			   : q->exited	      ? "exited"
			   : q->failed	      ? "not profiled"
					      : "profiled");
		ml_jw_kuint(w, "hot_bytes", q->hot_bytes);
		ml_jw_kint(w, "cumulative_dirty_bytes", q->cumulative_dirty_bytes);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	ml_jw_key(w, "processes_total");
	ml_jw_obj(w);
	ml_jw_kuint(w, "count", r->nprocs_total > r->nprocs ? r->nprocs_total : r->nprocs);
	ml_jw_kuint(w, "hot_bytes", r->procs_profiled ? r->procs_hot_bytes : 0);
	ml_jw_kint(w, "cumulative_dirty_bytes", r->procs_profiled ? r->procs_dirty_bytes : 0);
	ml_jw_obj_end(w);
}

void ml_fmt_migrate(struct ml_jw *w, const struct ml_migrate_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "migrate");
	ml_jw_kint(w, "pid", r->pid);
	if (r->has_container)
		put_container(w, &r->container);
	ml_jw_kstr(w, "to", r->to);
	ml_jw_kbool(w, "ok", r->ok);
	ml_fmt_criu_caps(w, &r->criu);
	ml_jw_kbool(w, "precopy", r->precopy);
	ml_jw_kbool(w, "exclusion", r->exclusion);
	ml_jw_key(w, "rounds");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nrounds; i++)
		put_round(w, &r->rounds[i], r->postcopy);
	ml_jw_arr_end(w);
	ml_jw_kbool(w, "postcopy", r->postcopy);
	ml_jw_kuint(w, "total_bytes", r->total_bytes);
	if (r->nprocs)
		put_procs(w, r);
	ml_jw_kstr(w, "tcp", r->tcp);
	if (r->postcopy)
		put_lazy(w, &r->lazy);
	ml_jw_kuint(w, "downtime_ms", r->downtime_ms);
	ml_jw_kuint(w, "final_dump_ms", r->final_dump_ms);
	ml_jw_kint(w, "frozen_in_dump_ms", r->frozen_in_dump_ms);
	ml_jw_kuint(w, "restore_ms", r->restore_ms);
	ml_jw_kint(w, "restored_pid", r->restored_pid);
	ml_jw_kstr(w, "granularity", r->granularity);
	if (r->limits)
		ml_jw_kstr(w, "limits", r->limits);
	if (r->error && r->error[0])
		ml_jw_kstr(w, "error", r->error);
	if (r->preflight) {
		ml_fmt_criu_preflight(w, r->preflight);
		ml_jw_kbool(w, "check_only", r->check_only);
	}
	ml_jw_obj_end(w);
}

static int read_container(const struct ml_json *o, struct ml_migrate_container_rec *k,
			  struct ml_err *err)
{
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"container\" is not an object");
	k->id = ml_json_get_str(o, "id");
	k->name = ml_json_get_str(o, "name");
	k->runtime = ml_json_get_str(o, "runtime");
	k->init_pid = mli_rec_int_or0(o, "init_pid");
	k->rootfs = ml_json_get_str(o, "rootfs");
	k->bind_mounts = mli_rec_count_or0(o, "bind_mounts");
	return 0;
}

static int read_round(const struct ml_json *o, size_t i, struct ml_migrate_round_rec *r,
		      struct ml_err *err)
{
	const char *kind = ml_json_get_str(o, "kind");

	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "\"rounds\" %zu is not an object", i);
	if (!kind || (strcmp(kind, "dump") && strcmp(kind, "pre-dump")))
		return ml_err_set(err, EINVAL,
				  "round %zu: field \"kind\" is not \"dump\" or \"pre-dump\"", i);
	r->pre_dump = !strcmp(kind, "pre-dump");
	r->round = mli_rec_int_or0(o, "round");
	r->pages = mli_rec_int_or0(o, "pages");
	r->shpages = mli_rec_int_or0(o, "shpages");
	r->pages_scanned = mli_rec_int_or0(o, "pages_scanned");
	r->pages_skipped_parent = mli_rec_int_or0(o, "pages_skipped_parent");
	r->bytes = mli_rec_count_or0(o, "bytes");
	r->stored_bytes = mli_rec_count_or0(o, "stored_bytes");
	r->images_bytes = mli_rec_count_or0(o, "images_bytes");
	r->files_bytes = mli_rec_count_or0(o, "files_bytes");
	r->pages_lazy = mli_rec_int_or0(o, "pages_lazy");
	r->start_ms = mli_rec_count_or0(o, "start_ms");
	r->duration_ms = mli_rec_count_or0(o, "duration_ms");
	r->hot_ranges = mli_rec_count_or0(o, "hot_ranges");
	r->hot_bytes = mli_rec_count_or0(o, "hot_bytes");
	r->excluded_ranges = mli_rec_count_or0(o, "excluded_ranges");
	r->no_parent_ranges = mli_rec_count_or0(o, "no_parent_ranges");
	r->note = ml_json_get_str(o, "note");
	return 0;
}

static int read_rounds(const struct ml_json *a, struct ml_migrate_rec *r, struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"rounds\" is missing or not an array");
	r->rounds = calloc(n ? n : 1, sizeof(*r->rounds));
	if (!r->rounds)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int ret = read_round(ml_json_at(a, i), i, &r->rounds[i], err);

		if (ret)
			return ret;
		r->nrounds++;
	}
	return 0;
}

static int read_lazy(const struct ml_json *o, struct ml_migrate_lazy_rec *l, struct ml_err *err)
{
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"lazy\" is missing or not an object");
	l->pages_left = mli_rec_int_or0(o, "pages_left");
	l->pages_total = mli_rec_int_or0(o, "pages_total");
	l->pages_copied = mli_rec_int_or0(o, "pages_copied");
	l->pages_parent = mli_rec_int_or0(o, "pages_parent");
	l->bytes = mli_rec_count_or0(o, "bytes");
	l->copy_bytes = mli_rec_count_or0(o, "copy_bytes");
	l->faults = mli_rec_count_or0(o, "faults");
	l->faults_served = mli_rec_count_or0(o, "faults_served");
	l->fault_wait_avg_us = mli_rec_count_or0(o, "fault_wait_avg_us");
	l->fault_wait_max_us = mli_rec_count_or0(o, "fault_wait_max_us");
	l->last_page_ms = mli_rec_count_or0(o, "last_page_ms");
	l->source_done_ms = mli_rec_count_or0(o, "source_done_ms");
	return 0;
}

static int read_procs(const struct ml_json *o, struct ml_migrate_rec *r, struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, "processes"),
			     *t = ml_json_get(o, "processes_total");
	struct ml_profiler_proc *procs;
	size_t n = ml_json_count(a);
	uint64_t count;

	if (!a)
		return 0;
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"processes\" is not an array");
	if (ml_json_type(t) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL,
				  "field \"processes_total\" is missing or not an object");
	if (mli_rec_need_count(t, "count", &count, err))
		return -EINVAL;
	procs = calloc(n ? n : 1, sizeof(*procs));
	if (!procs)
		return ml_err_set(err, ENOMEM, "out of memory");
	r->procs = procs;
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *p = ml_json_at(a, i);
		struct ml_profiler_proc *q = &procs[r->nprocs];
		const char *state = ml_json_get_str(p, "state");

		if (ml_json_type(p) != ML_JSON_OBJECT)
			return ml_err_set(err, EINVAL, "\"processes\" %zu is not an object", i);
		r->nprocs++;
		q->pid = (pid_t)mli_rec_int_or0(p, "pid");
		q->ppid = (pid_t)mli_rec_int_or0(p, "ppid");
		mli_rec_str(p, "comm", q->comm, sizeof(q->comm));
		q->exited = state && !strcmp(state, "exited");
		q->failed = state && !strcmp(state, "not profiled");
		if (state && strcmp(state, "listed"))
			r->procs_profiled = true;
		q->hot_bytes = mli_rec_count_or0(p, "hot_bytes");
		q->cumulative_dirty_bytes = mli_rec_int_or0(p, "cumulative_dirty_bytes");
	}
	r->nprocs_total = (size_t)count;
	if (r->procs_profiled) {
		r->procs_hot_bytes = mli_rec_count_or0(t, "hot_bytes");
		r->procs_dirty_bytes = mli_rec_int_or0(t, "cumulative_dirty_bytes");
	}
	return 0;
}

int ml_fmt_migrate_read(const struct ml_json *o, struct ml_migrate_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	const struct ml_json *k = ml_json_get(o, "container");
	double v;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || strcmp(type, "migrate"))
		return ml_err_set(err, EINVAL, "field \"type\" is not \"migrate\"");
	if (!ml_json_get_finite(o, "pid", &v))
		return ml_err_set(err, EINVAL, "field \"pid\" is missing or not a number");
	r->pid = mli_rec_pid(v);
	if (ml_json_get_bool(o, "ok", &r->ok))
		return ml_err_set(err, EINVAL, "field \"ok\" is missing or not a boolean");
	r->has_container = k != NULL;
	if (k) {
		ret = read_container(k, &r->container, err);
		if (ret)
			return ret;
	}
	r->to = ml_json_get_str(o, "to");
	ret = ml_fmt_criu_caps_read(ml_json_get(o, "criu"), &r->criu, err);
	if (!ret)
		ret = read_rounds(ml_json_get(o, "rounds"), r, err);
	if (ret)
		return ret;
	ml_json_get_bool(o, "precopy", &r->precopy);
	ml_json_get_bool(o, "exclusion", &r->exclusion);
	ml_json_get_bool(o, "postcopy", &r->postcopy);
	if (r->postcopy) {
		ret = read_lazy(ml_json_get(o, "lazy"), &r->lazy, err);
		if (ret)
			return ret;
	}
	r->total_bytes = mli_rec_count_or0(o, "total_bytes");
	ret = read_procs(o, r, err);
	if (ret)
		return ret;
	r->tcp = ml_json_get_str(o, "tcp");
	r->downtime_ms = mli_rec_count_or0(o, "downtime_ms");
	r->final_dump_ms = mli_rec_count_or0(o, "final_dump_ms");
	r->frozen_in_dump_ms = mli_rec_int_or0(o, "frozen_in_dump_ms");
	r->restore_ms = mli_rec_count_or0(o, "restore_ms");
	r->restored_pid = mli_rec_int_or0(o, "restored_pid");
	r->granularity = ml_json_get_str(o, "granularity");
	r->limits = ml_json_get_str(o, "limits");
	r->error = ml_json_get_str(o, "error");
	return mli_rec_read_preflight(o, &r->preflight, &r->check_only, err);
}

void ml_fmt_migrate_free(struct ml_migrate_rec *r)
{
	free(r->rounds);
	r->rounds = NULL;
	r->nrounds = 0;
	free((struct ml_profiler_proc *)r->procs);
	r->procs = NULL;
	r->nprocs = 0;
	free((struct ml_criu_preflight *)r->preflight);
	r->preflight = NULL;
}
