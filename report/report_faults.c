// SPDX-License-Identifier: MIT
/* The faults section: fault latency histograms and the busiest processes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define TOP_ROWS 15

/* Lower bound of log2 bucket @i, in µs/ms/s: bucket 0 is "< 2 µs". */
static void bucket_label(int i, char *buf, size_t len)
{
	double us = ldexp(1, i);

	if (i == 0)
		snprintf(buf, len, "<2µs");
	else if (us < 1000)
		snprintf(buf, len, "%.0fµs", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3gms", us / 1000);
	else
		snprintf(buf, len, "%.3gs", us / 1e6);
}

static void histogram(struct rbuf *b, const double *h, size_t n, const char *what,
		      const char *colour)
{
	struct plot p = { .x0 = 80, .y0 = 30, .w = RP_WIDTH - 100, .h = 150 };
	size_t nb = 0;
	double max = 0, bw;
	char lab[24], title[96];
	int every;

	for (size_t i = 0; i < n; i++) {
		if (h[i] > 0)
			nb = i + 1;
		max = h[i] > max ? h[i] : max;
	}
	nb = nb ? nb : 1;
	bw = p.w / (double)nb;
	every = nb <= 16 ? 1 : nb <= 32 ? 2 : 4;
	p.ymax = ml_nice_ceil(max);
	snprintf(title, sizeof(title), "%s fault latency histogram", what);
	ml_svg_open(b, "hist", 240, title);
	ml_svg_text(b, p.x0, 16, "start", "axis", title);
	ml_svg_yaxis(b, &p, "faults (count)");
	for (size_t i = 0; i < nb; i++) {
		double y = ml_plot_y(&p, h[i]);

		ml_rb_printf(b,
			     "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			     "height=\"%.1f\" fill=\"%s\"/>\n",
			     p.x0 + i * bw + 1, y, bw > 3 ? bw - 2 : bw, p.y0 + p.h - y, colour);
		/* counts on the bars: the tail is too short to read off the axis */
		if (h[i] > 0 && nb <= 24)
			ml_svg_text(b, p.x0 + (i + 0.5) * bw, y - 3, "middle", "tick",
				    ml_fmt_si(h[i], lab, sizeof(lab)));
		if (i % every == 0) {
			bucket_label((int)i, lab, sizeof(lab));
			ml_svg_text(b, p.x0 + (i + 0.5) * bw, p.y0 + p.h + 16, "middle", "tick",
				    lab);
		}
	}
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p.x0, p.y0 + p.h, p.x0 + p.w, p.y0 + p.h);
	if (max == 0)
		ml_svg_text(b, p.x0 + p.w / 2, p.y0 + p.h / 2, "middle", "legend",
			    "no faults of this kind were seen");
	ml_svg_text(b, p.x0 + p.w / 2, p.y0 + p.h + 38, "middle", "axis",
		    "fault latency (log2 buckets, labelled by their lower bound)");
	ml_svg_close(b);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct rep_fault_row *x = a, *y = b;
	double sx = x->minor + x->major, sy = y->minor + y->major;

	return sx < sy ? 1 : sx > sy ? -1 : x->pid > y->pid ? 1 : x->pid < y->pid ? -1 : 0;
}

static void fault_table(struct rbuf *b, const struct rep_faults *f)
{
	struct rep_fault_row *rows = malloc((f->nrows + 1) * sizeof(*rows));
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

void ml_render_faults(struct rbuf *b, const struct rep_faults *f)
{
	ml_rb_puts(b, "<section class=\"faults\">\n<h2>Page faults</h2>\n<p class=\"src\">from ");
	ml_rb_html(b, f->src);
	ml_rb_puts(b, " (memlens faults");
	if (f->mode[0]) {
		ml_rb_puts(b, ", ");
		ml_rb_html(b, f->mode);
		ml_rb_puts(b, " mode");
	}
	ml_rb_puts(b, ")</p>\n<figure>\n");
	histogram(b, f->minor, f->nminor, "minor", "#4e79a7");
	histogram(b, f->major, f->nmajor, "major", "#e15759");
	ml_rb_puts(b, "<figcaption>How long page faults took: bucket i counts faults of "
		      "2<sup>i</sup> to 2<sup>i+1</sup> µs.</figcaption>\n</figure>\n");
	fault_table(b, f);
	ml_rb_puts(b, "</section>\n");
}
