// SPDX-License-Identifier: MIT
/*
 * The leaks section: what memlens leaks found outstanding, as an icicle
 * (a flame graph drawn from the top: the outermost frame first, each
 * frame as wide as the bytes allocated under it, the largest first), the
 * outstanding bytes over time (leaks -i), and the blocks by size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define ROW_H 18
#define MAX_DEPTH 64
#define TOP_ROWS 20

struct node {
	const char *name;
	double bytes, count;
	int first, next; /* first child, next sibling: indices, -1 none */
	int depth;
};

struct tree {
	struct node *n;
	size_t len, cap;
	int maxdepth;
};

static int add_node(struct tree *t, const char *name, int depth)
{
	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct node *n = realloc(t->n, cap * sizeof(*n));

		if (!n)
			return -1;
		t->n = n;
		t->cap = cap;
	}
	t->n[t->len] = (struct node){ .name = name, .first = -1, .next = -1, .depth = depth };
	if (depth > t->maxdepth)
		t->maxdepth = depth;
	return (int)t->len++;
}

static int child(struct tree *t, int parent, const char *name)
{
	int c;

	for (c = t->n[parent].first; c >= 0; c = t->n[c].next)
		if (!strcmp(t->n[c].name, name))
			return c;
	c = add_node(t, name, t->n[parent].depth + 1);
	if (c < 0)
		return -1;
	t->n[c].next = t->n[parent].first;
	t->n[parent].first = c;
	return c;
}

static int build(struct tree *t, const struct ml_rep_leaks *l)
{
	if (add_node(t, "all outstanding blocks", 0) < 0)
		return -1;
	for (size_t i = 0; i < l->nstacks; i++) {
		const struct ml_rep_leak_stack *st = &l->stacks[i];
		int at = 0;

		t->n[0].bytes += st->bytes;
		t->n[0].count += st->count;
		if (!st->nframes) {
			at = child(t, 0, "[stack not recorded]");
			if (at < 0)
				return -1;
			t->n[at].bytes += st->bytes;
			t->n[at].count += st->count;
		}
		for (size_t f = 0; f < st->nframes && f < MAX_DEPTH; f++) {
			at = child(t, at, st->frames[f]);
			if (at < 0)
				return -1;
			t->n[at].bytes += st->bytes;
			t->n[at].count += st->count;
		}
	}
	return 0;
}

/* Warm colours, the same for the same name (flame graph style). */
static void frame_colour(const char *name, char *buf, size_t len)
{
	unsigned h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 130, 40 + (h >> 16) % 50);
}

static const struct tree *cmp_of;

static int cmp_bytes(const void *a, const void *b)
{
	const struct node *x = &cmp_of->n[*(const int *)a], *y = &cmp_of->n[*(const int *)b];

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void draw(struct ml_rbuf *b, const struct tree *t, int i, double x, double w, double total)
{
	const struct node *n = &t->n[i];
	int *kids, nk = 0;
	char col[32], bytes[16], title[64];
	double y = 8 + n->depth * ROW_H;

	if (w < 0.4)
		return;
	frame_colour(n->name, col, sizeof(col));
	ml_fmt_bytes(mlr_bytes_u64(n->bytes), bytes, sizeof(bytes));
	ml_rb_printf(
		b,
		"<g class=\"fframe\" data-depth=\"%d\" data-bytes=\"%.0f\" data-count=\"%.0f\">"
		"<title>",
		n->depth, n->bytes, n->count);
	ml_rb_html(b, n->name);
	snprintf(title, sizeof(title), ": %s in %.0f block%s (%.1f%%)", bytes, n->count,
		 n->count == 1 ? "" : "s", total > 0 ? 100 * n->bytes / total : 0);
	ml_rb_html(b, title);
	ml_rb_printf(b,
		     "</title><rect class=\"flame\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		     "height=\"%d\" fill=\"%s\"/>",
		     x, y, w - (w > 2 ? 0.6 : 0), ROW_H - 1, i ? col : "#d9dde3");
	/* a label where it fits: ~6.5 px a character of 11 px text */
	if (w > 30) {
		int room = (int)((w - 6) / 6.5);
		char label[256];
		int len = (int)strlen(n->name);

		if (len <= room)
			snprintf(label, sizeof(label), "%s", n->name);
		else
			snprintf(label, sizeof(label), "%.*s…", room > 1 ? room - 1 : 0, n->name);
		ml_rb_printf(b, "<text class=\"flabel\" x=\"%.1f\" y=\"%.1f\">", x + 3, y + 13);
		ml_rb_html(b, label);
		ml_rb_puts(b, "</text>");
	}
	ml_rb_puts(b, "</g>\n");
	for (int c = n->first; c >= 0; c = t->n[c].next)
		nk++;
	kids = malloc((size_t)nk * sizeof(*kids) + 1);
	if (!kids)
		return;
	nk = 0;
	for (int c = n->first; c >= 0; c = t->n[c].next)
		kids[nk++] = c;
	cmp_of = t;
	qsort(kids, (size_t)nk, sizeof(*kids), cmp_bytes);
	for (int k = 0; k < nk; k++) {
		double cw = n->bytes > 0 ? w * t->n[kids[k]].bytes / n->bytes : 0;

		draw(b, t, kids[k], x, cw, total);
		x += cw;
	}
	free(kids);
}

static void render_icicle(struct ml_rbuf *b, const struct ml_rep_leaks *l)
{
	struct tree t = { 0 };

	if (build(&t, l) || !(t.n[0].bytes > 0)) {
		ml_rb_puts(b,
			   t.n ? "<p class=\"note\">no outstanding bytes with a call stack.</p>\n"
			       : "<p class=\"note\">out of memory drawing the call stacks</p>\n");
		free(t.n);
		return;
	}
	ml_rb_puts(b, "<figure>\n");
	if (l->stacks_kept > (double)l->nstacks)
		ml_rb_printf(b,
			     "<p class=\"note\">The %zu call stacks with the most bytes, of %.0f "
			     "(leaks -T N shows more).</p>\n",
			     l->nstacks, l->stacks_kept);
	mlr_svg_open(b, "icicle", 16 + (t.maxdepth + 1) * ROW_H,
		     "outstanding bytes by call stack, outermost frame at the top");
	draw(b, &t, 0, 0, RP_WIDTH, t.n[0].bytes);
	mlr_svg_close(b);
	ml_rb_puts(b, "<figcaption>Outstanding bytes by call stack, as a flame graph drawn from "
		      "the top: the outermost frame first, the frames it called below it, each "
		      "as wide as the bytes still allocated under it, the largest on the left. "
		      "Hover over a frame for its bytes and blocks.</figcaption>\n</figure>\n");
	free(t.n);
}

static void render_over_time(struct ml_rbuf *b, const struct ml_rep_leaks *l)
{
	struct plot p = { .x0 = 80, .y0 = 20, .w = RP_WIDTH - 100, .h = 160 };
	double max = 0;

	if (l->npt < 2)
		return;
	for (size_t i = 0; i < l->npt; i++)
		max = fmax(max, l->pt[i].outstanding_bytes / 1048576.0);
	p.xmax = fmax(l->pt[l->npt - 1].t_ms / 1000, 1e-3);
	p.ymax = mlr_nice_ceil(max);
	ml_rb_puts(b, "<figure>\n");
	mlr_svg_open(b, "leakline", 240, "outstanding bytes over time");
	mlr_svg_axes(b, &p, "time since tracing began (s)", "outstanding (MiB)");
	ml_rb_puts(b, "<polyline class=\"rate\" points=\"");
	for (size_t i = 0; i < l->npt; i++)
		ml_rb_printf(b, "%.1f,%.1f ", mlr_plot_x(&p, l->pt[i].t_ms / 1000),
			     mlr_plot_y(&p, l->pt[i].outstanding_bytes / 1048576.0));
	ml_rb_puts(b, "\"/>\n");
	mlr_svg_close(b);
	ml_rb_puts(b, "<figcaption>Bytes allocated and not freed, read at each interval while "
		      "tracing (leaks -i).</figcaption>\n</figure>\n");
}

static void sizes_table(struct ml_rbuf *b, const struct ml_rep_leaks *l)
{
	size_t n = l->nsizes < TOP_ROWS ? l->nsizes : TOP_ROWS;
	char s[16];

	if (!l->nsizes)
		return;
	ml_rb_puts(b, "<table class=\"leak-sizes\"><tr><th>block size (bytes)</th><th>blocks</th>"
		      "<th>bytes</th><th></th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		const struct ml_rep_leak_size *z = &l->sizes[i];

		ml_fmt_bytes(mlr_bytes_u64(z->bytes), s, sizeof(s));
		ml_rb_printf(b, "<tr><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%s</td></tr>\n",
			     z->size, z->count, z->bytes, s);
	}
	ml_rb_puts(b, "</table>\n");
	if (l->nsizes > n)
		ml_rb_printf(b, "<p class=\"note\">%zu more sizes not shown.</p>\n", l->nsizes - n);
}

void mlr_render_leaks(struct ml_rbuf *b, const struct ml_rep_leaks *l)
{
	char head[512], s[16];

	ml_rb_printf(b,
		     "<section class=\"leaks\">\n<h2>Outstanding allocations of pid %ld</h2>\n"
		     "<p class=\"src\">from ",
		     l->pid);
	ml_rb_html(b, l->src);
	ml_rb_puts(b, " (memlens leaks)</p>\n");
	mlr_headline_leaks(l, head, sizeof(head));
	mlr_render_headline(b, head);
	if (l->have_final) {
		ml_fmt_bytes(mlr_bytes_u64(l->outstanding_bytes), s, sizeof(s));
		if (l->sample_bytes > 0)
			ml_rb_printf(
				b,
				"<p class=\"facts\">%.0f sampled allocations and %.0f of their "
				"frees seen; about %.0f blocks (%s) outstanding at the end, "
				"estimated",
				l->mallocs, l->frees, l->outstanding, s);
		else
			ml_rb_printf(
				b,
				"<p class=\"facts\">%.0f allocations and %.0f frees seen; %.0f "
				"blocks (%s) outstanding at the end",
				l->mallocs, l->frees, l->outstanding, s);
		if (l->allocator[0]) {
			ml_rb_puts(b, "; allocator ");
			ml_rb_html(b, l->allocator);
		}
		ml_rb_puts(b, ".</p>\n");
	}
	render_icicle(b, l);
	render_over_time(b, l);
	sizes_table(b, l);
	ml_rb_puts(b, "</section>\n");
}
