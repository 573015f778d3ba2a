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
/* "64M", "4.0K" (binary units) */
void ml_fmt_size(double bytes, char *buf, size_t len);

int ml_rp_max_cols(const struct report_opts *o);
int ml_rp_max_rows(const struct report_opts *o);

void ml_render_writes(struct rbuf *b, const struct rep_writes *w, const struct report_opts *o);
void ml_render_ranges(struct rbuf *b, const struct rep_writes *w, const struct report_opts *o);
void ml_render_snaps(struct rbuf *b, const struct rep_snaps *s, const struct report_opts *o);
void ml_render_faults(struct rbuf *b, const struct rep_faults *f);
void ml_render_migrate(struct rbuf *b, const struct rep_migrate *m);

#endif
