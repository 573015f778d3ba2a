/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/snapshot*.c: the page structures of present pages, from
 * /proc/kpageflags and /proc/kpagecount, read in batches of contiguous PFNs.
 */
#ifndef MEMLENS_SNAPSHOT_PAGES_H
#define MEMLENS_SNAPSHOT_PAGES_H

#include <stdint.h>

#include "memlens/err.h"
#include "memlens/snapshot.h"

struct snap_pages {
	int flags_fd, count_fd;
	uint64_t *pm, *fl, *cnt; /* batch buffers */
	uint64_t reads; /* preads of kpageflags + kpagecount */
};

int mli_snap_pages_open(struct snap_pages *p, struct ml_err *err);
void mli_snap_pages_close(struct snap_pages *p);

/*
 * Add the page-flag counts of the present pages of [start, end) to @c.
 * @pagemap_fd is the target's /proc/PID/pagemap (for the PFNs).
 * -EPERM when the kernel hides PFNs from us (not CAP_SYS_ADMIN).
 */
int mli_snap_pages_count(struct snap_pages *p, int pagemap_fd, uint64_t start, uint64_t end,
			 struct ml_snap_counts *c, struct ml_err *err);

/* pread() @len bytes at @off in full (EINTR retried, a short read at the
 * end kept): the number of 64-bit words read, or -errno. */
int mli_snap_pread_words(int fd, void *buf, size_t len, off_t off);

#endif
