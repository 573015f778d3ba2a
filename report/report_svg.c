// SPDX-License-Identifier: MIT
/* The report's drawing kit: a string buffer, kind colours, axes, ticks. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static bool rb_reserve(struct ml_rbuf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void ml_rb_printf(struct ml_rbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !rb_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void ml_rb_puts(struct ml_rbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (!rb_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

void ml_rb_html(struct ml_rbuf *b, const char *s)
{
	char one[2] = { 0 };

	for (; *s; s++) {
		switch (*s) {
		case '<':
			ml_rb_puts(b, "&lt;");
			break;
		case '>':
			ml_rb_puts(b, "&gt;");
			break;
		case '&':
			ml_rb_puts(b, "&amp;");
			break;
		case '"':
			ml_rb_puts(b, "&quot;");
			break;
		case '\'':
			ml_rb_puts(b, "&#39;");
			break;
		default:
			/* control characters would make the XML of the SVG invalid */
			one[0] = (unsigned char)*s < 0x20 ? '?' : *s;
			ml_rb_puts(b, one);
		}
	}
}

void ml_rb_free(struct ml_rbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Tableau-like colours, one per kind, never reassigned. */
static const char *const kind_colours[ML_REPORT_KINDS] = {
	[ML_VMA_ANON] = "#4e79a7",     [ML_VMA_TEXT] = "#f28e2b",
	[ML_VMA_DATA] = "#e15759",     [ML_VMA_BSS] = "#76b7b2",
	[ML_VMA_HEAP] = "#59a14f",     [ML_VMA_STACK] = "#edc948",
	[ML_VMA_LIB_TEXT] = "#b07aa1", [ML_VMA_LIB_DATA] = "#ff9da7",
	[ML_VMA_SHM] = "#9c755f",      [ML_VMA_FILE] = "#bab0ac",
	[ML_VMA_VDSO] = "#86bcb6",     [ML_VMA_VVAR] = "#d4a6c8",
	[ML_VMA_VSYSCALL] = "#8cd17d", [ML_REPORT_KIND_OTHER] = "#79706e",
};

int ml_report_kind(const char *name)
{
	int k = name ? ml_vma_kind_from_name(name) : -1;

	return k < 0 ? ML_REPORT_KIND_OTHER : k;
}

const char *ml_report_kind_label(int k)
{
	if (k < 0 || k >= ML_REPORT_KIND_OTHER)
		return "other";
	return ml_vma_kind_name(k);
}

const char *ml_report_kind_colour(int k)
{
	if (k < 0 || k >= ML_REPORT_KINDS)
		k = ML_REPORT_KIND_OTHER;
	return kind_colours[k];
}

double mlr_plot_x(const struct plot *p, double x)
{
	double span = p->xmax - p->xmin;

	return p->x0 + (span > 0 ? (x - p->xmin) / span : 0.5) * p->w;
}

double mlr_plot_y(const struct plot *p, double y)
{
	double span = p->ymax - p->ymin;

	return p->y0 + p->h - (span > 0 ? (y - p->ymin) / span : 0) * p->h;
}

static double nice_step(double span, int max)
{
	double raw = span / (max > 1 ? max - 1 : 1);
	double mag = pow(10, floor(log10(raw)));
	double f = raw / mag;

	if (f <= 1)
		return mag;
	if (f <= 2)
		return 2 * mag;
	if (f <= 5)
		return 5 * mag;
	return 10 * mag;
}

int mlr_nice_ticks(double lo, double hi, int max, double *ticks)
{
	double step, first, v;
	int n = 0;

	if (!(hi > lo) || !isfinite(lo) || !isfinite(hi) || max < 2) {
		ticks[0] = isfinite(lo) ? lo : 0;
		return 1;
	}
	step = nice_step(hi - lo, max);
	first = ceil(lo / step - 1e-9);
	/* multiply, do not accumulate: 0.1 + 0.1 + 0.1 is not 0.3 */
	for (v = first * step; v <= hi + step * 1e-9 && n < max; v = (first + n) * step)
		ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
	return n;
}

double mlr_nice_ceil(double v)
{
	double mag, f;

	if (!(v > 0) || !isfinite(v))
		return 1;
	mag = pow(10, floor(log10(v)));
	f = v / mag;
	if (f <= 1)
		return mag;
	if (f <= 2)
		return 2 * mag;
	if (f <= 2.5)
		return 2.5 * mag;
	if (f <= 5)
		return 5 * mag;
	return 10 * mag;
}

const char *mlr_fmt_si(double v, char *buf, size_t len)
{
	static const char *const sfx[] = { "", "k", "M", "G", "T", "P" };
	double a = fabs(v);
	int i = 0;

	while (a >= (i ? 1000 : 10000) && i < 5) {
		a /= 1000;
		v /= 1000;
		i++;
	}
	if (a == 0 || (a >= 10 && a == floor(a)) || (i == 0 && a == floor(a)))
		snprintf(buf, len, "%.0f%s", v, sfx[i]);
	else if (a >= 100)
		snprintf(buf, len, "%.0f%s", v, sfx[i]);
	else if (a >= 1)
		snprintf(buf, len, "%.3g%s", v, sfx[i]);
	else
		snprintf(buf, len, "%.2g%s", v, sfx[i]);
	return buf;
}

void mlr_svg_open(struct ml_rbuf *b, const char *cls, int h, const char *title)
{
	ml_rb_printf(b,
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" role=\"img\" "
		     "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\"><title>",
		     cls, RP_WIDTH, h, RP_WIDTH, h);
	ml_rb_html(b, title);
	ml_rb_puts(b, "</title>\n");
}

void mlr_svg_close(struct ml_rbuf *b)
{
	ml_rb_puts(b, "</svg>\n");
}

void mlr_svg_text(struct ml_rbuf *b, double x, double y, const char *anchor, const char *cls,
		  const char *text)
{
	ml_rb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", x, y, anchor,
		     cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
	ml_rb_html(b, text);
	ml_rb_puts(b, "</text>\n");
}

void mlr_svg_yaxis(struct ml_rbuf *b, const struct plot *p, const char *ylabel)
{
	double ticks[12];
	char s[32];
	int n = mlr_nice_ticks(p->ymin, p->ymax, 6, ticks);

	for (int i = 0; i < n; i++) {
		double y = mlr_plot_y(p, ticks[i]);

		ml_rb_printf(
			b,
			"<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			p->x0, y, p->x0 + p->w, y);
		mlr_svg_text(b, p->x0 - 6, y + 4, "end", "tick",
			     mlr_fmt_si(ticks[i], s, sizeof(s)));
	}
	ml_rb_printf(b,
		     "<text class=\"axis\" transform=\"translate(%.1f %.1f) rotate(-90)\" "
		     "text-anchor=\"middle\">",
		     p->x0 - 52, p->y0 + p->h / 2);
	ml_rb_html(b, ylabel);
	ml_rb_puts(b, "</text>\n");
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p->x0, p->y0, p->x0, p->y0 + p->h);
}

void mlr_svg_xaxis(struct ml_rbuf *b, const struct plot *p, const char *xlabel)
{
	double ticks[12];
	char s[32];
	int n = mlr_nice_ticks(p->xmin, p->xmax, 9, ticks);
	double base = p->y0 + p->h;

	for (int i = 0; i < n; i++) {
		double x = mlr_plot_x(p, ticks[i]);

		ml_rb_printf(
			b,
			"<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			x, base, x, base + 4);
		mlr_svg_text(b, x, base + 17, "middle", "tick", mlr_fmt_si(ticks[i], s, sizeof(s)));
	}
	ml_rb_printf(b, "<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		     p->x0, base, p->x0 + p->w, base);
	mlr_svg_text(b, p->x0 + p->w / 2, base + 36, "middle", "axis", xlabel);
}

void mlr_svg_axes(struct ml_rbuf *b, const struct plot *p, const char *xlabel, const char *ylabel)
{
	mlr_svg_yaxis(b, p, ylabel);
	mlr_svg_xaxis(b, p, xlabel);
}

double mlr_svg_legend(struct ml_rbuf *b, double x, double y, const char *colour, const char *text)
{
	ml_rb_printf(b,
		     "<rect class=\"swatch\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
		     "fill=\"%s\"/>\n",
		     x, y - 10, colour);
	mlr_svg_text(b, x + 16, y, "start", "legend", text);
	return x + 16 + 7.0 * (double)strlen(text) + 18;
}

int mlr_rp_max_cols(const struct ml_report_opts *o)
{
	return o && o->max_cols > 0 ? o->max_cols : 360;
}

int mlr_rp_max_rows(const struct ml_report_opts *o)
{
	return o && o->max_rows > 0 ? o->max_rows : 40;
}
