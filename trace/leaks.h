/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens leaks: what the BPF side and the user side share. */
#ifndef MEMLENS_LEAKS_H
#define MEMLENS_LEAKS_H

#define LEAKS_MAX_ALLOCS 1000000 /* outstanding allocations tracked */
/*
 * Sampled (--sample MEAN), the table holds the sampled blocks only, each
 * standing for about MEAN bytes: by default as many entries as hold the
 * sample of LEAKS_SAMPLED_COVER bytes outstanding in small blocks (32 GiB;
 * 65536 entries at 512K), from LEAKS_SAMPLED_MIN_ALLOCS to
 * LEAKS_MAX_ALLOCS. A table is created for its size whether or not it
 * fills (~10 ms for a million entries, 0.5 ms for 65536).
 */
#define LEAKS_SAMPLED_COVER (1ULL << 35)
#define LEAKS_SAMPLED_MIN_ALLOCS 16384
#define LEAKS_MAX_STACKS 262144 /* distinct call stacks kept (--max-stacks) */
#define LEAKS_STACK_DEPTH 32

/*
 * leaks --stacks dwarf: the return probe copies the user registers DWARF
 * call frame information needs and the top of the user stack into a ring
 * buffer; user space unwinds them (trace/unwind.c). The copy is at most
 * what a per-CPU map value may hold.
 */
#define LEAKS_DWARF_STACK_DEFAULT 16384 /* --stack-size: twice perf's, for large frames */
#define LEAKS_DWARF_STACK_MIN 512
#define LEAKS_DWARF_STACK_MAX 32768
#define LEAKS_PAGE 4096 /* the copy is read page by page */

/*
 * The bytes a record reserves for a copy of @size bytes: whole pages, and
 * one more, for the last page read whole from wherever the first ended.
 */
static __always_inline __u32 leaks_stack_room(__u32 size)
{
	return ((size + LEAKS_PAGE - 1) & ~(__u32)(LEAKS_PAGE - 1)) + LEAKS_PAGE;
}

/* the registers copied (x86-64): the return address, the stack, the callee-saved */
enum leaks_reg {
	LEAKS_REG_IP = 0,
	LEAKS_REG_SP,
	LEAKS_REG_BP,
	LEAKS_REG_BX,
	LEAKS_REG_R12,
	LEAKS_REG_R13,
	LEAKS_REG_R14,
	LEAKS_REG_R15,
	LEAKS_NR_REGS,
};

/* one record of the ring buffer: the stack of one allocation kept */
struct leaks_sample {
	__u64 seq; /* the allocation's stack_id in the allocs map */
	__u32 tid;
	__u32 size; /* bytes of stack copied, from regs[LEAKS_REG_SP] */
	__u32 to_end; /* they end where the stack's mapping does */
	__u32 pad;
	__u64 regs[LEAKS_NR_REGS];
	__u8 stack[]; /* --stack-size bytes reserved, size of them valid */
};

/*
 * Sampling by bytes (leaks --sample BYTES): each thread counts down a
 * distance drawn from an exponential distribution of mean BYTES; an
 * allocation that reaches it is recorded and a new distance is drawn. The
 * draw needs a logarithm, which BPF has no floating point for: -ln(W) of a
 * uniform W = r / 2^64 is k ln 2 - ln(m), where k is the number of leading
 * zero bits of r and m in [1/2, 1) its normalised mantissa; -ln(m) is read
 * from a table of LEAKS_EXPO_N + 1 values (user space fills it) and
 * interpolated linearly between them (a relative error below 1e-7).
 */
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define LEAKS_EXPO_N 1024 /* intervals of the -ln(m) table, a power of two */
#define LEAKS_EXPO_SHIFT 32 /* the table and the draw: fixed point, 2^32 = 1.0 */
#define LEAKS_LN2_FIXED 2977044472ULL /* ln(2) * 2^32 */
#define LEAKS_COUNTDOWN_SHIFT 8 /* the countdown: bytes * 2^8 */

/*
 * An exponential variate of mean 1, times 2^32, from the 64 random bits @r
 * and the table @tab: tab[j] = -ln(1/2 + j / (2 LEAKS_EXPO_N)) * 2^32, for
 * j = 0 .. LEAKS_EXPO_N. Shared by the BPF program and the unit test.
 */
static __always_inline __u64 leaks_expo_fixed(const volatile __u64 *tab, __u64 r)
{
	__u64 k = 0, lo, hi, frac;
	__u32 j;

	if (!r)
		return 64 * LEAKS_LN2_FIXED;
	if (!(r >> 32)) {
		k += 32;
		r <<= 32;
	}
	if (!(r >> 48)) {
		k += 16;
		r <<= 16;
	}
	if (!(r >> 56)) {
		k += 8;
		r <<= 8;
	}
	if (!(r >> 60)) {
		k += 4;
		r <<= 4;
	}
	if (!(r >> 62)) {
		k += 2;
		r <<= 2;
	}
	if (!(r >> 63)) {
		k += 1;
		r <<= 1;
	}
	/* r / 2^64 = m in [1/2, 1): bits 62..53 pick the interval, 52..21 place it in it */
	j = (__u32)(r >> 53) & (LEAKS_EXPO_N - 1);
	frac = (r >> 21) & 0xffffffffULL;
	lo = tab[j];
	hi = tab[j + 1];
	return k * LEAKS_LN2_FIXED + lo - (((lo - hi) * frac) >> 32);
}

/* the default size of the table of outstanding blocks (--max-blocks), sampled every @mean bytes */
static __always_inline __u64 leaks_default_blocks(__u64 mean)
{
	__u64 n = mean ? LEAKS_SAMPLED_COVER / mean : LEAKS_MAX_ALLOCS;

	return n < LEAKS_SAMPLED_MIN_ALLOCS ? LEAKS_SAMPLED_MIN_ALLOCS
	       : n > LEAKS_MAX_ALLOCS	    ? LEAKS_MAX_ALLOCS
					    : n;
}

/* the distance to the next sample, bytes * 2^8, for a mean of @mean bytes (at most 2^40) */
static __always_inline __u64 leaks_distance(__u64 mean, __u64 e)
{
	return (mean * (e >> 16)) >> (16 - LEAKS_COUNTDOWN_SHIFT);
}

/*
 * Does an allocation of @size bytes reach the countdown *@left? If not, it
 * is taken off the countdown; if so, the caller draws a new one.
 */
static __always_inline bool leaks_reaches(__u64 *left, __u64 size)
{
	__u64 need = size >> (64 - LEAKS_COUNTDOWN_SHIFT) ? ~0ULL : size << LEAKS_COUNTDOWN_SHIFT;

	if (need < *left) {
		*left -= need;
		return false;
	}
	return true;
}

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

/*
 * leaks --sample BYTES -- CMD with the sampler preloaded into CMD
 * (trace/preload/sample.c): the cookies of the uprobes on its two markers.
 * A stack taken at mls_sampled's entry begins with frames of the sampler
 * itself (the marker, the function that calls it, the interposed malloc;
 * with frame pointers, how many of them depends on the kernel: since Linux
 * 6.13 the return address at the top of the stack at a function's entry is
 * among them): every leading frame within the sampler's image is dropped,
 * and the stack begins at the allocator's caller, as the return probe's
 * stacks do.
 */
enum leaks_marker {
	LEAKS_MARK_SAMPLED = 0, /* mls_sampled(ptr, size, calls, bytes) */
	LEAKS_MARK_FREED, /* mls_freed(ptr) */
	LEAKS_NR_MARKS,
};
/*
 * The marker program's own counters (marker_counts[]): probe hits whose
 * pc was the other marker's than their cookie said (told apart by the pc),
 * and hits whose pc was neither marker's (dropped).
 */
enum leaks_marker_counter {
	LEAKS_MC_MISCOOKIED = 0,
	LEAKS_MC_STRAY,
	LEAKS_NR_MARKER_COUNTERS,
};
#define LEAKS_PRELOAD_MAX_SKIP 6 /* the sampler's frames dropped at most */

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
	LEAKS_STACK_DROPPED = -5, /* dwarf: the ring buffer of stack copies was full */
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
	LEAKS_C_STACK_DROPPED, /* likewise: LEAKS_STACK_DROPPED */
	LEAKS_NR_COUNTERS,
};

/* --sample: the calls[] per-CPU counters, every allocation call sampled or not */
enum leaks_call_counter {
	LEAKS_CALLS = 0, /* outermost allocation calls */
	LEAKS_CALL_BYTES, /* the bytes they asked for */
	LEAKS_NR_CALL_COUNTERS,
};

#endif
