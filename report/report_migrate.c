// SPDX-License-Identifier: MIT
/* The migration-model section: bytes sent per pre-copy round, per policy. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "report_int.h"

static const char *policy_colour(const char *name, size_t i)
{
	static const char *const spare[] = { "#b07aa1", "#76b7b2", "#edc948", "#9c755f" };

	if (!strcmp(name, "none"))
		return "#79706e";
	if (!strcmp(name, "hot-vma"))
		return "#f28e2b";
	if (!strcmp(name, "hot-range"))
		return "#59a14f";
	return spare[i % 4];
}

static void one_bar(struct ml_rbuf *b, const struct plot *p, double x, double w, double bytes,
		    const char *colour, bool label, bool final)
{
	double y = mlr_plot_y(p, bytes / 1048576.0);
	char v[24];

	ml_rb_printf(b,
		     "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
		     "fill=\"%s\"/>\n",
		     final ? "bar final" : "bar", x, y, w, p->y0 + p->h - y, colour);
	if (label) {
		if (bytes > 0)
			ml_fmt_bytes(mlr_bytes_u64(bytes), v, sizeof(v));
		else
			snprintf(v, sizeof(v), "0");
		mlr_svg_text(b, x + w / 2, y - 3, "middle", "tick", v);
	}
}

/*
 * Groups from left to right: pre-dump round 1, 2, ... (the policies side by
 * side, each in its own slot), a gap, then the final dumps of all policies
 * side by side: the round that decides the downtime, compared directly.
 */
struct layout {
	size_t npre; /* pre-dump groups: the most pre-dumps of any policy */
	double gw, bw; /* a pre-dump group's width, its bars' */
	double final_x, fw, fbw; /* the final group: where, how wide, its bars */
};

#define FINAL_BAR_MIN 40 /* px: room for the size over each final dump */
#define GROUP_GAP 24 /* px between the pre-dumps and the final dumps */

static struct layout lay_out(const struct ml_rep_migrate *m, const struct plot *p)
{
	double npol = (double)(m->npol ? m->npol : 1);
	struct layout l = { 0 };

	for (size_t i = 0; i < m->npol; i++)
		if (m->pol[i].nrounds > l.npre + 1)
			l.npre = m->pol[i].nrounds - 1;
	l.fw = p->w / ((double)l.npre + 1);
	if (l.npre && l.fw < FINAL_BAR_MIN * npol + 6)
		l.fw = fmin(FINAL_BAR_MIN * npol + 6, p->w / 2);
	l.gw = l.npre ? (p->w - l.fw - GROUP_GAP) / (double)l.npre : 0;
	l.bw = (l.gw - 6) / npol;
	l.fbw = (l.fw - 6) / npol;
	l.final_x = p->x0 + p->w - l.fw;
	return l;
}

static void round_bars(struct ml_rbuf *b, const struct ml_rep_migrate *m, const struct plot *p,
		       const struct layout *l)
{
	bool labels = (l->npre + 1) * m->npol <= 24 && l->bw >= 30; /* room for the values */

	for (size_t i = 0; i < m->npol; i++) {
		const struct ml_rep_policy *pol = &m->pol[i];
		const char *c = policy_colour(pol->name, i);

		for (size_t r = 0; r + 1 < pol->nrounds; r++)
			one_bar(b, p, p->x0 + r * l->gw + 3 + i * l->bw, l->bw, pol->rounds[r], c,
				labels, false);
		if (pol->nrounds)
			one_bar(b, p, l->final_x + 3 + i * l->fbw, l->fbw,
				pol->rounds[pol->nrounds - 1], c, true, true);
	}
}

static void round_labels(struct ml_rbuf *b, const struct plot *p, const struct layout *l)
{
	size_t every = l->npre <= 20 ? 1 : l->npre / 20 + 1;
	double base = p->y0 + p->h;
	char t[24];

	for (size_t r = 0; r < l->npre; r += every) {
		snprintf(t, sizeof(t), "%zu", r + 1);
		mlr_svg_text(b, p->x0 + (r + 0.5) * l->gw, base + 16, "middle", "tick", t);
	}
	if (l->npre) {
		mlr_svg_text(b, p->x0 + l->npre * l->gw / 2, base + 34, "middle", "axis",
			     "pre-dump round (process running)");
		ml_rb_printf(b,
			     "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
			     "y2=\"%.1f\" stroke-dasharray=\"4 3\"/>\n",
			     l->final_x - GROUP_GAP / 2.0, p->y0, l->final_x - GROUP_GAP / 2.0,
			     base + 30);
	}
	mlr_svg_text(b, l->final_x + l->fw / 2, base + 16, "middle", "tick", "final dump");
	mlr_svg_text(b, l->final_x + l->fw / 2, base + 34, "middle", "axis", "(process stopped)");
}

static void round_chart(struct ml_rbuf *b, const struct ml_rep_migrate *m)
{
	struct plot p = { .x0 = 80, .y0 = 40, .w = RP_WIDTH - 100, .h = 200 };
	struct layout l = lay_out(m, &p);
	double max = 0, x = p.x0;

	for (size_t i = 0; i < m->npol; i++)
		for (size_t r = 0; r < m->pol[i].nrounds; r++)
			max = fmax(max, m->pol[i].rounds[r] / 1048576.0);
	p.ymax = mlr_nice_ceil(max);
	mlr_svg_open(b, "migrate", 300, "bytes sent per pre-copy round, per policy");
	mlr_svg_yaxis(b, &p, "sent in the round (MiB)");
	round_bars(b, m, &p, &l);
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p.x0, p.y0 + p.h, p.x0 + p.w, p.y0 + p.h);
	round_labels(b, &p, &l);
	for (size_t i = 0; i < m->npol; i++)
		x = mlr_svg_legend(b, x, 18, policy_colour(m->pol[i].name, i), m->pol[i].name);
	mlr_svg_close(b);
}

static bool has_none(const struct ml_rep_migrate *m)
{
	for (size_t i = 0; i < m->npol; i++)
		if (!strcmp(m->pol[i].name, "none"))
			return true;
	return false;
}

static void policy_table(struct ml_rbuf *b, const struct ml_rep_migrate *m)
{
	ml_rb_puts(
		b,
		"<table class=\"migrate\"><tr><th>policy</th><th>rounds</th>"
		"<th>sent in all (MiB)</th><th>last round (MiB)</th><th>downtime (ms)</th></tr>\n");
	for (size_t i = 0; i < m->npol; i++) {
		const struct ml_rep_policy *p = &m->pol[i];

		ml_rb_puts(b, "<tr><td>");
		ml_rb_html(b, p->name);
		ml_rb_printf(b, "</td><td>%zu</td><td>%.1f</td><td>%.1f</td><td>%.1f</td></tr>\n",
			     p->nrounds, p->total_bytes / 1048576.0,
			     p->final_round_bytes / 1048576.0, p->downtime_ms);
	}
	ml_rb_puts(b, "</table>\n");
}

void mlr_render_migrate(struct ml_rbuf *b, const struct ml_rep_migrate *m)
{
	char head[512];

	ml_rb_puts(b, "<section class=\"migration\">\n<h2>Live-migration model</h2>\n<p "
		      "class=\"src\">from ");
	ml_rb_html(b, m->src);
	ml_rb_puts(b, " (memlens migrate-model)</p>\n");
	mlr_headline_migrate(m, head, sizeof(head));
	mlr_render_headline(b, head);
	ml_rb_printf(
		b,
		"<p class=\"facts\">link bandwidth %.0f MiB/s, a pre-dump round every %.2f s%s."
		"</p>\n<figure>\n",
		m->bandwidth_mbps, m->round_interval_s,
		has_none(m) ? "; the ratios compare with the policy none, which copies "
			      "every written page each round"
			    : "");
	if (!m->npol) {
		ml_rb_puts(b, "<p class=\"note\">no policy in this input.</p>\n</figure>\n"
			      "</section>\n");
		return;
	}
	round_chart(b, m);
	ml_rb_puts(b, "<figcaption>Bytes each policy sends in each pre-dump round, while the "
		      "process runs, and in its final dump, sent with the process stopped: the "
		      "final dumps stand side by side at the right, their size sets the "
		      "downtime.</figcaption>\n</figure>\n");
	policy_table(b, m);
	ml_rb_puts(b, "</section>\n");
}
