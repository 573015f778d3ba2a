/* SPDX-License-Identifier: MIT */
/*
 * /proc/slabinfo: the kernel's own count of each slab cache's objects in use
 * (active_objs) and of its objects per slab, read at two instants to compare
 * with what `memlens slab` counted in between.
 */
#ifndef MEMLENS_TRACE_SLABINFO_H
#define MEMLENS_TRACE_SLABINFO_H

#include <stddef.h>

struct slabinfo_row {
	char name[64];
	long long active_objs, num_objs;
	long objperslab;
};

struct slabinfo {
	struct slabinfo_row *v;
	size_t n;
};

/* 0, or -errno (-EACCES: not root) */
int mlt_slabinfo_read(struct slabinfo *s);
const struct slabinfo_row *mlt_slabinfo_find(const struct slabinfo *s, const char *name);
void mlt_slabinfo_free(struct slabinfo *s);

#endif
