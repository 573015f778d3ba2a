// SPDX-License-Identifier: MIT
/* The `snapshot` JSON Lines schema, written and read (see memlens/format_snapshot.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_snapshot.h"
#include "memlens/maps.h"

static void json_counts(struct ml_jw *w, const struct ml_snap_counts *c, unsigned int flags)
{
	ml_jw_kuint(w, "size_pages", c->size_pages);
	ml_jw_kuint(w, "resident_pages", c->resident_pages);
	ml_jw_kuint(w, "swapped_pages", c->swapped_pages);
	ml_jw_kuint(w, "file_pages", c->file_pages);
	ml_jw_kuint(w, "huge_pages", c->huge_pages);
	ml_jw_kuint(w, "zero_pages", c->zero_pages);
	/* shmem swap that could not be read: swapped_pages is a lower bound */
	if (c->swap_unknown)
		ml_jw_kuint(w, "swap_unknown_vmas", c->swap_unknown);
	if (flags & ML_SNAP_HAVE_WRITTEN)
		ml_jw_kuint(w, "written_pages", c->written_pages);
	if (flags & ML_SNAP_HAVE_SMAPS) {
		/* from /proc/PID/smaps, as pmap -X and smem show them */
		ml_jw_key(w, "smaps");
		ml_jw_obj(w);
		ml_jw_kuint(w, "rss_kb", c->smaps_rss_kb);
		ml_jw_kuint(w, "pss_kb", c->pss_kb);
		ml_jw_kuint(w, "pss_dirty_kb", c->pss_dirty_kb);
		ml_jw_kuint(w, "uss_kb", c->uss_kb);
		ml_jw_kuint(w, "dirty_kb", c->dirty_kb);
		ml_jw_obj_end(w);
	}
	if (!(flags & ML_SNAP_HAVE_PAGES))
		return;
	ml_jw_key(w, "page_flags");
	ml_jw_obj(w);
	ml_jw_kuint(w, "dirty", c->dirty_pages);
	ml_jw_kuint(w, "referenced", c->referenced_pages);
	ml_jw_kuint(w, "active", c->active_pages);
	ml_jw_kuint(w, "lru", c->lru_pages);
	ml_jw_kuint(w, "anon", c->anon_pages);
	ml_jw_kuint(w, "swapbacked", c->swapbacked_pages);
	ml_jw_kuint(w, "shared", c->shared_pages);
	ml_jw_obj_end(w);
}

static void json_delta(struct ml_jw *w, const struct ml_snap_dcounts *d)
{
	ml_jw_kint(w, "size_pages", d->size_pages);
	ml_jw_kint(w, "resident_pages", d->resident_pages);
	ml_jw_kint(w, "swapped_pages", d->swapped_pages);
	ml_jw_kint(w, "file_pages", d->file_pages);
	ml_jw_kint(w, "huge_pages", d->huge_pages);
	ml_jw_kint(w, "zero_pages", d->zero_pages);
}

static void json_mm(struct ml_jw *w, const struct ml_snap_mm *m)
{
	ml_jw_key(w, "mm");
	ml_jw_obj(w);
	ml_jw_kint(w, "VmSize_kb", m->vm_size_kb);
	ml_jw_kint(w, "VmRSS_kb", m->vm_rss_kb);
	ml_jw_kint(w, "RssAnon_kb", m->rss_anon_kb);
	ml_jw_kint(w, "RssFile_kb", m->rss_file_kb);
	ml_jw_kint(w, "RssShmem_kb", m->rss_shmem_kb);
	ml_jw_kint(w, "VmSwap_kb", m->vm_swap_kb);
	ml_jw_kint(w, "VmHWM_kb", m->vm_hwm_kb);
	ml_jw_obj_end(w);
}

/* In/out of memory and dirty share per region kind. */
static void json_kinds(struct ml_jw *w, const struct ml_snapshot *s)
{
	ml_jw_key(w, "by_kind");
	ml_jw_obj(w);
	for (int k = 0; k < ML_VMA_KIND_COUNT; k++) {
		const struct ml_snap_counts *c = &s->kinds[k];
		uint64_t mem = c->resident_pages + c->swapped_pages;

		if (!c->size_pages)
			continue;
		ml_jw_key(w, ml_vma_kind_name(k));
		ml_jw_obj(w);
		json_counts(w, c, s->flags);
		ml_jw_kdbl(w, "resident_pct", ml_snap_pct(c->resident_pages, c->size_pages));
		ml_jw_kdbl(w, "in_memory_pct", ml_snap_pct(c->resident_pages, mem));
		ml_jw_kdbl(w, "out_memory_pct", ml_snap_pct(c->swapped_pages, mem));
		if (s->flags & ML_SNAP_HAVE_PAGES)
			ml_jw_kdbl(w, "dirty_pct", ml_snap_pct(c->dirty_pages, c->resident_pages));
		if (s->flags & ML_SNAP_HAVE_WRITTEN)
			ml_jw_kdbl(w, "written_pct",
				   ml_snap_pct(c->written_pages, c->resident_pages));
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

static void json_region(struct ml_jw *w, const struct ml_snapshot *s,
			const struct ml_snapshot_diff *d, size_t i)
{
	const struct ml_vma *v = &s->vmas.v[i];

	ml_jw_obj(w);
	ml_jw_khex(w, "start_addr", v->start);
	ml_jw_khex(w, "end_addr", v->end);
	ml_jw_kstr(w, "perms", v->perms);
	ml_jw_kstr(w, "kind", ml_vma_kind_name(v->kind));
	ml_jw_kstr(w, "path", ml_vma_path(&s->vmas, v));
	json_counts(w, &s->c[i], s->flags);
	if (d && d->n == s->vmas.n) {
		ml_jw_kbool(w, "new", d->prev[i] < 0);
		ml_jw_key(w, "deltas");
		ml_jw_obj(w);
		json_delta(w, &d->d[i]);
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

void ml_fmt_snapshot(struct ml_jw *w, const struct ml_snapshot *s, const struct ml_snapshot_diff *d,
		     uint64_t seq, int64_t t_ms)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "snapshot");
	ml_jw_kint(w, "pid", s->pid);
	ml_jw_kuint(w, "seq", seq);
	ml_jw_kint(w, "t_ms", t_ms);
	ml_jw_kuint(w, "cycle_us", s->cycle_ns / 1000);
	if (s->flags & ML_SNAP_HAVE_SMAPS) {
		ml_jw_kuint(w, "smaps_us", s->smaps_ns / 1000);
		ml_jw_kuint(w, "smaps_unmatched_vmas", s->smaps_unmatched);
	}
	ml_jw_kstr(w, "method", ml_snap_method_name(s->method));
	if (s->method == ML_SNAP_METHOD_READ) {
		ml_jw_kuint(w, "pagemap_reads", s->pagemap_reads);
		/* without frame numbers zero and huge pages are not told apart */
		ml_jw_kbool(w, "zero_and_huge_known", !(s->flags & ML_SNAP_PFN_HIDDEN));
	}
	ml_jw_kuint(w, "scan_threads", s->scan_threads);
	ml_jw_kuint(w, "recounts", s->recounts);
	/* never a count passed off as exact: say when the kernel did not confirm it */
	ml_jw_kbool(w, "exact", s->exact);
	if (!s->exact)
		ml_jw_kstr(w, "not_exact_because", ml_snap_check_text(s->check));
	ml_jw_kuint(w, "page_size", 4096);
	ml_jw_kuint(w, "vmas", s->vmas.n);
	ml_jw_key(w, "totals");
	ml_jw_obj(w);
	json_counts(w, &s->totals, s->flags);
	ml_jw_obj_end(w);
	if (d) {
		ml_jw_key(w, "deltas");
		ml_jw_obj(w);
		json_delta(w, &d->totals);
		ml_jw_kuint(w, "vmas_added", d->added);
		ml_jw_kuint(w, "vmas_removed", d->removed);
		ml_jw_kint(w, "dt_ms", d->dt_ns / 1000000);
		ml_jw_obj_end(w);
	}
	json_mm(w, &s->mm);
	json_kinds(w, s);
	ml_jw_key(w, "regions");
	ml_jw_arr(w);
	for (size_t i = 0; i < s->vmas.n; i++)
		json_region(w, s, d, i);
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

void ml_fmt_snapshot_summary(struct ml_jw *w, const struct ml_snapshot_summary *sum)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "type", "summary");
	ml_jw_kint(w, "pid", sum->pid);
	ml_jw_kuint(w, "cycles", sum->cycles);
	ml_jw_kuint(w, "cycle_us_min", sum->cycle_us_min);
	ml_jw_kuint(w, "cycle_us_median", sum->cycle_us_median);
	ml_jw_kuint(w, "cycle_us_max", sum->cycle_us_max);
	ml_jw_kuint(w, "cycle_us_mean", sum->cycle_us_mean);
	ml_jw_kuint(w, "cycles_not_exact", sum->cycles_not_exact);
	if (sum->interval_ms) {
		ml_jw_kuint(w, "interval_ms", sum->interval_ms);
		ml_jw_kuint(w, "cycles_wanted", sum->cycles_wanted);
		ml_jw_kbool(w, "interval_kept", sum->interval_kept);
	}
	ml_jw_kstr(w, "stopped_because", ml_stop_token(sum->why));
	if (sum->command && sum->command[0])
		ml_jw_kstr(w, "command", sum->command);
	ml_jw_obj_end(w);
}

static void read_counts(const struct ml_json *o, struct ml_snap_counts_rec *c)
{
	const struct ml_json *f = ml_json_get(o, "page_flags");

	c->size_pages = ml_json_get_num_or0(o, "size_pages");
	c->resident_pages = ml_json_get_num_or0(o, "resident_pages");
	c->swapped_pages = ml_json_get_num_or0(o, "swapped_pages");
	c->file_pages = ml_json_get_num_or0(o, "file_pages");
	c->huge_pages = ml_json_get_num_or0(o, "huge_pages");
	c->zero_pages = ml_json_get_num_or0(o, "zero_pages");
	c->swap_unknown_vmas = ml_json_get_num_or0(o, "swap_unknown_vmas");
	c->has_written = ml_json_get_finite(o, "written_pages", &c->written_pages);
	if (!c->has_written)
		c->written_pages = 0;
	c->has_flags = ml_json_get_finite(f, "dirty", &c->dirty);
	if (!c->has_flags)
		c->dirty = 0;
	c->referenced = ml_json_get_num_or0(f, "referenced");
	c->active = ml_json_get_num_or0(f, "active");
	c->lru = ml_json_get_num_or0(f, "lru");
	c->anon = ml_json_get_num_or0(f, "anon");
	c->swapbacked = ml_json_get_num_or0(f, "swapbacked");
	c->shared = ml_json_get_num_or0(f, "shared");
}

static void copy_str(char *dst, size_t size, const char *s)
{
	snprintf(dst, size, "%s", s ? s : "");
}

static int read_region(const struct ml_json *o, size_t i, struct ml_snap_region_rec *r,
		       struct ml_err *err)
{
	const struct ml_json *d = ml_json_get(o, "deltas");
	const char *path = ml_json_get_str(o, "path");
	double v;

	if (!ml_json_get_finite(o, "resident_pages", &v))
		return ml_err_set(err, EINVAL,
				  "region %zu: field \"resident_pages\" is missing or not a number",
				  i);
	if (ml_json_get_hex(o, "start_addr", &r->start))
		r->start = 0;
	if (ml_json_get_hex(o, "end_addr", &r->end))
		r->end = 0;
	copy_str(r->perms, sizeof(r->perms), ml_json_get_str(o, "perms"));
	copy_str(r->kind, sizeof(r->kind), ml_json_get_str(o, "kind"));
	if (path) {
		r->path = strdup(path);
		if (!r->path)
			return ml_err_set(err, ENOMEM, "out of memory");
	}
	read_counts(o, &r->c);
	r->has_delta = ml_json_type(d) == ML_JSON_OBJECT;
	ml_json_get_bool(o, "new", &r->is_new);
	r->d_size = ml_json_get_num_or0(d, "size_pages");
	r->d_resident = ml_json_get_num_or0(d, "resident_pages");
	r->d_swapped = ml_json_get_num_or0(d, "swapped_pages");
	r->d_file = ml_json_get_num_or0(d, "file_pages");
	r->d_huge = ml_json_get_num_or0(d, "huge_pages");
	r->d_zero = ml_json_get_num_or0(d, "zero_pages");
	return 0;
}

int ml_fmt_snapshot_read(const struct ml_json *o, struct ml_snapshot_rec *r, struct ml_err *err)
{
	const struct ml_json *regs = ml_json_get(o, "regions");
	size_t n = ml_json_count(regs);
	int ret;

	memset(r, 0, sizeof(*r));
	if (ml_json_get_double(o, "t_ms", &r->t_ms) || !isfinite(r->t_ms))
		return ml_err_set(err, EINVAL, "field \"t_ms\" is missing or not a number");
	if (ml_json_type(regs) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"regions\" is missing or not an array");
	r->pid = ml_json_get_num_or0(o, "pid");
	r->seq = ml_json_get_num_or0(o, "seq");
	r->cycle_us = ml_json_get_num_or0(o, "cycle_us");
	r->scan_threads = ml_json_get_num_or0(o, "scan_threads");
	r->recounts = ml_json_get_num_or0(o, "recounts");
	/* records of versions that did not say are taken as exact, as they claimed */
	if (ml_json_get_bool(o, "exact", &r->exact))
		r->exact = true;
	r->page_size = ml_json_get_num_or0(o, "page_size");
	r->vmas = ml_json_get_num_or0(o, "vmas");
	read_counts(ml_json_get(o, "totals"), &r->totals);
	r->regions = calloc(n ? n : 1, sizeof(*r->regions));
	if (!r->regions)
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		ret = read_region(ml_json_at(regs, i), i, &r->regions[i], err);
		r->nregions++; /* freed with the others, also when it failed */
		if (ret)
			return ret;
	}
	return 0;
}

void ml_fmt_snapshot_free(struct ml_snapshot_rec *r)
{
	for (size_t i = 0; i < r->nregions; i++)
		free(r->regions[i].path);
	free(r->regions);
	r->regions = NULL;
	r->nregions = 0;
}

void ml_fmt_snapshot_summary_read(const struct ml_json *o, struct ml_snapshot_summary_rec *r)
{
	const char *why = ml_json_get_str(o, "stopped_because");

	memset(r, 0, sizeof(*r));
	r->pid = ml_json_get_num_or0(o, "pid");
	r->cycles = ml_json_get_num_or0(o, "cycles");
	r->cycle_us_min = ml_json_get_num_or0(o, "cycle_us_min");
	r->cycle_us_median = ml_json_get_num_or0(o, "cycle_us_median");
	r->cycle_us_max = ml_json_get_num_or0(o, "cycle_us_max");
	r->cycle_us_mean = ml_json_get_num_or0(o, "cycle_us_mean");
	r->cycles_not_exact = ml_json_get_num_or0(o, "cycles_not_exact");
	r->interval_ms = ml_json_get_num_or0(o, "interval_ms");
	r->cycles_wanted = ml_json_get_num_or0(o, "cycles_wanted");
	if (ml_json_get_bool(o, "interval_kept", &r->interval_kept))
		r->interval_kept = true;
	r->why = ml_stop_parse(why);
	copy_str(r->why_word, sizeof(r->why_word), why);
	copy_str(r->command, sizeof(r->command), ml_json_get_str(o, "command"));
}
