// SPDX-License-Identifier: MIT
/* The "criu" object, written and read (see memlens/format_criu.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_criu.h"
#include "rec.h"

void ml_fmt_criu_caps_of(struct ml_criu_caps_rec *r, const struct ml_criu_caps *caps)
{
	*r = (struct ml_criu_caps_rec){ .path = caps->path,
					.version = caps->version,
					.exclude_options = ml_criu_can_exclude(caps),
					.exclude_range = caps->exclude_range,
					.exclude_file = caps->exclude_file,
					.no_parent_range = caps->no_parent_range,
					.page_granular = caps->page_granular,
					.granularity = ml_criu_granularity(caps),
					.mem_dirty_track = caps->mem_dirty_track };
}

void ml_fmt_criu_caps(struct ml_jw *w, const struct ml_criu_caps_rec *r)
{
	ml_jw_key(w, "criu");
	ml_jw_obj(w);
	ml_jw_kstr(w, "path", r->path);
	ml_jw_kstr(w, "version", r->version);
	ml_jw_kbool(w, "exclude_options", r->exclude_options);
	ml_jw_kbool(w, "exclude_range", r->exclude_range);
	ml_jw_kbool(w, "exclude_file", r->exclude_file);
	ml_jw_kbool(w, "no_parent_range", r->no_parent_range);
	ml_jw_kbool(w, "page_granular", r->page_granular);
	ml_jw_kstr(w, "granularity", r->granularity);
	ml_jw_kbool(w, "mem_dirty_track", r->mem_dirty_track);
	ml_jw_obj_end(w);
}

int ml_fmt_criu_caps_read(const struct ml_json *o, struct ml_criu_caps_rec *r, struct ml_err *err)
{
	memset(r, 0, sizeof(*r));
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"criu\" is missing or not an object");
	r->path = ml_json_get_str(o, "path");
	r->version = ml_json_get_str(o, "version");
	ml_json_get_bool(o, "exclude_options", &r->exclude_options);
	ml_json_get_bool(o, "exclude_range", &r->exclude_range);
	ml_json_get_bool(o, "exclude_file", &r->exclude_file);
	ml_json_get_bool(o, "no_parent_range", &r->no_parent_range);
	ml_json_get_bool(o, "page_granular", &r->page_granular);
	r->granularity = ml_json_get_str(o, "granularity");
	ml_json_get_bool(o, "mem_dirty_track", &r->mem_dirty_track);
	return 0;
}

void ml_fmt_criu_preflight(struct ml_jw *w, const struct ml_criu_preflight *p)
{
	ml_jw_key(w, "preflight");
	ml_jw_obj(w);
	ml_jw_kuint(w, "refused", p->nrefused);
	ml_jw_kuint(w, "found", p->nfound);
	ml_jw_kuint(w, "processes", p->nprocs);
	ml_jw_key(w, "findings");
	ml_jw_arr(w);
	for (size_t i = 0; i < p->n; i++) {
		const struct ml_criu_finding *f = &p->f[i];

		ml_jw_obj(w);
		ml_jw_kstr(w, "kind", ml_criu_finding_name(f->kind));
		ml_jw_kint(w, "pid", f->pid);
		ml_jw_kstr(w, "comm", f->comm);
		ml_jw_kstr(w, "resource", f->resource);
		ml_jw_kstr(w, "fix", f->fix);
		ml_jw_kbool(w, "absorbed", f->absorbed);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

static int read_kind(const char *name, enum ml_criu_finding_kind *out)
{
	for (int k = ML_CRIU_FINDING_CRIU_KERNEL; k <= ML_CRIU_FINDING_NAMESPACE; k++)
		if (name && !strcmp(name, ml_criu_finding_name((enum ml_criu_finding_kind)k))) {
			*out = (enum ml_criu_finding_kind)k;
			return 0;
		}
	return -EINVAL;
}

static int read_finding(const struct ml_json *o, size_t i, struct ml_criu_finding *f,
			struct ml_err *err)
{
	double v;

	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "\"preflight\" finding %zu is not an object", i);
	if (read_kind(ml_json_get_str(o, "kind"), &f->kind))
		return ml_err_set(err, EINVAL,
				  "\"preflight\" finding %zu: field \"kind\" is missing or unknown",
				  i);
	if (!ml_json_get_finite(o, "pid", &v))
		return ml_err_set(
			err, EINVAL,
			"\"preflight\" finding %zu: field \"pid\" is missing or not a number", i);
	f->pid = (pid_t)mli_rec_pid(v);
	mli_rec_str(o, "comm", f->comm, sizeof(f->comm));
	mli_rec_str(o, "resource", f->resource, sizeof(f->resource));
	mli_rec_str(o, "fix", f->fix, sizeof(f->fix));
	ml_json_get_bool(o, "absorbed", &f->absorbed);
	return 0;
}

int ml_fmt_criu_preflight_read(const struct ml_json *o, struct ml_criu_preflight **out,
			       struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, "findings");
	struct ml_criu_preflight *p;
	uint64_t refused, found, procs;
	size_t n;
	int ret;

	*out = NULL;
	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "field \"preflight\" is not an object");
	if (mli_rec_need_count(o, "refused", &refused, err) ||
	    mli_rec_need_count(o, "found", &found, err) ||
	    mli_rec_need_count(o, "processes", &procs, err))
		return -EINVAL;
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL,
				  "field \"preflight\".\"findings\" is missing or not an array");
	p = calloc(1, sizeof(*p));
	if (!p)
		return ml_err_set(err, ENOMEM, "out of memory");
	n = ml_json_count(a);
	for (size_t i = 0; i < n; i++) {
		if (i < ML_CRIU_PREFLIGHT_MAX) {
			ret = read_finding(ml_json_at(a, i), i, &p->f[p->n], err);
			if (ret) {
				free(p);
				return ret;
			}
			p->n++;
		}
	}
	p->nrefused = (size_t)refused;
	p->nfound = found > n ? (size_t)found : n;
	p->nprocs = (size_t)procs;
	*out = p;
	return 0;
}

int mli_rec_read_preflight(const struct ml_json *o, const struct ml_criu_preflight **pf,
			   bool *check_only, struct ml_err *err)
{
	struct ml_criu_preflight *p;
	int ret;

	if (!ml_json_get(o, "preflight"))
		return 0;
	ret = ml_fmt_criu_preflight_read(ml_json_get(o, "preflight"), &p, err);
	if (ret)
		return ret;
	*pf = p;
	ml_json_get_bool(o, "check_only", check_only);
	return 0;
}
