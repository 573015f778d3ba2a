// SPDX-License-Identifier: MIT
/* The `restore` JSON schema, written and read (see memlens/format_restore.h). */
#include <errno.h>
#include <string.h>

#include "memlens/format_restore.h"
#include "rec.h"

void ml_fmt_restore(struct ml_jw *w, const struct ml_restore_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "restore");
	ml_jw_kstr(w, "images_dir", r->images_dir);
	ml_jw_kbool(w, "ok", r->ok);
	ml_jw_kint(w, "exit_code", r->exit_code);
	ml_jw_kint(w, "pid", r->pid);
	ml_fmt_criu_caps(w, &r->criu);
	ml_jw_kstr(w, "command", r->command);
	ml_jw_kint(w, "criu_exit_status", r->criu_exit_status);
	ml_jw_kbool(w, "timed_out", r->timed_out);
	ml_jw_kuint(w, "duration_ms", r->duration_ms);
	ml_jw_kstr(w, "repeated", r->repeated);
	ml_jw_kstr(w, "log", r->log);
	if (r->hint && r->hint[0])
		ml_jw_kstr(w, "hint", r->hint);
	if (r->error)
		ml_jw_kstr(w, "error", r->error);
	ml_jw_obj_end(w);
}

int ml_fmt_restore_read(const struct ml_json *o, struct ml_restore_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || strcmp(type, "restore"))
		return ml_err_set(err, EINVAL, "field \"type\" is not \"restore\"");
	if (ml_json_get_bool(o, "ok", &r->ok))
		return ml_err_set(err, EINVAL, "field \"ok\" is missing or not a boolean");
	ret = ml_fmt_criu_caps_read(ml_json_get(o, "criu"), &r->criu, err);
	if (ret)
		return ret;
	r->images_dir = ml_json_get_str(o, "images_dir");
	r->exit_code = mli_rec_int_or0(o, "exit_code");
	r->pid = mli_rec_int_or0(o, "pid");
	r->command = ml_json_get_str(o, "command");
	r->criu_exit_status = mli_rec_int_or0(o, "criu_exit_status");
	ml_json_get_bool(o, "timed_out", &r->timed_out);
	r->duration_ms = mli_rec_count_or0(o, "duration_ms");
	r->repeated = ml_json_get_str(o, "repeated");
	r->log = ml_json_get_str(o, "log");
	r->hint = ml_json_get_str(o, "hint");
	r->error = ml_json_get_str(o, "error");
	return 0;
}
