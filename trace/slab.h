/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens slab: what the BPF side and the user side share. */
#ifndef MEMLENS_SLAB_H
#define MEMLENS_SLAB_H

#define SLAB_NAME_LEN 32
#define SLAB_MAX_FREED 262144 /* freed objects remembered (LRU) */
#define SLAB_COPIES 4 /* programs per tracepoint: one runs for every event */

struct slab_key {
	char cache[SLAB_NAME_LEN];
};

struct slab_val {
	__u64 allocs;
	__u64 frees;
	__u32 size; /* bytes per object, slab metadata included */
	__s32 refcount; /* > 1: other caches were merged into this one */
	__u64 unseen_allocs; /* objects freed again with no allocation event since their free */
};

/* counters[] of the BPF side */
enum slab_counter {
	SLAB_C_KFREE_UNATTRIBUTED = 0, /* kfree() of a slab object whose cache is not known */
	SLAB_C_KMALLOC_LARGE, /* kmalloc() served by the page allocator (no cache) */
	SLAB_C_UNSEEN_ALLOCS, /* the sum of every cache's unseen_allocs */
	SLAB_C_RESCUED, /* events counted by a later copy: the earlier ones were busy */
	SLAB_C_RESCUED_LAST, /* of those, by the last copy: all the others were busy */
	SLAB_NR_COUNTERS,
};

#endif
