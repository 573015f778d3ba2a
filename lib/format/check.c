// SPDX-License-Identifier: MIT
/* The `check` JSON schema, written and read (see memlens/format_check.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_check.h"

static const char *const state_names[] = {
	[ML_FEATURE_OK] = "ok",
	[ML_FEATURE_MISSING] = "missing",
	[ML_FEATURE_INFO] = "info",
};

#define NSTATES (sizeof(state_names) / sizeof(state_names[0]))

/* a state not known is written as "info", neither good nor bad */
static const char *state_name(enum ml_feature_state s)
{
	return (unsigned)s < NSTATES ? state_names[s] : "info";
}

static void put_feature(struct ml_jw *w, const struct ml_feature *f)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "group", f->group);
	ml_jw_kstr(w, "name", f->name);
	ml_jw_kstr(w, "state", state_name(f->state));
	ml_jw_kbool(w, "core", f->core);
	ml_jw_kstr(w, "detail", f->detail);
	ml_jw_kstr(w, "used_by", f->used_by);
	if (f->fix)
		ml_jw_kstr(w, "fix", f->fix);
	ml_jw_obj_end(w);
}

void ml_fmt_check(struct ml_jw *w, const struct ml_check_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "check");
	ml_jw_kstr(w, "kernel", r->kernel);
	ml_jw_kstr(w, "arch", r->arch);
	ml_jw_kbool(w, "root", r->root);
	ml_jw_kbool(w, "core_ok", r->core_ok);
	ml_jw_key(w, "features");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nfeatures; i++)
		put_feature(w, &r->features[i]);
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

static int read_feature(const struct ml_json *o, size_t i, struct ml_feature *f, struct ml_err *err)
{
	const char *state = ml_json_get_str(o, "state"), *detail;
	size_t s;

	if (ml_json_type(o) != ML_JSON_OBJECT)
		return ml_err_set(err, EINVAL, "feature %zu is not an object", i);
	f->group = ml_json_get_str(o, "group");
	if (!f->group)
		return ml_err_set(err, EINVAL,
				  "feature %zu: field \"group\" is missing or not a string", i);
	f->name = ml_json_get_str(o, "name");
	if (!f->name)
		return ml_err_set(err, EINVAL,
				  "feature %zu: field \"name\" is missing or not a string", i);
	for (s = 0; s < NSTATES; s++)
		if (state && !strcmp(state, state_names[s]))
			break;
	if (s == NSTATES)
		return ml_err_set(err, EINVAL,
				  "feature %zu: field \"state\" is not \"ok\", \"missing\" or "
				  "\"info\"",
				  i);
	f->state = (enum ml_feature_state)s;
	ml_json_get_bool(o, "core", &f->core);
	detail = ml_json_get_str(o, "detail");
	snprintf(f->detail, sizeof(f->detail), "%s", detail ? detail : "");
	f->used_by = ml_json_get_str(o, "used_by");
	f->fix = ml_json_get_str(o, "fix");
	return 0;
}

int ml_fmt_check_read(const struct ml_json *o, struct ml_check_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	const struct ml_json *a;
	struct ml_feature *f;
	size_t n;

	memset(r, 0, sizeof(*r));
	if (!type || strcmp(type, "check"))
		return ml_err_set(err, EINVAL, "field \"type\" is not \"check\"");
	if (ml_json_get_bool(o, "core_ok", &r->core_ok))
		return ml_err_set(err, EINVAL, "field \"core_ok\" is missing or not a boolean");
	r->kernel = ml_json_get_str(o, "kernel");
	r->arch = ml_json_get_str(o, "arch");
	ml_json_get_bool(o, "root", &r->root);
	a = ml_json_get(o, "features");
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"features\" is missing or not an array");
	n = ml_json_count(a);
	f = calloc(n ? n : 1, sizeof(*f));
	if (!f)
		return ml_err_set(err, ENOMEM, "out of memory");
	r->features = f;
	for (size_t i = 0; i < n; i++) {
		int ret = read_feature(ml_json_at(a, i), i, &f[i], err);

		if (ret)
			return ret;
		r->nfeatures++;
	}
	return 0;
}

void ml_fmt_check_free(struct ml_check_rec *r)
{
	free((void *)r->features);
	r->features = NULL;
	r->nfeatures = 0;
}
