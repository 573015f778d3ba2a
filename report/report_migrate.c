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

static void one_bar(struct rbuf *b, const struct plot *p, double x, double w, double bytes,
		    const char *colour, bool label, bool final)
{
	double y = ml_plot_y(p, bytes / 1048576.0);
	char v[24];

	ml_rb_printf(b,
		     "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
		     "fill=\"%s\"/>\n",
		     final ? "bar final" : "bar", x, y, w, p->y0 + p->h - y, colour);
	if (label)
		ml_svg_text(b, x + w / 2, y - 3, "middle", "tick",
			    ml_fmt_si(bytes / 1048576.0, v, sizeof(v)));
}

/* The last round of each policy is its stop-and-copy dump: outlined. */
static void round_bars(struct rbuf *b, const struct rep_migrate *m, const struct plot *p, size_t nr)
{
	double gw = p->w / (double)nr, bw = (gw - 2) / (double)m->npol;
	bool labels = nr * m->npol <= 24; /* room for each bar's value */

	for (size_t i = 0; i < m->npol; i++) {
		const struct rep_policy *pol = &m->pol[i];
		const char *c = policy_colour(pol->name, i);

		for (size_t r = 0; r < pol->nrounds; r++)
			one_bar(b, p, p->x0 + r * gw + 1 + i * bw, bw, pol->rounds[r], c, labels,
				r + 1 == pol->nrounds);
	}
}

static void round_chart(struct rbuf *b, const struct rep_migrate *m)
{
	struct plot p = { .x0 = 80, .y0 = 40, .w = RP_WIDTH - 100, .h = 200 };
	size_t nr = 0;
	double max = 0, x = p.x0;
	char t[24];
	int every;

	for (size_t i = 0; i < m->npol; i++) {
		nr = m->pol[i].nrounds > nr ? m->pol[i].nrounds : nr;
		for (size_t r = 0; r < m->pol[i].nrounds; r++)
			max = fmax(max, m->pol[i].rounds[r] / 1048576.0);
	}
	nr = nr ? nr : 1;
	p.ymax = ml_nice_ceil(max);
	every = nr <= 20 ? 1 : (int)(nr / 20) + 1;
	ml_svg_open(b, "migrate", 300, "bytes sent per pre-copy round, per policy");
	ml_svg_yaxis(b, &p, "sent in the round (MiB)");
	round_bars(b, m, &p, nr);
	for (size_t r = 0; r < nr; r += every) {
		snprintf(t, sizeof(t), "%zu", r + 1);
		ml_svg_text(b, p.x0 + (r + 0.5) * p.w / nr, p.y0 + p.h + 16, "middle", "tick", t);
	}
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p.x0, p.y0 + p.h, p.x0 + p.w, p.y0 + p.h);
	ml_svg_text(b, p.x0 + p.w / 2, p.y0 + p.h + 38, "middle", "axis",
		    "round (pre-dumps, then the final dump)");
	for (size_t i = 0; i < m->npol; i++)
		x = ml_svg_legend(b, x, 18, policy_colour(m->pol[i].name, i), m->pol[i].name);
	ml_rb_printf(b,
		     "<rect class=\"bar final\" x=\"%.1f\" y=\"8\" width=\"12\" height=\"12\" "
		     "fill=\"#fff\"/>\n",
		     x);
	ml_svg_text(b, x + 16, 18, "start", "legend", "outlined: the final dump, process stopped");
	ml_svg_close(b);
}

static void policy_table(struct rbuf *b, const struct rep_migrate *m)
{
	ml_rb_puts(
		b,
		"<table class=\"migrate\"><tr><th>policy</th><th>rounds</th>"
		"<th>sent in all (MiB)</th><th>last round (MiB)</th><th>downtime (ms)</th></tr>\n");
	for (size_t i = 0; i < m->npol; i++) {
		const struct rep_policy *p = &m->pol[i];

		ml_rb_puts(b, "<tr><td>");
		ml_rb_html(b, p->name);
		ml_rb_printf(b, "</td><td>%zu</td><td>%.1f</td><td>%.1f</td><td>%.1f</td></tr>\n",
			     p->nrounds, p->total_bytes / 1048576.0,
			     p->final_round_bytes / 1048576.0, p->downtime_ms);
	}
	ml_rb_puts(b, "</table>\n");
}

void ml_render_migrate(struct rbuf *b, const struct rep_migrate *m)
{
	ml_rb_puts(b, "<section class=\"migration\">\n<h2>Live-migration model</h2>\n<p "
		      "class=\"src\">from ");
	ml_rb_html(b, m->src);
	ml_rb_printf(
		b,
		" (memlens migrate-model)</p>\n<p class=\"facts\">link bandwidth %.0f MiB/s, a "
		"pre-dump round every %.2f s.</p>\n<figure>\n",
		m->bandwidth_mbps, m->round_interval_s);
	round_chart(b, m);
	ml_rb_puts(b, "<figcaption>Bytes each policy sends in each round; its last round is the "
		      "final dump, sent with the process stopped (downtime).</figcaption>\n"
		      "</figure>\n");
	policy_table(b, m);
	ml_rb_puts(b, "</section>\n");
}
