// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "memlens/proc.h"
#include "pagescan.h"

#define PAGE_SIZE_4K 4096ULL

int mli_pagescan_open(struct pagescan *ps, pid_t pid, size_t vec_len, struct ml_err *err)
{
	char path[64];

	memset(ps, 0, sizeof(*ps));
	ps->fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	ps->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ps->fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
		return ml_err_set(err, e, "cannot open %s: %s%s", path, strerror(e),
				  e == EACCES || e == EPERM ? ml_proc_access_hint() : "");
	}
	ps->vec_len = vec_len ? vec_len : 1024;
	ps->vec = calloc(ps->vec_len, sizeof(*ps->vec));
	if (!ps->vec) {
		close(ps->fd);
		ps->fd = -1;
		return ml_err_set(err, ENOMEM, "out of memory for the scan vector");
	}
	return 0;
}

void mli_pagescan_close(struct pagescan *ps)
{
	if (ps->fd >= 0)
		close(ps->fd);
	free(ps->vec);
	ps->fd = -1;
	ps->vec = NULL;
}

static int scan_error(struct ml_err *err, int e, const char *what)
{
	if (e == ENOTTY || e == EINVAL)
		return ml_err_set(
			err, ENOTSUP,
			"%s: this kernel has no PAGEMAP_SCAN ioctl (Linux 6.7 or later is needed)",
			what);
	if (e == ESRCH || e == ENOENT)
		return ml_err_set(err, ESRCH, "%s: the target process exited", what);
	return ml_err_set(err, e, "%s: PAGEMAP_SCAN failed: %s", what, strerror(e));
}

/*
 * Run one scan over [start, end), paging while the vector fills up.
 *
 * walk_end cannot be trusted: the kernel walks in steps of its own 512-entry
 * bounce buffer and sets walk_end only when a step stops early (the buffer
 * full), never when a later step reaches the end. A call that returns more
 * than 512 regions but does not fill our vector so comes back with walk_end
 * at the last of those stops, before regions it already returned (Linux
 * 6.18: 2000 single-page regions, walk_end after the 1536th). Going on from
 * there reported the rest again: every VMA behind that point counted twice
 * (a 4-page VMA with 8 resident pages, twice the huge pages of a file). So
 * a call that left room in the vector walked the whole range, and the next
 * call starts no earlier than the end of the last region returned.
 */
static long run_scan(struct pagescan *ps, struct pm_scan_arg *a, uint64_t start, uint64_t end,
		     pagescan_fn fn, void *arg, const char *what, struct ml_err *err)
{
	long pages = 0;

	while (start < end) {
		uint64_t next;
		long n;

		a->size = sizeof(*a);
		a->start = start;
		a->end = end;
		a->walk_end = 0;
		if (a->return_mask) {
			a->vec = (uintptr_t)ps->vec;
			a->vec_len = ps->vec_len;
		} else {
			a->vec = 0;
			a->vec_len = 0;
		}
		ps->ioctls++;
		n = ioctl(ps->fd, PAGEMAP_SCAN, a);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return scan_error(err, errno, what);
		}
		for (long i = 0; i < n; i++) {
			pages += (long)((ps->vec[i].end - ps->vec[i].start) / PAGE_SIZE_4K);
			if (fn) {
				int r = fn(&ps->vec[i], arg);

				if (r)
					return r;
			}
		}
		if (a->max_pages || !a->vec_len) {
			next = a->walk_end;
		} else {
			if ((size_t)n < a->vec_len)
				break; /* room left: the kernel walked all of it */
			next = ps->vec[n - 1].end;
			if (a->walk_end > next)
				next = a->walk_end;
		}
		if (next <= start || next >= end)
			break;
		start = next;
	}
	return pages;
}

/* Pages of a file a private VMA maps were never written by it; shared memory's are all "file". */
static uint64_t file_cat(bool shared)
{
	return shared ? 0 : PAGE_IS_FILE;
}

int mli_pagescan_baseline(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
			  struct ml_err *err)
{
	struct pm_scan_arg a = {
		.flags = PM_SCAN_WP_MATCHING,
		.category_inverted = PAGE_IS_PFNZERO | file_cat(shared),
		.category_mask = PAGE_IS_PFNZERO | file_cat(shared),
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = 0,
	};
	long r = run_scan(ps, &a, start, end, NULL, NULL, "write-protect baseline", err);

	return r < 0 ? (int)r : 0;
}

long mli_pagescan_dirty(struct pagescan *ps, uint64_t start, uint64_t end, int flags,
			pagescan_fn fn, void *arg, struct ml_err *err)
{
	bool shared = flags & PAGESCAN_SHARED;
	struct pm_scan_arg a = {
		.flags = (flags & PAGESCAN_NO_WP ? 0 : PM_SCAN_WP_MATCHING) |
			 (flags & PAGESCAN_CHECK_REGISTERED ? PM_SCAN_CHECK_WPASYNC : 0),
		.category_inverted = PAGE_IS_PFNZERO | file_cat(shared),
		.category_mask = PAGE_IS_PFNZERO | file_cat(shared) | PAGE_IS_WRITTEN,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_WRITTEN,
	};

	return run_scan(ps, &a, start, end, fn, arg, "dirty scan", err);
}

long mli_pagescan_protect_present(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
				  pagescan_fn fn, void *arg, struct ml_err *err)
{
	struct pm_scan_arg a = {
		.flags = PM_SCAN_WP_MATCHING,
		.category_inverted = PAGE_IS_PFNZERO | file_cat(shared),
		.category_mask = PAGE_IS_PFNZERO | file_cat(shared),
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};

	return run_scan(ps, &a, start, end, fn, arg, "write-protect of a new VMA", err);
}

long mli_pagescan_resident(struct pagescan *ps, uint64_t start, uint64_t end, bool shared,
			   struct ml_err *err)
{
	struct pm_scan_arg a = {
		.category_inverted = PAGE_IS_PFNZERO | file_cat(shared),
		.category_mask = PAGE_IS_PFNZERO | file_cat(shared),
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
	};

	return run_scan(ps, &a, start, end, NULL, NULL, "resident scan", err);
}

static int stop_first(const struct page_region *r, void *arg)
{
	(void)r;
	(void)arg;
	return 1;
}

int mli_pagescan_verify_wp(struct pagescan *ps, uint64_t start, uint64_t end, struct ml_err *err)
{
	struct pm_scan_arg a = {
		.max_pages = 1,
		.category_mask = PAGE_IS_WPALLOWED,
		.return_mask = PAGE_IS_WPALLOWED,
	};
	long r = run_scan(ps, &a, start, end, stop_first, NULL, "write-protect verification", err);

	if (r < 0)
		return (int)r;
	return r > 0;
}

long mli_pagescan_query(struct pagescan *ps, uint64_t start, uint64_t end, uint64_t inverted,
			uint64_t mask, uint64_t anyof, uint64_t return_mask, pagescan_fn fn,
			void *arg, struct ml_err *err)
{
	struct pm_scan_arg a = {
		.category_inverted = inverted,
		.category_mask = mask,
		.category_anyof_mask = anyof,
		.return_mask = return_mask,
	};

	return run_scan(ps, &a, start, end, fn, arg, "category scan", err);
}
