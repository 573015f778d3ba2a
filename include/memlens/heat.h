/* SPDX-License-Identifier: MIT */
/*
 * Per-VMA heat classifier: a sliding window of written ratios
 * per VMA, keyed by start address. A VMA is hot once its ratio has been
 * above the threshold for `consecutive` intervals in a row, and turns cold
 * the first interval it is not. State of VMAs that disappear is dropped.
 */
#ifndef MEMLENS_HEAT_H
#define MEMLENS_HEAT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEAT_WINDOW 10
#define HEAT_DEFAULT_THRESHOLD 0.3
#define HEAT_DEFAULT_CONSECUTIVE 3

struct heat_state {
	uint64_t start, end;
	double ratios[HEAT_WINDOW]; /* circular */
	int head, count;
	int consecutive_hot;
	bool hot;
	uint64_t dirty_pages; /* last interval */
	double ratio; /* last interval */
};

struct heat_sample {
	uint64_t start, end;
	uint64_t dirty_pages;
};

struct heat {
	double threshold;
	int consecutive;
	struct heat_state *s; /* sorted by start */
	size_t n, cap;
};

/* -EINVAL for a threshold outside (0, 1] or consecutive outside [1, HEAT_WINDOW]. */
int ml_heat_init(struct heat *h, double threshold, int consecutive);
void ml_heat_free(struct heat *h);
void ml_heat_reset(struct heat *h);

/*
 * One interval: @samples (sorted by start) are every VMA tracked now.
 * States of VMAs not in @samples are dropped; new VMAs get fresh state.
 */
int ml_heat_update(struct heat *h, const struct heat_sample *samples, size_t n);

const struct heat_state *ml_heat_find(const struct heat *h, uint64_t start);
size_t ml_heat_hot_count(const struct heat *h);
/* Mean of the ratios in the window. */
double ml_heat_window_mean(const struct heat_state *s);

#pragma GCC visibility pop

#endif
