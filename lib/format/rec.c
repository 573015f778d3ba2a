// SPDX-License-Identifier: MIT
/* What the tracers' record readers and writers share (see rec.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "rec.h"

static uint64_t as_count(const struct ml_json *j)
{
	uint64_t u;
	double v;

	if (!ml_json_as_uint(j, &u))
		return u;
	if (ml_json_as_double(j, &v) || !isfinite(v) || v <= 0)
		return 0;
	return v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
}

uint64_t mli_rec_count_or0(const struct ml_json *o, const char *key)
{
	return as_count(ml_json_get(o, key));
}

int64_t mli_rec_pid(double v)
{
	if (!(v > -1e15))
		return v < 0 ? -1000000000000000LL : 0;
	return v < 1e15 ? (int64_t)v : 1000000000000000LL;
}

int64_t mli_rec_int_or0(const struct ml_json *o, const char *key)
{
	int64_t i;
	double v;

	if (!ml_json_get_int(o, key, &i))
		return i;
	return ml_json_get_finite(o, key, &v) ? mli_rec_pid(v) : 0;
}

int mli_rec_need_count(const struct ml_json *o, const char *key, uint64_t *out, struct ml_err *err)
{
	double v;

	if (!ml_json_get_finite(o, key, &v) || v < 0)
		return ml_err_set(err, EINVAL, "field \"%s\" is missing or not a count", key);
	*out = mli_rec_count_or0(o, key);
	return 0;
}

void mli_rec_str(const struct ml_json *o, const char *key, char *dst, size_t size)
{
	const char *s = ml_json_get_str(o, key);

	snprintf(dst, size, "%s", s ? s : "");
}

void mli_rec_put_hist(struct ml_jw *w, const char *key, const uint64_t *slots, size_t n)
{
	size_t end = 0;

	for (size_t i = 0; i < n; i++)
		if (slots[i])
			end = i + 1;
	ml_jw_key(w, key);
	ml_jw_arr(w);
	for (size_t i = 0; i < end; i++)
		ml_jw_uint(w, slots[i]);
	ml_jw_arr_end(w);
}

int mli_rec_read_hist(const struct ml_json *o, const char *key, bool optional, uint64_t *slots,
		      size_t max, size_t *n, struct ml_err *err)
{
	const struct ml_json *a = ml_json_get(o, key);
	size_t cnt = ml_json_count(a);

	*n = 0;
	if (!a && optional)
		return 0;
	if (ml_json_type(a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"%s\" is missing or not an array", key);
	for (size_t i = 0; i < cnt; i++) {
		const struct ml_json *j = ml_json_at(a, i);
		double v;

		if (ml_json_as_double(j, &v) || !isfinite(v) || v < 0)
			return ml_err_set(err, EINVAL, "\"%s\" holds something other than counts",
					  key);
		if (i < max)
			slots[(*n)++] = as_count(j);
	}
	return 0;
}

void mli_rec_put_head(struct ml_jw *w, const char *type, const char *itype, bool interval,
		      uint64_t elapsed_ms, bool last)
{
	ml_jw_kstr(w, "type", interval ? itype : type);
	if (interval) {
		ml_jw_kuint(w, "elapsed_ms", elapsed_ms);
		ml_jw_kbool(w, "last", last);
	}
}

int mli_rec_read_interval(const struct ml_json *o, uint64_t *elapsed_ms, bool *last,
			  struct ml_err *err)
{
	double v;

	if (!ml_json_get_finite(o, "elapsed_ms", &v))
		return ml_err_set(err, EINVAL, "field \"elapsed_ms\" is missing or not a number");
	*elapsed_ms = mli_rec_count_or0(o, "elapsed_ms");
	ml_json_get_bool(o, "last", last);
	return 0;
}
