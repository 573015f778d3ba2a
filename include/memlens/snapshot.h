/* SPDX-License-Identifier: MIT */
/*
 * Per-VMA memory snapshots,
 * from user space: /proc/PID/maps for the VMAs, one PAGEMAP_SCAN category
 * query over the whole address space for resident / swapped / file /
 * zero-page / huge pages, cachestat(2) on the files of shared memory VMAs
 * for their swap (not in the page tables), /proc/PID/status for the mm
 * counters and, only
 * when asked, /proc/kpageflags + /proc/kpagecount for the page structures
 * of the present pages. Where the kernel has no PAGEMAP_SCAN (before 6.7),
 * or when asked to, the counts come from reading every VMA's entries of
 * /proc/PID/pagemap instead (ML_SNAP_METHOD_READ: slower, same counts).
 */
#ifndef MEMLENS_SNAPSHOT_H
#define MEMLENS_SNAPSHOT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "memlens/opts.h"
#include "memlens/maps.h"

/* Page counts of one VMA, one region kind, or the whole process. */
struct ml_snap_counts {
	uint64_t size_pages;
	uint64_t resident_pages; /* present, own page frame (the zero page excluded, as in Rss) */
	uint64_t swapped_pages; /* as smaps' Swap: swap entries, and shmem pages in swap */
	uint64_t file_pages; /* present and not anonymous (page cache, shmem) */
	uint64_t huge_pages; /* present and mapped by a huge page (THP, hugetlb) */
	uint64_t zero_pages; /* mapped to the shared zero page */
	uint64_t written_pages; /* written since the previous cycle (write tracking) */
	/* with page flags (ml_snapshot_opts.pages), over resident pages */
	uint64_t dirty_pages; /* PG_dirty */
	uint64_t referenced_pages;
	uint64_t active_pages;
	uint64_t lru_pages;
	uint64_t anon_pages;
	uint64_t swapbacked_pages;
	uint64_t shared_pages; /* mapcount > 1 */
	/*
	 * The part of swapped_pages that is shmem's (tmpfs, shared anonymous,
	 * memfd, SysV shm): in the file, not in a page table, so not in
	 * VmSwap; smaps' Swap counts it.
	 */
	uint64_t shmem_swapped_pages;
	/* VMAs whose shmem swap could not be read (per VMA: 0 or 1):
	 * their swapped_pages is a lower bound */
	uint64_t swap_unknown;
	/*
	 * With ML_SNAP_HAVE_SMAPS, from /proc/PID/smaps (kB, as pmap -X and smem
	 * show them): Rss, Pss, Pss_Dirty, USS = Private_Clean +
	 * Private_Dirty, Dirty = Shared_Dirty + Private_Dirty (pmap -x's
	 * "Dirty": the page table's dirty bit or PG_dirty).
	 */
	uint64_t smaps_rss_kb, pss_kb, pss_dirty_kb, uss_kb, dirty_kb;
};

/* /proc/PID/status, in kB; -1 when the kernel does not report it. */
struct ml_snap_mm {
	int64_t vm_size_kb;
	int64_t vm_rss_kb;
	int64_t rss_anon_kb;
	int64_t rss_file_kb;
	int64_t rss_shmem_kb;
	int64_t vm_swap_kb;
	int64_t vm_hwm_kb;
	int64_t hugetlb_kb; /* HugetlbPages: mapped hugetlbfs pages, not in VmRSS */
	/*
	 * What a count is checked against: VmRSS, or smaps_rollup's Rss before
	 * Linux 6.2, whose VmRSS lags (per-thread counters synced every 64
	 * events)
	 */
	int64_t rss_kb;
};

enum {
	ML_SNAP_HAVE_PAGES = 1 << 0, /* page-flag counts are filled in */
	ML_SNAP_HAVE_WRITTEN = 1 << 1, /* written_pages is filled in */
	/* ML_SNAP_METHOD_READ without page frame numbers (not CAP_SYS_ADMIN):
	 * zero pages count as resident, huge pages are not told apart */
	ML_SNAP_PFN_HIDDEN = 1 << 2,
	ML_SNAP_HAVE_SMAPS = 1 << 3, /* the smaps fields of snap_counts are filled in */
};

/* How the page counts are collected. */
enum ml_snap_method {
	ML_SNAP_METHOD_AUTO, /* PAGEMAP_SCAN where the kernel has it, else READ */
	ML_SNAP_METHOD_SCAN, /* the PAGEMAP_SCAN ioctl (Linux 6.7+) */
	ML_SNAP_METHOD_READ, /* a read of every VMA's /proc/PID/pagemap entries */
};

/* "pagemap_scan", "pagemap_read" (or "auto"). */
const char *ml_snap_method_name(enum ml_snap_method m);

/*
 * Whether a snapshot is verified exact and, if not, why: what went wrong
 * in the last of its attempts (see ml_snapshot_take()).
 */
enum ml_snap_check {
	ML_SNAP_CHECK_EXACT, /* the counts are the kernel's: exact */
	ML_SNAP_CHECK_MAPS_CHANGED, /* the memory map changed during the count */
	ML_SNAP_CHECK_RSS_CHANGED, /* the process's RSS changed during the count */
	ML_SNAP_CHECK_COUNT_DIFFERS, /* the pages counted resident are not the process's RSS */
	ML_SNAP_CHECK_NO_RSS, /* the kernel reports no RSS to check the count against */
};

/* One sentence for a snap_check ("" for ML_SNAP_CHECK_EXACT). */
const char *ml_snap_check_text(enum ml_snap_check c);

struct ml_snapshot {
	pid_t pid;
	uint64_t t_ns; /* CLOCK_MONOTONIC when the cycle started */
	uint64_t cycle_ns; /* how long collecting it took */
	unsigned int flags; /* SNAP_HAVE_*, ML_SNAP_PFN_HIDDEN */
	enum ml_snap_method method; /* SCAN or READ: how this cycle was counted */
	struct ml_vma_set vmas; /* classified, sorted by start */
	struct ml_snap_counts *c; /* one per VMA, parallel to vmas.v */
	size_t c_cap;
	struct ml_snap_counts totals;
	struct ml_snap_counts kinds[ML_VMA_KIND_COUNT];
	struct ml_snap_mm mm;
	uint64_t scan_ioctls; /* PAGEMAP_SCAN calls of this cycle */
	unsigned int scan_threads; /* threads that walked the page tables */
	unsigned int recounts; /* counts redone: the last one did not agree with the kernel */
	/*
	 * Verified exact: the maps text was the same before and after the
	 * count, and the pages counted resident equal the RSS (VmRSS +
	 * HugetlbPages) read before and after it. When no attempt agreed,
	 * false, and check says what went wrong in the last one.
	 */
	bool exact;
	enum ml_snap_check check;
	int64_t rss_before_kb, rss_after_kb; /* of the attempt taken; -1: not reported */
	uint64_t flag_reads; /* kpageflags/kpagecount preads of this cycle */
	uint64_t smaps_ns; /* reading /proc/PID/smaps (ml_snapshot_add_smaps) */
	/* smaps VMAs that matched no VMA of the count (the map changed between
	 * the two reads): their numbers are left out */
	uint64_t smaps_unmatched;
	uint64_t pagemap_reads; /* ML_SNAP_METHOD_READ: pagemap + kpageflags preads of this cycle */
};

struct ml_snapshot_opts {
	size_t sz; /* sizeof(struct ml_snapshot_opts): memlens/opts.h */
	bool pages; /* read kpageflags/kpagecount for present pages (needs root) */
	/*
	 * Threads walking the page tables: 0 = automatic (one per 256 MiB
	 * mapped, at most half the CPUs we may run on and ML_SNAPSHOT_MAX_THREADS).
	 */
	unsigned int threads;
	enum ml_snap_method method; /* AUTO (0), or one forced */
};

#define ML_SNAPSHOT_MAX_THREADS 8

struct ml_snapshotter;

/*
 * Open the target's maps, pagemap and status files (kept open across
 * cycles). -ESRCH: no such process; -EACCES/-EPERM: not allowed;
 * -ENOTSUP: ML_SNAP_METHOD_SCAN asked for and no PAGEMAP_SCAN (Linux < 6.7)
 * or, with pages, no kpageflags.
 */
int ml_snapshot_open(struct ml_snapshotter **out, pid_t pid, const struct ml_snapshot_opts *o,
		     struct ml_err *err);
void ml_snapshot_close(struct ml_snapshotter *s);

/* One collection cycle into @out (reused: its buffers are kept). -ESRCH: the target exited. */
int ml_snapshot_take(struct ml_snapshotter *s, struct ml_snapshot *out, struct ml_err *err);

void ml_snapshot_init(struct ml_snapshot *s);
void ml_snapshot_free(struct ml_snapshot *s);
/* Deep copy; -ENOMEM. */
int ml_snapshot_copy(struct ml_snapshot *dst, const struct ml_snapshot *src);

/*
 * Add what /proc/PID/smaps says of each VMA of @s: PSS, USS, Dirty (see
 * struct ml_snap_counts). The kernel computes them in one more walk of the
 * page tables (with each page's map count): exact, and 20 to 140 ms for
 * 1 GiB resident in 4 KiB pages (bench/figures.sh), where the count itself
 * takes 1 to 1.3 ms;
 * so it is asked for, not done by ml_snapshot_take(). Read after the
 * count: a VMA that came or went meanwhile is left out and counted in
 * smaps_unmatched. 0; -ESRCH when the process is gone; another -errno.
 */
int ml_snapshot_add_smaps(struct ml_snapshot *s, struct ml_err *err);

/*
 * Record @pages written in the VMA starting at @start (from the write
 * profiler) and add them to the kind and total counts. -ENOENT when no
 * VMA of the snapshot starts there.
 */
int ml_snapshot_set_written(struct ml_snapshot *s, uint64_t start, uint64_t pages);

/* Signed changes of the page counts. */
struct ml_snap_dcounts {
	int64_t size_pages, resident_pages, swapped_pages, file_pages, huge_pages, zero_pages;
};

struct ml_snapshot_diff {
	long *prev; /* per VMA of the newer snapshot: index in the older, or -1 (new) */
	struct ml_snap_dcounts *d; /* per VMA of the newer snapshot (a new VMA: its own counts) */
	size_t n, cap;
	size_t added, removed; /* VMAs that appeared / disappeared (matched by start address) */
	struct ml_snap_dcounts totals;
	int64_t dt_ns; /* time between the two cycles */
};

void ml_snapshot_diff_init(struct ml_snapshot_diff *d);
void ml_snapshot_diff_free(struct ml_snapshot_diff *d);
/* Compare @cur with @old (NULL: everything is new). -ENOMEM. */
int ml_snapshot_diff(const struct ml_snapshot *old, const struct ml_snapshot *cur,
		     struct ml_snapshot_diff *out);

/* 100 * part / whole, 0 when whole is 0. */
double ml_snap_pct(uint64_t part, uint64_t whole);

#pragma GCC visibility pop

#endif
