// SPDX-License-Identifier: MIT
/* Read the `memlens writes --record` trace (JSON Lines) for the migration model. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/json.h"
#include "memlens/migrate_model.h"

void ml_mm_trace_init(struct mm_trace *t)
{
	memset(t, 0, sizeof(*t));
}

static void interval_free(struct mm_interval *iv)
{
	free(iv->regions);
	free(iv->written);
}

void ml_mm_trace_free(struct mm_trace *t)
{
	for (size_t i = 0; i < t->n; i++)
		interval_free(&t->iv[i]);
	free(t->iv);
	memset(t, 0, sizeof(*t));
}

static int parse_regions(const struct json *arr, struct mm_interval *iv, struct ml_err *err)
{
	size_t n = ml_json_count(arr);

	if (!arr || ml_json_type(arr) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "\"regions\" must be an array");
	iv->regions = calloc(n ? n : 1, sizeof(*iv->regions));
	if (!iv->regions)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct json *r = ml_json_at(arr, i);
		struct mm_region *m = &iv->regions[i];

		if (ml_json_get_hex(r, "start_addr", &m->start) ||
		    ml_json_get_hex(r, "end_addr", &m->end) ||
		    ml_json_get_bool(r, "hot", &m->hot) || m->end <= m->start)
			return ml_err_set(
				err, EINVAL,
				"region %zu needs \"start_addr\" < \"end_addr\" (hex strings) "
				"and a boolean \"hot\"",
				i);
		iv->nregions++;
	}
	return 0;
}

static int parse_written(const struct json *arr, struct mm_interval *iv, struct ml_err *err)
{
	size_t n = ml_json_count(arr);

	if (!arr)
		return 0; /* `writes --json` output: no ranges (mm_run refuses) */
	if (ml_json_type(arr) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "\"written\" must be an array");
	iv->written = calloc(n ? n : 1, sizeof(*iv->written));
	if (!iv->written)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct json *w = ml_json_at(arr, i);
		struct range *r = &iv->written[i];

		if (ml_json_count(w) != 2 || ml_json_type(w) != ML_JSON_ARRAY ||
		    ml_json_as_hex(ml_json_at(w, 0), &r->start) ||
		    ml_json_as_hex(ml_json_at(w, 1), &r->end) || r->end <= r->start)
			return ml_err_set(err, EINVAL,
					  "written range %zu must be [\"0xSTART\", \"0xEND\"] with "
					  "START < END",
					  i);
		iv->nwritten++;
	}
	return 0;
}

static int append(struct mm_trace *t, struct mm_interval *iv, struct ml_err *err)
{
	if (t->n && iv->t_ms < t->iv[t->n - 1].t_ms)
		return ml_err_set(err, EINVAL, "\"t_ms\" goes backwards (%lld after %lld)",
				  (long long)iv->t_ms, (long long)t->iv[t->n - 1].t_ms);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct mm_interval *v = realloc(t->iv, cap * sizeof(*v));

		if (!v)
			return ml_err_set(err, ENOMEM, "out of memory");
		t->iv = v;
		t->cap = cap;
	}
	t->iv[t->n++] = *iv;
	return 0;
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

int ml_mm_trace_add_line(struct mm_trace *t, const char *line, size_t len, struct ml_err *err)
{
	struct mm_interval iv = { 0 };
	struct json *j = NULL;
	const char *type;
	int ret;

	if (blank(line, len))
		return 0;
	ret = ml_json_parse(line, len, &j, err);
	if (ret)
		return ret;
	type = ml_json_get_str(j, "type");
	if (!type) {
		ret = ml_err_set(err, EINVAL, "not a trace line: an object with \"type\" expected");
		goto out;
	}
	if (strcmp(type, "interval")) {
		t->skipped_lines++;
		goto out;
	}
	if (ml_json_get_int(j, "t_ms", &iv.t_ms)) {
		ret = ml_err_set(err, EINVAL, "interval without an integer \"t_ms\"");
		goto out;
	}
	ret = parse_regions(ml_json_get(j, "regions"), &iv, err);
	if (!ret)
		ret = parse_written(ml_json_get(j, "written"), &iv, err);
	if (!ret)
		ret = append(t, &iv, err);
	if (!ret && ml_json_get(j, "written"))
		t->with_written++;
	if (ret)
		interval_free(&iv);
out:
	ml_json_free(j);
	return ret;
}
