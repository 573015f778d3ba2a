// SPDX-License-Identifier: MIT
/* The report page: one self-contained HTML file, inline SVG and CSS, no script. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
	"color:#1d232b;background:#fff;margin:24px auto;max-width:1000px;padding:0 16px}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 2px;"
	"border-bottom:1px solid #d0d7de;padding-bottom:3px}\n"
	".headline{font-size:17px;font-weight:600;margin:8px 0 4px;padding:4px 10px;"
	"border-left:4px solid #1f78d1;background:#f1f6fc}\n"
	".src,.meta{color:#57606a;margin:0}.facts{margin:4px "
	"0}.note{color:#57606a;font-style:italic}\n"
	"figure{margin:10px 0 18px}figcaption{color:#57606a;font-size:13px;max-width:960px}\n"
	"svg{display:block;background:#fff;margin:0 0 12px}svg "
	"text{font-family:system-ui,Helvetica,Arial,sans-serif}\n"
	"svg .tick{font-size:11px;fill:#444}svg .axis{font-size:12px;fill:#1d232b}\n"
	"svg .legend{font-size:12px;fill:#1d232b}svg .vma{font:11px ui-monospace,'DejaVu Sans "
	"Mono',monospace;fill:#1d232b}svg text.hotvma{font-weight:700}\n"
	"svg .grid{stroke:#e6e9ed;stroke-width:1}svg .frame{stroke:#57606a;stroke-width:1}\n"
	"svg .rate{fill:none;stroke:#08519c;stroke-width:1.6}svg "
	".rate-max{fill:none;stroke:#9ecae1;stroke-width:1}\n"
	"svg .pt{fill:#08519c}svg .area{stroke:#fff;stroke-width:.4}svg "
	".final{stroke:#1d232b;stroke-width:1.5}\n"
	"table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:2px 10px;text-align:right;"
	"border-bottom:1px solid "
	"#e6e9ed}th{background:#f3f5f7}td:first-child,th:first-child{text-align:left}\n"
	"svg .flabel{font:11px ui-monospace,'DejaVu Sans Mono',monospace;fill:#1d232b;"
	"pointer-events:none}svg .fframe:hover rect{stroke:#1d232b;stroke-width:1}\n"
	".side{display:flex;flex-wrap:wrap;gap:0 16px}.side figure{width:480px;margin:0}"
	".side svg{width:480px;height:auto}.oomnote{color:#b3261e;font-weight:600;margin:2px 0}\n";

static void page_head(struct ml_rbuf *b, const struct ml_report *r, const char *title)
{
	ml_rb_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		      "style-src 'unsafe-inline'\">\n<title>");
	ml_rb_html(b, title);
	ml_rb_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", css);
	ml_rb_html(b, title);
	ml_rb_printf(b, "</h1>\n<p class=\"meta\">%zu JSON lines from ", r->lines);
	for (size_t i = 0; i < r->nsrcs; i++) {
		ml_rb_puts(b, i ? ", " : "");
		ml_rb_html(b, r->srcs[i]);
	}
	if (!r->nsrcs)
		ml_rb_puts(b, "(no file)");
	if (r->skipped)
		ml_rb_printf(b, "; %zu lines of other types skipped", r->skipped);
	ml_rb_puts(b, "</p>\n");
}

/*
 * Snapshot sections: the runs of one command (the same "command" in their
 * summaries, different pids) make one section, in the order of the first;
 * the others one each.
 */
static int render_snapshots(struct ml_rbuf *b, const struct ml_report *r,
			    const struct ml_report_opts *o)
{
	size_t *idx = malloc((r->ns + 1) * sizeof(*idx));
	bool *done = calloc(r->ns + 1, sizeof(*done));

	if (!idx || !done) {
		free(idx);
		free(done);
		return -1;
	}
	for (size_t i = 0; i < r->ns; i++) {
		size_t n = 0;

		if (done[i])
			continue;
		idx[n++] = i;
		for (size_t j = i + 1; r->s[i].command[0] && j < r->ns; j++)
			if (!done[j] && r->s[j].pid != r->s[i].pid && r->s[j].npt &&
			    !strcmp(r->s[j].command, r->s[i].command)) {
				idx[n++] = j;
				done[j] = true;
			}
		if (n > 1 && r->s[i].npt)
			mlr_render_runs(b, r, idx, n, o);
		else
			for (size_t k = 0; k < n; k++)
				mlr_render_snaps(b, r, &r->s[idx[k]], o);
	}
	free(idx);
	free(done);
	return 0;
}

int ml_report_render(const struct ml_report *r, const struct ml_report_opts *opts,
		     struct ml_rbuf *out, struct ml_err *err)
{
	struct ml_report_opts ov;
	const struct ml_report_opts *o = &ov;
	const char *title;

	if (ml_opts_load(&ov, sizeof(ov), opts, "ml_report_opts", err))
		return -EINVAL;
	title = o->title ? o->title : "memlens report";
	if (!r->nw && !r->ns && !r->nf && !r->nm && !r->nfs && !r->nl && !r->nsl && !r->no)
		return ml_err_set(err, EINVAL,
				  "nothing to draw: the input holds no lines of writes, snapshot, "
				  "faults, migrate-model, leaks, slab or oom");
	page_head(out, r, title);
	for (size_t i = 0; i < r->nw; i++)
		mlr_render_writes(out, &r->w[i], o);
	if (render_snapshots(out, r, o))
		return ml_err_set(err, ENOMEM, "out of memory grouping the snapshot runs");
	for (size_t i = 0; i < r->nf; i++)
		mlr_render_faults(out, &r->f[i]);
	for (size_t i = 0; i < r->nfs; i++)
		mlr_render_fault_series(out, &r->fs[i]);
	for (size_t i = 0; i < r->nl; i++)
		mlr_render_leaks(out, &r->l[i]);
	for (size_t i = 0; i < r->nsl; i++)
		mlr_render_slab(out, &r->sl[i]);
	for (size_t i = 0; i < r->no; i++)
		mlr_render_oom(out, &r->o[i]);
	for (size_t i = 0; i < r->nm; i++)
		mlr_render_migrate(out, &r->m[i]);
	ml_rb_puts(out, "<p class=\"meta\">Written by memlens report. No script, no network: "
			"everything is in this file.</p>\n</body>\n</html>\n");
	if (out->oom)
		return ml_err_set(err, ENOMEM,
				  "out of memory writing the report; give fewer inputs");
	return 0;
}
