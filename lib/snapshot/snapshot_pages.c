// SPDX-License-Identifier: MIT
/*
 * Page-structure counts for `snapshot --pages`. The PFNs of present pages
 * come from /proc/PID/pagemap (only for the ranges PAGEMAP_SCAN reported
 * present); each batch of PFNs is sorted and kpageflags/kpagecount are
 * read once per cluster of nearby PFNs (the allocator hands out pages in
 * no particular order, so runs in virtual order are short).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/kernel-page-flags.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot_pages.h"

#define BATCH 4096 /* pages per pagemap pread */
#define SPAN 4096 /* PFNs per kpageflags pread */
#define GAP 1 /* only adjacent PFNs share a pread: every entry read costs */
#define PM_PRESENT (1ULL << 63)
#define PM_EXCLUSIVE (1ULL << 56) /* mapped by this process's page tables only */
#define PM_PFN_MASK ((1ULL << 55) - 1)
/* kept with a PFN in the batch: pagemap said the page is mapped elsewhere too */
#define PFN_SHARED (1ULL << 62)
/* the pages whose map count pagemap's exclusive bit does not tell: parts of a large folio */
#define KPF_LARGE                                                                                  \
	((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_COMPOUND_TAIL) | (1ULL << KPF_HUGE) |          \
	 (1ULL << KPF_THP))

static int open_kpage(const char *path, struct ml_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == ENOENT)
		return ml_err_set(err, ENOTSUP,
				  "%s does not exist (kernel built without "
				  "CONFIG_PROC_PAGE_MONITOR); drop --pages",
				  path);
	if (errno == EACCES || errno == EPERM)
		return ml_err_set(
			err, errno,
			"cannot open %s: %s (page flags need root: run as root or drop --pages)",
			path, strerror(errno));
	return ml_err_set(err, errno, "cannot open %s: %s", path, strerror(errno));
}

int mli_snap_pages_open(struct snap_pages *p, struct ml_err *err)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->flags_fd = p->count_fd = -1;
	r = open_kpage("/proc/kpageflags", err);
	if (r < 0)
		return r;
	p->flags_fd = r;
	r = open_kpage("/proc/kpagecount", err);
	if (r < 0)
		goto fail;
	p->count_fd = r;
	p->pm = malloc(BATCH * sizeof(uint64_t));
	p->fl = malloc(SPAN * sizeof(uint64_t));
	p->cnt = malloc(SPAN * sizeof(uint64_t));
	if (!p->pm || !p->fl || !p->cnt) {
		r = ml_err_set(err, ENOMEM, "out of memory for page-flag buffers");
		goto fail;
	}
	return 0;
fail:
	mli_snap_pages_close(p);
	return r;
}

void mli_snap_pages_close(struct snap_pages *p)
{
	if (p->flags_fd >= 0)
		close(p->flags_fd);
	if (p->count_fd >= 0)
		close(p->count_fd);
	free(p->pm);
	free(p->fl);
	free(p->cnt);
	memset(p, 0, sizeof(*p));
	p->flags_fd = p->count_fd = -1;
}

int mli_snap_pread_words(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int)(done / sizeof(uint64_t));
}

static void count_one(struct ml_snap_counts *c, uint64_t f, bool shared)
{
	c->dirty_pages += !!(f & (1ULL << KPF_DIRTY));
	c->referenced_pages += !!(f & (1ULL << KPF_REFERENCED));
	c->active_pages += !!(f & (1ULL << KPF_ACTIVE));
	c->lru_pages += !!(f & (1ULL << KPF_LRU));
	c->anon_pages += !!(f & (1ULL << KPF_ANON));
	c->swapbacked_pages += !!(f & (1ULL << KPF_SWAPBACKED));
	c->shared_pages += shared;
}

/*
 * The sorted PFNs pfn[0..n) (with PFN_SHARED) all lie within SPAN of
 * pfn[0]. A page is shared when its map count is above 1: for a small
 * page, pagemap's exclusive bit says so already; only where the cluster
 * holds part of a large folio (THP, hugetlb), whose map count the bit
 * does not give per page, is /proc/kpagecount read too. It costs the
 * kernel as much per page as kpageflags: most clusters are read once.
 */
static int read_cluster(struct snap_pages *p, const uint64_t *pfn, int n, struct ml_snap_counts *c,
			struct ml_err *err)
{
	uint64_t first = pfn[0] & PM_PFN_MASK, last = pfn[n - 1] & PM_PFN_MASK;
	size_t len = (size_t)(last - first + 1);
	int a = mli_snap_pread_words(p->flags_fd, p->fl, len * 8, (off_t)(first * 8)), b = -1;
	bool large = false;

	p->reads++;
	if (a < 0)
		return ml_err_set(err, -a, "reading /proc/kpageflags: %s", strerror(-a));
	for (int i = 0; i < n && !large; i++) {
		uint64_t k = (pfn[i] & PM_PFN_MASK) - first;

		large = k < (uint64_t)a && (p->fl[k] & KPF_LARGE);
	}
	if (large) {
		b = mli_snap_pread_words(p->count_fd, p->cnt, len * 8, (off_t)(first * 8));
		p->reads++;
		if (b < 0)
			return ml_err_set(err, -b, "reading /proc/kpagecount: %s", strerror(-b));
	}
	for (int i = 0; i < n; i++) {
		uint64_t k = (pfn[i] & PM_PFN_MASK) - first;
		bool shared = pfn[i] & PFN_SHARED;

		if (k >= (uint64_t)a)
			continue;
		if (p->fl[k] & KPF_LARGE) {
			if (k >= (uint64_t)b)
				continue;
			shared = p->cnt[k] > 1;
		}
		count_one(c, p->fl[k], shared);
	}
	return 0;
}

static int cmp_pfn(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a & PM_PFN_MASK, y = *(const uint64_t *)b & PM_PFN_MASK;

	return x < y ? -1 : x > y;
}

/* p->pm[0..n): pagemap entries; turned in place into the sorted PFNs. */
static int count_batch(struct snap_pages *p, int n, struct ml_snap_counts *c, struct ml_err *err)
{
	int m = 0, i = 0;

	for (int k = 0; k < n; k++) {
		if (!(p->pm[k] & PM_PRESENT))
			continue;
		if (!(p->pm[k] & PM_PFN_MASK))
			return ml_err_set(err, EPERM,
					  "the kernel hides page frame numbers from this user: "
					  "--pages needs root (CAP_SYS_ADMIN)");
		p->pm[m++] = (p->pm[k] & PM_PFN_MASK) | (p->pm[k] & PM_EXCLUSIVE ? 0 : PFN_SHARED);
	}
	qsort(p->pm, (size_t)m, sizeof(uint64_t), cmp_pfn);
	while (i < m) {
		int j = i + 1, r;

		while (j < m && (p->pm[j] & PM_PFN_MASK) - (p->pm[j - 1] & PM_PFN_MASK) <= GAP &&
		       (p->pm[j] & PM_PFN_MASK) - (p->pm[i] & PM_PFN_MASK) < SPAN)
			j++;
		r = read_cluster(p, p->pm + i, j - i, c, err);
		if (r)
			return r;
		i = j;
	}
	return 0;
}

int mli_snap_pages_count(struct snap_pages *p, int pagemap_fd, uint64_t start, uint64_t end,
			 struct ml_snap_counts *c, struct ml_err *err)
{
	for (uint64_t a = start; a < end;) {
		uint64_t pages = (end - a) / 4096;
		int n, r;

		if (pages > BATCH)
			pages = BATCH;
		n = mli_snap_pread_words(pagemap_fd, p->pm, pages * 8, (off_t)(a / 4096 * 8));
		if (n < 0)
			return ml_err_set(err, n == -ESRCH ? ESRCH : -n,
					  "reading the target's pagemap: %s", strerror(-n));
		if (n == 0)
			break;
		r = count_batch(p, n, c, err);
		if (r)
			return r;
		a += (uint64_t)n * 4096;
	}
	return 0;
}
