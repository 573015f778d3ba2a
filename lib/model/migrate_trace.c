// SPDX-License-Identifier: MIT
/* The migration model's input: the `writes --record` trace, read by lib/format/writes.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_writes.h"
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

/* The model's view of an interval: each region needs "hot", each range START < END. */
static int from_rec(struct writes_interval_rec *rec, struct mm_interval *iv, struct ml_err *err)
{
	if (!rec->t_ms_is_int)
		return ml_err_set(err, EINVAL, "interval without an integer \"t_ms\"");
	iv->t_ms = rec->t_ms_int;
	iv->regions = calloc(rec->nregions ? rec->nregions : 1, sizeof(*iv->regions));
	if (!iv->regions)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < rec->nregions; i++) {
		const struct writes_region_rec *r = &rec->regions[i];

		if (!r->has_hot || r->end <= r->start)
			return ml_err_set(
				err, EINVAL,
				"region %zu needs \"start_addr\" < \"end_addr\" (hex strings) "
				"and a boolean \"hot\"",
				i);
		iv->regions[iv->nregions++] = (struct mm_region){ r->start, r->end, r->hot };
	}
	for (size_t i = 0; i < rec->nwritten; i++)
		if (rec->written[i].end <= rec->written[i].start)
			return ml_err_set(err, EINVAL,
					  "written range %zu must be [\"0xSTART\", \"0xEND\"] with "
					  "START < END",
					  i);
	/* `writes --json` output has no ranges (mm_run refuses) */
	iv->written = rec->written;
	iv->nwritten = rec->nwritten;
	rec->written = NULL;
	rec->nwritten = 0;
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
	struct writes_interval_rec rec = { 0 };
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
	ret = ml_fmt_writes_interval_read(j, &rec, err);
	if (!ret)
		ret = from_rec(&rec, &iv, err);
	if (!ret)
		ret = append(t, &iv, err);
	if (!ret && rec.has_written)
		t->with_written++;
	ml_fmt_writes_interval_free(&rec);
	if (ret)
		interval_free(&iv);
out:
	ml_json_free(j);
	return ret;
}
