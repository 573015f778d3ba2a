// SPDX-License-Identifier: MIT
/*
 * The OOM section: each kill that memlens oom saw as a mark on a timeline,
 * named by its victim, as high as the victim's resident memory; then the
 * table of the kills.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define C_KILL "#e15759"

static void render_timeline(struct ml_rbuf *b, const struct ml_rep_oom *m)
{
	struct plot p = { .x0 = 80, .y0 = 30, .w = RP_WIDTH - 200, .h = 170 };
	double t0 = m->kill[0].time_ms, max = 0, span;
	char label[96], rss[16];

	for (size_t i = 0; i < m->nkill; i++) {
		double rssk =
			m->kill[i].anon_rss_kb + m->kill[i].file_rss_kb + m->kill[i].shmem_rss_kb;

		t0 = fmin(t0, m->kill[i].time_ms);
		max = fmax(max, rssk / 1024);
	}
	span = 0;
	for (size_t i = 0; i < m->nkill; i++)
		span = fmax(span, (m->kill[i].time_ms - t0) / 1000);
	p.xmax = span > 0 ? span : 1;
	p.ymax = mlr_nice_ceil(max);
	ml_rb_puts(b, "<figure>\n");
	mlr_svg_open(b, "oom", 260, "OOM kills over time");
	mlr_svg_axes(b, &p, "time since the first kill (s)", "victim's RSS (MiB)");
	for (size_t i = 0; i < m->nkill; i++) {
		const struct ml_rep_oom_kill *k = &m->kill[i];
		double rssk = k->anon_rss_kb + k->file_rss_kb + k->shmem_rss_kb;
		double x = mlr_plot_x(&p, (k->time_ms - t0) / 1000),
		       y = mlr_plot_y(&p, rssk / 1024);

		ml_fmt_bytes(mlr_bytes_u64(rssk * 1024), rss, sizeof(rss));
		snprintf(label, sizeof(label), "%s (pid %ld) %s",
			 k->victim_comm[0] ? k->victim_comm : "?", k->victim_pid, rss);
		ml_rb_printf(b,
			     "<g class=\"oomkill\" data-pid=\"%ld\" data-rss-kb=\"%.0f\"><title>",
			     k->victim_pid, rssk);
		ml_rb_html(b, label);
		ml_rb_printf(b,
			     "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			     "stroke=\"" C_KILL "\" stroke-width=\"1.5\"/><circle cx=\"%.1f\" "
			     "cy=\"%.1f\" r=\"5\" fill=\"" C_KILL "\"/>",
			     x, p.y0 + p.h, x, y, x, y);
		/* labels one row apart when kills crowd, so they do not overlap */
		mlr_svg_text(b, x + 7, y - 6 - (double)(i % 3) * 13, "start", "legend", label);
		ml_rb_puts(b, "</g>\n");
	}
	mlr_svg_close(b);
	ml_rb_puts(b, "<figcaption>Each OOM kill at its time, as high as the victim's resident "
		      "memory (anonymous, file and shared memory) when it was "
		      "killed.</figcaption>\n</figure>\n");
}

static void kill_table(struct ml_rbuf *b, const struct ml_rep_oom *m)
{
	double t0 = m->kill[0].time_ms;
	char s[5][16];

	for (size_t i = 0; i < m->nkill; i++)
		t0 = fmin(t0, m->kill[i].time_ms);
	ml_rb_puts(b, "<table class=\"oom\"><tr><th>victim</th><th>pid</th><th>at (s)</th>"
		      "<th>anon RSS</th><th>file RSS</th><th>shmem RSS</th><th>total VM</th>"
		      "<th>limit</th><th>scope</th><th>cgroup</th><th>triggered by</th></tr>\n");
	for (size_t i = 0; i < m->nkill; i++) {
		const struct ml_rep_oom_kill *k = &m->kill[i];

		ml_fmt_bytes(mlr_bytes_u64(k->anon_rss_kb * 1024), s[0], sizeof(s[0]));
		ml_fmt_bytes(mlr_bytes_u64(k->file_rss_kb * 1024), s[1], sizeof(s[1]));
		ml_fmt_bytes(mlr_bytes_u64(k->shmem_rss_kb * 1024), s[2], sizeof(s[2]));
		ml_fmt_bytes(mlr_bytes_u64(k->total_vm_kb * 1024), s[3], sizeof(s[3]));
		ml_fmt_bytes(mlr_bytes_u64(k->limit_kb * 1024), s[4], sizeof(s[4]));
		ml_rb_puts(b, "<tr><td>");
		ml_rb_html(b, k->victim_comm);
		ml_rb_printf(b,
			     "</td><td>%ld</td><td>%.3f</td><td data-kb=\"%.0f\">%s</td><td>%s</td>"
			     "<td>%s</td><td>%s</td><td>%s</td><td>",
			     k->victim_pid, (k->time_ms - t0) / 1000, k->anon_rss_kb, s[0], s[1],
			     s[2], s[3], s[4]);
		ml_rb_html(b, k->scope);
		ml_rb_puts(b, "</td><td>");
		ml_rb_html(b, k->cgroup);
		ml_rb_puts(b, "</td><td>");
		ml_rb_html(b, k->trigger_comm);
		if (k->trigger_pid >= 0)
			ml_rb_printf(b, " (%ld)", k->trigger_pid);
		ml_rb_puts(b, "</td></tr>\n");
	}
	ml_rb_puts(b, "</table>\n");
}

void mlr_render_oom(struct ml_rbuf *b, const struct ml_rep_oom *m)
{
	char head[512];

	ml_rb_puts(b, "<section class=\"oom\">\n<h2>OOM kills</h2>\n<p class=\"src\">from ");
	ml_rb_html(b, m->src);
	ml_rb_puts(b, " (memlens oom)</p>\n");
	mlr_headline_oom(m, head, sizeof(head));
	mlr_render_headline(b, head);
	if (m->nkill) {
		render_timeline(b, m);
		kill_table(b, m);
	}
	if (m->lost > 0)
		ml_rb_printf(b,
			     "<p class=\"note\">%.0f kills were not reported: the ring buffer was "
			     "full.</p>\n",
			     m->lost);
	ml_rb_puts(b, "</section>\n");
}
