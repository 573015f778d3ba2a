// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens leaks, kernel side: uprobes on the target's allocator. Entry
 * probes remember the arguments per thread, return probes record the block
 * (address -> size, user stack). A free of a recorded address removes it; a
 * free of an unknown one was allocated before tracing began.
 *
 * The allocator calls its own public entry points (realloc(NULL, n) ->
 * malloc, realloc(p, 0) -> free, reallocarray -> realloc ...): only the
 * outermost call of a thread counts. A call record whose return never came
 * (the return probe was not there yet when the call began) is recognised by
 * its stack pointer: a later call that is not nested in it starts at the
 * same or a higher address. It is dropped and counted (stale).
 *
 * At thread exit glibc hands the blocks its per-thread cache (tcache) still
 * holds back to free(): blocks the program freed long ago, and the cache
 * itself, which glibc allocated without going through malloc. A uprobe on
 * __call_tls_dtors, which a thread calls once its start routine has
 * returned, marks the thread as exiting: unknown pointers it frees from
 * then on are counted as exit_frees, not as frees of blocks from before
 * tracing.
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
/*
 * Set by user space once every probe is attached: tracing begins at one
 * instant for all entry points, not over the milliseconds the attaching
 * takes (during which a block could be allocated unseen and freed seen).
 */
bool armed = false;

struct inflight {
	__u64 size;
	__u64 arg; /* realloc, reallocarray: old pointer; posix_memalign: memptr */
	__u64 sp; /* user stack pointer at the outermost call's entry */
	__u32 fn; /* enum leaks_fn */
	__u32 depth; /* nested allocator-internal calls */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* and sched_process_exit deletes */
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct inflight);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} exiting SEC(".maps");

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

static __always_inline void count(enum leaks_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

static __always_inline bool wanted(void)
{
	return armed && (!target_tgid || current_tgid() == target_tgid);
}

static __always_inline int call_enter(struct pt_regs *ctx, __u32 fn, __u64 size, __u64 arg)
{
	__u32 tid = current_tid();
	struct inflight *in, fresh = {};
	__u64 sp = PT_REGS_SP(ctx);

	if (!wanted())
		return 0;
	in = bpf_map_lookup_elem(&calls, &tid);
	if (in) {
		if (sp <= in->sp) { /* nested (or a tail call: the same sp) */
			in->depth++;
			return 0;
		}
		count(LEAKS_C_STALE); /* not nested: the outer call returned unseen */
	}
	fresh.fn = fn;
	fresh.size = size;
	fresh.arg = arg;
	fresh.sp = sp;
	bpf_map_update_elem(&calls, &tid, &fresh, BPF_ANY);
	return 0;
}

static __always_inline void record_free(__u64 addr)
{
	__u32 tid;

	if (!addr)
		return;
	if (bpf_map_delete_elem(&allocs, &addr) == 0) {
		count(LEAKS_C_FREES);
		return;
	}
	tid = current_tid();
	count(bpf_map_lookup_elem(&exiting, &tid) ? LEAKS_C_EXIT_FREES : LEAKS_C_UNTRACKED);
}

static __always_inline void record_alloc(struct pt_regs *ctx, __u64 addr, __u64 size)
{
	struct leaks_alloc a = { .size = size, .stack_id = -1 };
	long e;

	if (!addr) {
		count(LEAKS_C_FAILED);
		return;
	}
	if (with_stacks)
		a.stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	e = bpf_map_update_elem(&allocs, &addr, &a, BPF_NOEXIST);
	if (e == -17 /* EEXIST: its free was not seen */) {
		count(LEAKS_C_MISSED_FREES);
		e = bpf_map_update_elem(&allocs, &addr, &a, BPF_EXIST);
	}
	count(e ? LEAKS_C_LOST : LEAKS_C_ALLOCS);
}

static __always_inline int free_enter(struct pt_regs *ctx, __u64 ptr)
{
	__u32 tid = current_tid();
	struct inflight *in;

	if (!wanted())
		return 0;
	in = bpf_map_lookup_elem(&calls, &tid);
	if (in) {
		if (PT_REGS_SP(ctx) <= in->sp)
			return 0; /* inside realloc: its return accounts for it */
		count(LEAKS_C_STALE);
		bpf_map_delete_elem(&calls, &tid);
	}
	record_free(ptr);
	return 0;
}

/* glibc: a thread past its start routine (see the top of this file) */
static __always_inline int thread_exit_enter(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u8 one = 1;

	if (!wanted() || tid == id >> 32)
		return 0; /* the main thread calls it from exit(): no tcache flush there */
	bpf_map_update_elem(&exiting, &tid, &one, BPF_ANY);
	return 0;
}

/*
 * Every entry probe runs this one program; the probe's cookie says which
 * function it is on (enum leaks_fn), so that every entry point of the
 * allocator can be attached with one uprobe_multi link (one removal, one
 * wait for the kernel's grace periods, instead of one per probe).
 */
SEC("uprobe")
int BPF_KPROBE(fn_enter, __u64 a1, __u64 a2, __u64 a3)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);

	switch (fn) {
	case LEAKS_MALLOC:
	case LEAKS_VALLOC:
	case LEAKS_PVALLOC:
		return call_enter(ctx, fn, a1, 0);
	case LEAKS_CALLOC:
		return call_enter(ctx, fn, a1 * a2, 0);
	case LEAKS_REALLOC: /* (ptr, size) */
		return call_enter(ctx, fn, a2, a1);
	case LEAKS_REALLOCARRAY: /* (ptr, n, size) */
		return call_enter(ctx, fn, a2 * a3, a1);
	case LEAKS_ALIGNED_ALLOC: /* (align, size) */
	case LEAKS_MEMALIGN:
		return call_enter(ctx, fn, a2, 0);
	case LEAKS_POSIX_MEMALIGN: /* (memptr, align, size) */
		return call_enter(ctx, fn, a3, a1);
	case LEAKS_FREE:
		return free_enter(ctx, a1);
	case LEAKS_THREAD_EXIT:
		return thread_exit_enter();
	}
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, __u64 ret)
{
	__u32 tid = current_tid();
	struct inflight *in;
	__u64 addr = ret;

	if (!wanted())
		return 0;
	in = bpf_map_lookup_elem(&calls, &tid);
	if (!in) {
		count(LEAKS_C_UNPAIRED);
		return 0;
	}
	if (in->depth) {
		in->depth--;
		return 0;
	}
	switch (in->fn) {
	case LEAKS_REALLOC:
	case LEAKS_REALLOCARRAY:
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

/* a thread's records go with it: its id may be reused by a new thread */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(task_exit)
{
	__u32 tid = current_tid();

	if (!wanted())
		return 0;
	bpf_map_delete_elem(&calls, &tid);
	bpf_map_delete_elem(&exiting, &tid);
	return 0;
}
