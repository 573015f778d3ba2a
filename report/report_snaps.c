// SPDX-License-Identifier: MIT
/* The snapshot section: resident memory by region kind over time and bars per kind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* Stacking order, bottom to top: the program, then libraries, then the rest. */
static const int kind_order[ML_REPORT_KINDS] = {
	ML_VMA_TEXT, ML_VMA_DATA, ML_VMA_BSS,	   ML_VMA_HEAP,		 ML_VMA_STACK,
	ML_VMA_ANON, ML_VMA_SHM,  ML_VMA_FILE,	   ML_VMA_LIB_TEXT,	 ML_VMA_LIB_DATA,
	ML_VMA_VDSO, ML_VMA_VVAR, ML_VMA_VSYSCALL, ML_REPORT_KIND_OTHER,
};

#define C_RESIDENT "#4e79a7"
#define C_SWAPPED "#e15759"
#define C_ABSENT "#d9dde3"
#define C_WRITTEN "#f28e2b"

double mlr_snap_resident(const struct ml_rep_snap_point *pt)
{
	double sum = 0;

	for (int k = 0; k < ML_REPORT_KINDS; k++)
		sum += pt->resident[k];
	return sum;
}

size_t mlr_snaps_peak(const struct ml_rep_snaps *s)
{
	size_t at = 0;

	for (size_t i = 1; i < s->npt; i++)
		if (mlr_snap_resident(&s->pt[i]) > mlr_snap_resident(&s->pt[at]))
			at = i;
	return at;
}

/* The highest snapshot, marked where it is: averaging many down may flatten it. */
static void peak_mark(struct ml_rbuf *b, const struct plot *p, const struct ml_rep_snaps *s)
{
	size_t at = mlr_snaps_peak(s);
	double v = mlr_snap_resident(&s->pt[at]) * s->page_size / 1048576.0;
	double x = mlr_plot_x(p, (s->pt[at].t_ms - s->pt[0].t_ms) / 1000), y = mlr_plot_y(p, v);
	char size[16], text[64];

	ml_fmt_bytes(mlr_bytes_u64(mlr_snap_resident(&s->pt[at]) * s->page_size), size,
		     sizeof(size));
	snprintf(text, sizeof(text), "peak %s at %.1f s", size,
		 (s->pt[at].t_ms - s->pt[0].t_ms) / 1000);
	ml_rb_printf(
		b,
		"<g class=\"peak\" data-pages=\"%.0f\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
		"fill=\"#1d232b\"/>",
		mlr_snap_resident(&s->pt[at]), x, y);
	mlr_svg_text(b, x > p->x0 + p->w - 150 ? x - 8 : x + 8, y - 6 < 12 ? 12 : y - 6,
		     x > p->x0 + p->w - 150 ? "end" : "start", "legend", text);
	ml_rb_puts(b, "</g>\n");
}

struct bins {
	int n;
	double *t; /* seconds since the first snapshot */
	double *v; /* [bin * ML_REPORT_KINDS + kind], MiB */
};

static int bins_build(struct bins *bn, const struct ml_rep_snaps *s, int max)
{
	double mib = s->page_size / 1048576.0;
	int *cnt;

	bn->n = (int)s->npt < max ? (int)s->npt : max;
	bn->t = calloc((size_t)bn->n, sizeof(*bn->t));
	bn->v = calloc((size_t)bn->n * ML_REPORT_KINDS, sizeof(*bn->v));
	cnt = calloc((size_t)bn->n, sizeof(*cnt));
	if (!bn->t || !bn->v || !cnt) {
		free(cnt);
		return -1;
	}
	for (size_t i = 0; i < s->npt; i++) {
		int c = (int)((uint64_t)i * bn->n / s->npt);

		bn->t[c] += (s->pt[i].t_ms - s->pt[0].t_ms) / 1000;
		for (int k = 0; k < ML_REPORT_KINDS; k++)
			bn->v[c * ML_REPORT_KINDS + k] += s->pt[i].resident[k] * mib;
		cnt[c]++;
	}
	for (int c = 0; c < bn->n; c++) {
		bn->t[c] /= cnt[c];
		for (int k = 0; k < ML_REPORT_KINDS; k++)
			bn->v[c * ML_REPORT_KINDS + k] /= cnt[c];
	}
	free(cnt);
	return 0;
}

/* x of bin @c; a single snapshot is drawn as a band across the whole plot */
static double bin_x(const struct plot *p, const struct bins *bn, int c, bool end)
{
	if (bn->n == 1)
		return end ? p->x0 + p->w : p->x0;
	return mlr_plot_x(p, bn->t[c]);
}

static double stack_at(const struct bins *bn, int c, int upto)
{
	double sum = 0;

	for (int i = 0; i < upto; i++)
		sum += bn->v[c * ML_REPORT_KINDS + kind_order[i]];
	return sum;
}

static void area_layer(struct ml_rbuf *b, const struct plot *p, const struct bins *bn, int layer)
{
	int k = kind_order[layer], n = bn->n == 1 ? 2 : bn->n;

	ml_rb_printf(b, "<polygon class=\"area\" data-kind=\"%s\" fill=\"%s\" points=\"",
		     ml_report_kind_label(k), ml_report_kind_colour(k));
	for (int i = 0; i < n; i++) {
		int c = bn->n == 1 ? 0 : i;

		ml_rb_printf(b, "%.1f,%.1f ", bin_x(p, bn, c, i == 1),
			     mlr_plot_y(p, stack_at(bn, c, layer + 1)));
	}
	for (int i = n - 1; i >= 0; i--) {
		int c = bn->n == 1 ? 0 : i;

		ml_rb_printf(b, "%.1f,%.1f ", bin_x(p, bn, c, i == 1),
			     mlr_plot_y(p, stack_at(bn, c, layer)));
	}
	ml_rb_puts(b, "\"/>\n");
}

void mlr_render_snap_area(struct ml_rbuf *b, const struct ml_rep_snaps *s,
			  const struct ml_report_opts *o)
{
	struct plot p = { .x0 = 80, .y0 = 50, .w = RP_WIDTH - 100, .h = 220 };
	struct bins bn = { 0 };
	bool used[ML_REPORT_KINDS] = { false };
	double max = 0, x = p.x0, y = 16;

	if (bins_build(&bn, s, mlr_rp_max_cols(o))) {
		ml_rb_puts(b, "<p class=\"note\">out of memory drawing the resident memory</p>\n");
		goto out;
	}
	for (int c = 0; c < bn.n; c++) {
		double tot = stack_at(&bn, c, ML_REPORT_KINDS);

		max = tot > max ? tot : max;
		for (int k = 0; k < ML_REPORT_KINDS; k++)
			used[k] |= bn.v[c * ML_REPORT_KINDS + k] > 0;
	}
	if (!(max > 0)) {
		ml_rb_puts(b, "<p class=\"note\">resident memory: no page was resident in any "
			      "snapshot.</p>\n");
		goto out;
	}
	p.xmax = bn.n > 1 ? bn.t[bn.n - 1] : 1;
	max = fmax(max, mlr_snap_resident(&s->pt[mlr_snaps_peak(s)]) * s->page_size / 1048576.0);
	p.ymax = mlr_nice_ceil(max);
	mlr_svg_open(b, "stacked", 330, "resident memory by region kind over time");
	for (int l = 0; l < ML_REPORT_KINDS; l++) {
		if (!used[kind_order[l]])
			continue;
		area_layer(b, &p, &bn, l);
		if (x > RP_WIDTH - 120) {
			x = p.x0;
			y += 18;
		}
		x = mlr_svg_legend(b, x, y, ml_report_kind_colour(kind_order[l]),
				   ml_report_kind_label(kind_order[l]));
	}
	mlr_svg_axes(b, &p, bn.n > 1 ? "time since the first snapshot (s)" : "one snapshot",
		     "resident (MiB)");
	if (bn.n > 1)
		peak_mark(b, &p, s);
	mlr_svg_close(b);
out:
	free(bn.t);
	free(bn.v);
}

static void bar_row(struct ml_rbuf *b, double x0, double w, double y, const double *part,
		    const char *const *colours, int nparts, double bytes)
{
	double x = x0;
	char pct[40], size[16];

	for (int i = 0; i < nparts; i++) {
		double pw = part[i] * w;

		if (pw > 0)
			ml_rb_printf(b,
				     "<rect class=\"bar\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
				     "height=\"16\" fill=\"%s\"/>\n",
				     x, y, pw, colours[i]);
		x += pw;
	}
	/* the share, and of how much: 100% of 16K is not 100% of 64M */
	ml_fmt_bytes(mlr_bytes_u64(bytes), size, sizeof(size));
	snprintf(pct, sizeof(pct), "%.1f%% of %s", part[0] * 100, size);
	mlr_svg_text(b, x0 + w + 4, y + 12, "start", "tick", pct);
}

static void pct_axis(struct ml_rbuf *b, double x0, double w, double y, const char *label)
{
	char t[8];

	for (int i = 0; i <= 4; i++) {
		snprintf(t, sizeof(t), "%d%%", i * 25);
		mlr_svg_text(b, x0 + w * i / 4, y + 14, "middle", "tick", t);
		ml_rb_printf(
			b,
			"<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			x0 + w * i / 4, y - 2, x0 + w * i / 4, y + 2);
	}
	mlr_svg_text(b, x0 + w / 2, y + 32, "middle", "axis", label);
}

/* The second panel shows pages written (snapshot --writes), else dirty (--pages). */
static bool have_marked(const struct ml_rep_snaps *s)
{
	return s->have_written || s->have_dirty;
}

static const char *marked_name(const struct ml_rep_snaps *s)
{
	return s->have_written ? "written" : "dirty";
}

static void kinds_row(struct ml_rbuf *b, const struct ml_rep_snaps *s,
		      const struct ml_rep_kind_use *u, const char *label, double y)
{
	static const char *const mem_c[] = { C_RESIDENT, C_SWAPPED, C_ABSENT };
	static const char *const wr_c[] = { C_WRITTEN, C_ABSENT };
	double size = u->size > 0 ? u->size : 1;
	double mem[3] = { u->resident / size, u->swapped / size, 0 };
	double wr[2] = { (s->have_written ? u->written : u->dirty) / size, 0 };

	mem[2] = fmax(0, 1 - mem[0] - mem[1]);
	wr[1] = fmax(0, 1 - wr[0]);
	mlr_svg_text(b, 84, y + 12, "end", "vma", label);
	bar_row(b, 90, 360, y, mem, mem_c, 3, u->size * s->page_size);
	if (have_marked(s))
		bar_row(b, 560, 300, y, wr, wr_c, 2, u->size * s->page_size);
}

static void render_kinds(struct ml_rbuf *b, const struct ml_rep_snaps *s)
{
	struct ml_rep_kind_use tot = { 0 };
	double y = 40, x;
	char head[96];
	int rows = 1;

	for (int k = 0; k < ML_REPORT_KINDS; k++)
		rows += s->last[k].size > 0;
	mlr_svg_open(b, "kinds", 40 + rows * 22 + 70,
		     "in memory and written share per region kind");
	mlr_svg_text(b, 90, 14, "start", "axis", "in memory: share of the region's pages");
	snprintf(head, sizeof(head), "%s: share of the region's pages",
		 s->have_written ? "written in the last cycle" : "dirty (page flag)");
	if (have_marked(s))
		mlr_svg_text(b, 560, 14, "start", "axis", head);
	for (int l = 0; l < ML_REPORT_KINDS; l++) {
		const struct ml_rep_kind_use *u = &s->last[kind_order[l]];

		if (!(u->size > 0))
			continue;
		kinds_row(b, s, u, ml_report_kind_label(kind_order[l]), y);
		tot.size += u->size;
		tot.resident += u->resident;
		tot.swapped += u->swapped;
		tot.written += u->written;
		tot.dirty += u->dirty;
		y += 22;
	}
	kinds_row(b, s, &tot, "total", y);
	y += 26;
	pct_axis(b, 90, 360, y, "% of pages (last snapshot)");
	if (have_marked(s))
		pct_axis(b, 560, 300, y, "% of pages (last snapshot)");
	x = mlr_svg_legend(b, 90, y + 52, C_RESIDENT, "resident");
	x = mlr_svg_legend(b, x, y + 52, C_SWAPPED, "swapped");
	snprintf(head, sizeof(head), "not present / not %s", marked_name(s));
	x = mlr_svg_legend(b, x, y + 52, C_ABSENT, have_marked(s) ? head : "not present");
	if (have_marked(s))
		mlr_svg_legend(b, x, y + 52, C_WRITTEN, marked_name(s));
	mlr_svg_close(b);
}

void mlr_render_snaps(struct ml_rbuf *b, const struct ml_report *r, const struct ml_rep_snaps *s,
		      const struct ml_report_opts *o)
{
	char head[512];

	ml_rb_printf(b, "<section class=\"snapshots\">\n<h2>Memory of pid %ld", s->pid);
	if (s->command[0]) {
		ml_rb_puts(b, ": <code>");
		ml_rb_html(b, s->command);
		ml_rb_puts(b, "</code>");
	}
	ml_rb_puts(b, "</h2>\n<p class=\"src\">from ");
	ml_rb_html(b, s->src);
	ml_rb_puts(b, " (memlens snapshot)</p>\n");
	mlr_headline_snaps(s, head, sizeof(head));
	mlr_render_headline(b, head);
	mlr_oom_note(r, s->pid, head, sizeof(head));
	if (head[0]) {
		ml_rb_puts(b, "<p class=\"oomnote\">");
		ml_rb_html(b, head);
		ml_rb_puts(b, "</p>\n");
	}
	ml_rb_printf(b, "<p class=\"facts\">%zu snapshot%s", s->npt, s->npt == 1 ? "" : "s");
	if (s->npt > 1)
		ml_rb_printf(b, " over %.1f s", (s->pt[s->npt - 1].t_ms - s->pt[0].t_ms) / 1000);
	if (s->cycle_us_sum > 0) {
		char avg[24], max[24];

		mlr_fmt_us(s->cycle_us_sum / s->npt, avg, sizeof(avg));
		mlr_fmt_us(s->cycle_us_max, max, sizeof(max));
		if (s->npt == 1)
			ml_rb_printf(b, "; it took %s", max);
		else
			ml_rb_printf(b, "; one snapshot took %s on average, %s at most", avg, max);
	}
	if (s->stopped_because[0]) {
		ml_rb_puts(b, "; stopped because ");
		ml_rb_html(b, s->stopped_because);
	}
	if (!s->npt) {
		ml_rb_puts(b, ".</p>\n<p class=\"note\">no snapshot lines, only the summary.</p>\n"
			      "</section>\n");
		return;
	}
	ml_rb_puts(b, ".</p>\n");
	if (s->npt < 2) {
		ml_rb_puts(b, "<p class=\"note\">resident memory over time: one snapshot only "
			      "(a line over time needs two or more).</p>\n");
	} else {
		ml_rb_puts(b, "<figure>\n");
		mlr_render_snap_area(b, s, o);
		ml_rb_puts(b, "<figcaption>Resident memory, stacked by region "
			      "kind.</figcaption>\n</figure>\n");
	}
	ml_rb_puts(b, "<figure>\n");
	render_kinds(b, s);
	ml_rb_printf(b,
		     "<figcaption>Per region kind, in the last snapshot: pages in memory, "
		     "swapped out or not present%s.</figcaption>\n</figure>\n",
		     have_marked(s) ? ", and pages written or dirty"
				    : " (snapshot --writes or --pages also counts the pages "
				      "written or dirty)");
	ml_rb_puts(b, "</section>\n");
}
