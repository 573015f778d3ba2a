/* SPDX-License-Identifier: MIT */
/*
 * The leak tracer (eBPF, libmemlens-trace.a): uprobes on the malloc family
 * of one process's allocator (its libc, or the jemalloc/tcmalloc/mimalloc
 * that replaces it), and the blocks still outstanding, per size and per
 * call stack. It needs root and a kernel with BTF; link with
 * -lmemlens-trace -lmemlens -lbpf -lelf -lz (and -ldw for DWARF stacks).
 *
 *	ML_OPTS(ml_leaks_tracer_opts, o, .pid = pid);
 *	ml_leaks_tracer_open(&t, &o, &err);
 *	... let it count ...
 *	ml_leaks_tracer_read(t, &s);   (as often as wanted)
 *	ml_leaks_outstanding_free(&s);
 *	ml_leaks_tracer_close(t);
 */
#ifndef MEMLENS_TRACE_LEAKS_H
#define MEMLENS_TRACE_LEAKS_H

/* exported by whatever shared object links it (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"

enum ml_leaks_stacks {
	ML_LEAKS_STACKS_FP, /* walked with frame pointers, by the kernel */
	ML_LEAKS_STACKS_DWARF, /* a copy of the stack, unwound with DWARF call frame information */
};

struct ml_leaks_tracer_opts {
	size_t sz; /* memlens/opts.h: ML_OPTS() */
	pid_t pid; /* the process traced */
	bool wait_loaded; /* just started: wait until its allocator is mapped */
	bool no_stacks; /* no call stacks recorded */
	bool free_at_entry; /* free's probe at its first instruction */
	bool perf_uprobes; /* one perf-event uprobe per probe, not uprobe_multi */
	enum ml_leaks_stacks stacks;
	long max_blocks, max_stacks; /* the tables' sizes; 0: the defaults */
	uint64_t sample; /* the mean bytes between sampled allocations; 0: every one */
	uint64_t stack_size; /* ML_LEAKS_STACKS_DWARF: the bytes of stack copied; 0: the default */
	/* what is probed and the mode chosen, a sentence each (NULL: not said) */
	void (*say)(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void *say_arg;
	/*
	 * With sample: the sampler the target was started with (LD_PRELOAD of
	 * memlens's libmemlens-sample.so, MEMLENS_SAMPLE_BYTES=sample in its
	 * environment): the two markers it calls are probed, not the
	 * allocator. NULL: uprobes on the allocator.
	 */
	const char *preload;
};

struct ml_leaks_tracer;

/*
 * The blocks recorded (count, bytes) and what they stand for (est_count,
 * est_bytes: with sampling, each block of s bytes weighs
 * 1 / (1 - exp(-s / sample)); else the same numbers); var: the variance
 * of est_bytes.
 */
struct ml_leaks_size {
	uint64_t size, count, bytes;
	double est_count, est_bytes;
};

struct ml_leaks_stack {
	int64_t id; /* ml_leaks_tracer_stack(); < 0: recorded without its stack */
	uint64_t count, bytes;
	double est_count, est_bytes, var;
};

/* why outstanding blocks have no stack (ml_leaks_outstanding.no_stack_*[]) */
enum ml_leaks_no_stack {
	ML_LEAKS_NO_STACK_TABLE_FULL, /* the table of stacks was full */
	ML_LEAKS_NO_STACK_NOT_WALKED, /* the kernel could not walk the user stack */
	ML_LEAKS_NO_STACK_COLLISION, /* another stack had the same 63-bit hash */
	ML_LEAKS_NO_STACK_DROPPED, /* the buffer of stack copies was full */
	ML_LEAKS_NR_NO_STACK,
};

/* The blocks outstanding when read. */
struct ml_leaks_outstanding {
	struct ml_leaks_size *sizes; /* by est_bytes, largest first */
	size_t nsizes;
	struct ml_leaks_stack *stacks; /* likewise */
	size_t nstacks;
	uint64_t count, bytes;
	double est_count, est_bytes, var; /* as in ml_leaks_stack */
	uint64_t no_stack_count[ML_LEAKS_NR_NO_STACK], no_stack_bytes[ML_LEAKS_NR_NO_STACK];
	uint64_t stacks_kept; /* distinct stacks in the table */
};

/* the deepest stack ml_leaks_tracer_stack() returns */
#define ML_LEAKS_STACK_MAX 64

/* The file whose malloc the process calls (ml_leaks_tracer_allocator()). */
struct ml_leaks_allocator {
	size_t sz; /* the caller sets it: sizeof(struct ml_leaks_allocator) (memlens/opts.h) */
	const char *path; /* usable from here: /proc/PID/root/... */
	bool is_libc; /* false: another allocator replaces libc's malloc */
	bool is_static; /* the executable itself: statically linked */
	const char *prefixed; /* an allocator with prefixed names only, probed beside it; "" */
};

/* ML_LEAKS_STACKS_DWARF: the stack copies unwound (ml_leaks_tracer_unwind_stats()). */
struct ml_leaks_unwind_stats {
	size_t sz; /* the caller sets it: sizeof(struct ml_leaks_unwind_stats) (memlens/opts.h) */
	uint64_t stacks, ns; /* unwound, and the time it took */
	uint64_t frames, max_frames; /* found in all, and in the deepest */
	uint64_t complete; /* to the outermost frame */
	uint64_t cut; /* at ML_LEAKS_STACK_MAX frames */
	uint64_t out_of_copy; /* above the bytes copied */
	uint64_t no_cfi; /* at code without call frame information */
	uint64_t full; /* more distinct stacks than opts.max_stacks: not kept */
};

/* The tracer's counters (ml_leaks_tracer_counters()), each since the open. */
enum ml_leaks_counter {
	ML_LEAKS_ALLOCS = 0, /* successful allocations recorded */
	ML_LEAKS_FREES, /* frees of blocks seen allocated */
	ML_LEAKS_UNTRACKED_FREES, /* frees of blocks allocated before tracing began */
	ML_LEAKS_LOST, /* allocations not recorded: the table of blocks was full */
	ML_LEAKS_FAILED, /* allocation calls that returned NULL */
	ML_LEAKS_EXIT_FREES, /* unknown blocks freed by glibc at a thread's exit (its tcache) */
	ML_LEAKS_MISSED_FREES, /* an address allocated again before its free was seen */
	ML_LEAKS_STALE, /* calls whose return never came, dropped */
	ML_LEAKS_UNPAIRED, /* returns without their entry (calls begun before the attach) */
	ML_LEAKS_STACK_FULL, /* allocations recorded without their stack, by reason: */
	ML_LEAKS_STACK_NOT_WALKED, /* as in enum ml_leaks_no_stack */
	ML_LEAKS_STACK_COLLISION,
	ML_LEAKS_STACK_DROPPED,
	ML_LEAKS_NR_COUNTERS,
};

/*
 * Find the allocator of process opts.pid, load the programs and attach
 * their uprobes (uprobe_multi links first, else one perf-event uprobe
 * each); with DWARF stacks, start unwinding their copies. Counting starts
 * once all are attached. 0 and *@out, or -errno with a sentence that says
 * what to do in @err.
 */
int ml_leaks_tracer_open(struct ml_leaks_tracer **out, const struct ml_leaks_tracer_opts *opts,
			 struct ml_err *err);
/*
 * The blocks outstanding now, per size and per call stack (with DWARF
 * stacks, after unwinding every copy handed over so far). 0; -EIO when the
 * table could not be read (@out empty); -ENOMEM (@out partly filled).
 * Free @out with ml_leaks_outstanding_free() either way.
 */
int ml_leaks_tracer_read(struct ml_leaks_tracer *t, struct ml_leaks_outstanding *out);
void ml_leaks_outstanding_free(struct ml_leaks_outstanding *s);
/* The counters now, ML_LEAKS_NR_COUNTERS of them, into @c. */
void ml_leaks_tracer_counters(const struct ml_leaks_tracer *t, uint64_t *c);
/* Sampling: every outermost allocation call, sampled or not, and the bytes they asked for. */
void ml_leaks_tracer_calls(const struct ml_leaks_tracer *t, uint64_t *calls, uint64_t *bytes);
/*
 * The preloaded sampler's probe hits the program told apart by their pc
 * because the kernel gave them the other marker's cookie (*@miscookied),
 * and those whose pc was neither marker's, dropped (*@stray). 0 and 0
 * without the sampler.
 */
void ml_leaks_tracer_marker_hits(const struct ml_leaks_tracer *t, uint64_t *miscookied,
				 uint64_t *stray);
/* Events no program saw (another BPF program ran on that CPU). */
uint64_t ml_leaks_tracer_recursion_misses(const struct ml_leaks_tracer *t);
int ml_leaks_tracer_allocator(const struct ml_leaks_tracer *t, struct ml_leaks_allocator *out);
int ml_leaks_tracer_unwind_stats(const struct ml_leaks_tracer *t,
				 struct ml_leaks_unwind_stats *out);
/* How the uprobes are attached: "uprobe_session", "uprobe_multi" or "uprobe". */
const char *ml_leaks_tracer_mode(const struct ml_leaks_tracer *t);
/* The return addresses of stack @id, innermost first, at most @max: how many (0 when none). */
int ml_leaks_tracer_stack(struct ml_leaks_tracer *t, int64_t id, uint64_t *ips, int max);
/*
 * With DWARF stacks (ML_LEAKS_STACKS_DWARF) the programs hand a copy of
 * each new block's stack over through a ring buffer, unwound as it is read:
 * a program's wait loop polls it, as libbpf's ring_buffer__epoll_fd() and
 * ring_buffer__poll(), so that the copies do not pile up between reads.
 *
 * The programs wake the reader once a quarter of the ring buffer waits,
 * not for every copy (a wakeup costs the target about what the copy
 * does), so a loop must also read at intervals of its own: memlens polls
 * with a 100 ms timeout.
 *
 * An fd to poll (epoll: readable once a quarter of the ring buffer waits),
 * owned by the tracer and closed by ml_leaks_tracer_close(); -ENOENT when
 * the tracer has no ring
 * buffer (stacks walked with frame pointers, or none: nothing to poll),
 * -EINVAL for NULL.
 */
int ml_leaks_tracer_fd(const struct ml_leaks_tracer *t);
/*
 * Unwind the stack copies that wait, first waiting up to @timeout_ms for
 * the wakeup above (0: those there are, at once; < 0: until it comes);
 * after a timeout, every copy there is read all the same. How many were
 * read, or -errno (-EINTR: a signal came). 0 at once when the tracer has
 * no ring buffer (ml_leaks_tracer_fd() < 0); -EINVAL for NULL.
 */
int ml_leaks_tracer_poll(struct ml_leaks_tracer *t, int timeout_ms);
/* Detach every uprobe: nothing changes the tables any more (NULL: nothing). */
void ml_leaks_tracer_detach(struct ml_leaks_tracer *t);
/* Detach and free (NULL: nothing). */
void ml_leaks_tracer_close(struct ml_leaks_tracer *t);

#pragma GCC visibility pop

#endif
