/* SPDX-License-Identifier: MIT */
/*
 * How the workloads and the tests read memory they never wrote.
 *
 * What such a read maps depends on the machine: most kernels map the shared
 * zero page (or, in a MADV_HUGEPAGE region with THP on, the huge zero page),
 * which is not resident and not written; some map a fresh page instead
 * (hypervisor kernels booted with pvm_no_zero_page, architectures whose
 * mm_forbids_zeropage() is true, THP's use_zero_page off), which is resident
 * and, in a range tracked with async write-protect, reads as written. The
 * tests probe which (tests/machine.h) and assert the exact counts of each.
 *
 * MEMLENS_TEST_NO_ZERO_PAGE=1 makes a machine with the zero page behave like
 * one without it for these reads, so that both sets of expectations can be
 * run anywhere: each page that is not yet present is populated for write
 * first (MADV_POPULATE_WRITE: a fresh page, a huge one in a THP region, as
 * the fault without a zero page gives), then read. Pages already present are
 * only read, as on such a kernel. Only for anonymous private memory that is
 * not swapped out (a swapped page is not present either, and would be
 * replaced rather than swapped in).
 */
#ifndef MEMLENS_READ_UNTOUCHED_H
#define MEMLENS_READ_UNTOUCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static inline bool ru_zero_page_forced_off(void)
{
	const char *v = getenv("MEMLENS_TEST_NO_ZERO_PAGE");

	return v && *v && strcmp(v, "0") != 0;
}

/* Read the first byte of each of the n pages at p (page-aligned). */
static inline void ru_read_pages(volatile unsigned char *p, unsigned long n)
{
	const unsigned long pg = 4096;
	bool forced = ru_zero_page_forced_off();
	unsigned char sink = 0;

	for (unsigned long i = 0; i < n; i++) {
		if (forced) {
			unsigned char in = 0;

			if (mincore((void *)(p + i * pg), pg, &in) == 0 && !(in & 1))
				madvise((void *)(p + i * pg), pg, MADV_POPULATE_WRITE);
		}
		sink += p[i * pg];
	}
	(void)sink;
}

#endif
