// SPDX-License-Identifier: MIT
/* memlens slab: kmem_cache allocations and frees per slab cache. */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "../cliutil.h"
#include "../command.h"
#include "../jsonw.h"
#include "trace.h"
#include "../../bpf/slab.h"
#include "slab.skel.h"

static const char usage_text[] =
	"usage: memlens slab [-d SEC] [-i MS] [--top N] [--sort KEY] [--json] [-v]\n"
	"\n"
	"Count kmem_cache_alloc() and kmem_cache_free() per slab cache (eBPF), the\n"
	"cache name read from the struct kmem_cache itself, and show what each cache\n"
	"gained: allocs, frees, net objects and net KiB (net x object size).\n"
	"\n"
	"  -d, --duration SEC   stop after SEC seconds (default: Ctrl-C)\n"
	"  -i, --interval MS    also print what every MS milliseconds added, one block\n"
	"                       (one JSON object) per interval\n"
	"  -n, --top N          show the N first caches (default 20; 0: all)\n"
	"  -s, --sort KEY       net (default), net_kb, allocs or frees\n"
	"      --mode MODE      auto (default: tp_btf, else raw_tp), tp_btf or raw_tp\n"
	"      --json           one summary object on stdout (JSON Lines)\n"
	"  -o, --output FILE    write the report to FILE, not stdout\n"
	"  -v, --verbose        say which kernel hooks are used; twice: libbpf's log\n"
	"  -h, --help           this text\n"
	"\n"
	"SLUB merges caches of the same geometry: their objects are counted under\n"
	"the name of the cache they were merged into, marked '*' (the other names\n"
	"are listed). kmalloc()/kfree() are not kmem_cache calls and are not counted.\n";

enum slab_sort { SORT_NET, SORT_NET_KB, SORT_ALLOCS, SORT_FREES };

struct slab_opts {
	int mode; /* -1 auto, 1 tp_btf, 0 raw_tp */
	double duration;
	long top;
	enum slab_sort sort;
	bool json;
	int verbose;
};

struct slab_row {
	struct slab_key key;
	struct slab_val val;
	long long net;
	long long net_kb;
};

static int parse_sort(const char *s, enum slab_sort *out)
{
	static const char *const names[] = { "net", "net_kb", "allocs", "frees" };

	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum slab_sort)i;
			return 0;
		}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct slab_opts *o)
{
	static const struct option lo[] = { { "top", required_argument, NULL, 'n' },
					    { "sort", required_argument, NULL, 's' },
					    { "mode", required_argument, NULL, 'm' },
					    TRACE_LONGOPTS_COMMON,
					    { 0 } };
	int c, r;

	memset(o, 0, sizeof(*o));
	o->top = 20;
	o->mode = -1;
	while ((c = getopt_long(argc, argv, "n:s:" TRACE_SHORTOPTS_COMMON, lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_long(optarg, 0, 100000, &o->top))
				return cli_error("slab", "bad --top '%s' (0..100000)", optarg),
				       -EINVAL;
			break;
		case 's':
			if (parse_sort(optarg, &o->sort))
				return cli_error("slab",
						 "bad --sort '%s' (net, net_kb, allocs, frees)",
						 optarg),
				       -EINVAL;
			break;
		case 'm':
			if (!strcmp(optarg, "auto") || !strcmp(optarg, "tp_btf") ||
			    !strcmp(optarg, "raw_tp"))
				o->mode = optarg[0] == 'a' ? -1 : optarg[0] == 't';
			else
				return cli_error("slab", "bad --mode '%s' (auto, tp_btf, raw_tp)",
						 optarg),
				       -EINVAL;
			break;
		default:
			r = trace_common_opt(c, "slab", usage_text, NULL, &o->duration, &o->json,
					     &o->verbose);
			if (r)
				return r;
		}
	}
	if (optind < argc)
		return cli_error("slab", "unexpected argument '%s'", argv[optind]), -EINVAL;
	return 0;
}

static struct slab_bpf *open_skel(bool typed)
{
	struct slab_bpf *s = slab_bpf__open();

	if (!s)
		return NULL;
	bpf_program__set_autoload(s->progs.cache_alloc, typed);
	bpf_program__set_autoload(s->progs.cache_free, typed);
	bpf_program__set_autoload(s->progs.cache_alloc_raw, !typed);
	bpf_program__set_autoload(s->progs.cache_free_raw, !typed);
	return s;
}

/* tp_btf first, raw_tp when the kernel refuses it. Returns the mode name. */
static int slab_start(struct slab_bpf **out, int want, const char **mode, struct ml_err *err)
{
	struct slab_bpf *s;
	int e = -ENOMEM;

	for (int typed = want == 0 ? 0 : 1; typed >= (want == 1 ? 1 : 0); typed--) {
		s = open_skel(typed);
		if (!s)
			return trace_bpf_error(err, -errno, "opening the slab tracer");
		e = slab_bpf__load(s);
		if (!e)
			e = slab_bpf__attach(s);
		if (!e) {
			*out = s;
			*mode = typed	    ? "tp_btf/kmem_cache_alloc + tp_btf/kmem_cache_free"
				: want == 0 ? "raw_tp/kmem_cache_alloc + raw_tp/kmem_cache_free "
					      "(--mode raw_tp)"
					    : "raw_tp/kmem_cache_alloc + raw_tp/kmem_cache_free "
					      "(tp_btf refused)";
			return 0;
		}
		slab_bpf__destroy(s);
	}
	return trace_bpf_error(err, e, "loading the slab tracer (tp_btf and raw_tp)");
}

static long long sort_value(const struct slab_row *r, enum slab_sort k)
{
	switch (k) {
	case SORT_NET_KB:
		return r->net_kb;
	case SORT_ALLOCS:
		return (long long)r->val.allocs;
	case SORT_FREES:
		return (long long)r->val.frees;
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
	return strcmp(((const struct slab_row *)a)->key.cache,
		      ((const struct slab_row *)b)->key.cache);
}

static struct slab_row *collect(struct slab_bpf *s, size_t *n, enum slab_sort sort)
{
	struct slab_row *rows =
		trace_map_dump(bpf_map__fd(s->maps.stats), sizeof(rows->key), sizeof(*rows),
			       offsetof(struct slab_row, key), offsetof(struct slab_row, val), n);

	for (size_t i = 0; rows && i < *n; i++) {
		struct slab_row *r = &rows[i];

		r->net = (long long)r->val.allocs - (long long)r->val.frees;
		r->net_kb = r->net * (long long)r->val.size / 1024;
	}
	g_sort = sort;
	if (rows)
		qsort(rows, *n, sizeof(*rows), cmp_rows);
	return rows;
}

/* Other names SLUB merged into @cache: the /sys/kernel/slab links to the same dir. */
static void merged_names(const char *cache, char *out, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX], other[PATH_MAX];
	struct dirent *d;
	size_t used = 0;
	ssize_t n;
	DIR *dir;

	out[0] = 0;
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s", cache);
	n = readlink(path, target, sizeof(target) - 1);
	dir = n > 0 ? opendir("/sys/kernel/slab") : NULL;
	if (!dir)
		return;
	target[n] = 0;
	while ((d = readdir(dir))) {
		if (d->d_type != DT_LNK || !strcmp(d->d_name, cache))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s", d->d_name);
		n = readlink(path, other, sizeof(other) - 1);
		if (n <= 0)
			continue;
		other[n] = 0;
		if (strcmp(other, target) || used + strlen(d->d_name) + 2 >= len)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "",
					 d->d_name);
	}
	closedir(dir);
}

/* what one report shows: the whole run, or one interval */
struct slab_view {
	const struct slab_row *rows;
	size_t n, shown;
	uint64_t recursion_misses;
	double elapsed_s; /* < 0: the whole run */
	bool last;
};

static void print_json(const struct slab_view *v)
{
	char names[1024];
	struct jw w;

	jw_init(&w, stdout);
	jw_obj(&w);
	jw_kstr(&w, "type", v->elapsed_s < 0 ? "slab" : "slab_interval");
	if (v->elapsed_s >= 0) {
		jw_kuint(&w, "elapsed_ms", (uint64_t)(v->elapsed_s * 1000));
		jw_kbool(&w, "last", v->last);
	}
	jw_kuint(&w, "recursion_misses", v->recursion_misses);
	jw_key(&w, "rows");
	jw_arr(&w);
	for (size_t i = 0; i < v->shown; i++) {
		jw_obj(&w);
		jw_kstr(&w, "cache", v->rows[i].key.cache);
		jw_kuint(&w, "allocs", v->rows[i].val.allocs);
		jw_kuint(&w, "frees", v->rows[i].val.frees);
		jw_kint(&w, "net", v->rows[i].net);
		jw_kint(&w, "net_kb", v->rows[i].net_kb);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "merged");
	jw_arr(&w);
	for (size_t i = 0; i < v->n; i++) {
		if (v->rows[i].val.refcount <= 1)
			continue;
		merged_names(v->rows[i].key.cache, names, sizeof(names));
		jw_obj(&w);
		jw_kstr(&w, "cache", v->rows[i].key.cache);
		jw_kint(&w, "users", v->rows[i].val.refcount);
		jw_kstr(&w, "aliases", names);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
}

static void print_table(const struct slab_view *v)
{
	const struct slab_row *rows = v->rows;
	char names[1024];
	bool any = false;

	if (v->elapsed_s >= 0)
		printf("--- %.3f s%s: slab activity in this interval\n", v->elapsed_s,
		       v->last ? " (end)" : "");
	printf("%-32s %12s %12s %12s %12s\n", "CACHE", "ALLOCS", "FREES", "NET", "NET_KB");
	for (size_t i = 0; i < v->shown; i++) {
		char name[40];

		snprintf(name, sizeof(name), "%s%s", rows[i].key.cache,
			 rows[i].val.refcount > 1 ? "*" : "");
		any |= rows[i].val.refcount > 1;
		printf("%-32s %12llu %12llu %12lld %12lld\n", name,
		       (unsigned long long)rows[i].val.allocs,
		       (unsigned long long)rows[i].val.frees, rows[i].net, rows[i].net_kb);
	}
	if (!v->n)
		printf("(no kmem_cache activity)\n");
	if (v->shown < v->n)
		printf("(%zu more caches; --top 0 shows all)\n", v->n - v->shown);
	if (v->recursion_misses)
		printf("warning: %llu allocations or frees not seen: the kernel skipped the "
		       "programs while another BPF program ran on the same CPU\n",
		       (unsigned long long)v->recursion_misses);
	if (any) {
		printf("\n* merged caches (SLUB): objects of these names are counted together\n");
		for (size_t i = 0; i < v->shown; i++) {
			if (rows[i].val.refcount <= 1)
				continue;
			merged_names(rows[i].key.cache, names, sizeof(names));
			printf("  %s: %d users%s%s\n", rows[i].key.cache, rows[i].val.refcount,
			       names[0] ? ", also " : "", names);
		}
	}
	if (v->elapsed_s >= 0)
		printf("\n");
	fflush(stdout);
}

static void show(const struct slab_opts *o, struct slab_view *v)
{
	v->shown = o->top && (size_t)o->top < v->n ? (size_t)o->top : v->n;
	if (o->json)
		print_json(v);
	else
		print_table(v);
}

struct slab_ctx {
	struct slab_bpf *skel;
	const struct slab_opts *o;
	struct slab_row *prev; /* the totals at the last interval */
	size_t nprev;
	uint64_t prev_misses;
};

static void report(struct slab_ctx *c)
{
	struct slab_view v = { .elapsed_s = -1 };
	struct slab_row *rows;

	if (c->prev) { /* -i: the totals the intervals added up to, read at the last one */
		rows = c->prev;
		c->prev = NULL;
		v.n = c->nprev;
		g_sort = c->o->sort;
		qsort(rows, v.n, sizeof(*rows), cmp_rows);
		v.recursion_misses = c->prev_misses;
	} else {
		rows = collect(c->skel, &v.n, c->o->sort);
		v.recursion_misses = trace_recursion_misses(c->skel->obj);
	}
	v.rows = rows;
	show(c->o, &v);
	free(rows);
}

/* -i: what changed since the last interval (the map keeps the run's totals) */
static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct slab_ctx *c = arg;
	struct slab_view v = { .elapsed_s = elapsed_s, .last = last };
	struct slab_row *now, *d;
	uint64_t misses = trace_recursion_misses(c->skel->obj);
	size_t n;

	now = collect(c->skel, &n, SORT_NET);
	d = calloc(n ? n : 1, sizeof(*d));
	for (size_t i = 0; d && i < n; i++) {
		struct slab_row row = now[i];

		for (size_t j = 0; j < c->nprev; j++) {
			if (strcmp(c->prev[j].key.cache, row.key.cache))
				continue;
			row.val.allocs -= c->prev[j].val.allocs;
			row.val.frees -= c->prev[j].val.frees;
			break;
		}
		row.net = (long long)row.val.allocs - (long long)row.val.frees;
		row.net_kb = row.net * (long long)row.val.size / 1024;
		if (row.val.allocs || row.val.frees)
			d[v.n++] = row;
	}
	g_sort = c->o->sort;
	if (d)
		qsort(d, v.n, sizeof(*d), cmp_rows);
	v.rows = d;
	v.recursion_misses = misses - c->prev_misses;
	show(c->o, &v);
	free(d);
	free(c->prev);
	c->prev = now ? now : calloc(1, sizeof(*now)); /* not NULL: intervals are on */
	c->nprev = now ? n : 0;
	c->prev_misses = misses;
}

static int cmd_slab(int argc, char **argv)
{
	struct slab_bpf *skel = NULL;
	struct ml_err err = { 0 };
	struct slab_opts o;
	const char *mode = "";
	struct slab_ctx c = { .o = &o };
	sigset_t sigs;
	int e;

	e = parse_args(argc, argv, &o);
	if (e)
		return e > 0 ? EXIT_OK : EXIT_USAGE;
	e = trace_output_open("slab", false);
	if (e)
		return e;
	trace_libbpf_quiet(o.verbose);
	e = trace_preflight(&err);
	if (!e)
		e = slab_start(&skel, o.mode, &mode, &err);
	if (e)
		goto out;
	if (o.verbose)
		fprintf(stderr, "memlens slab: mode %s\n", mode);
	trace_say_tracing("slab", "every slab cache", o.duration, false);
	cli_block_signals(&sigs);
	c.skel = skel;
	trace_run(&sigs,
		  &(struct trace_loop){ .duration_s = o.duration, .tick = on_tick, .arg = &c });
	report(&c);
out:
	if (e)
		cli_error("slab", "%s", err.msg);
	free(c.prev);
	slab_bpf__destroy(skel);
	return e ? exit_code_for(e) : EXIT_OK;
}

MEMLENS_COMMAND(slab, "slab", 21, "slab cache allocs/frees and net growth per cache (eBPF)",
		cmd_slab);
