// SPDX-License-Identifier: MIT
/* Snapshots as values: init/free/copy, and the difference of two cycles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/snapshot.h"

void ml_snapshot_init(struct ml_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	ml_vma_set_init(&s->vmas);
}

void ml_snapshot_free(struct ml_snapshot *s)
{
	ml_vma_set_free(&s->vmas);
	free(s->c);
	ml_snapshot_init(s);
}

static void *dup_mem(const void *p, size_t len)
{
	void *d = malloc(len ? len : 1);

	if (d && len)
		memcpy(d, p, len);
	return d;
}

int ml_snapshot_copy(struct ml_snapshot *dst, const struct ml_snapshot *src)
{
	struct ml_snapshot n = *src;

	n.vmas.v = dup_mem(src->vmas.v, src->vmas.n * sizeof(*src->vmas.v));
	n.vmas.cap = src->vmas.n;
	n.vmas.strings = dup_mem(src->vmas.strings, src->vmas.str_len);
	n.vmas.str_cap = src->vmas.str_len;
	n.c = dup_mem(src->c, src->vmas.n * sizeof(*src->c));
	n.c_cap = src->vmas.n;
	if (!n.vmas.v || !n.vmas.strings || !n.c) {
		free(n.vmas.v);
		free(n.vmas.strings);
		free(n.c);
		return -ENOMEM;
	}
	if (!src->vmas.strings) {
		free(n.vmas.strings);
		n.vmas.strings = NULL;
	}
	ml_snapshot_free(dst);
	*dst = n;
	return 0;
}

void ml_snapshot_diff_init(struct ml_snapshot_diff *d)
{
	memset(d, 0, sizeof(*d));
}

void ml_snapshot_diff_free(struct ml_snapshot_diff *d)
{
	free(d->prev);
	free(d->d);
	ml_snapshot_diff_init(d);
}

static void sub(struct ml_snap_dcounts *d, const struct ml_snap_counts *a,
		const struct ml_snap_counts *b)
{
	d->size_pages = (int64_t)a->size_pages - (int64_t)(b ? b->size_pages : 0);
	d->resident_pages = (int64_t)a->resident_pages - (int64_t)(b ? b->resident_pages : 0);
	d->swapped_pages = (int64_t)a->swapped_pages - (int64_t)(b ? b->swapped_pages : 0);
	d->file_pages = (int64_t)a->file_pages - (int64_t)(b ? b->file_pages : 0);
	d->huge_pages = (int64_t)a->huge_pages - (int64_t)(b ? b->huge_pages : 0);
	d->zero_pages = (int64_t)a->zero_pages - (int64_t)(b ? b->zero_pages : 0);
}

static int grow(struct ml_snapshot_diff *d, size_t n)
{
	long *p;
	struct ml_snap_dcounts *c;

	if (n <= d->cap)
		return 0;
	p = realloc(d->prev, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	d->prev = p;
	c = realloc(d->d, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	d->d = c;
	d->cap = n;
	return 0;
}

int ml_snapshot_diff(const struct ml_snapshot *old, const struct ml_snapshot *cur,
		     struct ml_snapshot_diff *out)
{
	size_t i = 0, matched = 0;

	if (grow(out, cur->vmas.n))
		return -ENOMEM;
	out->n = cur->vmas.n;
	out->added = 0;
	for (size_t j = 0; j < cur->vmas.n; j++) {
		uint64_t start = cur->vmas.v[j].start;

		while (old && i < old->vmas.n && old->vmas.v[i].start < start)
			i++;
		if (old && i < old->vmas.n && old->vmas.v[i].start == start) {
			out->prev[j] = (long)i;
			sub(&out->d[j], &cur->c[j], &old->c[i]);
			matched++;
		} else {
			out->prev[j] = -1;
			sub(&out->d[j], &cur->c[j], NULL);
			out->added++;
		}
	}
	out->removed = old ? old->vmas.n - matched : 0;
	sub(&out->totals, &cur->totals, old ? &old->totals : NULL);
	out->dt_ns = old ? (int64_t)(cur->t_ns - old->t_ns) : 0;
	return 0;
}
