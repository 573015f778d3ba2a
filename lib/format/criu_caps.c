// SPDX-License-Identifier: MIT
/* The "criu" object, written and read (see memlens/format_criu.h). */
#include <errno.h>
#include <string.h>

#include "memlens/format_criu.h"

void ml_fmt_criu_caps_of(struct criu_caps_rec *r, const struct criu_caps *caps)
{
	*r = (struct criu_caps_rec){ .path = caps->path,
				     .version = caps->version,
				     .exclude_options = ml_criu_can_exclude(caps),
				     .exclude_range = caps->exclude_range,
				     .exclude_file = caps->exclude_file,
				     .no_parent_range = caps->no_parent_range,
				     .page_granular = caps->page_granular,
				     .granularity = ml_criu_granularity(caps),
				     .mem_dirty_track = caps->mem_dirty_track };
}

void ml_fmt_criu_caps(struct jw *w, const struct criu_caps_rec *r)
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

int ml_fmt_criu_caps_read(const struct json *o, struct criu_caps_rec *r, struct ml_err *err)
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

void ml_fmt_criu_preflight(struct jw *w, const struct criu_preflight *p)
{
	ml_jw_key(w, "preflight");
	ml_jw_obj(w);
	ml_jw_kuint(w, "refused", p->nrefused);
	ml_jw_kuint(w, "found", p->nfound);
	ml_jw_kuint(w, "processes", p->nprocs);
	ml_jw_key(w, "findings");
	ml_jw_arr(w);
	for (size_t i = 0; i < p->n; i++) {
		const struct criu_finding *f = &p->f[i];

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
