/* SPDX-License-Identifier: MIT */
/*
 * Private to the snapshot collector: the counts of one VMA from its
 * /proc/PID/pagemap entries, for kernels without PAGEMAP_SCAN (before 6.7)
 * or when the caller asks for this method.
 */
#ifndef MEMLENS_SNAPSHOT_PAGEMAP_READ_H
#define MEMLENS_SNAPSHOT_PAGEMAP_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/maps.h"
#include "memlens/snapshot.h"

struct ml_pmread {
	uint64_t *pm; /* a batch of pagemap entries */
	uint64_t *fl; /* kpageflags of one 2 MiB candidate */
	int flags_fd; /* /proc/kpageflags, -1 without (not root) */
	bool have_swap; /* swap devices exist: a swap entry without its type is swap */
	uint64_t zero_pfn; /* the zero page's frame, once seen (0: not yet) */
	uint64_t hzero_pfn; /* the huge zero page's first frame this cycle (0: none) */
	bool pfn_hidden; /* the kernel gave no frame numbers (not CAP_SYS_ADMIN) */
	uint64_t reads; /* preads of pagemap and kpageflags */
};

/* Buffers, and /proc/kpageflags when it can be opened. 0 or -ENOMEM. */
int mli_pmread_open(struct ml_pmread *p, bool have_swap, struct ml_err *err);
void mli_pmread_close(struct ml_pmread *p);
/* Forget what one cycle learnt about frames that may change (the huge zero page). */
void mli_pmread_new_cycle(struct ml_pmread *p);

/* A run [start, end) of resident pages; non-zero stops the read and is returned. */
typedef int (*ml_pmread_run_fn)(uint64_t start, uint64_t end, void *arg);

/*
 * Add the resident, swapped, file, zero-page and huge counts of @v to @c,
 * read from @pagemap_fd (the target's /proc/PID/pagemap); @fn (may be
 * NULL) gets the runs of resident pages. -ESRCH when the target exited.
 */
int mli_pmread_vma(struct ml_pmread *p, int pagemap_fd, const struct ml_vma *v,
		   struct ml_snap_counts *c, ml_pmread_run_fn fn, void *arg, struct ml_err *err);

#endif
