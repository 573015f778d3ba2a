// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/rangeset.h"

void ml_rangeset_init(struct ml_rangeset *s)
{
	memset(s, 0, sizeof(*s));
}

void ml_rangeset_free(struct ml_rangeset *s)
{
	free(s->r);
	ml_rangeset_init(s);
}

void ml_rangeset_clear(struct ml_rangeset *s)
{
	s->n = 0;
}

static int reserve(struct ml_rangeset *s, size_t n)
{
	if (n <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 16;
	while (cap < n)
		cap *= 2;
	struct ml_range *r = realloc(s->r, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->r = r;
	s->cap = cap;
	return 0;
}

int ml_rangeset_copy(struct ml_rangeset *dst, const struct ml_rangeset *src)
{
	if (reserve(dst, src->n))
		return -ENOMEM;
	if (src->n)
		memcpy(dst->r, src->r, src->n * sizeof(*src->r));
	dst->n = src->n;
	return 0;
}

/* First index whose end >= addr (candidate to merge with or follow addr). */
static size_t lower(const struct ml_rangeset *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].end < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ml_rangeset_add(struct ml_rangeset *s, uint64_t start, uint64_t end)
{
	size_t i, j;

	if (start >= end)
		return 0;
	i = lower(s, start);
	j = i;
	while (j < s->n && s->r[j].start <= end) {
		if (s->r[j].start < start)
			start = s->r[j].start;
		if (s->r[j].end > end)
			end = s->r[j].end;
		j++;
	}
	if (j == i) {
		if (reserve(s, s->n + 1))
			return -ENOMEM;
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
		s->n++;
	} else if (j > i + 1) {
		memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof(*s->r));
		s->n -= j - i - 1;
	}
	s->r[i].start = start;
	s->r[i].end = end;
	return 0;
}

int ml_rangeset_remove(struct ml_rangeset *s, uint64_t start, uint64_t end)
{
	size_t i;

	if (start >= end)
		return 0;
	for (i = lower(s, start + 1); i < s->n && s->r[i].start < end;) {
		struct ml_range *r = &s->r[i];

		if (r->start < start && r->end > end) {
			/* split */
			if (reserve(s, s->n + 1))
				return -ENOMEM;
			r = &s->r[i];
			memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
			s->n++;
			s->r[i].end = start;
			s->r[i + 1].start = end;
			return 0;
		}
		if (r->start < start) {
			r->end = start;
			i++;
		} else if (r->end > end) {
			r->start = end;
			i++;
		} else {
			memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
			s->n--;
		}
	}
	return 0;
}

uint64_t ml_rangeset_overlap(const struct ml_rangeset *s, uint64_t start, uint64_t end)
{
	uint64_t total = 0;

	for (size_t i = lower(s, start + 1); i < s->n && s->r[i].start < end; i++) {
		uint64_t a = s->r[i].start > start ? s->r[i].start : start;
		uint64_t b = s->r[i].end < end ? s->r[i].end : end;

		if (b > a)
			total += b - a;
	}
	return total;
}

bool ml_rangeset_covers(const struct ml_rangeset *s, uint64_t start, uint64_t end)
{
	return start >= end || ml_rangeset_overlap(s, start, end) == end - start;
}

bool ml_rangeset_intersects(const struct ml_rangeset *s, uint64_t start, uint64_t end)
{
	return start < end && ml_rangeset_overlap(s, start, end) > 0;
}

int ml_rangeset_gaps(const struct ml_rangeset *s, uint64_t start, uint64_t end,
		     int (*fn)(uint64_t, uint64_t, void *), void *arg)
{
	uint64_t cur = start;
	int r;

	for (size_t i = lower(s, start + 1); i < s->n && s->r[i].start < end && cur < end; i++) {
		if (s->r[i].start > cur) {
			r = fn(cur, s->r[i].start, arg);
			if (r)
				return r;
		}
		if (s->r[i].end > cur)
			cur = s->r[i].end;
	}
	if (cur < end)
		return fn(cur, end, arg);
	return 0;
}

uint64_t ml_rangeset_bytes(const struct ml_rangeset *s)
{
	uint64_t t = 0;

	for (size_t i = 0; i < s->n; i++)
		t += s->r[i].end - s->r[i].start;
	return t;
}
