// SPDX-License-Identifier: MIT
/* The report's input: JSON Lines of writes, snapshot, faults, migrate-model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_faults.h"
#include "memlens/format_migrate_model.h"
#include "memlens/format_snapshot.h"
#include "memlens/format_writes.h"
#include "memlens/json.h"
#include "report_int.h"
#include "report_load.h"

static bool same_src(const char *a, const char *b)
{
	return !strcmp(a, b);
}

static struct ml_rep_writes *writes_for(const struct line_ctx *c, long pid)
{
	struct ml_report *r = c->r;
	struct ml_rep_writes *w;

	for (size_t i = 0; i < r->nw; i++)
		if (r->w[i].pid == pid && same_src(r->w[i].src, c->src))
			return &r->w[i];
	w = realloc(r->w, (r->nw + 1) * sizeof(*w));
	if (!w)
		return NULL;
	r->w = w;
	w = &r->w[r->nw];
	memset(w, 0, sizeof(*w));
	w->src = strdup(c->src);
	if (!w->src)
		return NULL;
	w->pid = pid;
	w->page_size = 4096;
	r->nw++;
	return w;
}

static long find_vma(struct ml_rep_writes *w, size_t j, uint64_t start, uint64_t end)
{
	if (j < w->nhint && w->hint[j] < w->nvma && w->vma[w->hint[j]].start == start &&
	    w->vma[w->hint[j]].end == end)
		return w->hint[j];
	for (size_t i = 0; i < w->nvma; i++)
		if (w->vma[i].start == start && w->vma[i].end == end)
			return (long)i;
	return -1;
}

static int set_hint(struct ml_rep_writes *w, size_t j, uint32_t v)
{
	if (j >= w->nhint) {
		uint32_t *h = realloc(w->hint, (j + 1) * sizeof(*h));

		if (!h)
			return -ENOMEM;
		w->hint = h;
		w->nhint = j + 1;
	}
	w->hint[j] = v;
	return 0;
}

static int region_vma(const struct line_ctx *c, struct ml_rep_writes *w, size_t j,
		      const struct ml_writes_region_rec *reg, uint32_t *idx)
{
	long i = find_vma(w, j, reg->start, reg->end);

	if (i < 0) {
		if (!mlr_rl_grow((void **)&w->vma, &w->cvma, w->nvma, sizeof(*w->vma)))
			return mlr_rl_oom(c);
		i = (long)w->nvma++;
		w->vma[i].start = reg->start;
		w->vma[i].end = reg->end;
		w->vma[i].kind = ml_report_kind(reg->kind[0] ? reg->kind : NULL);
	}
	/* older files have no "path"; the other file of a run may have it */
	if (reg->path[0] && !w->vma[i].path) {
		w->vma[i].path = strdup(reg->path);
		if (!w->vma[i].path)
			return mlr_rl_oom(c);
	}
	if (set_hint(w, j, (uint32_t)i))
		return mlr_rl_oom(c);
	*idx = (uint32_t)i;
	return 0;
}

static int add_region(const struct line_ctx *c, struct ml_rep_writes *w, size_t j,
		      const struct ml_writes_region_rec *reg)
{
	struct ml_rep_cell *cell;
	double ratio = reg->written_ratio;
	bool hot = reg->has_hot && reg->hot;
	uint32_t vi = 0;
	int ret;

	if (isnan(ratio))
		return mlr_rl_bad(c, "field \"%s\" is missing or not a number", "written_ratio");
	ret = region_vma(c, w, j, reg, &vi);
	if (ret)
		return ret;
	if (!mlr_rl_grow((void **)&w->cell, &w->ccell, w->ncell, sizeof(*w->cell)))
		return mlr_rl_oom(c);
	cell = &w->cell[w->ncell++];
	cell->iv = (uint32_t)(w->niv - 1);
	cell->vma = vi;
	cell->ratio = (float)(ratio < 0 ? 0 : ratio > 1 ? 1 : ratio);
	cell->hot = hot;
	w->vma[vi].dirty_pages += reg->dirty_pages;
	w->vma[vi].hot_ever |= hot;
	return 0;
}

/* "written": the page ranges of writes --record */
static int add_ranges(const struct line_ctx *c, struct ml_rep_writes *w, size_t iv,
		      const struct ml_writes_interval_rec *rec)
{
	if (!rec->has_written)
		return 0;
	w->iv[iv].has_ranges = true;
	w->have_ranges = true;
	for (size_t i = 0; i < rec->nwritten; i++) {
		struct ml_rep_range *rg;

		if (!mlr_rl_grow((void **)&w->range, &w->crange, w->nrange, sizeof(*w->range)))
			return mlr_rl_oom(c);
		rg = &w->range[w->nrange++];
		rg->iv = (uint32_t)iv;
		rg->start = rec->written[i].start;
		rg->end = rec->written[i].end;
	}
	return 0;
}

static void read_dirty(struct ml_rep_writes *w, struct ml_rep_interval *iv,
		       const struct ml_writes_dirty_rec *d)
{
	iv->dirty_pages = d->dirty_pages;
	iv->rate_pps = d->rate_pps;
	if (d->dirty_pages > 0 && d->dirty_bytes > 0)
		w->page_size = d->dirty_bytes / d->dirty_pages;
}

/* The run that already holds interval @seq at wall clock @wall, from another file. */
static struct ml_rep_writes *same_run(const struct line_ctx *c, long pid, double seq, double wall,
				      size_t *iv)
{
	struct ml_report *r = c->r;

	if (!(seq >= 1 && seq < 1e15) || !(wall > 0))
		return NULL;
	for (size_t i = 0; i < r->nw; i++) {
		struct ml_rep_writes *w = &r->w[i];
		size_t k = (size_t)seq - 1;

		if (w->pid == pid && k < w->niv && w->iv[k].seq == seq &&
		    w->iv[k].wall_ms == wall) {
			*iv = k;
			return w;
		}
	}
	return NULL;
}

static int note_also(const struct line_ctx *c, struct ml_rep_writes *w)
{
	if (same_src(w->src, c->src) || w->also)
		return 0;
	w->also = strdup(c->src);
	return w->also ? 0 : mlr_rl_oom(c);
}

/* The same interval again: take its page ranges if we have none yet. */
static int merge_interval(const struct line_ctx *c, struct ml_rep_writes *w, size_t iv,
			  const struct ml_writes_interval_rec *rec)
{
	int ret = note_also(c, w);

	if (ret || w->iv[iv].has_ranges)
		return ret;
	return add_ranges(c, w, iv, rec);
}

static int add_interval(const struct line_ctx *c, const struct ml_writes_interval_rec *rec)
{
	struct ml_rep_writes *w;
	struct ml_rep_interval *iv;
	size_t known;
	int ret;

	w = same_run(c, mlr_rl_long(rec->pid), rec->seq, rec->dirty.timestamp_ms, &known);
	if (w)
		return merge_interval(c, w, known, rec);
	w = writes_for(c, mlr_rl_long(rec->pid));
	if (!w || !mlr_rl_grow((void **)&w->iv, &w->civ, w->niv, sizeof(*w->iv)))
		return mlr_rl_oom(c);
	iv = &w->iv[w->niv++];
	iv->t_ms = rec->t_ms;
	iv->interval_s = rec->interval_s;
	iv->hot_vmas = (int)fmin(fmax(rec->hot_vmas, 0), 1e9);
	iv->seq = rec->seq;
	iv->wall_ms = rec->dirty.timestamp_ms;
	read_dirty(w, iv, &rec->dirty);
	for (size_t j = 0; j < rec->nregions; j++) {
		ret = add_region(c, w, j, &rec->regions[j]);
		if (ret)
			return ret;
	}
	return add_ranges(c, w, w->niv - 1, rec);
}

static int load_interval(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_writes_interval_rec rec;
	int ret = ml_fmt_writes_interval_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else
		ret = add_interval(c, &rec);
	ml_fmt_writes_interval_free(&rec);
	return ret;
}

static struct ml_rep_snaps *snaps_for(const struct line_ctx *c, long pid);

/* The sentence for a known token (or an older file's sentence), else the word itself. */
static void stop_text(char *dst, size_t size, enum ml_stop why, const char *word)
{
	snprintf(dst, size, "%s", why != ML_STOP_UNKNOWN ? ml_stop_text(why) : word);
}

/* writes and snapshot both end with a "summary": snapshot's counts "cycles" */
static int load_snap_summary(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_snapshot_summary_rec rec;
	struct ml_rep_snaps *s;

	ml_fmt_snapshot_summary_read(o, &rec);
	s = snaps_for(c, mlr_rl_long(rec.pid));
	if (!s)
		return mlr_rl_oom(c);
	stop_text(s->stopped_because, sizeof(s->stopped_because), rec.why, rec.why_word);
	snprintf(s->command, sizeof(s->command), "%s", rec.command);
	return 0;
}

/* A summary's "dirty" is that of its run's last interval. */
static struct ml_rep_writes *run_ending_at(const struct line_ctx *c, long pid, double wall)
{
	struct ml_report *r = c->r;

	for (size_t i = 0; wall > 0 && i < r->nw; i++) {
		struct ml_rep_writes *w = &r->w[i];

		if (w->pid == pid && w->niv && w->iv[w->niv - 1].wall_ms == wall)
			return w;
	}
	return NULL;
}

static int load_summary(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_writes_summary_rec rec;
	struct ml_rep_writes *w;
	int ret;

	if (ml_json_get(o, "cycles"))
		return load_snap_summary(c, o);
	ret = ml_fmt_writes_summary_read(o, &rec, c->err);
	if (ret) {
		ml_fmt_writes_summary_free(&rec);
		return mlr_rl_rec_err(c, ret);
	}
	ml_fmt_writes_summary_free(&rec); /* the report draws no summary regions */
	w = run_ending_at(c, mlr_rl_long(rec.pid), rec.dirty.timestamp_ms);
	if (w && note_also(c, w))
		return -ENOMEM;
	if (!w)
		w = writes_for(c, mlr_rl_long(rec.pid));
	if (!w)
		return mlr_rl_oom(c);
	w->have_summary = true;
	stop_text(w->stopped_because, sizeof(w->stopped_because), rec.why, rec.why_word);
	w->intervals = mlr_rl_long(rec.intervals);
	w->hot_vmas = mlr_rl_long(rec.hot_vmas);
	w->cumulative_dirty_bytes = rec.dirty.cumulative_dirty_bytes;
	w->avg_dirty_rate = rec.dirty.avg_dirty_rate;
	return 0;
}

static struct ml_rep_snaps *snaps_for(const struct line_ctx *c, long pid)
{
	struct ml_report *r = c->r;
	struct ml_rep_snaps *s;

	for (size_t i = 0; i < r->ns; i++)
		if (r->s[i].pid == pid && same_src(r->s[i].src, c->src))
			return &r->s[i];
	s = realloc(r->s, (r->ns + 1) * sizeof(*s));
	if (!s)
		return NULL;
	r->s = s;
	s = &r->s[r->ns];
	memset(s, 0, sizeof(*s));
	s->src = strdup(c->src);
	if (!s->src)
		return NULL;
	s->pid = pid;
	s->page_size = 4096;
	r->ns++;
	return s;
}

static void snap_region(struct ml_rep_snaps *s, struct ml_rep_snap_point *pt,
			const struct ml_snap_region_rec *reg, struct ml_rep_kind_use *use)
{
	int k = ml_report_kind(reg->kind[0] ? reg->kind : NULL);

	pt->resident[k] += reg->c.resident_pages;
	use[k].resident += reg->c.resident_pages;
	use[k].size += reg->c.size_pages;
	use[k].swapped += reg->c.swapped_pages;
	if (reg->c.has_written) {
		use[k].written += reg->c.written_pages;
		s->have_written = true;
	}
	if (reg->c.has_flags) {
		use[k].dirty += reg->c.dirty;
		s->have_dirty = true;
	}
}

static int add_snapshot(const struct line_ctx *c, const struct ml_snapshot_rec *rec)
{
	struct ml_rep_kind_use use[ML_REPORT_KINDS] = { 0 };
	struct ml_rep_snap_point *pt;
	struct ml_rep_snaps *s;

	s = snaps_for(c, mlr_rl_long(rec->pid));
	if (!s || !mlr_rl_grow((void **)&s->pt, &s->cpt, s->npt, sizeof(*s->pt)))
		return mlr_rl_oom(c);
	pt = &s->pt[s->npt++];
	pt->t_ms = rec->t_ms;
	for (size_t j = 0; j < rec->nregions; j++)
		snap_region(s, pt, &rec->regions[j], use);
	memcpy(s->last, use, sizeof(use));
	s->cycle_us_sum += rec->cycle_us;
	if (rec->cycle_us > s->cycle_us_max)
		s->cycle_us_max = rec->cycle_us;
	if (rec->page_size >= 512)
		s->page_size = rec->page_size;
	return 0;
}

static int load_snapshot(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_snapshot_rec rec;
	int ret = ml_fmt_snapshot_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else
		ret = add_snapshot(c, &rec);
	ml_fmt_snapshot_free(&rec);
	return ret;
}

static void free_faults(struct ml_rep_faults *f)
{
	free(f->src);
	free(f->rows);
}

/* The run's "faults" line, as the report keeps it. */
static int fill_faults(const struct line_ctx *c, struct ml_rep_faults *f,
		       const struct ml_faults_rec *rec)
{
	snprintf(f->mode, sizeof(f->mode), "%s", rec->mode);
	f->nminor = rec->nminor < ML_REP_HIST_MAX ? rec->nminor : ML_REP_HIST_MAX;
	f->nmajor = rec->nmajor < ML_REP_HIST_MAX ? rec->nmajor : ML_REP_HIST_MAX;
	for (size_t i = 0; i < f->nminor; i++)
		f->minor[i] = (double)rec->minor_hist[i];
	for (size_t i = 0; i < f->nmajor; i++)
		f->major[i] = (double)rec->major_hist[i];
	f->rows = calloc(rec->nrows ? rec->nrows : 1, sizeof(*f->rows));
	f->src = strdup(c->src);
	if (!f->rows || !f->src)
		return mlr_rl_oom(c);
	for (size_t i = 0; i < rec->nrows; i++) {
		const struct ml_faults_row_rec *row = &rec->rows[i];
		struct ml_rep_fault_row *fr = &f->rows[f->nrows++];

		snprintf(fr->comm, sizeof(fr->comm), "%s", row->comm);
		fr->pid = row->pid >= 0 ? mlr_rl_long((double)row->pid) : -1;
		fr->minor = (double)row->minor;
		fr->major = (double)row->major;
		fr->retried = row->has_retried ? (double)row->retried : NAN;
	}
	return 0;
}

/* One chart per file: a later faults line replaces an earlier one. */
static int keep_faults(const struct line_ctx *c, const struct ml_faults_rec *rec)
{
	struct ml_rep_faults f = { 0 }, *slot = NULL;
	struct ml_report *r = c->r;
	int ret = fill_faults(c, &f, rec);

	if (ret)
		goto fail;
	for (size_t i = 0; i < r->nf && !slot; i++)
		if (same_src(r->f[i].src, c->src))
			slot = &r->f[i];
	if (!slot) {
		slot = realloc(r->f, (r->nf + 1) * sizeof(*slot));
		if (!slot) {
			ret = mlr_rl_oom(c);
			goto fail;
		}
		r->f = slot;
		slot = &r->f[r->nf++];
	} else {
		free_faults(slot);
	}
	*slot = f;
	return 0;
fail:
	free_faults(&f);
	return ret;
}

/* "faults" and "faults_interval" (memlens/format_faults.h) */
static int load_faults(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_faults_rec rec;
	int ret = ml_fmt_faults_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else if (rec.interval)
		ret = mlr_rl_faults_interval(c, &rec);
	else
		ret = keep_faults(c, &rec);
	ml_fmt_faults_free(&rec);
	return ret;
}

static void free_migrate(struct ml_rep_migrate *m)
{
	for (size_t i = 0; i < m->npol; i++)
		free(m->pol[i].rounds);
	free(m->pol);
	free(m->src);
}

static int fill_migrate(const struct line_ctx *c, struct ml_rep_migrate *m,
			const struct ml_migrate_model_rec *rec)
{
	m->bandwidth_mbps = rec->bandwidth_mbps;
	m->round_interval_s = rec->round_interval_s;
	m->src = strdup(c->src);
	m->pol = calloc(rec->npol ? rec->npol : 1, sizeof(*m->pol));
	if (!m->src || !m->pol)
		return mlr_rl_oom(c);
	for (size_t i = 0; i < rec->npol; i++) {
		const struct ml_migrate_model_policy_rec *rp = &rec->pol[i];
		struct ml_rep_policy *p = &m->pol[m->npol++];

		snprintf(p->name, sizeof(p->name), "%s", rp->name);
		p->rounds = calloc(rp->nrounds ? rp->nrounds : 1, sizeof(double));
		if (!p->rounds)
			return mlr_rl_oom(c);
		for (size_t j = 0; j < rp->nrounds; j++)
			p->rounds[p->nrounds++] = (double)rp->rounds[j].bytes;
		p->total_bytes = (double)rp->total_bytes;
		p->final_round_bytes = (double)rp->final_round_bytes;
		p->downtime_ms = rp->downtime_ms;
	}
	return 0;
}

static int load_migrate(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_rep_migrate m = { 0 }, *slot = NULL;
	struct ml_report *r = c->r;
	struct ml_migrate_model_rec rec;
	int ret = ml_fmt_migrate_model_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else
		ret = fill_migrate(c, &m, &rec);
	ml_fmt_migrate_model_free(&rec);
	if (ret)
		goto fail;
	for (size_t i = 0; i < r->nm && !slot; i++)
		if (same_src(r->m[i].src, c->src))
			slot = &r->m[i];
	if (!slot) {
		slot = realloc(r->m, (r->nm + 1) * sizeof(*slot));
		if (!slot) {
			ret = mlr_rl_oom(c);
			goto fail;
		}
		r->m = slot;
		slot = &r->m[r->nm++];
	} else {
		free_migrate(slot);
	}
	*slot = m;
	return 0;
fail:
	free_migrate(&m);
	return ret;
}

static int dispatch(const struct line_ctx *c, const struct ml_json *o)
{
	const char *type = ml_json_get_str(o, "type");

	if (!type)
		return mlr_rl_bad(c, "%s", "no \"type\" field (expected one of " TYPES_KNOWN ")");
	if (!strcmp(type, "interval"))
		return load_interval(c, o);
	if (!strcmp(type, "summary"))
		return load_summary(c, o);
	if (!strcmp(type, "snapshot"))
		return load_snapshot(c, o);
	if (!strcmp(type, "faults") || !strcmp(type, "faults_interval"))
		return load_faults(c, o);
	if (!strcmp(type, "migrate_model"))
		return load_migrate(c, o);
	if (!strcmp(type, "leaks") || !strcmp(type, "leaks_interval"))
		return mlr_rl_leaks(c, o);
	if (!strcmp(type, "slab") || !strcmp(type, "slab_interval"))
		return mlr_rl_slab(c, o);
	if (!strcmp(type, "oom_kill"))
		return mlr_rl_oom_kill(c, o);
	if (!strcmp(type, "oom_summary") || !strcmp(type, "oom_interval"))
		return mlr_rl_oom_count(c, o);
	if (c->r->skip_unknown) {
		c->r->skipped++;
		return 1;
	}
	return ml_err_set(c->err, EINVAL,
			  "%s:%ld: unknown type \"%.60s\"; report reads the types " TYPES_KNOWN
			  " (--skip-unknown skips other lines)",
			  c->src, c->lineno, type);
}

static bool looks_like_object(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i < len && s[i] == '{';
}

int ml_report_load_line(struct ml_report *r, const char *src, long lineno, const char *text,
			size_t len, struct ml_err *err)
{
	struct line_ctx c = { .r = r, .src = src, .lineno = lineno, .err = err };
	struct ml_json *o = NULL;
	int ret;

	if (!looks_like_object(text, len))
		return mlr_rl_bad(&c, "%s",
				  "not a JSON object (is the profiled program's own output "
				  "mixed in? use writes --record FILE or -p PID)");
	ret = ml_json_parse(text, len, &o, err);
	if (ret == -ENOMEM)
		return mlr_rl_oom(&c);
	if (ret)
		return ml_err_wrap(err,
				   "%s:%ld: not one complete JSON object (a truncated line?); "
				   "remove or regenerate that line",
				   src, lineno);
	if (ml_json_type(o) != ML_JSON_OBJECT)
		ret = mlr_rl_bad(&c, "%s", "not a JSON object");
	else
		ret = dispatch(&c, o);
	ml_json_free(o);
	if (ret > 0)
		return 0; /* skipped */
	if (!ret)
		r->lines++;
	return ret;
}
