/* SPDX-License-Identifier: MIT */
/*
 * The leak tracer below `memlens leaks`: find the allocator's entry
 * points, load the programs, attach their uprobes, detach them; unwind the
 * stack copies as they come; read the tables. Private to the tracer
 * library and memlens (the public API is memlens/trace_leaks.h, trace/leaks.c).
 */
#ifndef MEMLENS_TRACE_LEAKLOAD_H
#define MEMLENS_TRACE_LEAKLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "stackstore.h"
#include "unwind.h"

#define LEAKS_NR_PROBE_NAMES 38 /* the entry points probed by name (leakload.c) */
#define LEAKS_MAX_PROBES (LEAKS_NR_PROBE_NAMES + 1) /* and glibc's thread exit */
/* the allocator malloc is bound to, and one with prefixed names beside it */
#define LEAKS_MAX_OBJS 2
#define LEAKS_MAX_LINKS (2 * LEAKS_MAX_PROBES * LEAKS_MAX_OBJS)
/* the deepest stack kept: frame pointers walked by the kernel, DWARF by us */
#define LEAKS_DWARF_DEPTH 64
#define LEAKS_STACK_MAX                                                                            \
	(LEAKS_DWARF_DEPTH > LEAKS_STACK_DEPTH ? LEAKS_DWARF_DEPTH : LEAKS_STACK_DEPTH)

struct alloc_lib;
struct bpf_link;
struct leaks_alloc;
struct leaks_bpf;
struct ring_buffer;

struct leaks_load_opts {
	bool no_stacks; /* no stacks recorded */
	bool free_at_entry; /* free's probe at its first instruction */
	bool perf_uprobes; /* one perf-event uprobe per probe, not uprobe_multi */
	bool dwarf; /* stack copies for DWARF unwinding, not frame pointers */
	long max_blocks, max_stacks; /* the tables' sizes; 0: the BPF side's */
	uint64_t sample; /* the mean bytes between sampled allocations; 0: every one */
	uint64_t stack_size; /* dwarf: the bytes of stack copied; 0: the default */
	/* the allocator's path is the sampler preloaded into the target: its markers probed */
	bool preload;
	/* what is probed and the mode chosen, a sentence each (NULL: not said) */
	void (*say)(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void *say_arg;
};

struct leaks_loader {
	const struct leaks_load_opts *o;
	const struct alloc_lib *alloc;
	struct leaks_bpf *skel;
	struct bpf_link *links[LEAKS_MAX_LINKS]; /* perf-event uprobes: entries and returns */
	int nlinks;
	int link_fds[2 * LEAKS_MAX_OBJS]; /* uprobe_multi links: returns, entries */
	int nlink_fds;
	bool multi; /* uprobe_multi links, not one perf event per probe */
	bool session; /* sampling: one uprobe session link (multi too) */
	bool preload; /* the preloaded sampler's two markers probed, not the allocator */
	/* preload: mls_sampled's address in the sampler's file, and its image's end */
	uint64_t sampler_sym, sampler_end;
	uint32_t marker_lo[2]; /* preload: the markers' addresses, low 12 bits */
	bool dwarf; /* the stacks are copies, unwound here (mlt_leaks_dwarf_start()) */
	uint32_t vm_end_off; /* dwarf: offsetof(struct vm_area_struct, vm_end), from the BTF */
	/* dwarf */
	struct ring_buffer *rb; /* the stack copies */
	struct unwinder *unw;
	struct stackstore store; /* the stacks unwound, and whose they are */
	size_t prune_at; /* bindings at which those of freed blocks are dropped */
	struct {
		uint64_t stacks, ns, frames, max_frames, ends[UNWIND_NR_ENDS];
		uint64_t full; /* more distinct stacks than the store holds */
	} unw_stats;
};

/*
 * Probe @alloc (and its prefixed neighbour) in process @pid: uprobe_multi
 * links first (kernel 6.6+), a session when sampling; where the kernel
 * refuses them, one perf-event uprobe per probe. Counting starts once all
 * are attached. 0, or -errno with what to do in @err. @o and @alloc are
 * read during the call only.
 */
int mlt_leaks_load(struct leaks_loader *l, const struct leaks_load_opts *o,
		   const struct alloc_lib *alloc, pid_t pid, struct ml_err *err);
/* Detach every uprobe (the tables stay readable). */
void mlt_leaks_detach(struct leaks_loader *l);
/* Detach, and free the programs, their tables and the stacks unwound. */
void mlt_leaks_unload(struct leaks_loader *l);

/*
 * dwarf: unwind the stack copies of process @pid as they come (polled
 * through l->rb), each distinct stack stored once (at most @max_stacks)
 * and the block bound to it. 0, or -errno with the reason in @err.
 */
int mlt_leaks_dwarf_start(struct leaks_loader *l, pid_t pid, size_t max_stacks, struct ml_err *err);
/* The return addresses of stack @id, innermost first, at most LEAKS_STACK_MAX: how many. */
int mlt_leaks_stack_ips(struct leaks_loader *l, int64_t id, uint64_t *ips);
/* The table of outstanding blocks (free it), *@n of them; NULL when it cannot be read. */
struct leaks_alloc *mlt_leaks_read_allocs(const struct leaks_loader *l, size_t *n);
/* The distinct stacks the kernel's table holds (frame pointers). */
uint64_t mlt_leaks_count_stacks(const struct leaks_loader *l);

#endif
