// SPDX-License-Identifier: MIT
/* The `oom` JSON Lines schema, written and read (see memlens/format_oom.h). */
#include <errno.h>
#include <string.h>

#include "memlens/format_oom.h"
#include "rec.h"

void ml_fmt_oom_kill(struct ml_jw *w, const struct ml_oom_kill_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "oom_kill");
	ml_jw_kuint(w, "time_ms", r->time_ms);
	ml_jw_kuint(w, "victim_pid", r->victim_pid);
	ml_jw_kstr(w, "victim_comm", r->victim_comm);
	ml_jw_key(w, "trigger_pid");
	if (r->trigger_pid >= 0)
		ml_jw_int(w, r->trigger_pid);
	else
		ml_jw_null(w);
	ml_jw_kstr(w, "trigger_comm", r->trigger_comm);
	ml_jw_kuint(w, "anon_rss_kb", r->anon_rss_kb);
	ml_jw_kuint(w, "file_rss_kb", r->file_rss_kb);
	ml_jw_kuint(w, "shmem_rss_kb", r->shmem_rss_kb);
	ml_jw_kuint(w, "total_vm_kb", r->total_vm_kb);
	ml_jw_kuint(w, "limit_kb", r->limit_kb);
	ml_jw_kstr(w, "scope", r->scope);
	ml_jw_kstr(w, "cgroup", r->cgroup);
	ml_jw_kstr(w, "source", r->source);
	ml_jw_obj_end(w);
}

int ml_fmt_oom_kill_read(const struct ml_json *o, struct ml_oom_kill_rec *r, struct ml_err *err)
{
	double v;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = mli_rec_need_count(o, "time_ms", &r->time_ms, err);
	if (!ret)
		ret = mli_rec_need_count(o, "victim_pid", &r->victim_pid, err);
	if (ret)
		return ret;
	r->trigger_pid = ml_json_get_finite(o, "trigger_pid", &v) ? mli_rec_pid(v) : -1;
	mli_rec_str(o, "victim_comm", r->victim_comm, sizeof(r->victim_comm));
	mli_rec_str(o, "trigger_comm", r->trigger_comm, sizeof(r->trigger_comm));
	r->anon_rss_kb = mli_rec_count_or0(o, "anon_rss_kb");
	r->file_rss_kb = mli_rec_count_or0(o, "file_rss_kb");
	r->shmem_rss_kb = mli_rec_count_or0(o, "shmem_rss_kb");
	r->total_vm_kb = mli_rec_count_or0(o, "total_vm_kb");
	r->limit_kb = mli_rec_count_or0(o, "limit_kb");
	mli_rec_str(o, "scope", r->scope, sizeof(r->scope));
	mli_rec_str(o, "cgroup", r->cgroup, sizeof(r->cgroup));
	mli_rec_str(o, "source", r->source, sizeof(r->source));
	return 0;
}

void ml_fmt_oom_count(struct ml_jw *w, const struct ml_oom_count_rec *r)
{
	ml_jw_obj(w);
	mli_rec_put_head(w, "oom_summary", "oom_interval", r->interval, r->elapsed_ms, r->last);
	ml_jw_kuint(w, "kills", r->kills);
	ml_jw_kuint(w, "lost", r->lost);
	ml_jw_kuint(w, "recursion_misses", r->recursion_misses);
	ml_jw_obj_end(w);
}

int ml_fmt_oom_count_read(const struct ml_json *o, struct ml_oom_count_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || (strcmp(type, "oom_interval") && strcmp(type, "oom_summary")))
		return ml_err_set(err, EINVAL,
				  "field \"type\" is not \"oom_interval\" or \"oom_summary\"");
	r->interval = !strcmp(type, "oom_interval");
	ret = mli_rec_need_count(o, "kills", &r->kills, err);
	if (ret)
		return ret;
	if (r->interval) {
		ret = mli_rec_read_interval(o, &r->elapsed_ms, &r->last, err);
		if (ret)
			return ret;
	}
	r->lost = mli_rec_count_or0(o, "lost");
	r->recursion_misses = mli_rec_count_or0(o, "recursion_misses");
	return 0;
}
