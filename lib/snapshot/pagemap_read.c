// SPDX-License-Identifier: MIT
/*
 * The snapshot counts without PAGEMAP_SCAN: every page of a VMA from its
 * 64-bit /proc/PID/pagemap entry (bit 63 present, 62 swapped, 61 file page
 * or shared anonymous, 56 mapped exclusively, bits 0-54 the page frame or
 * the swap type and offset, both only for CAP_SYS_ADMIN).
 *
 * What the entry alone does not say is read from /proc/kpageflags, for few
 * pages only:
 *  - the zero page (not resident, as in smaps' Rss): present and not
 *    exclusive (the huge zero page also shows as a file page); its frame is learnt once from a page
 * of our own; the huge zero page's frames are checked (KPF_ZERO_PAGE) only where a frame sits at
 * its address's offset within 2 MiB, as a PMD maps them;
 *  - huge pages: a 2 MiB-aligned run of 512 present pages whose frames are
 *    contiguous from a 512-aligned one, and which kpageflags shows as one
 *    compound page (THP or hugetlb). A huge page the kernel has split into
 *    page-table mappings but left in place in order reads the same, and
 *    counts as huge here.
 * Without frame numbers (not root) zero pages and huge pages cannot be told
 * apart: they count as resident, resp. not huge (pfn_hidden says so).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kernel-page-flags.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pagemap_read.h"
#include "snapshot_pages.h"

#define PG 4096ULL
#define HPAGE (512ULL * PG)
#define BATCH 8192ULL /* entries per pread: 64 KiB, 32 MiB of address space */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP (1ULL << 62)
#define PM_FILE (1ULL << 61)
#define PM_EXCLUSIVE (1ULL << 56)
#define PM_FRAME ((1ULL << 55) - 1)
/* swap types of real swap devices; the kernel's own entries (migration,
 * markers, poison) use the top types */
#define REAL_SWAP_TYPES 16

/* The zero page's frame: a read of a fresh anonymous page of ours maps it. */
static uint64_t own_zero_pfn(void)
{
	volatile char *m = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e = 0;
	int fd;

	if (m == MAP_FAILED)
		return 0;
	(void)m[0];
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (mli_snap_pread_words(fd, &e, sizeof(e), (off_t)((uintptr_t)m / PG * 8)) != 1)
			e = 0;
		close(fd);
	}
	munmap((void *)m, PG);
	return (e & PM_PRESENT) ? e & PM_FRAME : 0;
}

int mli_pmread_open(struct ml_pmread *p, bool have_swap, struct ml_err *err)
{
	memset(p, 0, sizeof(*p));
	p->flags_fd = -1;
	p->have_swap = have_swap;
	p->pm = malloc(BATCH * sizeof(uint64_t));
	p->fl = malloc(512 * sizeof(uint64_t));
	if (!p->pm || !p->fl) {
		mli_pmread_close(p);
		return ml_err_set(err, ENOMEM, "out of memory for the pagemap buffers");
	}
	p->flags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	p->zero_pfn = own_zero_pfn();
	return 0;
}

void mli_pmread_close(struct ml_pmread *p)
{
	if (p->flags_fd >= 0)
		close(p->flags_fd);
	free(p->pm);
	free(p->fl);
	memset(p, 0, sizeof(*p));
	p->flags_fd = -1;
}

void mli_pmread_new_cycle(struct ml_pmread *p)
{
	p->hzero_pfn = 0;
	p->pfn_hidden = false;
}

/* kpageflags of @n frames from @pfn into p->fl; the number read, or -1. */
static int read_flags(struct ml_pmread *p, uint64_t pfn, int n)
{
	if (p->flags_fd < 0)
		return -1;
	p->reads++;
	return mli_snap_pread_words(p->flags_fd, p->fl, (size_t)n * 8, (off_t)(pfn * 8));
}

/* A present, not exclusive page at @addr with frame @pfn: the zero page? */
static bool is_zero(struct ml_pmread *p, uint64_t addr, uint64_t pfn)
{
	if (pfn == p->zero_pfn)
		return true;
	if (p->hzero_pfn && pfn >= p->hzero_pfn && pfn < p->hzero_pfn + 512)
		return true;
	/* the huge zero page is mapped by a PMD: frame offset = address offset */
	if ((pfn & 511) != ((addr / PG) & 511) || read_flags(p, pfn, 1) != 1 ||
	    !(p->fl[0] & (1ULL << KPF_ZERO_PAGE)))
		return false;
	if (p->fl[0] &
	    ((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_COMPOUND_TAIL) | (1ULL << KPF_THP)))
		p->hzero_pfn = pfn & ~511ULL;
	else
		p->zero_pfn = pfn;
	return true;
}

/* The 512 entries at @e (2 MiB-aligned address): one huge page, mapped in order? */
static bool is_huge(struct ml_pmread *p, const uint64_t *e)
{
	const uint64_t compound = (1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_COMPOUND_TAIL);
	uint64_t pfn0 = e[0] & PM_FRAME;

	if (!(e[0] & PM_PRESENT) || !pfn0 || (pfn0 & 511))
		return false;
	for (int i = 1; i < 512; i++)
		if (!(e[i] & PM_PRESENT) || (e[i] & PM_FRAME) != pfn0 + (uint64_t)i)
			return false;
	if (read_flags(p, pfn0, 512) != 512)
		return false;
	for (int i = 0; i < 512; i++) {
		uint64_t f = p->fl[i];

		if (!(f & ((1ULL << KPF_THP) | (1ULL << KPF_HUGE))) || !(f & compound) ||
		    (f & (1ULL << KPF_ZERO_PAGE)) || (i && !(f & (1ULL << KPF_COMPOUND_TAIL))))
			return false;
	}
	return true;
}

/* Count one entry; true when it is a resident page (present, not the zero page). */
static bool count_one(struct ml_pmread *p, uint64_t e, uint64_t addr, struct ml_snap_counts *c)
{
	uint64_t frame = e & PM_FRAME;

	if (e & PM_PRESENT) {
		if (!frame)
			p->pfn_hidden = true;
		/* never exclusive; the huge zero page reads as a file page */
		if (!(e & PM_EXCLUSIVE) && frame && is_zero(p, addr, frame)) {
			c->zero_pages++;
			return false;
		}
		c->resident_pages++;
		c->file_pages += !!(e & PM_FILE);
		return true;
	}
	/* the type is hidden without CAP_SYS_ADMIN: then any swap-like entry
	 * is swap when there is swap at all */
	if ((e & PM_SWAP) && (frame ? (frame & 31) < REAL_SWAP_TYPES : p->have_swap))
		c->swapped_pages++;
	return false;
}

/* The run of resident pages [*run, end) is over: report it (when asked). */
static int flush_run(uint64_t *run, uint64_t end, ml_pmread_run_fn fn, void *arg)
{
	int r = 0;

	if (fn && *run && end > *run)
		r = fn(*run, end, arg);
	*run = 0;
	return r;
}

int mli_pmread_vma(struct ml_pmread *p, int pagemap_fd, const struct ml_vma *v,
		   struct ml_snap_counts *c, ml_pmread_run_fn fn, void *arg, struct ml_err *err)
{
	uint64_t run = 0; /* start of the current run of resident pages, 0: none */
	int r;

	for (uint64_t a = v->start; a < v->end;) {
		/* batches end at multiples of their size: no 2 MiB run is cut */
		uint64_t stop = (a / (BATCH * PG) + 1) * (BATCH * PG);
		int n;

		if (stop > v->end)
			stop = v->end;
		n = mli_snap_pread_words(pagemap_fd, p->pm, (size_t)((stop - a) / PG * 8),
					 (off_t)(a / PG * 8));
		p->reads++;
		if (n < 0)
			return ml_err_set(err, n == -ESRCH ? ESRCH : -n,
					  "reading the target's pagemap: %s", strerror(-n));
		if (n == 0)
			return ml_err_set(err, ESRCH, "the target process exited");
		for (int k = 0; k < n; k++) {
			uint64_t addr = a + (uint64_t)k * PG;

			if (!(addr % HPAGE) && k + 512 <= n && is_huge(p, p->pm + k))
				c->huge_pages += 512;
			if (count_one(p, p->pm[k], addr, c)) {
				if (!run)
					run = addr;
			} else if (run && (r = flush_run(&run, addr, fn, arg))) {
				return r;
			}
		}
		a += (uint64_t)n * PG;
		r = flush_run(&run, a, fn, arg);
		if (r)
			return r;
	}
	return 0;
}
