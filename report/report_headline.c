// SPDX-License-Identifier: MIT
/*
 * The one line at the top of each section that answers its question at a
 * glance, computed from the data: which VMAs are hot and how fast the
 * program writes; where its memory is; how long faults take; what each
 * migration policy saves against copying everything.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

struct line {
	char *p;
	size_t len, cap;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len + 1 >= l->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len = l->len + (size_t)n < l->cap ? l->len + (size_t)n : l->cap - 1;
}

static struct line line_of(char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	return (struct line){ .p = buf, .cap = len };
}

void mlr_fmt_us(double us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%.0f µs", us);
	else if (us < 1e6)
		snprintf(buf, len, "%.3g ms", us / 1000);
	else
		snprintf(buf, len, "%.3g s", us / 1e6);
}

/* "16,225" */
static void fmt_count(double v, char *buf, size_t len)
{
	char d[32];
	size_t n, o = 0;

	snprintf(d, sizeof(d), "%.0f", v < 0 ? 0 : v < 1e18 ? v : 1e18);
	n = strlen(d);
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o] = '\0';
}

/* "x" of "0.25×", "1.0×", "12×" */
static void fmt_ratio(double r, char *buf, size_t len)
{
	snprintf(buf, len, r >= 10 ? "%.0f" : r >= 1 ? "%.1f" : "%.2g", r);
}

/* The mapped file's basename or a named anonymous VMA's name; NULL: none. */
static const char *vma_name(const struct ml_rep_vma *v)
{
	const char *p = v->path, *slash;

	if (!p || !p[0])
		return NULL;
	/* [heap], [stack], [vdso]: the kind says it; a named anonymous VMA does not */
	if (p[0] == '[')
		return strncmp(p, "[anon:", 6) ? NULL : p;
	slash = strrchr(p, '/');
	return slash && slash[1] ? slash + 1 : p;
}

void mlr_vma_label(const struct ml_rep_vma *v, bool with_addr, char *buf, size_t len)
{
	const char *name = vma_name(v);
	char size[16];
	int n;

	ml_fmt_bytes((double)(v->end - v->start), size, sizeof(size));
	n = snprintf(buf, len, "%s %s", size, ml_report_kind_label(v->kind));
	if (n < 0 || (size_t)n >= len)
		return;
	if (name)
		snprintf(buf + n, len - (size_t)n, " %s", name);
	else if (with_addr)
		snprintf(buf + n, len - (size_t)n, " 0x%llx", (unsigned long long)v->start);
}

static int cmp_size(const void *a, const void *b, void *arg)
{
	const struct ml_rep_writes *w = arg;
	const struct ml_rep_vma *x = &w->vma[*(const uint32_t *)a];
	const struct ml_rep_vma *y = &w->vma[*(const uint32_t *)b];
	uint64_t sx = x->end - x->start, sy = y->end - y->start;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* VMAs hot in the last interval (in @idx, biggest first, if given): how many */
static size_t hot_at_end(const struct ml_rep_writes *w, uint32_t *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < w->ncell; i++) {
		const struct ml_rep_cell *c = &w->cell[i];

		if (c->iv + 1 == w->niv && c->hot) {
			if (idx)
				idx[n] = c->vma;
			n++;
		}
	}
	if (idx)
		qsort_r(idx, n, sizeof(*idx), cmp_size, (void *)w);
	return n;
}

static double mean_write_rate(const struct ml_rep_writes *w)
{
	double bytes = 0, secs = 0;

	/* the summary's: what memlens writes itself printed at the end */
	if (w->have_summary && w->avg_dirty_rate > 0)
		return w->avg_dirty_rate;
	for (size_t i = 0; i < w->niv; i++) {
		bytes += w->iv[i].dirty_pages * w->page_size;
		secs += w->iv[i].interval_s;
	}
	if (secs > 0)
		return bytes / secs;
	return w->avg_dirty_rate;
}

#define HOT_NAMED 2 /* hot VMAs named in the headline */

void mlr_headline_writes(const struct ml_rep_writes *w, char *buf, size_t len)
{
	struct line l = line_of(buf, len);
	uint32_t *idx = calloc(w->ncell + 1, sizeof(*idx));
	size_t hot = 0, ever = 0;
	char rate[32], lab[96];

	if (w->niv)
		hot = hot_at_end(w, idx);
	else
		hot = w->hot_vmas > 0 ? (size_t)w->hot_vmas : 0;
	for (size_t i = 0; i < w->nvma; i++)
		ever += w->vma[i].hot_ever;
	if (!hot)
		add(&l, "no hot VMA");
	else
		add(&l, "%zu hot VMA%s", hot, hot == 1 ? "" : "s");
	if (w->nvma)
		add(&l, " %s %zu", hot ? "of" : "among", w->nvma);
	for (size_t i = 0; idx && w->niv && i < hot && i < HOT_NAMED; i++) {
		mlr_vma_label(&w->vma[idx[i]], false, lab, sizeof(lab));
		add(&l, "%s%s", i ? ", " : " (", lab);
	}
	if (idx && w->niv && hot > HOT_NAMED)
		add(&l, " and %zu more)", hot - HOT_NAMED);
	else if (idx && w->niv && hot)
		add(&l, ")");
	if (ever > hot)
		add(&l, "; %zu hot at some time", ever);
	ml_fmt_bytes_words(mlr_bytes_u64(mean_write_rate(w)), rate, sizeof(rate));
	add(&l, "; %s/s written on average", rate);
	free(idx);
}

/* Kinds of the last snapshot by resident pages, most first: how many with any. */
static int kinds_by_resident(const struct ml_rep_snaps *s, int *k)
{
	int n = 0;

	for (int i = 0; i < ML_REPORT_KINDS; i++) {
		int j = n;

		if (!(s->last[i].resident > 0))
			continue;
		for (; j > 0 && s->last[k[j - 1]].resident < s->last[i].resident; j--)
			k[j] = k[j - 1];
		k[j] = i;
		n++;
	}
	return n;
}

#define KINDS_NAMED 3

void mlr_headline_snaps(const struct ml_rep_snaps *s, char *buf, size_t len)
{
	struct line l = line_of(buf, len);
	double res = 0, swp = 0, wr = 0;
	char b[32];
	int k[ML_REPORT_KINDS], n;

	if (!s->npt) {
		add(&l, "no snapshot in this input");
		return;
	}
	for (int i = 0; i < ML_REPORT_KINDS; i++) {
		res += s->last[i].resident;
		swp += s->last[i].swapped;
		wr += s->have_written ? s->last[i].written : s->last[i].dirty;
	}
	ml_fmt_bytes_words(mlr_bytes_u64(res * s->page_size), b, sizeof(b));
	if (s->npt > 1) {
		size_t at = mlr_snaps_peak(s);
		double peak = mlr_snap_resident(&s->pt[at]);
		char pk[32];

		ml_fmt_bytes_words(mlr_bytes_u64(peak * s->page_size), pk, sizeof(pk));
		if (peak > res)
			add(&l, "%s resident at the peak (%.1f s), %s at the end", pk,
			    (s->pt[at].t_ms - s->pt[0].t_ms) / 1000, b);
		else
			add(&l, "%s resident at the end, also the peak", b);
	} else {
		add(&l, "%s resident", b);
	}
	n = kinds_by_resident(s, k);
	for (int i = 0; i < n && i < KINDS_NAMED; i++) {
		double share = 100 * s->last[k[i]].resident / res;

		ml_fmt_bytes_words(mlr_bytes_u64(s->last[k[i]].resident * s->page_size), b,
				   sizeof(b));
		add(&l, "%s%s %s (", i ? ", " : ": ", ml_report_kind_label(k[i]), b);
		add(&l, share < 0.5 ? "<1%%)" : "%.0f%%)", share);
	}
	if (swp > 0) {
		ml_fmt_bytes_words(mlr_bytes_u64(swp * s->page_size), b, sizeof(b));
		add(&l, "; %s swapped out", b);
	}
	if (s->have_written || s->have_dirty) {
		ml_fmt_bytes_words(mlr_bytes_u64(wr * s->page_size), b, sizeof(b));
		add(&l, "; %s %s", b, s->have_written ? "written in the last cycle" : "dirty");
	}
}

/* Upper bound (µs) of the bucket in which the @q-th share of @h falls. */
static double hist_quantile(const double *h, size_t n, double total, double q)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		sum += h[i];
		if (sum >= q * total)
			return ldexp(1, (int)i + 1);
	}
	return ldexp(1, (int)n);
}

static void fault_kind(struct line *l, const double *h, size_t n, const char *what)
{
	double total = 0;
	char q50[24], q99[24], cnt[32];

	for (size_t i = 0; i < n; i++)
		total += h[i];
	if (!(total > 0)) {
		add(l, "no %s faults", what);
		return;
	}
	mlr_fmt_us(hist_quantile(h, n, total, 0.5), q50, sizeof(q50));
	mlr_fmt_us(hist_quantile(h, n, total, 0.99), q99, sizeof(q99));
	fmt_count(total, cnt, sizeof(cnt));
	add(l, "%s %s fault%s, half under %s", cnt, what, total == 1 ? "" : "s", q50);
	if (strcmp(q50, q99))
		add(l, ", 99%% under %s", q99);
}

void mlr_headline_faults(const struct ml_rep_faults *f, char *buf, size_t len)
{
	struct line l = line_of(buf, len);
	const struct ml_rep_fault_row *top = NULL;
	char cnt[32];

	fault_kind(&l, f->minor, f->nminor, "minor");
	add(&l, "; ");
	fault_kind(&l, f->major, f->nmajor, "major");
	for (size_t i = 0; i < f->nrows; i++)
		if (!top || f->rows[i].minor + f->rows[i].major > top->minor + top->major)
			top = &f->rows[i];
	if (top && top->minor + top->major > 0) {
		fmt_count(top->minor + top->major, cnt, sizeof(cnt));
		add(&l, "; most by %s (%s)", top->comm, cnt);
	}
}

static const char *policy_title(const char *name)
{
	if (!strcmp(name, "hot-vma"))
		return "hot-VMA exclusion";
	if (!strcmp(name, "hot-range"))
		return "hot-range exclusion";
	return name;
}

void mlr_headline_migrate(const struct ml_rep_migrate *m, char *buf, size_t len)
{
	struct line l = line_of(buf, len);
	const struct ml_rep_policy *base = NULL;
	char b[32], r[16];

	for (size_t i = 0; i < m->npol && !base; i++)
		if (!strcmp(m->pol[i].name, "none"))
			base = &m->pol[i];
	if (!base && m->npol)
		base = &m->pol[0];
	if (!base) {
		add(&l, "no policy in this input");
		return;
	}
	if (m->npol == 1 || !(base->total_bytes > 0)) {
		for (size_t i = 0; i < m->npol; i++) {
			ml_fmt_bytes_words(mlr_bytes_u64(m->pol[i].total_bytes), b, sizeof(b));
			add(&l, "%s%s: %s sent, %.0f ms downtime", i ? "; " : "",
			    policy_title(m->pol[i].name), b, m->pol[i].downtime_ms);
		}
		return;
	}
	for (size_t i = 0, n = 0; i < m->npol; i++) {
		const struct ml_rep_policy *p = &m->pol[i];
		double dr = base->downtime_ms > 0 ? p->downtime_ms / base->downtime_ms : NAN;

		if (p == base)
			continue;
		fmt_ratio(p->total_bytes / base->total_bytes, r, sizeof(r));
		add(&l, "%s%s: %s× the bytes", n++ ? "; " : "", policy_title(p->name), r);
		if (isnan(dr)) {
			add(&l, ", %.0f ms downtime", p->downtime_ms);
		} else if (fabs(dr - 1) <= 0.05) {
			add(&l, ", same downtime");
		} else {
			fmt_ratio(dr, r, sizeof(r));
			add(&l, ", %s× the downtime", r);
		}
	}
	if (strcmp(base->name, "none"))
		add(&l, " (against %s)", base->name);
}

void mlr_render_headline(struct ml_rbuf *b, const char *text)
{
	ml_rb_puts(b, "<p class=\"headline\">");
	ml_rb_html(b, text);
	ml_rb_puts(b, "</p>\n");
}

/* ---- the tracers ---- */

void mlr_headline_leaks(const struct ml_rep_leaks *l, char *buf, size_t len)
{
	struct line ln = line_of(buf, len);
	char b[32], cnt[32];
	const struct ml_rep_leak_stack *top = NULL;
	double in_stacks = 0;

	for (size_t i = 0; i < l->nstacks; i++) {
		in_stacks += l->stacks[i].bytes;
		if (!top || l->stacks[i].bytes > top->bytes)
			top = &l->stacks[i];
	}
	if (!l->have_final) {
		if (!l->npt) {
			add(&ln, "no leaks lines in this input");
			return;
		}
		ml_fmt_bytes_words(mlr_bytes_u64(l->pt[l->npt - 1].outstanding_bytes), b,
				   sizeof(b));
		add(&ln, "%s outstanding at the last interval (no final line)", b);
		return;
	}
	ml_fmt_bytes_words(mlr_bytes_u64(l->outstanding_bytes), b, sizeof(b));
	fmt_count(l->outstanding, cnt, sizeof(cnt));
	if (!(l->outstanding_bytes > 0)) {
		add(&ln, "nothing outstanding: every block allocated while traced was freed");
		return;
	}
	add(&ln, "%s%s outstanding in %s block%s", l->sample_bytes > 0 ? "about " : "", b, cnt,
	    l->outstanding == 1 ? "" : "s");
	if (l->sample_bytes > 0) {
		char se[32], every[32];

		ml_fmt_bytes_words(mlr_bytes_u64(l->outstanding_bytes_stderr), se, sizeof(se));
		ml_fmt_bytes_words(mlr_bytes_u64(l->sample_bytes), every, sizeof(every));
		add(&ln, " (estimated from one allocation sampled per %s: standard error %s)",
		    every, se);
	}
	if (top && top->bytes > 0) {
		ml_fmt_bytes_words(mlr_bytes_u64(top->bytes), b, sizeof(b));
		add(&ln, "; %s (%.0f%%) from one call stack", b,
		    100 * top->bytes / l->outstanding_bytes);
		if (top->nframes) {
			/* innermost first, as a reader asks "who allocated it?" */
			add(&ln, ":");
			for (size_t f = top->nframes, n = 0; f-- > 0 && n < 3; n++)
				add(&ln, "%s %s", n ? " ←" : "", top->frames[f]);
		}
	}
	if (l->stacks_kept > 1)
		add(&ln, "; %.0f call stacks in all", l->stacks_kept);
}

void mlr_headline_slab(const struct ml_rep_slab *s, const size_t *order, size_t norder, char *buf,
		       size_t len)
{
	struct line l = line_of(buf, len);
	size_t grew = 0;
	char cnt[32];

	if (!norder || !order) {
		add(&l, "no slab cache was counted");
		return;
	}
	for (size_t i = 0; i < norder; i++)
		grew += s->cache[order[i]].net > 0;
	const struct ml_rep_slab_cache *c = &s->cache[order[0]];

	fmt_count(fabs(c->net), cnt, sizeof(cnt));
	add(&l, "%s %s most: %s%s objects net", c->name, c->net >= 0 ? "grew" : "shrank",
	    c->net >= 0 ? "+" : "-", cnt);
	if (c->in_final && c->net_kb != 0) {
		char b[32];

		ml_fmt_bytes_words(mlr_bytes_u64(fabs(c->net_kb) * 1024), b, sizeof(b));
		add(&l, " (%s)", b);
	}
	add(&l, "; %zu of the %zu caches listed grew", grew, norder);
}

void mlr_headline_oom(const struct ml_rep_oom *m, char *buf, size_t len)
{
	struct line l = line_of(buf, len);
	double n = m->nkill;

	if (!m->nkill) {
		if (m->have_summary && m->kills > 0)
			add(&l, "%.0f OOM kills counted, none reported (the ring buffer was full)",
			    m->kills);
		else
			add(&l, "no OOM kill while memlens oom watched");
		return;
	}
	const struct ml_rep_oom_kill *big = &m->kill[0];
	char rss[32], lim[32];

	add(&l, "%.0f OOM kill%s of", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < m->nkill && i < 4; i++) {
		const struct ml_rep_oom_kill *k = &m->kill[i];

		if (i && !strcmp(k->victim_comm, m->kill[i - 1].victim_comm))
			add(&l, ", %ld", k->victim_pid);
		else
			add(&l, "%s %s (pid %ld", i ? ")," : "", k->victim_comm, k->victim_pid);
		if (k->anon_rss_kb + k->file_rss_kb + k->shmem_rss_kb >
		    big->anon_rss_kb + big->file_rss_kb + big->shmem_rss_kb)
			big = k;
	}
	add(&l, "%s)", m->nkill > 4 ? ", ..." : "");
	ml_fmt_bytes_words(
		mlr_bytes_u64((big->anon_rss_kb + big->file_rss_kb + big->shmem_rss_kb) * 1024),
		rss, sizeof(rss));
	ml_fmt_bytes_words(mlr_bytes_u64(big->limit_kb * 1024), lim, sizeof(lim));
	add(&l, "; %s resident in the %svictim, at the %s limit of %s", rss,
	    m->nkill > 1 ? "largest " : "", big->scope[0] ? big->scope : "?", lim);
}
