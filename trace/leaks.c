// SPDX-License-Identifier: MIT
/*
 * The leak tracer's user side (memlens/trace_leaks.h): the allocator
 * found, the programs loaded (leakload.c), and the blocks outstanding
 * added up per size and per call stack.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memlens/alloc_sample.h"
#include "memlens/opts.h"
#include "memlens/trace_leaks.h"
#include "allocfind.h"
#include "bpfutil.h"
#include "leakload.h"
#include "leaks.h"
#include "leaks.skel.h"

_Static_assert((int)LEAKS_NR_COUNTERS == (int)ML_LEAKS_NR_COUNTERS &&
		       (int)LEAKS_C_MISSED_FREES == (int)ML_LEAKS_MISSED_FREES &&
		       (int)LEAKS_C_STACK_FULL == (int)ML_LEAKS_STACK_FULL &&
		       (int)LEAKS_C_STACK_DROPPED == (int)ML_LEAKS_STACK_DROPPED,
	       "the counters");
_Static_assert(LEAKS_STACK_MAX == ML_LEAKS_STACK_MAX, "the deepest stack");

struct ml_leaks_tracer {
	struct ml_leaks_tracer_opts o;
	struct leaks_load_opts lo;
	struct alloc_lib alloc; /* the file whose malloc the target calls */
	struct leaks_loader ld; /* the programs and their uprobes */
};

/* the BPF side's ids of the blocks without a stack, by enum ml_leaks_no_stack */
static const int64_t no_stack_id[ML_LEAKS_NR_NO_STACK] = {
	[ML_LEAKS_NO_STACK_TABLE_FULL] = LEAKS_STACK_FULL,
	[ML_LEAKS_NO_STACK_NOT_WALKED] = LEAKS_STACK_UNWALKED,
	[ML_LEAKS_NO_STACK_COLLISION] = LEAKS_STACK_COLLISION,
	[ML_LEAKS_NO_STACK_DROPPED] = LEAKS_STACK_DROPPED,
};

int ml_leaks_tracer_open(struct ml_leaks_tracer **out, const struct ml_leaks_tracer_opts *opts,
			 struct ml_err *err)
{
	struct ml_leaks_tracer *t;
	int e;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = ml_opts_load(&t->o, sizeof(t->o), opts, "ml_leaks_tracer_opts", err);
	if (!e)
		e = mlt_trace_preflight(err);
	if (!e && t->o.preload && !t->o.sample)
		e = ml_err_set(err, EINVAL, "the preloaded sampler samples: give a sample rate");
	if (!e && t->o.preload) { /* the markers are probed by file: nothing to wait for */
		snprintf(t->alloc.path, sizeof(t->alloc.path), "%s", t->o.preload);
		t->alloc.is_libc = true;
	} else if (!e)
		e = t->o.wait_loaded ? mlt_alloc_wait_loaded(t->o.pid, &t->alloc, err)
				     : mlt_alloc_find(t->o.pid, &t->alloc, err);
	if (!e) {
		t->lo = (struct leaks_load_opts){ .no_stacks = t->o.no_stacks,
						  .free_at_entry = t->o.free_at_entry,
						  .perf_uprobes = t->o.perf_uprobes,
						  .dwarf = t->o.stacks == ML_LEAKS_STACKS_DWARF,
						  .max_blocks = t->o.max_blocks,
						  .max_stacks = t->o.max_stacks,
						  .sample = t->o.sample,
						  .stack_size = t->o.stack_size,
						  .preload = t->o.preload != NULL,
						  .say = t->o.say,
						  .say_arg = t->o.say_arg };
		e = mlt_leaks_load(&t->ld, &t->lo, &t->alloc, t->o.pid, err);
	}
	if (!e && t->o.stacks == ML_LEAKS_STACKS_DWARF)
		e = mlt_leaks_dwarf_start(
			&t->ld, t->o.pid,
			(size_t)(t->o.max_stacks ? t->o.max_stacks : (long)LEAKS_MAX_STACKS), err);
	if (e) {
		ml_leaks_tracer_close(t);
		return e;
	}
	*out = t;
	return 0;
}

static int cmp_size_stack(const void *a, const void *b)
{
	const struct leaks_alloc *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int cmp_size_row(const void *a, const void *b)
{
	const struct ml_leaks_size *x = a, *y = b;

	if (x->est_bytes != y->est_bytes)
		return x->est_bytes < y->est_bytes ? 1 : -1;
	return x->size < y->size ? -1 : x->size > y->size;
}

static int cmp_stack_row(const void *a, const void *b)
{
	const struct ml_leaks_stack *x = a, *y = b;

	if (x->est_bytes != y->est_bytes)
		return x->est_bytes < y->est_bytes ? 1 : -1;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static int cmp_stack_id(const void *a, const void *b)
{
	const struct leaks_alloc *x = a, *y = b;

	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* @a is reordered: sorted by stack id, each run is one stack */
static void group_by_stack(struct ml_leaks_outstanding *t, struct leaks_alloc *a, size_t n,
			   uint64_t mean)
{
	qsort(a, n, sizeof(*a), cmp_stack_id);
	t->stacks = calloc(n ? n : 1, sizeof(*t->stacks));
	for (size_t i = 0; t->stacks && i < n; i++) {
		struct ml_leaks_stack *row;
		double w = ml_alloc_sample_weight(a[i].size, mean);

		if (!t->nstacks || t->stacks[t->nstacks - 1].id != a[i].stack_id)
			t->stacks[t->nstacks++].id = a[i].stack_id;
		row = &t->stacks[t->nstacks - 1];
		row->count++;
		row->bytes += a[i].size;
		row->est_count += w;
		row->est_bytes += w * (double)a[i].size;
		row->var += ml_alloc_sample_var(a[i].size, mean);
	}
	if (t->stacks)
		qsort(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_stack_row);
}

int ml_leaks_tracer_read(struct ml_leaks_tracer *r, struct ml_leaks_outstanding *t)
{
	bool dwarf = r->o.stacks == ML_LEAKS_STACKS_DWARF;
	uint64_t mean = r->o.sample;
	struct leaks_alloc *a;
	size_t n;

	memset(t, 0, sizeof(*t));
	if (r->ld.rb)
		ring_buffer__consume(r->ld.rb); /* every copy handed over so far, unwound */
	a = mlt_leaks_read_allocs(&r->ld, &n);
	if (!a)
		return -EIO;
	/* dwarf: the BPF side's ids are sequence numbers, bound to stacks unwound */
	for (size_t i = 0; dwarf && i < n; i++)
		if (a[i].stack_id >= 0) {
			int id = mlt_stackstore_lookup(&r->ld.store, (uint64_t)a[i].stack_id);

			a[i].stack_id = id >= 0 ? id : LEAKS_STACK_FULL;
		}
	qsort(a, n, sizeof(*a), cmp_size_stack);
	t->sizes = calloc(n ? n : 1, sizeof(*t->sizes));
	for (size_t i = 0; t->sizes && i < n; i++) {
		double w = ml_alloc_sample_weight(a[i].size, mean);

		if (!t->nsizes || t->sizes[t->nsizes - 1].size != a[i].size)
			t->sizes[t->nsizes++].size = a[i].size;
		t->sizes[t->nsizes - 1].count++;
		t->sizes[t->nsizes - 1].bytes += a[i].size;
		t->sizes[t->nsizes - 1].est_count += w;
		t->sizes[t->nsizes - 1].est_bytes += w * (double)a[i].size;
		t->count++;
		t->bytes += a[i].size;
		t->est_count += w;
		t->est_bytes += w * (double)a[i].size;
		t->var += ml_alloc_sample_var(a[i].size, mean);
		for (int k = 0; k < ML_LEAKS_NR_NO_STACK; k++)
			if (a[i].stack_id == no_stack_id[k]) {
				t->no_stack_count[k]++;
				t->no_stack_bytes[k] += a[i].size;
			}
	}
	if (t->sizes)
		qsort(t->sizes, t->nsizes, sizeof(*t->sizes), cmp_size_row);
	group_by_stack(t, a, n, mean);
	free(a);
	t->stacks_kept = dwarf ? r->ld.store.nstacks : mlt_leaks_count_stacks(&r->ld);
	return t->sizes && t->stacks ? 0 : -ENOMEM;
}

void ml_leaks_outstanding_free(struct ml_leaks_outstanding *s)
{
	free(s->sizes);
	free(s->stacks);
	s->sizes = NULL;
	s->stacks = NULL;
	s->nsizes = s->nstacks = 0;
}

void ml_leaks_tracer_counters(const struct ml_leaks_tracer *t, uint64_t *c)
{
	for (int i = 0; i < ML_LEAKS_NR_COUNTERS; i++)
		c[i] = t->ld.skel->bss->counters[i];
}

void ml_leaks_tracer_calls(const struct ml_leaks_tracer *t, uint64_t *calls, uint64_t *bytes)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v;

	*calls = *bytes = 0;
	if (ncpu <= 0)
		return;
	v = calloc((size_t)ncpu, LEAKS_NR_CALL_COUNTERS * sizeof(*v));
	if (v && !bpf_map_lookup_elem(bpf_map__fd(t->ld.skel->maps.calls), &(__u32){ 0 }, v))
		for (int c = 0; c < ncpu; c++) {
			*calls += v[c * LEAKS_NR_CALL_COUNTERS + LEAKS_CALLS];
			*bytes += v[c * LEAKS_NR_CALL_COUNTERS + LEAKS_CALL_BYTES];
		}
	free(v);
}

void ml_leaks_tracer_marker_hits(const struct ml_leaks_tracer *t, uint64_t *miscookied,
				 uint64_t *stray)
{
	const __u64 *m = t->ld.skel->bss->marker_counts;

	*miscookied = __atomic_load_n(&m[LEAKS_MC_MISCOOKIED], __ATOMIC_RELAXED);
	*stray = __atomic_load_n(&m[LEAKS_MC_STRAY], __ATOMIC_RELAXED);
}

uint64_t ml_leaks_tracer_recursion_misses(const struct ml_leaks_tracer *t)
{
	return mlt_trace_recursion_misses(t->ld.skel->obj);
}

int ml_leaks_tracer_allocator(const struct ml_leaks_tracer *t, struct ml_leaks_allocator *out)
{
	struct ml_leaks_allocator v = { .path = t->alloc.path,
					.is_libc = t->alloc.is_libc,
					.is_static = t->alloc.is_static,
					.prefixed = t->alloc.extra };

	return ml_result_store(out, &v, sizeof(v), sizeof(v), "ml_leaks_allocator", NULL);
}

int ml_leaks_tracer_unwind_stats(const struct ml_leaks_tracer *t, struct ml_leaks_unwind_stats *out)
{
	struct ml_leaks_unwind_stats v = {
		.stacks = t->ld.unw_stats.stacks,
		.ns = t->ld.unw_stats.ns,
		.frames = t->ld.unw_stats.frames,
		.max_frames = t->ld.unw_stats.max_frames,
		.complete = t->ld.unw_stats.ends[UNWIND_COMPLETE],
		.cut = t->ld.unw_stats.ends[UNWIND_CUT],
		.out_of_copy = t->ld.unw_stats.ends[UNWIND_OUT_OF_COPY],
		.no_cfi = t->ld.unw_stats.ends[UNWIND_NO_CFI],
		.full = t->ld.unw_stats.full,
	};

	return ml_result_store(out, &v, sizeof(v), sizeof(v), "ml_leaks_unwind_stats", NULL);
}

const char *ml_leaks_tracer_mode(const struct ml_leaks_tracer *t)
{
	return t->ld.session ? "uprobe_session" : t->ld.multi ? "uprobe_multi" : "uprobe";
}

int ml_leaks_tracer_stack(struct ml_leaks_tracer *t, int64_t id, uint64_t *ips, int max)
{
	uint64_t v[LEAKS_STACK_MAX];
	int n = mlt_leaks_stack_ips(&t->ld, id, v);

	n = n < max ? n : max < 0 ? 0 : max;
	memcpy(ips, v, (size_t)n * sizeof(*ips));
	return n;
}

int ml_leaks_tracer_fd(const struct ml_leaks_tracer *t)
{
	if (!t)
		return -EINVAL;
	if (!t->ld.rb)
		return -ENOENT;
	return ring_buffer__epoll_fd(t->ld.rb);
}

int ml_leaks_tracer_poll(struct ml_leaks_tracer *t, int timeout_ms)
{
	if (!t)
		return -EINVAL;
	if (!t->ld.rb)
		return 0;
	if (timeout_ms) {
		int n = ring_buffer__poll(t->ld.rb, timeout_ms);

		/* copies below the wakeup mark (samples_wake) are read here */
		if (n == 0)
			n = ring_buffer__consume(t->ld.rb);
		return n;
	}
	return ring_buffer__consume(t->ld.rb);
}

void ml_leaks_tracer_detach(struct ml_leaks_tracer *t)
{
	if (t)
		mlt_leaks_detach(&t->ld);
}

void ml_leaks_tracer_close(struct ml_leaks_tracer *t)
{
	if (!t)
		return;
	mlt_leaks_unload(&t->ld);
	free(t);
}
