// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens leaks, kernel side: uprobes on the target's libc allocator.
 * Entry probes remember the arguments per thread, return probes record the
 * block (address -> size, user stack). A free of a recorded address removes
 * it; a free of an unknown one was allocated before tracing began.
 *
 * libc calls its own public entry points (realloc(NULL, n) -> malloc,
 * realloc(p, 0) -> free ...): only the outermost call of a thread counts.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "leaks.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile bool with_stacks = true;

__u64 counters[LEAKS_NR_COUNTERS];

struct inflight {
	__u64 size;
	__u64 arg; /* realloc: old pointer; posix_memalign: memptr */
	__u32 fn; /* enum leaks_fn */
	__u32 depth; /* nested libc-internal calls */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* entries of dead threads age out */
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct inflight);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LEAKS_MAX_ALLOCS);
	__type(key, __u64);
	__type(value, struct leaks_alloc);
} allocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, LEAKS_MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LEAKS_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline int call_enter(__u32 fn, __u64 size, __u64 arg)
{
	__u32 tid = current_tid();
	struct inflight *in, fresh = {};

	if (target_tgid && current_tgid() != target_tgid)
		return 0;
	in = bpf_map_lookup_elem(&calls, &tid);
	if (in) {
		in->depth++;
		return 0;
	}
	fresh.fn = fn;
	fresh.size = size;
	fresh.arg = arg;
	bpf_map_update_elem(&calls, &tid, &fresh, BPF_ANY);
	return 0;
}

static __always_inline void record_free(__u64 addr)
{
	if (!addr)
		return;
	if (bpf_map_delete_elem(&allocs, &addr) == 0)
		__sync_fetch_and_add(&counters[LEAKS_C_FREES], 1);
	else
		__sync_fetch_and_add(&counters[LEAKS_C_UNTRACKED], 1);
}

static __always_inline void record_alloc(struct pt_regs *ctx, __u64 addr, __u64 size)
{
	struct leaks_alloc a = { .size = size, .stack_id = -1 };

	if (!addr) {
		__sync_fetch_and_add(&counters[LEAKS_C_FAILED], 1);
		return;
	}
	if (with_stacks)
		a.stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (bpf_map_update_elem(&allocs, &addr, &a, BPF_ANY))
		__sync_fetch_and_add(&counters[LEAKS_C_LOST], 1);
	else
		__sync_fetch_and_add(&counters[LEAKS_C_ALLOCS], 1);
}

SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
	return call_enter(LEAKS_MALLOC, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 n, __u64 size)
{
	return call_enter(LEAKS_CALLOC, n * size, 0);
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, __u64 ptr, __u64 size)
{
	return call_enter(LEAKS_REALLOC, size, ptr);
}

SEC("uprobe")
int BPF_KPROBE(aligned_alloc_enter, __u64 align, __u64 size)
{
	return call_enter(LEAKS_ALIGNED_ALLOC, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, __u64 memptr, __u64 align, __u64 size)
{
	return call_enter(LEAKS_POSIX_MEMALIGN, size, memptr);
}

SEC("uprobe")
int BPF_KPROBE(memalign_enter, __u64 align, __u64 size)
{
	return call_enter(LEAKS_MEMALIGN, size, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, __u64 ret)
{
	__u32 tid = current_tid();
	struct inflight *in;
	__u64 addr = ret;

	if (target_tgid && current_tgid() != target_tgid)
		return 0;
	in = bpf_map_lookup_elem(&calls, &tid);
	if (!in)
		return 0;
	if (in->depth) {
		in->depth--;
		return 0;
	}
	switch (in->fn) {
	case LEAKS_REALLOC:
		/* success, or realloc(p, 0) which frees p and returns NULL */
		if (in->arg && (addr || !in->size))
			record_free(in->arg);
		if (addr || in->size)
			record_alloc(ctx, addr, in->size);
		break;
	case LEAKS_POSIX_MEMALIGN:
		addr = 0;
		if ((int)ret == 0)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)in->arg);
		record_alloc(ctx, addr, in->size);
		break;
	default:
		record_alloc(ctx, addr, in->size);
	}
	bpf_map_delete_elem(&calls, &tid);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 ptr)
{
	__u32 tid = current_tid();

	if (target_tgid && current_tgid() != target_tgid)
		return 0;
	if (bpf_map_lookup_elem(&calls, &tid))
		return 0; /* inside realloc: its return accounts for it */
	record_free(ptr);
	return 0;
}
