/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens leaks: what the BPF side and the user side share. */
#ifndef MEMLENS_LEAKS_H
#define MEMLENS_LEAKS_H

#define LEAKS_MAX_ALLOCS 1000000 /* outstanding allocations tracked */
#define LEAKS_MAX_STACKS 262144 /* distinct call stacks kept (--max-stacks) */
#define LEAKS_STACK_DEPTH 32

enum leaks_fn {
	LEAKS_MALLOC = 0,
	LEAKS_CALLOC,
	LEAKS_REALLOC,
	LEAKS_REALLOCARRAY,
	LEAKS_ALIGNED_ALLOC,
	LEAKS_POSIX_MEMALIGN,
	LEAKS_MEMALIGN,
	LEAKS_VALLOC,
	LEAKS_PVALLOC,
	LEAKS_NR_FN, /* the allocating functions end here */
	LEAKS_FREE = LEAKS_NR_FN,
	LEAKS_THREAD_EXIT, /* glibc's __call_tls_dtors: the thread is exiting */
	LEAKS_NR_PROBES,
};

/* one outstanding allocation, keyed by its address */
struct leaks_alloc {
	__u64 size;
	__s64 stack_id; /* its key in the stacks map; < 0: enum leaks_no_stack */
};

/* a user call stack, innermost return address first, zeros after the last */
struct leaks_stack {
	__u64 ips[LEAKS_STACK_DEPTH];
};

/* why an allocation has no stack (its stack_id) */
enum leaks_no_stack {
	LEAKS_STACK_OFF = -1, /* --no-stacks */
	LEAKS_STACK_FULL = -2, /* the stacks map was full, or the kernel had no memory */
	LEAKS_STACK_UNWALKED = -3, /* the kernel could not walk the user stack */
	LEAKS_STACK_COLLISION = -4, /* another stack had its 63-bit hash */
};

/* the counters[] array of the BPF side, index = enum leaks_counter */
enum leaks_counter {
	LEAKS_C_ALLOCS = 0, /* successful allocations recorded */
	LEAKS_C_FREES, /* frees of pointers we saw allocated */
	LEAKS_C_UNTRACKED, /* frees of pointers allocated before tracing */
	LEAKS_C_LOST, /* allocations not recorded: table full */
	LEAKS_C_FAILED, /* allocation calls that returned NULL */
	LEAKS_C_EXIT_FREES, /* unknown pointers freed by libc at thread exit (its tcache) */
	LEAKS_C_MISSED_FREES, /* an address allocated again before its free was seen */
	LEAKS_C_STALE, /* per-thread call records whose return never came, dropped */
	LEAKS_C_UNPAIRED, /* returns without their entry (calls begun before the attach) */
	LEAKS_C_STACK_FULL, /* allocations recorded without their stack: LEAKS_STACK_FULL */
	LEAKS_C_STACK_UNWALKED, /* likewise: LEAKS_STACK_UNWALKED */
	LEAKS_C_STACK_COLLISION, /* likewise: LEAKS_STACK_COLLISION */
	LEAKS_NR_COUNTERS,
};

#endif
