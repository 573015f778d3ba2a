/* SPDX-License-Identifier: MIT */
/* Sorted sets of disjoint address ranges [start, end), merged when adjacent. */
#ifndef MEMLENS_RANGESET_H
#define MEMLENS_RANGESET_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ml_range {
	uint64_t start, end;
};

struct ml_rangeset {
	struct ml_range *r;
	size_t n, cap;
};

void ml_rangeset_init(struct ml_rangeset *s);
void ml_rangeset_free(struct ml_rangeset *s);
void ml_rangeset_clear(struct ml_rangeset *s);
int ml_rangeset_copy(struct ml_rangeset *dst, const struct ml_rangeset *src);
/* Add [start, end); merges overlapping and adjacent ranges. -ENOMEM on failure. */
int ml_rangeset_add(struct ml_rangeset *s, uint64_t start, uint64_t end);
/* Remove [start, end) (may split a range). */
int ml_rangeset_remove(struct ml_rangeset *s, uint64_t start, uint64_t end);
/* True when every address of [start, end) is in the set. */
bool ml_rangeset_covers(const struct ml_rangeset *s, uint64_t start, uint64_t end);
/* True when some address of [start, end) is in the set. */
bool ml_rangeset_intersects(const struct ml_rangeset *s, uint64_t start, uint64_t end);
/* Bytes of [start, end) that are in the set. */
uint64_t ml_rangeset_overlap(const struct ml_rangeset *s, uint64_t start, uint64_t end);
/*
 * Call @fn for each maximal sub-range of [start, end) NOT in the set.
 * Stops and returns @fn's value when it is non-zero.
 */
int ml_rangeset_gaps(const struct ml_rangeset *s, uint64_t start, uint64_t end,
		     int (*fn)(uint64_t start, uint64_t end, void *arg), void *arg);
uint64_t ml_rangeset_bytes(const struct ml_rangeset *s);

#pragma GCC visibility pop

#endif
