// SPDX-License-Identifier: MIT
/*
 * snaptarget: a test target for `memlens snapshot` with memory of known
 * shape. At start-up it builds, and announces one line each:
 *   addr data  0xA PAGES     a 16-page initialised array (.data)
 *   addr bss   0xA PAGES     a 64-page zero array (.bss), untouched
 *   addr heap  0xA 1         a small malloc (in [heap])
 *   addr stack 0xA 1         a local variable of main
 *   addr touch 0xA 256       anonymous rw mapping, TOUCH pages of it written (argv[1], default 100)
 *   addr zero  0xA 64        anonymous mapping, 40 pages only read (zero pages, or
 *                            fresh ones where reads map no zero page: read_untouched.h)
 * (each anonymous mapping sits between PROT_NONE guard pages: one VMA each)
 *   addr file  0xA 32        a 32-page file (argv[2], default /tmp/snaptarget.PID), all read
 *   addr thp   0xA 1024      2 MiB-aligned 4 MiB, MADV_HUGEPAGE, one write per 2 MiB
 *   addr swap  0xA 64        anonymous, written, then MADV_PAGEOUT (only when swap exists)
 *   ready PID
 * Then commands on stdin, each answered by one line:
 *   check          every region still holds its pattern -> "check ok" / "check bad NAME"
 *   touch N        write N more pages of the touch mapping -> "touched N"
 *   exit           exit(0) (EOF as well)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "read_untouched.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define PG 4096UL
#define TOUCH_PAGES 256UL
#define ZERO_PAGES 64UL
#define ZERO_READ 40UL
#define FILE_PAGES 32UL
#define THP_SIZE (4UL << 20)
#define SWAP_PAGES 64UL

static unsigned char data_arr[16 * PG] = { 1 };
static unsigned char bss_arr[64 * PG];

static unsigned char *touch_p, *zero_p, *file_p, *thp_p, *swap_p;
static unsigned long touched;
static volatile unsigned char sink;

/* Anonymous rw, between PROT_NONE guard pages so it never merges with a neighbour. */
static void *map_anon(size_t len)
{
	unsigned char *p = mmap(NULL, len + 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + PG, len, PROT_READ | PROT_WRITE)) {
		perror("mmap");
		exit(1);
	}
	return p + PG;
}

static void touch_more(unsigned long n)
{
	for (unsigned long i = 0; i < n && touched < TOUCH_PAGES; i++, touched++)
		touch_p[touched * PG] = (unsigned char)(touched + 1);
}

static unsigned char *map_file(const char *path)
{
	unsigned char buf[PG];
	unsigned char *p;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (unsigned long i = 0; i < FILE_PAGES; i++) {
		memset(buf, (int)(i + 7), sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			perror("write");
			exit(1);
		}
	}
	p = mmap(NULL, FILE_PAGES * PG, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	unlink(path);
	if (p == MAP_FAILED) {
		perror("mmap file");
		exit(1);
	}
	for (unsigned long i = 0; i < FILE_PAGES; i++)
		sink = p[i * PG];
	return p;
}

static unsigned char *map_thp(void)
{
	unsigned char *raw = mmap(NULL, THP_SIZE + (2UL << 20), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a = ((uintptr_t)raw + (2UL << 20) - 1) & ~((2UL << 20) - 1);
	unsigned char *p = (unsigned char *)a;

	if (raw == MAP_FAILED) {
		perror("mmap thp");
		exit(1);
	}
	/* trim so the VMA is exactly the aligned 4 MiB */
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + THP_SIZE, (size_t)(raw + THP_SIZE + (2UL << 20) - (p + THP_SIZE)));
	madvise(p, THP_SIZE, MADV_HUGEPAGE);
	for (unsigned long off = 0; off < THP_SIZE; off += 2UL << 20)
		p[off] = 0x5a;
	return p;
}

static int have_swap(void)
{
	char line[256];
	int n = 0;
	FILE *f = fopen("/proc/swaps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n > 1;
}

static const char *check(void)
{
	for (unsigned long i = 0; i < touched; i++)
		if (touch_p[i * PG] != (unsigned char)(i + 1))
			return "touch";
	/* only what is mapped already: a check must not fault pages in */
	for (unsigned long i = 0; i < ZERO_READ * PG; i++)
		if (zero_p[i])
			return "zero";
	for (unsigned long i = 0; i < FILE_PAGES; i++)
		if (file_p[i * PG] != (unsigned char)(i + 7))
			return "file";
	for (unsigned long off = 0; off < THP_SIZE; off += 2UL << 20)
		if (thp_p[off] != 0x5a)
			return "thp";
	if (data_arr[0] != 1)
		return "data";
	if (bss_arr[0])
		return "bss";
	for (unsigned long i = 0; swap_p && i < SWAP_PAGES; i++)
		if (swap_p[i * PG] != 0xa5)
			return "swap";
	return NULL;
}

int main(int argc, char **argv)
{
	char line[128], fpath[256];
	unsigned long n;
	int stack_var = 1;
	char *heap = malloc(64);

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(fpath, sizeof(fpath), "/tmp/snaptarget.%d", getpid());
	touch_p = map_anon(TOUCH_PAGES * PG);
	touch_more(argc > 1 ? strtoul(argv[1], NULL, 10) : 100);
	zero_p = map_anon(ZERO_PAGES * PG);
	ru_read_pages(zero_p, ZERO_READ);
	file_p = map_file(argc > 2 ? argv[2] : fpath);
	thp_p = map_thp();
	if (have_swap()) {
		swap_p = map_anon(SWAP_PAGES * PG);
		memset(swap_p, 0xa5, SWAP_PAGES * PG);
		madvise(swap_p, SWAP_PAGES * PG, MADV_PAGEOUT);
	}
	printf("addr data %p %lu\n", (void *)data_arr, sizeof(data_arr) / PG);
	printf("addr bss %p %lu\n", (void *)bss_arr, sizeof(bss_arr) / PG);
	printf("addr heap %p 1\n", (void *)heap);
	printf("addr stack %p 1\n", (void *)&stack_var);
	printf("addr touch %p %lu\n", (void *)touch_p, TOUCH_PAGES);
	printf("addr zero %p %lu\n", (void *)zero_p, ZERO_PAGES);
	printf("addr file %p %lu\n", (void *)file_p, FILE_PAGES);
	printf("addr thp %p %lu\n", (void *)thp_p, THP_SIZE / PG);
	if (swap_p)
		printf("addr swap %p %lu\n", (void *)swap_p, SWAP_PAGES);
	printf("ready %d\n", getpid());
	while (fgets(line, sizeof(line), stdin)) {
		const char *bad;

		if (!strncmp(line, "exit", 4))
			break;
		if (!strncmp(line, "check", 5)) {
			bad = check();
			printf(bad ? "check bad %s\n" : "check ok\n", bad);
		} else if (sscanf(line, "touch %lu", &n) == 1) {
			touch_more(n);
			printf("touched %lu\n", touched);
		} else {
			printf("unknown command\n");
		}
	}
	free(heap);
	return 0;
}
