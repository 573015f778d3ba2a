// SPDX-License-Identifier: MIT
/*
 * The swap of shared memory in snapshots. A swapped-out shmem page leaves
 * no trace in the page tables (the PTE is none; the swap entry is in the
 * file), so pagemap cannot count it, yet smaps' Swap does. A child maps
 * each kind of shmem (shared anonymous, memfd, SysV shm, a /dev/shm file
 * mapped whole and in part, a memfd mapped private and writable with
 * pages of its own), writes it and pushes it to swap with MADV_PAGEOUT;
 * each VMA's swapped_pages must equal its smaps Swap exactly, the totals
 * smaps_rollup's Swap. Then, for a snapshot that may not read the files
 * (not root), the swap of those VMAs must be reported unknown, not 0.
 * Without swap, a 64 MiB swap file of its own for the test's duration.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/swap.h>
#include <sys/syscall.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same on every architecture */
#endif

#include "harness.h"
#include "machine.h"
#include "memlens/format_snapshot.h"
#include "memlens/jsonw.h"
#include "memlens/snapshot.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define PG 4096UL
#define MB (1UL << 20)
#define NOBODY 65534

enum { SHANON, MEMFD, SYSV, DEVSHM, DEVSHM_PART, PRIV, PRIV_SHARED, NREG };
static const char *const reg_names[NREG] = { "shared-anon", "memfd",	   "sysv",
					     "devshm",	    "devshm-part", "memfd-private",
					     "memfd-shared" };
static uint64_t reg_start[NREG];
static pid_t child;
static int child_in = -1; /* the child exits when this closes */
static char shm_path[64];
static int shm_id = -1;

static void die(const char *what)
{
	printf("# child: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	_exit(1);
}

static unsigned char *map_fd(int fd, size_t len, off_t off, int prot, int flags)
{
	unsigned char *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void fill(unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += PG)
		p[i] = (unsigned char)(i / PG + 1);
}

/* The child: the mappings, written and paged out; their starts on @out. */
static void child_main(int out, int in, bool drop)
{
	unsigned char *p[NREG];
	int mfd = memfd_create("memlens-shm", 0), mfd2 = memfd_create("memlens-priv", 0);
	int dfd = open(shm_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	char c;

	if (mfd < 0 || mfd2 < 0 || dfd < 0 || ftruncate(mfd, 4 * MB) || ftruncate(mfd2, 4 * MB) ||
	    ftruncate(dfd, 4 * MB))
		die("memfd/open");
	p[SHANON] = mmap(NULL, 4 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p[SHANON] == MAP_FAILED)
		die("mmap");
	p[MEMFD] = map_fd(mfd, 4 * MB, 0, PROT_READ | PROT_WRITE, MAP_SHARED);
	p[SYSV] = shmat(shm_id, NULL, 0);
	if (p[SYSV] == (void *)-1)
		die("shmat");
	p[DEVSHM] = map_fd(dfd, 4 * MB, 0, PROT_READ | PROT_WRITE, MAP_SHARED);
	/* the middle 2 MiB of the same file, never touched here: its
	 * swap is that of its part of the file only */
	p[DEVSHM_PART] = map_fd(dfd, 2 * MB, (off_t)MB, PROT_READ, MAP_SHARED);
	p[PRIV_SHARED] = map_fd(mfd2, 4 * MB, 0, PROT_READ | PROT_WRITE, MAP_SHARED);
	p[PRIV] = map_fd(mfd2, 4 * MB, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	fill(p[SHANON], 4 * MB);
	fill(p[MEMFD], 4 * MB);
	fill(p[SYSV], 2 * MB);
	fill(p[DEVSHM], 4 * MB);
	fill(p[PRIV_SHARED], 4 * MB);
	/* pages of its own (copied on write) over the file's first 64 */
	fill(p[PRIV], 64 * PG);
	madvise(p[SHANON], 2 * MB, MADV_PAGEOUT);
	madvise(p[MEMFD], 4 * MB, MADV_PAGEOUT);
	madvise(p[SYSV], 2 * MB, MADV_PAGEOUT);
	madvise(p[DEVSHM], 4 * MB, MADV_PAGEOUT);
	madvise(p[PRIV_SHARED], 4 * MB, MADV_PAGEOUT);
	/* half of its own pages to swap too: swap entries in its page table */
	madvise(p[PRIV], 32 * PG, MADV_PAGEOUT);
	if (drop) {
		/* for the snapshot that may not open the files (see test_unknown) */
		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			die("setresuid");
		prctl(PR_SET_DUMPABLE, 1);
	}
	for (int i = 0; i < NREG; i++)
		dprintf(out, "%lx\n", (unsigned long)p[i]);
	close(out);
	while (read(in, &c, 1) > 0)
		;
	_exit(0);
}

static void stop_child(void)
{
	if (child_in >= 0)
		close(child_in);
	child_in = -1;
	if (child > 0)
		waitpid(child, NULL, 0);
	child = 0;
}

static void start_child(bool drop)
{
	int out[2], in[2];
	FILE *f;

	REQUIRE(pipe(out) == 0 && pipe(in) == 0);
	fflush(stdout);
	child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		close(out[0]);
		close(in[1]);
		child_main(out[1], in[0], drop);
	}
	T_CHILD(child);
	close(out[1]);
	close(in[0]);
	child_in = in[1];
	f = fdopen(out[0], "r");
	REQUIRE(f);
	for (int i = 0; i < NREG; i++) {
		unsigned long long a;

		REQUIRE_MSG(fscanf(f, "%llx", &a) == 1, "the child did not get ready");
		reg_start[i] = a;
	}
	fclose(f);
}

static void need_swap(void)
{
	if (!t_have_swap())
		SKIP("no swap device, and none could be made (%.120s): MADV_PAGEOUT cannot "
		     "swap shared memory out",
		     t_swap_why);
}

static void setup(bool drop)
{
	snprintf(shm_path, sizeof(shm_path), "/dev/shm/memlens-test-shm.%d", (int)getpid());
	/*
	 * In an IPC namespace of its own the segment's id is 0, and so is
	 * the inode /proc/PID/maps shows for it: the case of a server
	 * started in its own namespace, where the swap of the segment was
	 * once missed (taken for an anonymous mapping's inode 0).
	 */
	REQUIRE_MSG(unshare(CLONE_NEWIPC) == 0, "unshare(CLONE_NEWIPC): %s", strerror(errno));
	shm_id = shmget(IPC_PRIVATE, 2 * MB, IPC_CREAT | 0600);
	REQUIRE_MSG(shm_id == 0, "shmget in a new IPC namespace: id %d (%s)", shm_id,
		    shm_id < 0 ? strerror(errno) : "not 0");
	start_child(drop);
	/* the segment and the file live on in the child's mappings only */
	shmctl(shm_id, IPC_RMID, NULL);
	unlink(shm_path);
}

static void take(pid_t pid, enum ml_snap_method m, struct ml_snapshot *s)
{
	ML_OPTS(ml_snapshot_opts, o, .method = m);
	struct ml_snapshotter *sn;
	struct ml_err err = { 0 };
	int r = ml_snapshot_open(&sn, pid, &o, &err);

	REQUIRE_MSG(r == 0, "snapshot_open: %s", err.msg);
	r = ml_snapshot_take(sn, s, &err);
	ml_snapshot_close(sn);
	REQUIRE_MSG(r == 0, "snapshot_take: %s", err.msg);
}

static struct ml_snapshot s;

/* On a mismatch: what cachestat says of the region now, asked by the test itself. */
static void explain(int i, uint64_t start, uint64_t end)
{
	char path[96];
	struct {
		uint64_t off, len;
	} range = { 0, end - start };
	struct {
		uint64_t cache, dirty, writeback, evicted, recently_evicted;
	} cs = { 0 };
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)child,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(__NR_cachestat, fd, &range, &cs, 0) < 0)
		printf("#   %s: cachestat: %s\n", reg_names[i], strerror(errno));
	else
		printf("#   %s now: cachestat cache %llu evicted %llu writeback %llu; smaps Swap "
		       "%ld kB\n",
		       reg_names[i], (unsigned long long)cs.cache, (unsigned long long)cs.evicted,
		       (unsigned long long)cs.writeback, t_smaps_kb(child, start, false, "Swap"));
	if (fd >= 0)
		close(fd);
}

static void exact(enum ml_snap_method m)
{
	long before[NREG], after[NREG], roll;

	need_swap();
	ml_snapshot_init(&s);
	T_DEFER(ml_snapshot_free, &s);
	setup(false);
	T_DEFER(stop_child, NULL);
	for (int i = 0; i < NREG; i++)
		before[i] = t_smaps_kb(child, reg_start[i], false, "Swap");
	roll = t_smaps_kb(child, 0, true, "Swap");
	take(child, m, &s);
	for (int i = 0; i < NREG; i++)
		after[i] = t_smaps_kb(child, reg_start[i], false, "Swap");
	/* unchanged by the snapshot too: it never brings a page back from swap */
	REQUIRE_MSG(roll == t_smaps_kb(child, 0, true, "Swap"),
		    "the child's swap moved during the snapshot: nothing to compare");
	for (int i = 0; i < NREG; i++) {
		long v = ml_vma_find(&s.vmas, reg_start[i]);

		REQUIRE_MSG(v >= 0 && s.vmas.v[v].start == reg_start[i], "no VMA of %s",
			    reg_names[i]);
		REQUIRE_MSG(before[i] == after[i], "%s: smaps Swap moved", reg_names[i]);
		printf("# %-13s %-4s smaps Swap %6ld kB, snapshot %6llu kB (shmem %llu kB)\n",
		       reg_names[i], s.vmas.v[v].perms, after[i],
		       (unsigned long long)s.c[v].swapped_pages * 4,
		       (unsigned long long)s.c[v].shmem_swapped_pages * 4);
		if (s.c[v].swapped_pages * 4 != (uint64_t)after[i])
			explain(i, s.vmas.v[v].start, s.vmas.v[v].end);
		CHECK_EQ(s.c[v].swapped_pages * 4, after[i]);
		CHECK_EQ(s.c[v].swap_unknown, 0);
		/* MADV_PAGEOUT did swap something out of each (else this proves little) */
		CHECK(after[i] > 0);
	}
	CHECK_EQ(s.totals.swapped_pages * 4, roll);
	/* VmSwap counts the swap entries of the page tables only */
	CHECK_EQ((s.totals.swapped_pages - s.totals.shmem_swapped_pages) * 4, s.mm.vm_swap_kb);
	CHECK_EQ(s.totals.swap_unknown, 0);
}

static void test_shmem_swap_exact(void)
{
	exact(ML_SNAP_METHOD_AUTO);
}

static void test_shmem_swap_exact_pagemap_read(void)
{
	exact(ML_SNAP_METHOD_READ);
}

/*
 * Without the right to open the target's mapped files (not root), the
 * swap of its shmem VMAs cannot be read: each is marked unknown, in the
 * counts and in the JSON, and its swapped_pages is not a made-up 0 of
 * which nothing is said.
 */
static void test_shmem_swap_unknown(void)
{
	int res[2], st, counts[3] = { -1, -1, -1 };
	pid_t pid;

	need_swap();
	setup(true);
	T_DEFER(stop_child, NULL);
	REQUIRE(pipe(res) == 0);
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		ML_OPTS(ml_snapshot_opts, o);
		struct ml_snapshotter *sn;
		struct ml_err err = { 0 };
		struct ml_jw w;
		char *json = NULL;
		size_t len = 0;
		FILE *f;
		int c[3] = { 0, 0, 0 };

		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		/* no REQUIRE here: it would go on with the tests in this child */
		ml_snapshot_init(&s);
		if (ml_snapshot_open(&sn, child, &o, &err) || ml_snapshot_take(sn, &s, &err)) {
			printf("# as nobody: %s\n", err.msg);
			fflush(stdout);
			_exit(4);
		}
		for (int i = 0; i < NREG; i++) {
			long v = ml_vma_find(&s.vmas, reg_start[i]);

			c[0] += v >= 0 && s.c[v].swap_unknown == 1;
		}
		c[1] = (int)s.totals.swap_unknown;
		f = open_memstream(&json, &len);
		ml_jw_init(&w, f);
		ml_fmt_snapshot(&w, &s, NULL, 1, 0);
		fclose(f);
		c[2] = json && strstr(json, "\"swap_unknown_vmas\":1,") != NULL;
		if (write(res[1], c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(3);
		_exit(0);
	}
	T_CHILD(pid);
	close(res[1]);
	REQUIRE(read(res[0], counts, sizeof(counts)) == (ssize_t)sizeof(counts));
	close(res[0]);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* every one of them, the private mapping too (its file may hold swap) */
	CHECK_EQ(counts[0], NREG);
	CHECK(counts[1] >= NREG);
	CHECK_EQ(counts[2], 1);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip - shmem_swap: needs root (swapon, /proc/PID/map_files)\n");
		return T_DONE();
	}
	if (!t_have_swap()) {
		if (!t_swap_make()[0])
			printf("# no swap on this machine: using a 64 MiB swap file of its own, "
			       "%s\n",
			       t_swap_file);
	}
	RUN(test_shmem_swap_exact);
	RUN(test_shmem_swap_exact_pagemap_read);
	RUN(test_shmem_swap_unknown);
	t_swap_drop();
	return T_DONE();
}
