// SPDX-License-Identifier: MIT
/* The writes section: a heat map of VMAs over time and the dirty-rate line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* bright blue, in its own lane under the cells: seen under dark and light cells alike */
#define HOT_MARK "#1f78d1"
#define LABEL_W 280
#define LABEL_CHARS 40 /* characters of a row label that fit in LABEL_W */
#define HOT_LANE 7 /* px under each row's cells: a gap, the hot mark, a gap */

struct heat {
	int nrows, ncols;
	uint32_t *rows; /* vma index of each row */
	float *sum; /* [row * ncols + col] */
	int *cnt;
	bool *hot;
};

static int cmp_addr(const void *a, const void *b, void *arg)
{
	const struct ml_rep_writes *w = arg;
	const struct ml_rep_vma *x = &w->vma[*(const uint32_t *)a];
	const struct ml_rep_vma *y = &w->vma[*(const uint32_t *)b];

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The most written VMAs (hot ones first), shown in address order. */
static int pick_rows(const struct ml_rep_writes *w, int max, uint32_t *rows)
{
	int n;

	mlr_rank_vmas(w, rows);
	n = (int)w->nvma < max ? (int)w->nvma : max;
	qsort_r(rows, (size_t)n, sizeof(*rows), cmp_addr, (void *)w);
	return n;
}

static void heat_free(struct heat *h)
{
	free(h->rows);
	free(h->sum);
	free(h->cnt);
	free(h->hot);
}

static int heat_build(struct heat *h, const struct ml_rep_writes *w, const struct ml_report_opts *o)
{
	size_t cells;
	int *vrow;

	memset(h, 0, sizeof(*h));
	h->ncols = (int)w->niv < mlr_rp_max_cols(o) ? (int)w->niv : mlr_rp_max_cols(o);
	h->rows = calloc(w->nvma + 1, sizeof(*h->rows));
	vrow = malloc((w->nvma + 1) * sizeof(*vrow));
	if (!h->rows || !vrow)
		goto fail;
	h->nrows = pick_rows(w, mlr_rp_max_rows(o), h->rows);
	cells = (size_t)h->nrows * (size_t)h->ncols + 1;
	h->sum = calloc(cells, sizeof(*h->sum));
	h->cnt = calloc(cells, sizeof(*h->cnt));
	h->hot = calloc(cells, sizeof(*h->hot));
	if (!h->sum || !h->cnt || !h->hot)
		goto fail;
	for (size_t i = 0; i < w->nvma; i++)
		vrow[i] = -1;
	for (int r = 0; r < h->nrows; r++)
		vrow[h->rows[r]] = r;
	for (size_t i = 0; i < w->ncell; i++) {
		const struct ml_rep_cell *c = &w->cell[i];
		int r = vrow[c->vma];
		size_t k;

		if (r < 0)
			continue;
		/* columns group consecutive intervals: the profiler ticks regularly */
		k = (size_t)r * h->ncols + (size_t)((uint64_t)c->iv * h->ncols / w->niv);
		h->sum[k] += c->ratio;
		h->cnt[k]++;
		h->hot[k] |= c->hot;
	}
	free(vrow);
	return 0;
fail:
	free(vrow);
	heat_free(h);
	return -1;
}

/* -1: VMA absent; 0: tracked, not written; 1..HEAT_LEVELS */
static int cell_level(const struct heat *h, size_t k)
{
	if (!h->cnt[k])
		return -1;
	return mlr_heat_level(h->sum[k] / h->cnt[k]);
}

static void heat_row(struct ml_rbuf *b, const struct heat *h, int r, const struct plot *p,
		     double rowh)
{
	double cw = p->w / h->ncols, y = p->y0 + r * rowh;
	size_t base = (size_t)r * h->ncols;
	int c = 0;

	while (c < h->ncols) {
		int l = cell_level(h, base + c), e = c + 1;

		while (e < h->ncols && cell_level(h, base + e) == l)
			e++;
		if (l >= 0)
			ml_rb_printf(b,
				     "<rect class=\"cell\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				     "height=\"%.1f\" fill=\"%s\"/>\n",
				     p->x0 + c * cw, y, (e - c) * cw, rowh - HOT_LANE,
				     mlr_heat_level_colour(l));
		c = e;
	}
	for (c = 0; c < h->ncols; c++) {
		int e = c;

		if (!h->hot[base + c])
			continue;
		while (e < h->ncols && h->hot[base + e])
			e++;
		ml_rb_printf(
			b,
			"<rect class=\"hot\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"4\" "
			"fill=\"%s\"/>\n",
			p->x0 + c * cw, y + rowh - HOT_LANE + 1.5, (e - c) * cw, HOT_MARK);
		c = e;
	}
}

static void heat_label(struct ml_rbuf *b, const struct ml_rep_vma *v, double y, double rowh)
{
	char text[96];

	mlr_vma_label(v, true, text, sizeof(text));
	/* the label column holds about 40 characters; the full path is in the title */
	if (strlen(text) > LABEL_CHARS)
		snprintf(text + LABEL_CHARS - 1, sizeof(text) - (LABEL_CHARS - 1), "…");
	ml_rb_printf(b,
		     "<rect class=\"swatch\" x=\"4\" y=\"%.1f\" width=\"10\" height=\"%.1f\" "
		     "fill=\"%s\"/>\n",
		     y, rowh - HOT_LANE, ml_report_kind_colour(v->kind));
	/* the full path and the address range on hover */
	ml_rb_printf(b, "<text x=\"18\" y=\"%.1f\" text-anchor=\"start\" class=\"vma%s\"><title>",
		     y + (rowh - HOT_LANE) / 2 + 4, v->hot_ever ? " hotvma" : "");
	ml_rb_html(b, v->path ? v->path : ml_report_kind_label(v->kind));
	ml_rb_printf(b, " 0x%llx-0x%llx</title>", (unsigned long long)v->start,
		     (unsigned long long)v->end);
	ml_rb_html(b, text);
	ml_rb_puts(b, "</text>\n");
}

static void heat_legend(struct ml_rbuf *b, double y)
{
	mlr_heat_scale_legend(b, 10, y, "written ratio (mean per cell):");
	mlr_svg_legend(b, 10, y + 36, HOT_MARK,
		       "under a row: the VMA was hot then (bold label: hot at some time)");
}

static void render_heat(struct ml_rbuf *b, const struct ml_rep_writes *w,
			const struct ml_report_opts *o)
{
	double t0 = w->iv[0].t_ms - w->iv[0].interval_s * 1000, t1 = w->iv[w->niv - 1].t_ms;
	struct plot p = { .x0 = LABEL_W, .y0 = 10, .w = RP_WIDTH - LABEL_W - 20 };
	struct heat h;
	double rowh;
	char title[160];

	if (heat_build(&h, w, o)) {
		ml_rb_puts(b, "<p class=\"note\">out of memory drawing the heat map</p>\n");
		return;
	}
	/* each row: the cells, then a lane under them for the hot mark */
	rowh = h.nrows <= 8 ? 24 : h.nrows <= 20 ? 20 : 16;
	p.h = h.nrows * rowh;
	p.xmin = 0;
	p.xmax = (t1 > t0 ? t1 - t0 : 1) / 1000;
	snprintf(title, sizeof(title), "written ratio of each VMA over time, pid %ld", w->pid);
	mlr_svg_open(b, "heatmap", (int)(p.h + 124), title);
	for (int r = 0; r < h.nrows; r++) {
		heat_row(b, &h, r, &p, rowh);
		heat_label(b, &w->vma[h.rows[r]], p.y0 + r * rowh, rowh);
	}
	mlr_svg_xaxis(b, &p, "time since the profiler started (s)");
	heat_legend(b, p.y0 + p.h + 62);
	mlr_svg_close(b);
	if (w->nvma > (size_t)h.nrows)
		ml_rb_printf(
			b,
			"<p class=\"note\">%zu more VMAs, never hot and written least, are not "
			"shown.</p>\n",
			w->nvma - (size_t)h.nrows);
	heat_free(&h);
}

/* Mean and maximum of each column's dirty rate, in MiB/s. */
static void rate_points(struct ml_rbuf *b, const struct ml_rep_writes *w, const struct plot *p,
			int ncols, bool use_max, double t0)
{
	size_t i = 0;

	ml_rb_printf(b, "<polyline class=\"%s\" points=\"", use_max ? "rate-max" : "rate");
	for (int c = 0; c < ncols; c++) {
		double sum = 0, max = 0, t = 0;
		size_t n = 0;

		for (; i < w->niv && (uint64_t)i * ncols / w->niv == (uint64_t)c; i++, n++) {
			double v = w->iv[i].rate_pps * w->page_size / 1048576.0;

			sum += v;
			max = v > max ? v : max;
			t += w->iv[i].t_ms;
		}
		if (n)
			ml_rb_printf(b, "%.1f,%.1f ", mlr_plot_x(p, (t / n - t0) / 1000),
				     mlr_plot_y(p, use_max ? max : sum / n));
	}
	ml_rb_puts(b, "\"/>\n");
}

static void render_rate(struct ml_rbuf *b, const struct ml_rep_writes *w,
			const struct ml_report_opts *o)
{
	double t0 = w->iv[0].t_ms - w->iv[0].interval_s * 1000, t1 = w->iv[w->niv - 1].t_ms;
	struct plot p = { .x0 = 80, .y0 = 30, .w = RP_WIDTH - 100, .h = 170 };
	int ncols = (int)w->niv < mlr_rp_max_cols(o) ? (int)w->niv : mlr_rp_max_cols(o);
	double max = 0, x = p.x0;

	for (size_t i = 0; i < w->niv; i++)
		if (w->iv[i].rate_pps * w->page_size / 1048576.0 > max)
			max = w->iv[i].rate_pps * w->page_size / 1048576.0;
	p.xmax = (t1 > t0 ? t1 - t0 : 1) / 1000;
	p.ymax = mlr_nice_ceil(max);
	mlr_svg_open(b, "rate", 250, "dirty rate over time");
	mlr_svg_axes(b, &p, "time since the profiler started (s)", "dirty rate (MiB/s)");
	if (ncols < (int)w->niv) {
		rate_points(b, w, &p, ncols, true, t0);
		x = mlr_svg_legend(b, x, 16, "#9ecae1", "maximum of the intervals in a point");
	}
	rate_points(b, w, &p, ncols, false, t0);
	mlr_svg_legend(b, x, 16, "#08519c", ncols < (int)w->niv ? "mean" : "written per second");
	for (size_t i = 0; ncols == (int)w->niv && i < w->niv && w->niv <= 60; i++)
		ml_rb_printf(b, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>\n",
			     mlr_plot_x(&p, (w->iv[i].t_ms - t0) / 1000),
			     mlr_plot_y(&p, w->iv[i].rate_pps * w->page_size / 1048576.0));
	mlr_svg_close(b);
}

static bool any_written(const struct ml_rep_writes *w)
{
	for (size_t i = 0; i < w->niv; i++)
		if (w->iv[i].rate_pps > 0 || w->iv[i].dirty_pages > 0)
			return true;
	return false;
}

static void writes_facts(struct ml_rbuf *b, const struct ml_rep_writes *w)
{
	char s1[32];

	ml_rb_printf(b, "<p class=\"facts\">%zu interval%s, %zu VMA%s tracked", w->niv,
		     w->niv == 1 ? "" : "s", w->nvma, w->nvma == 1 ? "" : "s");
	if (w->have_summary) {
		ml_fmt_bytes_words(mlr_bytes_u64(w->cumulative_dirty_bytes), s1, sizeof(s1));
		ml_rb_printf(b, "; written in all: %s; stopped because ", s1);
		ml_rb_html(b, w->stopped_because);
	}
	ml_rb_puts(b, ".</p>\n");
}

void mlr_render_writes(struct ml_rbuf *b, const struct ml_rep_writes *w,
		       const struct ml_report_opts *o)
{
	char head[512];

	ml_rb_printf(
		b, "<section class=\"writes\">\n<h2>Writes of pid %ld</h2>\n<p class=\"src\">from ",
		w->pid);
	ml_rb_html(b, w->src);
	if (w->also) {
		ml_rb_puts(b, " and ");
		ml_rb_html(b, w->also);
	}
	ml_rb_puts(b, " (memlens writes)</p>\n");
	mlr_headline_writes(w, head, sizeof(head));
	mlr_render_headline(b, head);
	writes_facts(b, w);
	if (!w->niv) {
		ml_rb_puts(b, "<p class=\"note\">no intervals in this input, only the "
			      "summary.</p>\n</section>\n");
		return;
	}
	if (!w->nvma) {
		ml_rb_puts(b, "<p class=\"note\">VMAs over time: no VMA was tracked.</p>\n");
	} else {
		ml_rb_puts(b, "<figure>\n");
		render_heat(b, w, o);
		ml_rb_puts(b, "<figcaption>Each row is a VMA (size, region kind, mapped file or "
			      "start address); each column an interval of the profiler, or a group "
			      "of consecutive intervals when there are many. Colour: share of the "
			      "VMA's pages written in the interval.</figcaption>\n</figure>\n");
	}
	if (!any_written(w)) {
		ml_rb_puts(b, "<p class=\"note\">dirty rate: no page was written in any "
			      "interval.</p>\n");
	} else if (w->niv < 2) {
		char r[32];

		ml_fmt_bytes_words(mlr_bytes_u64(w->iv[0].rate_pps * w->page_size), r, sizeof(r));
		ml_rb_printf(b,
			     "<p class=\"note\">dirty rate: %s/s in the one interval (a line "
			     "over time needs two or more).</p>\n",
			     r);
	} else {
		ml_rb_puts(b, "<figure>\n");
		render_rate(b, w, o);
		ml_rb_puts(b, "<figcaption>Pages written per second, all tracked VMAs "
			      "together.</figcaption>\n</figure>\n");
	}
	if (w->have_ranges)
		mlr_render_ranges(b, w, o);
	ml_rb_puts(b, "</section>\n");
}
