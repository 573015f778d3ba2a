/* SPDX-License-Identifier: MIT */
/*
 * Call stacks unwound in user space (leaks --stacks dwarf): each distinct
 * stack stored once under a small id, and the stack of each allocation
 * (its sequence number, the BPF side's stack_id) bound to one of them.
 * Bindings of blocks since freed are dropped with mlt_stackstore_keep().
 */
#ifndef MEMLENS_STACKSTORE_H
#define MEMLENS_STACKSTORE_H

#include <stddef.h>
#include <stdint.h>

struct ss_stack {
	size_t off; /* in ips[] */
	uint32_t n;
	uint64_t hash;
};

struct ss_bind {
	uint64_t key; /* seq + 1; 0: an empty slot */
	uint32_t id;
};

struct stackstore {
	uint64_t *ips; /* every stack's return addresses, one after the other */
	size_t nips, ips_cap;
	struct ss_stack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *index; /* open addressing by hash: stack id + 1, 0 empty */
	size_t index_cap; /* a power of two, or 0 */
	struct ss_bind *binds; /* open addressing by seq */
	size_t nbinds, binds_cap; /* a power of two, or 0 */
	size_t max_stacks; /* 0: no limit */
};

/* An empty store keeping at most @max_stacks distinct stacks (0: any number). */
void mlt_stackstore_init(struct stackstore *s, size_t max_stacks);
void mlt_stackstore_free(struct stackstore *s);
/* The id of stack @ips[0..n), stored if new: >= 0; -ENOSPC when full, -ENOMEM. */
int mlt_stackstore_intern(struct stackstore *s, const uint64_t *ips, uint32_t n);
/* Allocation @seq has stack @id (replaces an earlier binding of @seq). 0, or -ENOMEM. */
int mlt_stackstore_bind(struct stackstore *s, uint64_t seq, uint32_t id);
/* The stack bound to @seq, or -1. */
int mlt_stackstore_lookup(const struct stackstore *s, uint64_t seq);
/* The return addresses of stack @id, innermost first: their number, 0 for no such id. */
uint32_t mlt_stackstore_get(const struct stackstore *s, uint32_t id, const uint64_t **ips);
/* Drop every binding whose seq is not among the @n sorted @live ones. 0, or -ENOMEM. */
int mlt_stackstore_keep(struct stackstore *s, const uint64_t *live, size_t n);

#endif
