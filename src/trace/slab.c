// SPDX-License-Identifier: MIT
/* memlens slab: kmem_cache allocations and frees per slab cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "../live.h"
#include "../table.h"
#include "memlens/format_slab.h"
#include "memlens/opts.h"
#include "memlens/trace_slab.h"
#include "opts.h"
#include "trace.h"

static const char about[] =
	"Count kmem_cache_alloc() and kmem_cache_free() per slab cache (eBPF), the\n"
	"cache name read from the struct kmem_cache itself, and show what each cache\n"
	"gained: allocs, frees, net objects and net KiB (net x object size).\n";

static const char footer[] =
	"SLUB merges caches of the same geometry: their objects are counted under\n"
	"the name of the cache they were merged into, marked '*' (the other names\n"
	"are listed). kmalloc() and kfree() are counted in the cache of their object\n"
	"(bpf_get_kmem_cache(), Linux 6.13+); without it kmalloc() in the kmalloc-N\n"
	"cache of its size, and kfree() apart. Not seen: kmem_cache_alloc_bulk(),\n"
	"kmem_cache_free_bulk() and the batched frees of kfree_rcu() (no tracepoint).\n"
	"Four copies of each program: an event that interrupts one (an RCU callback\n"
	"freeing in a softirq) is counted by another.\n"
	"An object freed twice with no allocation event between was allocated by the\n"
	"kernel without its tracepoint: counted per cache as unseen_allocs.\n";

enum slab_sort { SORT_NET, SORT_NET_KB, SORT_ALLOCS, SORT_FREES };

struct slab_opts {
	enum ml_slab_mode mode; /* --mode's choices are in its order */
	double duration;
	long top;
	enum slab_sort sort;
	bool json, slabinfo, shrink;
	int verbose;
};

static int parse_args(int argc, char **argv, struct slab_opts *o)
{
	static const char *const sorts[] = { "net", "net_kb", "allocs", "frees", NULL };
	static const char *const modes[] = { "auto", "tp_btf", "raw_tp", NULL };
	struct cli_opt opts[20];
	struct cli_spec spec = { .cmd = "slab", .about = about, .footer = footer, .opts = opts };
	int n, r, first;

	memset(o, 0, sizeof(*o));
	o->top = 20;
	n = trace_common_opts(opts, NULL, &o->duration, &o->json, &o->verbose,
			      "one summary object on stdout (JSON Lines)");
	opts[1].help = "also print what every MS milliseconds added, one block (one JSON "
		       "object) per interval";
	opts[n++] = (struct cli_opt)CLI_OPT_TOP(&o->top, "show the N first caches (default 20; "
							 "0: all)");
	opts[n++] = (struct cli_opt){ .letter = 's',
				      .name = "sort",
				      .arg = "KEY",
				      .kind = CLI_CHOICE,
				      .target = &o->sort,
				      .choices = sorts,
				      .help = "net (default), net_kb, allocs or frees" };
	opts[n++] = (struct cli_opt){ .name = "mode",
				      .arg = "MODE",
				      .kind = CLI_CHOICE,
				      .target = &o->mode,
				      .choices = modes,
				      .help = "auto (default: tp_btf, else raw_tp), tp_btf or "
					      "raw_tp" };
	opts[n++] = (struct cli_opt){ .name = "slabinfo",
				      .kind = CLI_FLAG,
				      .target = &o->slabinfo,
				      .help = "also read each cache's objects in use as the "
					      "kernel counts them (/proc/slabinfo) when tracing "
					      "begins and ends, with what was counted by then, and "
					      "show the two changes side by side (WINDOW, "
					      "SLABINFO)" };
	opts[n++] =
		(struct cli_opt){ .name = "shrink",
				  .kind = CLI_FLAG,
				  .target = &o->shrink,
				  .help = "with --slabinfo: flush each cache's per-CPU slabs "
					  "just before reading it (its free objects would count "
					  "as in use), through /sys/kernel/slab/CACHE/shrink: a "
					  "few seconds at each end" };
	opts[n++] = trace_batch_opt();
	opts[n] = (struct cli_opt)CLI_OPT_END;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	if (o->shrink && !o->slabinfo)
		return cli_usage_error("slab", "--shrink goes with --slabinfo");
	return 0;
}

static long long sort_value(const struct ml_slab_row *r, enum slab_sort k)
{
	switch (k) {
	case SORT_NET_KB:
		return r->net_kb;
	case SORT_ALLOCS:
		return (long long)r->allocs;
	case SORT_FREES:
		return (long long)r->frees;
	default:
		return r->net;
	}
}

static enum slab_sort g_sort;

static int cmp_rows(const void *a, const void *b)
{
	long long x = sort_value(a, g_sort), y = sort_value(b, g_sort);

	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(((const struct ml_slab_row *)a)->cache,
		      ((const struct ml_slab_row *)b)->cache);
}

static const struct ml_slab_window *window_of(const struct ml_slab_window *wv, size_t nw,
					      const char *cache)
{
	for (size_t i = 0; i < nw; i++)
		if (!strncmp(wv[i].name, cache, ML_SLAB_NAME_LEN - 1))
			return wv[i].have[0] && wv[i].have[1] ? &wv[i] : NULL;
	return NULL;
}

static long long window_net(const struct ml_slab_window *w)
{
	return (long long)(w->allocs[1] - w->allocs[0]) - (long long)(w->frees[1] - w->frees[0]);
}

/* what one report shows: the whole run, or one interval */
struct slab_view {
	const struct ml_slab_row *rows;
	size_t n, shown;
	uint64_t recursion_misses;
	unsigned int copies; /* programs per tracepoint */
	double elapsed_s; /* < 0: the whole run */
	bool last;
	bool kmalloc_exact;
	uint64_t counters[ML_SLAB_NR_COUNTERS]; /* the run's (summary) or the interval's */
	const struct ml_slab_window *win; /* --slabinfo, summary only */
	size_t nwin;
};

/* --slabinfo: the kernel's own count of @c's objects next to what was counted */
static void row_window(struct ml_slab_row_rec *o, const struct ml_slab_window *c)
{
	o->window_known = c != NULL;
	if (c) {
		o->slabinfo_delta = c->k[1] - c->k[0];
		o->window_net = window_net(c);
		o->window_unseen_allocs = (long long)(c->unseen[1] - c->unseen[0]);
		o->objperslab = c->objperslab;
	}
}

/* caches whose count the kernel says changed, of which nothing was counted */
static void slabinfo_only(struct ml_slab_rec *rec, const struct slab_view *v)
{
	for (size_t i = 0; i < v->nwin; i++) {
		const struct ml_slab_window *c = &v->win[i];
		struct ml_slab_only_rec *x = &rec->only[rec->nonly];
		bool counted = false;

		for (size_t j = 0; j < v->n && !counted; j++)
			counted = !strncmp(v->rows[j].cache, c->name, ML_SLAB_NAME_LEN - 1);
		if (counted || !c->have[0] || !c->have[1] || c->k[0] == c->k[1])
			continue;
		snprintf(x->cache, sizeof(x->cache), "%s", c->name);
		x->slabinfo_delta = c->k[1] - c->k[0];
		x->objperslab = c->objperslab;
		rec->nonly++;
	}
}

/* The record of @v (memlens/format_slab.h). */
static void print_json(const struct slab_view *v)
{
	struct ml_slab_rec rec = {
		.interval = v->elapsed_s >= 0,
		.elapsed_ms = v->elapsed_s >= 0 ? (uint64_t)(v->elapsed_s * 1000) : 0,
		.last = v->last,
		.recursion_misses = v->recursion_misses,
		.copies = v->copies,
		.rescued = v->counters[ML_SLAB_RESCUED] + v->counters[ML_SLAB_RESCUED_LAST],
		.rescued_by_last = v->counters[ML_SLAB_RESCUED_LAST],
		.kfree_unattributed = v->counters[ML_SLAB_KFREE_UNATTRIBUTED],
		.kmalloc_large = v->counters[ML_SLAB_KMALLOC_LARGE],
		.unseen_allocs = v->counters[ML_SLAB_UNSEEN_ALLOCS],
		.has_slabinfo = v->win != NULL,
	};
	struct ml_jw w;

	snprintf(rec.kmalloc, sizeof(rec.kmalloc), "%s", v->kmalloc_exact ? "cache" : "size");
	rec.rows = calloc(v->shown ? v->shown : 1, sizeof(*rec.rows));
	rec.only = calloc(v->nwin ? v->nwin : 1, sizeof(*rec.only));
	rec.merged = calloc(v->n ? v->n : 1, sizeof(*rec.merged));
	if (!rec.rows || !rec.only || !rec.merged) {
		cli_error("slab", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < v->shown; i++) {
		const struct ml_slab_row *row = &v->rows[i];
		struct ml_slab_row_rec *o = &rec.rows[rec.nrows++];

		snprintf(o->cache, sizeof(o->cache), "%s", row->cache);
		o->allocs = row->allocs;
		o->frees = row->frees;
		o->net = row->net;
		o->net_kb = row->net_kb;
		o->unseen_allocs = row->unseen_allocs;
		if (v->win)
			row_window(o, window_of(v->win, v->nwin, row->cache));
	}
	if (v->win)
		slabinfo_only(&rec, v);
	for (size_t i = 0; i < v->n; i++) {
		struct ml_slab_merged_rec *m = &rec.merged[rec.nmerged];

		if (v->rows[i].refcount <= 1)
			continue;
		snprintf(m->cache, sizeof(m->cache), "%s", v->rows[i].cache);
		m->users = v->rows[i].refcount;
		ml_slab_merged_names(v->rows[i].cache, m->aliases, sizeof(m->aliases));
		rec.nmerged++;
	}
	ml_jw_init(&w, stdout);
	ml_fmt_slab(&w, &rec);
out:
	ml_fmt_slab_free(&rec);
}

static bool rows_table(FILE *f, const struct slab_view *v, int width, size_t max)
{
	static const struct table_col cols[] = {
		{ "CACHE", TABLE_LEFT, 0, true },      { "ALLOCS", TABLE_RIGHT, 0, false },
		{ "FREES", TABLE_RIGHT, 0, false },    { "NET", TABLE_RIGHT, 0, false },
		{ "NET_KB", TABLE_RIGHT, 0, false },   { "WINDOW", TABLE_RIGHT, 0, false },
		{ "SLABINFO", TABLE_RIGHT, 0, false },
	};
	const struct ml_slab_row *rows = v->rows;
	struct table *t = table_new(cols, v->win ? 7 : 5);
	bool any = false;

	for (size_t i = 0; i < v->shown; i++) {
		const struct ml_slab_window *c =
			v->win ? window_of(v->win, v->nwin, rows[i].cache) : NULL;

		any |= rows[i].refcount > 1;
		table_row(t);
		table_cell(t, "%s%s", rows[i].cache, rows[i].refcount > 1 ? "*" : "");
		table_cell(t, "%llu", (unsigned long long)rows[i].allocs);
		table_cell(t, "%llu", (unsigned long long)rows[i].frees);
		table_cell(t, "%lld", rows[i].net);
		table_cell(t, "%lld", rows[i].net_kb);
		if (c) {
			table_cell(t, "%lld", window_net(c));
			table_cell(t, "%lld", c->k[1] - c->k[0]);
		} else if (v->win) {
			table_cell(t, "-");
			table_cell(t, "-");
		}
	}
	table_print(t, f, width, 0, max);
	table_free(t);
	return any;
}

static const struct ml_slab_row *g_rows; /* for cmp_unseen */

static int cmp_unseen(const void *a, const void *b)
{
	uint64_t x = g_rows[*(const size_t *)a].unseen_allocs;
	uint64_t y = g_rows[*(const size_t *)b].unseen_allocs;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Objects the kernel reused with no allocation event: their caches' NET is
 * short by at least this many. The four caches with most, by name.
 */
static void unseen_warning(const struct slab_view *v, int width)
{
	size_t *idx = calloc(v->n ? v->n : 1, sizeof(*idx)), k = 0, used = 0;
	char list[256] = "";

	for (size_t i = 0; idx && i < v->n; i++)
		if (v->rows[i].unseen_allocs)
			idx[k++] = i;
	g_rows = v->rows;
	if (idx)
		qsort(idx, k, sizeof(*idx), cmp_unseen);
	for (size_t i = 0; i < k && i < 4 && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s %llu",
					 i ? ", " : "", v->rows[idx[i]].cache,
					 (unsigned long long)v->rows[idx[i]].unseen_allocs);
	free(idx);
	table_wrap(stdout, width, 2,
		   "warning: %llu objects were freed again with no allocation event since "
		   "their last free (%s): the kernel allocated them without its "
		   "kmem_cache_alloc/kmalloc tracepoint (its own trace events miss them too: "
		   "kmem_cache_alloc_bulk(), the /proc inodes of tasks CRIU restores), so "
		   "these caches' NET falls short by at least as many",
		   (unsigned long long)v->counters[ML_SLAB_UNSEEN_ALLOCS], list);
}

static void print_table(const struct slab_view *v)
{
	const struct ml_slab_row *rows = v->rows;
	int width = table_width(stdout);
	char names[1024];
	bool any;

	if (v->elapsed_s >= 0)
		printf("--- %.3f s%s: slab activity in this interval\n", v->elapsed_s,
		       v->last ? " (end)" : "");
	any = rows_table(stdout, v, width, 0);
	if (!v->n)
		printf("(no kmem_cache activity)\n");
	if (v->shown < v->n)
		printf("(%zu more caches; --top 0 shows all)\n", v->n - v->shown);
	if (v->recursion_misses)
		table_wrap(stdout, width, 2,
			   "warning: %llu allocations or frees not seen: the kernel skipped the "
			   "programs for events that came while they ran on the same CPU (one "
			   "program per tracepoint: its copies could not be loaded)",
			   (unsigned long long)v->recursion_misses);
	if (v->counters[ML_SLAB_UNSEEN_ALLOCS])
		unseen_warning(v, width);
	if (!v->kmalloc_exact)
		table_wrap(stdout, width, 2,
			   "kmalloc() counted in the kmalloc-N cache of its size; %llu kfree() "
			   "calls not attributed to a cache (this kernel lacks "
			   "bpf_get_kmem_cache(), Linux 6.13+, or tp_btf)",
			   (unsigned long long)v->counters[ML_SLAB_KFREE_UNATTRIBUTED]);
	if (v->win)
		table_wrap(
			stdout, width, 2,
			"SLABINFO: the change of the cache's objects in use as the kernel counts "
			"them (/proc/slabinfo active_objs), WINDOW: the net counted between the "
			"same two instants. SLUB counts the free objects of per-CPU slabs as in "
			"use (--shrink flushes them first); kmem_cache_alloc_bulk(), "
			"kmem_cache_free_bulk() and kfree_rcu() batches are not traced");
	if (any) {
		printf("\n* merged caches (SLUB): objects of these names are counted together\n");
		for (size_t i = 0; i < v->shown; i++) {
			if (rows[i].refcount <= 1)
				continue;
			ml_slab_merged_names(rows[i].cache, names, sizeof(names));
			table_wrap(stdout, width, 4, "  %s: %d users%s%s", rows[i].cache,
				   rows[i].refcount, names[0] ? ", also " : "", names);
		}
	}
	if (v->elapsed_s >= 0)
		printf("\n");
	fflush(stdout);
}

/* One frame of the live view: this interval's totals, the caches that fit, as slabtop. */
static void print_screen(const struct slab_view *v)
{
	unsigned long long allocs = 0, frees = 0;
	long long net = 0, net_kb = 0;
	FILE *f = live_frame();

	for (size_t i = 0; i < v->n; i++) {
		allocs += v->rows[i].allocs;
		frees += v->rows[i].frees;
		net += v->rows[i].net;
		net_kb += v->rows[i].net_kb;
	}
	int lines, w = live_cols();

	/* wrapped at the terminal's width: a cut line would hide its end */
	lines = table_wrap(f, w, 2, "memlens slab - %.1f s, every %g s; q or Ctrl-C quits",
			   v->elapsed_s, trace_interval_s());
	lines += table_wrap(f, w, 2,
			    "this interval: %llu allocs, %llu frees, net %lld objects (%lld KiB) "
			    "in %zu caches",
			    allocs, frees, net, net_kb, v->n);
	if (v->recursion_misses)
		lines += table_wrap(f, w, 2,
				    "warning: %llu events not seen (another BPF "
				    "program ran)",
				    (unsigned long long)v->recursion_misses);
	fputc('\n', f);
	lines++;
	if (!v->n)
		fprintf(f, "(no kmem_cache activity)\n");
	else if (live_rows() > lines + 3)
		rows_table(f, v, w, (size_t)(live_rows() - lines - 2));
	live_show();
}

static void show(const struct slab_opts *o, struct slab_view *v)
{
	v->shown = o->top && (size_t)o->top < v->n ? (size_t)o->top : v->n;
	if (o->json)
		print_json(v);
	else if (live_on() && v->elapsed_s >= 0)
		print_screen(v);
	else
		print_table(v);
}

struct slab_ctx {
	struct ml_slab_tracer *t;
	const struct slab_opts *o;
	struct ml_slab_tracer_info info;
	uint64_t prev_counters[ML_SLAB_NR_COUNTERS];
	struct ml_slab_row *prev; /* the totals at the last interval */
	size_t nprev;
	uint64_t prev_misses;
};

static void report(struct slab_ctx *c)
{
	struct slab_view v = { .elapsed_s = -1 };
	struct ml_slab_counts now;
	struct ml_slab_row *rows;

	if (ml_slab_tracer_read(c->t, &now))
		return;
	if (c->prev) { /* -i: the totals the intervals added up to, read at the last one */
		rows = c->prev;
		c->prev = NULL;
		v.n = c->nprev;
		v.recursion_misses = c->prev_misses;
		ml_slab_counts_free(&now);
	} else {
		rows = now.rows;
		v.n = now.n;
		v.recursion_misses = now.recursion_misses;
	}
	g_sort = c->o->sort;
	qsort(rows, v.n, sizeof(*rows), cmp_rows);
	v.kmalloc_exact = c->info.kmalloc_exact;
	v.copies = c->info.copies;
	memcpy(v.counters, now.counters, sizeof(v.counters));
	v.win = ml_slab_tracer_windows(c->t, &v.nwin);
	v.rows = rows;
	show(c->o, &v);
	free(rows);
}

/* -i: what changed since the last interval (the map keeps the run's totals) */
static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct slab_ctx *c = arg;
	struct slab_view v = { .elapsed_s = elapsed_s, .last = last };
	struct ml_slab_counts cnt;
	struct ml_slab_row *now, *d;
	uint64_t misses;
	size_t n;

	if (ml_slab_tracer_read(c->t, &cnt))
		memset(&cnt, 0, sizeof(cnt));
	now = cnt.rows;
	n = cnt.n;
	misses = cnt.recursion_misses;
	g_sort = SORT_NET;
	if (now)
		qsort(now, n, sizeof(*now), cmp_rows);
	d = calloc(n ? n : 1, sizeof(*d));
	for (size_t i = 0; d && i < n; i++) {
		struct ml_slab_row row = now[i];

		for (size_t j = 0; j < c->nprev; j++) {
			if (strcmp(c->prev[j].cache, row.cache))
				continue;
			row.allocs -= c->prev[j].allocs;
			row.frees -= c->prev[j].frees;
			row.unseen_allocs -= c->prev[j].unseen_allocs;
			break;
		}
		row.net = (long long)row.allocs - (long long)row.frees;
		row.net_kb = row.net * (long long)row.size / 1024;
		if (row.allocs || row.frees)
			d[v.n++] = row;
	}
	g_sort = c->o->sort;
	if (d)
		qsort(d, v.n, sizeof(*d), cmp_rows);
	v.rows = d;
	v.recursion_misses = misses - c->prev_misses;
	v.kmalloc_exact = c->info.kmalloc_exact;
	v.copies = c->info.copies;
	for (int i = 0; i < ML_SLAB_NR_COUNTERS; i++) {
		v.counters[i] = cnt.counters[i] - c->prev_counters[i];
		c->prev_counters[i] += v.counters[i];
	}
	show(c->o, &v);
	free(d);
	free(c->prev);
	c->prev = now ? now : calloc(1, sizeof(*now)); /* not NULL: intervals are on */
	c->nprev = now ? n : 0;
	c->prev_misses = misses;
}

static int cmd_slab(int argc, char **argv)
{
	struct ml_slab_tracer *t = NULL;
	struct ml_err err = { 0 };
	struct slab_opts o;
	struct slab_ctx c = { .o = &o };
	sigset_t sigs;
	int e;

	e = parse_args(argc, argv, &o);
	if (e)
		return e < 0 ? EXIT_OK : e;
	e = trace_output_open("slab", false);
	if (e)
		return e;
	trace_libbpf_quiet(o.verbose);
	{
		ML_OPTS(ml_slab_tracer_opts, to, .mode = o.mode);

		e = ml_slab_tracer_open(&t, &to, &err);
	}
	if (e)
		goto out;
	c.info.sz = sizeof(c.info);
	ml_slab_tracer_info(t, &c.info);
	if (o.verbose)
		fprintf(stderr, "memlens slab: mode %s; %u program(s) per tracepoint\n",
			c.info.mode, c.info.copies);
	/* --slabinfo: read at the two ends of the window the programs count */
	if (o.slabinfo && (e = ml_slab_tracer_window(t, false, o.shrink))) {
		ml_err_set(&err, -e, "cannot read /proc/slabinfo: %s (%s)", strerror(-e),
			   geteuid() ? "run as root" : "even as root: drop --slabinfo");
		goto out;
	}
	trace_say_tracing("slab", "every slab cache", o.duration, false);
	cli_block_signals(&sigs);
	trace_live_start(o.json);
	c.t = t;
	trace_run(&sigs,
		  &(struct trace_loop){ .duration_s = o.duration, .tick = on_tick, .arg = &c });
	live_stop();
	if (o.slabinfo)
		ml_slab_tracer_window(t, true, o.shrink); /* when it fails: no window */
	report(&c);
out:
	if (e)
		cli_error("slab", "%s", err.msg);
	free(c.prev);
	ml_slab_tracer_close(t);
	return e ? exit_code_for(e) : EXIT_OK;
}

MEMLENS_COMMAND(slab, "slab", 21, "slab cache allocs/frees and net growth per cache (eBPF)",
		cmd_slab);
