/* SPDX-License-Identifier: MIT */
/* memlens migrate-model --sweep: hot-range over a grid of -c and --cool. */
#ifndef MEMLENS_MM_SWEEP_H
#define MEMLENS_MM_SWEEP_H

#include <stdbool.h>

#include "memlens/err.h"
#include "memlens/migrate_model.h"

/*
 * Run the model on @t with @base for every -c in {1, 2, 3} and --cool in
 * {1, 2, 3, 5, 8, 1000 (hot to the end)}, print the hot-range results against none (a table, or
 * one JSON object with @json) and the settings with the fewest bytes.
 * An exit status; @err says why when it is not EXIT_OK.
 */
int mm_sweep(const char *file, const struct ml_mm_trace *t, const struct ml_mm_params *base,
	     bool json, struct ml_err *err);

#endif
