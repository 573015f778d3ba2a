/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens slab: what the BPF side and the user side share. */
#ifndef MEMLENS_SLAB_H
#define MEMLENS_SLAB_H

#define SLAB_NAME_LEN 32

struct slab_key {
	char cache[SLAB_NAME_LEN];
};

struct slab_val {
	__u64 allocs;
	__u64 frees;
	__u32 size; /* bytes per object, slab metadata included */
	__s32 refcount; /* > 1: other caches were merged into this one */
};

/* counters[] of the BPF side */
enum slab_counter {
	SLAB_C_KFREE_UNATTRIBUTED = 0, /* kfree() of a slab object whose cache is not known */
	SLAB_C_KMALLOC_LARGE, /* kmalloc() served by the page allocator (no cache) */
	SLAB_NR_COUNTERS,
};

#endif
