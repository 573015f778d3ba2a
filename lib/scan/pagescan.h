/* SPDX-License-Identifier: MIT */
/*
 * PAGEMAP_SCAN (Linux >= 6.7) on another process's /proc/PID/pagemap:
 * the write-protect baseline, the atomic dirty scan-and-reprotect, the
 * verification scan, and plain category queries (no write-protect).
 */
#ifndef MEMLENS_PAGESCAN_H
#define MEMLENS_PAGESCAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/kernel.h"
#include "../common/uapi.h"
#include "memlens/err.h"

/* Bounded output vector reused across scans. */
struct pagescan {
	int fd; /* /proc/PID/pagemap */
	struct page_region *vec;
	size_t vec_len;
	uint64_t ioctls; /* ioctls issued, for cost accounting */
};

/* Called for each returned region; non-zero stops the scan and is returned. */
typedef int (*pagescan_fn)(const struct page_region *r, void *arg);

int mli_pagescan_open(struct pagescan *ps, pid_t pid, size_t vec_len, struct ml_err *err);
void mli_pagescan_close(struct pagescan *ps);

/*
 * Write-protect every present or swapped, non-zero-page, anonymous page of
 * [start, end) without returning anything; with @shared, the range is
 * shared memory (shmem, memfd, SysV, shared anonymous): its pages too.
 */
int mli_pagescan_baseline(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
			  struct ml_err *err);

/* mli_pagescan_dirty()'s @flags */
#define PAGESCAN_CHECK_REGISTERED 1 /* a range not registered fails with -EPERM */
#define PAGESCAN_SHARED 2 /* shared memory: its (file) pages count */
#define PAGESCAN_NO_WP 4 /* report only: the written pages are not write-protected again */

/*
 * Report pages of [start, end) written since the last write-protect and
 * write-protect them again, atomically. With PAGESCAN_CHECK_REGISTERED in
 * @flags, a VMA in the range that is not registered for async
 * write-protect fails the call with -EPERM; PAGESCAN_SHARED as above. Pages in the vector are
 * reported through @fn; paging by walk_end keeps the vector bounded.
 * Returns the number of written pages or a negative errno.
 */
long mli_pagescan_dirty(struct pagescan *ps, uint64_t start, uint64_t end, int flags,
			pagescan_fn fn, void *arg, struct ml_err *err);

/*
 * Write-protect the present or swapped anonymous pages of [start, end) like
 * mli_pagescan_baseline(), and report them: for a range that was not tracked
 * before, these are the pages written since it appeared.
 */
long mli_pagescan_protect_present(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
				  pagescan_fn fn, void *arg, struct ml_err *err);

/*
 * The pages of [start, end) a checkpoint dumps: present or swapped, not
 * the zero page, and of a private VMA not the file's own pages. Read only
 * (no write-protect). The number of pages or -errno.
 */
long mli_pagescan_resident(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
			   struct ml_err *err);

/* 1 when some page of [start, end) is write-protect capable, 0 if none. */
int mli_pagescan_verify_wp(struct pagescan *ps, uint64_t start, uint64_t end, struct ml_err *err);

/*
 * Plain query without write-protect: regions of [start, end) whose
 * categories match (inverted/mask/anyof as the kernel defines them),
 * reported with @return_mask. Returns the number of pages or -errno.
 */
long mli_pagescan_query(struct pagescan *ps, uint64_t start, uint64_t end, uint64_t inverted,
			uint64_t mask, uint64_t anyof, uint64_t return_mask, pagescan_fn fn,
			void *arg, struct ml_err *err);

/* One piece of a parallel query: [start, end) by worker @worker, with its masks. */
struct pagescan_seg {
	uint64_t start, end;
	uint64_t inverted, anyof, return_mask;
	unsigned int worker;
};

/*
 * mli_pagescan_query() of @segs (each with its inverted/anyof/return masks) by
 * @nworkers workers, worker
 * i scanning with ps[i] (open scanners of the same process; worker 0 runs
 * on the calling thread). @segs are in address order and each worker's
 * segments follow those of the worker before it, so @fn sees the regions
 * in address order; it is called from the calling thread after the walk.
 * Each scanner counts its own ioctls. 0 or -errno.
 */
int mli_pagescan_query_parallel(struct pagescan *ps, unsigned int nworkers,
				const struct pagescan_seg *segs, size_t nsegs, pagescan_fn fn,
				void *arg, struct ml_err *err);

/* mli_pagescan_supported(), mli_pagescan_categories(): ../common/kernel.h */

#endif
