// SPDX-License-Identifier: MIT
/*
 * What the running kernel has of the two interfaces the write profiler is
 * built on, each probed once on memlens's own memory: PAGEMAP_SCAN (and the
 * page categories it knows) and userfaultfd's features. kernel.h.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel.h"

/* One PAGEMAP_SCAN of a present page of our own, returning @return_mask. */
static int probe_scan(uint64_t return_mask)
{
	struct pm_scan_arg a = { .size = sizeof(a) };
	static char probe[4096] __attribute__((aligned(4096)));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return 0;
	probe[0] = 1;
	a.start = (uintptr_t)probe;
	a.end = a.start + sizeof(probe);
	a.category_anyof_mask = PAGE_IS_PRESENT;
	a.return_mask = return_mask;
	struct page_region v[1];
	a.vec = (uintptr_t)v;
	a.vec_len = 1;
	r = ioctl(fd, PAGEMAP_SCAN, &a);
	close(fd);
	return r >= 0;
}

int mli_pagescan_supported(void)
{
	return probe_scan(PAGE_IS_PRESENT);
}

uint64_t mli_pagescan_categories(void)
{
	static uint64_t known; /* 0: not probed yet; the walker threads share it */
	uint64_t cats = __atomic_load_n(&known, __ATOMIC_RELAXED);

	/* PAGE_IS_GUARD came in 6.14: an older kernel refuses a mask with it
	 * (EINVAL), and has no guard regions to report anyway */
	if (!cats) {
		cats = ~0ULL;
		if (!probe_scan(PAGE_IS_PRESENT | PAGE_IS_GUARD))
			cats &= ~(uint64_t)PAGE_IS_GUARD;
		__atomic_store_n(&known, cats, __ATOMIC_RELAXED);
	}
	return cats;
}

uint64_t mli_uffd_kernel_features(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = 0 };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (ioctl(fd, UFFDIO_API, &api) < 0)
		api.features = 0;
	close(fd);
	return api.features;
}
