// SPDX-License-Identifier: MIT
/* The `migrate-model` JSON Lines schema, written and read (see memlens/format_migrate_model.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_migrate_model.h"
#include "rec.h"

static void put_policy(struct ml_jw *w, const struct ml_migrate_model_policy_rec *p)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "name", p->name);
	ml_jw_key(w, "rounds");
	ml_jw_arr(w);
	for (size_t i = 0; i < p->nrounds; i++) {
		ml_jw_obj(w);
		ml_jw_kint(w, "round", p->rounds[i].round);
		ml_jw_kuint(w, "bytes", p->rounds[i].bytes);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	ml_jw_kuint(w, "total_bytes", p->total_bytes);
	ml_jw_kuint(w, "final_round_bytes", p->final_round_bytes);
	ml_jw_kdbl(w, "downtime_ms", p->downtime_ms);
	ml_jw_kdbl(w, "postcopy_downtime_ms", p->postcopy_downtime_ms);
	ml_jw_kdbl(w, "postcopy_last_page_ms", p->postcopy_last_page_ms);
	ml_jw_kdbl(w, "dump_ms", p->dump_ms);
	ml_jw_kdbl(w, "restore_ms", p->restore_ms);
	ml_jw_kuint(w, "restored_bytes", p->restored_bytes);
	ml_jw_kuint(w, "lazy_bytes", p->lazy_bytes);
	ml_jw_obj_end(w);
}

void ml_fmt_migrate_model(struct ml_jw *w, const struct ml_migrate_model_rec *r)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "migrate_model");
	ml_jw_kdbl(w, "bandwidth_mbps", r->bandwidth_mbps);
	ml_jw_kdbl(w, "round_interval_s", r->round_interval_s);
	ml_jw_kdbl(w, "freeze_overhead_s", r->freeze_overhead_s);
	ml_jw_kdbl(w, "dump_fixed_s", r->dump_fixed_s);
	ml_jw_kdbl(w, "restore_fixed_s", r->restore_fixed_s);
	ml_jw_kdbl(w, "restore_bandwidth_mbps", r->restore_bandwidth_mbps);
	ml_jw_kdbl(w, "lazy_bandwidth_mbps", r->lazy_bandwidth_mbps);
	ml_jw_kuint(w, "lazy_faults", r->lazy_faults);
	ml_jw_kdbl(w, "lazy_fault_ms", r->lazy_fault_ms);
	if (r->calibrated_from)
		ml_jw_kstr(w, "calibrated_from", r->calibrated_from);
	ml_jw_kstr(w, "memory", r->memory_resident ? "resident" : "vmas");
	if (r->no_precopy)
		ml_jw_kuint(w, "pre_dump_rounds", 0);
	if (r->keep_hot_out)
		ml_jw_kbool(w, "keep_hot_out", true);
	ml_jw_key(w, "policies");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->npol; i++)
		put_policy(w, &r->pol[i]);
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

static int read_policy(const struct ml_json *o, size_t k, struct ml_migrate_model_policy_rec *p,
		       struct ml_err *err)
{
	const struct ml_json *rounds = ml_json_get(o, "rounds");
	const char *name = ml_json_get_str(o, "name");
	size_t n = ml_json_count(rounds);

	if (ml_json_type(rounds) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL,
				  "policy %zu: field \"rounds\" is missing or not an array", k);
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "?");
	p->rounds = calloc(n ? n : 1, sizeof(*p->rounds));
	if (!p->rounds)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *r = ml_json_at(rounds, i);
		double v;

		if (!ml_json_get_finite(r, "bytes", &v))
			return ml_err_set(err, EINVAL,
					  "policy %zu, round %zu: field \"bytes\" is missing or "
					  "not a number",
					  k, i);
		p->rounds[i].bytes = mli_rec_count_or0(r, "bytes");
		p->rounds[i].round = ml_json_get_finite(r, "round", &v) ? mli_rec_pid(v) : 0;
		p->nrounds++;
	}
	p->total_bytes = mli_rec_count_or0(o, "total_bytes");
	p->final_round_bytes = mli_rec_count_or0(o, "final_round_bytes");
	p->downtime_ms = ml_json_get_num_or0(o, "downtime_ms");
	p->postcopy_downtime_ms = ml_json_get_num_or0(o, "postcopy_downtime_ms");
	p->postcopy_last_page_ms = ml_json_get_num_or0(o, "postcopy_last_page_ms");
	p->dump_ms = ml_json_get_num_or0(o, "dump_ms");
	p->restore_ms = ml_json_get_num_or0(o, "restore_ms");
	p->restored_bytes = mli_rec_count_or0(o, "restored_bytes");
	p->lazy_bytes = mli_rec_count_or0(o, "lazy_bytes");
	return 0;
}

int ml_fmt_migrate_model_read(const struct ml_json *o, struct ml_migrate_model_rec *r,
			      struct ml_err *err)
{
	const struct ml_json *pols = ml_json_get(o, "policies");
	size_t n = ml_json_count(pols);

	memset(r, 0, sizeof(*r));
	if (ml_json_type(pols) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"policies\" is missing or not an array");
	r->bandwidth_mbps = ml_json_get_num_or0(o, "bandwidth_mbps");
	r->round_interval_s = ml_json_get_num_or0(o, "round_interval_s");
	r->freeze_overhead_s = ml_json_get_num_or0(o, "freeze_overhead_s");
	r->dump_fixed_s = ml_json_get_num_or0(o, "dump_fixed_s");
	r->restore_fixed_s = ml_json_get_num_or0(o, "restore_fixed_s");
	r->restore_bandwidth_mbps = ml_json_get_num_or0(o, "restore_bandwidth_mbps");
	r->lazy_bandwidth_mbps = ml_json_get_num_or0(o, "lazy_bandwidth_mbps");
	r->lazy_faults = mli_rec_count_or0(o, "lazy_faults");
	r->lazy_fault_ms = ml_json_get_num_or0(o, "lazy_fault_ms");
	r->calibrated_from = ml_json_get_str(o, "calibrated_from");
	{
		const char *mem = ml_json_get_str(o, "memory");
		double pre;

		r->memory_resident = mem && !strcmp(mem, "resident");
		r->no_precopy = !ml_json_get_double(o, "pre_dump_rounds", &pre) && pre == 0;
		ml_json_get_bool(o, "keep_hot_out", &r->keep_hot_out);
	}
	r->pol = calloc(n ? n : 1, sizeof(*r->pol));
	if (!r->pol)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int ret = read_policy(ml_json_at(pols, i), i, &r->pol[r->npol++], err);

		if (ret)
			return ret;
	}
	return 0;
}

void ml_fmt_migrate_model_free(struct ml_migrate_model_rec *r)
{
	for (size_t i = 0; i < r->npol; i++)
		free(r->pol[i].rounds);
	free(r->pol);
	r->pol = NULL;
	r->npol = 0;
}
