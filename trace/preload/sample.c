// SPDX-License-Identifier: MIT
/*
 * libmemlens-sample.so: the sampler `memlens leaks --sample BYTES -- CMD`
 * preloads into CMD (LD_PRELOAD), so that an allocation not sampled costs
 * a few instructions in the process instead of a uprobe's trap.
 *
 * malloc, free and the rest of the allocator's API are interposed and
 * forwarded to the next definition (dlsym(RTLD_NEXT)). Each thread counts
 * down the bytes its allocations ask for, from a distance drawn from an
 * exponential distribution of mean MEMLENS_SAMPLE_BYTES, as the BPF
 * sampler does (trace/leaks.h: the same fixed point; the draw: expo.h):
 * the allocation that reaches it calls mls_sampled(), an empty function
 * memlens puts a uprobe on. Its address goes into a lock-free set of the
 * sampled blocks still live; a free finds it there (a counting filter in
 * front: the common miss reads one word) and calls mls_freed(), the
 * second uprobe. realloc is a free of the old block and an allocation of
 * the new one. Without MEMLENS_SAMPLE_BYTES everything is forwarded.
 *
 * Nothing here takes a lock or makes a system call after the constructor:
 * it works in signal handlers the allocator itself tolerates, and in a
 * forked child (which inherits the set and the countdowns).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "leaks.h"
#include "preload/expo.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* ---- the markers memlens probes: empty, never inlined nor elided ---- */

/*
 * mls_sampled(ptr, size, calls, bytes): a sampled allocation of @size
 * bytes at @ptr (NULL: it failed), with the allocation calls and bytes of
 * this thread since its last one; @ptr NULL and @size 0: the counts only
 * (the process ends). mls_freed(ptr): a sampled block freed, before the
 * allocator has it back.
 *
 * Written in assembly on x86-64: a compiler leaves an empty function as a
 * lone `ret`, which a uprobe cannot sit on cheaply; `push %rbp` is an
 * instruction the kernel emulates. Elsewhere, C functions the compiler may
 * neither inline nor analyse.
 */
void mls_sampled(void *ptr, size_t size, uint64_t calls, uint64_t bytes);
void mls_freed(void *ptr);

#if defined(__x86_64__)
#define MARKER_ASM(name)                                                                           \
	".text\n.globl " name "\n.type " name ", @function\n.p2align 4\n" name ":\n"               \
	".cfi_startproc\npush %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"               \
	"pop %rbp\n.cfi_def_cfa_offset 8\nret\n.cfi_endproc\n.size " name ", .-" name "\n"
__asm__(MARKER_ASM("mls_sampled") MARKER_ASM("mls_freed"));
#else
#if defined(__clang__)
#define MARKER __attribute__((noinline, optnone, used)) EXPORT
#else
#define MARKER __attribute__((noinline, noipa, used)) EXPORT
#endif
MARKER void mls_sampled(void *ptr, size_t size, uint64_t calls, uint64_t bytes)
{
	__asm__ volatile("" : : "r"(ptr), "r"(size), "r"(calls), "r"(bytes) : "memory");
}

MARKER void mls_freed(void *ptr)
{
	__asm__ volatile("" : : "r"(ptr) : "memory");
}
#endif

/* ---- the next definitions, and the arena dlsym allocates from meanwhile ---- */

static void *(*r_malloc)(size_t);
static void (*r_free)(void *);
static void *(*r_calloc)(size_t, size_t);
static void *(*r_realloc)(void *, size_t);
static void *(*r_reallocarray)(void *, size_t, size_t);
static int (*r_posix_memalign)(void **, size_t, size_t);
static void *(*r_aligned_alloc)(size_t, size_t);
static void *(*r_memalign)(size_t, size_t);
static void *(*r_valloc)(size_t);
static void *(*r_pvalloc)(size_t);

static int resolved; /* the pointers above are set, the rate read */
static int resolving; /* a thread has begun to set them: the others use the arena */

#define ARENA_BYTES (64 << 10)
static char arena[ARENA_BYTES] __attribute__((aligned(64)));
static size_t arena_used;

static bool in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + ARENA_BYTES;
}

/* 16 bytes of header (the size) before each block; never given back */
static void *arena_alloc(size_t n)
{
	size_t need = 16 + ((n + 15) & ~(size_t)15),
	       at = __atomic_fetch_add(&arena_used, need, __ATOMIC_RELAXED);

	if (n > ARENA_BYTES || at + need > ARENA_BYTES)
		return NULL;
	*(size_t *)(arena + at) = n;
	return arena + at + 16;
}

static size_t arena_size(const void *p)
{
	return *(const size_t *)((const char *)p - 16);
}

static void die(const char *what)
{
	static const char m[] = "libmemlens-sample.so: no next definition of ";

	if (write(2, m, sizeof(m) - 1) < 0 || write(2, what, strlen(what)) < 0 ||
	    write(2, "\n", 1) < 0)
		_exit(127);
	_exit(127);
}

#define NEXT(var, name) (*(void **)&(var) = dlsym(RTLD_NEXT, name))

static void setup(void);

/*
 * The next definitions found, the rate read: by one thread, once; its own
 * allocations meanwhile (dlsym's) and any other thread's come from the
 * arena until it is done.
 */
static void resolve(void)
{
	int zero = 0;

	if (!__atomic_compare_exchange_n(&resolving, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	NEXT(r_malloc, "malloc");
	NEXT(r_free, "free");
	NEXT(r_calloc, "calloc");
	NEXT(r_realloc, "realloc");
	NEXT(r_reallocarray, "reallocarray");
	NEXT(r_posix_memalign, "posix_memalign");
	NEXT(r_aligned_alloc, "aligned_alloc");
	NEXT(r_memalign, "memalign");
	NEXT(r_valloc, "valloc");
	NEXT(r_pvalloc, "pvalloc");
	if (!r_malloc || !r_free || !r_calloc || !r_realloc)
		die("malloc, free, calloc or realloc");
	setup();
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
}

/* true: the caller serves the call from the arena (the next definitions are being found) */
static inline bool bootstrap(void)
{
	if (likely(__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)))
		return false;
	resolve();
	return !__atomic_load_n(&resolved, __ATOMIC_ACQUIRE);
}

/* ---- the sampling state ---- */

static uint64_t mean; /* MEMLENS_SAMPLE_BYTES; 0: forward only */
static uint64_t seed;

struct thread_state {
	__u64 left; /* bytes * 2^8 until the next sample */
	uint64_t rng; /* xorshift64* state */
	uint64_t calls, bytes; /* since the thread's last sample */
	bool counting; /* left holds a distance */
	/*
	 * Inside the next allocator: a call it makes to an entry point of ours
	 * is forwarded unseen (glibc's reallocarray calls realloc through its
	 * PLT; only the outermost call is an allocation of the program's).
	 */
	unsigned int depth;
};

static TLS struct thread_state th;

/*
 * The set of sampled blocks still live: open addressing, linear probing
 * over at most MAX_PROBE slots, written with compare-and-swap; a freed
 * slot becomes a tombstone, which a later insertion reuses. In front of
 * it, a filter of counters (the sampled blocks live per address bucket):
 * a free of a block not sampled reads one of them and stops there.
 */
#define TOMB 1ULL
#define MAX_PROBE 64
#define FILTER_BITS 14 /* 64 KiB of counters: a free not sampled reads one */
static uint64_t *set;
static uint64_t set_mask;
static uint32_t *filter;

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * The filter's counter of block @p: by its address, not a hash of it, so
 * that the frees of blocks allocated together read the same cache lines
 * (16 bytes, malloc's alignment, per counter; a counter stands for every
 * 256 KiB apart).
 */
static inline uint64_t filter_at(uint64_t p)
{
	return (p >> 4) & ((1U << FILTER_BITS) - 1);
}

static bool set_insert(uint64_t p)
{
	uint64_t h = mix(p);

	for (uint64_t i = 0; i < MAX_PROBE; i++) {
		uint64_t *s = &set[(h + i) & set_mask], v = __atomic_load_n(s, __ATOMIC_RELAXED);

		while (v == 0 || v == TOMB)
			if (__atomic_compare_exchange_n(s, &v, p, false, __ATOMIC_RELEASE,
							__ATOMIC_RELAXED)) {
				__atomic_fetch_add(&filter[filter_at(p)], 1, __ATOMIC_RELEASE);
				return true;
			}
	}
	return false; /* a run of MAX_PROBE live blocks: left unsampled */
}

static inline bool set_remove(uint64_t p)
{
	uint64_t h;

	if (likely(!__atomic_load_n(&filter[filter_at(p)], __ATOMIC_ACQUIRE)))
		return false;
	h = mix(p);
	for (uint64_t i = 0; i < MAX_PROBE; i++) {
		uint64_t *s = &set[(h + i) & set_mask], v = __atomic_load_n(s, __ATOMIC_ACQUIRE);

		if (v == 0)
			return false;
		if (v == p && __atomic_compare_exchange_n(s, &v, TOMB, false, __ATOMIC_ACQ_REL,
							  __ATOMIC_RELAXED)) {
			__atomic_fetch_sub(&filter[filter_at(p)], 1, __ATOMIC_RELEASE);
			return true;
		}
	}
	return false;
}

static uint64_t next_random(void)
{
	uint64_t x = th.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	th.rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* the distance to the next sample, bytes * 2^8 (leaks.h; the draw: expo.h) */
static uint64_t distance(void)
{
	return leaks_distance(mean, mls_expo_fixed(next_random()));
}

static __attribute__((noinline)) void sample_slow(void *p, size_t n)
{
	uint64_t calls, bytes;

	if (!th.counting) {
		static uint64_t threads;

		th.rng =
			mix(seed ^ (uint64_t)(uintptr_t)&th ^
			    __atomic_add_fetch(&threads, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED)) |
			1;
		th.left = distance();
		th.counting = true;
		if (!leaks_reaches(&th.left, n))
			return;
	}
	th.left = distance();
	if (p && !set_insert((uint64_t)(uintptr_t)p))
		return;
	calls = th.calls;
	bytes = th.bytes;
	th.calls = th.bytes = 0;
	mls_sampled(p, n, calls, bytes);
}

/* an allocation of @n bytes at @p (NULL: it failed): sampled or not */
static inline __attribute__((always_inline)) void note_alloc(void *p, size_t n)
{
	uint64_t need;

	if (likely(!mean))
		return;
	th.calls++;
	th.bytes += n;
	if (!n)
		return; /* a block of 0 bytes is never sampled */
	need = n >> (64 - LEAKS_COUNTDOWN_SHIFT) ? ~0ULL : (uint64_t)n << LEAKS_COUNTDOWN_SHIFT;
	if (likely(need < th.left)) {
		th.left -= need;
		return;
	}
	sample_slow(p, n);
}

static inline __attribute__((always_inline)) void note_free(void *p)
{
	if (mean && p && set_remove((uint64_t)(uintptr_t)p))
		mls_freed(p);
}

/* ---- the allocator's API ---- */

EXPORT void *malloc(size_t n)
{
	void *p;

	if (unlikely(bootstrap()))
		return arena_alloc(n);
	if (th.depth)
		return r_malloc(n);
	th.depth++;
	p = r_malloc(n);
	th.depth--;
	note_alloc(p, n);
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (unlikely(bootstrap()))
		return; /* not reached: nothing is allocated but from the arena meanwhile */
	note_free(p);
	r_free(p);
}

EXPORT void *calloc(size_t k, size_t n)
{
	void *p;

	if (unlikely(bootstrap())) {
		size_t b;

		if (__builtin_mul_overflow(k, n, &b))
			return NULL;
		return arena_alloc(b); /* static, hence zeroed */
	}
	if (th.depth)
		return r_calloc(k, n);
	th.depth++;
	p = r_calloc(k, n);
	th.depth--;
	note_alloc(p, k * n);
	return p;
}

/* a block of the arena grown or shrunk: copied into the real allocator's */
static void *from_arena(void *old, size_t n)
{
	size_t had = arena_size(old);
	void *p = malloc(n);

	if (p)
		memcpy(p, old, had < n ? had : n);
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	void *p;

	if (unlikely(bootstrap())) {
		p = arena_alloc(n);
		if (p && old)
			memcpy(p, old, arena_size(old) < n ? arena_size(old) : n);
		return p;
	}
	if (old && in_arena(old))
		return from_arena(old, n);
	if (th.depth)
		return r_realloc(old, n);
	/* before the allocator has it back: another thread may be given it next */
	note_free(old);
	th.depth++;
	p = r_realloc(old, n);
	th.depth--;
	if (p || n)
		note_alloc(p, n);
	return p;
}

EXPORT void *reallocarray(void *old, size_t k, size_t n)
{
	size_t b;
	void *p;

	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(bootstrap()) || (old && in_arena(old)) || !r_reallocarray)
		return realloc(old, b);
	if (th.depth)
		return r_reallocarray(old, k, n);
	note_free(old);
	th.depth++;
	p = r_reallocarray(old, k, n);
	th.depth--;
	if (p || b)
		note_alloc(p, b);
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	int e;

	if (unlikely(bootstrap()) || !r_posix_memalign)
		return ENOMEM;
	if (th.depth)
		return r_posix_memalign(out, align, n);
	th.depth++;
	e = r_posix_memalign(out, align, n);
	th.depth--;
	note_alloc(e ? NULL : *out, n);
	return e;
}

/* aligned_alloc, memalign, valloc, pvalloc: the same shape */
#define ALIGNED(name, args, call, size)                                                            \
	EXPORT void *name args                                                                     \
	{                                                                                          \
		void *p;                                                                           \
                                                                                                   \
		if (unlikely(bootstrap()) || !r_##name) {                                          \
			errno = ENOMEM;                                                            \
			return NULL;                                                               \
		}                                                                                  \
		if (th.depth)                                                                      \
			return r_##name call;                                                      \
		th.depth++;                                                                        \
		p = r_##name call;                                                                 \
		th.depth--;                                                                        \
		note_alloc(p, size);                                                               \
		return p;                                                                          \
	}

ALIGNED(aligned_alloc, (size_t align, size_t n), (align, n), n)
ALIGNED(memalign, (size_t align, size_t n), (align, n), n)
ALIGNED(valloc, (size_t n), (n), n)
ALIGNED(pvalloc, (size_t n), (n), n)

/* ---- start and end ---- */

static uint64_t parse_bytes(const char *s)
{
	uint64_t v = 0;

	for (; s && *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	return s && !*s && v <= (1ULL << 40) ? v : 0;
}

/* how many slots the set has: room for twice the blocks memlens's table holds by default */
static uint64_t set_slots(uint64_t m)
{
	uint64_t want = 2 * leaks_default_blocks(m), n = 1 << 16;

	while (n < want && n < (1ULL << 22))
		n <<= 1;
	return n;
}

/*
 * MEMLENS_SAMPLE_BYTES, from /proc/self/environ: the first allocation can
 * come before the C library has set up its environ (the dynamic loader
 * allocates through us once it has relocated everything). 0: not there.
 */
static uint64_t env_rate(void)
{
	static const char key[] = "MEMLENS_SAMPLE_BYTES=";
	char buf[4096], digits[24];
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC), pos = 0, nd = -1;
	ssize_t n;

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];

			if (nd >= 0) { /* the value */
				if (!c || nd == (int)sizeof(digits) - 1) {
					digits[nd] = 0;
					close(fd);
					return parse_bytes(digits);
				}
				digits[nd++] = c;
			} else if (!c) {
				pos = 0;
			} else if (pos >= 0 && c == key[pos]) {
				if (++pos == (int)sizeof(key) - 1)
					nd = 0;
			} else {
				pos = -1;
			}
		}
	close(fd);
	if (nd > 0) {
		digits[nd] = 0;
		return parse_bytes(digits);
	}
	return 0;
}

/* the rate read, the set mapped, the table computed; sampling starts */
static void setup(void)
{
	uint64_t m = env_rate(), slots;
	struct timespec ts;
	void *p;

	if (!m)
		return;
	slots = set_slots(m);
	p = mmap(NULL, slots * 8 + (4ULL << FILTER_BITS), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return; /* forward only */
	set = p;
	set_mask = slots - 1;
	filter = (uint32_t *)((char *)p + slots * 8);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	seed = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid());
	__atomic_store_n(&mean, m, __ATOMIC_RELEASE);
}

/* nothing allocated yet (a program whose loader allocated nothing): set up now */
__attribute__((constructor)) static void mls_init(void)
{
	resolve();
}

/* the exiting thread's calls since its last sample */
__attribute__((destructor)) static void mls_fini(void)
{
	if (mean && (th.calls || th.bytes)) {
		mls_sampled(NULL, 0, th.calls, th.bytes);
		th.calls = th.bytes = 0;
	}
}
