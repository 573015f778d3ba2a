// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens slab, kernel side: kmem_cache_alloc/kmem_cache_free counted per
 * cache. tp_btf hands us the struct kmem_cache * itself, so the name is read
 * from it (the tracefs format of these events has no cache name).
 *
 * kmalloc()/kfree() have tracepoints of their own, without the cache. Where
 * the kernel has the bpf_get_kmem_cache() kfunc (6.13+: the cache of the
 * slab an address is in), each is counted in the very cache its object is
 * in: kmalloc-64, kmalloc-cg-64, kmalloc-rcl-..., a dedicated bucket, or a
 * named cache whose object is freed with kfree(). Without it, a kmalloc()
 * is counted in the kmalloc-N cache its size (bytes_alloc) and flags
 * choose, and a kfree() cannot be attributed (counted apart).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "slab.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct slab_key);
	__type(value, struct slab_val);
} stats SEC(".maps");

__u64 counters[SLAB_NR_COUNTERS];

/*
 * Objects freed and not allocated since, by address. On Linux 6.18 some
 * objects are freed, reused and freed again with no kmem_cache_alloc or
 * kmalloc event in between (the kernel's own trace events show the same
 * as these programs): whole short-lived processes' dentries, inodes,
 * files and names, in bursts. Their allocations are not counted, so
 * the net of such caches falls short of what the kernel has in use
 * (dentry, lsm_inode_cache: a few hundred objects in a few seconds on a
 * busy machine). The second free is the evidence: it is counted per cache
 * as unseen_allocs, an allocation the kernel made without its tracepoint.
 * (One whose object is still in use at the end, or was never freed in
 * sight before, cannot be seen this way: a lower bound.) An LRU map: an
 * address forgotten only misses a detection, it never makes one up.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLAB_MAX_FREED);
	__type(key, __u64);
	__type(value, __u8);
} freed SEC(".maps");

extern struct kmem_cache *bpf_get_kmem_cache(__u64 addr) __ksym __weak;

static __always_inline struct slab_val *cache_slot(const struct kmem_cache *s)
{
	struct slab_key key = {};
	struct slab_val zero = {}, *v;

	bpf_probe_read_kernel_str(key.cache, sizeof(key.cache), BPF_CORE_READ(s, name));
	v = bpf_map_lookup_elem(&stats, &key);
	if (v)
		return v;
	zero.size = BPF_CORE_READ(s, size);
	zero.refcount = BPF_CORE_READ(s, refcount);
	bpf_map_update_elem(&stats, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stats, &key);
}

static __always_inline int on_alloc(const void *ptr, const struct kmem_cache *s)
{
	__u64 addr = (__u64)ptr;
	struct slab_val *v;

	if (!ptr || !s)
		return 0;
	bpf_map_delete_elem(&freed, &addr);
	v = cache_slot(s);
	if (v)
		__sync_fetch_and_add(&v->allocs, 1);
	return 0;
}

static __always_inline void count(enum slab_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

static __always_inline int on_free(const void *ptr, const struct kmem_cache *s)
{
	__u64 addr = (__u64)ptr;
	struct slab_val *v;
	__u8 one = 1;
	bool again;

	if (!ptr || !s)
		return 0;
	again = bpf_map_update_elem(&freed, &addr, &one, BPF_NOEXIST) == -17 /* EEXIST */;
	v = cache_slot(s);
	if (v)
		__sync_fetch_and_add(&v->frees, 1);
	if (v && again)
		__sync_fetch_and_add(&v->unseen_allocs, 1);
	if (again)
		count(SLAB_C_UNSEEN_ALLOCS);
	return 0;
}

/*
 * The kernel runs a tracing program at most once per CPU at a time: when an
 * interrupt comes while the program is running and fires the same
 * tracepoint, the program is skipped for that event and the skip counted
 * (bpf_prog_info.recursion_misses). RCU callbacks freeing a batch of
 * dentries, inodes and files in a softirq, on the way out of an interrupt
 * that came while kmem_cache_free's program ran, lose every free of the
 * batch that way: hundreds in a few seconds of file churn, the net of those
 * caches then too high by as many.
 *
 * So each tracepoint gets SLAB_COPIES copies of its program (user space
 * loads them where it can: ncopies). A copy is skipped only while it runs
 * in a context the event interrupted: the task, a softirq, an interrupt,
 * one copy each at most, since the copies of one event run one after the
 * other. Below an NMI there are three such contexts, so one copy of four
 * at least runs for every event. The first copy that runs for an event
 * counts it; the others must see that it was counted. The copies of one
 * event are called one after the other from the same frame, so their
 * context pointer (the arguments array on the kernel's stack) is the same,
 * and an event that interrupts them has another one: per CPU, a small
 * table keyed by that address records which copy ran last for which
 * pointer. An entry may be replaced only when it cannot belong to an event
 * whose copies are still to run: its last copy ran, or it is older than
 * any interrupt lasts.
 */
const volatile __u32 ncopies = 1;

#define CLAIM_SETS 64
#define CLAIM_WAYS 4
#define CLAIM_ENTRIES 256 /* CLAIM_SETS * CLAIM_WAYS */
#define CLAIM_STALE_NS 50000000ULL /* 50 ms */

struct claim {
	__u64 ctx; /* the copies' context pointer */
	__u64 ptr; /* the event's object */
	__u64 ts;
	__u32 tp; /* tracepoint */
	__u32 last; /* the last copy that ran */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CLAIM_ENTRIES);
	__type(key, __u32);
	__type(value, struct claim);
} claims SEC(".maps");

enum { TP_CACHE_ALLOC = 1, TP_CACHE_FREE, TP_KMALLOC, TP_KFREE };

/* true: copy @copy, called with @ctx, is the first copy to run for this event */
static __always_inline bool claim(__u32 tp, __u32 copy, const void *ctx, const void *ptr)
{
	struct claim *e, *hit = NULL, *free = NULL, *oldest = NULL;
	__u64 c = 0, now;
	__u32 set, key;

	if (ncopies <= 1)
		return true;
	/* the address as a number (the verifier keeps pointers pointers) */
	bpf_probe_read_kernel(&c, sizeof(c), &ctx);
	set = (__u32)((c >> 3) ^ (c >> 11)) % CLAIM_SETS;
	now = bpf_ktime_get_ns();
#pragma unroll
	for (int w = 0; w < CLAIM_WAYS; w++) {
		key = set * CLAIM_WAYS + w;
		e = bpf_map_lookup_elem(&claims, &key);
		if (!e)
			return copy == 0;
		if (e->ctx == c && e->tp == tp) {
			hit = e;
			break;
		}
		if (!free && (!e->ctx || e->last + 1 >= ncopies || now - e->ts > CLAIM_STALE_NS))
			free = e;
		if (!oldest || e->ts < oldest->ts)
			oldest = e;
	}
	if (hit && hit->ptr == (__u64)ptr && hit->last < copy) {
		hit->last = copy; /* an earlier copy counted this event */
		return false;
	}
	if (copy) /* the copies before this one were running below: skipped */
		count(copy + 1 >= ncopies ? SLAB_C_RESCUED_LAST : SLAB_C_RESCUED);
	e = hit ? hit : free ? free : oldest;
	if (!e)
		return true;
	e->ctx = c;
	e->tp = tp;
	e->ptr = (__u64)ptr;
	e->ts = now;
	e->last = copy;
	return true;
}

/* ---- kmalloc() and kfree() ---- */

static __always_inline struct slab_val *named_slot(const char *name, __u32 size)
{
	struct slab_key key = {};
	struct slab_val zero = { .size = size, .refcount = 1 }, *v;

	__builtin_memcpy(key.cache, name, sizeof(key.cache));
	v = bpf_map_lookup_elem(&stats, &key);
	if (v)
		return v;
	bpf_map_update_elem(&stats, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stats, &key);
}

/*
 * The kmalloc-N cache of a kmalloc() of @bytes_alloc bytes (the cache's
 * object size, as the tracepoint reports it) with @gfp: dma-kmalloc-N for
 * __GFP_DMA, kmalloc-rcl-N for __GFP_RECLAIMABLE, kmalloc-cg-N for
 * __GFP_ACCOUNT, else kmalloc-N; N is 8 ... 192 ... 1k ... 8k.
 */
static __always_inline struct slab_val *kmalloc_slot(__u64 bytes, __u32 gfp)
{
	char name[SLAB_NAME_LEN] = {};
	const char *pre = "kmalloc-";
	int n = 0, len = 8;
	__u64 v = bytes;
	char digits[8];
	int nd = 0;

	/* the gfp bits (an anonymous enum: not relocatable; stable for years) */
	if (gfp & (1U << ___GFP_DMA_BIT)) {
		pre = "dma-kmalloc-";
		len = 12;
	} else if (gfp & (1U << ___GFP_RECLAIMABLE_BIT)) {
		pre = "kmalloc-rcl-";
		len = 12;
	} else if (gfp & (1U << ___GFP_ACCOUNT_BIT)) {
		pre = "kmalloc-cg-";
		len = 11;
	}
	for (int i = 0; i < 12; i++)
		if (i < len)
			name[n++] = pre[i];
	if (v >= 1024 && !(v & 1023))
		v >>= 10;
#pragma unroll
	for (int i = 0; i < 7; i++) {
		digits[nd++] = (char)('0' + v % 10);
		v /= 10;
		if (!v)
			break;
	}
#pragma unroll
	for (int i = 6; i >= 0; i--)
		if (i < nd && n < SLAB_NAME_LEN - 2)
			name[n++] = digits[i];
	if (bytes >= 1024 && !(bytes & 1023) && n < SLAB_NAME_LEN - 1)
		name[n++] = 'k';
	return named_slot(name, (__u32)bytes);
}

/* kmalloc()/kfree() in the cache of their object (bpf_get_kmem_cache) */
static __always_inline int kmalloc_in_cache(const void *ptr)
{
	struct kmem_cache *s = bpf_get_kmem_cache((__u64)ptr);

	if (!s) {
		count(SLAB_C_KMALLOC_LARGE);
		return 0;
	}
	return on_alloc(ptr, s);
}

static __always_inline int kfree_in_cache(const void *ptr)
{
	struct kmem_cache *s = bpf_get_kmem_cache((__u64)ptr);

	if (s)
		return on_free(ptr, s);
	return 0; /* a large kmalloc's pages, or ZERO_SIZE_PTR */
}

/* without the kfunc: the size says the cache, kfree() cannot be attributed */
static __always_inline int kmalloc_by_size(const void *ptr, __u64 bytes_alloc, __u32 gfp)
{
	struct slab_val *v;

	if (!ptr)
		return 0;
	if (bytes_alloc > 8192) {
		count(SLAB_C_KMALLOC_LARGE);
		return 0;
	}
	bpf_map_delete_elem(&freed, &(__u64){ (__u64)ptr });
	v = kmalloc_slot(bytes_alloc, gfp);
	if (v)
		__sync_fetch_and_add(&v->allocs, 1);
	return 0;
}

static __always_inline int kfree_unattributed(const void *ptr)
{
	if ((unsigned long)ptr > 16) /* not NULL, not ZERO_SIZE_PTR */
		count(SLAB_C_KFREE_UNATTRIBUTED);
	return 0;
}

/*
 * The programs, each defined once and attached as tp_btf (preferred: typed
 * arguments) or raw_tp (the fallback: the same arguments, untyped); each
 * loaded SLAB_COPIES times (see claim()). @sec is the attach type.
 */
#define CACHE_ALLOC_PROG(sec, name, n)                                                             \
	SEC(sec "/kmem_cache_alloc")                                                               \
	int BPF_PROG(name, unsigned long call_site, const void *ptr, struct kmem_cache *s,         \
		     gfp_t gfp_flags, int node)                                                    \
	{                                                                                          \
		if (!ptr || !claim(TP_CACHE_ALLOC, n, ctx, ptr))                                   \
			return 0;                                                                  \
		return on_alloc(ptr, s);                                                           \
	}
#define CACHE_FREE_PROG(sec, name, n)                                                              \
	SEC(sec "/kmem_cache_free")                                                                \
	int BPF_PROG(name, unsigned long call_site, const void *ptr, const struct kmem_cache *s)   \
	{                                                                                          \
		if (!ptr || !claim(TP_CACHE_FREE, n, ctx, ptr))                                    \
			return 0;                                                                  \
		return on_free(ptr, s);                                                            \
	}
/* @fn: kmalloc_in_cache(ptr) or kmalloc_by_size(ptr, bytes_alloc, gfp_flags) */
#define KMALLOC_PROG(sec, name, n, fn, ...)                                                        \
	SEC(sec "/kmalloc")                                                                        \
	int BPF_PROG(name, unsigned long call_site, const void *ptr, size_t bytes_req,             \
		     size_t bytes_alloc, gfp_t gfp_flags, int node)                                \
	{                                                                                          \
		if (!ptr || !claim(TP_KMALLOC, n, ctx, ptr))                                       \
			return 0;                                                                  \
		return fn(ptr, ##__VA_ARGS__);                                                     \
	}
/* @fn: kfree_in_cache or kfree_unattributed */
#define KFREE_PROG(sec, name, n, fn)                                                               \
	SEC(sec "/kfree")                                                                          \
	int BPF_PROG(name, unsigned long call_site, const void *ptr)                               \
	{                                                                                          \
		if (!ptr || !claim(TP_KFREE, n, ctx, ptr))                                         \
			return 0;                                                                  \
		return fn(ptr);                                                                    \
	}

#define TP_BTF_COPY(n)                                                                             \
	CACHE_ALLOC_PROG("tp_btf", cache_alloc##n, n)                                              \
	CACHE_FREE_PROG("tp_btf", cache_free##n, n)                                                \
	KMALLOC_PROG("tp_btf", kmalloc_exact##n, n, kmalloc_in_cache)                              \
	KFREE_PROG("tp_btf", kfree_exact##n, n, kfree_in_cache)                                    \
	KMALLOC_PROG("tp_btf", kmalloc_size##n, n, kmalloc_by_size, bytes_alloc, gfp_flags)        \
	KFREE_PROG("tp_btf", kfree_size##n, n, kfree_unattributed)

#define RAW_TP_COPY(n)                                                                             \
	CACHE_ALLOC_PROG("raw_tp", cache_alloc_raw##n, n)                                          \
	CACHE_FREE_PROG("raw_tp", cache_free_raw##n, n)                                            \
	KMALLOC_PROG("raw_tp", kmalloc_raw##n, n, kmalloc_by_size, bytes_alloc, gfp_flags)         \
	KFREE_PROG("raw_tp", kfree_raw##n, n, kfree_unattributed)

TP_BTF_COPY(0)
TP_BTF_COPY(1)
TP_BTF_COPY(2)
TP_BTF_COPY(3)
RAW_TP_COPY(0)
RAW_TP_COPY(1)
RAW_TP_COPY(2)
RAW_TP_COPY(3)
