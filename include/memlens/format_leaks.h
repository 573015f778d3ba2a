/* SPDX-License-Identifier: MIT */
/*
 * The `leaks` JSON Lines schema: with -i one "leaks_interval" line per
 * interval, then one "leaks" line for the whole run: the tracer's
 * counters, the blocks outstanding by size and by call stack (each stack
 * symbolized, frame by frame), the allocations recorded without a stack
 * and why, how the stacks were walked. Written from the record below,
 * which the tracer fills; read back into the same record (what report
 * uses).
 */
#ifndef MEMLENS_FORMAT_LEAKS_H
#define MEMLENS_FORMAT_LEAKS_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/* why an allocation has no stack: the keys of the "..._by_reason" objects, in this order */
enum ml_leaks_reason {
	ML_LEAKS_REASON_TABLE_FULL, /* "table_full": the table of stacks was full */
	ML_LEAKS_REASON_NOT_WALKED, /* "not_walked": the kernel could not walk the user stack */
	ML_LEAKS_REASON_HASH_COLLISION, /* "hash_collision": another stack had the same hash */
	ML_LEAKS_REASON_DROPPED, /* "dropped": the buffer of stack copies was full */
	ML_LEAKS_NR_REASONS,
};

/* One frame of a stack, inlined ones included, innermost first. */
struct ml_leaks_frame_rec {
	uint64_t address; /* the return address ("0x..") */
	const char *function; /* NULL: not known (not written) */
	bool has_offset; /* "offset": the address in its function */
	uint64_t offset;
	bool inlined;
	const char *object; /* the mapping's path; NULL or "": not written */
	const char *file; /* the source file; NULL: not written */
	uint64_t line; /* 0: not known (not written) */
};

/* The blocks outstanding from one call stack. */
struct ml_leaks_stack_rec {
	uint64_t count, bytes; /* estimated when the record's sample_bytes is not 0 */
	uint64_t sampled, sampled_bytes, bytes_stderr; /* sampled: what was, the error */
	const char **stack; /* the stack symbolized, a line a frame, innermost first */
	size_t nstack;
	struct ml_leaks_frame_rec *frames;
	size_t nframes;
};

/* The blocks outstanding of one size (as malloc() was asked). */
struct ml_leaks_size_rec {
	uint64_t size, count, bytes; /* estimated when sampled */
	uint64_t sampled; /* sampled: the blocks that were */
};

/* --stacks dwarf: how the stacks were unwound */
struct ml_leaks_unwind_rec {
	uint64_t stack_size; /* the bytes of stack copied */
	uint64_t stacks;
	double us_per_stack, frames_mean;
	uint64_t frames_max;
	int64_t max_frames; /* the depth asked for */
	/* how they ended: at the outermost frame, cut at max_frames, above the copy, no CFI */
	uint64_t complete, cut, out_of_copy, no_cfi;
	uint64_t not_unwound_fully;
	uint64_t table_full;
};

/*
 * Strings: NULL is written as "" (but see allocator_prefixed); read, they
 * point into the JSON read (valid while it is), NULL when absent.
 */
struct ml_leaks_rec {
	bool interval; /* "leaks_interval" (one -i interval); else "leaks" (the run) */
	/* an interval's: its end since tracing began, the last one, its own calls */
	uint64_t elapsed_ms;
	bool last;
	uint64_t interval_mallocs, interval_frees;
	int64_t pid;
	const char *allocator;
	const char *allocator_prefixed; /* NULL or "": not written */
	const char *mode; /* "uprobe", "uprobe_multi", "uprobe_session" */
	const char *stacks_mode; /* "none", "fp", "dwarf" */
	uint64_t mallocs, frees, untracked_frees, exit_frees, missed_frees, failed;
	uint64_t lost; /* not 0: "table_full" is true */
	uint64_t stale_calls, unpaired_returns, recursion_misses;
	/*
	 * --sample: the mean bytes between samples; 0: every call traced.
	 * Not 0: "estimated" is true, the five fields below are written, and
	 * each size and stack has its "estimated" and "sampled" fields.
	 */
	uint64_t sample_bytes;
	uint64_t allocation_calls, allocation_call_bytes;
	uint64_t sampled_outstanding, sampled_outstanding_bytes, outstanding_bytes_stderr;
	uint64_t outstanding, outstanding_bytes;
	bool table_unread; /* the table was not read whole */
	uint64_t stacks_kept;
	int64_t max_stacks;
	uint64_t stacks_lost; /* allocations without a stack, all of them ... */
	uint64_t stacks_lost_by_reason[ML_LEAKS_NR_REASONS];
	uint64_t outstanding_no_stack, outstanding_no_stack_bytes; /* ... and those outstanding */
	struct ml_leaks_no_stack_rec {
		uint64_t count, bytes;
	} outstanding_no_stack_by_reason[ML_LEAKS_NR_REASONS];
	struct ml_leaks_size_rec *sizes;
	size_t nsizes;
	struct ml_leaks_stack_rec *stacks;
	size_t nstacks;
	/* "stack_depth" (not with --no-stacks): the distinct stacks, their mean and max depth */
	bool has_depth;
	uint64_t depth_stacks;
	double depth_mean;
	int64_t depth_max;
	bool has_unwind; /* "unwind" (after "stack_depth") */
	struct ml_leaks_unwind_rec unwind;
	/*
	 * --sample: who decided which allocations were recorded, "preload" (the
	 * sampler memlens preloaded into the command) or "uprobe" (uprobes on
	 * the allocator); written after "mode" when not NULL
	 */
	const char *sampler;
};

/* One "leaks" or "leaks_interval" line (@r->interval), as memlens leaks --json writes it. */
void ml_fmt_leaks(struct ml_jw *w, const struct ml_leaks_rec *r);

/*
 * Read a "leaks" or "leaks_interval" object (its "type" says which).
 * Required: an interval's "elapsed_ms" (a number); the run's
 * "outstanding_bytes" (a count), "by_size" (an array of objects with the
 * counts "size", "count" and "bytes") and "by_stack" (an array of objects
 * with the counts "count" and "bytes" and "stack", an array of strings).
 * An interval's "by_size" and "by_stack" may be absent. Other numbers
 * absent or not numbers read as 0. -EINVAL naming the field, -ENOMEM.
 * Free with ml_fmt_leaks_free() (also on error).
 */
int ml_fmt_leaks_read(const struct ml_json *o, struct ml_leaks_rec *out, struct ml_err *err);
void ml_fmt_leaks_free(struct ml_leaks_rec *r);

#pragma GCC visibility pop

#endif
