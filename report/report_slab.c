// SPDX-License-Identifier: MIT
/*
 * The slab section: per kernel object cache, what memlens slab counted
 * allocated and freed in each interval (slab -i) and the net growth since
 * the start, one small chart per cache for those that grew or shrank most,
 * then the table of the whole run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define PANELS 6
#define TOP_ROWS 20
#define C_ALLOC "#59a14f"
#define C_FREE "#e15759"
#define C_NET "#1d232b"

static const struct ml_rep_slab *cmp_of;

static int cmp_net(const void *a, const void *b)
{
	const struct ml_rep_slab_cache *x = &cmp_of->cache[*(const size_t *)a];
	const struct ml_rep_slab_cache *y = &cmp_of->cache[*(const size_t *)b];

	if (fabs(x->net) != fabs(y->net))
		return fabs(x->net) < fabs(y->net) ? 1 : -1;
	if (x->allocs != y->allocs)
		return x->allocs < y->allocs ? 1 : -1;
	return strcmp(x->name, y->name);
}

/*
 * Caches by |net|, then by allocations: the ones that changed the most
 * first. Only those of the "slab" line when there is one: an interval
 * lists its own top -T caches, so the sum over the intervals of a cache
 * that some did not list is short of its total.
 */
size_t *mlr_slab_order(const struct ml_rep_slab *s, size_t *n)
{
	size_t *o = malloc((s->ncache + 1) * sizeof(*o));

	*n = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < s->ncache; i++)
		if (!s->have_final || s->cache[i].in_final)
			o[(*n)++] = i;
	cmp_of = s;
	qsort(o, *n, sizeof(*o), cmp_net);
	return o;
}

/* Did every interval list cache @k? Else its chart is short of what the total says. */
static bool listed_always(const struct ml_rep_slab *s, size_t k)
{
	double a = 0, f = 0;

	for (size_t i = 0; i < s->ncell; i++)
		if (s->cell[i].cache == k) {
			a += s->cell[i].allocs;
			f += s->cell[i].frees;
		}
	return !s->cache[k].in_final || (a == s->cache[k].allocs && f == s->cache[k].frees);
}

/* One cache: allocations up, frees down per interval, the net since the start as a line. */
static void panel(struct ml_rbuf *b, const struct ml_rep_slab *s, size_t k, double x0, double y0)
{
	struct plot p = { .x0 = x0 + 56, .y0 = y0 + 24, .w = 300 - 70, .h = 120 };
	double *al = calloc(s->niv + 1, sizeof(double)), *fr = calloc(s->niv + 1, sizeof(double));
	double top = 0, net = 0, lo = 0, hi = 0, bw;
	char t[96];

	if (!al || !fr)
		goto out;
	for (size_t i = 0; i < s->ncell; i++)
		if (s->cell[i].cache == k && s->cell[i].iv < s->niv) {
			al[s->cell[i].iv] += s->cell[i].allocs;
			fr[s->cell[i].iv] += s->cell[i].frees;
		}
	for (size_t i = 0; i < s->niv; i++) {
		top = fmax(top, fmax(al[i], fr[i]));
		net += al[i] - fr[i];
		lo = fmin(lo, net);
		hi = fmax(hi, net);
	}
	top = fmax(top, fmax(hi, -lo));
	p.xmax = s->iv_ms[s->niv - 1] / 1000;
	p.ymax = mlr_nice_ceil(top);
	p.ymin = -p.ymax;
	snprintf(t, sizeof(t), "%.40s%s", s->cache[k].name, listed_always(s, k) ? "" : " *");
	ml_rb_printf(b, "<g class=\"slabpanel\" data-cache=\"");
	ml_rb_html(b, s->cache[k].name);
	ml_rb_printf(b, "\" data-net=\"%.0f\">\n", net);
	mlr_svg_text(b, p.x0 + p.w / 2, y0 + 14, "middle", "axis", t);
	mlr_svg_axes(b, &p, "time (s)", "objects");
	bw = fmax(1, p.w / (double)(s->niv ? s->niv : 1) - 1);
	for (size_t i = 0; i < s->niv; i++) {
		double t0 = i ? s->iv_ms[i - 1] / 1000 : 0;
		double x = mlr_plot_x(&p, t0), zero = mlr_plot_y(&p, 0);

		bw = fmax(0.8, mlr_plot_x(&p, s->iv_ms[i] / 1000) - x - 0.5);
		if (al[i] > 0)
			ml_rb_printf(b,
				     "<rect class=\"alloc\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				     "height=\"%.1f\" fill=\"" C_ALLOC "\"/>\n",
				     x, mlr_plot_y(&p, al[i]), bw, zero - mlr_plot_y(&p, al[i]));
		if (fr[i] > 0)
			ml_rb_printf(b,
				     "<rect class=\"free\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
				     "height=\"%.1f\" fill=\"" C_FREE "\"/>\n",
				     x, zero, bw, mlr_plot_y(&p, -fr[i]) - zero);
	}
	ml_rb_puts(b, "<polyline class=\"net\" fill=\"none\" stroke=\"" C_NET
		      "\" stroke-width=\"1.6\" points=\"");
	net = 0;
	ml_rb_printf(b, "%.1f,%.1f ", mlr_plot_x(&p, 0), mlr_plot_y(&p, 0));
	for (size_t i = 0; i < s->niv; i++) {
		net += al[i] - fr[i];
		ml_rb_printf(b, "%.1f,%.1f ", mlr_plot_x(&p, s->iv_ms[i] / 1000),
			     mlr_plot_y(&p, net));
	}
	ml_rb_puts(b, "\"/>\n</g>\n");
out:
	free(al);
	free(fr);
}

static void render_panels(struct ml_rbuf *b, const struct ml_rep_slab *s, const size_t *order,
			  size_t norder)
{
	size_t n = norder < PANELS ? norder : PANELS;
	bool partial = false;
	int rows = (int)(n + 2) / 3;
	double x;

	if (s->niv < 1 || !n) {
		ml_rb_puts(b, "<p class=\"note\">over time: no interval lines (slab -i MS draws "
			      "allocations and frees per interval).</p>\n");
		return;
	}
	ml_rb_puts(b, "<figure>\n");
	mlr_svg_open(b, "slab", rows * 190 + 30, "slab cache allocations and frees over time");
	for (size_t i = 0; i < n; i++) {
		panel(b, s, order[i], (double)(i % 3) * 320, (double)(i / 3) * 190);
		partial |= !listed_always(s, order[i]);
	}
	x = mlr_svg_legend(b, 60, rows * 190 + 20, C_ALLOC, "allocated in the interval");
	x = mlr_svg_legend(b, x, rows * 190 + 20, C_FREE, "freed in the interval");
	mlr_svg_legend(b, x, rows * 190 + 20, C_NET, "net since the start");
	mlr_svg_close(b);
	ml_rb_printf(b,
		     "<figcaption>The %zu caches whose object count changed the most: objects "
		     "allocated (up) and freed (down) in each interval, and the net since "
		     "the start.%s</figcaption>\n</figure>\n",
		     n,
		     partial ? " * Some intervals did not list this cache among their top "
			       "ones: its chart is short of its total (slab -T N lists more)."
			     : "");
}

static void slab_table(struct ml_rbuf *b, const struct ml_rep_slab *s, const size_t *order,
		       size_t norder)
{
	size_t n = norder < TOP_ROWS ? norder : TOP_ROWS;

	ml_rb_puts(b, "<table class=\"slab\"><tr><th>cache</th><th>allocated</th><th>freed</th>"
		      "<th>net</th><th>net KiB</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_slab_cache *c = &s->cache[order[i]];

		ml_rb_puts(b, "<tr><td>");
		ml_rb_html(b, c->name);
		ml_rb_printf(b, "</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>", c->allocs,
			     c->frees, c->net);
		if (c->in_final)
			ml_rb_printf(b, "%.0f</td></tr>\n", c->net_kb);
		else
			ml_rb_puts(b, "-</td></tr>\n");
	}
	ml_rb_puts(b, "</table>\n");
	if (norder > n)
		ml_rb_printf(b, "<p class=\"note\">%zu more caches not shown.</p>\n", norder - n);
}

void mlr_render_slab(struct ml_rbuf *b, const struct ml_rep_slab *s)
{
	size_t norder, *order = mlr_slab_order(s, &norder);
	char head[512];

	ml_rb_puts(b,
		   "<section class=\"slab\">\n<h2>Kernel slab caches</h2>\n<p class=\"src\">from ");
	ml_rb_html(b, s->src);
	ml_rb_puts(b, " (memlens slab)</p>\n");
	mlr_headline_slab(s, order, norder, head, sizeof(head));
	mlr_render_headline(b, head);
	if (order && norder) {
		render_panels(b, s, order, norder);
		slab_table(b, s, order, norder);
	}
	if (!s->have_final)
		ml_rb_puts(b, "<p class=\"note\">no \"slab\" summary line: the totals are the "
			      "intervals summed.</p>\n");
	ml_rb_puts(b, "</section>\n");
	free(order);
}
