// SPDX-License-Identifier: MIT
/* The faults section: fault latency histograms and the busiest processes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define TOP_ROWS 15

/*
 * The edge between log2 buckets @i - 1 and @i, as `memlens faults` fills
 * them: bucket 0 holds faults under 2 µs, bucket i >= 1 those of 2^i µs up
 * to 2^(i+1) µs. Each bar is drawn between its two edges.
 */
void mlr_bucket_edge(int i, char *buf, size_t len)
{
	double us = i ? ldexp(1, i) : 0;

	if (us < 1000)
		snprintf(buf, len, "%.0fµs", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3gms", us / 1000);
	else
		snprintf(buf, len, "%.3gs", us / 1e6);
}

/* The buckets [lo, hi) from the first to the last that holds a fault; hi 0: none. */
static void used_buckets(const double *h, size_t n, size_t *lo, size_t *hi)
{
	for (size_t i = 0; i < n; i++) {
		if (!(h[i] > 0))
			continue;
		if (!*hi || i < *lo)
			*lo = i;
		if (i + 1 > *hi)
			*hi = i + 1;
	}
}

/* Buckets @lo..@hi - 1: the minor and major histograms share them, to compare. */
static void histogram(struct ml_rbuf *b, const double *h, size_t n, size_t lo, size_t hi,
		      const char *what, const char *colour)
{
	struct plot p = { .x0 = 80, .y0 = 30, .w = RP_WIDTH - 100, .h = 150 };
	size_t nb = hi - lo, ulo = 0, uhi = 0;
	double max = 0, bw;
	char lab[24], title[96];
	int every;

	used_buckets(h, n, &ulo, &uhi);
	if (!uhi) {
		ml_rb_printf(b, "<p class=\"note\">%s faults: none were seen.</p>\n", what);
		return;
	}
	for (size_t i = lo; i < hi && i < n; i++)
		max = h[i] > max ? h[i] : max;
	bw = p.w / (double)nb;
	/* edge labels are up to 6 characters: about 44 px each */
	every = bw >= 46 ? 1 : bw >= 23 ? 2 : 4;
	p.ymax = mlr_nice_ceil(max);
	snprintf(title, sizeof(title), "%s fault latency histogram", what);
	mlr_svg_open(b, "hist", 240, title);
	mlr_svg_text(b, p.x0, 16, "start", "axis", title);
	mlr_svg_yaxis(b, &p, "faults (count)");
	for (size_t i = 0; i < nb; i++) {
		double v = lo + i < n ? h[lo + i] : 0, y = mlr_plot_y(&p, v);

		if (!(v > 0))
			continue;
		ml_rb_printf(b,
			     "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			     "height=\"%.1f\" fill=\"%s\"/>\n",
			     p.x0 + i * bw + 1, y, bw > 3 ? bw - 2 : bw, p.y0 + p.h - y, colour);
		/* counts on the bars: the tail is too short to read off the axis */
		if (nb <= 24)
			mlr_svg_text(b, p.x0 + (i + 0.5) * bw, y - 3, "middle", "tick",
				     mlr_fmt_si(v, lab, sizeof(lab)));
	}
	for (size_t i = 0; i <= nb; i++) {
		double x = p.x0 + i * bw;

		if (i % every)
			continue;
		ml_rb_printf(b,
			     "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			     "y2=\"%.1f\"/>\n",
			     x, p.y0 + p.h, x, p.y0 + p.h + 4);
		mlr_bucket_edge((int)(lo + i), lab, sizeof(lab));
		mlr_svg_text(b, x, p.y0 + p.h + 17, "middle", "tick", lab);
	}
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p.x0, p.y0 + p.h, p.x0 + p.w, p.y0 + p.h);
	mlr_svg_text(b, p.x0 + p.w / 2, p.y0 + p.h + 38, "middle", "axis",
		     "fault latency (each bar: from its left edge to its right edge)");
	mlr_svg_close(b);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct ml_rep_fault_row *x = a, *y = b;
	double sx = x->minor + x->major, sy = y->minor + y->major;

	return sx < sy ? 1 : sx > sy ? -1 : x->pid > y->pid ? 1 : x->pid < y->pid ? -1 : 0;
}

static void fault_table(struct ml_rbuf *b, const struct ml_rep_faults *f)
{
	struct ml_rep_fault_row *rows = malloc((f->nrows + 1) * sizeof(*rows));
	size_t n = f->nrows < TOP_ROWS ? f->nrows : TOP_ROWS;

	if (!rows || !f->nrows)
		goto out;
	memcpy(rows, f->rows, f->nrows * sizeof(*rows));
	qsort(rows, f->nrows, sizeof(*rows), cmp_rows);
	ml_rb_puts(b, "<table class=\"faults\"><tr><th>command</th><th>pid</th><th>minor</th>"
		      "<th>major</th><th>retried</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		ml_rb_puts(b, "<tr><td>");
		ml_rb_html(b, rows[i].comm);
		if (rows[i].pid >= 0)
			ml_rb_printf(b, "</td><td>%ld", rows[i].pid);
		else
			ml_rb_puts(b, "</td><td>-");
		ml_rb_printf(b, "</td><td>%.0f</td><td>%.0f</td><td>", rows[i].minor,
			     rows[i].major);
		if (isnan(rows[i].retried))
			ml_rb_puts(b, "-</td></tr>\n");
		else
			ml_rb_printf(b, "%.0f</td></tr>\n", rows[i].retried);
	}
	ml_rb_puts(b, "</table>\n");
	if (f->nrows > n)
		ml_rb_printf(b, "<p class=\"note\">%zu more processes not shown.</p>\n",
			     f->nrows - n);
out:
	free(rows);
}

void mlr_render_faults(struct ml_rbuf *b, const struct ml_rep_faults *f)
{
	size_t lo = 0, hi = 0;
	char head[512];

	ml_rb_puts(b, "<section class=\"faults\">\n<h2>Page faults</h2>\n<p class=\"src\">from ");
	ml_rb_html(b, f->src);
	ml_rb_puts(b, " (memlens faults");
	if (f->mode[0]) {
		ml_rb_puts(b, ", ");
		ml_rb_html(b, f->mode);
		ml_rb_puts(b, " mode");
	}
	ml_rb_puts(b, ")</p>\n");
	mlr_headline_faults(f, head, sizeof(head));
	mlr_render_headline(b, head);
	ml_rb_puts(b, "<figure>\n");
	used_buckets(f->minor, f->nminor, &lo, &hi);
	used_buckets(f->major, f->nmajor, &lo, &hi);
	histogram(b, f->minor, f->nminor, lo, hi, "minor", "#4e79a7");
	histogram(b, f->major, f->nmajor, lo, hi, "major", "#e15759");
	ml_rb_puts(b, "<figcaption>How long page faults took, in buckets that double: under "
		      "2 µs, 2 to 4 µs, 4 to 8 µs, and so on.</figcaption>\n</figure>\n");
	fault_table(b, f);
	ml_rb_puts(b, "</section>\n");
}
