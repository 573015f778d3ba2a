// SPDX-License-Identifier: MIT
/* The `leaks` JSON Lines schema, written and read (see memlens/format_leaks.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_leaks.h"
#include "rec.h"

static const char *const reason_keys[ML_LEAKS_NR_REASONS] = {
	[ML_LEAKS_REASON_TABLE_FULL] = "table_full",
	[ML_LEAKS_REASON_NOT_WALKED] = "not_walked",
	[ML_LEAKS_REASON_HASH_COLLISION] = "hash_collision",
	[ML_LEAKS_REASON_DROPPED] = "dropped",
};

static void put_counters(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_kuint(w, "mallocs", r->mallocs);
	ml_jw_kuint(w, "frees", r->frees);
	ml_jw_kuint(w, "untracked_frees", r->untracked_frees);
	ml_jw_kuint(w, "exit_frees", r->exit_frees);
	ml_jw_kuint(w, "missed_frees", r->missed_frees);
	ml_jw_kuint(w, "failed", r->failed);
	ml_jw_kuint(w, "lost", r->lost);
	ml_jw_kbool(w, "table_full", r->lost != 0);
	ml_jw_kuint(w, "stale_calls", r->stale_calls);
	ml_jw_kuint(w, "unpaired_returns", r->unpaired_returns);
}

static void put_sampling(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_kuint(w, "sample_bytes", r->sample_bytes);
	ml_jw_kuint(w, "allocation_calls", r->allocation_calls);
	ml_jw_kuint(w, "allocation_call_bytes", r->allocation_call_bytes);
	ml_jw_kuint(w, "sampled_outstanding", r->sampled_outstanding);
	ml_jw_kuint(w, "sampled_outstanding_bytes", r->sampled_outstanding_bytes);
	ml_jw_kuint(w, "outstanding_bytes_stderr", r->outstanding_bytes_stderr);
}

static void put_no_stack(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_kuint(w, "stacks_kept", r->stacks_kept);
	ml_jw_kint(w, "max_stacks", r->max_stacks);
	ml_jw_kuint(w, "stacks_lost", r->stacks_lost);
	ml_jw_key(w, "stacks_lost_by_reason");
	ml_jw_obj(w);
	for (int i = 0; i < ML_LEAKS_NR_REASONS; i++)
		ml_jw_kuint(w, reason_keys[i], r->stacks_lost_by_reason[i]);
	ml_jw_obj_end(w);
	ml_jw_kuint(w, "outstanding_no_stack", r->outstanding_no_stack);
	ml_jw_kuint(w, "outstanding_no_stack_bytes", r->outstanding_no_stack_bytes);
	ml_jw_key(w, "outstanding_no_stack_by_reason");
	ml_jw_obj(w);
	for (int i = 0; i < ML_LEAKS_NR_REASONS; i++) {
		ml_jw_key(w, reason_keys[i]);
		ml_jw_obj(w);
		ml_jw_kuint(w, "count", r->outstanding_no_stack_by_reason[i].count);
		ml_jw_kuint(w, "bytes", r->outstanding_no_stack_by_reason[i].bytes);
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

static void put_sizes(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_key(w, "by_size");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nsizes; i++) {
		const struct ml_leaks_size_rec *z = &r->sizes[i];

		ml_jw_obj(w);
		ml_jw_kuint(w, "size", z->size);
		ml_jw_kuint(w, "count", z->count);
		ml_jw_kuint(w, "bytes", z->bytes);
		if (r->sample_bytes) {
			ml_jw_kbool(w, "estimated", true);
			ml_jw_kuint(w, "sampled", z->sampled);
		}
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
}

static void put_frames(struct ml_jw *w, const struct ml_leaks_stack_rec *s)
{
	ml_jw_key(w, "frames");
	ml_jw_arr(w);
	for (size_t i = 0; i < s->nframes; i++) {
		const struct ml_leaks_frame_rec *f = &s->frames[i];

		ml_jw_obj(w);
		ml_jw_khex(w, "address", f->address);
		if (f->function)
			ml_jw_kstr(w, "function", f->function);
		if (f->has_offset)
			ml_jw_kuint(w, "offset", f->offset);
		ml_jw_kbool(w, "inlined", f->inlined);
		if (f->object && f->object[0])
			ml_jw_kstr(w, "object", f->object);
		if (f->file)
			ml_jw_kstr(w, "file", f->file);
		if (f->line)
			ml_jw_kuint(w, "line", f->line);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
}

static void put_stacks(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_key(w, "by_stack");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nstacks; i++) {
		const struct ml_leaks_stack_rec *s = &r->stacks[i];

		ml_jw_obj(w);
		ml_jw_kuint(w, "count", s->count);
		ml_jw_kuint(w, "bytes", s->bytes);
		if (r->sample_bytes) {
			ml_jw_kbool(w, "estimated", true);
			ml_jw_kuint(w, "sampled", s->sampled);
			ml_jw_kuint(w, "sampled_bytes", s->sampled_bytes);
			ml_jw_kuint(w, "bytes_stderr", s->bytes_stderr);
		}
		ml_jw_key(w, "stack");
		ml_jw_arr(w);
		for (size_t j = 0; j < s->nstack; j++)
			ml_jw_str(w, s->stack[j]);
		ml_jw_arr_end(w);
		put_frames(w, s);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
}

static void put_depth(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	const struct ml_leaks_unwind_rec *u = &r->unwind;

	ml_jw_key(w, "stack_depth");
	ml_jw_obj(w);
	ml_jw_kuint(w, "stacks", r->depth_stacks);
	ml_jw_kdbl(w, "mean", r->depth_mean);
	ml_jw_kint(w, "max", r->depth_max);
	ml_jw_obj_end(w);
	if (!r->has_unwind)
		return;
	ml_jw_key(w, "unwind");
	ml_jw_obj(w);
	ml_jw_kuint(w, "stack_size", u->stack_size);
	ml_jw_kuint(w, "stacks", u->stacks);
	ml_jw_kdbl(w, "us_per_stack", u->us_per_stack);
	ml_jw_kdbl(w, "frames_mean", u->frames_mean);
	ml_jw_kuint(w, "frames_max", u->frames_max);
	ml_jw_kint(w, "max_frames", u->max_frames);
	ml_jw_kuint(w, "complete", u->complete);
	ml_jw_kuint(w, "cut", u->cut);
	ml_jw_kuint(w, "out_of_copy", u->out_of_copy);
	ml_jw_kuint(w, "no_cfi", u->no_cfi);
	ml_jw_kuint(w, "not_unwound_fully", u->not_unwound_fully);
	ml_jw_kuint(w, "table_full", u->table_full);
	ml_jw_obj_end(w);
}

void ml_fmt_leaks(struct ml_jw *w, const struct ml_leaks_rec *r)
{
	ml_jw_obj(w);
	mli_rec_put_head(w, "leaks", "leaks_interval", r->interval, r->elapsed_ms, r->last);
	if (r->interval) {
		ml_jw_kuint(w, "interval_mallocs", r->interval_mallocs);
		ml_jw_kuint(w, "interval_frees", r->interval_frees);
	}
	ml_jw_kint(w, "pid", r->pid);
	ml_jw_kstr(w, "allocator", r->allocator);
	if (r->allocator_prefixed && r->allocator_prefixed[0])
		ml_jw_kstr(w, "allocator_prefixed", r->allocator_prefixed);
	ml_jw_kstr(w, "mode", r->mode);
	if (r->sampler)
		ml_jw_kstr(w, "sampler", r->sampler);
	ml_jw_kstr(w, "stacks_mode", r->stacks_mode);
	put_counters(w, r);
	ml_jw_kuint(w, "recursion_misses", r->recursion_misses);
	ml_jw_kbool(w, "estimated", r->sample_bytes != 0);
	if (r->sample_bytes)
		put_sampling(w, r);
	ml_jw_kuint(w, "outstanding", r->outstanding);
	ml_jw_kuint(w, "outstanding_bytes", r->outstanding_bytes);
	ml_jw_kbool(w, "table_unread", r->table_unread);
	put_no_stack(w, r);
	put_sizes(w, r);
	put_stacks(w, r);
	if (r->has_depth)
		put_depth(w, r);
	ml_jw_obj_end(w);
}

/* ---- reading --------------------------------------------------------------- */

static const struct ml_json *need_arr(const struct ml_json *o, const char *key, struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, key);

	if (ml_json_type(a) != ML_JSON_ARRAY) {
		ml_err_set(err, EINVAL, "field \"%s\" is missing or not an array", key);
		return NULL;
	}
	return a;
}

static void read_reasons(const struct ml_json *o, struct ml_leaks_rec *r)
{
	const struct ml_json *lost = ml_json_get(o, "stacks_lost_by_reason"),
			     *out = ml_json_get(o, "outstanding_no_stack_by_reason");

	for (int i = 0; i < ML_LEAKS_NR_REASONS; i++) {
		const struct ml_json *e = ml_json_get(out, reason_keys[i]);

		r->stacks_lost_by_reason[i] = mli_rec_count_or0(lost, reason_keys[i]);
		r->outstanding_no_stack_by_reason[i].count = mli_rec_count_or0(e, "count");
		r->outstanding_no_stack_by_reason[i].bytes = mli_rec_count_or0(e, "bytes");
	}
}

static void read_unwind(const struct ml_json *o, struct ml_leaks_rec *r)
{
	const struct ml_json *d = ml_json_get(o, "stack_depth"), *u = ml_json_get(o, "unwind");
	struct ml_leaks_unwind_rec *x = &r->unwind;
	double v;

	r->has_depth = ml_json_type(d) == ML_JSON_OBJECT;
	r->depth_stacks = mli_rec_count_or0(d, "stacks");
	r->depth_mean = ml_json_get_finite(d, "mean", &v) ? v : 0;
	r->depth_max = mli_rec_int_or0(d, "max");
	r->has_unwind = r->has_depth && ml_json_type(u) == ML_JSON_OBJECT;
	x->stack_size = mli_rec_count_or0(u, "stack_size");
	x->stacks = mli_rec_count_or0(u, "stacks");
	x->us_per_stack = ml_json_get_finite(u, "us_per_stack", &v) ? v : 0;
	x->frames_mean = ml_json_get_finite(u, "frames_mean", &v) ? v : 0;
	x->frames_max = mli_rec_count_or0(u, "frames_max");
	x->max_frames = mli_rec_int_or0(u, "max_frames");
	x->complete = mli_rec_count_or0(u, "complete");
	x->cut = mli_rec_count_or0(u, "cut");
	x->out_of_copy = mli_rec_count_or0(u, "out_of_copy");
	x->no_cfi = mli_rec_count_or0(u, "no_cfi");
	x->not_unwound_fully = mli_rec_count_or0(u, "not_unwound_fully");
	x->table_full = mli_rec_count_or0(u, "table_full");
}

static void read_counters(const struct ml_json *o, struct ml_leaks_rec *r)
{
	r->pid = mli_rec_int_or0(o, "pid");
	r->allocator = ml_json_get_str(o, "allocator");
	r->allocator_prefixed = ml_json_get_str(o, "allocator_prefixed");
	r->mode = ml_json_get_str(o, "mode");
	r->stacks_mode = ml_json_get_str(o, "stacks_mode");
	r->sampler = ml_json_get_str(o, "sampler");
	r->mallocs = mli_rec_count_or0(o, "mallocs");
	r->frees = mli_rec_count_or0(o, "frees");
	r->untracked_frees = mli_rec_count_or0(o, "untracked_frees");
	r->exit_frees = mli_rec_count_or0(o, "exit_frees");
	r->missed_frees = mli_rec_count_or0(o, "missed_frees");
	r->failed = mli_rec_count_or0(o, "failed");
	r->lost = mli_rec_count_or0(o, "lost");
	r->stale_calls = mli_rec_count_or0(o, "stale_calls");
	r->unpaired_returns = mli_rec_count_or0(o, "unpaired_returns");
	r->recursion_misses = mli_rec_count_or0(o, "recursion_misses");
	r->sample_bytes = mli_rec_count_or0(o, "sample_bytes");
	r->allocation_calls = mli_rec_count_or0(o, "allocation_calls");
	r->allocation_call_bytes = mli_rec_count_or0(o, "allocation_call_bytes");
	r->sampled_outstanding = mli_rec_count_or0(o, "sampled_outstanding");
	r->sampled_outstanding_bytes = mli_rec_count_or0(o, "sampled_outstanding_bytes");
	r->outstanding_bytes_stderr = mli_rec_count_or0(o, "outstanding_bytes_stderr");
	r->outstanding = mli_rec_count_or0(o, "outstanding");
	r->outstanding_bytes = mli_rec_count_or0(o, "outstanding_bytes");
	ml_json_get_bool(o, "table_unread", &r->table_unread);
	r->stacks_kept = mli_rec_count_or0(o, "stacks_kept");
	r->max_stacks = mli_rec_int_or0(o, "max_stacks");
	r->stacks_lost = mli_rec_count_or0(o, "stacks_lost");
	r->outstanding_no_stack = mli_rec_count_or0(o, "outstanding_no_stack");
	r->outstanding_no_stack_bytes = mli_rec_count_or0(o, "outstanding_no_stack_bytes");
	read_reasons(o, r);
}

static int read_frames(const struct ml_json *o, struct ml_leaks_stack_rec *s, struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, "frames");
	size_t n = ml_json_count(a);

	if (!a)
		return 0;
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"frames\" is not an array");
	s->frames = calloc(n ? n : 1, sizeof(*s->frames));
	if (!s->frames)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct ml_json *e = ml_json_at(a, i);
		struct ml_leaks_frame_rec *f = &s->frames[s->nframes++];

		if (ml_json_type(e) != ML_JSON_OBJECT ||
		    ml_json_as_hex(ml_json_get(e, "address"), &f->address))
			return ml_err_set(err, EINVAL,
					  "\"frames\" %zu is not an object with a hex \"address\"",
					  i);
		f->function = ml_json_get_str(e, "function");
		f->has_offset = ml_json_get(e, "offset") != NULL;
		f->offset = mli_rec_count_or0(e, "offset");
		ml_json_get_bool(e, "inlined", &f->inlined);
		f->object = ml_json_get_str(e, "object");
		f->file = ml_json_get_str(e, "file");
		f->line = mli_rec_count_or0(e, "line");
	}
	return 0;
}

static int read_stack(const struct ml_json *o, struct ml_leaks_stack_rec *s, struct ml_err *err)
{
	const struct ml_json *a = need_arr(o, "stack", err);
	size_t n = ml_json_count(a);
	int ret;

	if (!a)
		return -EINVAL;
	ret = mli_rec_need_count(o, "count", &s->count, err);
	if (!ret)
		ret = mli_rec_need_count(o, "bytes", &s->bytes, err);
	if (ret)
		return ret;
	s->sampled = mli_rec_count_or0(o, "sampled");
	s->sampled_bytes = mli_rec_count_or0(o, "sampled_bytes");
	s->bytes_stderr = mli_rec_count_or0(o, "bytes_stderr");
	s->stack = calloc(n ? n : 1, sizeof(*s->stack));
	if (!s->stack)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		s->stack[i] = ml_json_as_str(ml_json_at(a, i));
		if (!s->stack[i])
			return ml_err_set(err, EINVAL,
					  "\"stack\" holds something other than strings");
		s->nstack++;
	}
	return read_frames(o, s, err);
}

static int read_tables(const struct ml_json *o, struct ml_leaks_rec *r, struct ml_err *err)
{
	const struct ml_json *sizes, *stacks;
	size_t ns, nk;
	int ret;

	if (r->interval && !ml_json_get(o, "by_size") && !ml_json_get(o, "by_stack"))
		return 0;
	sizes = need_arr(o, "by_size", err);
	if (!sizes)
		return -EINVAL;
	stacks = need_arr(o, "by_stack", err);
	if (!stacks)
		return -EINVAL;
	ns = ml_json_count(sizes);
	nk = ml_json_count(stacks);
	r->sizes = calloc(ns ? ns : 1, sizeof(*r->sizes));
	r->stacks = calloc(nk ? nk : 1, sizeof(*r->stacks));
	if (!r->sizes || !r->stacks)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < ns; i++) {
		const struct ml_json *e = ml_json_at(sizes, i);
		struct ml_leaks_size_rec *z = &r->sizes[r->nsizes++];

		ret = mli_rec_need_count(e, "size", &z->size, err);
		if (!ret)
			ret = mli_rec_need_count(e, "count", &z->count, err);
		if (!ret)
			ret = mli_rec_need_count(e, "bytes", &z->bytes, err);
		if (ret)
			return ret;
		z->sampled = mli_rec_count_or0(e, "sampled");
	}
	for (size_t i = 0; i < nk; i++) {
		ret = read_stack(ml_json_at(stacks, i), &r->stacks[r->nstacks++], err);
		if (ret)
			return ret;
	}
	return 0;
}

int ml_fmt_leaks_read(const struct ml_json *o, struct ml_leaks_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	double v;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || (strcmp(type, "leaks") && strcmp(type, "leaks_interval")))
		return ml_err_set(err, EINVAL,
				  "field \"type\" is not \"leaks\" or \"leaks_interval\"");
	r->interval = !strcmp(type, "leaks_interval");
	if (r->interval) {
		ret = mli_rec_read_interval(o, &r->elapsed_ms, &r->last, err);
		if (ret)
			return ret;
		r->interval_mallocs = mli_rec_count_or0(o, "interval_mallocs");
		r->interval_frees = mli_rec_count_or0(o, "interval_frees");
	} else if (!ml_json_get_finite(o, "outstanding_bytes", &v) || v < 0) {
		return ml_err_set(err, EINVAL,
				  "field \"outstanding_bytes\" is missing or not a count");
	}
	read_counters(o, r);
	read_unwind(o, r);
	return read_tables(o, r, err);
}

void ml_fmt_leaks_free(struct ml_leaks_rec *r)
{
	for (size_t i = 0; r->stacks && i < r->nstacks; i++) {
		free(r->stacks[i].stack);
		free(r->stacks[i].frames);
	}
	free(r->stacks);
	free(r->sizes);
	r->stacks = NULL;
	r->sizes = NULL;
	r->nstacks = r->nsizes = 0;
}
