/* SPDX-License-Identifier: MIT */
/* Presentation of snapshots: JSON Lines, CSV, human tables. */
#ifndef MEMLENS_SNAPSHOT_OUT_H
#define MEMLENS_SNAPSHOT_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memlens/snapshot.h"

/* One "snapshot" object; @t_ms since the first cycle; @d may be NULL. */
void snap_json(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	       int64_t t_ms);
void snap_csv_header(FILE *f);
/* One row per VMA and one "total" row. */
void snap_csv(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	      int64_t t_ms);
/* Per-VMA table, the per-kind table and the mm counters. */
void snap_table(FILE *f, const struct ml_snapshot *s);
/*
 * One line per cycle in periodic human mode, under snap_line_header()
 * (which says the unit); sizes in @div bytes (snap_unit()).
 */
void snap_line_header(FILE *f, const struct ml_snapshot *s, bool written);
void snap_line(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	       int64_t t_ms, uint64_t div, bool written);
uint64_t snap_unit(const struct ml_snapshot *s);
/*
 * One frame of the live view: totals, the per-kind table and the biggest
 * regions by RSS, in @rows lines of @cols columns.
 */
void snap_screen(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d,
		 uint64_t seq, int64_t t_ms, int rows, int cols);

#endif
