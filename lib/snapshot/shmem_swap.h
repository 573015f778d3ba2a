/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/snapshot/: the swap of shmem-backed VMAs (tmpfs files,
 * shared anonymous mappings, memfd, SysV shm), which the page tables
 * cannot show.
 */
#ifndef MEMLENS_SHMEM_SWAP_H
#define MEMLENS_SHMEM_SWAP_H

#include <stdbool.h>
#include <sys/types.h>

#include "../scan/pagescan.h"
#include "memlens/err.h"
#include "memlens/snapshot.h"

#define SHMEM_SWAP_DEVS 32

struct shmem_swap {
	pid_t pid;
	/* the file systems of anonymous devices seen: tmpfs or not */
	struct {
		unsigned int major, minor;
		bool shmem;
	} dev[SHMEM_SWAP_DEVS];
	unsigned int ndev;
	uint64_t calls; /* cachestat calls, for cost accounting */
};

void mli_shmem_swap_init(struct shmem_swap *ss, pid_t pid);

/*
 * Add the swap of every shmem-backed VMA of @snap to its swapped_pages
 * (and shmem_swapped_pages), as smaps counts it; where it cannot be
 * known, set its swap_unknown. @scan is the target's pagemap scanner
 * (for the holes of private writable mappings). What cannot be read is
 * marked unknown, so this never fails.
 */
void mli_shmem_swap(struct shmem_swap *ss, struct pagescan *scan, struct ml_snapshot *snap);

#endif
