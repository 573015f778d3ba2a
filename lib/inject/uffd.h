/* SPDX-License-Identifier: MIT */
/*
 * userfaultfd write-protect, driven through the profiler's own copy of a
 * uffd that was created inside the target: the ioctls act on the target's mm.
 */
#ifndef MEMLENS_UFFD_H
#define MEMLENS_UFFD_H

#include <stdint.h>

#include "../common/kernel.h"
#include "memlens/err.h"

/* UFFD_WP_FEATURES, mli_uffd_kernel_features(): ../common/kernel.h */

/*
 * UFFDIO_API with async write-protect, and UFFD_FEATURE_WP_HUGETLBFS_SHMEM
 * (shared memory) when the kernel has it. -ENOTSUP names the missing feature.
 */
int mli_uffd_api(int uffd, uint64_t *features_out, struct ml_err *err);
/* UFFDIO_REGISTER_MODE_WP over [start, end). -EBUSY: owned by another uffd. */
int mli_uffd_register_wp(int uffd, uint64_t start, uint64_t end, struct ml_err *err);
int mli_uffd_unregister(int uffd, uint64_t start, uint64_t end, struct ml_err *err);
/*
 * Clear the write-protect of [start, end) (UFFDIO_WRITEPROTECT without
 * MODE_WP): writes to it no longer fault until it is protected again.
 */
int mli_uffd_unprotect(int uffd, uint64_t start, uint64_t end, struct ml_err *err);

#endif
