// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens slab, kernel side: kmem_cache_alloc/kmem_cache_free counted per
 * cache. tp_btf hands us the struct kmem_cache * itself, so the name is read
 * from it (the tracefs format of these events has no cache name).
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
	struct slab_val *v;

	if (!ptr || !s)
		return 0;
	v = cache_slot(s);
	if (v)
		__sync_fetch_and_add(&v->allocs, 1);
	return 0;
}

static __always_inline int on_free(const void *ptr, const struct kmem_cache *s)
{
	struct slab_val *v;

	if (!ptr || !s)
		return 0;
	v = cache_slot(s);
	if (v)
		__sync_fetch_and_add(&v->frees, 1);
	return 0;
}

/* preferred: BTF-typed tracepoints */
SEC("tp_btf/kmem_cache_alloc")
int BPF_PROG(cache_alloc, unsigned long call_site, const void *ptr, struct kmem_cache *s,
	     gfp_t gfp_flags, int node)
{
	return on_alloc(ptr, s);
}

SEC("tp_btf/kmem_cache_free")
int BPF_PROG(cache_free, unsigned long call_site, const void *ptr, const struct kmem_cache *s)
{
	return on_free(ptr, s);
}

/* fallback: raw tracepoints, same arguments, untyped (read with probe_read) */
SEC("raw_tp/kmem_cache_alloc")
int BPF_PROG(cache_alloc_raw, unsigned long call_site, const void *ptr, struct kmem_cache *s,
	     gfp_t gfp_flags, int node)
{
	return on_alloc(ptr, s);
}

SEC("raw_tp/kmem_cache_free")
int BPF_PROG(cache_free_raw, unsigned long call_site, const void *ptr, const struct kmem_cache *s)
{
	return on_free(ptr, s);
}
