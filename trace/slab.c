// SPDX-License-Identifier: MIT
/*
 * The slab tracer's user side (memlens/trace_slab.h): the programs tried
 * in their order, the counts per cache, the /proc/slabinfo window, the
 * names SLUB merged.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memlens/opts.h"
#include "memlens/trace_slab.h"
#include "bpfutil.h"
#include "slabinfo.h"
#include "slab.h"
#include "slab.skel.h"

_Static_assert(SLAB_NAME_LEN == ML_SLAB_NAME_LEN, "the caches' names");
_Static_assert((int)SLAB_NR_COUNTERS == (int)ML_SLAB_NR_COUNTERS &&
		       (int)SLAB_C_UNSEEN_ALLOCS == (int)ML_SLAB_UNSEEN_ALLOCS &&
		       (int)SLAB_C_RESCUED_LAST == (int)ML_SLAB_RESCUED_LAST,
	       "the counters");

struct ml_slab_tracer {
	struct ml_slab_tracer_opts o;
	struct slab_bpf *skel;
	struct ml_slab_tracer_info info;
	struct ml_slab_window *win; /* the slabinfo window */
	size_t nwin;
};

struct slab_row {
	struct slab_key key;
	struct slab_val val;
};

/* how kmalloc() and kfree() are counted */
enum kmalloc_mode {
	KMALLOC_EXACT, /* in their object's cache (bpf_get_kmem_cache) */
	KMALLOC_BY_SIZE, /* kmalloc() in the kmalloc-N of its size, kfree() apart */
};

#define COPIES(prog)                                                                               \
	{                                                                                          \
		s->progs.prog##0, s->progs.prog##1, s->progs.prog##2, s->progs.prog##3             \
	}

static struct slab_bpf *open_skel(bool typed, enum kmalloc_mode km, bool copies)
{
	struct slab_bpf *s = slab_bpf__open();

	if (!s)
		return NULL;
	s->rodata->ncopies = copies ? SLAB_COPIES : 1;
	for (unsigned int i = 0; i < SLAB_COPIES; i++) {
		struct bpf_program *ca[] = COPIES(cache_alloc), *cf[] = COPIES(cache_free);
		struct bpf_program *ke[] = COPIES(kmalloc_exact), *fe[] = COPIES(kfree_exact);
		struct bpf_program *ks[] = COPIES(kmalloc_size), *fs[] = COPIES(kfree_size);
		struct bpf_program *ra[] = COPIES(cache_alloc_raw), *rf[] = COPIES(cache_free_raw);
		struct bpf_program *rk[] = COPIES(kmalloc_raw), *rx[] = COPIES(kfree_raw);
		bool on = typed && i < s->rodata->ncopies, raw = !typed && i < s->rodata->ncopies;

		bpf_program__set_autoload(ca[i], on);
		bpf_program__set_autoload(cf[i], on);
		bpf_program__set_autoload(ke[i], on && km == KMALLOC_EXACT);
		bpf_program__set_autoload(fe[i], on && km == KMALLOC_EXACT);
		bpf_program__set_autoload(ks[i], on && km == KMALLOC_BY_SIZE);
		bpf_program__set_autoload(fs[i], on && km == KMALLOC_BY_SIZE);
		bpf_program__set_autoload(ra[i], raw);
		bpf_program__set_autoload(rf[i], raw);
		bpf_program__set_autoload(rk[i], raw);
		bpf_program__set_autoload(rx[i], raw);
	}
	return s;
}

/*
 * tp_btf with kmalloc/kfree in their caches first, then tp_btf with them by
 * size, then raw_tp (by size), as far as @want allows.
 */
static int slab_start(struct slab_bpf **out, int want, const char **mode, enum kmalloc_mode *km,
		      struct ml_err *err)
{
	static const struct {
		bool typed;
		enum kmalloc_mode km;
		const char *mode;
	} tries[] = {
		{ true, KMALLOC_EXACT,
		  "tp_btf/kmem_cache_alloc, kmem_cache_free, kmalloc, kfree (kmalloc and kfree "
		  "in their object's cache: bpf_get_kmem_cache)" },
		{ true, KMALLOC_BY_SIZE,
		  "tp_btf/kmem_cache_alloc, kmem_cache_free, kmalloc, kfree (no "
		  "bpf_get_kmem_cache: kmalloc in the kmalloc-N cache of its size, kfree not "
		  "attributed)" },
		{ false, KMALLOC_BY_SIZE,
		  "raw_tp/kmem_cache_alloc, kmem_cache_free, kmalloc, kfree (kmalloc in the "
		  "kmalloc-N cache of its size, kfree not attributed)" },
	};
	struct slab_bpf *s;
	int e = -ENOMEM;

	for (size_t i = 0; i < 2 * sizeof(tries) / sizeof(tries[0]); i++) {
		size_t t = i / 2;
		bool copies = !(i % 2); /* with the copies first, then one program each */

		if ((want == 1 && !tries[t].typed) || (want == 0 && tries[t].typed))
			continue;
		s = open_skel(tries[t].typed, tries[t].km, copies);
		if (!s)
			return mlt_trace_bpf_error(err, -errno, "opening the slab tracer");
		e = slab_bpf__load(s);
		if (!e)
			e = slab_bpf__attach(s);
		if (!e) {
			*out = s;
			*mode = tries[t].mode;
			*km = tries[t].km;
			return 0;
		}
		slab_bpf__destroy(s);
	}
	return mlt_trace_bpf_error(err, e, "loading the slab tracer (tp_btf and raw_tp)");
}

/*
 * Events no program saw. The kernel counts, per program, the events it
 * skipped because that program was already running on the CPU. With one
 * program per tracepoint each of those is lost. With copies (see
 * open_skel()) an event is lost only if every copy of its tracepoint
 * skipped it, and a copy skips an event only while it runs in a context
 * the event interrupted: the task, a softirq, an interrupt below an NMI,
 * one copy each at most, fewer than the copies. What the copies after the
 * first took over is counted apart (rescued).
 */
static uint64_t slab_misses(const struct slab_bpf *skel)
{
	if (skel->rodata->ncopies >= SLAB_COPIES)
		return 0;
	return mlt_trace_recursion_misses(skel->obj);
}

/* Other names SLUB merged into @cache: the /sys/kernel/slab links to the same dir. */
void ml_slab_merged_names(const char *cache, char *out, size_t len)
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
		if (strcmp(other, target) || used + strlen(d->d_name) + 3 >= len)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "",
					 d->d_name);
	}
	closedir(dir);
}

static long long sysfs_objects(const char *cache, bool shrink)
{
	char path[128], buf[64];
	long long n = -1;
	FILE *f;

	if (shrink) {
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", cache);
		f = fopen(path, "we");
		if (f) {
			fputs("1", f);
			fclose(f);
		}
	}
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/objects", cache);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f))
		n = atoll(buf);
	if (f)
		fclose(f);
	return n;
}

static void counted_now(struct slab_bpf *skel, const char *cache, uint64_t *allocs, uint64_t *frees,
			uint64_t *unseen)
{
	struct slab_key key;
	struct slab_val val;

	memset(&key, 0, sizeof(key));
	memcpy(key.cache, cache, strnlen(cache, sizeof(key.cache) - 1)); /* as the BPF side */
	*allocs = *frees = *unseen = 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.stats), &key, &val)) {
		*allocs = val.allocs;
		*frees = val.frees;
		*unseen = val.unseen_allocs;
	}
}

/* @end: 0 at the start, 1 at the end; the first call makes the list */
static int read_windows(struct slab_bpf *skel, struct ml_slab_window **wv, size_t *nw, int end,
			bool shrink)
{
	struct slabinfo info;
	int e = mlt_slabinfo_read(&info);

	if (e)
		return e;
	if (!end) {
		*wv = calloc(info.n ? info.n : 1, sizeof(**wv));
		if (!*wv) {
			mlt_slabinfo_free(&info);
			return -ENOMEM;
		}
		*nw = info.n;
		for (size_t i = 0; i < info.n; i++) {
			snprintf((*wv)[i].name, sizeof((*wv)[i].name), "%s", info.v[i].name);
			(*wv)[i].objperslab = info.v[i].objperslab;
		}
	}
	for (size_t i = 0; i < *nw; i++) {
		struct ml_slab_window *w = &(*wv)[i];
		const struct slabinfo_row *r = mlt_slabinfo_find(&info, w->name);
		long long k = shrink ? sysfs_objects(w->name, true) : -1;

		if (k < 0 && r)
			k = r->active_objs;
		w->have[end] = k >= 0;
		w->k[end] = k;
		counted_now(skel, w->name, &w->allocs[end], &w->frees[end], &w->unseen[end]);
	}
	mlt_slabinfo_free(&info);
	return 0;
}

int ml_slab_tracer_open(struct ml_slab_tracer **out, const struct ml_slab_tracer_opts *opts,
			struct ml_err *err)
{
	struct ml_slab_tracer *t;
	enum kmalloc_mode km = KMALLOC_BY_SIZE;
	int e, want;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = ml_opts_load(&t->o, sizeof(t->o), opts, "ml_slab_tracer_opts", err);
	if (!e)
		e = mlt_trace_preflight(err);
	want = t->o.mode == ML_SLAB_TP_BTF ? 1 : t->o.mode == ML_SLAB_RAW_TP ? 0 : -1;
	if (!e)
		e = slab_start(&t->skel, want, &t->info.mode, &km, err);
	if (e) {
		ml_slab_tracer_close(t);
		return e;
	}
	t->info.kmalloc_exact = km == KMALLOC_EXACT;
	t->info.copies = t->skel->rodata->ncopies;
	*out = t;
	return 0;
}

int ml_slab_tracer_info(const struct ml_slab_tracer *t, struct ml_slab_tracer_info *out)
{
	return ml_result_store(out, &t->info, sizeof(t->info), sizeof(t->info),
			       "ml_slab_tracer_info", NULL);
}

int ml_slab_tracer_read(const struct ml_slab_tracer *t, struct ml_slab_counts *out)
{
	struct slab_row *rows;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	rows = mlt_trace_map_dump(bpf_map__fd(t->skel->maps.stats), sizeof(rows->key),
				  sizeof(*rows), offsetof(struct slab_row, key),
				  offsetof(struct slab_row, val), &n);
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	if (!out->rows) {
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct ml_slab_row *o = &out->rows[i];

		memcpy(o->cache, rows[i].key.cache, sizeof(o->cache));
		o->allocs = rows[i].val.allocs;
		o->frees = rows[i].val.frees;
		o->size = rows[i].val.size;
		o->refcount = rows[i].val.refcount;
		o->unseen_allocs = rows[i].val.unseen_allocs;
		o->net = (long long)o->allocs - (long long)o->frees;
		o->net_kb = o->net * (long long)o->size / 1024;
	}
	free(rows);
	out->n = n;
	for (int i = 0; i < SLAB_NR_COUNTERS; i++)
		out->counters[i] = t->skel->bss->counters[i];
	out->recursion_misses = slab_misses(t->skel);
	return 0;
}

void ml_slab_counts_free(struct ml_slab_counts *c)
{
	free(c->rows);
	c->rows = NULL;
	c->n = 0;
}

int ml_slab_tracer_window(struct ml_slab_tracer *t, bool end, bool shrink)
{
	int e;

	if (end && !t->win)
		return -EINVAL;
	if (!end) {
		free(t->win);
		t->win = NULL;
	}
	e = read_windows(t->skel, &t->win, &t->nwin, end, shrink);
	if (e && end) {
		free(t->win);
		t->win = NULL;
		t->nwin = 0;
	}
	return e;
}

const struct ml_slab_window *ml_slab_tracer_windows(const struct ml_slab_tracer *t, size_t *n)
{
	*n = t->win ? t->nwin : 0;
	return t->win;
}

void ml_slab_tracer_close(struct ml_slab_tracer *t)
{
	if (!t)
		return;
	free(t->win);
	slab_bpf__destroy(t->skel);
	free(t);
}
