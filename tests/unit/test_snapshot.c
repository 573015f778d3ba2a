// SPDX-License-Identifier: MIT
/*
 * Snapshot library on its own process (also run under ASan+UBSan):
 * exact counts of a mapping we shape ourselves, page flags, diff, copy.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "machine.h"
#include "memlens/snapshot.h"

#define PG 4096UL

static struct ml_snapshotter *open_self(bool pages)
{
	ML_OPTS(ml_snapshot_opts, o, .pages = pages);
	struct ml_snapshotter *sn = NULL;
	struct ml_err err = { 0 };
	int r = ml_snapshot_open(&sn, getpid(), &o, &err);

	if (r == -ENOTSUP)
		SKIP("%.200s", err.msg);
	REQUIRE_MSG(r == 0, "snapshot_open: %s", err.msg);
	return sn;
}

static void test_own_mapping_counts(void)
{
	unsigned char *p =
		mmap(NULL, 64 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ml_snapshotter *sn = open_self(false);
	bool zp = t_zero_page();
	struct ml_snapshot s;
	struct ml_err err = { 0 };
	long i;

	REQUIRE(p != MAP_FAILED);
	madvise(p, 64 * PG, MADV_NOHUGEPAGE); /* its own VMA, never merged */
	for (int k = 0; k < 10; k++)
		p[k * 2 * PG] = 1; /* 10 written pages */
	ru_read_pages(p + 40 * PG, 5); /* 5 reads: zero pages, or fresh ones without it */
	ml_snapshot_init(&s);
	REQUIRE_MSG(ml_snapshot_take(sn, &s, &err) == 0, "%s", err.msg);
	i = ml_vma_find(&s.vmas, (uintptr_t)p);
	REQUIRE(i >= 0);
	CHECK_EQ(s.vmas.v[i].start, (uintptr_t)p);
	CHECK_EQ(s.c[i].size_pages, 64);
	CHECK_EQ(s.c[i].resident_pages, zp ? 10 : 15);
	CHECK_EQ(s.c[i].zero_pages, zp ? 5 : 0);
	CHECK_EQ(s.c[i].swapped_pages, 0);
	CHECK(s.cycle_ns > 0);
	CHECK(s.scan_ioctls >= 1);
	CHECK(s.mm.vm_rss_kb > 0);
	CHECK(s.totals.resident_pages >= 10);
	CHECK(!(s.flags & ML_SNAP_HAVE_PAGES));
	ml_snapshot_close(sn);
	ml_snapshot_free(&s);
	munmap(p, 64 * PG);
}

static void test_page_flags_self(void)
{
	unsigned char *p =
		mmap(NULL, 32 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ml_snapshotter *sn;
	struct ml_snapshot s;
	struct ml_err err = { 0 };
	long i;

	if (geteuid() != 0)
		SKIP("page flags need root");
	sn = open_self(true);
	REQUIRE(p != MAP_FAILED);
	madvise(p, 32 * PG, MADV_NOHUGEPAGE);
	for (int k = 0; k < 12; k++)
		p[k * PG] = 1;
	ml_snapshot_init(&s);
	REQUIRE_MSG(ml_snapshot_take(sn, &s, &err) == 0, "%s", err.msg);
	CHECK(s.flags & ML_SNAP_HAVE_PAGES);
	i = ml_vma_find(&s.vmas, (uintptr_t)p);
	REQUIRE(i >= 0);
	CHECK_EQ(s.c[i].anon_pages, 12);
	CHECK_EQ(s.c[i].swapbacked_pages, 12);
	CHECK_EQ(s.c[i].shared_pages, 0);
	CHECK(s.flag_reads > 0);
	ml_snapshot_close(sn);
	ml_snapshot_free(&s);
	munmap(p, 32 * PG);
}

static void test_diff_and_copy(void)
{
	unsigned char *p;
	struct ml_snapshotter *sn = open_self(false);
	struct ml_snapshot a, b, c;
	struct ml_snapshot_diff d;
	struct ml_err err = { 0 };
	long i;

	ml_snapshot_init(&a);
	ml_snapshot_init(&b);
	ml_snapshot_init(&c);
	ml_snapshot_diff_init(&d);
	REQUIRE(ml_snapshot_take(sn, &a, &err) == 0);
	p = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	madvise(p, 16 * PG, MADV_NOHUGEPAGE);
	for (int k = 0; k < 16; k++)
		p[k * PG] = 1;
	REQUIRE(ml_snapshot_take(sn, &b, &err) == 0);
	REQUIRE(ml_snapshot_diff(&a, &b, &d) == 0);
	i = ml_vma_find(&b.vmas, (uintptr_t)p);
	REQUIRE(i >= 0);
	CHECK_EQ(d.n, b.vmas.n);
	CHECK_EQ(d.prev[i], -1);
	CHECK_EQ(d.d[i].resident_pages, 16);
	CHECK(d.added >= 1);
	CHECK(d.dt_ns > 0);
	REQUIRE(ml_snapshot_copy(&c, &b) == 0);
	CHECK_EQ(c.vmas.n, b.vmas.n);
	CHECK_EQ(c.c[i].resident_pages, 16);
	CHECK_STR(ml_vma_path(&c.vmas, &c.vmas.v[0]), ml_vma_path(&b.vmas, &b.vmas.v[0]));
	CHECK_EQ(ml_snapshot_set_written(&c, c.vmas.v[i].start, 7), 0);
	CHECK_EQ(c.totals.written_pages, 7);
	CHECK(c.flags & ML_SNAP_HAVE_WRITTEN);
	CHECK_EQ(ml_snapshot_set_written(&c, c.vmas.v[i].start + PG, 1), -ENOENT);
	munmap(p, 16 * PG);
	REQUIRE(ml_snapshot_take(sn, &a, &err) == 0);
	REQUIRE(ml_snapshot_diff(&b, &a, &d) == 0);
	CHECK(d.removed >= 1);
	i = ml_vma_find(&a.vmas, (uintptr_t)p);
	CHECK(i < 0 || a.vmas.v[i].start != (uintptr_t)p);
	ml_snapshot_close(sn);
	ml_snapshot_free(&a);
	ml_snapshot_free(&b);
	ml_snapshot_free(&c);
	ml_snapshot_diff_free(&d);
}

static void test_errors(void)
{
	struct ml_snapshotter *sn = NULL;
	struct ml_err err = { 0 };

	CHECK_EQ(ml_snapshot_open(&sn, 4194000, NULL, &err), -ESRCH);
	CHECK(strstr(err.msg, "no process") != NULL);
	CHECK(ml_snap_pct(1, 4) == 25.0);
	CHECK(ml_snap_pct(1, 0) == 0.0);
}

int main(void)
{
	t_say_machine();
	RUN(test_own_mapping_counts);
	RUN(test_page_flags_self);
	RUN(test_diff_and_copy);
	RUN(test_errors);
	return T_DONE();
}
