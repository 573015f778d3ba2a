// SPDX-License-Identifier: MIT
/*
 * The swap of shmem-backed VMAs. When shmem swaps a page out, it unmaps it
 * from every page table and keeps the swap entry in the file's own page
 * cache (its xarray), not in a PTE: pagemap and PAGEMAP_SCAN show a hole
 * there, and VmSwap does not count it. smaps does (its Swap line), from the
 * file: shmem_swap_usage() counts the swap entries of the file range the
 * VMA maps.
 *
 * The same entries, counted the same way, are what cachestat(2) (Linux
 * 6.5) reports as nr_evicted for a shmem file: it walks the file's xarray
 * over the range asked, counting each swap entry's pages. That is the
 * cheapest exact way: it walks only the swapped range of the file (no
 * page table, unlike a read of smaps, which walks every VMA of the process
 * and takes about as long as the whole snapshot), needs no mapping of our
 * own (mincore would) and, unlike lseek(SEEK_DATA), tells swapped pages
 * from resident ones. The file is opened through /proc/PID/map_files
 * (root, or CAP_CHECKPOINT_RESTORE), for this cycle only: holding it
 * longer would keep a segment alive the target has dropped.
 *
 * smaps takes the file's count as the VMA's only where no PTE can shadow
 * the file: shared or read-only mappings. A private writable one has
 * copied-on-write pages of its own over some of the file's, so there the
 * kernel counts the file's swap entries only under the PTEs that are none
 * (smaps_pte_hole()); those holes come from one PAGEMAP_SCAN query
 * (neither present nor swapped: a PTE marker is neither a hole for smaps),
 * and cachestat is asked about each. The one difference left: smaps
 * counts a large swap entry that straddles the end of a partly mapped file
 * whole, cachestat only the part inside the range.
 *
 * What cannot be read (not root; a kernel without cachestat; the VMA gone
 * meanwhile) is marked unknown, never a silent 0; except that without any
 * swap device there can be no swap entry at all (swapoff brings every page
 * back first), so then 0 is exact.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shmem_swap.h"

#define PG 4096ULL

void mli_shmem_swap_init(struct shmem_swap *ss, pid_t pid)
{
	memset(ss, 0, sizeof(*ss));
	ss->pid = pid;
}

static bool any_swap_device(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return true; /* cannot tell: assume there is */
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

/* Evicted (swapped) pages of the file range [off, off + len): >= 0, or -errno. */
static int64_t file_swapped(struct shmem_swap *ss, int fd, uint64_t off, uint64_t len)
{
	struct ml_cachestat_range range = { off, len };
	struct ml_cachestat cs;

	ss->calls++;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) < 0)
		return -errno;
	return (int64_t)cs.nr_evicted;
}

/* 1: the device holds a tmpfs (shmem); 0: not; -1: not known yet. */
static int dev_shmem(const struct shmem_swap *ss, const struct ml_vma *v)
{
	for (unsigned int i = 0; i < ss->ndev; i++)
		if (ss->dev[i].major == v->dev_major && ss->dev[i].minor == v->dev_minor)
			return ss->dev[i].shmem;
	return -1;
}

static void dev_learn(struct shmem_swap *ss, const struct ml_vma *v, bool shmem)
{
	if (ss->ndev < SHMEM_SWAP_DEVS)
		ss->dev[ss->ndev++] = (typeof(ss->dev[0])){ v->dev_major, v->dev_minor, shmem };
}

struct holes {
	struct shmem_swap *ss;
	const struct ml_vma *v;
	int fd;
	int64_t swapped;
};

static int on_hole(const struct page_region *reg, void *arg)
{
	struct holes *h = arg;
	int64_t n = file_swapped(h->ss, h->fd, h->v->offset + (reg->start - h->v->start),
				 reg->end - reg->start);

	if (n < 0)
		return (int)n;
	h->swapped += n;
	return 0;
}

/*
 * The swapped pages of shmem VMA @v, open as @fd: >= 0, or -errno (then
 * not known).
 */
static int64_t vma_swapped(struct shmem_swap *ss, struct pagescan *scan, const struct ml_vma *v,
			   int fd)
{
	int64_t all = file_swapped(ss, fd, v->offset, v->end - v->start);
	struct holes h = { ss, v, fd, 0 };
	struct ml_err err = { 0 };
	long r;

	if (all <= 0 || v->perms[3] == 's' || v->perms[1] != 'w')
		return all;
	r = mli_pagescan_query(scan, v->start, v->end, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
			       PAGE_IS_PRESENT | PAGE_IS_SWAPPED, 0, PAGE_IS_PRESENT, on_hole, &h,
			       &err);
	return r < 0 ? r : h.swapped;
}

/*
 * Whether the file @v maps is on a tmpfs when it cannot be opened: by its
 * path, when that is still the same file. 1, 0, or -1 (cannot tell).
 */
static int path_shmem(struct shmem_swap *ss, const struct ml_vma_set *vs, const struct ml_vma *v)
{
	const char *p = ml_vma_path(vs, v);
	size_t len = strlen(p);
	struct statfs sfs;
	struct stat st;

	if (p[0] != '/' || (len > 10 && !strcmp(p + len - 10, " (deleted)")))
		return -1;
	if (stat(p, &st) || st.st_ino != v->inode || major(st.st_dev) != v->dev_major ||
	    minor(st.st_dev) != v->dev_minor || statfs(p, &sfs))
		return -1;
	dev_learn(ss, v, sfs.f_type == TMPFS_MAGIC);
	return sfs.f_type == TMPFS_MAGIC;
}

/* The swapped pages of @v if it is backed by shmem (else 0), or -errno: not known. */
static int64_t shmem_vma(struct shmem_swap *ss, struct pagescan *scan, const struct ml_vma_set *vs,
			 const struct ml_vma *v)
{
	int known = dev_shmem(ss, v), fd;
	char path[96];
	struct statfs sfs;
	struct stat st;
	int64_t n;

	if (known == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)ss->pid,
		 (unsigned long long)v->start, (unsigned long long)v->end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		n = -errno;
		return known < 0 && path_shmem(ss, vs, v) == 0 ? 0 : n;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		/* a device (a private /dev/zero mapping): its pages are anonymous */
		close(fd);
		return 0;
	}
	if (known < 0) {
		known = !fstatfs(fd, &sfs) && sfs.f_type == TMPFS_MAGIC;
		dev_learn(ss, v, known);
	}
	n = known ? vma_swapped(ss, scan, v, fd) : 0;
	close(fd);
	return n;
}

void mli_shmem_swap(struct shmem_swap *ss, struct pagescan *scan, struct ml_snapshot *snap)
{
	const struct ml_vma_set *vs = &snap->vmas;
	int swap_devices = -1; /* not looked at yet */

	for (size_t i = 0; i < vs->n; i++) {
		const struct ml_vma *v = &vs->v[i];
		struct ml_snap_counts *c = &snap->c[i];
		int64_t n;

		/*
		 * tmpfs and the kernel's internal shm mount have anonymous
		 * device numbers (major 0), as do a few other file systems.
		 * Not the inode: a SysV segment's is its shm id, 0 for the
		 * first segment of an IPC namespace (a server started in its
		 * own). A named shared anonymous mapping is [anon_shmem:NAME].
		 */
		const char *p = ml_vma_path(vs, v);

		if (v->dev_major != 0 || !*p || (p[0] == '[' && strncmp(p, "[anon_shmem:", 12)))
			continue;
		n = shmem_vma(ss, scan, vs, v);
		if (n >= 0) {
			c->swapped_pages += (uint64_t)n;
			c->shmem_swapped_pages += (uint64_t)n;
			continue;
		}
		if (swap_devices < 0)
			swap_devices = any_swap_device();
		c->swap_unknown = swap_devices;
	}
}
