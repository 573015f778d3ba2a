/* SPDX-License-Identifier: MIT */
/*
 * Probes of the machine properties that exact expectations depend on. Each
 * measures the property on the machine the test runs on, with the kernel's
 * own accounting (smaps, pagemap's present bit) rather than with memlens,
 * so that a test asserts the exact value for this machine, whatever the
 * developer's machine does.
 *
 *   t_zero_page()       a read of untouched anonymous memory maps the zero page
 *   t_huge_read()       what such a read maps in an aligned MADV_HUGEPAGE region
 *   t_smaps_kb()        one field of one VMA of /proc/PID/smaps
 *   t_have_swap()       a swap device is on; t_swap_make()/t_swap_drop() add a
 *                       swap file of the test's own where there is none
 *
 * Reads go through ru_read_pages() (workloads/read_untouched.h), as the
 * workloads' do, so MEMLENS_TEST_NO_ZERO_PAGE=1 changes the probe and the
 * workloads alike.
 */
#ifndef MEMLENS_TEST_MACHINE_H
#define MEMLENS_TEST_MACHINE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/swap.h>
#include <unistd.h>

#include "../workloads/read_untouched.h"

#define T_2M (2UL << 20)

/*
 * FIELD's kB ("Rss", "Swap", ...) in /proc/PID/smaps for the VMA starting
 * at @start, or in smaps_rollup with @rollup; -1 if absent.
 */
static inline long t_smaps_kb(pid_t pid, uintptr_t start, bool rollup, const char *field)
{
	char path[64], line[512];
	size_t flen = strlen(field);
	bool in = rollup;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, rollup ? "smaps_rollup" : "smaps");
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		/* a VMA's first line (no field name is a hex number and a '-') */
		if (!rollup && sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = s == start;
			continue;
		}
		if (in && !strncmp(line, field, flen) && line[flen] == ':') {
			v = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* A rw anonymous VMA of exactly len bytes at an align-aligned address, between PROT_NONE gaps. */
static inline unsigned char *t_map_isolated(size_t len, size_t align, void **raw, size_t *rawlen)
{
	*rawlen = len + 2 * align + 2 * 4096;
	*raw = mmap(NULL, *rawlen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*raw == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)*raw + 4096 + align - 1) & ~(uintptr_t)(align - 1);
	if (mprotect((void *)a, len, PROT_READ | PROT_WRITE)) {
		munmap(*raw, *rawlen);
		return NULL;
	}
	return (unsigned char *)a;
}

/*
 * Whether a read of an untouched anonymous page maps the shared zero page:
 * smaps leaves the zero page out of Rss, a fresh page is in it.
 */
static inline bool t_zero_page(void)
{
	static int known = -1;
	void *raw;
	size_t rawlen;
	unsigned char *p;

	if (known >= 0)
		return known;
	p = t_map_isolated(4096, 4096, &raw, &rawlen);
	if (!p)
		return true;
	madvise(p, 4096, MADV_NOHUGEPAGE);
	ru_read_pages(p, 1);
	known = t_smaps_kb(getpid(), (uintptr_t)p, false, "Rss") == 0;
	munmap(raw, rawlen);
	return known;
}

enum t_huge_read {
	T_HUGE_ZERO_PAGE, /* the huge zero page: 512 zero pages, none resident */
	T_SMALL_ZERO_PAGE, /* the zero page, one page (THP off here, or its zero page) */
	T_FRESH_HUGE_PAGE, /* a fresh huge page: 512 resident, huge pages */
	T_FRESH_PAGE, /* a fresh 4 KiB page */
};

static inline const char *t_huge_read_name(enum t_huge_read r)
{
	switch (r) {
	case T_HUGE_ZERO_PAGE:
		return "the huge zero page";
	case T_SMALL_ZERO_PAGE:
		return "the zero page, not the huge one (THP off, or its zero page disabled)";
	case T_FRESH_HUGE_PAGE:
		return "a fresh huge page (no huge zero page on this machine)";
	default:
		return "a fresh 4 KiB page (no zero page and no THP on this machine)";
	}
}

/* present bit of the pagemap entry of addr in this process */
static inline bool t_present(uintptr_t addr)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &e, sizeof(e), (off_t)(addr / 4096 * 8)) != (ssize_t)sizeof(e))
		e = 0;
	close(fd);
	return e >> 63;
}

/*
 * What one read at the start of an untouched, 2 MiB-aligned 2 MiB
 * MADV_HUGEPAGE region maps: with Rss 0, the huge zero page maps all 512
 * pages (the next page is present too), the small one only the page read;
 * otherwise AnonHugePages tells a fresh huge page from a fresh small one.
 */
static inline enum t_huge_read t_huge_read(void)
{
	static int known = -1;
	void *raw;
	size_t rawlen;
	unsigned char *p;
	long rss, ahp;

	if (known >= 0)
		return (enum t_huge_read)known;
	p = t_map_isolated(T_2M, T_2M, &raw, &rawlen);
	if (!p)
		return T_FRESH_PAGE;
	madvise(p, T_2M, MADV_HUGEPAGE);
	ru_read_pages(p, 1);
	rss = t_smaps_kb(getpid(), (uintptr_t)p, false, "Rss");
	ahp = t_smaps_kb(getpid(), (uintptr_t)p, false, "AnonHugePages");
	if (rss == 0)
		known = t_present((uintptr_t)p + 4096) ? T_HUGE_ZERO_PAGE : T_SMALL_ZERO_PAGE;
	else
		known = ahp >= 2048 ? T_FRESH_HUGE_PAGE : T_FRESH_PAGE;
	munmap(raw, rawlen);
	return (enum t_huge_read)known;
}

static inline bool t_have_swap(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n > 1;
}

/*
 * Without swap, a 64 MiB swap file of the test's own for its duration
 * (/var/tmp, mkswap, swapon; swapoff and removed by t_swap_drop()). Empty
 * on success, else why not.
 */
static char t_swap_file[64];
static char t_swap_why[256]; /* why the last t_swap_make() could not, or "" */

static inline const char *t_swap_make(void)
{
	char *why = t_swap_why;

	why[0] = '\0';
	char cmd[256];

	snprintf(t_swap_file, sizeof(t_swap_file), "/var/tmp/memlens-test-swap.%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "fallocate -l 64M %s && chmod 600 %s && mkswap %s >/dev/null 2>&1", t_swap_file,
		 t_swap_file, t_swap_file);
	if (system(cmd) != 0) {
		unlink(t_swap_file);
		t_swap_file[0] = '\0';
		snprintf(why, sizeof(t_swap_why), "%s",
			 "creating a swap file in /var/tmp failed (fallocate/mkswap)");
		return why;
	}
	if (swapon(t_swap_file, 0) < 0) {
		snprintf(why, sizeof(t_swap_why), "swapon %s: %s", t_swap_file, strerror(errno));
		unlink(t_swap_file);
		t_swap_file[0] = '\0';
		return why;
	}
	return "";
}

static inline void t_swap_drop(void)
{
	if (!t_swap_file[0])
		return;
	if (swapoff(t_swap_file) < 0)
		printf("# swapoff %s: %s\n", t_swap_file, strerror(errno));
	unlink(t_swap_file);
	t_swap_file[0] = '\0';
}

/* one comment line per probe, for the log: what the expectations were */
static inline void t_say_machine(void)
{
	printf("# a read of untouched anonymous memory maps %s%s; in a THP region, %s\n",
	       t_zero_page() ? "the zero page" : "a fresh page",
	       ru_zero_page_forced_off() ? " (MEMLENS_TEST_NO_ZERO_PAGE)" : "",
	       t_huge_read_name(t_huge_read()));
}

#endif
