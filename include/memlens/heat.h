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

#define ML_HEAT_WINDOW 10
#define ML_HEAT_DEFAULT_THRESHOLD 0.3
#define ML_HEAT_DEFAULT_CONSECUTIVE 3

struct ml_heat_state {
	uint64_t start, end;
	double ratios[ML_HEAT_WINDOW]; /* circular */
	int head, count;
	int consecutive_hot;
	bool hot;
	uint64_t dirty_pages; /* last interval */
	double ratio; /* last interval */
};

struct ml_heat_sample {
	uint64_t start, end;
	uint64_t dirty_pages;
};

struct ml_heat {
	double threshold;
	int consecutive;
	struct ml_heat_state *s; /* sorted by start */
	size_t n, cap;
};

/* -EINVAL for a threshold outside (0, 1] or consecutive outside [1, ML_HEAT_WINDOW]. */
int ml_heat_init(struct ml_heat *h, double threshold, int consecutive);
void ml_heat_free(struct ml_heat *h);
void ml_heat_reset(struct ml_heat *h);

/*
 * One interval: @samples (sorted by start) are every VMA tracked now.
 * States of VMAs not in @samples are dropped; new VMAs get fresh state.
 */
int ml_heat_update(struct ml_heat *h, const struct ml_heat_sample *samples, size_t n);

const struct ml_heat_state *ml_heat_find(const struct ml_heat *h, uint64_t start);
size_t ml_heat_hot_count(const struct ml_heat *h);
/* Mean of the ratios in the window. */
double ml_heat_window_mean(const struct ml_heat_state *s);

#pragma GCC visibility pop

#endif
