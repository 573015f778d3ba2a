// SPDX-License-Identifier: MIT
/*
 * wp_fault: what one tracked write costs the writer, without memlens: the
 * CPU time (CLOCK_THREAD_CPUTIME_ID) per page of writing one byte to each
 * page of an anonymous buffer that is
 *   present and writable   (no fault: the untracked rewrite)
 *   not present            (a first-touch fault: allocate and zero a page)
 *   write-protected        (an async userfaultfd write-protect fault, the
 *                           buffer registered and protected by PAGEMAP_SCAN
 *                           in this very process, as memlens does it from
 *                           outside)
 * and of a null system call and of the re-protecting PAGEMAP_SCAN itself
 * per page. Then sparse writes, as a process writing 1 MiB/s does them:
 * 3 pages every 10 ms, the whole thread's CPU time (its wakeups too) per
 * page, write-protected vs not: what a fault costs when it comes cold.
 * Nothing else runs in the process: no scan races the faults, no other
 * process is involved, so what is left is the fault itself.
 *   wp_fault [PAGES [ROUNDS]]   (default 4096 pages, 5 rounds; medians)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../lib/common/uapi.h"

#define PG 4096UL
#define MAX_ROUNDS 64

static double cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static double thread_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* CPU per page of writing @n pages 3 at a time, sleeping 10 ms in between */
static double sparse(volatile unsigned char *b, size_t n)
{
	double c = thread_us();
	struct timespec ts = { 0, 10000000L };

	for (size_t i = 0; i + 3 <= n; i += 3) {
		for (size_t j = i; j < i + 3; j++)
			b[j * PG] = (unsigned char)j;
		nanosleep(&ts, NULL);
	}
	return (thread_us() - c) / (double)(n / 3 * 3);
}

static void touch(volatile unsigned char *b, size_t n, int v)
{
	for (size_t i = 0; i < n; i++)
		b[i * PG] = (unsigned char)v;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return v[n / 2];
}

/* write-protect the written pages of [b, b + len) (and say how many there were) */
static long protect(int pm, unsigned char *b, size_t len)
{
	static struct page_region vec[1024];
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = (uintptr_t)b,
		.end = (uintptr_t)b + len,
		.vec = (uintptr_t)vec,
		.vec_len = 1024,
		.category_inverted = PAGE_IS_PFNZERO,
		.category_mask = PAGE_IS_PFNZERO | PAGE_IS_WRITTEN,
		.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		.return_mask = PAGE_IS_PRESENT | PAGE_IS_WRITTEN,
	};
	long n = ioctl(pm, PAGEMAP_SCAN, &a), pages = 0;

	for (long i = 0; i < n; i++)
		pages += (long)((vec[i].end - vec[i].start) / PG);
	return n < 0 ? -1 : pages;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double rew[MAX_ROUNDS], first[MAX_ROUNDS], wp[MAX_ROUNDS], scan[MAX_ROUNDS], sys;
	unsigned char *b;
	int uffd, pm;
	double c;

	if (!n || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: wp_fault [PAGES [ROUNDS (1..%d)]]\n", MAX_ROUNDS);
		return 2;
	}
	b = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED || madvise(b, n * PG, MADV_NOHUGEPAGE)) {
		perror("mmap");
		return 1;
	}
	c = cpu_us();
	for (int i = 0; i < 100000; i++)
		syscall(SYS_getppid);
	sys = (cpu_us() - c) / 100000;
	for (int r = 0; r < rounds; r++) {
		madvise(b, n * PG, MADV_DONTNEED);
		c = cpu_us();
		touch(b, n, r + 1);
		first[r] = (cpu_us() - c) / (double)n;
		c = cpu_us();
		touch(b, n, r + 2);
		rew[r] = (cpu_us() - c) / (double)n;
	}
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	struct uffdio_register reg = { .range = { (uintptr_t)b, n * PG },
				       .mode = UFFDIO_REGISTER_MODE_WP };
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    pm < 0) {
		perror("skip - wp_fault: no async userfaultfd write-protect here");
		return 0;
	}
	touch(b, n, 1);
	for (int r = 0; r < rounds; r++) {
		long k;

		c = cpu_us();
		k = protect(pm, b, n * PG);
		scan[r] = (cpu_us() - c) / (double)n;
		if (k != (long)n) {
			fprintf(stderr, "wp_fault: %ld of %zu pages written, expected all\n", k, n);
			return 1;
		}
		c = cpu_us();
		touch(b, n, r + 3);
		wp[r] = (cpu_us() - c) / (double)n;
	}
	double f = median(first, rounds), w = median(wp, rounds), rw = median(rew, rounds);
	size_t ns = n < 600 ? n : 600;
	double sp_rew, sp_wp;

	touch(b, ns, 1);
	sp_rew = sparse(b, ns);
	if (protect(pm, b, ns * PG) < 0) {
		perror("wp_fault: PAGEMAP_SCAN");
		return 1;
	}
	sp_wp = sparse(b, ns);

	printf("(a) CPU per page written, %zu pages, median of %d rounds, no profiler:\n", n,
	       rounds);
	printf("    rewrite (no fault)        %8.3f us\n", rw);
	printf("    first touch (zero fill)   %8.3f us\n", f);
	printf("    async write-protect fault %8.3f us  (%.2fx first touch, %.0fx rewrite)\n", w,
	       w / f, w / rw);
	printf("    re-protecting scan        %8.3f us  (PAGEMAP_SCAN, per written page, the "
	       "profiler's CPU)\n",
	       median(scan, rounds));
	printf("    null system call          %8.3f us\n", sys);
	printf("    sparse (3 pages per 10 ms, %zu pages, the thread's whole CPU per page): "
	       "%.1f us written, %.1f us write-protected: %.1f us per fault\n",
	       ns, sp_rew, sp_wp, sp_wp - sp_rew);
	return 0;
}
