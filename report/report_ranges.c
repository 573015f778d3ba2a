// SPDX-License-Identifier: MIT
/*
 * Inside the most written VMAs: which part of each was written when, from the
 * page ranges of `memlens writes --record`. Rows are equal slices of the VMA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define RANGE_VMAS 3 /* VMAs drawn this way */
#define SLICES 16 /* rows per VMA, at most */
#define LABEL_W 150
#define UNIT 4096 /* slices are counted in 4 KiB units whatever the page size */

struct slices {
	int nrows, ncols;
	uint64_t start, pages;
	double *written; /* pages, [row * ncols + col] */
	int *nint; /* intervals per column */
};

static uint64_t slice_start(const struct slices *s, int row)
{
	if (row >= s->nrows)
		return s->start + s->pages * UNIT;
	return s->start + (uint64_t)row * s->pages / (uint64_t)s->nrows * UNIT;
}

static void add_range(struct slices *s, const struct ml_rep_range *rg, int col)
{
	for (int r = 0; r < s->nrows; r++) {
		uint64_t a = slice_start(s, r), z = slice_start(s, r + 1);
		uint64_t lo = rg->start > a ? rg->start : a, hi = rg->end < z ? rg->end : z;

		if (hi > lo)
			s->written[(size_t)r * s->ncols + col] += (double)(hi - lo) / UNIT;
	}
}

static int slices_build(struct slices *s, const struct ml_rep_writes *w, const struct ml_rep_vma *v,
			int ncols)
{
	memset(s, 0, sizeof(*s));
	s->start = v->start;
	s->pages = (v->end - v->start) / UNIT;
	s->nrows = s->pages < SLICES ? (int)s->pages : SLICES;
	s->ncols = ncols;
	if (!s->nrows)
		return -1;
	s->written = calloc((size_t)s->nrows * ncols, sizeof(*s->written));
	s->nint = calloc((size_t)ncols, sizeof(*s->nint));
	if (!s->written || !s->nint)
		return -1;
	for (size_t i = 0; i < w->niv; i++)
		s->nint[(uint64_t)i * ncols / w->niv]++;
	for (size_t i = 0; i < w->nrange; i++) {
		const struct ml_rep_range *rg = &w->range[i];

		if (rg->end > v->start && rg->start < v->end && rg->iv < w->niv)
			add_range(s, rg, (int)((uint64_t)rg->iv * ncols / w->niv));
	}
	return 0;
}

static int slice_level(const struct slices *s, int r, int c)
{
	double pages = (double)(slice_start(s, r + 1) - slice_start(s, r)) / UNIT;

	if (!s->nint[c] || pages <= 0)
		return 0;
	return mlr_heat_level(s->written[(size_t)r * s->ncols + c] / (pages * s->nint[c]));
}

int mlr_group_rows(const int *v, int nrows, int ncols, int *first)
{
	int n = 0;

	for (int r = 0; r < nrows; r++)
		if (!r || memcmp(v + (size_t)r * ncols, v + (size_t)(r - 1) * ncols,
				 (size_t)ncols * sizeof(*v)))
			first[n++] = r;
	first[n] = nrows;
	return n;
}

static void offset_text(const struct slices *s, int r, char *buf, size_t len)
{
	if (r)
		ml_fmt_bytes((double)(slice_start(s, r) - s->start), buf, len);
	else
		snprintf(buf, len, "0");
}

/* One row per group of identical slices, labelled by its first offset (and count). */
static void slices_draw(struct ml_rbuf *b, const struct slices *s, const int *lv, const int *first,
			int ngroups, const struct plot *p, double rowh)
{
	double cw = p->w / s->ncols;
	char off[16], lab[48];

	for (int g = 0; g < ngroups; g++) {
		const int *row = lv + (size_t)first[g] * s->ncols;
		int k = first[g + 1] - first[g];
		double y = p->y0 + g * rowh;

		for (int c = 0, e; c < s->ncols; c = e) {
			for (e = c + 1; e < s->ncols && row[e] == row[c];)
				e++;
			ml_rb_printf(b,
				     "<rect class=\"cell\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				     "height=\"%.1f\" fill=\"%s\"/>\n",
				     p->x0 + c * cw, y, (e - c) * cw, rowh - 1,
				     mlr_heat_level_colour(row[c]));
		}
		if (k == 1 && g % 2 && ngroups > 8)
			continue;
		offset_text(s, first[g], off, sizeof(off));
		if (k > 1)
			snprintf(lab, sizeof(lab), "+%s (%d slices)", off, k);
		else
			snprintf(lab, sizeof(lab), "+%s", off);
		ml_rb_printf(b,
			     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
			     "class=\"vma\">",
			     p->x0 - 6, y + rowh / 2 + 3);
		ml_rb_html(b, lab);
		ml_rb_puts(b, "</text>\n");
	}
}

/* Each slice's level in each column, [row * ncols + col]. */
static int *slice_levels(const struct slices *s)
{
	int *lv = malloc((size_t)s->nrows * s->ncols * sizeof(*lv));

	for (int r = 0; lv && r < s->nrows; r++)
		for (int c = 0; c < s->ncols; c++)
			lv[(size_t)r * s->ncols + c] = slice_level(s, r, c);
	return lv;
}

static void render_one(struct ml_rbuf *b, const struct ml_rep_writes *w, const struct ml_rep_vma *v,
		       const struct ml_report_opts *o, bool legend)
{
	double t0 = w->iv[0].t_ms - w->iv[0].interval_s * 1000, t1 = w->iv[w->niv - 1].t_ms;
	int ncols = (int)w->niv < mlr_rp_max_cols(o) ? (int)w->niv : mlr_rp_max_cols(o);
	struct plot p = { .x0 = LABEL_W, .y0 = 30, .w = RP_WIDTH - LABEL_W - 20 };
	char title[200], lab[96], slice[16];
	int *lv = NULL, first[SLICES + 1], ng;
	struct slices s;
	double rowh;

	if (slices_build(&s, w, v, ncols) || !(lv = slice_levels(&s)))
		goto out;
	ng = mlr_group_rows(lv, s.nrows, s.ncols, first);
	rowh = ng <= 8 ? 20 : 13;
	p.h = ng * rowh;
	p.xmax = (t1 > t0 ? t1 - t0 : 1) / 1000;
	mlr_vma_label(v, false, lab, sizeof(lab));
	ml_fmt_bytes((double)(v->end - v->start) / s.nrows, slice, sizeof(slice));
	snprintf(title, sizeof(title), "inside %s at 0x%llx: %d slices of %s each", lab,
		 (unsigned long long)v->start, s.nrows, slice);
	mlr_svg_open(b, "ranges", (int)(p.h + (legend ? 110 : 72)), title);
	mlr_svg_text(b, p.x0, 16, "start", "axis", title);
	slices_draw(b, &s, lv, first, ng, &p, rowh);
	ml_rb_printf(b,
		     "<text class=\"axis\" transform=\"translate(16 %.1f) rotate(-90)\" "
		     "text-anchor=\"middle\">offset</text>\n",
		     p.y0 + p.h / 2);
	mlr_svg_xaxis(
		b,
		&(struct plot){
			.x0 = p.x0, .y0 = p.y0, .w = p.w, .h = p.h - 1, .xmin = 0, .xmax = p.xmax },
		"time since the profiler started (s)");
	if (legend)
		mlr_heat_scale_legend(b, 10, p.y0 + p.h + 66, "written share of the slice:");
	mlr_svg_close(b);
out:
	free(lv);
	free(s.written);
	free(s.nint);
}

static bool vma_written(const struct ml_rep_writes *w, const struct ml_rep_vma *v)
{
	for (size_t i = 0; i < w->nrange; i++)
		if (w->range[i].end > v->start && w->range[i].start < v->end)
			return true;
	return false;
}

void mlr_render_ranges(struct ml_rbuf *b, const struct ml_rep_writes *w,
		       const struct ml_report_opts *o)
{
	uint32_t *idx = calloc(w->nvma + 1, sizeof(*idx));
	const struct ml_rep_vma *pick[RANGE_VMAS];
	int n = 0;

	if (!idx || !w->niv)
		goto out;
	mlr_rank_vmas(w, idx);
	/* the first 64 by rank are enough: the written ones rank first */
	for (size_t i = 0; i < w->nvma && i < 64 && n < RANGE_VMAS; i++) {
		const struct ml_rep_vma *v = &w->vma[idx[i]];

		if (v->end - v->start >= UNIT && vma_written(w, v))
			pick[n++] = v;
	}
	if (!n) {
		ml_rb_puts(b, "<p class=\"note\">inside the VMAs: no page was written in this "
			      "run.</p>\n");
		goto out;
	}
	ml_rb_puts(b, "<figure>\n");
	/* one colour scale for them all, under the last */
	for (int i = 0; i < n; i++)
		render_one(b, w, pick[i], o, i + 1 == n);
	ml_rb_puts(
		b,
		"<figcaption>Where inside the most written VMAs the writes went: each row is an "
		"equal slice of the VMA (offset from its start; consecutive slices written alike "
		"share one row), each column an interval or a group of them; colour: share of "
		"the slice's pages written.</figcaption>\n"
		"</figure>\n");
out:
	free(idx);
}
