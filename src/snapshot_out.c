// SPDX-License-Identifier: MIT
/* memlens snapshot: how a snapshot is written out. */
#include <inttypes.h>
#include <string.h>

#include <stdlib.h>

#include "cliutil.h"
#include "memlens/units.h"
#include "table.h"
#include "memlens/format_snapshot.h"
#include "memlens/jsonw.h"
#include "snapshot_out.h"

void snap_json(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	       int64_t t_ms)
{
	struct ml_jw w;

	ml_jw_init(&w, f);
	ml_fmt_snapshot(&w, s, d, seq, t_ms);
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

static void csv_counts(FILE *f, const struct ml_snap_counts *c, unsigned int flags)
{
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",", c->size_pages, c->resident_pages);
	/* empty: some shmem swap could not be read, and a lower bound would read as exact */
	if (!c->swap_unknown)
		fprintf(f, "%" PRIu64, c->swapped_pages);
	fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, c->file_pages, c->huge_pages,
		c->zero_pages);
	if (flags & ML_SNAP_HAVE_WRITTEN)
		fprintf(f, ",%" PRIu64, c->written_pages);
	else
		fputs(",", f);
	if (flags & ML_SNAP_HAVE_PAGES)
		fprintf(f,
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64,
			c->dirty_pages, c->referenced_pages, c->active_pages, c->lru_pages,
			c->anon_pages, c->swapbacked_pages, c->shared_pages);
	else
		fputs(",,,,,,,", f);
}

static void csv_delta(FILE *f, const struct ml_snap_dcounts *d, int is_new)
{
	if (!d) {
		fputs(",,,,,,\n", f);
		return;
	}
	fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d\n",
		d->resident_pages, d->swapped_pages, d->file_pages, d->huge_pages, d->zero_pages,
		is_new);
}

void snap_csv(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	      int64_t t_ms)
{
	for (size_t i = 0; i < s->vmas.n; i++) {
		const struct ml_vma *v = &s->vmas.v[i];

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

/* The unit of the tables of @s: from its largest size (pmap -x shows KiB). */
static uint64_t table_unit(const struct ml_snapshot *s, const char **name)
{
	return ml_size_unit(s->totals.size_pages * 4096, 7, name);
}

uint64_t snap_unit(const struct ml_snapshot *s)
{
	return table_unit(s, NULL);
}

#define KB(pages) ml_in_unit((pages)*4096, div)

/* The swapped amount of @c in @div units; with a "+?" when some shmem swap is not known. */
static const char *swap_cell(const struct ml_snap_counts *c, uint64_t div, char *buf, size_t size)
{
	snprintf(buf, size, "%" PRIu64 "%s", KB(c->swapped_pages), c->swap_unknown ? "+?" : "");
	return buf;
}

/* A size in kB in the table's unit. */
#define KBU(kb) ml_in_unit((kb)*1024, div)

/* The regions in @order; @max_lines > 0: as many as fit in that many lines, title included */
static void table_regions(FILE *f, const struct ml_snapshot *s, int width, int max_lines,
			  const size_t *order)
{
	bool pg = s->flags & ML_SNAP_HAVE_PAGES, wr = s->flags & ML_SNAP_HAVE_WRITTEN;
	bool sm = s->flags & ML_SNAP_HAVE_SMAPS;
	/* left out first to fit the width: the page flags, then zero and huge pages */
	const struct table_col cols[] = {
		{ "ADDRESS", TABLE_LEFT, 0, false }, { "KIND", TABLE_LEFT, 0, false },
		{ "PERM", TABLE_LEFT, 0, false },    { "SIZE", TABLE_RIGHT, 0, false },
		{ "RSS", TABLE_RIGHT, 0, false },    { "PSS", TABLE_RIGHT, 1, false },
		{ "USS", TABLE_RIGHT, 2, false },    { "DIRTY", TABLE_RIGHT, 1, false },
		{ "SWAP", TABLE_RIGHT, 0, false },   { "FILE", TABLE_RIGHT, 3, false },
		{ "HUGE", TABLE_RIGHT, 4, false },   { "ZERO", TABLE_RIGHT, 4, false },
		{ "WRITN", TABLE_RIGHT, 2, false },  { "PGDIRTY", TABLE_RIGHT, 5, false },
		{ "REF", TABLE_RIGHT, 6, false },    { "ACTIVE", TABLE_RIGHT, 6, false },
		{ "ANON", TABLE_RIGHT, 6, false },   { "SHARED", TABLE_RIGHT, 6, false },
		{ "MAPPING", TABLE_LEFT, 0, true },
	};
	const bool want[] = { 1, 1, 1, 1, 1, sm, sm, sm, 1, 1, 1, 1, wr, pg, pg, pg, pg, pg, 1 };
	struct table_col used[19];
	const char *unit;
	uint64_t div = table_unit(s, &unit);
	struct table *t;
	char a[32];
	int n = 0;

	for (int i = 0; i < 19; i++)
		if (want[i])
			used[n++] = cols[i];
	t = table_new(used, n);
	for (size_t k = 0; k < s->vmas.n; k++) {
		size_t i = order ? order[k] : k;
		const struct ml_vma *v = &s->vmas.v[i];
		const struct ml_snap_counts *c = &s->c[i];

		table_row(t);
		table_cell(t, "%s", table_addr(v->start, a, sizeof(a)));
		table_cell(t, "%s", ml_vma_kind_name(v->kind));
		table_cell(t, "%s", v->perms);
		table_cell(t, "%" PRIu64, ml_in_unit(v->end - v->start, div));
		table_cell(t, "%" PRIu64, KB(c->resident_pages));
		if (sm) {
			table_cell(t, "%" PRIu64, KBU(c->pss_kb));
			table_cell(t, "%" PRIu64, KBU(c->uss_kb));
			table_cell(t, "%" PRIu64, KBU(c->dirty_kb));
		}
		table_cell(t, "%s", swap_cell(c, div, a, sizeof(a)));
		table_cell(t, "%" PRIu64, KB(c->file_pages));
		table_cell(t, "%" PRIu64, KB(c->huge_pages));
		table_cell(t, "%" PRIu64, KB(c->zero_pages));
		if (wr)
			table_cell(t, "%" PRIu64, KB(c->written_pages));
		if (pg) {
			table_cell(t, "%" PRIu64, KB(c->dirty_pages));
			table_cell(t, "%" PRIu64, KB(c->referenced_pages));
			table_cell(t, "%" PRIu64, KB(c->active_pages));
			table_cell(t, "%" PRIu64, KB(c->anon_pages));
			table_cell(t, "%" PRIu64, KB(c->shared_pages));
		}
		table_cell(t, "%s", table_basename(ml_vma_path(&s->vmas, v)));
	}
	fprintf(f, "regions (sizes in %s):\n", unit);
	if (max_lines > 0)
		table_print_fit(t, f, width, 0, max_lines - 1);
	else
		table_print(t, f, width, 0, 0);
	table_free(t);
}

/* Is any swap device or file on: without one nothing can be out of memory. */
static bool swap_configured(void)
{
	FILE *fp = fopen("/proc/swaps", "re");
	char line[256];
	int n = 0;

	if (!fp)
		return true; /* cannot tell: show the columns */
	while (fgets(line, sizeof(line), fp))
		n++;
	fclose(fp);
	return n > 1; /* the header, then one line a device */
}

static void table_kinds(FILE *f, const struct ml_snapshot *s, int width)
{
	bool pg = s->flags & ML_SNAP_HAVE_PAGES, wr = s->flags & ML_SNAP_HAVE_WRITTEN;
	bool sm = s->flags & ML_SNAP_HAVE_SMAPS;
	/* in/out of memory only where something can be out: a swap device, or swapped pages */
	bool sw = s->totals.swapped_pages || s->totals.swap_unknown || swap_configured();
	const struct table_col cols[] = {
		{ "KIND", TABLE_LEFT, 0, false },      { "SIZE", TABLE_RIGHT, 0, false },
		{ "RESIDENT", TABLE_RIGHT, 0, false }, { "PSS", TABLE_RIGHT, 0, false },
		{ "USS", TABLE_RIGHT, 0, false },      { "DIRTY", TABLE_RIGHT, 0, false },
		{ "SWAPPED", TABLE_RIGHT, 0, false },  { "IN-MEM%", TABLE_RIGHT, 0, false },
		{ "OUT-MEM%", TABLE_RIGHT, 0, false }, { "PGDIRTY%", TABLE_RIGHT, 1, false },
		{ "WRITTEN%", TABLE_RIGHT, 1, false },
	};
	const bool want[] = { 1, 1, 1, sm, sm, sm, 1, sw, sw, pg, wr };
	struct table_col used[11];
	const char *unit;
	uint64_t div = table_unit(s, &unit);
	struct table *t;
	char b[32];
	int n = 0;

	for (int i = 0; i < 11; i++)
		if (want[i])
			used[n++] = cols[i];
	t = table_new(used, n);
	for (int k = 0; k <= ML_VMA_KIND_COUNT; k++) {
		const struct ml_snap_counts *c = k < ML_VMA_KIND_COUNT ? &s->kinds[k] : &s->totals;
		uint64_t mem = c->resident_pages + c->swapped_pages;

		if (!c->size_pages)
			continue;
		table_row(t);
		table_cell(t, "%s", k < ML_VMA_KIND_COUNT ? ml_vma_kind_name(k) : "total");
		table_cell(t, "%" PRIu64, KB(c->size_pages));
		table_cell(t, "%" PRIu64, KB(c->resident_pages));
		if (sm) {
			table_cell(t, "%" PRIu64, KBU(c->pss_kb));
			table_cell(t, "%" PRIu64, KBU(c->uss_kb));
			table_cell(t, "%" PRIu64, KBU(c->dirty_kb));
		}
		table_cell(t, "%s", swap_cell(c, div, b, sizeof(b)));
		if (sw) {
			table_cell(t, "%.1f", ml_snap_pct(c->resident_pages, mem));
			table_cell(t, "%.1f", ml_snap_pct(c->swapped_pages, mem));
		}
		if (pg)
			table_cell(t, "%.1f", ml_snap_pct(c->dirty_pages, c->resident_pages));
		if (wr)
			table_cell(t, "%.1f", ml_snap_pct(c->written_pages, c->resident_pages));
	}
	fprintf(f, "by region kind (sizes in %s):\n", unit);
	table_print(t, f, width, 0, 0);
	table_free(t);
	if (!sw)
		table_wrap(f, width, 1, "(no swap configured: nothing can be out of memory)");
}

/* two lines: with its numbers (a collection time of 100 ms or more), one could pass 80 columns */
static void table_head(FILE *f, int width, const struct ml_snapshot *s)
{
	char b1[16], b2[16], b3[16];

	table_wrap(f, width, 0, "pid %d: %zu VMAs, %s mapped, %s resident, %s%s swapped",
		   (int)s->pid, s->vmas.n,
		   ml_fmt_bytes(s->totals.size_pages * 4096, b1, sizeof(b1)),
		   ml_fmt_bytes(s->totals.resident_pages * 4096, b2, sizeof(b2)),
		   ml_fmt_bytes(s->totals.swapped_pages * 4096, b3, sizeof(b3)),
		   s->totals.swap_unknown ? "+?" : "");
	fprintf(f, "collected in %.3f ms: %s\n", s->cycle_ns / 1e6,
		s->exact ? "exact" : "NOT EXACT");
	if (s->flags & ML_SNAP_HAVE_SMAPS)
		table_wrap(f, width, 0,
			   "PSS, USS and DIRTY from /proc/%d/smaps, read after the count in %.3f "
			   "ms%s",
			   (int)s->pid, s->smaps_ns / 1e6,
			   s->smaps_unmatched ? " (some VMAs changed in between: left out)" : "");
	if (s->totals.swap_unknown)
		fprintf(f,
			"the swap of %" PRIu64 " shared memory VMAs is not known (\"+?\"): reading "
			"it takes root and cachestat (Linux 6.5)\n",
			s->totals.swap_unknown);
}

/* Why the counts are not exact: what the kernel said, in the last of the attempts. */
static void not_exact(FILE *f, int width, const struct ml_snapshot *s)
{
	table_wrap(f, width, 0,
		   "not exact: %s (%u attempts; counted %" PRIu64 " kB resident, the kernel's RSS "
		   "%" PRId64 " kB before and %" PRId64 " kB after the last)",
		   ml_snap_check_text(s->check), s->recounts + 1, s->totals.resident_pages * 4,
		   s->rss_before_kb, s->rss_after_kb);
}

void snap_table(FILE *f, const struct ml_snapshot *s)
{
	const struct ml_snap_mm *m = &s->mm;
	int width = table_width(f);

	table_head(f, width, s);
	if (!s->exact)
		not_exact(f, width, s);
	if (s->method == ML_SNAP_METHOD_READ)
		table_wrap(f, width, 0,
			   "counted by reading /proc/%d/pagemap, not with PAGEMAP_SCAN%s",
			   (int)s->pid,
			   (s->flags & ML_SNAP_PFN_HIDDEN)
				   ? "; without root the kernel hides page "
				     "frames: zero pages count as resident, huge "
				     "pages as not huge"
				   : "");
	fputc('\n', f);
	table_regions(f, s, width, 0, NULL);
	fputc('\n', f);
	table_kinds(f, s, width);
	fputc('\n', f);
	table_wrap(f, width, 2,
		   "mm counters (KiB): VmSize %" PRId64 "  VmRSS %" PRId64 "  RssAnon %" PRId64
		   "  RssFile %" PRId64 "  RssShmem %" PRId64 "  VmSwap %" PRId64
		   "  VmHWM %" PRId64,
		   m->vm_size_kb, m->vm_rss_kb, m->rss_anon_kb, m->rss_file_kb, m->rss_shmem_kb,
		   m->vm_swap_kb, m->vm_hwm_kb);
	fflush(f);
}

static const struct ml_snapshot *by_rss_of;

static int cmp_rss(const void *a, const void *b)
{
	uint64_t x = by_rss_of->c[*(const size_t *)a].resident_pages;
	uint64_t y = by_rss_of->c[*(const size_t *)b].resident_pages;

	if (x != y)
		return x < y ? 1 : -1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/*
 * The kinds in a paragraph, for a screen too short for their table: each kind's size and resident
 * size, the total last.
 */
static void kinds_compact(FILE *f, const struct ml_snapshot *s, int width)
{
	const char *unit;
	uint64_t div = table_unit(s, &unit);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return;
	fprintf(m, "by region kind, size/resident in %s:", unit);
	for (int k = 0; k <= ML_VMA_KIND_COUNT; k++) {
		const struct ml_snap_counts *c = k < ML_VMA_KIND_COUNT ? &s->kinds[k] : &s->totals;

		if (c->size_pages)
			fprintf(m, "%s %s %" PRIu64 "/%" PRIu64, k ? "," : "",
				k < ML_VMA_KIND_COUNT ? ml_vma_kind_name(k) : "total",
				KB(c->size_pages), KB(c->resident_pages));
	}
	fclose(m);
	table_wrap(f, width, 2, "%s (a taller terminal shows the table)", text);
	free(text);
}

/*
 * What the live screen shows above the regions, into memory: @compact puts the kinds in a
 * paragraph. Returns its lines, or -1 without memory.
 */
static int screen_top(const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
		      int64_t t_ms, int cols, bool compact, char **top, size_t *top_len)
{
	FILE *o = open_memstream(top, top_len);
	int n = 0;
	char b[16];

	if (!o)
		return -1;
	fprintf(o, "memlens snapshot - cycle %" PRIu64 ", %.1f s; q or Ctrl-C quits\n", seq,
		t_ms / 1000.0);
	table_head(o, cols, s);
	if (d)
		fprintf(o, "since the last cycle: RSS %s%s, %zu VMAs added, %zu removed\n",
			d->totals.resident_pages < 0 ? "-" : "+",
			ml_fmt_bytes((uint64_t)(d->totals.resident_pages < 0
							? -d->totals.resident_pages
							: d->totals.resident_pages) *
					     4096,
				     b, sizeof(b)),
			d->added, d->removed);
	else
		fputc('\n', o);
	if (!compact)
		fputc('\n', o);
	if (compact)
		kinds_compact(o, s, cols);
	else
		table_kinds(o, s, cols);
	fputc('\n', o);
	fclose(o);
	for (size_t i = 0; i < *top_len; i++)
		n += (*top)[i] == '\n';
	return n;
}

/* Lines the regions need at the least to be worth a place: title, header, a few rows, "more" */
#define SCREEN_REGION_LINES 8

void snap_screen(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d,
		 uint64_t seq, int64_t t_ms, int rows, int cols)
{
	size_t *order = malloc(s->vmas.n * sizeof(*order) + 1);
	char *top = NULL;
	size_t top_len = 0;
	/* the lines above the regions are counted, not guessed: names wrap, notes come and go */
	int used = screen_top(s, d, seq, t_ms, cols, false, &top, &top_len);

	if (used >= 0 && rows - used - 1 < SCREEN_REGION_LINES) {
		free(top);
		top = NULL;
		used = screen_top(s, d, seq, t_ms, cols, true, &top, &top_len);
	}
	if (used < 0) {
		free(top);
		free(order);
		return;
	}
	fwrite(top, 1, top_len, f);
	free(top);
	if (order) {
		for (size_t i = 0; i < s->vmas.n; i++)
			order[i] = i;
		by_rss_of = s;
		qsort(order, s->vmas.n, sizeof(*order), cmp_rss);
	}
	/* the biggest regions by RSS, as many as fit above the line the cursor rests on */
	if (rows - used - 1 >= 3)
		table_regions(f, s, cols, rows - used - 1, order);
	free(order);
}

void snap_line_header(FILE *f, const struct ml_snapshot *s, bool written)
{
	const char *unit;

	table_unit(s, &unit);
	fprintf(f, "one line per cycle; sizes in %s\n", unit);
	fprintf(f, "%5s %7s %6s %5s %7s %7s %7s %7s %6s %6s%s\n", "CYCLE", "T(S)", "MS", "VMAS",
		"RSS", "+RSS", "SWAP", "FILE", "HUGE", "ZERO", written ? "   WRITN" : "");
}

void snap_line(FILE *f, const struct ml_snapshot *s, const struct ml_snapshot_diff *d, uint64_t seq,
	       int64_t t_ms, uint64_t div, bool written)
{
	const struct ml_snap_counts *c = &s->totals;
	int64_t dr = d ? d->totals.resident_pages * 4096 / (int64_t)div : 0;
	char sw[32];

	fprintf(f,
		"%5" PRIu64 " %7.2f %6.2f %5zu %7" PRIu64 " %+7" PRId64 " %7s %7" PRIu64
		" %6" PRIu64 " %6" PRIu64,
		seq, t_ms / 1000.0, s->cycle_ns / 1e6, s->vmas.n, KB(c->resident_pages), dr,
		swap_cell(c, div, sw, sizeof(sw)), KB(c->file_pages), KB(c->huge_pages),
		KB(c->zero_pages));
	if (s->flags & ML_SNAP_HAVE_WRITTEN)
		fprintf(f, " %7" PRIu64, KB(c->written_pages));
	else if (written)
		fprintf(f, " %7s", "-");
	if (!s->exact)
		fprintf(f, "  not exact: %s", ml_snap_check_text(s->check));
	fputc('\n', f);
	fflush(f);
}
