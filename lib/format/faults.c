// SPDX-License-Identifier: MIT
/* The `faults` JSON Lines schema, written and read (see memlens/format_faults.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_faults.h"
#include "rec.h"

static void put_pair(struct ml_jw *w, const char *key, bool known,
		     const struct ml_faults_pair_rec *p)
{
	ml_jw_key(w, key);
	if (!known) {
		ml_jw_null(w);
		return;
	}
	ml_jw_obj(w);
	ml_jw_kuint(w, "minor", p->minor);
	ml_jw_kuint(w, "major", p->major);
	ml_jw_obj_end(w);
}

static void put_uint_or_null(struct ml_jw *w, const char *key, bool known, uint64_t v)
{
	ml_jw_key(w, key);
	if (known)
		ml_jw_uint(w, v);
	else
		ml_jw_null(w);
}

static void put_row(struct ml_jw *w, const struct ml_faults_row_rec *row)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "comm", row->comm);
	ml_jw_key(w, "pid");
	if (row->pid >= 0)
		ml_jw_int(w, row->pid);
	else
		ml_jw_null(w);
	ml_jw_kuint(w, "minor", row->minor);
	ml_jw_kuint(w, "major", row->major);
	put_uint_or_null(w, "retried", row->has_retried, row->retried);
	ml_jw_obj_end(w);
}

void ml_fmt_faults(struct ml_jw *w, const struct ml_faults_rec *r)
{
	ml_jw_obj(w);
	mli_rec_put_head(w, "faults", "faults_interval", r->interval, r->elapsed_ms, r->last);
	ml_jw_kstr(w, "mode", r->mode);
	ml_jw_kuint(w, "recursion_misses", r->recursion_misses);
	ml_jw_key(w, "rows");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nrows; i++)
		put_row(w, &r->rows[i]);
	ml_jw_arr_end(w);
	mli_rec_put_hist(w, "minor_hist_us", r->minor_hist, r->nminor);
	mli_rec_put_hist(w, "major_hist_us", r->major_hist, r->nmajor);
	if (!r->interval) {
		/* "not_seen" is known when "kernel" is */
		put_pair(w, "kernel", r->has_kernel, &r->kernel);
		ml_jw_key(w, "not_seen");
		ml_jw_obj(w);
		put_uint_or_null(w, "minor", r->has_kernel, r->not_seen.minor);
		put_uint_or_null(w, "major", r->has_kernel, r->not_seen.major);
		ml_jw_kstr(w, "paths", r->not_seen_paths);
		ml_jw_obj_end(w);
		put_pair(w, "before_tracing", r->has_before, &r->before);
	}
	ml_jw_obj_end(w);
}

/* {"minor", "major"}: false when it is not an object (null, absent) */
static bool read_pair(const struct ml_json *o, struct ml_faults_pair_rec *p)
{
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return false;
	p->minor = mli_rec_count_or0(o, "minor");
	p->major = mli_rec_count_or0(o, "major");
	return true;
}

static int read_rows(const struct ml_json *a, struct ml_faults_rec *r, struct ml_err *err)
{
	size_t n = ml_json_count(a);

	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"rows\" is missing or not an array");
	r->rows = calloc(n ? n : 1, sizeof(*r->rows));
	if (!r->rows)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *o = ml_json_at(a, i);
		struct ml_faults_row_rec *row = &r->rows[r->nrows++];
		const char *comm = ml_json_get_str(o, "comm");
		double v;

		if (ml_json_type(o) != ML_JSON_OBJECT)
			return ml_err_set(err, EINVAL, "\"rows\" %zu is not an object", i);
		snprintf(row->comm, sizeof(row->comm), "%s", comm ? comm : "?");
		/* system-wide rows have no pid */
		row->pid = ml_json_get_finite(o, "pid", &v) ? mli_rec_pid(v) : -1;
		row->minor = mli_rec_count_or0(o, "minor");
		row->major = mli_rec_count_or0(o, "major");
		row->has_retried = ml_json_get_finite(o, "retried", &v);
		row->retried = row->has_retried ? mli_rec_count_or0(o, "retried") : 0;
	}
	return 0;
}

int ml_fmt_faults_read(const struct ml_json *o, struct ml_faults_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type"), *s;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || (strcmp(type, "faults") && strcmp(type, "faults_interval")))
		return ml_err_set(err, EINVAL,
				  "field \"type\" is not \"faults\" or \"faults_interval\"");
	r->interval = !strcmp(type, "faults_interval");
	ret = read_rows(ml_json_get(o, "rows"), r, err);
	if (ret)
		return ret;
	if (r->interval) {
		ret = mli_rec_read_interval(o, &r->elapsed_ms, &r->last, err);
		if (ret)
			return ret;
	}
	s = ml_json_get_str(o, "mode");
	snprintf(r->mode, sizeof(r->mode), "%s", s ? s : "");
	r->recursion_misses = mli_rec_count_or0(o, "recursion_misses");
	ret = mli_rec_read_hist(o, "minor_hist_us", r->interval, r->minor_hist,
				ML_FAULTS_REC_HIST_MAX, &r->nminor, err);
	if (!ret)
		ret = mli_rec_read_hist(o, "major_hist_us", r->interval, r->major_hist,
					ML_FAULTS_REC_HIST_MAX, &r->nmajor, err);
	if (ret)
		return ret;
	r->has_kernel = read_pair(ml_json_get(o, "kernel"), &r->kernel);
	read_pair(ml_json_get(o, "not_seen"), &r->not_seen);
	s = ml_json_get_str(ml_json_get(o, "not_seen"), "paths");
	snprintf(r->not_seen_paths, sizeof(r->not_seen_paths), "%s", s ? s : "");
	r->has_before = read_pair(ml_json_get(o, "before_tracing"), &r->before);
	return 0;
}

void ml_fmt_faults_free(struct ml_faults_rec *r)
{
	free(r->rows);
	r->rows = NULL;
	r->nrows = 0;
}
