/* SPDX-License-Identifier: MIT */
/*
 * What the running kernel has of PAGEMAP_SCAN and of userfaultfd, probed
 * on memlens's own memory (private). They sit here, below scan/ and
 * inject/ which use the interfaces, so that the feature probes
 * (features.c) need nothing above common/.
 */
#ifndef MEMLENS_KERNEL_H
#define MEMLENS_KERNEL_H

#include <stdint.h>

#include "uapi.h"

/* the userfaultfd features the write profiler needs */
#define UFFD_WP_FEATURES (UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED)

/* True when the running kernel knows PAGEMAP_SCAN (probes on our own pagemap). */
int mli_pagescan_supported(void);
/* The PAGE_IS_* categories this kernel knows, as a mask (all bits set but
 * those it would refuse: PAGE_IS_GUARD before Linux 6.14). */
uint64_t mli_pagescan_categories(void);

/* The userfaultfd features this kernel offers (probes with a uffd of our own), or 0. */
uint64_t mli_uffd_kernel_features(void);

#endif
