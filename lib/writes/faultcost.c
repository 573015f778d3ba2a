// SPDX-License-Identifier: MIT
/*
 * What one tracked write fault costs on the running machine, measured once
 * on a scratch mapping of memlens's own: the CPU time of writing one byte
 * to each of its pages while they are write-protected (an async userfaultfd
 * write-protect fault each, as a tracked target takes them) less that of
 * writing them again once they are not. memlens/sample.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/uapi.h"
#include "../scan/pagescan.h"
#include "memlens/sample.h"

#define PG 4096UL

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t ml_wp_fault_ns_from(const uint64_t *wp_ns, const uint64_t *plain_ns, unsigned int rounds,
			     uint64_t pages)
{
	int64_t d[ML_FAULTCOST_ROUNDS_MAX], m;

	if (!wp_ns || !plain_ns || !rounds || rounds > ML_FAULTCOST_ROUNDS_MAX || !pages)
		return 0;
	for (unsigned int i = 0; i < rounds; i++)
		d[i] = (int64_t)wp_ns[i] - (int64_t)plain_ns[i];
	qsort(d, rounds, sizeof(d[0]), cmp_i64);
	/* the median round: an odd count its middle, an even one the mean of the two */
	m = rounds % 2 ? d[rounds / 2] : (d[rounds / 2 - 1] + d[rounds / 2]) / 2;
	if (m <= 0)
		return 0; /* no fault measured: the clock or the machine misled us */
	m = (m + (int64_t)pages / 2) / (int64_t)pages;
	return m > 0 ? (uint64_t)m : 1; /* under 1 ns a fault rounds to 1, not to "unmeasured" */
}

static uint64_t thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void touch(volatile unsigned char *b, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		b[i * PG] = v;
}

static uint64_t measure(void)
{
	const size_t n = ML_FAULTCOST_PAGES;
	uint64_t wp[ML_FAULTCOST_ROUNDS], plain[ML_FAULTCOST_ROUNDS], t0, t1, t2, r = 0;
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC };
	struct pagescan ps = { .fd = -1 };
	struct ml_err err;
	unsigned char *b;
	int uffd;

	b = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return 0;
	/* 4 KiB pages, as a tracked target's are once write-protected */
	madvise(b, n * PG, MADV_NOHUGEPAGE);
	touch(b, n, 1);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		goto out;
	struct uffdio_register reg = { .range = { (uintptr_t)b, n * PG },
				       .mode = UFFDIO_REGISTER_MODE_WP };

	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg))
		goto out;
	if (mli_pagescan_open(&ps, getpid(), 64, &err))
		goto out;
	/* a round more than counted: the first warms the page tables and the caches */
	for (int i = -1; i < ML_FAULTCOST_ROUNDS; i++) {
		/* every page written before, write-protected again */
		if (mli_pagescan_dirty(&ps, (uintptr_t)b, (uintptr_t)b + n * PG,
				       PAGESCAN_CHECK_REGISTERED, NULL, NULL, &err) != (long)n)
			goto out; /* not every page write-protected: nothing to measure */
		t0 = thread_ns();
		touch(b, n, (unsigned char)(i + 2));
		t1 = thread_ns();
		touch(b, n, (unsigned char)(i + 3));
		t2 = thread_ns();
		if (i >= 0) {
			wp[i] = t1 - t0;
			plain[i] = t2 - t1;
		}
	}
	r = ml_wp_fault_ns_from(wp, plain, ML_FAULTCOST_ROUNDS, n);
out:
	mli_pagescan_close(&ps);
	if (uffd >= 0)
		close(uffd);
	munmap(b, n * PG);
	return r;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t fault_ns;

static void measure_once(void)
{
	int e = errno;

	fault_ns = measure();
	errno = e;
}

uint64_t ml_wp_fault_ns(void)
{
	pthread_once(&once, measure_once);
	return fault_ns;
}
