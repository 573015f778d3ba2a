/* SPDX-License-Identifier: MIT */
/* Internal to the report renderer: chart geometry, axes, number formats. */
#ifndef MEMLENS_REPORT_INT_H
#define MEMLENS_REPORT_INT_H

#include "memlens/report.h"

#define RP_WIDTH 960 /* every chart is this wide (px) */

/* A plot area in px and the data ranges it maps. */
struct plot {
	double x0, y0, w, h;
	double xmin, xmax, ymin, ymax;
};

double mlr_plot_x(const struct plot *p, double x);
double mlr_plot_y(const struct plot *p, double y);

/* Round numbers for ticks: fills up to @max values in [lo, hi]; returns how many. */
int mlr_nice_ticks(double lo, double hi, int max, double *ticks);
/* A nice upper bound >= @v (for axis ranges); 1 for v <= 0. */
double mlr_nice_ceil(double v);
/* "0", "12", "1.5k", "2.3M", "4.1G" */
const char *mlr_fmt_si(double v, char *buf, size_t len);

void mlr_svg_open(struct ml_rbuf *b, const char *cls, int h, const char *title);
void mlr_svg_close(struct ml_rbuf *b);
/* Grid, tick labels and axis titles (with units) around @p. */
void mlr_svg_axes(struct ml_rbuf *b, const struct plot *p, const char *xlabel, const char *ylabel);
void mlr_svg_xaxis(struct ml_rbuf *b, const struct plot *p, const char *xlabel);
void mlr_svg_yaxis(struct ml_rbuf *b, const struct plot *p, const char *ylabel);
/* One legend entry (swatch + text) at x, y. Returns the x after it. */
double mlr_svg_legend(struct ml_rbuf *b, double x, double y, const char *colour, const char *text);
void mlr_svg_text(struct ml_rbuf *b, double x, double y, const char *anchor, const char *cls,
		  const char *text);

/* The heat maps' colour scale: level 0 = nothing written, 1..HEAT_LEVELS. */
#define HEAT_LEVELS 10
#define HEAT_ZERO "#e4e9f0"
int mlr_heat_level(double ratio);
const char *mlr_heat_level_colour(int level);
/* "@what [scale] [tracked, not written]" at x, y; returns the x after it. */
double mlr_heat_scale_legend(struct ml_rbuf *b, double x, double y, const char *what);
/* VMA indices, hot ones first, then by pages written. @idx holds w->nvma. */
void mlr_rank_vmas(const struct ml_rep_writes *w, uint32_t *idx);
/* sizes: ml_fmt_bytes() ("64M", "4K", "1.5M"), the one byte formatter */
#include "memlens/units.h"
/*
 * A byte count read as a double (from a file: untrusted) as ml_fmt_bytes()
 * takes it: NaN and negatives 0, beyond 2^64 the largest count.
 */
static inline uint64_t mlr_bytes_u64(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

/* "512 µs", "1.02 ms", "3.36 s" */
void mlr_fmt_us(double us, char *buf, size_t len);
/* "64M anon", "4.0K data memwrite"; the start address when nameless and @with_addr. */
void mlr_vma_label(const struct ml_rep_vma *v, bool with_addr, char *buf, size_t len);

/* Each section's headline: what its data says, in one line of plain text. */
void mlr_headline_writes(const struct ml_rep_writes *w, char *buf, size_t len);
void mlr_headline_snaps(const struct ml_rep_snaps *s, char *buf, size_t len);
void mlr_headline_faults(const struct ml_rep_faults *f, char *buf, size_t len);
void mlr_headline_migrate(const struct ml_rep_migrate *m, char *buf, size_t len);
void mlr_headline_leaks(const struct ml_rep_leaks *l, char *buf, size_t len);
void mlr_headline_slab(const struct ml_rep_slab *s, const size_t *order, size_t norder, char *buf,
		       size_t len);
void mlr_headline_oom(const struct ml_rep_oom *m, char *buf, size_t len);
/* Pages resident in one snapshot; the snapshot with the most (the first of equals). */
double mlr_snap_resident(const struct ml_rep_snap_point *pt);
size_t mlr_snaps_peak(const struct ml_rep_snaps *s);
/* Slab caches, the ones whose object count changed most first (malloc'ed; NULL: no memory). */
size_t *mlr_slab_order(const struct ml_rep_slab *s, size_t *n);
/* The left edge of fault latency bucket @i: "0µs", "2µs", ..., "1.02ms" */
void mlr_bucket_edge(int i, char *buf, size_t len);
/* <p class="headline">@text</p> */
void mlr_render_headline(struct ml_rbuf *b, const char *text);

/*
 * Rows of @ncols values: consecutive identical rows make one group. @first
 * (nrows + 1 entries) gets each group's first row, then nrows. Returns the
 * number of groups.
 */
int mlr_group_rows(const int *v, int nrows, int ncols, int *first);

int mlr_rp_max_cols(const struct ml_report_opts *o);
int mlr_rp_max_rows(const struct ml_report_opts *o);

void mlr_render_writes(struct ml_rbuf *b, const struct ml_rep_writes *w,
		       const struct ml_report_opts *o);
void mlr_render_ranges(struct ml_rbuf *b, const struct ml_rep_writes *w,
		       const struct ml_report_opts *o);
void mlr_render_snaps(struct ml_rbuf *b, const struct ml_report *r, const struct ml_rep_snaps *s,
		      const struct ml_report_opts *o);
void mlr_render_faults(struct ml_rbuf *b, const struct ml_rep_faults *f);
void mlr_render_migrate(struct ml_rbuf *b, const struct ml_rep_migrate *m);
void mlr_render_leaks(struct ml_rbuf *b, const struct ml_rep_leaks *l);
void mlr_render_slab(struct ml_rbuf *b, const struct ml_rep_slab *s);
void mlr_render_oom(struct ml_rbuf *b, const struct ml_rep_oom *m);
void mlr_render_fault_series(struct ml_rbuf *b, const struct ml_rep_fault_series *fs);
/* The stacked area of resident memory by kind over time (two snapshots or more). */
void mlr_render_snap_area(struct ml_rbuf *b, const struct ml_rep_snaps *s,
			  const struct ml_report_opts *o);
/* Snapshot runs of one command (@n of them, @idx into r->s), side by side. */
void mlr_render_runs(struct ml_rbuf *b, const struct ml_report *r, const size_t *idx, size_t n,
		     const struct ml_report_opts *o);
/* The OOM kills of @pid in @r, as a sentence for its section; "" when none. */
void mlr_oom_note(const struct ml_report *r, long pid, char *buf, size_t len);

#endif
