// SPDX-License-Identifier: MIT
/* The migration model's input: the `writes --record` trace, read by lib/format/writes.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_writes.h"
#include "memlens/json.h"
#include "memlens/migrate_model.h"

void ml_mm_trace_init(struct ml_mm_trace *t)
{
	memset(t, 0, sizeof(*t));
}

static void interval_free(struct ml_mm_interval *iv)
{
	free(iv->regions);
	free(iv->written);
}

void ml_mm_trace_free(struct ml_mm_trace *t)
{
	for (size_t i = 0; i < t->n; i++)
		interval_free(&t->iv[i]);
	free(t->iv);
	memset(t, 0, sizeof(*t));
}

static int cmp_region(const void *x, const void *y)
{
	const struct ml_mm_region *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* The address space of process @pid (0: a trace of one process) in @t: its offset, or -1. */
static int64_t pid_base(struct ml_mm_trace *t, int64_t pid)
{
	size_t i = 0;

	if (!pid)
		return 0;
	while (i < t->npids && t->pids[i] != pid)
		i++;
	if (i == t->npids) {
		if (t->npids == ML_MM_TRACE_MAX_PROCS)
			return -1;
		t->pids[t->npids++] = pid;
	}
	return (int64_t)((uint64_t)i << ML_MM_TRACE_PID_SHIFT);
}

/*
 * The model's view of an interval: each region needs "hot", each range
 * START < END. Shared memory is never hot to the model: CRIU leaves none
 * of it out. A tree's processes each get an address space of their own.
 */
static int from_rec(struct ml_mm_trace *t, struct ml_writes_interval_rec *rec,
		    struct ml_mm_interval *iv, struct ml_err *err)
{
	bool all_resident = true;

	if (!rec->t_ms_is_int)
		return ml_err_set(err, EINVAL, "interval without an integer \"t_ms\"");
	iv->t_ms = rec->t_ms_int;
	iv->regions = calloc(rec->nregions ? rec->nregions : 1, sizeof(*iv->regions));
	if (!iv->regions)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < rec->nregions; i++) {
		const struct ml_writes_region_rec *r = &rec->regions[i];

		if (!r->has_hot || r->end <= r->start)
			return ml_err_set(
				err, EINVAL,
				"region %zu needs \"start_addr\" < \"end_addr\" (hex strings) "
				"and a boolean \"hot\"",
				i);
		int64_t base = pid_base(t, r->pid);

		if (base < 0 || r->end > (1ULL << ML_MM_TRACE_PID_SHIFT))
			return ml_err_set(err, EINVAL,
					  "region %zu: more than %d processes, or an address above "
					  "2^%d",
					  i, ML_MM_TRACE_MAX_PROCS, ML_MM_TRACE_PID_SHIFT);
		iv->regions[iv->nregions++] =
			(struct ml_mm_region){ r->start + (uint64_t)base, r->end + (uint64_t)base,
					       r->hot && !r->shared, r->has_resident,
					       (uint64_t)r->resident_pages * ML_MM_PAGE_SIZE };
		all_resident &= r->has_resident;
	}
	iv->all_resident = all_resident;
	for (size_t i = 0; i < rec->nwritten; i++)
		if (rec->written[i].end <= rec->written[i].start)
			return ml_err_set(err, EINVAL,
					  "written range %zu must be [\"0xSTART\", \"0xEND\"] with "
					  "START < END",
					  i);
	/* a tree's regions by address space, then address */
	qsort(iv->regions, iv->nregions, sizeof(*iv->regions), cmp_region);
	for (size_t i = 0; rec->written_pid && i < rec->nwritten; i++) {
		int64_t base = pid_base(t, rec->written_pid[i]);

		if (base < 0)
			return ml_err_set(err, EINVAL, "more than %d processes",
					  ML_MM_TRACE_MAX_PROCS);
		rec->written[i].start += (uint64_t)base;
		rec->written[i].end += (uint64_t)base;
	}
	/* `writes --json` output has no ranges (mm_run refuses) */
	iv->written = rec->written;
	iv->nwritten = rec->nwritten;
	rec->written = NULL;
	rec->nwritten = 0;
	return 0;
}

static int append(struct ml_mm_trace *t, struct ml_mm_interval *iv, struct ml_err *err)
{
	if (t->n && iv->t_ms < t->iv[t->n - 1].t_ms)
		return ml_err_set(err, EINVAL, "\"t_ms\" goes backwards (%lld after %lld)",
				  (long long)iv->t_ms, (long long)t->iv[t->n - 1].t_ms);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct ml_mm_interval *v = realloc(t->iv, cap * sizeof(*v));

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

int ml_mm_trace_add_line(struct ml_mm_trace *t, const char *line, size_t len, struct ml_err *err)
{
	struct ml_writes_interval_rec rec = { 0 };
	struct ml_mm_interval iv = { 0 };
	struct ml_json *j = NULL;
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
		ret = from_rec(t, &rec, &iv, err);
	if (!ret)
		ret = append(t, &iv, err);
	if (!ret && rec.has_written)
		t->with_written++;
	if (!ret && iv.all_resident)
		t->with_resident++;
	ml_fmt_writes_interval_free(&rec);
	if (ret)
		interval_free(&iv);
out:
	ml_json_free(j);
	return ret;
}
