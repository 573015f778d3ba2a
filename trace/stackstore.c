// SPDX-License-Identifier: MIT
/* Distinct call stacks, and which allocation has which (stackstore.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stackstore.h"

void mlt_stackstore_init(struct stackstore *s, size_t max_stacks)
{
	memset(s, 0, sizeof(*s));
	s->max_stacks = max_stacks;
}

void mlt_stackstore_free(struct stackstore *s)
{
	free(s->ips);
	free(s->stacks);
	free(s->index);
	free(s->binds);
	memset(s, 0, sizeof(*s));
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t stack_hash(const uint64_t *ips, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = mix(h ^ ips[i]) + i;
	return h;
}

static bool same(const struct stackstore *s, uint32_t id, const uint64_t *ips, uint32_t n,
		 uint64_t h)
{
	const struct ss_stack *st = &s->stacks[id];

	return st->hash == h && st->n == n && !memcmp(s->ips + st->off, ips, n * sizeof(*ips));
}

static void index_put(uint32_t *index, size_t cap, uint64_t h, uint32_t id)
{
	size_t i = h & (cap - 1);

	while (index[i])
		i = (i + 1) & (cap - 1);
	index[i] = id + 1;
}

static int index_grow(struct stackstore *s)
{
	size_t cap = s->index_cap ? 2 * s->index_cap : 1024;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (size_t id = 0; id < s->nstacks; id++)
		index_put(index, cap, s->stacks[id].hash, (uint32_t)id);
	free(s->index);
	s->index = index;
	s->index_cap = cap;
	return 0;
}

static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int mlt_stackstore_intern(struct stackstore *s, const uint64_t *ips, uint32_t n)
{
	uint64_t h = stack_hash(ips, n);
	size_t i;

	for (i = s->index_cap ? h & (s->index_cap - 1) : 0; s->index_cap && s->index[i];
	     i = (i + 1) & (s->index_cap - 1))
		if (same(s, s->index[i] - 1, ips, n, h))
			return (int)(s->index[i] - 1);
	if (s->max_stacks && s->nstacks >= s->max_stacks)
		return -ENOSPC;
	if (s->nstacks >= (size_t)INT32_MAX)
		return -ENOSPC;
	if ((2 * (s->nstacks + 1) > s->index_cap && index_grow(s)) ||
	    reserve((void **)&s->stacks, &s->stacks_cap, s->nstacks + 1, sizeof(*s->stacks)) ||
	    reserve((void **)&s->ips, &s->ips_cap, s->nips + n + 1, sizeof(*s->ips)))
		return -ENOMEM;
	memcpy(s->ips + s->nips, ips, n * sizeof(*ips));
	s->stacks[s->nstacks] = (struct ss_stack){ .off = s->nips, .n = n, .hash = h };
	s->nips += n;
	index_put(s->index, s->index_cap, h, (uint32_t)s->nstacks);
	return (int)s->nstacks++;
}

uint32_t mlt_stackstore_get(const struct stackstore *s, uint32_t id, const uint64_t **ips)
{
	if (id >= s->nstacks) {
		*ips = NULL;
		return 0;
	}
	*ips = s->ips + s->stacks[id].off;
	return s->stacks[id].n;
}

static struct ss_bind *bind_slot(struct ss_bind *b, size_t cap, uint64_t key)
{
	size_t i = mix(key) & (cap - 1);

	while (b[i].key && b[i].key != key)
		i = (i + 1) & (cap - 1);
	return &b[i];
}

static int binds_rebuild(struct stackstore *s, size_t cap, bool filter, const uint64_t *live,
			 size_t nlive)
{
	struct ss_bind *b = calloc(cap, sizeof(*b));
	size_t n = 0;

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < s->binds_cap; i++) {
		uint64_t seq = s->binds[i].key - 1;
		size_t lo = 0, hi = nlive;

		if (!s->binds[i].key)
			continue;
		if (filter) { /* kept if among the live ones */
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (live[mid] < seq)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == nlive || live[lo] != seq)
				continue;
		}
		*bind_slot(b, cap, s->binds[i].key) = s->binds[i];
		n++;
	}
	free(s->binds);
	s->binds = b;
	s->binds_cap = cap;
	s->nbinds = n;
	return 0;
}

int mlt_stackstore_bind(struct stackstore *s, uint64_t seq, uint32_t id)
{
	struct ss_bind *slot;

	if (4 * (s->nbinds + 1) > 3 * s->binds_cap &&
	    binds_rebuild(s, s->binds_cap ? 2 * s->binds_cap : 4096, false, NULL, 0))
		return -ENOMEM;
	slot = bind_slot(s->binds, s->binds_cap, seq + 1);
	if (!slot->key) {
		slot->key = seq + 1;
		s->nbinds++;
	}
	slot->id = id;
	return 0;
}

int mlt_stackstore_lookup(const struct stackstore *s, uint64_t seq)
{
	const struct ss_bind *slot;

	if (!s->binds_cap)
		return -1;
	slot = bind_slot(s->binds, s->binds_cap, seq + 1);
	return slot->key ? (int)slot->id : -1;
}

int mlt_stackstore_keep(struct stackstore *s, const uint64_t *live, size_t n)
{
	size_t cap = 4096;

	while (4 * n > 3 * cap / 2) /* room to grow again before the next rebuild */
		cap *= 2;
	return binds_rebuild(s, cap, true, live, n);
}
