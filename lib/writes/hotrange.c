// SPDX-License-Identifier: MIT
/* Hot ranges inside VMAs (memlens/hotrange.h): per-page streaks kept as extents. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/hotrange.h"

#define PG ML_HOTRANGE_PAGE

int ml_hotrange_init(struct ml_hotrange *h, int consecutive, int cool, size_t max_ranges)
{
	memset(h, 0, sizeof(*h));
	if (consecutive < 1 || consecutive > ML_HOTRANGE_MAX_INTERVALS)
		return -EINVAL;
	if (cool < 0 || cool > ML_HOTRANGE_MAX_INTERVALS)
		return -EINVAL;
	if (max_ranges > ML_HOTRANGE_MAX_MAX)
		return -EINVAL;
	h->consecutive = consecutive;
	h->cool = cool ? cool : consecutive;
	h->max_ranges = max_ranges ? max_ranges : ML_HOTRANGE_DEFAULT_MAX;
	return 0;
}

void ml_hotrange_free(struct ml_hotrange *h)
{
	free(h->e);
	free(h->vmas);
	free(h->w);
	free(h->raw);
	free(h->clip);
	free(h->spare);
	h->e = h->clip = h->spare = NULL;
	h->vmas = h->w = h->raw = NULL;
	h->n = h->cap = h->nvmas = h->vmas_cap = h->w_cap = 0;
	h->raw_cap = h->clip_cap = h->spare_cap = 0;
}

void ml_hotrange_reset(struct ml_hotrange *h)
{
	h->n = 0;
	h->nvmas = 0;
}

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
	void *n;

	if (want <= *cap)
		return 0;
	n = realloc(*p, want * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = want;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct ml_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Index of the VMA holding @addr, or -1. */
static long vma_of(const struct ml_range *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].start <= addr ? (long)lo : -1;
}

/*
 * The written ranges as whole pages, sorted, merged and clipped to the
 * VMAs, into h->w; their number into *out. The clip walks both lists once.
 */
static int prepare_written(struct ml_hotrange *h, const struct ml_range *vmas, size_t nvmas,
			   const struct ml_range *written, size_t nwritten, size_t *out)
{
	struct ml_range *tmp;
	size_t n = 0, k = 0, j = 0;

	*out = 0;
	if (!nwritten || !nvmas)
		return 0;
	if (grow((void **)&h->raw, &h->raw_cap, nwritten, sizeof(*h->raw)))
		return -ENOMEM;
	tmp = h->raw;
	for (size_t i = 0; i < nwritten; i++) {
		uint64_t s = written[i].start & ~(PG - 1);
		uint64_t e = written[i].end > UINT64_MAX - (PG - 1)
				     ? UINT64_MAX & ~(PG - 1)
				     : (written[i].end + PG - 1) & ~(PG - 1);

		if (s < e)
			tmp[n++] = (struct ml_range){ s, e };
	}
	/* the profiler's scans come in address order: sort only what is not */
	for (size_t i = 1; i < n; i++)
		if (tmp[i].start < tmp[i - 1].start) {
			qsort(tmp, n, sizeof(*tmp), by_start);
			break;
		}
	for (size_t i = 1; i < n; i++) { /* merge overlapping and adjacent */
		if (tmp[i].start <= tmp[k].end) {
			if (tmp[i].end > tmp[k].end)
				tmp[k].end = tmp[i].end;
		} else {
			tmp[++k] = tmp[i];
		}
	}
	n = n ? k + 1 : 0;
	/* each written range splits at most at every VMA boundary it crosses */
	if (grow((void **)&h->w, &h->w_cap, n + nvmas, sizeof(*h->w)))
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < n && j < nvmas;) {
		uint64_t s = tmp[i].start > vmas[j].start ? tmp[i].start : vmas[j].start;
		uint64_t e = tmp[i].end < vmas[j].end ? tmp[i].end : vmas[j].end;

		if (s < e)
			h->w[k++] = (struct ml_range){ s, e };
		if (tmp[i].end < vmas[j].end)
			i++;
		else
			j++;
	}
	*out = k;
	return 0;
}

/* The old extents clipped to the VMAs: state of unmapped memory is dropped. */
static struct ml_hotrange_ext *clip_old(struct ml_hotrange *h, const struct ml_range *vmas,
					size_t nvmas, size_t *out)
{
	struct ml_hotrange_ext *c;
	size_t k = 0, j = 0;

	if (grow((void **)&h->clip, &h->clip_cap, h->n + nvmas + 1, sizeof(*h->clip)))
		return NULL;
	c = h->clip;
	for (size_t i = 0; i < h->n && j < nvmas;) {
		uint64_t s = h->e[i].start > vmas[j].start ? h->e[i].start : vmas[j].start;
		uint64_t e = h->e[i].end < vmas[j].end ? h->e[i].end : vmas[j].end;

		if (s < e) {
			c[k] = h->e[i];
			c[k].start = s;
			c[k].end = e;
			k++;
		}
		if (h->e[i].end < vmas[j].end)
			i++;
		else
			j++;
	}
	*out = k;
	return c;
}

/* The state of a page after this interval, from its state before. */
static struct ml_hotrange_ext step(const struct ml_hotrange *h, const struct ml_hotrange_ext *old,
				   bool written)
{
	struct ml_hotrange_ext x = { 0 };

	if (old)
		x = *old;
	if (written) {
		if (x.streak < (uint32_t)h->consecutive)
			x.streak++;
		x.idle = 0;
		x.hot = x.hot || x.streak >= (uint32_t)h->consecutive;
	} else {
		x.streak = 0;
		if (x.hot && ++x.idle >= (uint32_t)h->cool) {
			x.hot = false;
			x.idle = 0;
		}
	}
	return x;
}

static bool same_state(const struct ml_hotrange_ext *a, const struct ml_hotrange_ext *b)
{
	return a->streak == b->streak && a->idle == b->idle && a->hot == b->hot;
}

/* Append [s, e) in state @x: nothing when it has no state left, merged when it can be. */
static void emit(struct ml_hotrange_ext *out, size_t *n, uint64_t s, uint64_t e,
		 struct ml_hotrange_ext x)
{
	if (!x.hot && !x.streak)
		return; /* cold and not written last interval: nothing to remember */
	if (*n && out[*n - 1].end == s && same_state(&out[*n - 1], &x)) {
		out[*n - 1].end = e;
		return;
	}
	x.start = s;
	x.end = e;
	out[(*n)++] = x;
}

static bool vmas_valid(const struct ml_range *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].start >= v[i].end || (i && v[i - 1].end > v[i].start))
			return false;
	return true;
}

int ml_hotrange_update(struct ml_hotrange *h, const struct ml_range *vmas, size_t nvmas,
		       const struct ml_range *written, size_t nwritten)
{
	struct ml_hotrange_ext *old, *out;
	size_t ne, nw, n = 0, i = 0, j = 0, out_cap;
	uint64_t pos = 0;

	if (!vmas_valid(vmas, nvmas))
		return -EINVAL;
	if (prepare_written(h, vmas, nvmas, written, nwritten, &nw))
		return -ENOMEM;
	if (grow((void **)&h->vmas, &h->vmas_cap, nvmas, sizeof(*h->vmas)))
		return -ENOMEM;
	old = clip_old(h, vmas, nvmas, &ne);
	if (!old)
		return -ENOMEM;
	/* every boundary of either list can split a segment of the other */
	if (grow((void **)&h->spare, &h->spare_cap, 2 * (ne + nw) + 1, sizeof(*h->spare)))
		return -ENOMEM;
	out = h->spare;
	const struct ml_range *w = h->w;

	while (i < ne || j < nw) {
		uint64_t es = i < ne ? (old[i].start > pos ? old[i].start : pos) : UINT64_MAX;
		uint64_t ws = j < nw ? (w[j].start > pos ? w[j].start : pos) : UINT64_MAX;
		uint64_t s = es < ws ? es : ws, e;

		if (es == s && ws == s) {
			e = old[i].end < w[j].end ? old[i].end : w[j].end;
			emit(out, &n, s, e, step(h, &old[i], true));
		} else if (es == s) {
			e = old[i].end < ws ? old[i].end : ws;
			emit(out, &n, s, e, step(h, &old[i], false));
		} else {
			e = w[j].end < es ? w[j].end : es;
			emit(out, &n, s, e, step(h, NULL, true));
		}
		pos = e;
		if (i < ne && old[i].end <= pos)
			i++;
		if (j < nw && w[j].end <= pos)
			j++;
	}
	out_cap = h->spare_cap;
	h->spare = h->e; /* the old extents' buffer is the next update's */
	h->spare_cap = h->cap;
	h->e = out;
	h->n = n;
	h->cap = out_cap;
	if (nvmas)
		memcpy(h->vmas, vmas, nvmas * sizeof(*vmas));
	h->nvmas = nvmas;
	return 0;
}

struct gap {
	uint64_t cost;
	size_t idx; /* between run idx and run idx + 1 */
	bool cross; /* the runs are in different VMAs */
};

/* Within a VMA first, then the cheapest, then the lowest address. */
static int gap_order(const void *a, const void *b)
{
	const struct gap *x = a, *y = b;

	if (x->cross != y->cross)
		return x->cross ? 1 : -1;
	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The maximal runs of hot pages, into @runs (room for h->n). */
static size_t hot_runs(const struct ml_hotrange *h, struct ml_range *runs)
{
	size_t n = 0;

	for (size_t i = 0; i < h->n; i++) {
		if (!h->e[i].hot)
			continue;
		if (n && runs[n - 1].end == h->e[i].start)
			runs[n - 1].end = h->e[i].end;
		else
			runs[n++] = (struct ml_range){ h->e[i].start, h->e[i].end };
	}
	return n;
}

/* Move heap[i] down a min-heap (by gap_order) of @n gaps. */
static void sift_down(struct gap *heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && gap_order(&heap[l], &heap[m]) < 0)
			m = l;
		if (l + 1 < n && gap_order(&heap[l + 1], &heap[m]) < 0)
			m = l + 1;
		if (m == i)
			return;
		struct gap t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/*
 * Mark the gaps to close so that at most h->max_ranges ranges remain: all
 * but the max_ranges - 1 last in gap_order (the ones kept open). Those are
 * found with a min-heap of that size, so a profile with tens of thousands
 * of runs costs n log(max_ranges), not a sort of every gap.
 */
static int choose_gaps(const struct ml_hotrange *h, const struct ml_range *runs, size_t n,
		       bool *close, uint64_t *cost)
{
	size_t keep = h->max_ranges - 1, used = 0;
	struct gap *heap = malloc((keep + 1) * sizeof(*heap));

	if (!heap)
		return -ENOMEM;
	for (size_t k = 0; k + 1 < n; k++) {
		struct gap g = {
			.cost = runs[k + 1].start - runs[k].end,
			.idx = k,
			.cross = vma_of(h->vmas, h->nvmas, runs[k].end - 1) !=
				 vma_of(h->vmas, h->nvmas, runs[k + 1].start),
		};

		close[k] = true;
		*cost += g.cost;
		if (!keep)
			continue;
		if (used < keep) { /* fill, then heapify once full */
			heap[used++] = g;
			if (used == keep)
				for (size_t i = keep / 2 + 1; i-- > 0;)
					sift_down(heap, keep, i);
		} else if (gap_order(&g, &heap[0]) > 0) {
			heap[0] = g;
			sift_down(heap, keep, 0);
		}
	}
	for (size_t i = 0; i < used; i++) { /* the kept gaps stay open */
		close[heap[i].idx] = false;
		*cost -= heap[i].cost;
	}
	free(heap);
	return 0;
}

int ml_hotrange_get(const struct ml_hotrange *h, struct ml_hotrange_set *out)
{
	struct ml_range *runs = malloc((h->n + 1) * sizeof(*runs));
	bool *close = NULL;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!runs)
		return -ENOMEM;
	n = hot_runs(h, runs);
	out->unmerged = n;
	out->r = malloc((n + 1) * sizeof(*out->r));
	close = calloc(n + 1, sizeof(*close));
	if (!out->r || !close ||
	    (n > h->max_ranges && choose_gaps(h, runs, n, close, &out->merge_cost_bytes))) {
		free(runs);
		free(close);
		ml_hotrange_set_free(out);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t pages = (runs[k].end - runs[k].start) / PG;

		out->hot_bytes += runs[k].end - runs[k].start;
		if (k && close[k - 1]) {
			out->r[out->n - 1].end = runs[k].end;
			out->r[out->n - 1].hot_pages += pages;
		} else {
			out->r[out->n++] =
				(struct ml_hotrange_range){ runs[k].start, runs[k].end, pages, 0 };
		}
	}
	free(runs);
	free(close);
	return 0;
}

void ml_hotrange_set_free(struct ml_hotrange_set *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

int ml_hotrange_set_copy(struct ml_hotrange_set *dst, const struct ml_hotrange_set *src)
{
	*dst = *src;
	dst->r = NULL;
	if (!src->n)
		return 0;
	dst->r = malloc(src->n * sizeof(*dst->r));
	if (!dst->r) {
		dst->n = 0;
		return -ENOMEM;
	}
	memcpy(dst->r, src->r, src->n * sizeof(*dst->r));
	return 0;
}

/*
 * The ranges of @a minus those of @b (both sorted, disjoint) into @out
 * (room for na + nb); their number.
 */
static size_t ext_minus(const struct ml_hotrange_ext *a, size_t na, const struct ml_range *b,
			size_t nb, struct ml_hotrange_ext *out)
{
	size_t n = 0, j = 0;

	for (size_t i = 0; i < na; i++) {
		uint64_t s = a[i].start;

		while (j < nb && b[j].end <= s)
			j++;
		for (size_t k = j; k < nb && b[k].start < a[i].end && s < a[i].end; k++) {
			if (b[k].start > s) {
				out[n] = a[i];
				out[n].start = s;
				out[n].end = b[k].start;
				n++;
			}
			if (b[k].end > s)
				s = b[k].end;
		}
		if (s < a[i].end) {
			out[n] = a[i];
			out[n].start = s;
			n++;
		}
	}
	return n;
}

/* @a and @b (sorted, disjoint, not overlapping each other) merged into @out; their number. */
static size_t ext_merge(const struct ml_hotrange_ext *a, size_t na, const struct ml_hotrange_ext *b,
			size_t nb, struct ml_hotrange_ext *out)
{
	size_t n = 0, i = 0, j = 0;

	while (i < na || j < nb) {
		const struct ml_hotrange_ext *x =
			j >= nb || (i < na && a[i].start < b[j].start) ? &a[i++] : &b[j++];

		if (n && out[n - 1].end == x->start && same_state(&out[n - 1], x))
			out[n - 1].end = x->end;
		else
			out[n++] = *x;
	}
	return n;
}

/* @seen clipped to @vmas, into a new array; its number into *out (-1: no memory). */
static struct ml_range *seen_in(const struct ml_range *vmas, size_t nvmas,
				const struct ml_range *seen, size_t nseen, size_t *out)
{
	struct ml_range *c = malloc((nseen + nvmas + 1) * sizeof(*c));
	size_t k = 0, j = 0;

	if (!c)
		return NULL;
	for (size_t i = 0; i < nseen && j < nvmas;) {
		uint64_t s = seen[i].start > vmas[j].start ? seen[i].start : vmas[j].start;
		uint64_t e = seen[i].end < vmas[j].end ? seen[i].end : vmas[j].end;

		if (s < e)
			c[k++] = (struct ml_range){ s, e };
		if (seen[i].end < vmas[j].end)
			i++;
		else
			j++;
	}
	*out = k;
	return c;
}

int ml_hotrange_update_seen(struct ml_hotrange *h, const struct ml_range *vmas, size_t nvmas,
			    const struct ml_range *written, size_t nwritten,
			    const struct ml_range *seen, size_t nseen)
{
	struct ml_hotrange_ext *old, *kept = NULL, *merged = NULL;
	struct ml_range *sv = NULL;
	size_t ne, nk, nsv = 0, n;
	int r = -ENOMEM;

	if (!seen)
		return ml_hotrange_update(h, vmas, nvmas, written, nwritten);
	if (!vmas_valid(vmas, nvmas) || !vmas_valid(seen, nseen))
		return -EINVAL;
	old = clip_old(h, vmas, nvmas, &ne); /* state of memory still mapped */
	if (!old)
		return -ENOMEM;
	sv = seen_in(vmas, nvmas, seen, nseen, &nsv);
	kept = malloc((ne + nsv + 1) * sizeof(*kept));
	if (!sv || !kept)
		goto out;
	nk = ext_minus(old, ne, sv, nsv, kept); /* the pages not watched keep their state */
	r = ml_hotrange_update(h, sv, nsv, written, nwritten);
	if (r)
		goto out;
	merged = malloc((h->n + nk + 1) * sizeof(*merged));
	r = -ENOMEM;
	if (!merged || grow((void **)&h->vmas, &h->vmas_cap, nvmas, sizeof(*h->vmas)))
		goto out;
	n = ext_merge(h->e, h->n, kept, nk, merged);
	free(h->e);
	h->e = merged;
	h->cap = h->n + nk + 1;
	h->n = n;
	merged = NULL;
	if (nvmas)
		memcpy(h->vmas, vmas, nvmas * sizeof(*vmas));
	h->nvmas = nvmas;
	r = 0;
out:
	free(merged);
	free(kept);
	free(sv);
	return r;
}
