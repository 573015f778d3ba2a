/* SPDX-License-Identifier: MIT */
/*
 * Kernel UAPI that Debian 12's linux-libc-dev (6.1) lacks: PAGEMAP_SCAN
 * (6.7), the async write-protect userfaultfd features and cachestat (6.5).
 * The values are those of include/uapi/linux/fs.h, userfaultfd.h and
 * mman.h of Linux >= 6.7.
 * This is the only place they are defined; private to the library (a public
 * header that redefined them would break programs built with newer headers).
 */
#ifndef MEMLENS_UAPI_H
#define MEMLENS_UAPI_H

#include <stdint.h>
#include <linux/types.h>
#include <linux/ioctl.h>
#include <linux/userfaultfd.h>

#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)

#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
#define PAGE_IS_SOFT_DIRTY (1 << 7)

#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#endif

#ifndef PAGE_IS_GUARD
#define PAGE_IS_GUARD (1 << 8)
#endif

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* cachestat(2), Linux 6.5 (include/uapi/linux/mman.h; the same number on every architecture) */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct ml_cachestat_range {
	__u64 off;
	__u64 len;
};

struct ml_cachestat {
	__u64 nr_cache;
	__u64 nr_dirty;
	__u64 nr_writeback;
	__u64 nr_evicted;
	__u64 nr_recently_evicted;
};

_Static_assert(sizeof(struct pm_scan_arg) == 96, "struct pm_scan_arg must be 96 bytes");
_Static_assert(sizeof(struct page_region) == 24, "struct page_region must be 24 bytes");
_Static_assert(PAGEMAP_SCAN == 0xC0606610u, "PAGEMAP_SCAN ioctl number");

#endif
