// SPDX-License-Identifier: MIT
/*
 * The snapshot collector against real processes (workloads/snaptarget):
 * exact resident / zero-page / file / huge counts of VMAs built for them,
 * per-VMA agreement with /proc/PID/smaps, totals vs smaps_rollup, region
 * kinds, page flags, diffs, spawn mode before main, uffd-wp markers not
 * counted as swap, target exit, and an untouched target. The tests of the
 * counts run again with the pagemap read forced (ML_SNAP_METHOD_READ, what a
 * kernel without PAGEMAP_SCAN gets), against smaps and the scan alike.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/swap.h>

#include "harness.h"
#include "machine.h"
#include "integration/target.h"
#include "../../lib/scan/pagescan.h"
#include "memlens/format_snapshot.h"
#include "memlens/jsonw.h"
#include "memlens/profiler.h"
#include "memlens/snapshot.h"
#include "memlens/spawn.h"

#define NAMES 13
static struct target T;
static const char *const names[NAMES] = { "data", "bss",  "heap",   "stack", "touch",
					  "zero", "file", "thp",    "swap",  "frag",
					  "huge", "big",  "libdata" };
static uint64_t addr[NAMES];
/* ML_SNAP_METHOD_READ for the runs that force the pagemap read */
static enum ml_snap_method method = ML_SNAP_METHOD_AUTO;
/* the target changes all the time: a snapshot may say it is not exact */
static bool churning;

static uint64_t A(const char *name)
{
	for (int i = 0; i < NAMES; i++)
		if (!strcmp(names[i], name))
			return addr[i];
	return 0;
}

/* Read "addr NAME 0xA N" lines up to "ready PID". */
static int read_addrs(FILE *out)
{
	char line[256], nm[32];
	unsigned long long a;
	unsigned long n;

	memset(addr, 0, sizeof(addr));
	while (fgets(line, sizeof(line), out)) {
		if (!strncmp(line, "ready", 5))
			return 0;
		if (sscanf(line, "addr %31s %llx %lu", nm, &a, &n) != 3)
			continue;
		for (int i = 0; i < NAMES; i++)
			if (!strcmp(names[i], nm))
				addr[i] = a;
	}
	return -1;
}

static void start(const char *touch)
{
	char *argv[] = { "snaptarget", (char *)touch, NULL };

	REQUIRE(target_start(&T, workload("snaptarget"), argv) == 0);
	REQUIRE_MSG(read_addrs(T.out) == 0, "snaptarget did not get ready");
}

static void stop(void)
{
	if (T.pid <= 0)
		return;
	fprintf(T.in, "exit\n");
	fclose(T.in);
	fclose(T.out);
	waitpid(T.pid, NULL, 0);
	T.pid = 0;
}

static void take_n(struct ml_snapshot *s, bool pages, unsigned int threads)
{
	ML_OPTS(ml_snapshot_opts, o, .pages = pages, .threads = threads, .method = method);
	struct ml_snapshotter *sn;
	struct ml_err err = { 0 };
	int r = ml_snapshot_open(&sn, T.pid, &o, &err);

	REQUIRE_MSG(r == 0, "snapshot_open: %s", err.msg);
	r = ml_snapshot_take(sn, s, &err);
	ml_snapshot_close(sn);
	REQUIRE_MSG(r == 0, "snapshot_take: %s", err.msg);
	/* the method asked for, else PAGEMAP_SCAN exactly where the kernel has it */
	CHECK_EQ(s->method, method == ML_SNAP_METHOD_READ ? ML_SNAP_METHOD_READ
			    : mli_pagescan_supported()	  ? ML_SNAP_METHOD_SCAN
							  : ML_SNAP_METHOD_READ);
	CHECK(!(s->flags & ML_SNAP_PFN_HIDDEN)); /* root: the frames are shown */
	/* the targets hold still: every count must agree with the kernel */
	if (!churning && !s->exact)
		T_FAILMSG("not exact: %s (counted %llu kB, RSS %lld kB before, %lld kB after)",
			  ml_snap_check_text(s->check),
			  (unsigned long long)s->totals.resident_pages * 4,
			  (long long)s->rss_before_kb, (long long)s->rss_after_kb);
}

/* The tests of the PAGEMAP_SCAN walk itself (threads, counting scan). */
static void need_scan(void)
{
	if (method == ML_SNAP_METHOD_READ)
		SKIP("the pagemap read has no page-table walk of its own to test");
	if (!mli_pagescan_supported())
		SKIP("this kernel has no PAGEMAP_SCAN (Linux 6.7+): snapshots read pagemap, "
		     "with one thread and no counting scan");
}

static void take(struct ml_snapshot *s, bool pages)
{
	take_n(s, pages, 1);
}

static long idx(const struct ml_snapshot *s, uint64_t a)
{
	long i = ml_vma_find(&s->vmas, a);

	REQUIRE_MSG(i >= 0, "no VMA contains 0x%llx", (unsigned long long)a);
	return i;
}

static void set_false(bool *b)
{
	*b = false;
}

static void test_resident_exact(void)
{
	struct ml_snapshot s;

	ml_snapshot_init(&s);
	start("100");
	take(&s, false);
	long i = idx(&s, A("touch"));
	CHECK_EQ(s.vmas.v[i].start, A("touch"));
	CHECK_EQ(s.c[i].size_pages, 256);
	CHECK_EQ(s.c[i].resident_pages, 100);
	CHECK_EQ(s.c[i].zero_pages, 0);
	CHECK_EQ(s.c[i].file_pages, 0);
	CHECK_EQ(s.c[i].swapped_pages, 0);
	CHECK_STR(ml_vma_kind_name(s.vmas.v[i].kind), "anon");
	stop();
	ml_snapshot_free(&s);
}

static void test_zero_file_pages(void)
{
	struct ml_snapshot s;

	ml_snapshot_init(&s);
	start("7");
	take(&s, false);
	long z = idx(&s, A("zero")), f = idx(&s, A("file"));
	bool zp = t_zero_page(); /* else each read mapped a fresh page */
	CHECK_EQ(s.c[z].zero_pages, zp ? 40 : 0);
	CHECK_EQ(s.c[z].resident_pages, zp ? 0 : 40);
	CHECK_EQ(s.c[z].resident_pages * 4, (uint64_t)t_smaps_kb(T.pid, A("zero"), false, "Rss"));
	CHECK_EQ(s.c[f].size_pages, 32);
	CHECK_EQ(s.c[f].file_pages, 32);
	CHECK_EQ(s.c[f].resident_pages, 32);
	CHECK_STR(ml_vma_kind_name(s.vmas.v[f].kind), "file");
	CHECK_EQ(s.c[idx(&s, A("touch"))].resident_pages, 7);
	stop();
	ml_snapshot_free(&s);
}

static void test_huge_pages(void)
{
	struct ml_snapshot s;
	long thp_kb;

	ml_snapshot_init(&s);
	start("1");
	take(&s, false);
	long h = idx(&s, A("thp"));
	thp_kb = t_smaps_kb(T.pid, s.vmas.v[h].start, false, "AnonHugePages");
	if (thp_kb <= 0) {
		stop();
		ml_snapshot_free(&s);
		SKIP("the kernel gave the MADV_HUGEPAGE region no huge page (THP %s)",
		     thp_kb < 0 ? "unreadable" : "unavailable or fragmented memory");
	}
	CHECK_EQ(s.c[h].huge_pages, thp_kb / 4);
	CHECK_EQ(s.c[h].resident_pages, t_smaps_kb(T.pid, s.vmas.v[h].start, false, "Rss") / 4);
	CHECK(s.totals.huge_pages >= s.c[h].huge_pages);
	stop();
	ml_snapshot_free(&s);
}

static void swapped_pages(void)
{
	struct ml_snapshot s;

	ml_snapshot_init(&s);
	start("1");
	REQUIRE(A("swap"));
	take(&s, false);
	long w = idx(&s, A("swap"));
	CHECK_EQ(s.c[w].swapped_pages, t_smaps_kb(T.pid, s.vmas.v[w].start, false, "Swap") / 4);
	CHECK(s.c[w].swapped_pages > 0);
	CHECK_EQ(s.c[w].swapped_pages + s.c[w].resident_pages, 64);
	stop();
	ml_snapshot_free(&s);
}

static void test_swapped_pages(void)
{
	if (!t_have_swap())
		SKIP("no swap device on this machine, and none could be made (%.120s): "
		     "MADV_PAGEOUT cannot swap pages out",
		     t_swap_why);
	swapped_pages();
}

/* Runs everywhere: swapped pages agree with the kernel's VmSwap counter. */
static void test_swapped_matches_vmswap(void)
{
	struct ml_snapshot s;

	ml_snapshot_init(&s);
	start("50");
	take(&s, false);
	CHECK(s.mm.vm_swap_kb >= 0);
	CHECK_EQ(s.totals.swapped_pages * 4, s.mm.vm_swap_kb);
	stop();
	ml_snapshot_free(&s);
}

/* Write tracking leaves uffd-wp markers on untouched pages: not swap. */
static void test_wp_markers_not_swapped(void)
{
	struct ml_snapshot s;
	struct ml_profiler *p = NULL;
	struct ml_err err = { 0 };

	ml_snapshot_init(&s);
	start("50");
	int r = ml_profiler_open(&p, T.pid, NULL, &err);
	if (r) {
		stop();
		SKIP("write tracking unavailable here: %.200s", err.msg);
	}
	take(&s, false);
	CHECK_EQ(s.totals.swapped_pages * 4, s.mm.vm_swap_kb);
	CHECK_EQ(s.c[idx(&s, A("touch"))].resident_pages, 50);
	ml_profiler_close(p);
	stop();
	ml_snapshot_free(&s);
}

/* --writes: written pages of a cycle, as cmd_snapshot attributes them. */
static void test_written_pages(void)
{
	struct ml_snapshot s;
	struct ml_profiler *p = NULL;
	struct ml_profiler_sample ps;
	struct ml_err err = { 0 };

	ml_snapshot_init(&s);
	start("10");
	int r = ml_profiler_open(&p, T.pid, NULL, &err);
	if (r) {
		stop();
		SKIP("write tracking unavailable here: %.200s", err.msg);
	}
	REQUIRE(ml_profiler_tick(p, &ps, &err) == 0);
	ml_profiler_sample_free(&ps);
	const char *ans = target_cmd(&T, "touch 20");
	REQUIRE(ans && !strcmp(ans, "touched 30"));
	take(&s, false);
	REQUIRE_MSG(ml_profiler_tick(p, &ps, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < ps.nregions; i++)
		ml_snapshot_set_written(&s, ps.regions[i].start, ps.regions[i].dirty_pages);
	ml_profiler_sample_free(&ps);
	long t = idx(&s, A("touch"));
	CHECK(s.flags & ML_SNAP_HAVE_WRITTEN);
	CHECK_EQ(s.c[t].written_pages, 20);
	CHECK_EQ(s.c[t].resident_pages, 30);
	CHECK(s.totals.written_pages >= 20);
	CHECK_EQ(s.kinds[ML_VMA_ANON].written_pages >= 20, 1);
	ml_profiler_close(p);
	stop();
	ml_snapshot_free(&s);
}

static void test_per_vma_matches_smaps(void)
{
	struct ml_snapshot s;
	int bad = 0;

	ml_snapshot_init(&s);
	start("100");
	take(&s, false);
	for (size_t i = 0; i < s.vmas.n; i++) {
		long rss = t_smaps_kb(T.pid, s.vmas.v[i].start, false, "Rss");

		if (rss < 0 || (uint64_t)rss != s.c[i].resident_pages * 4) {
			if (bad++ < 5)
				T_FAILMSG("VMA %llx %s: smaps Rss %ld kB, snapshot %llu pages",
					  (unsigned long long)s.vmas.v[i].start,
					  ml_vma_path(&s.vmas, &s.vmas.v[i]), rss,
					  (unsigned long long)s.c[i].resident_pages);
		}
	}
	CHECK_EQ(bad, 0);
	stop();
	ml_snapshot_free(&s);
}

/*
 * One-thread snapshot of a target that has stopped changing: right after its
 * "ready" line it still runs a little (stdio buffers, the dynamic linker
 * resolving pause() reads libc's symbol tables: file pages fault in).
 */
static void take_settled(struct ml_snapshot *one, struct ml_snapshot *tmp)
{
	take_n(one, false, 1);
	for (int tries = 0; tries < 50; tries++) {
		usleep(20000);
		take_n(tmp, false, 1);
		if (tmp->vmas.n == one->vmas.n &&
		    !memcmp(&one->totals, &tmp->totals, sizeof(one->totals)))
			return;
		take_n(one, false, 1);
	}
}

/* Walking the page tables with 2..8 threads gives exactly the counts of one. */
static void test_threads_same_counts(void)
{
	static const unsigned int nt[] = { 2, 3, 5, 8 };
	struct ml_snapshot one, par;

	need_scan();
	ml_snapshot_init(&one);
	ml_snapshot_init(&par);
	start("100");
	/* the target allocates stdin's buffer once it reads (one heap page) */
	take_settled(&one, &par);
	CHECK_EQ(one.scan_threads, 1);
	for (size_t k = 0; k < sizeof(nt) / sizeof(nt[0]); k++) {
		take_n(&par, false, nt[k]);
		CHECK_EQ(par.scan_threads, nt[k]);
		REQUIRE_MSG(par.vmas.n == one.vmas.n, "%u threads: %zu VMAs, one thread %zu", nt[k],
			    par.vmas.n, one.vmas.n);
		for (size_t i = 0; i < one.vmas.n; i++)
			for (size_t f = 0; f < sizeof(one.c[i]) / 8; f++)
				if (((uint64_t *)&one.c[i])[f] != ((uint64_t *)&par.c[i])[f])
					T_FAILMSG("%u threads: VMA %llx %s field %zu: %llu, one "
						  "thread %llu",
						  nt[k], (unsigned long long)one.vmas.v[i].start,
						  ml_vma_kind_name(one.vmas.v[i].kind), f,
						  (unsigned long long)((uint64_t *)&par.c[i])[f],
						  (unsigned long long)((uint64_t *)&one.c[i])[f]);
		CHECK(!memcmp(&one.totals, &par.totals, sizeof(one.totals)));
	}
	stop();
	ml_snapshot_free(&one);
	ml_snapshot_free(&par);
}

/*
 * The counting scan (only uncommon pages reported, the rest derived) agrees
 * with the scan of --pages, which enumerates every present page.
 */
static void test_counting_scan_matches_full(void)
{
	struct ml_snapshot cnt, full;
	int bad = 0;

	need_scan();
	ml_snapshot_init(&cnt);
	ml_snapshot_init(&full);
	start("100");
	/*
	 * Settled: two snapshots in a row counted the same. The first of them
	 * may still have counted again while the target was finishing its
	 * set-up (slow on a loaded machine); the one after them must not.
	 */
	take_settled(&full, &cnt);
	take_n(&cnt, false, 1);
	take_n(&full, true, 1);
	REQUIRE(full.vmas.n == cnt.vmas.n);
	for (size_t i = 0; i < cnt.vmas.n; i++) {
		const struct ml_snap_counts *a = &cnt.c[i], *b = &full.c[i];

		if (a->resident_pages != b->resident_pages || a->file_pages != b->file_pages ||
		    a->zero_pages != b->zero_pages || a->huge_pages != b->huge_pages ||
		    a->swapped_pages != b->swapped_pages) {
			if (bad++ < 5)
				T_FAILMSG("VMA %llx %s: counting rss/file/zero/huge "
					  "%llu/%llu/%llu/%llu, "
					  "full %llu/%llu/%llu/%llu",
					  (unsigned long long)cnt.vmas.v[i].start,
					  ml_vma_kind_name(cnt.vmas.v[i].kind),
					  (unsigned long long)a->resident_pages,
					  (unsigned long long)a->file_pages,
					  (unsigned long long)a->zero_pages,
					  (unsigned long long)a->huge_pages,
					  (unsigned long long)b->resident_pages,
					  (unsigned long long)b->file_pages,
					  (unsigned long long)b->zero_pages,
					  (unsigned long long)b->huge_pages);
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(cnt.recounts, 0); /* a still target: no reason to count again */
	/* the thp VMA has huge pages, the zero VMA zero pages (where reads map it) */
	CHECK_EQ(cnt.c[idx(&cnt, A("zero"))].zero_pages, t_zero_page() ? 40 : 0);
	CHECK(cnt.c[idx(&cnt, A("file"))].file_pages > 0);
	stop();
	ml_snapshot_free(&cnt);
	ml_snapshot_free(&full);
}

/*
 * The pagemap read and the PAGEMAP_SCAN walk count the same, field by field,
 * with and without page flags, on every VMA of a target that holds resident,
 * zero, file, huge and (with swap) swapped pages. The target holds still,
 * but the kernel ages page flags on its own (referenced, active, LRU: page
 * reclaim, other processes touching shared pages): the read is taken
 * between two scans, and a flag count that the two scans agree on must be
 * the read's; one that changed between them must be one of the two.
 */
static void test_read_matches_scan(void)
{
	struct ml_snapshot scan, rd, scan2;
	const size_t first_flag = offsetof(struct ml_snap_counts, dirty_pages) / 8;
	int bad = 0, moved = 0;

	if (!mli_pagescan_supported())
		SKIP("this kernel has no PAGEMAP_SCAN to compare the pagemap read with");
	ml_snapshot_init(&scan);
	ml_snapshot_init(&rd);
	ml_snapshot_init(&scan2);
	start("100");
	take_settled(&scan, &rd);
	for (int pages = 0; pages < 2; pages++) {
		method = ML_SNAP_METHOD_SCAN;
		take_n(&scan, pages, 1);
		method = ML_SNAP_METHOD_READ;
		take_n(&rd, pages, 1);
		method = ML_SNAP_METHOD_SCAN;
		take_n(&scan2, pages, 1);
		method = ML_SNAP_METHOD_AUTO;
		REQUIRE(scan.vmas.n == rd.vmas.n && scan2.vmas.n == rd.vmas.n);
		CHECK_EQ(rd.method, ML_SNAP_METHOD_READ);
		CHECK(rd.pagemap_reads > 0);
		for (size_t i = 0; i < scan.vmas.n; i++)
			for (size_t f = 0; f < sizeof(scan.c[i]) / 8; f++) {
				uint64_t a = ((uint64_t *)&scan.c[i])[f],
					 b = ((uint64_t *)&scan2.c[i])[f],
					 r = ((uint64_t *)&rd.c[i])[f];

				if (f >= first_flag && a != b && (r == a || r == b)) {
					moved++;
					continue;
				}
				if ((a != r || b != r) && bad++ < 8)
					T_FAILMSG("%s: VMA %llx %s field %zu: read %llu, "
						  "scans before and after %llu, %llu",
						  pages ? "--pages" : "counts",
						  (unsigned long long)scan.vmas.v[i].start,
						  ml_vma_path(&scan.vmas, &scan.vmas.v[i]), f,
						  (unsigned long long)r, (unsigned long long)a,
						  (unsigned long long)b);
			}
	}
	if (moved)
		printf("# %d page-flag counts changed between the scans around the read\n", moved);
	CHECK_EQ(bad, 0);
	CHECK_EQ(rd.c[idx(&rd, A("zero"))].zero_pages, t_zero_page() ? 40 : 0);
	CHECK(rd.c[idx(&rd, A("file"))].file_pages > 0);
	stop();
	ml_snapshot_free(&scan);
	ml_snapshot_free(&rd);
	ml_snapshot_free(&scan2);
}

/*
 * A read of an untouched 2 MiB-aligned, MADV_HUGEPAGE region. Where THP and
 * its zero page are on, it maps the huge zero page: not resident (smaps' Rss
 * leaves it out), 512 zero pages, not huge, not file, with either method.
 * Where they are not, it maps what t_huge_read() found (the small zero page,
 * a fresh huge page or a fresh page), counted exactly as smaps counts it.
 * The test snapshots its own process.
 */
static void test_huge_zero_page(void)
{
	enum t_huge_read kind = t_huge_read();
	void *raw;
	size_t rawlen;
	unsigned char *a = t_map_isolated(T_2M, T_2M, &raw, &rawlen);
	struct ml_snapshot s;
	long i, rss, ahp;
	pid_t saved = T.pid;

	REQUIRE(a);
	madvise(a, T_2M, MADV_HUGEPAGE);
	ru_read_pages(a, 1);
	T.pid = getpid();
	/* its own process: the snapshot's own allocations may move the RSS it checks */
	churning = true;
	T_DEFER(set_false, &churning);
	ml_snapshot_init(&s);
	take(&s, false);
	T.pid = saved;
	i = idx(&s, (uint64_t)(uintptr_t)a);
	rss = t_smaps_kb(getpid(), s.vmas.v[i].start, false, "Rss");
	ahp = t_smaps_kb(getpid(), s.vmas.v[i].start, false, "AnonHugePages");
	printf("# a read here maps %s: %llu zero, %llu resident, %llu huge pages "
	       "(smaps: Rss %ld kB, AnonHugePages %ld kB)\n",
	       t_huge_read_name(kind), (unsigned long long)s.c[i].zero_pages,
	       (unsigned long long)s.c[i].resident_pages, (unsigned long long)s.c[i].huge_pages,
	       rss, ahp);
	CHECK_EQ(s.c[i].resident_pages * 4, (uint64_t)rss);
	CHECK_EQ(s.c[i].huge_pages * 4, (uint64_t)ahp);
	CHECK_EQ(s.c[i].file_pages, 0); /* no page cache either */
	switch (kind) {
	case T_HUGE_ZERO_PAGE:
		CHECK_EQ(s.c[i].zero_pages, 512);
		CHECK_EQ(s.c[i].resident_pages, 0);
		break;
	case T_SMALL_ZERO_PAGE:
		CHECK_EQ(s.c[i].zero_pages, 1);
		CHECK_EQ(s.c[i].resident_pages, 0);
		break;
	case T_FRESH_HUGE_PAGE:
		CHECK_EQ(s.c[i].zero_pages, 0);
		CHECK_EQ(s.c[i].resident_pages, 512);
		CHECK_EQ(s.c[i].huge_pages, 512);
		break;
	case T_FRESH_PAGE:
		CHECK_EQ(s.c[i].zero_pages, 0);
		CHECK_EQ(s.c[i].resident_pages, 1);
		break;
	}
	ml_snapshot_free(&s);
	munmap(raw, rawlen);
}

/*
 * A VMA unmapped while the scan runs must not be counted as resident (the
 * counting scan derives resident pages from sizes): mapchurn maps 64 MiB,
 * touches one page and unmaps it, thousands of times a second, so its
 * resident memory never comes near 64 MiB (VmHWM says so).
 */
static void test_vmas_changing_during_scan(void)
{
	char *argv[] = { "mapchurn", "64", NULL };
	struct ml_snapshot s;
	char line[128];
	int over = 0, n = 300, recounted = 0;
	uint64_t worst = 0;

	ml_snapshot_init(&s);
	REQUIRE(target_start(&T, workload("mapchurn"), argv) == 0);
	REQUIRE(fgets(line, sizeof(line), T.out) && !strncmp(line, "ready", 5));
	churning = true;
	T_DEFER(set_false, &churning);
	for (int i = 0; i < n; i++) {
		take_n(&s, false, 1);
		recounted += s.recounts > 0;
		if (s.totals.resident_pages * 4 > (uint64_t)s.mm.vm_hwm_kb + 1024) {
			over++;
			if (s.totals.resident_pages * 4 > worst)
				worst = s.totals.resident_pages * 4;
		}
	}
	printf("# %d of %d snapshots of mapchurn counted more than VmHWM + 1 MiB (worst %llu kB, "
	       "VmHWM %lld kB); %d were recounted\n",
	       over, n, (unsigned long long)worst, (long long)s.mm.vm_hwm_kb, recounted);
	CHECK_EQ(over, 0);
	target_stop(&T);
	T.pid = 0;
	ml_snapshot_free(&s);
}

/* Cuts inside big VMAs (bigmap: 192 MiB in 3 VMAs, 4 threads): still exact. */
static void test_threads_split_vmas(void)
{
	char *argv[] = { "bigmap", "192", "3", NULL };
	struct ml_snapshot one, par;
	char line[128];

	need_scan();
	ml_snapshot_init(&one);
	ml_snapshot_init(&par);
	REQUIRE(target_start(&T, workload("bigmap"), argv) == 0);
	REQUIRE(fgets(line, sizeof(line), T.out) && !strncmp(line, "ready", 5));
	take_settled(&one, &par);
	take_n(&par, false, 4);
	CHECK_EQ(par.scan_threads, 4);
	CHECK(one.totals.resident_pages >= 192 * 256);
	CHECK_EQ(par.totals.resident_pages, one.totals.resident_pages);
	REQUIRE(par.vmas.n == one.vmas.n);
	for (size_t i = 0; i < one.vmas.n; i++)
		CHECK_EQ(par.c[i].resident_pages, one.c[i].resident_pages);
	/* automatic: one thread per 256 MiB, at most half the CPUs we may use */
	take_n(&par, false, 0);
	CHECK(par.scan_threads >= 1 && par.scan_threads <= 2);
	CHECK_EQ(par.totals.resident_pages, one.totals.resident_pages);
	target_stop(&T);
	T.pid = 0;
	ml_snapshot_free(&one);
	ml_snapshot_free(&par);
}

static void test_totals_vs_rollup(void)
{
	struct ml_snapshot s;
	long rss;

	ml_snapshot_init(&s);
	start("200");
	take(&s, false);
	rss = t_smaps_kb(T.pid, 0, true, "Rss");
	REQUIRE(rss > 0);
	long ours = (long)s.totals.resident_pages * 4;
	if (labs(ours - rss) * 100 > rss)
		T_FAILMSG("resident %ld kB vs smaps_rollup Rss %ld kB: more than 1 %% apart", ours,
			  rss);
	CHECK(labs(ours - s.mm.vm_rss_kb) * 100 <= s.mm.vm_rss_kb);
	stop();
	ml_snapshot_free(&s);
}

static void test_region_kinds(void)
{
	struct ml_snapshot s;
	bool libc = false, vdso = false;

	ml_snapshot_init(&s);
	start("1");
	take(&s, false);
	CHECK_STR(ml_vma_kind_name(s.vmas.v[idx(&s, A("data"))].kind), "data");
	CHECK_STR(ml_vma_kind_name(s.vmas.v[idx(&s, A("bss") + 32 * 4096)].kind), "bss");
	CHECK_STR(ml_vma_kind_name(s.vmas.v[idx(&s, A("heap"))].kind), "heap");
	CHECK_STR(ml_vma_kind_name(s.vmas.v[idx(&s, A("stack"))].kind), "stack");
	for (size_t i = 0; i < s.vmas.n; i++) {
		const char *p = ml_vma_path(&s.vmas, &s.vmas.v[i]);

		if (strstr(p, "libc.so") && s.vmas.v[i].perms[2] == 'x')
			libc = s.vmas.v[i].kind == ML_VMA_LIB_TEXT;
		if (!strcmp(p, "[vdso]"))
			vdso = s.vmas.v[i].kind == ML_VMA_VDSO;
		if (!strcmp(p, "[heap]"))
			CHECK_STR(ml_vma_kind_name(s.vmas.v[i].kind), "heap");
	}
	CHECK(libc);
	CHECK(vdso);
	CHECK_EQ(s.kinds[ML_VMA_BSS].resident_pages, 0);
	CHECK(s.kinds[ML_VMA_TEXT].resident_pages > 0);
	stop();
	ml_snapshot_free(&s);
}

static void test_page_flags(void)
{
	struct ml_snapshot s;

	ml_snapshot_init(&s);
	start("100");
	take(&s, true);
	REQUIRE(s.flags & ML_SNAP_HAVE_PAGES);
	long t = idx(&s, A("touch")), f = idx(&s, A("file"));
	CHECK_EQ(s.c[t].anon_pages, 100);
	CHECK_EQ(s.c[t].swapbacked_pages, 100);
	CHECK_EQ(s.c[t].shared_pages, 0);
	CHECK_EQ(s.c[f].anon_pages, 0);
	CHECK(s.c[t].lru_pages <= 100);
	CHECK(s.totals.anon_pages <= s.totals.resident_pages);
	stop();
	ml_snapshot_free(&s);
}

static void test_diff_after_touch(void)
{
	struct ml_snapshot a, b;
	struct ml_snapshot_diff d;

	ml_snapshot_init(&a);
	ml_snapshot_init(&b);
	ml_snapshot_diff_init(&d);
	start("10");
	take(&a, false);
	const char *ans = target_cmd(&T, "touch 20");
	REQUIRE(ans && !strcmp(ans, "touched 30"));
	take(&b, false);
	REQUIRE(ml_snapshot_diff(&a, &b, &d) == 0);
	long i = idx(&b, A("touch"));
	CHECK(d.prev[i] >= 0);
	CHECK_EQ(d.d[i].resident_pages, 20);
	CHECK_EQ(b.c[i].resident_pages, 30);
	CHECK_EQ(d.added, 0);
	CHECK_EQ(d.removed, 0);
	REQUIRE(ml_snapshot_diff(NULL, &b, &d) == 0);
	CHECK_EQ(d.added, b.vmas.n);
	CHECK_EQ(d.totals.resident_pages, (int64_t)b.totals.resident_pages);
	stop();
	ml_snapshot_free(&a);
	ml_snapshot_free(&b);
	ml_snapshot_diff_free(&d);
}

static char proc_state(pid_t pid, int *tracer)
{
	char path[64], line[256], st = '?';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6))
			sscanf(line, "State: %c", &st);
		if (!strncmp(line, "TracerPid:", 10))
			*tracer = atoi(line + 10);
	}
	if (f)
		fclose(f);
	return st;
}

static void test_target_unaffected(void)
{
	struct ml_snapshot a, b;
	struct ml_snapshot_diff d;
	struct ml_snapshotter *sn;
	struct ml_err err = { 0 };
	ML_OPTS(ml_snapshot_opts, o, .pages = true, .method = method);
	int tracer = -1;

	ml_snapshot_init(&a);
	ml_snapshot_init(&b);
	ml_snapshot_diff_init(&d);
	start("100");
	/* one round trip first: its first read of stdin allocates stdio's buffer */
	REQUIRE(target_cmd(&T, "check") != NULL);
	long rss0 = t_smaps_kb(T.pid, 0, true, "Rss");
	REQUIRE(ml_snapshot_open(&sn, T.pid, &o, &err) == 0);
	REQUIRE(ml_snapshot_take(sn, &a, &err) == 0);
	for (int i = 0; i < 50; i++)
		REQUIRE_MSG(ml_snapshot_take(sn, &b, &err) == 0, "%s", err.msg);
	ml_snapshot_close(sn);
	REQUIRE(ml_snapshot_diff(&a, &b, &d) == 0);
	CHECK_EQ(d.totals.resident_pages, 0);
	CHECK_EQ(d.totals.zero_pages, 0);
	CHECK_EQ(d.added + d.removed, 0);
	CHECK_EQ(t_smaps_kb(T.pid, 0, true, "Rss"), rss0);
	char st = proc_state(T.pid, &tracer);
	CHECK(st == 'S' || st == 'R');
	CHECK_EQ(tracer, 0);
	const char *ans = target_cmd(&T, "check");
	CHECK(ans && !strcmp(ans, "check ok"));
	stop();
	ml_snapshot_free(&a);
	ml_snapshot_free(&b);
	ml_snapshot_diff_free(&d);
}

static void test_exited_target(void)
{
	struct ml_snapshotter *sn;
	struct ml_snapshot s;
	struct ml_err err = { 0 };
	pid_t pid;

	ml_snapshot_init(&s);
	start("1");
	pid = T.pid;
	REQUIRE(ml_snapshot_open(&sn, pid,
				 &(struct ml_snapshot_opts){ .sz = sizeof(struct ml_snapshot_opts),
							     .method = method },
				 &err) == 0);
	stop();
	CHECK_EQ(ml_snapshot_take(sn, &s, &err), -ESRCH);
	CHECK(strstr(err.msg, "exited") != NULL);
	ml_snapshot_close(sn);
	CHECK_EQ(ml_snapshot_open(&sn, pid,
				  &(struct ml_snapshot_opts){ .sz = sizeof(struct ml_snapshot_opts),
							      .method = method },
				  &err),
		 -ESRCH);
	ml_snapshot_free(&s);
}

static bool has_path(const struct ml_snapshot *s, const char *needle)
{
	for (size_t i = 0; i < s->vmas.n; i++)
		if (strstr(ml_vma_path(&s->vmas, &s->vmas.v[i]), needle))
			return true;
	return false;
}

/* Spawn mode: the first cycle is taken at exec, before the loader and main. */
static void test_spawn_before_main(void)
{
	char *argv[] = { (char *)workload("snaptarget"), "5", NULL };
	struct ml_snapshotter *sn;
	struct ml_snapshot s;
	struct ml_err err = { 0 };
	int to[2], from[2], save0 = dup(0), save1 = dup(1);
	pid_t pid;

	ml_snapshot_init(&s);
	REQUIRE(pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0);
	fflush(stdout);
	dup2(to[0], 0);
	dup2(from[1], 1);
	pid = ml_spawn_stopped(argv, &err);
	dup2(save0, 0);
	dup2(save1, 1);
	close(save0);
	close(save1);
	close(to[0]);
	close(from[1]);
	REQUIRE_MSG(pid > 0, "spawn_stopped: %s", err.msg);
	T_CHILD(pid);
	REQUIRE(ml_snapshot_open(&sn, pid,
				 &(struct ml_snapshot_opts){ .sz = sizeof(struct ml_snapshot_opts),
							     .method = method },
				 &err) == 0);
	REQUIRE_MSG(ml_snapshot_take(sn, &s, &err) == 0, "%s", err.msg);
	CHECK(!has_path(&s, "libc.so"));
	CHECK(!has_path(&s, "[heap]"));
	CHECK(!has_path(&s, "snaptarget."));
	CHECK(s.kinds[ML_VMA_TEXT].size_pages > 0);
	CHECK(s.kinds[ML_VMA_STACK].resident_pages > 0);
	REQUIRE(ml_spawn_release(pid, &err) == 0);
	FILE *out = fdopen(from[0], "r");
	REQUIRE(read_addrs(out) == 0);
	REQUIRE_MSG(ml_snapshot_take(sn, &s, &err) == 0, "%s", err.msg);
	CHECK(has_path(&s, "libc.so"));
	CHECK_EQ(s.c[idx(&s, A("touch"))].resident_pages, 5);
	ml_snapshot_close(sn);
	close(to[1]); /* EOF: it exits */
	fclose(out);
	waitpid(pid, NULL, 0);
	ml_snapshot_free(&s);
}

/* One VMA of /proc/PID/smaps: its Rss and its huge mappings (THP, file PMDs, hugetlb), in kB. */
struct smaps_vma {
	uint64_t start;
	long rss, huge;
};

/* smaps of @pid into @v (at most @max VMAs); their number, or -1. */
static int smaps_read(pid_t pid, struct smaps_vma *v, int max)
{
	static const char *const huge_keys[] = { "AnonHugePages:", "ShmemPmdMapped:",
						 "FilePmdMapped:", "Shared_Hugetlb:",
						 "Private_Hugetlb:" };
	char path[64], line[512];
	unsigned long long a, b;
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *sp = strchr(line, ' ');

		/* a header ("start-end perms ..."), not a "Key: value" line */
		if (sp && sp[-1] != ':' && sscanf(line, "%llx-%llx ", &a, &b) == 2) {
			if (n + 1 == max)
				break;
			v[++n] = (struct smaps_vma){ .start = a };
		} else if (n >= 0 && !strncmp(line, "Rss:", 4)) {
			v[n].rss = strtol(line + 4, NULL, 10);
		} else if (n >= 0) {
			for (size_t k = 0; k < sizeof(huge_keys) / sizeof(huge_keys[0]); k++)
				if (!strncmp(line, huge_keys[k], strlen(huge_keys[k])))
					v[n].huge += strtol(line + strlen(huge_keys[k]), NULL, 10);
		}
	}
	fclose(f);
	return n + 1;
}

/*
 * Every VMA of @s against smaps of the same, stopped, process: the same
 * VMAs, never more resident pages than the VMA has, exactly smaps' Rss and
 * huge pages; the totals exactly smaps_rollup's.
 */
static void check_vs_smaps(const struct ml_snapshot *s, const char *what)
{
	static struct smaps_vma v[1024];
	int n = smaps_read(T.pid, v, 1024);
	long rss = 0, huge = 0;

	REQUIRE_MSG(n > 0, "%s: cannot read smaps", what);
	CHECK_EQ(s->vmas.n, n);
	for (int i = 0; i < n && (size_t)i < s->vmas.n; i++) {
		const struct ml_snap_counts *c = &s->c[i];

		rss += v[i].rss;
		huge += v[i].huge;
		if (s->vmas.v[i].start != v[i].start || c->resident_pages > c->size_pages ||
		    (long)c->resident_pages * 4 != v[i].rss || (long)c->huge_pages * 4 != v[i].huge)
			T_FAILMSG("%s: VMA %llx (%s, %llu pages): %llu resident, %llu huge; smaps "
				  "%llx: Rss %ld kB, huge %ld kB",
				  what, (unsigned long long)s->vmas.v[i].start,
				  ml_vma_path(&s->vmas, &s->vmas.v[i]),
				  (unsigned long long)c->size_pages,
				  (unsigned long long)c->resident_pages,
				  (unsigned long long)c->huge_pages, (unsigned long long)v[i].start,
				  v[i].rss, v[i].huge);
	}
	CHECK_EQ(t_smaps_kb(T.pid, 0, true, "Rss"), rss);
	CHECK_EQ((long)s->totals.resident_pages * 4, rss);
	CHECK_EQ((long)s->totals.huge_pages * 4, huge);
	printf("# %s: %llu kB resident, %llu kB huge; smaps %ld kB, %ld kB; %u recounts\n", what,
	       (unsigned long long)s->totals.resident_pages * 4,
	       (unsigned long long)s->totals.huge_pages * 4, rss, huge, s->recounts);
}

static void resume(void *pid)
{
	kill((pid_t)(intptr_t)pid, SIGCONT);
}

/* Stop the target (SIGSTOP) until the test ends: smaps and the snapshots see the same memory. */
static void hold_still(void)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)T.pid);
	REQUIRE(kill(T.pid, SIGSTOP) == 0);
	T_DEFER(resume, (intptr_t)T.pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "re");
		char *p = f && fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;

		if (f)
			fclose(f);
		if (p && p[2] == 'T')
			return;
		usleep(2000);
	}
	REQUIRE_MSG(0, "the target did not stop");
}

/* The target's "layout DIR MB" mappings (workloads/snaptarget.c). */
static void layout(const char *dir, unsigned int mb)
{
	fprintf(T.in, "layout %s %u\n", dir, mb);
	fflush(T.in);
	REQUIRE_MSG(read_addrs(T.out) == 0, "snaptarget did not lay out its mappings");
	REQUIRE(A("frag") && A("libdata") && A("big"));
}

static char huge_dir[64];

static void huge_umount(void *unused)
{
	(void)unused;
	umount2(huge_dir, MNT_DETACH);
	rmdir(huge_dir);
	huge_dir[0] = '\0';
}

/*
 * A tmpfs mounted with huge=always: its files are kept in 2 MiB pages and
 * mapped by PMDs where aligned (ShmemPmdMapped in smaps), which is what a
 * file of huge page-cache pages looks like to the page-table walk. "" when
 * mounted, else why not.
 */
static const char *huge_mount(void)
{
	static char why[160];

	snprintf(huge_dir, sizeof(huge_dir), "/tmp/memlens-huge.XXXXXX");
	if (!mkdtemp(huge_dir)) {
		snprintf(why, sizeof(why), "cannot make a directory in /tmp: %s", strerror(errno));
		return why;
	}
	if (mount("memlens-huge", huge_dir, "tmpfs", 0, "huge=always,size=48m")) {
		snprintf(why, sizeof(why), "cannot mount a tmpfs with huge=always: %s",
			 strerror(errno));
		rmdir(huge_dir);
		return why;
	}
	T_DEFER(huge_umount, NULL);
	return "";
}

/*
 * A file of huge page-cache pages (32 MiB, PMD-mapped) behind a mapping
 * whose scan returns more than 512 ranges, walked by 1 to 4 threads: each
 * count is exactly smaps' Rss and huge pages, VMA by VMA. Before, a resumed
 * scan counted ranges twice: 4 threads found 59392 kB of huge pages where
 * smaps had 36864, with --pages 133560 kB resident where it had 111032.
 */
static void test_huge_file_threads_exact(void)
{
	static const unsigned int nt[] = { 1, 2, 3, 4 };
	const char *why = huge_mount();
	struct ml_snapshot s;
	char what[64];
	long pmd;

	if (why[0])
		SKIP("%s", why);
	ml_snapshot_init(&s);
	start("1");
	layout(huge_dir, 64);
	REQUIRE(A("huge"));
	pmd = t_smaps_kb(T.pid, A("huge"), false, "ShmemPmdMapped") +
	      t_smaps_kb(T.pid, A("huge"), false, "FilePmdMapped");
	if (pmd <= 0) {
		stop();
		ml_snapshot_free(&s);
		SKIP("the kernel mapped a file of a huge=always tmpfs with 4 KiB pages "
		     "(ShmemPmdMapped %ld kB): no huge page-cache pages here",
		     pmd);
	}
	hold_still();
	for (int pages = 0; pages < 2; pages++)
		for (size_t k = 0; k < sizeof(nt) / sizeof(nt[0]); k++) {
			snprintf(what, sizeof(what), "%u thread(s)%s", nt[k],
				 pages ? ", --pages" : "");
			take_n(&s, pages, nt[k]);
			check_vs_smaps(&s, what);
			CHECK_EQ(s.c[idx(&s, A("huge"))].huge_pages * 4, pmd);
		}
	resume((void *)(intptr_t)T.pid);
	stop();
	ml_snapshot_free(&s);
}

/*
 * A library's 4-page data VMA right before a big anonymous one, behind a
 * mapping whose scan returns more than 512 ranges: with --pages (and
 * without), no VMA counts more resident pages than it has, each is exactly
 * smaps' Rss. Before, --pages counted the 4 pages twice (8), and the total
 * was 16 kB over VmRSS, unchecked.
 */
static void test_pages_vma_not_over_size(void)
{
	struct ml_snapshot s;
	char what[64];

	ml_snapshot_init(&s);
	start("1");
	layout("-", 64);
	hold_still();
	for (int pages = 1; pages >= 0; pages--)
		for (unsigned int t = 1; t <= 2; t++) {
			snprintf(what, sizeof(what), "%u thread(s)%s", t, pages ? ", --pages" : "");
			take_n(&s, pages, t);
			check_vs_smaps(&s, what);
			CHECK_EQ(s.c[idx(&s, A("libdata"))].resident_pages, 4);
			CHECK_EQ(s.c[idx(&s, A("big"))].resident_pages, 64 * 256);
		}
	resume((void *)(intptr_t)T.pid);
	stop();
	ml_snapshot_free(&s);
}

/*
 * A target whose memory never holds still (mapchurn): a snapshot either
 * agrees with the kernel (counted = RSS before = RSS after) and says it is
 * exact, or says it is not, why, after every attempt, in the JSON too.
 */
static void test_not_exact_says_so(void)
{
	char *argv[] = { "mapchurn", "64", NULL };
	int n = 0, not_exact = 0, exact = 0;
	char line[128], *buf = NULL;
	struct ml_snapshot s;
	size_t len = 0;

	ml_snapshot_init(&s);
	REQUIRE(target_start(&T, workload("mapchurn"), argv) == 0);
	REQUIRE(fgets(line, sizeof(line), T.out) && !strncmp(line, "ready", 5));
	churning = true;
	T_DEFER(set_false, &churning);
	for (; n < 5000 && (not_exact < 3 || n < 200); n++) {
		int64_t rss;

		take_n(&s, n % 2, 1);
		rss = s.mm.rss_kb + (s.mm.hugetlb_kb > 0 ? s.mm.hugetlb_kb : 0);
		if (s.exact) {
			exact++;
			CHECK_EQ(s.check, ML_SNAP_CHECK_EXACT);
			CHECK_EQ((int64_t)s.totals.resident_pages * 4, s.rss_before_kb);
			CHECK_EQ(s.rss_after_kb, s.rss_before_kb);
			CHECK_EQ(rss, s.rss_after_kb);
			continue;
		}
		not_exact++;
		CHECK(s.check != ML_SNAP_CHECK_EXACT && ml_snap_check_text(s.check)[0]);
		CHECK_EQ(s.recounts, 2); /* every attempt was made */
		if (s.check == ML_SNAP_CHECK_RSS_CHANGED)
			CHECK(s.rss_before_kb != s.rss_after_kb);
		if (s.check == ML_SNAP_CHECK_COUNT_DIFFERS)
			CHECK((int64_t)s.totals.resident_pages * 4 != s.rss_before_kb);
		if (not_exact == 1) {
			FILE *f = open_memstream(&buf, &len);
			struct ml_jw w;

			REQUIRE(f);
			ml_jw_init(&w, f);
			ml_fmt_snapshot(&w, &s, NULL, 1, 0);
			fclose(f);
			CHECK(strstr(buf, "\"exact\":false,\"not_exact_because\":\""));
			printf("# not exact: %s\n", ml_snap_check_text(s.check));
			free(buf);
		}
	}
	/*
	 * How many race the churn depends on the machine's speed (none in an
	 * emulated guest): what is asserted is that each is one or the other
	 */
	printf("# %d snapshots of mapchurn: %d exact, %d said they were not%s\n", n, exact,
	       not_exact, not_exact ? "" : " (the not-exact path was not reached here)");
	target_stop(&T);
	T.pid = 0;
	ml_snapshot_free(&s);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip - test_snapshot: needs root (page flags, other processes' pagemap)\n");
		return 0;
	}
	t_say_machine();
	RUN(test_resident_exact);
	RUN(test_zero_file_pages);
	RUN(test_huge_pages);
	/* with swap on, also for the uffd-wp markers that look like swap entries */
	if (!t_have_swap()) {
		if (!t_swap_make()[0])
			printf("# no swap on this machine: using a 64 MiB swap file of its own, "
			       "%s\n",
			       t_swap_file);
	}
	RUN(test_swapped_pages);
	RUN(test_swapped_matches_vmswap);
	RUN(test_wp_markers_not_swapped);
	t_swap_drop();
	RUN(test_written_pages);
	RUN(test_per_vma_matches_smaps);
	RUN(test_threads_same_counts);
	RUN(test_counting_scan_matches_full);
	RUN(test_vmas_changing_during_scan);
	RUN(test_threads_split_vmas);
	RUN(test_huge_file_threads_exact);
	RUN(test_pages_vma_not_over_size);
	RUN(test_not_exact_says_so);
	RUN(test_totals_vs_rollup);
	RUN(test_region_kinds);
	RUN(test_page_flags);
	RUN(test_diff_after_touch);
	RUN(test_target_unaffected);
	RUN(test_exited_target);
	RUN(test_spawn_before_main);
	/* the counts again with the pagemap read forced */
	RUN(test_read_matches_scan);
	RUN(test_huge_zero_page);
	method = ML_SNAP_METHOD_READ;
	t_run("pagemap_read_huge_zero_page", test_huge_zero_page);
	t_run("pagemap_read_resident_exact", test_resident_exact);
	t_run("pagemap_read_zero_file_pages", test_zero_file_pages);
	t_run("pagemap_read_huge_pages", test_huge_pages);
	if (!t_have_swap()) {
		if (!t_swap_make()[0])
			printf("# a 64 MiB swap file again: %s\n", t_swap_file);
	}
	t_run("pagemap_read_swapped_pages", test_swapped_pages);
	t_run("pagemap_read_swapped_matches_vmswap", test_swapped_matches_vmswap);
	t_swap_drop();
	t_run("pagemap_read_per_vma_matches_smaps", test_per_vma_matches_smaps);
	t_run("pagemap_read_vmas_changing_during_read", test_vmas_changing_during_scan);
	t_run("pagemap_read_huge_file_exact", test_huge_file_threads_exact);
	t_run("pagemap_read_vma_not_over_size", test_pages_vma_not_over_size);
	t_run("pagemap_read_not_exact_says_so", test_not_exact_says_so);
	t_run("pagemap_read_totals_vs_rollup", test_totals_vs_rollup);
	t_run("pagemap_read_region_kinds", test_region_kinds);
	t_run("pagemap_read_page_flags", test_page_flags);
	t_run("pagemap_read_diff_after_touch", test_diff_after_touch);
	t_run("pagemap_read_target_unaffected", test_target_unaffected);
	t_run("pagemap_read_exited_target", test_exited_target);
	t_run("pagemap_read_spawn_before_main", test_spawn_before_main);
	method = ML_SNAP_METHOD_AUTO;
	stop();
	return T_DONE();
}
