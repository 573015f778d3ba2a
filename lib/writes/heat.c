// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/heat.h"

int ml_heat_init(struct ml_heat *h, double threshold, int consecutive)
{
	memset(h, 0, sizeof(*h));
	if (isnan(threshold) || threshold <= 0.0 || threshold > 1.0)
		return -EINVAL;
	if (consecutive < 1 || consecutive > ML_HEAT_WINDOW)
		return -EINVAL;
	h->threshold = threshold;
	h->consecutive = consecutive;
	return 0;
}

void ml_heat_free(struct ml_heat *h)
{
	free(h->s);
	h->s = NULL;
	h->n = h->cap = 0;
}

void ml_heat_reset(struct ml_heat *h)
{
	h->n = 0;
}

static void observe(struct ml_heat *h, struct ml_heat_state *st, const struct ml_heat_sample *sm)
{
	uint64_t total = (sm->end - sm->start) / 4096;
	double ratio = total ? (double)sm->dirty_pages / (double)total : 0.0;

	if (ratio > 1.0)
		ratio = 1.0;
	st->end = sm->end;
	st->dirty_pages = sm->dirty_pages;
	st->ratio = ratio;
	st->ratios[st->head] = ratio;
	st->head = (st->head + 1) % ML_HEAT_WINDOW;
	if (st->count < ML_HEAT_WINDOW)
		st->count++;
	if (ratio > h->threshold) {
		st->consecutive_hot++;
		st->hot = st->consecutive_hot >= h->consecutive;
	} else {
		st->consecutive_hot = 0;
		st->hot = false;
	}
}

int ml_heat_update(struct ml_heat *h, const struct ml_heat_sample *samples, size_t n)
{
	struct ml_heat_state *next;
	size_t i = 0;

	next = calloc(n ? n : 1, sizeof(*next));
	if (!next)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++) {
		const struct ml_heat_sample *sm = &samples[j];

		while (i < h->n && h->s[i].start < sm->start)
			i++; /* gone: dropped */
		if (i < h->n && h->s[i].start == sm->start)
			next[j] = h->s[i++];
		else
			next[j].start = sm->start;
		observe(h, &next[j], sm);
	}
	free(h->s);
	h->s = next;
	h->n = n;
	h->cap = n;
	return 0;
}

const struct ml_heat_state *ml_heat_find(const struct ml_heat *h, uint64_t start)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->s[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < h->n && h->s[lo].start == start ? &h->s[lo] : NULL;
}

size_t ml_heat_hot_count(const struct ml_heat *h)
{
	size_t c = 0;

	for (size_t i = 0; i < h->n; i++)
		c += h->s[i].hot;
	return c;
}

double ml_heat_window_mean(const struct ml_heat_state *s)
{
	double sum = 0;

	for (int i = 0; i < s->count; i++)
		sum += s->ratios[i];
	return s->count ? sum / s->count : 0.0;
}
