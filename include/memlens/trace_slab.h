/* SPDX-License-Identifier: MIT */
/*
 * The slab tracer (eBPF, libmemlens-trace.a): kmem_cache_alloc() and
 * kmem_cache_free() (kmalloc() and kfree() too) counted per slab cache, the
 * cache's name read from its struct kmem_cache; with the kernel's own count
 * of each cache's objects in use (/proc/slabinfo) at the two ends of a
 * window to compare with. It needs root and a kernel with BTF; link with
 * -lmemlens-trace -lmemlens -lbpf -lelf -lz.
 *
 *	ML_OPTS(ml_slab_tracer_opts, o);
 *	ml_slab_tracer_open(&t, &o, &err);
 *	... let it count ...
 *	ml_slab_tracer_read(t, &c);   (as often as wanted)
 *	ml_slab_counts_free(&c);
 *	ml_slab_tracer_close(t);
 */
#ifndef MEMLENS_TRACE_SLAB_H
#define MEMLENS_TRACE_SLAB_H

/* exported by whatever shared object links it (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"

#define ML_SLAB_NAME_LEN 32

enum ml_slab_mode {
	ML_SLAB_AUTO, /* tp_btf, else raw_tp */
	ML_SLAB_TP_BTF,
	ML_SLAB_RAW_TP,
};

struct ml_slab_tracer_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	enum ml_slab_mode mode;
};

struct ml_slab_tracer;

/* One slab cache: what was counted in it since the open. */
struct ml_slab_row {
	char cache[ML_SLAB_NAME_LEN];
	uint64_t allocs, frees;
	uint32_t size; /* bytes per object, slab metadata included */
	int32_t refcount; /* > 1: other caches were merged into this one (SLUB) */
	uint64_t unseen_allocs; /* objects freed again with no allocation event since their free */
	long long net; /* allocs - frees */
	long long net_kb; /* net x size, in KiB */
};

/* The counters of the whole tracer (ml_slab_counts.counters[]). */
enum ml_slab_counter {
	ML_SLAB_KFREE_UNATTRIBUTED = 0, /* kfree() of a slab object whose cache is not known */
	ML_SLAB_KMALLOC_LARGE, /* kmalloc() served by the page allocator (no cache) */
	ML_SLAB_UNSEEN_ALLOCS, /* the sum of every cache's unseen_allocs */
	ML_SLAB_RESCUED, /* events counted by a later copy of a program: the earlier were busy */
	ML_SLAB_RESCUED_LAST, /* of those, by the last copy: all the others were busy */
	ML_SLAB_NR_COUNTERS,
};

/* What the tracer counted since it was opened. */
struct ml_slab_counts {
	struct ml_slab_row *rows; /* in no order */
	size_t n;
	uint64_t counters[ML_SLAB_NR_COUNTERS];
	uint64_t recursion_misses; /* events no copy of a program saw */
};

/* How the tracer runs, as it could load here. */
struct ml_slab_tracer_info {
	size_t sz; /* the caller sets it: sizeof(struct ml_slab_tracer_info) (memlens/opts.h) */
	const char *mode; /* the programs and how kmalloc and kfree are counted, a sentence */
	bool kmalloc_exact; /* kmalloc and kfree in their object's cache, else by size */
	unsigned int copies; /* programs per tracepoint */
};

/*
 * --slabinfo's window: a cache's objects in use as the kernel counts them,
 * and what the programs had counted for it, read at the same instant at
 * its start [0] and its end [1].
 */
struct ml_slab_window {
	char name[64];
	long objperslab;
	long long k[2]; /* objects in use */
	uint64_t allocs[2], frees[2], unseen[2]; /* counted by then */
	bool have[2];
};

/*
 * Check the kernel (BTF, the right to load BPF), load and attach the
 * programs: tp_btf with kmalloc and kfree in their caches first, then by
 * size, then raw_tp, as opts.mode allows. 0 and *@out, or -errno with a
 * sentence that says what to do in @err.
 */
int ml_slab_tracer_open(struct ml_slab_tracer **out, const struct ml_slab_tracer_opts *opts,
			struct ml_err *err);
int ml_slab_tracer_info(const struct ml_slab_tracer *t, struct ml_slab_tracer_info *out);
/* The counts so far (each a total since the open). 0, or -ENOMEM. */
int ml_slab_tracer_read(const struct ml_slab_tracer *t, struct ml_slab_counts *out);
void ml_slab_counts_free(struct ml_slab_counts *c);
/*
 * Read the window's start (@end false: the list of caches is made) or its
 * end. @shrink: flush each cache's per-CPU slabs first (their free objects
 * count as in use), through /sys/kernel/slab/CACHE/shrink. 0, or -errno
 * (-EACCES: /proc/slabinfo needs root).
 */
int ml_slab_tracer_window(struct ml_slab_tracer *t, bool end, bool shrink);
/* The window's caches (NULL when none was read, or its end failed). */
const struct ml_slab_window *ml_slab_tracer_windows(const struct ml_slab_tracer *t, size_t *n);
/* Other names SLUB merged into @cache (", " between them; "" when none). */
void ml_slab_merged_names(const char *cache, char *out, size_t len);
/* Detach and free (NULL: nothing). */
void ml_slab_tracer_close(struct ml_slab_tracer *t);

#pragma GCC visibility pop

#endif
