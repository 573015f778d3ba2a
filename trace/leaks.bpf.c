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
 *
 * A thread's state lives in task-local storage: the kernel keeps it with
 * the thread and frees it with the thread, and a program holds a pointer to
 * it that no other thread's update can touch. (Kept in a hash map keyed by
 * thread id, on Linux 7.2 and 7.3 a program could find its thread's element
 * holding another thread's record, or see it change while it ran:
 * multi-threaded counts drifted by a few per cent.)
 *
 * Sampled (leaks --sample BYTES, sample_mean): each thread counts down the
 * bytes its allocations ask for, from a distance drawn from an exponential
 * distribution of mean BYTES (leaks.h); an allocation that reaches it is
 * recorded, and a new distance is drawn. The decision is taken at the
 * entry of the outermost call: an allocation not sampled records nothing,
 * walks no stack, and, attached as a uprobe session (Linux 6.13+), asks
 * for no return probe at all: the kernel then leaves its return address
 * alone. realloc and reallocarray always take their return probe (the old
 * block may be a sampled one, and glibc's realloc calls malloc and free
 * itself); the other entry points do not call each other in glibc,
 * jemalloc and tcmalloc, so an unsampled call needs no record of being
 * under way. A free only looks its address up.
 */
#include "vmlinux.h"

#if defined(__TARGET_ARCH_x86)
/*
 * The registers as the kernel saves them on x86-64: struct pt_regs, whose
 * layout is the ptrace ABI's and the same in every kernel. They are read at
 * these fixed offsets rather than relocated against the kernel's BTF (as
 * vmlinux.h's struct pt_regs would be): with no CO-RE relocation in the
 * object, libbpf neither loads nor parses the kernel's BTF (5 MB, about
 * 25 ms at every start of `leaks`). --stacks dwarf reads the one kernel
 * structure field it needs at an offset user space looks up (vm_end_off).
 */
struct leaks_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs,
		flags, sp, ss;
};
#define __PT_REGS_CAST(x) ((const struct leaks_regs *)(x))
#endif

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h> /* common.bpf.h */

#include "common.bpf.h"
#include "leaks.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile bool with_stacks = true;
/* --stacks dwarf: copy registers and stack to the samples ring buffer */
const volatile bool dwarf = false;
/* --stack-size: bytes copied, a multiple of 8 up to LEAKS_DWARF_STACK_MAX */
const volatile __u32 dwarf_stack_size = LEAKS_DWARF_STACK_DEFAULT;
/* the bytes reserved for it: rounded up to pages, and one page more (leaks_stack_room) */
const volatile __u32 dwarf_stack_room = LEAKS_DWARF_STACK_DEFAULT + 4096;
/*
 * --stacks dwarf: user space is woken once this many bytes of copies wait
 * in the ring (a quarter of it), not for every copy: a wakeup is an
 * interrupt and a switch to memlens, as dear as the copy itself. It also
 * reads the ring on its own every 100 ms. 0: every copy wakes it.
 */
const volatile __u64 samples_wake = 0;
/* --stacks dwarf: offsetof(struct vm_area_struct, vm_end) in this kernel (from its BTF) */
const volatile __u32 vm_end_off = 0;
/* --sample BYTES: the mean distance between samples; 0: every allocation */
const volatile __u64 sample_mean = 0;
/* one program for entries and returns, attached as a uprobe session */
const volatile bool session = false;
/*
 * The preloaded sampler (leaks.h): mls_sampled's address in its ELF file,
 * and the end of its image (both relative to where it is loaded); 0: none
 */
const volatile __u64 sampler_sym = 0;
const volatile __u64 sampler_end = 0;
/*
 * The low 12 bits of each marker's address (enum leaks_marker): the page
 * offset of its pc wherever the object is mapped. User space makes sure
 * they differ.
 */
const volatile __u32 marker_lo[LEAKS_NR_MARKS] = {};
/* -ln(1/2 + j / 2048) * 2^32, j = 0..1024: filled by user space (leaks.h) */
const volatile __u64 expo_tab[LEAKS_EXPO_N + 1] = {};

__u64 counters[LEAKS_NR_COUNTERS];
/* the preloaded sampler's probe hits: enum leaks_marker_counter */
__u64 marker_counts[LEAKS_NR_MARKER_COUNTERS];
/* --stacks dwarf: the stack_id of the next allocation, its sample's seq */
__u64 dwarf_seq;
/*
 * Set by user space once every probe is attached: tracing begins at one
 * instant for all entry points, not over the milliseconds the attaching
 * takes (during which a block could be allocated unseen and freed seen).
 */
bool armed = false;

/* the outermost allocator call a thread is in */
struct inflight {
	__u64 size;
	__u64 arg; /* realloc, reallocarray: old pointer; posix_memalign: memptr */
	__u64 sp; /* user stack pointer at the outermost call's entry */
	__u32 fn; /* enum leaks_fn */
	__u32 depth; /* nested allocator-internal calls */
	bool sampled; /* record the block it returns (always, unless --sample) */
};

struct thread_state {
	struct inflight call;
	bool in_call; /* call holds a call under way */
	bool exiting; /* past its start routine: see the top of this file */
	bool counting; /* --sample: countdown holds a distance */
	__u64 countdown; /* --sample: bytes * 2^8 until the next sampled allocation */
	/*
	 * Where the return probe walks the user stack into: too big for the
	 * BPF stack, and per thread rather than per CPU because uprobe
	 * programs can be preempted (another thread's program on the same
	 * CPU would overwrite a per-CPU buffer).
	 */
	struct leaks_stack stack;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LEAKS_MAX_ALLOCS);
	__type(key, __u64);
	__type(value, struct leaks_alloc);
} allocs SEC(".maps");

/*
 * The call stacks, keyed by a 63-bit hash of their content, each stored
 * once and never removed nor replaced while tracing.
 *
 * Not a BPF_MAP_TYPE_STACK_TRACE: that map keys a stack by its hash modulo
 * the number of buckets and keeps one stack per bucket. Without
 * BPF_F_REUSE_STACKID a second stack landing in an occupied bucket gets no
 * id at all, uncounted: git log -p over 335 commits (~19000 distinct
 * stacks) lost the stacks of 552 live blocks in 16384 buckets, and 4000
 * distinct stacks lost 468. With the flag the bucket is overwritten, and
 * every live allocation that pointed at the old stack would silently show
 * the new one. Any number of buckets leaves a birthday-paradox share of
 * collisions (n^2 / 2m of n stacks in m buckets). Here a 64-bit hash makes a
 * collision astronomically rare, and it is still detected (the stored
 * stack is compared), never overwritten, and counted; so is a full map.
 * Allocated as stacks appear (BPF_F_NO_PREALLOC): the default size costs
 * kernel memory only for the stacks a program really has.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LEAKS_MAX_STACKS);
	__type(key, __u64);
	__type(value, struct leaks_stack);
} stacks SEC(".maps");

/*
 * --stacks dwarf: one struct leaks_sample per allocation recorded, for
 * user space to unwind (sized by user space before loading).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} samples SEC(".maps");

/* --sample: every outermost allocation call and its bytes, per CPU */
struct call_counts {
	__u64 v[LEAKS_NR_CALL_COUNTERS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct call_counts);
} calls SEC(".maps");

/*
 * Every program here runs on the kernel stack, never on a private one.
 * Since Linux 6.14 the kernel may give a kprobe-type program (a uprobe's
 * is one) whose stack is 64 bytes or more a per-CPU stack of its own
 * instead. A uprobe's program runs with only migration disabled: under
 * full or lazy preemption another thread's run of the same program on the
 * same CPU overwrites that stack under a preempted one. In the 7.2 guest
 * the preloaded sampler's records came with another thread's values (a
 * pointer as a size, a pc not the marker's, frees lost) and a pointer
 * reloaded from that stack faulted the kernel (an oops in the program,
 * the target left hung). The kernel gives no private stack to a program
 * with a tail call in it: each program begins with one into this empty
 * array, which does nothing but fall through.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} no_private_stack SEC(".maps");

static __always_inline void kernel_stack_only(void *ctx)
{
	bpf_tail_call(ctx, &no_private_stack, 0);
}

/* what an entry program returns to a uprobe session: 0 runs the return probe */
#define WANT_RETURN 0
#define NO_RETURN 1

static __always_inline void count(enum leaks_counter c)
{
	__sync_fetch_and_add(&counters[c], 1);
}

static __always_inline bool wanted(void)
{
	return armed && (!target_tgid || current_tgid() == target_tgid);
}

/*
 * The current thread's state; created when @create. NULL when it has none,
 * or when the kernel could not create it (then the call goes unrecorded and
 * its return counts as unpaired).
 */
static __always_inline struct thread_state *thread(bool create)
{
	return bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* --sample: a distance to the next sample, bytes * 2^8 (see leaks.h) */
static __always_inline __u64 sample_distance(void)
{
	__u64 r = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();

	return leaks_distance(sample_mean, leaks_expo_fixed(expo_tab, r));
}

/*
 * Is an allocation of @size bytes recorded? Always, unless --sample; then
 * when it reaches the thread's countdown: with probability
 * 1 - exp(-size / sample_mean), whatever came before (the distances are
 * exponential, without memory). A block of 0 bytes is never sampled.
 */
static __always_inline bool sample(struct thread_state *t, __u64 size)
{
	struct call_counts *cc;
	__u32 zero = 0;

	if (!sample_mean)
		return true;
	cc = bpf_map_lookup_elem(&calls, &zero);
	if (cc) {
		__sync_fetch_and_add(&cc->v[LEAKS_CALLS], 1);
		__sync_fetch_and_add(&cc->v[LEAKS_CALL_BYTES], size);
	}
	if (!size)
		return false;
	if (!t->counting) {
		t->countdown = sample_distance();
		t->counting = true;
	}
	if (!leaks_reaches(&t->countdown, size))
		return false;
	t->countdown = sample_distance();
	return true;
}

static __always_inline int call_enter(struct pt_regs *ctx, __u32 fn, __u64 size, __u64 arg)
{
	struct thread_state *t;
	__u64 sp = PT_REGS_SP(ctx);
	bool sampled;

	if (!wanted())
		return NO_RETURN;
	t = thread(true);
	if (!t)
		return NO_RETURN;
	if (t->in_call) {
		if (sp <= t->call.sp) { /* nested (or a tail call: the same sp) */
			if (!session) /* a session runs no return probe for it */
				t->call.depth++;
			return NO_RETURN;
		}
		count(LEAKS_C_STALE); /* not nested: the outer call returned unseen */
		t->in_call = false;
	}
	sampled = sample(t, size);
	if (!sampled && session && fn != LEAKS_REALLOC && fn != LEAKS_REALLOCARRAY)
		return NO_RETURN;
	t->call.fn = fn;
	t->call.size = size;
	t->call.arg = arg;
	t->call.sp = sp;
	t->call.depth = 0;
	t->call.sampled = sampled;
	t->in_call = true;
	return WANT_RETURN;
}

static __always_inline void record_free(const struct thread_state *t, __u64 addr)
{
	if (!addr)
		return;
	/*
	 * Sampled, most frees are of blocks not sampled: a lookup takes no
	 * lock, a delete takes its bucket's even for a key that is not there.
	 */
	if (sample_mean && !bpf_map_lookup_elem(&allocs, &addr))
		return;
	if (bpf_map_delete_elem(&allocs, &addr) == 0) {
		count(LEAKS_C_FREES);
		return;
	}
	if (sample_mean)
		return; /* most likely a block not sampled: not counted */
	count(t && t->exiting ? LEAKS_C_EXIT_FREES : LEAKS_C_UNTRACKED);
}

static __always_inline __u64 rotl64(__u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* MurmurHash3's 64-bit mixing over the frames, its finaliser at the end */
static __always_inline __u64 stack_hash(const struct leaks_stack *st)
{
	__u64 h = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < LEAKS_STACK_DEPTH; i++) {
		__u64 k = st->ips[i] * 0x87c37b91114253d5ULL;

		h ^= rotl64(k, 31) * 0x4cf5ad432745937fULL;
		h = rotl64(h, 27) * 5 + 0x52dce729;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h & 0x7fffffffffffffffULL; /* >= 0: negative ids say why there is none */
}

static __always_inline bool same_stack(const struct leaks_stack *a, const struct leaks_stack *b)
{
	for (int i = 0; i < LEAKS_STACK_DEPTH; i++)
		if (a->ips[i] != b->ips[i])
			return false;
	return true;
}

/*
 * The preloaded sampler: its own frames at the top of @st dropped (the
 * program runs at mls_sampled's entry, the image's load address is the pc
 * less the marker's address in the file).
 */
static __always_inline void drop_sampler_frames(struct pt_regs *ctx, struct leaks_stack *st)
{
	__u64 base = PT_REGS_IP(ctx) - sampler_sym;
	__u32 k = 0;

	for (int i = 0; i < LEAKS_PRELOAD_MAX_SKIP; i++) {
		if (st->ips[i] - base >= sampler_end)
			break;
		k++;
	}
	if (!k)
		return;
	for (__u32 i = 0; i < LEAKS_STACK_DEPTH; i++) {
		__u32 j = i + k;

		st->ips[i] = j < LEAKS_STACK_DEPTH ? st->ips[j & (LEAKS_STACK_DEPTH - 1)] : 0;
	}
}

/* The calling thread's user stack, stored once: its key, or enum leaks_no_stack. */
static __always_inline __s64 stack_id(struct pt_regs *ctx, struct thread_state *t)
{
	struct leaks_stack *old;
	__u64 key;
	long e;

	/* fills the rest of the buffer with zeros, the whole of it on failure */
	e = bpf_get_stack(ctx, &t->stack, sizeof(t->stack), BPF_F_USER_STACK);
	if (e <= 0)
		return LEAKS_STACK_UNWALKED;
	if (sampler_end)
		drop_sampler_frames(ctx, &t->stack);
	key = stack_hash(&t->stack);
	old = bpf_map_lookup_elem(&stacks, &key);
	if (!old) {
		e = bpf_map_update_elem(&stacks, &key, &t->stack, BPF_NOEXIST);
		if (!e)
			return (__s64)key;
		if (e != -17 /* EEXIST: another thread stored it meanwhile */)
			return LEAKS_STACK_FULL; /* E2BIG, or ENOMEM */
		old = bpf_map_lookup_elem(&stacks, &key);
		if (!old)
			return LEAKS_STACK_FULL; /* not reached: nothing is ever removed */
	}
	return same_stack(old, &t->stack) ? (__s64)key : LEAKS_STACK_COLLISION;
}

/* bpf_find_vma's callback: the end of the mapping the stack pointer is in */
static long vma_end(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	/* not relocated: no CO-RE in this object (see the top), the offset from user space */
	bpf_probe_read_kernel(data, sizeof(__u64), (const char *)vma + vm_end_off);
	return 0;
}

/*
 * --stacks dwarf: the registers and the top of the user stack, at the
 * return to the allocator's caller (the callee-saved registers hold the
 * caller's values again), in a ring buffer record: NULL when it is full
 * (*@id says why). The copy ends where the stack's mapping does, when that
 * is nearer than --stack-size bytes. It is read page by page:
 * bpf_probe_read_user takes no page fault, and a page of a large frame the
 * program never wrote to is not there (it reads as zeros, as it would: the
 * copy has zeros there too) rather than ending the copy.
 */
static __always_inline struct leaks_sample *dwarf_sample(struct pt_regs *ctx, __s64 *id)
{
#if defined(__TARGET_ARCH_x86)
	struct leaks_sample *s;
	__u64 sp = PT_REGS_SP(ctx), end = 0;
	__u32 n = dwarf_stack_size, first;

	s = bpf_ringbuf_reserve(&samples, sizeof(*s) + dwarf_stack_room, 0);
	if (!s) {
		*id = LEAKS_STACK_DROPPED;
		return NULL;
	}
	s->size = 0;
	s->to_end = 0;
	if (!bpf_find_vma(bpf_get_current_task_btf(), sp, vma_end, &end, 0) && end > sp &&
	    end - sp <= n) {
		n = (__u32)(end - sp) & ~7U;
		s->to_end = 1;
	}
	/* up to the next page boundary (the stack pointer's page is there) */
	first = LEAKS_PAGE - (__u32)(sp & (LEAKS_PAGE - 1));
	if (first > n)
		first = n;
	if (first && !bpf_probe_read_user(s->stack, first, (void *)sp)) {
		s->size = n;
#pragma unroll
		for (int i = 0; i < LEAKS_DWARF_STACK_MAX / LEAKS_PAGE; i++) {
			__u32 off = first + (__u32)i * LEAKS_PAGE;

			if ((__u32)i * LEAKS_PAGE >= dwarf_stack_size || off >= n)
				break;
			/* a page not there is left zero-filled */
			bpf_probe_read_user(s->stack + off, LEAKS_PAGE, (void *)(sp + off));
		}
	}
	if (!s->size) {
		bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
		*id = LEAKS_STACK_UNWALKED;
		return NULL;
	}
	s->tid = (__u32)bpf_get_current_pid_tgid();
	s->regs[LEAKS_REG_IP] = __PT_REGS_CAST(ctx)->ip;
	s->regs[LEAKS_REG_SP] = sp;
	s->regs[LEAKS_REG_BP] = __PT_REGS_CAST(ctx)->bp;
	s->regs[LEAKS_REG_BX] = __PT_REGS_CAST(ctx)->bx;
	s->regs[LEAKS_REG_R12] = __PT_REGS_CAST(ctx)->r12;
	s->regs[LEAKS_REG_R13] = __PT_REGS_CAST(ctx)->r13;
	s->regs[LEAKS_REG_R14] = __PT_REGS_CAST(ctx)->r14;
	s->regs[LEAKS_REG_R15] = __PT_REGS_CAST(ctx)->r15;
	s->seq = __sync_fetch_and_add(&dwarf_seq, 1);
	*id = (__s64)(s->seq & 0x7fffffffffffffffULL);
	return s;
#else
	*id = LEAKS_STACK_UNWALKED; /* user space refuses --stacks dwarf here */
	return NULL;
#endif
}

/* the flags a stack copy is submitted with: see samples_wake */
static __always_inline __u64 samples_wakeup(void)
{
	if (!samples_wake)
		return 0;
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= samples_wake)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void record_alloc(struct pt_regs *ctx, struct thread_state *t, __u64 addr,
					 __u64 size)
{
	struct leaks_alloc a = { .size = size, .stack_id = LEAKS_STACK_OFF };
	struct leaks_sample *s = NULL;
	long e;

	if (!addr) {
		count(LEAKS_C_FAILED);
		return;
	}
	if (with_stacks && dwarf)
		s = dwarf_sample(ctx, &a.stack_id);
	else if (with_stacks)
		a.stack_id = stack_id(ctx, t);
	e = bpf_map_update_elem(&allocs, &addr, &a, BPF_NOEXIST);
	if (e == -17 /* EEXIST: its free was not seen */) {
		count(LEAKS_C_MISSED_FREES);
		e = bpf_map_update_elem(&allocs, &addr, &a, BPF_EXIST);
	}
	/* handed over once the block is in the table: user space finds it there */
	if (s && e)
		bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
	else if (s)
		bpf_ringbuf_submit(s, samples_wakeup());
	count(e ? LEAKS_C_LOST : LEAKS_C_ALLOCS);
	/* what lacks a stack is counted among the allocations recorded only */
	if (!e && a.stack_id == LEAKS_STACK_FULL)
		count(LEAKS_C_STACK_FULL);
	else if (!e && a.stack_id == LEAKS_STACK_UNWALKED)
		count(LEAKS_C_STACK_UNWALKED);
	else if (!e && a.stack_id == LEAKS_STACK_COLLISION)
		count(LEAKS_C_STACK_COLLISION);
	else if (!e && a.stack_id == LEAKS_STACK_DROPPED)
		count(LEAKS_C_STACK_DROPPED);
}

static __always_inline int free_enter(struct pt_regs *ctx, __u64 ptr)
{
	struct thread_state *t;

	if (!wanted())
		return NO_RETURN;
	t = thread(false);
	if (t && t->in_call) {
		if (PT_REGS_SP(ctx) <= t->call.sp)
			return NO_RETURN; /* inside realloc: its return accounts for it */
		count(LEAKS_C_STALE);
		t->in_call = false;
	}
	record_free(t, ptr);
	return NO_RETURN;
}

/* glibc: a thread past its start routine (see the top of this file) */
static __always_inline int thread_exit_enter(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct thread_state *t;

	if (!wanted() || (__u32)id == id >> 32)
		return NO_RETURN; /* the main thread calls it from exit(): no tcache flush there */
	t = thread(true);
	if (t)
		t->exiting = true;
	return NO_RETURN;
}

/*
 * Every entry probe runs this one program; the probe's cookie says which
 * function it is on (enum leaks_fn), so that every entry point of the
 * allocator can be attached with one uprobe_multi link (one removal, one
 * wait for the kernel's grace periods, instead of one per probe).
 */
static __always_inline int entry(struct pt_regs *ctx, __u64 a1, __u64 a2, __u64 a3)
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
	return NO_RETURN;
}

SEC("uprobe")
int BPF_KPROBE(fn_enter, __u64 a1, __u64 a2, __u64 a3)
{
	kernel_stack_only(ctx);
	entry(ctx, a1, a2, a3);
	return 0;
}

static __always_inline int exit_probe(struct pt_regs *ctx, __u64 ret)
{
	struct thread_state *t;
	struct inflight *in;
	__u64 addr = ret;

	if (!wanted())
		return 0;
	t = thread(false);
	if (!t || !t->in_call) {
		count(LEAKS_C_UNPAIRED);
		return 0;
	}
	in = &t->call;
	if (in->depth) {
		in->depth--;
		return 0;
	}
	switch (in->fn) {
	case LEAKS_REALLOC:
	case LEAKS_REALLOCARRAY:
		/* success, or realloc(p, 0) which frees p and returns NULL */
		if (in->arg && (addr || !in->size))
			record_free(t, in->arg);
		if ((addr || in->size) && in->sampled)
			record_alloc(ctx, t, addr, in->size);
		break;
	case LEAKS_POSIX_MEMALIGN:
		addr = 0;
		if ((int)ret == 0)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)in->arg);
		if (in->sampled)
			record_alloc(ctx, t, addr, in->size);
		break;
	default:
		if (in->sampled)
			record_alloc(ctx, t, addr, in->size);
	}
	t->in_call = false;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, __u64 ret)
{
	kernel_stack_only(ctx);
	return exit_probe(ctx, ret);
}

/*
 * The same as a uprobe session (Linux 6.13+, one link): the entry says
 * whether the return probe runs at all (0: it does). Loaded only then.
 * The return is told apart by the registers: there the ip is the caller's
 * return address, at the entry the function's own (bpf_get_func_ip()).
 * Not bpf_session_is_return(): its prototype gained a context argument in
 * Linux 7, and libbpf 1.1 refuses a kfunc whose prototype differs.
 */
SEC("uprobe")
int BPF_KPROBE(fn_session, __u64 a1, __u64 a2, __u64 a3)
{
	kernel_stack_only(ctx);
	if (PT_REGS_IP(ctx) != bpf_get_func_ip(ctx))
		return exit_probe(ctx, PT_REGS_RC(ctx));
	return entry(ctx, a1, a2, a3);
}

/*
 * leaks --sample -- CMD with the sampler preloaded (trace/preload/sample.c):
 * the process took the decision, and only its sampled allocations and the
 * frees of them reach a probe, one on each of its two markers (told apart
 * by the pc; the cookie, enum leaks_marker, is checked against it). mls_sampled(ptr, size, calls,
 * bytes) also hands over the thread's calls and bytes since its last sample.
 */
SEC("uprobe")
int BPF_KPROBE(marker, __u64 a1, __u64 a2, __u64 a3, __u64 a4)
{
	__u32 lo = (__u32)(PT_REGS_IP(ctx) & (LEAKS_PAGE - 1)), which, zero = 0;
	struct call_counts *cc;
	struct thread_state *t;

	kernel_stack_only(ctx);
	if (!wanted())
		return 0;
	/*
	 * Which marker was hit: by the pc's offset in its page, the cookie only
	 * checked against it, so that a record is never built from the other
	 * marker's arguments (a free's rsi as a size) whatever the kernel hands
	 * the program. A pc at neither marker is dropped. Both are counted.
	 */
	if (lo == marker_lo[LEAKS_MARK_SAMPLED])
		which = LEAKS_MARK_SAMPLED;
	else if (lo == marker_lo[LEAKS_MARK_FREED])
		which = LEAKS_MARK_FREED;
	else
		which = LEAKS_NR_MARKS;
	if (which == LEAKS_NR_MARKS) {
		__sync_fetch_and_add(&marker_counts[LEAKS_MC_STRAY], 1);
		return 0;
	}
	if (which != bpf_get_attach_cookie(ctx))
		__sync_fetch_and_add(&marker_counts[LEAKS_MC_MISCOOKIED], 1);
	if (which == LEAKS_MARK_FREED) {
		record_free(NULL, a1);
		return 0;
	}
	cc = bpf_map_lookup_elem(&calls, &zero);
	if (cc) {
		__sync_fetch_and_add(&cc->v[LEAKS_CALLS], a3);
		__sync_fetch_and_add(&cc->v[LEAKS_CALL_BYTES], a4);
	}
	if (!a1 && !a2)
		return 0; /* the counts only */
	t = thread(true);
	if (!t) {
		count(LEAKS_C_LOST);
		return 0;
	}
	record_alloc(ctx, t, a1, a2);
	return 0;
}
