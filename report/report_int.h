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

double ml_plot_x(const struct plot *p, double x);
double ml_plot_y(const struct plot *p, double y);

/* Round numbers for ticks: fills up to @max values in [lo, hi]; returns how many. */
int ml_nice_ticks(double lo, double hi, int max, double *ticks);
/* A nice upper bound >= @v (for axis ranges); 1 for v <= 0. */
double ml_nice_ceil(double v);
/* "0", "12", "1.5k", "2.3M", "4.1G" */
const char *ml_fmt_si(double v, char *buf, size_t len);

void ml_svg_open(struct rbuf *b, const char *cls, int h, const char *title);
void ml_svg_close(struct rbuf *b);
/* Grid, tick labels and axis titles (with units) around @p. */
void ml_svg_axes(struct rbuf *b, const struct plot *p, const char *xlabel, const char *ylabel);
void ml_svg_xaxis(struct rbuf *b, const struct plot *p, const char *xlabel);
void ml_svg_yaxis(struct rbuf *b, const struct plot *p, const char *ylabel);
/* One legend entry (swatch + text) at x, y. Returns the x after it. */
double ml_svg_legend(struct rbuf *b, double x, double y, const char *colour, const char *text);
void ml_svg_text(struct rbuf *b, double x, double y, const char *anchor, const char *cls,
		 const char *text);

/* The heat maps' colour scale: level 0 = nothing written, 1..HEAT_LEVELS. */
#define HEAT_LEVELS 10
#define HEAT_ZERO "#e4e9f0"
int ml_heat_level(double ratio);
const char *ml_heat_level_colour(int level);
/* "@what [scale] [tracked, not written]" at x, y; returns the x after it. */
double ml_heat_scale_legend(struct rbuf *b, double x, double y, const char *what);
/* VMA indices, hot ones first, then by pages written. @idx holds w->nvma. */
void ml_rank_vmas(const struct rep_writes *w, uint32_t *idx);
/* sizes: ml_fmt_bytes() ("64M", "4K", "1.5M"), the one byte formatter */
#include "memlens/units.h"

/* "512 µs", "1.02 ms", "3.36 s" */
void ml_fmt_us(double us, char *buf, size_t len);
/* The mapped file's basename or a named anonymous VMA's name; NULL: none. */
const char *ml_vma_name(const struct rep_vma *v);
/* "64M anon", "4.0K data memwrite"; the start address when nameless and @with_addr. */
void ml_vma_label(const struct rep_vma *v, bool with_addr, char *buf, size_t len);

/* Each section's headline: what its data says, in one line of plain text. */
void ml_headline_writes(const struct rep_writes *w, char *buf, size_t len);
void ml_headline_snaps(const struct rep_snaps *s, char *buf, size_t len);
void ml_headline_faults(const struct rep_faults *f, char *buf, size_t len);
void ml_headline_migrate(const struct rep_migrate *m, char *buf, size_t len);
void ml_headline_leaks(const struct rep_leaks *l, char *buf, size_t len);
void ml_headline_slab(const struct rep_slab *s, const size_t *order, size_t norder, char *buf,
		      size_t len);
void ml_headline_oom(const struct rep_oom *m, char *buf, size_t len);
/* Pages resident in one snapshot; the snapshot with the most (the first of equals). */
double ml_snap_resident(const struct rep_snap_point *pt);
size_t ml_snaps_peak(const struct rep_snaps *s);
/* Slab caches, the ones whose object count changed most first (malloc'ed; NULL: no memory). */
size_t *ml_slab_order(const struct rep_slab *s, size_t *n);
/* The left edge of fault latency bucket @i: "0µs", "2µs", ..., "1.02ms" */
void ml_bucket_edge(int i, char *buf, size_t len);
/* <p class="headline">@text</p> */
void ml_render_headline(struct rbuf *b, const char *text);

/*
 * Rows of @ncols values: consecutive identical rows make one group. @first
 * (nrows + 1 entries) gets each group's first row, then nrows. Returns the
 * number of groups.
 */
int ml_group_rows(const int *v, int nrows, int ncols, int *first);

int ml_rp_max_cols(const struct report_opts *o);
int ml_rp_max_rows(const struct report_opts *o);

void ml_render_writes(struct rbuf *b, const struct rep_writes *w, const struct report_opts *o);
void ml_render_ranges(struct rbuf *b, const struct rep_writes *w, const struct report_opts *o);
void ml_render_snaps(struct rbuf *b, const struct report *r, const struct rep_snaps *s,
		     const struct report_opts *o);
void ml_render_faults(struct rbuf *b, const struct rep_faults *f);
void ml_render_migrate(struct rbuf *b, const struct rep_migrate *m);
void ml_render_leaks(struct rbuf *b, const struct rep_leaks *l);
void ml_render_slab(struct rbuf *b, const struct rep_slab *s);
void ml_render_oom(struct rbuf *b, const struct rep_oom *m);
void ml_render_fault_series(struct rbuf *b, const struct rep_fault_series *fs);
/* The stacked area of resident memory by kind over time (two snapshots or more). */
void ml_render_snap_area(struct rbuf *b, const struct rep_snaps *s, const struct report_opts *o);
/* Snapshot runs of one command (@n of them, @idx into r->s), side by side. */
void ml_render_runs(struct rbuf *b, const struct report *r, const size_t *idx, size_t n,
		    const struct report_opts *o);
/* The OOM kills of @pid in @r, as a sentence for its section; "" when none. */
void ml_oom_note(const struct report *r, long pid, char *buf, size_t len);

#endif
