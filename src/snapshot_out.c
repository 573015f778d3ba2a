// SPDX-License-Identifier: MIT
/* memlens snapshot: how a snapshot is written out. */
#include <inttypes.h>
#include <string.h>

#include "cliutil.h"
#include "jsonw.h"
#include "snapshot_out.h"

static void json_counts(struct jw *w, const struct snap_counts *c, unsigned int flags)
{
	ml_jw_kuint(w, "size_pages", c->size_pages);
	ml_jw_kuint(w, "resident_pages", c->resident_pages);
	ml_jw_kuint(w, "swapped_pages", c->swapped_pages);
	ml_jw_kuint(w, "file_pages", c->file_pages);
	ml_jw_kuint(w, "huge_pages", c->huge_pages);
	ml_jw_kuint(w, "zero_pages", c->zero_pages);
	if (flags & SNAP_HAVE_WRITTEN)
		ml_jw_kuint(w, "written_pages", c->written_pages);
	if (!(flags & SNAP_HAVE_PAGES))
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

static void json_delta(struct jw *w, const struct snap_dcounts *d)
{
	ml_jw_kint(w, "size_pages", d->size_pages);
	ml_jw_kint(w, "resident_pages", d->resident_pages);
	ml_jw_kint(w, "swapped_pages", d->swapped_pages);
	ml_jw_kint(w, "file_pages", d->file_pages);
	ml_jw_kint(w, "huge_pages", d->huge_pages);
	ml_jw_kint(w, "zero_pages", d->zero_pages);
}

static void json_mm(struct jw *w, const struct snap_mm *m)
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
static void json_kinds(struct jw *w, const struct snapshot *s)
{
	ml_jw_key(w, "by_kind");
	ml_jw_obj(w);
	for (int k = 0; k < VMA_KIND_COUNT; k++) {
		const struct snap_counts *c = &s->kinds[k];
		uint64_t mem = c->resident_pages + c->swapped_pages;

		if (!c->size_pages)
			continue;
		ml_jw_key(w, ml_vma_kind_name(k));
		ml_jw_obj(w);
		json_counts(w, c, s->flags);
		ml_jw_kdbl(w, "resident_pct", ml_snap_pct(c->resident_pages, c->size_pages));
		ml_jw_kdbl(w, "in_memory_pct", ml_snap_pct(c->resident_pages, mem));
		ml_jw_kdbl(w, "out_memory_pct", ml_snap_pct(c->swapped_pages, mem));
		if (s->flags & SNAP_HAVE_PAGES)
			ml_jw_kdbl(w, "dirty_pct", ml_snap_pct(c->dirty_pages, c->resident_pages));
		if (s->flags & SNAP_HAVE_WRITTEN)
			ml_jw_kdbl(w, "written_pct", ml_snap_pct(c->written_pages, c->resident_pages));
		ml_jw_obj_end(w);
	}
	ml_jw_obj_end(w);
}

static void json_region(struct jw *w, const struct snapshot *s, const struct snapshot_diff *d,
			size_t i)
{
	const struct vma *v = &s->vmas.v[i];

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

void snap_json(FILE *f, const struct snapshot *s, const struct snapshot_diff *d, uint64_t seq,
	       int64_t t_ms)
{
	struct jw w;

	ml_jw_init(&w, f);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "snapshot");
	ml_jw_kint(&w, "pid", s->pid);
	ml_jw_kuint(&w, "seq", seq);
	ml_jw_kint(&w, "t_ms", t_ms);
	ml_jw_kuint(&w, "cycle_us", s->cycle_ns / 1000);
	ml_jw_kstr(&w, "method", ml_snap_method_name(s->method));
	if (s->method == SNAP_METHOD_READ) {
		ml_jw_kuint(&w, "pagemap_reads", s->pagemap_reads);
		/* without frame numbers zero and huge pages are not told apart */
		ml_jw_kbool(&w, "zero_and_huge_known", !(s->flags & SNAP_PFN_HIDDEN));
	}
	ml_jw_kuint(&w, "scan_threads", s->scan_threads);
	ml_jw_kuint(&w, "recounts", s->recounts);
	ml_jw_kuint(&w, "page_size", 4096);
	ml_jw_kuint(&w, "vmas", s->vmas.n);
	ml_jw_key(&w, "totals");
	ml_jw_obj(&w);
	json_counts(&w, &s->totals, s->flags);
	ml_jw_obj_end(&w);
	if (d) {
		ml_jw_key(&w, "deltas");
		ml_jw_obj(&w);
		json_delta(&w, &d->totals);
		ml_jw_kuint(&w, "vmas_added", d->added);
		ml_jw_kuint(&w, "vmas_removed", d->removed);
		ml_jw_kint(&w, "dt_ms", d->dt_ns / 1000000);
		ml_jw_obj_end(&w);
	}
	json_mm(&w, &s->mm);
	json_kinds(&w, s);
	ml_jw_key(&w, "regions");
	ml_jw_arr(&w);
	for (size_t i = 0; i < s->vmas.n; i++)
		json_region(&w, s, d, i);
	ml_jw_arr_end(&w);
	ml_jw_obj_end(&w);
}

void snap_csv_header(FILE *f)
{
	fputs("seq,t_ms,cycle_us,pid,start_addr,end_addr,perms,kind,path,size_pages,"
	      "resident_pages,swapped_pages,file_pages,huge_pages,zero_pages,written_pages,"
	      "dirty_pages,referenced_pages,active_pages,lru_pages,anon_pages,swapbacked_pages,"
	      "shared_pages,d_resident_pages,d_swapped_pages,d_file_pages,d_huge_pages,"
	      "d_zero_pages,new\n",
	      f);
}

static void csv_str(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputc('"', f);
}

static void csv_counts(FILE *f, const struct snap_counts *c, unsigned int flags)
{
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
		c->size_pages, c->resident_pages, c->swapped_pages, c->file_pages, c->huge_pages,
		c->zero_pages);
	if (flags & SNAP_HAVE_WRITTEN)
		fprintf(f, ",%" PRIu64, c->written_pages);
	else
		fputs(",", f);
	if (flags & SNAP_HAVE_PAGES)
		fprintf(f,
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64,
			c->dirty_pages, c->referenced_pages, c->active_pages, c->lru_pages,
			c->anon_pages, c->swapbacked_pages, c->shared_pages);
	else
		fputs(",,,,,,,", f);
}

static void csv_delta(FILE *f, const struct snap_dcounts *d, int is_new)
{
	if (!d) {
		fputs(",,,,,,\n", f);
		return;
	}
	fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d\n",
		d->resident_pages, d->swapped_pages, d->file_pages, d->huge_pages, d->zero_pages,
		is_new);
}

void snap_csv(FILE *f, const struct snapshot *s, const struct snapshot_diff *d, uint64_t seq,
	      int64_t t_ms)
{
	for (size_t i = 0; i < s->vmas.n; i++) {
		const struct vma *v = &s->vmas.v[i];

		fprintf(f,
			"%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%d,0x%" PRIx64 ",0x%" PRIx64 ",%s,%s,",
			seq, t_ms, s->cycle_ns / 1000, (int)s->pid, v->start, v->end, v->perms,
			ml_vma_kind_name(v->kind));
		csv_str(f, ml_vma_path(&s->vmas, v));
		csv_counts(f, &s->c[i], s->flags);
		csv_delta(f, d ? &d->d[i] : NULL, d && d->prev[i] < 0);
	}
	fprintf(f, "%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%d,,,,total,", seq, t_ms,
		s->cycle_ns / 1000, (int)s->pid);
	csv_counts(f, &s->totals, s->flags);
	csv_delta(f, d ? &d->totals : NULL, 0);
	fflush(f);
}

static void table_regions(FILE *f, const struct snapshot *s)
{
	bool pg = s->flags & SNAP_HAVE_PAGES, wr = s->flags & SNAP_HAVE_WRITTEN;
	char b[16];

	fprintf(f, "%-25s %-4s %-8s %7s %7s %6s %6s %6s %6s", "RANGE", "PERM", "KIND", "SIZE",
		"RSS", "SWAP", "FILE", "HUGE", "ZERO");
	if (wr)
		fprintf(f, " %6s", "WRITN");
	if (pg)
		fprintf(f, " %6s %6s %6s %6s %6s", "DIRTY", "REF", "ACTIVE", "ANON", "SHARED");
	fprintf(f, "  PATH   (page counts; 1 page = 4 KiB)\n");
	for (size_t i = 0; i < s->vmas.n; i++) {
		const struct vma *v = &s->vmas.v[i];
		const struct snap_counts *c = &s->c[i];

		fprintf(f,
			"%012" PRIx64 "-%012" PRIx64 " %-4s %-8s %7s %7" PRIu64 " %6" PRIu64
			" %6" PRIu64 " %6" PRIu64 " %6" PRIu64,
			v->start, v->end, v->perms, ml_vma_kind_name(v->kind),
			fmt_bytes(v->end - v->start, b, sizeof(b)), c->resident_pages,
			c->swapped_pages, c->file_pages, c->huge_pages, c->zero_pages);
		if (wr)
			fprintf(f, " %6" PRIu64, c->written_pages);
		if (pg)
			fprintf(f, " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64 " %6" PRIu64,
				c->dirty_pages, c->referenced_pages, c->active_pages, c->anon_pages,
				c->shared_pages);
		fprintf(f, "  %s\n", ml_vma_path(&s->vmas, v));
	}
}

static void table_kinds(FILE *f, const struct snapshot *s)
{
	bool pg = s->flags & SNAP_HAVE_PAGES, wr = s->flags & SNAP_HAVE_WRITTEN;
	char b[16];

	fprintf(f, "\nby region kind:\n%-9s %8s %9s %9s %8s %8s", "KIND", "SIZE", "RESIDENT",
		"SWAPPED", "IN-MEM%", "OUT-MEM%");
	if (pg)
		fprintf(f, " %7s", "DIRTY%");
	if (wr)
		fprintf(f, " %8s", "WRITTEN%");
	fputc('\n', f);
	for (int k = 0; k <= VMA_KIND_COUNT; k++) {
		const struct snap_counts *c = k < VMA_KIND_COUNT ? &s->kinds[k] : &s->totals;
		uint64_t mem = c->resident_pages + c->swapped_pages;

		if (!c->size_pages)
			continue;
		fprintf(f, "%-9s %8s %9" PRIu64 " %9" PRIu64 " %8.1f %8.1f",
			k < VMA_KIND_COUNT ? ml_vma_kind_name(k) : "total",
			fmt_bytes(c->size_pages * 4096, b, sizeof(b)), c->resident_pages,
			c->swapped_pages, ml_snap_pct(c->resident_pages, mem),
			ml_snap_pct(c->swapped_pages, mem));
		if (pg)
			fprintf(f, " %7.1f", ml_snap_pct(c->dirty_pages, c->resident_pages));
		if (wr)
			fprintf(f, " %8.1f", ml_snap_pct(c->written_pages, c->resident_pages));
		fputc('\n', f);
	}
}

void snap_table(FILE *f, const struct snapshot *s)
{
	const struct snap_mm *m = &s->mm;
	char b1[16], b2[16], b3[16];

	fprintf(f, "pid %d: %zu VMAs, %s mapped, %s resident, %s swapped; collected in %.3f ms\n\n",
		(int)s->pid, s->vmas.n, fmt_bytes(s->totals.size_pages * 4096, b1, sizeof(b1)),
		fmt_bytes(s->totals.resident_pages * 4096, b2, sizeof(b2)),
		fmt_bytes(s->totals.swapped_pages * 4096, b3, sizeof(b3)), s->cycle_ns / 1e6);
	if (s->method == SNAP_METHOD_READ)
		fprintf(f, "counted by reading /proc/%d/pagemap, not with PAGEMAP_SCAN%s\n\n",
			(int)s->pid,
			(s->flags & SNAP_PFN_HIDDEN) ? "; without root the kernel hides page "
						       "frames: zero pages count as resident, "
						       "huge pages as not huge"
						     : "");
	table_regions(f, s);
	table_kinds(f, s);
	fprintf(f,
		"\nmm counters (kB): VmSize %" PRId64 "  VmRSS %" PRId64 "  RssAnon %" PRId64
		"  RssFile %" PRId64 "  RssShmem %" PRId64 "  VmSwap %" PRId64 "  VmHWM %" PRId64
		"\n",
		m->vm_size_kb, m->vm_rss_kb, m->rss_anon_kb, m->rss_file_kb, m->rss_shmem_kb,
		m->vm_swap_kb, m->vm_hwm_kb);
	fflush(f);
}

void snap_line(FILE *f, const struct snapshot *s, const struct snapshot_diff *d, uint64_t seq,
	       int64_t t_ms)
{
	const struct snap_counts *c = &s->totals;

	fprintf(f,
		"#%-5" PRIu64 " t=%8.3fs cycle %7.3f ms  VMAs %4zu (+%zu -%zu)  rss %8" PRIu64
		" (%+" PRId64 ")  swap %6" PRIu64 "  file %7" PRIu64 "  huge %6" PRIu64
		"  zero %6" PRIu64,
		seq, t_ms / 1000.0, s->cycle_ns / 1e6, s->vmas.n, d ? d->added : 0,
		d ? d->removed : 0, c->resident_pages, d ? d->totals.resident_pages : 0,
		c->swapped_pages, c->file_pages, c->huge_pages, c->zero_pages);
	if (s->flags & SNAP_HAVE_WRITTEN)
		fprintf(f, "  written %6" PRIu64, c->written_pages);
	fputc('\n', f);
	fflush(f);
}
