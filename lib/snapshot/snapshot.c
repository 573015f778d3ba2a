// SPDX-License-Identifier: MIT
/*
 * memlens snapshot, the collector: maps + one PAGEMAP_SCAN category query
 * over the whole user address space, whose regions are attributed to VMAs
 * by walking both sorted lists; mm counters from /proc/PID/status. Without
 * PAGEMAP_SCAN, a read of each VMA's pagemap entries (lib/snapshot/).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../scan/pagescan.h"
#include "memlens/snapshot.h"
#include "snapshot_pages.h"
#include "memlens/clock.h"
#include "memlens/proc.h"
#include "pagemap_read.h"
#include "shmem_swap.h"

#define PG 4096ULL
/* a scan ending at 0x7fffffffffff fails with EFAULT on 6.18 */
#define USER_TOP 0x7ffffffff000ULL
#define SCAN_VEC_LEN 4096
#define SCAN_CATS                                                                                  \
	(PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_FILE | PAGE_IS_PFNZERO | PAGE_IS_HUGE |       \
	 PAGE_IS_GUARD | PAGE_IS_WPALLOWED | PAGE_IS_WRITTEN)
#define PM_SWAP_BIT (1ULL << 62)
#define PM_FRAME_MASK ((1ULL << 55) - 1)
/* swap types of real swap devices; PTE markers use the top type (31) */
#define REAL_SWAP_TYPES 16

struct ml_snapshotter {
	pid_t pid;
	struct ml_snapshot_opts o;
	int maps_fd, status_fd;
	int rollup_fd; /* smaps_rollup, where VmRSS lags (before Linux 6.2); else -1 */
	/* one scanner per walking thread; scan[0] opened with the snapshotter,
	 * the others when a cycle first needs them */
	struct pagescan scan[ML_SNAPSHOT_MAX_THREADS];
	unsigned int nscan;
	unsigned int cpus; /* CPUs we may run on */
	struct snap_pages pg;
	struct sparse_acc *acc; /* per VMA, for the counting scan (see scan()) */
	size_t acc_cap;
	char *maps_buf, *maps_buf2; /* the maps text before and after a counting scan */
	size_t maps_bufsz, maps_bufsz2;
	bool have_swap; /* swap devices existed when we opened */
	bool read_method; /* ML_SNAP_METHOD_READ: pmr, no PAGEMAP_SCAN */
	struct ml_pmread pmr;
	struct shmem_swap shm;
	struct ml_kind_src *kinds; /* what classifying the VMAs reads beyond maps */
	char exe[PATH_MAX];
};

/* What the counting scan saw of one VMA: everything but its common pages. */
struct sparse_acc {
	uint64_t nonpresent; /* pages reported not present (holes, swap, markers) */
	uint64_t present_nonfile; /* present pages reported without PAGE_IS_FILE */
	bool seen; /* at least one region was reported */
};

struct scan_ctx {
	struct ml_snapshotter *s;
	struct ml_snapshot *snap;
	bool full; /* every present page reported (not the counting scan) */
	size_t vi; /* VMA cursor: regions arrive sorted */
	uint64_t done; /* regions are counted from here on: no page twice */
	int r;
	struct ml_err *err;
};

/*
 * Before Linux 6.2 an mm's RSS counters were cached per thread and folded in
 * every 64 events (SPLIT_RSS_COUNTING): VmRSS lags the pages mapped by a
 * few, and smaps_rollup (which walks the page tables) is the exact number.
 */
static bool rss_lags(void)
{
	struct utsname u;
	int maj = 0, min = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &maj, &min) != 2)
		return false;
	return maj < 6 || (maj == 6 && min < 2);
}

static int open_proc(pid_t pid, const char *name, struct ml_err *err)
{
	char path[64];
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	if (e == ENOENT)
		return ml_err_set(err, ESRCH, "no process with pid %d", (int)pid);
	return ml_err_set(err, e, "cannot open %s: %s%s", path, strerror(e),
			  e == EACCES || e == EPERM ? ml_proc_access_hint() : "");
}

static bool system_has_swap(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

/* CPUs this thread may run on (its affinity mask). */
static unsigned int usable_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) ? 1 : (unsigned int)CPU_COUNT(&set);
}

int ml_snapshot_open(struct ml_snapshotter **out, pid_t pid, const struct ml_snapshot_opts *o,
		     struct ml_err *err)
{
	struct ml_snapshotter *s = calloc(1, sizeof(*s));
	char path[64];
	ssize_t n;
	int r;

	if (!s)
		return ml_err_set(err, ENOMEM, "out of memory");
	s->pid = pid;
	s->maps_fd = s->status_fd = s->rollup_fd = s->scan[0].fd = s->pg.flags_fd = s->pg.count_fd =
		-1;
	s->pmr.flags_fd = -1;
	r = ml_opts_load(&s->o, sizeof(s->o), o, "ml_snapshot_opts", err);
	if (r) {
		free(s);
		return r;
	}
	if (s->o.method == ML_SNAP_METHOD_READ) {
		s->read_method = true;
	} else if (!mli_pagescan_supported()) {
		if (s->o.method == ML_SNAP_METHOD_SCAN) {
			r = ml_err_set(err, ENOTSUP,
				       "this kernel has no PAGEMAP_SCAN ioctl (Linux 6.7 or later "
				       "has it): let the snapshot read /proc/PID/pagemap instead");
			goto fail;
		}
		s->read_method = true; /* probed, not guessed from the version */
	}
	r = open_proc(pid, "maps", err);
	if (r < 0)
		goto fail;
	s->maps_fd = r;
	r = open_proc(pid, "status", err);
	if (r < 0)
		goto fail;
	s->status_fd = r;
	if (rss_lags()) {
		r = open_proc(pid, "smaps_rollup", err);
		if (r < 0)
			goto fail;
		s->rollup_fd = r;
	}
	r = mli_pagescan_open(&s->scan[0], pid, SCAN_VEC_LEN, err);
	if (r == -ESRCH && s->status_fd >= 0) {
		r = ml_err_set(
			err, ESRCH,
			"process %d has no memory to snapshot: it is a kernel thread or a zombie",
			(int)pid);
		goto fail;
	}
	if (r)
		goto fail;
	s->nscan = 1;
	if (s->o.pages) {
		r = mli_snap_pages_open(&s->pg, err);
		if (r)
			goto fail;
	}
	s->have_swap = system_has_swap();
	if (s->read_method) {
		r = mli_pmread_open(&s->pmr, s->have_swap, err);
		if (r)
			goto fail;
	}
	s->cpus = usable_cpus();
	mli_shmem_swap_init(&s->shm, pid);
	r = ml_kind_src_open(&s->kinds, pid, err);
	if (r)
		goto fail;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = '\0';
	*out = s;
	return 0;
fail:
	ml_snapshot_close(s);
	return r;
}

void ml_snapshot_close(struct ml_snapshotter *s)
{
	if (!s)
		return;
	if (s->maps_fd >= 0)
		close(s->maps_fd);
	if (s->status_fd >= 0)
		close(s->status_fd);
	if (s->rollup_fd >= 0)
		close(s->rollup_fd);
	if (s->scan[0].fd >= 0)
		mli_pagescan_close(&s->scan[0]);
	for (unsigned int i = 1; i < s->nscan; i++)
		mli_pagescan_close(&s->scan[i]);
	if (s->pg.flags_fd >= 0 || s->pg.count_fd >= 0)
		mli_snap_pages_close(&s->pg);
	if (s->read_method)
		mli_pmread_close(&s->pmr);
	free(s->maps_buf);
	free(s->maps_buf2);
	free(s->acc);
	ml_kind_src_close(s->kinds);
	free(s);
}

/*
 * PAGEMAP_SCAN reports every non-present PTE as SWAPPED, including the
 * uffd-wp markers that write tracking (WP_UNPOPULATED) leaves on untouched
 * pages of a registered VMA. Those have WPALLOWED and not WRITTEN; count
 * only the real swap entries among them: none without swap devices, else
 * by the swap type in pagemap (root; markers have type 31).
 */
static uint64_t real_swapped(struct ml_snapshotter *s, uint64_t start, uint64_t end)
{
	uint64_t buf[512], n = 0;

	if (!s->have_swap)
		return 0;
	for (uint64_t a = start; a < end;) {
		uint64_t pages = (end - a) / PG;
		ssize_t r;

		if (pages > 512)
			pages = 512;
		r = pread(s->scan[0].fd, buf, pages * 8, (off_t)(a / PG * 8));
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r / 8; i++) {
			uint64_t f = buf[i] & PM_FRAME_MASK;

			n += (buf[i] & PM_SWAP_BIT) && (!f || (f & 31) < REAL_SWAP_TYPES);
		}
		a += (uint64_t)r / 8 * PG;
	}
	return n;
}

/* Swap entries, not guard markers nor uffd-wp markers (see real_swapped()). */
static void add_swapped(struct ml_snap_counts *c, uint64_t cats, uint64_t pages)
{
	if ((cats & PAGE_IS_SWAPPED) && !(cats & PAGE_IS_GUARD) &&
	    (cats & (PAGE_IS_WPALLOWED | PAGE_IS_WRITTEN)) != PAGE_IS_WPALLOWED)
		c->swapped_pages += pages;
}

static void add_region(struct ml_snap_counts *c, uint64_t cats, uint64_t pages)
{
	if (cats & PAGE_IS_PRESENT) {
		if (cats & PAGE_IS_PFNZERO)
			c->zero_pages += pages;
		else
			c->resident_pages += pages;
		if (cats & PAGE_IS_FILE)
			c->file_pages += pages;
		/* the huge zero page is no huge page of memory (nor in AnonHugePages) */
		if ((cats & (PAGE_IS_HUGE | PAGE_IS_PFNZERO)) == PAGE_IS_HUGE)
			c->huge_pages += pages;
	}
	add_swapped(c, cats, pages);
}

/*
 * The counting scan reports only what is not a common page (see scan()):
 * keep what is needed to derive the rest once the scan is done.
 */
static void add_uncommon(struct ml_snap_counts *c, struct sparse_acc *acc, uint64_t cats,
			 uint64_t pages)
{
	acc->seen = true;
	if (!(cats & PAGE_IS_PRESENT))
		acc->nonpresent += pages;
	else if (!(cats & PAGE_IS_FILE))
		acc->present_nonfile += pages;
	if (cats & PAGE_IS_PRESENT) {
		if (cats & PAGE_IS_PFNZERO)
			c->zero_pages += pages;
		if ((cats & (PAGE_IS_HUGE | PAGE_IS_PFNZERO)) == PAGE_IS_HUGE)
			c->huge_pages += pages;
	}
	add_swapped(c, cats, pages);
}

static bool maybe_marker(uint64_t cats)
{
	return (cats & PAGE_IS_SWAPPED) &&
	       (cats & (PAGE_IS_WPALLOWED | PAGE_IS_WRITTEN | PAGE_IS_GUARD)) == PAGE_IS_WPALLOWED;
}

/*
 * Split a scan region at VMA boundaries and count each piece in its VMA.
 * Regions arrive in address order; a page seen again (a region repeated
 * by a resumed scan) is not counted again, so no VMA ever counts more
 * pages than it has.
 */
static int on_region(const struct page_region *reg, void *arg)
{
	struct scan_ctx *x = arg;
	struct ml_snapshot *snap = x->snap;
	const struct ml_vma_set *vs = &snap->vmas;
	uint64_t a = reg->start > x->done ? reg->start : x->done;

	if (a < reg->end)
		x->done = reg->end;

	while (a < reg->end) {
		const struct ml_vma *v;
		uint64_t e;

		while (x->vi < vs->n && vs->v[x->vi].end <= a)
			x->vi++;
		if (x->vi == vs->n)
			return 0; /* beyond the last VMA: mapped after maps was read */
		v = &vs->v[x->vi];
		if (v->start >= reg->end)
			return 0;
		if (v->start > a)
			a = v->start;
		e = reg->end < v->end ? reg->end : v->end;
		if (x->full)
			add_region(&snap->c[x->vi], reg->categories, (e - a) / PG);
		else
			add_uncommon(&snap->c[x->vi], &x->s->acc[x->vi], reg->categories,
				     (e - a) / PG);
		if (maybe_marker(reg->categories))
			snap->c[x->vi].swapped_pages += real_swapped(x->s, a, e);
		if (x->s->o.pages && (reg->categories & PAGE_IS_PRESENT) &&
		    !(reg->categories & PAGE_IS_PFNZERO)) {
			x->r = mli_snap_pages_count(&x->s->pg, x->s->scan[0].fd, a, e,
						    &snap->c[x->vi], x->err);
			if (x->r)
				return x->r;
		}
		a = e;
	}
	return 0;
}

/*
 * Asking for PAGE_IS_FILE makes the kernel look up the page of every
 * present PTE (3x the cost of the walk). Only file-backed and shared
 * VMAs (and the vDSO) can hold non-anonymous pages, so the address space
 * is scanned in runs of VMAs of the same class, FILE asked only where it
 * can be set.
 */
static bool may_hold_file_pages(const struct ml_vma *v)
{
	return v->inode || v->perms[3] == 's' || v->kind == ML_VMA_VDSO || v->kind == ML_VMA_VVAR;
}

/*
 * The masks of a scan of VMAs of one class. With --pages every present page
 * is reported (its frame is needed for kpageflags). Otherwise the scan
 * counts: the kernel outputs only what is *not* a common page — a present,
 * non-zero, non-huge page (of the page cache, in file-backed VMAs), which
 * is most of a process — and the counts of the common pages are derived
 * from the VMA's size afterwards (finish_counts()). Skipping the output of
 * a PTE is ~4x cheaper for the kernel than reporting it: on 1 GiB of
 * resident 4 KiB pages the walk takes 0.65 ms instead of 2.9 ms.
 */
static struct pagescan_seg seg_of(uint64_t start, uint64_t end, bool file, bool pages,
				  unsigned int worker)
{
	const uint64_t uncommon =
		PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE;
	struct pagescan_seg g = { .start = start, .end = end, .worker = worker };

	g.return_mask = (file ? SCAN_CATS : SCAN_CATS & ~(uint64_t)PAGE_IS_FILE) &
			mli_pagescan_categories();
	if (pages) {
		g.anyof = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
	} else if (file) {
		g.inverted = PAGE_IS_PRESENT | PAGE_IS_FILE;
		g.anyof = uncommon | PAGE_IS_FILE;
	} else {
		g.inverted = PAGE_IS_PRESENT;
		g.anyof = uncommon;
	}
	return g;
}

/*
 * Threads for this cycle: the option, else one per 256 MiB mapped, at most
 * half the CPUs we may run on (the rest is the target's) and
 * ML_SNAPSHOT_MAX_THREADS. On 2 CPUs that is one: measured there, a second
 * walker halves the best cycle but barely moves the median, since waking a
 * thread on the other (shared, virtual) CPU costs about what it saves.
 */
#define BYTES_PER_THREAD (256ULL << 20)
#define PMD_SIZE_ (2ULL << 20)

static unsigned int scan_threads(const struct ml_snapshotter *s, uint64_t mapped)
{
	unsigned int n = s->o.threads;

	if (!n) {
		uint64_t by_size = mapped / BYTES_PER_THREAD;

		n = s->cpus / 2 < ML_SNAPSHOT_MAX_THREADS ? s->cpus / 2 : ML_SNAPSHOT_MAX_THREADS;
		if (by_size < n)
			n = by_size ? (unsigned int)by_size : 1;
	}
	return n > ML_SNAPSHOT_MAX_THREADS ? ML_SNAPSHOT_MAX_THREADS : n ? n : 1;
}

static int open_workers(struct ml_snapshotter *s, unsigned int n, struct ml_err *err)
{
	while (s->nscan < n) {
		int r = mli_pagescan_open(&s->scan[s->nscan], s->pid, SCAN_VEC_LEN, err);

		if (r)
			return r;
		s->nscan++;
	}
	return 0;
}

/*
 * Cut the runs into segments for @n workers with about the same number of
 * mapped bytes each, cutting inside a VMA at a 2 MiB (page table) boundary.
 */
static size_t plan_segments(const struct ml_vma_set *vs, uint64_t mapped, unsigned int n,
			    bool pages, struct pagescan_seg *seg)
{
	uint64_t per = mapped / n, acc = 0;
	unsigned int w = 0;
	size_t i = 0, ns = 0;

	while (i < vs->n && vs->v[i].end <= USER_TOP) {
		bool file = may_hold_file_pages(&vs->v[i]);
		uint64_t pos = vs->v[i].start;

		for (; i < vs->n && vs->v[i].end <= USER_TOP &&
		       may_hold_file_pages(&vs->v[i]) == file;
		     i++) {
			uint64_t a = vs->v[i].start, end = vs->v[i].end;

			while (w + 1 < n && acc + (end - a) >= per) {
				uint64_t cut = (a + (per - acc) + PMD_SIZE_ - 1) & ~(PMD_SIZE_ - 1);

				if (cut > end)
					cut = end;
				if (cut > pos)
					seg[ns++] = seg_of(pos, cut, file, pages, w);
				pos = a = cut;
				acc = 0;
				w++;
			}
			acc += end - a;
		}
		if (vs->v[i - 1].end > pos)
			seg[ns++] = seg_of(pos, vs->v[i - 1].end, file, pages, w);
	}
	return ns;
}

/*
 * @arr (of *cap elements of @size) with room for @n, all zeroed; grown
 * when needed. Returns the array, or NULL (out of memory; @arr intact).
 */
static void *zeroed_array(void *arr, size_t *cap, size_t n, size_t size)
{
	if (n > *cap || !arr) {
		void *p = realloc(arr, (n ? n : 1) * size); /* never NULL on success */

		if (!p)
			return NULL;
		arr = p;
		*cap = n ? n : 1;
	}
	if (n)
		memset(arr, 0, n * size);
	return arr;
}

/* Room for one sparse_acc per VMA, zeroed. */
static int reset_acc(struct ml_snapshotter *s, size_t n)
{
	struct sparse_acc *p = zeroed_array(s->acc, &s->acc_cap, n, sizeof(*p));

	if (!p)
		return -ENOMEM;
	s->acc = p;
	return 0;
}

/*
 * After a counting scan: a VMA's present pages are its size less what was
 * reported not present; resident ones exclude the zero page; in file-backed
 * VMAs the page-cache pages are the present ones less those reported
 * without FILE. A VMA of which nothing was reported is either all common
 * pages or one the kernel does not walk (VM_PFNMAP, e.g. [vvar]): one
 * single-page query tells which.
 */
static int finish_counts(struct ml_snapshotter *s, struct ml_snapshot *snap, struct ml_err *err)
{
	const struct ml_vma_set *vs = &snap->vmas;

	for (size_t i = 0; i < vs->n && vs->v[i].end <= USER_TOP; i++) {
		const struct sparse_acc *acc = &s->acc[i];
		struct ml_snap_counts *c = &snap->c[i];
		uint64_t present;

		if (!acc->seen) {
			long r = mli_pagescan_query(&s->scan[0], vs->v[i].start,
						    vs->v[i].start + PG, 0, 0, PAGE_IS_PRESENT,
						    PAGE_IS_PRESENT, NULL, NULL, err);

			if (r < 0)
				return (int)r;
			if (r == 0)
				continue; /* not walked: nothing to count, as with --pages */
		}
		present = c->size_pages > acc->nonpresent ? c->size_pages - acc->nonpresent : 0;
		c->resident_pages = present > c->zero_pages ? present - c->zero_pages : 0;
		if (may_hold_file_pages(&vs->v[i]))
			c->file_pages =
				present > acc->present_nonfile ? present - acc->present_nonfile : 0;
	}
	return 0;
}

static int scan(struct ml_snapshotter *s, struct ml_snapshot *snap, bool full, struct ml_err *err)
{
	const struct ml_vma_set *vs = &snap->vmas;
	struct scan_ctx x = { .s = s, .snap = snap, .full = full, .err = err };
	struct pagescan_seg *seg;
	uint64_t mapped = 0;
	unsigned int n;
	size_t ns;
	int r;

	if (!full && reset_acc(s, vs->n))
		return ml_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < vs->n && vs->v[i].end <= USER_TOP; i++)
		mapped += vs->v[i].end - vs->v[i].start;
	n = scan_threads(s, mapped);
	if (n > 1 && open_workers(s, n, err))
		n = 1; /* no more scanners (fd limit): walk alone */
	seg = malloc((vs->n + n + 1) * sizeof(*seg));
	if (!seg)
		return ml_err_set(err, ENOMEM, "out of memory");
	ns = plan_segments(vs, mapped, n, full, seg);
	snap->scan_threads = n;
	if (n > 1) {
		r = mli_pagescan_query_parallel(s->scan, n, seg, ns, on_region, &x, err);
	} else {
		r = 0;
		for (size_t k = 0; k < ns && !r; k++) {
			long q = mli_pagescan_query(&s->scan[0], seg[k].start, seg[k].end,
						    seg[k].inverted, 0, seg[k].anyof,
						    seg[k].return_mask, on_region, &x, err);
			r = q < 0 ? (int)q : 0;
		}
	}
	free(seg);
	if (x.r)
		return x.r;
	if (!r && !full)
		r = finish_counts(s, snap, err);
	return r;
}

static int64_t status_kb(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	if (!p)
		return -1;
	return strtoll(p + strlen(key), NULL, 10);
}

static int read_status(struct ml_snapshotter *s, struct ml_snap_mm *mm, struct ml_err *err)
{
	char buf[8192];
	ssize_t n;

	do
		n = pread(s->status_fd, buf, sizeof(buf) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return ml_err_set(err, ESRCH, "the target process %d exited", (int)s->pid);
	buf[n] = '\0';
	mm->vm_size_kb = status_kb(buf, "\nVmSize:");
	mm->vm_rss_kb = status_kb(buf, "\nVmRSS:");
	mm->rss_anon_kb = status_kb(buf, "\nRssAnon:");
	mm->rss_file_kb = status_kb(buf, "\nRssFile:");
	mm->rss_shmem_kb = status_kb(buf, "\nRssShmem:");
	mm->vm_swap_kb = status_kb(buf, "\nVmSwap:");
	mm->vm_hwm_kb = status_kb(buf, "\nVmHWM:");
	mm->hugetlb_kb = status_kb(buf, "\nHugetlbPages:");
	mm->rss_kb = mm->vm_rss_kb;
	if (s->rollup_fd >= 0) {
		do
			n = pread(s->rollup_fd, buf, sizeof(buf) - 1, 0);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return ml_err_set(err, ESRCH, "the target process %d exited", (int)s->pid);
		buf[n] = '\0';
		mm->rss_kb = status_kb(buf, "\nRss:");
	}
	return 0;
}

static void add_counts(struct ml_snap_counts *dst, const struct ml_snap_counts *c)
{
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *d = (uint64_t *)dst;

	for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++)
		d[i] += src[i];
}

static void sum_up(struct ml_snapshot *snap)
{
	memset(&snap->totals, 0, sizeof(snap->totals));
	memset(snap->kinds, 0, sizeof(snap->kinds));
	for (size_t i = 0; i < snap->vmas.n; i++) {
		add_counts(&snap->totals, &snap->c[i]);
		add_counts(&snap->kinds[snap->vmas.v[i].kind], &snap->c[i]);
	}
}

static int reset_counts(struct ml_snapshot *snap)
{
	size_t n = snap->vmas.n;
	struct ml_snap_counts *c = zeroed_array(snap->c, &snap->c_cap, n, sizeof(*c));

	if (!c)
		return -ENOMEM;
	snap->c = c;
	for (size_t i = 0; i < n; i++)
		snap->c[i].size_pages = vma_pages(&snap->vmas.v[i]);
	return 0;
}

static uint64_t scan_ioctls(const struct ml_snapshotter *s)
{
	uint64_t n = s->scan[0].ioctls;

	for (unsigned int i = 1; i < s->nscan; i++)
		n += s->scan[i].ioctls;
	return n;
}

static int maps_error(struct ml_snapshotter *s, ssize_t r, struct ml_err *err)
{
	if (r == -ESRCH)
		return ml_err_set(
			err, ESRCH,
			"process %d has no memory map: it exited (or it is a kernel thread)",
			(int)s->pid);
	return (int)r;
}

/*
 * The counting scan derives the common pages from VMA sizes, so a VMA that
 * is absent, or only partly there, while the kernel walks its range would
 * be miscounted: the kernel reports nothing for a range no VMA covers, and
 * that reads as "all present". It happens with a VMA unmapped and mapped
 * again at the same place (the maps text alone cannot tell), or one that
 * grows and shrinks by merging with a neighbour: an untouched 512 KiB
 * mapping right below a resident region, mapped and unmapped in a loop,
 * makes the pair read as one VMA whose untouched half then counts as 128
 * resident pages (or, the other way round, the resident half as absent).
 *
 * So a count is accepted only when it agrees exactly with the kernel: the
 * maps text is the same after the count as before it, the process's RSS
 * (VmRSS + HugetlbPages) is the same before and after, and the pages
 * counted resident are exactly that RSS. The same rule holds for every
 * way of counting (the counting scan, the scan of every present page that
 * --pages and the last attempt use, the pagemap read) and every number of
 * threads: the count of a still process must be the kernel's, whatever
 * walked it. Otherwise the cycle is redone on the new text; the attempt
 * after MAX_RECOUNTS failures of the counting scan reports every present
 * page, which counts only pages the kernel saw present. When that one does
 * not agree either, it is returned marked not exact, with what went wrong:
 * never an unchecked count passed off as exact. Tested with both churners
 * of workloads/mapchurn.c.
 */
#define MAX_RECOUNTS 2
#define SWAP_BUF(a, b, asz, bsz)                                                                   \
	do {                                                                                       \
		char *t_ = (a);                                                                    \
		size_t tsz_ = (asz);                                                               \
		(a) = (b);                                                                         \
		(b) = t_;                                                                          \
		(asz) = (bsz);                                                                     \
		(bsz) = tsz_;                                                                      \
	} while (0)

static int64_t rss_kb(const struct ml_snap_mm *mm)
{
	if (mm->rss_kb < 0)
		return -1;
	return mm->rss_kb + (mm->hugetlb_kb > 0 ? mm->hugetlb_kb : 0);
}

/* Does the count agree with the kernel (see above)? */
static enum ml_snap_check check_count(const struct ml_snapshot *snap, bool same_maps)
{
	int64_t counted = (int64_t)(snap->totals.resident_pages * PG / 1024);

	if (snap->rss_before_kb < 0 || snap->rss_after_kb < 0)
		return ML_SNAP_CHECK_NO_RSS;
	if (!same_maps)
		return ML_SNAP_CHECK_MAPS_CHANGED;
	if (snap->rss_after_kb != snap->rss_before_kb)
		return ML_SNAP_CHECK_RSS_CHANGED;
	if (counted != snap->rss_before_kb)
		return ML_SNAP_CHECK_COUNT_DIFFERS;
	return ML_SNAP_CHECK_EXACT;
}

const char *ml_snap_check_text(enum ml_snap_check c)
{
	switch (c) {
	case ML_SNAP_CHECK_EXACT:
		return "";
	case ML_SNAP_CHECK_MAPS_CHANGED:
		return "the memory map changed while it was counted";
	case ML_SNAP_CHECK_RSS_CHANGED:
		return "the resident memory changed while it was counted";
	case ML_SNAP_CHECK_COUNT_DIFFERS:
		return "the pages counted resident differ from the kernel's RSS";
	case ML_SNAP_CHECK_NO_RSS:
		return "the kernel reports no RSS to check the count against";
	}
	return "unknown";
}

/*
 * Without PAGEMAP_SCAN: every VMA's pagemap entries, read one VMA after the
 * other. Only what the kernel shows present at a VMA's addresses counts.
 */
struct pages_run {
	struct ml_snapshotter *s;
	struct ml_snap_counts *c;
	struct ml_err *err;
};

/* --pages: the page flags of a run of resident pages (the zero page left out, as in scan()) */
static int pages_of_run(uint64_t start, uint64_t end, void *arg)
{
	struct pages_run *pr = arg;

	return mli_snap_pages_count(&pr->s->pg, pr->s->scan[0].fd, start, end, pr->c, pr->err);
}

static int count_read(struct ml_snapshotter *s, struct ml_snapshot *out, struct ml_err *err)
{
	const struct ml_vma_set *vs = &out->vmas;
	int r;

	mli_pmread_new_cycle(&s->pmr);
	for (size_t i = 0; i < vs->n && vs->v[i].end <= USER_TOP; i++) {
		struct pages_run pr = { s, &out->c[i], err };

		r = mli_pmread_vma(&s->pmr, s->scan[0].fd, &vs->v[i], &out->c[i],
				   s->o.pages ? pages_of_run : NULL, &pr, err);
		if (r)
			return r;
	}
	if (s->pmr.pfn_hidden)
		out->flags |= ML_SNAP_PFN_HIDDEN;
	out->scan_threads = 1;
	return 0;
}

int ml_snapshot_take(struct ml_snapshotter *s, struct ml_snapshot *out, struct ml_err *err)
{
	uint64_t t0 = ml_mono_ns(), ioctls0 = scan_ioctls(s), reads0 = s->pg.reads;
	uint64_t pmreads0 = s->pmr.reads;
	enum ml_snap_check check;
	ssize_t len, len2;
	int r;

	out->pid = s->pid;
	out->t_ns = t0;
	out->recounts = 0;
	out->method = s->read_method ? ML_SNAP_METHOD_READ : ML_SNAP_METHOD_SCAN;
	out->pagemap_reads = 0;
	len = ml_maps_read_raw(s->maps_fd, &s->maps_buf, &s->maps_bufsz, err);
	if (len < 0)
		return maps_error(s, len, err);
	for (;;) { /* count, until the count agrees with the kernel */
		bool full = s->o.pages || out->recounts == MAX_RECOUNTS;

		out->flags = s->o.pages ? ML_SNAP_HAVE_PAGES : 0;
		len = ml_maps_parse_fd(s->maps_fd, &s->maps_buf, &s->maps_bufsz, (size_t)len,
				       &out->vmas, err);
		if (len < 0)
			return maps_error(s, len, err);
		ml_maps_classify_proc(s->kinds, &out->vmas, s->exe[0] ? s->exe : NULL);
		if (reset_counts(out))
			return ml_err_set(err, ENOMEM, "out of memory");
		r = read_status(s, &out->mm, err);
		if (r)
			return r;
		out->rss_before_kb = rss_kb(&out->mm);
		r = s->read_method ? count_read(s, out, err) : scan(s, out, full, err);
		if (r)
			return r;
		len2 = ml_maps_read_raw(s->maps_fd, &s->maps_buf2, &s->maps_bufsz2, err);
		if (len2 < 0)
			return maps_error(s, len2, err);
		r = read_status(s, &out->mm, err);
		if (r)
			return r;
		out->rss_after_kb = rss_kb(&out->mm);
		sum_up(out);
		check = check_count(out,
				    len2 == len && !memcmp(s->maps_buf, s->maps_buf2, (size_t)len));
		/* no RSS to compare with: another attempt cannot do better */
		if (check == ML_SNAP_CHECK_EXACT || check == ML_SNAP_CHECK_NO_RSS ||
		    out->recounts == MAX_RECOUNTS)
			break;
		/* the count disagreed with the kernel: again, on the newer text */
		SWAP_BUF(s->maps_buf, s->maps_buf2, s->maps_bufsz, s->maps_bufsz2);
		len = len2;
		out->recounts++;
	}
	mli_shmem_swap(&s->shm, &s->scan[0], out); /* not in the page tables the scan saw */
	sum_up(out);
	out->exact = check == ML_SNAP_CHECK_EXACT;
	out->check = check;
	out->scan_ioctls = scan_ioctls(s) - ioctls0;
	out->flag_reads = s->pg.reads - reads0;
	out->pagemap_reads = s->pmr.reads - pmreads0;
	out->cycle_ns = ml_mono_ns() - t0;
	return 0;
}

int ml_snapshot_set_written(struct ml_snapshot *s, uint64_t start, uint64_t pages)
{
	long i = ml_vma_find(&s->vmas, start);

	if (i < 0 || s->vmas.v[i].start != start)
		return -ENOENT;
	s->flags |= ML_SNAP_HAVE_WRITTEN;
	s->c[i].written_pages += pages;
	s->kinds[s->vmas.v[i].kind].written_pages += pages;
	s->totals.written_pages += pages;
	return 0;
}

const char *ml_snap_method_name(enum ml_snap_method m)
{
	return m == ML_SNAP_METHOD_SCAN	  ? "pagemap_scan"
	       : m == ML_SNAP_METHOD_READ ? "pagemap_read"
					  : "auto";
}

double ml_snap_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}
