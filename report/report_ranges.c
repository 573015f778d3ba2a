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
#define LABEL_W 100
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

static void add_range(struct slices *s, const struct rep_range *rg, int col)
{
	for (int r = 0; r < s->nrows; r++) {
		uint64_t a = slice_start(s, r), z = slice_start(s, r + 1);
		uint64_t lo = rg->start > a ? rg->start : a, hi = rg->end < z ? rg->end : z;

		if (hi > lo)
			s->written[(size_t)r * s->ncols + col] += (double)(hi - lo) / UNIT;
	}
}

static int slices_build(struct slices *s, const struct rep_writes *w, const struct rep_vma *v,
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
		const struct rep_range *rg = &w->range[i];

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
	return ml_heat_level(s->written[(size_t)r * s->ncols + c] / (pages * s->nint[c]));
}

static void slices_draw(struct rbuf *b, const struct slices *s, const struct plot *p, double rowh)
{
	double cw = p->w / s->ncols;
	char off[16];

	for (int r = 0; r < s->nrows; r++) {
		double y = p->y0 + r * rowh;

		for (int c = 0, e; c < s->ncols; c = e) {
			int l = slice_level(s, r, c);

			for (e = c + 1; e < s->ncols && slice_level(s, r, e) == l;)
				e++;
			ml_rb_printf(b,
				     "<rect class=\"cell\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				     "height=\"%.1f\" fill=\"%s\"/>\n",
				     p->x0 + c * cw, y, (e - c) * cw, rowh - 1,
				     ml_heat_level_colour(l));
		}
		if (r % 2 == 0 || s->nrows <= 8) {
			if (r)
				ml_fmt_size((double)(slice_start(s, r) - s->start), off,
					    sizeof(off));
			else
				snprintf(off, sizeof(off), "0");
			ml_rb_printf(b,
				     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
				     "class=\"vma\">+%s</text>\n",
				     p->x0 - 6, y + rowh / 2 + 3, off);
		}
	}
}

static void render_one(struct rbuf *b, const struct rep_writes *w, const struct rep_vma *v,
		       const struct report_opts *o)
{
	double t0 = w->iv[0].t_ms - w->iv[0].interval_s * 1000, t1 = w->iv[w->niv - 1].t_ms;
	int ncols = (int)w->niv < ml_rp_max_cols(o) ? (int)w->niv : ml_rp_max_cols(o);
	struct plot p = { .x0 = LABEL_W, .y0 = 30, .w = RP_WIDTH - LABEL_W - 20 };
	char title[160], size[16], slice[16];
	struct slices s;
	double rowh;

	if (slices_build(&s, w, v, ncols))
		goto out;
	rowh = s.nrows <= 8 ? 20 : 13;
	p.h = s.nrows * rowh;
	p.xmax = (t1 > t0 ? t1 - t0 : 1) / 1000;
	ml_fmt_size((double)(v->end - v->start), size, sizeof(size));
	ml_fmt_size((double)(v->end - v->start) / s.nrows, slice, sizeof(slice));
	snprintf(title, sizeof(title), "inside %s %s at 0x%llx: %d slices of %s each", size,
		 ml_report_kind_label(v->kind), (unsigned long long)v->start, s.nrows, slice);
	ml_svg_open(b, "ranges", (int)(p.h + 110), title);
	ml_svg_text(b, p.x0, 16, "start", "axis", title);
	slices_draw(b, &s, &p, rowh);
	ml_rb_printf(b,
		     "<text class=\"axis\" transform=\"translate(16 %.1f) rotate(-90)\" "
		     "text-anchor=\"middle\">offset in the VMA</text>\n",
		     p.y0 + p.h / 2);
	ml_svg_xaxis(
		b,
		&(struct plot){
			.x0 = p.x0, .y0 = p.y0, .w = p.w, .h = p.h - 1, .xmin = 0, .xmax = p.xmax },
		"time since the profiler started (s)");
	ml_heat_scale_legend(b, 10, p.y0 + p.h + 66, "written share of the slice:");
	ml_svg_close(b);
out:
	free(s.written);
	free(s.nint);
}

static bool vma_written(const struct rep_writes *w, const struct rep_vma *v)
{
	for (size_t i = 0; i < w->nrange; i++)
		if (w->range[i].end > v->start && w->range[i].start < v->end)
			return true;
	return false;
}

void ml_render_ranges(struct rbuf *b, const struct rep_writes *w, const struct report_opts *o)
{
	uint32_t *idx = calloc(w->nvma + 1, sizeof(*idx));
	int shown = 0;

	if (!idx || !w->niv)
		goto out;
	ml_rank_vmas(w, idx);
	ml_rb_puts(b, "<figure>\n");
	/* the first 64 by rank are enough: the written ones rank first */
	for (size_t i = 0; i < w->nvma && i < 64 && shown < RANGE_VMAS; i++) {
		const struct rep_vma *v = &w->vma[idx[i]];

		if (v->end - v->start < UNIT || !vma_written(w, v))
			continue;
		render_one(b, w, v, o);
		shown++;
	}
	if (!shown)
		ml_rb_puts(b, "<p class=\"note\">no page was written in this run.</p>\n");
	ml_rb_puts(b,
		   "<figcaption>Where inside the most written VMAs the writes went: each row is an "
		   "equal slice of the VMA (offset from its start), each column an interval or a "
		   "group of them; colour: share of the slice's pages written.</figcaption>\n"
		   "</figure>\n");
out:
	free(idx);
}
