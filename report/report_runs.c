// SPDX-License-Identifier: MIT
/*
 * Runs of one command: `memlens snapshot -- CMD` run several times makes
 * several processes, each with a pid of its own. Their summaries name the
 * command, and the runs of one command make one section: a table with
 * the runs side by side, their total resident memory over time on one
 * chart, and each run's picture by region kind next to the others.
 * Also the OOM kills a process section mentions, and faults over time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char *const run_colours[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
					   "#b07aa1", "#76b7b2", "#edc948", "#9c755f" };
#define NCOLOURS (sizeof(run_colours) / sizeof(run_colours[0]))

void mlr_oom_note(const struct ml_report *r, long pid, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->no; i++)
		for (size_t j = 0; j < r->o[i].nkill; j++) {
			const struct ml_rep_oom_kill *k = &r->o[i].kill[j];
			char rss[16];

			if (k->victim_pid != pid || n + 1 >= len)
				continue;
			ml_fmt_bytes(
				mlr_bytes_u64((k->anon_rss_kb + k->file_rss_kb + k->shmem_rss_kb) *
					      1024),
				rss, sizeof(rss));
			n += (size_t)snprintf(buf + n, len - n,
					      "%sKilled by the OOM killer with %s resident (%s "
					      "limit; see OOM kills).",
					      n ? " " : "", rss, k->scope);
			if (n >= len)
				n = len - 1;
		}
}

static double span_s(const struct ml_rep_snaps *s)
{
	return s->npt > 1 ? (s->pt[s->npt - 1].t_ms - s->pt[0].t_ms) / 1000 : 0;
}

static void overlay(struct ml_rbuf *b, const struct ml_report *r, const size_t *idx, size_t n)
{
	struct plot p = { .x0 = 80, .y0 = 40, .w = RP_WIDTH - 100, .h = 200 };
	double max = 0, span = 0, x = p.x0;

	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *s = &r->s[idx[i]];

		span = fmax(span, span_s(s));
		if (s->npt)
			max = fmax(max, mlr_snap_resident(&s->pt[mlr_snaps_peak(s)]) *
						s->page_size / 1048576.0);
	}
	p.xmax = span > 0 ? span : 1;
	p.ymax = mlr_nice_ceil(max);
	mlr_svg_open(b, "runs", 300, "total resident memory of each run over time");
	mlr_svg_axes(b, &p, "time since the run's first snapshot (s)", "resident (MiB)");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *s = &r->s[idx[i]];
		double mib = s->page_size / 1048576.0;
		char name[48];

		ml_rb_printf(b,
			     "<polyline class=\"run\" data-pid=\"%ld\" fill=\"none\" stroke=\"%s\" "
			     "stroke-width=\"1.8\" points=\"",
			     s->pid, run_colours[i % NCOLOURS]);
		/* at most 2000 points a run: the line stays small for long runs */
		for (size_t j = 0; j < s->npt; j += s->npt / 2000 + 1)
			ml_rb_printf(b, "%.1f,%.1f ",
				     mlr_plot_x(&p, (s->pt[j].t_ms - s->pt[0].t_ms) / 1000),
				     mlr_plot_y(&p, mlr_snap_resident(&s->pt[j]) * mib));
		ml_rb_puts(b, "\"/>\n");
		snprintf(name, sizeof(name), "run %zu (pid %ld)", i + 1, s->pid);
		x = mlr_svg_legend(b, x, 18, run_colours[i % NCOLOURS], name);
	}
	mlr_svg_close(b);
}

static void cell_bytes(struct ml_rbuf *b, double bytes)
{
	char s[32];

	ml_fmt_bytes(mlr_bytes_u64(bytes), s, sizeof(s));
	ml_rb_printf(b, "<td data-bytes=\"%.0f\">%s</td>", bytes, s);
}

static void side_table(struct ml_rbuf *b, const struct ml_report *r, const size_t *idx, size_t n)
{
	char s[64];

	ml_rb_puts(b, "<table class=\"runs\"><tr><th></th>");
	for (size_t i = 0; i < n; i++)
		ml_rb_printf(b, "<th>run %zu</th>", i + 1);
	ml_rb_puts(b, "</tr>\n<tr><td>pid</td>");
	for (size_t i = 0; i < n; i++)
		ml_rb_printf(b, "<td>%ld</td>", r->s[idx[i]].pid);
	ml_rb_puts(b, "</tr>\n<tr><td>snapshots</td>");
	for (size_t i = 0; i < n; i++)
		ml_rb_printf(b, "<td>%zu</td>", r->s[idx[i]].npt);
	ml_rb_puts(b, "</tr>\n<tr><td>followed for</td>");
	for (size_t i = 0; i < n; i++)
		ml_rb_printf(b, "<td>%.1f s</td>", span_s(&r->s[idx[i]]));
	ml_rb_puts(b, "</tr>\n<tr class=\"peak\"><td>peak resident</td>");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *sn = &r->s[idx[i]];

		cell_bytes(b,
			   sn->npt ? mlr_snap_resident(&sn->pt[mlr_snaps_peak(sn)]) * sn->page_size
				   : 0);
	}
	ml_rb_puts(b, "</tr>\n<tr><td>peak at</td>");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *sn = &r->s[idx[i]];

		ml_rb_printf(b, "<td>%.1f s</td>",
			     sn->npt ? (sn->pt[mlr_snaps_peak(sn)].t_ms - sn->pt[0].t_ms) / 1000
				     : 0);
	}
	ml_rb_puts(b, "</tr>\n<tr class=\"end\"><td>resident at the end</td>");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *sn = &r->s[idx[i]];

		cell_bytes(b,
			   sn->npt ? mlr_snap_resident(&sn->pt[sn->npt - 1]) * sn->page_size : 0);
	}
	ml_rb_puts(b, "</tr>\n<tr><td>one snapshot took</td>");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *sn = &r->s[idx[i]];

		mlr_fmt_us(sn->npt ? sn->cycle_us_sum / (double)sn->npt : 0, s, sizeof(s));
		ml_rb_printf(b, "<td>%s</td>", s);
	}
	ml_rb_puts(b, "</tr>\n<tr><td>stopped because</td>");
	for (size_t i = 0; i < n; i++) {
		char note[256];

		mlr_oom_note(r, r->s[idx[i]].pid, note, sizeof(note));
		ml_rb_puts(b, "<td>");
		ml_rb_html(b, note[0] ? "OOM-killed" : r->s[idx[i]].stopped_because);
		ml_rb_puts(b, "</td>");
	}
	ml_rb_puts(b, "</tr>\n<tr><td>from</td>");
	for (size_t i = 0; i < n; i++) {
		ml_rb_puts(b, "<td>");
		ml_rb_html(b, r->s[idx[i]].src);
		ml_rb_puts(b, "</td>");
	}
	ml_rb_puts(b, "</tr>\n</table>\n");
}

static void headline(const struct ml_report *r, const size_t *idx, size_t n, char *buf, size_t len)
{
	size_t at;
	char s[32];

	at = (size_t)snprintf(buf, len, "%zu runs: peak ", n);
	for (int end = 0; end < 2; end++) {
		for (size_t i = 0; i < n && at < len; i++) {
			const struct ml_rep_snaps *sn = &r->s[idx[i]];
			size_t k = end ? sn->npt - 1 : mlr_snaps_peak(sn);

			ml_fmt_bytes_words(mlr_bytes_u64(sn->npt ? mlr_snap_resident(&sn->pt[k]) *
									   sn->page_size
								 : 0),
					   s, sizeof(s));
			at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", s);
		}
		if (!end && at < len)
			at += (size_t)snprintf(buf + at, len - at, "; at the end ");
	}
}

void mlr_render_runs(struct ml_rbuf *b, const struct ml_report *r, const size_t *idx, size_t n,
		     const struct ml_report_opts *o)
{
	char head[1024];

	ml_rb_printf(b, "<section class=\"runs\">\n<h2>%zu runs of <code>", n);
	ml_rb_html(b, r->s[idx[0]].command);
	ml_rb_puts(b, "</code></h2>\n<p class=\"src\">memlens snapshot, one run per process</p>\n");
	headline(r, idx, n, head, sizeof(head));
	mlr_render_headline(b, head);
	side_table(b, r, idx, n);
	ml_rb_puts(b, "<figure>\n");
	overlay(b, r, idx, n);
	ml_rb_puts(b, "<figcaption>Total resident memory of each run, from its first "
		      "snapshot.</figcaption>\n</figure>\n<div class=\"side\">\n");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_snaps *sn = &r->s[idx[i]];

		ml_rb_printf(b, "<figure>\n");
		if (sn->npt > 1)
			mlr_render_snap_area(b, sn, o);
		ml_rb_printf(b,
			     "<figcaption>run %zu (pid %ld): resident memory by region "
			     "kind</figcaption>\n</figure>\n",
			     i + 1, sn->pid);
	}
	ml_rb_puts(b, "</div>\n</section>\n");
}

void mlr_render_fault_series(struct ml_rbuf *b, const struct ml_rep_fault_series *fs)
{
	struct plot p = { .x0 = 80, .y0 = 36, .w = RP_WIDTH - 100, .h = 180 };
	double max = 0, x;

	if (fs->npt < 1)
		return;
	for (size_t i = 0; i < fs->npt; i++)
		max = fmax(max, fmax(fs->pt[i].minor, fs->pt[i].major));
	p.xmax = fmax(fs->pt[fs->npt - 1].t_ms / 1000, 1e-3);
	p.ymax = mlr_nice_ceil(max);
	ml_rb_puts(b, "<section class=\"faultseries\">\n<h2>Page faults over time</h2>\n"
		      "<p class=\"src\">from ");
	ml_rb_html(b, fs->src);
	ml_rb_puts(b, " (memlens faults -i)</p>\n<figure>\n");
	mlr_svg_open(b, "faultline", 280, "page faults per interval");
	mlr_svg_axes(b, &p, "time since tracing began (s)", "faults in the interval");
	for (int major = 0; major < 2; major++) {
		ml_rb_printf(b,
			     "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" "
			     "stroke-width=\"1.6\" points=\"",
			     major ? "major" : "minor", major ? "#e15759" : "#4e79a7");
		for (size_t i = 0; i < fs->npt; i++)
			ml_rb_printf(b, "%.1f,%.1f ", mlr_plot_x(&p, fs->pt[i].t_ms / 1000),
				     mlr_plot_y(&p, major ? fs->pt[i].major : fs->pt[i].minor));
		ml_rb_puts(b, "\"/>\n");
	}
	x = mlr_svg_legend(b, p.x0, 16, "#4e79a7", "minor");
	mlr_svg_legend(b, x, 16, "#e15759", "major");
	mlr_svg_close(b);
	ml_rb_puts(b, "<figcaption>Faults counted in each interval (faults -i).</figcaption>\n"
		      "</figure>\n</section>\n");
}
