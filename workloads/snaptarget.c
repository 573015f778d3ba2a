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
 *   layout DIR MB  map, next to each other, what made snapshots count pages
 *                  twice (a scan returning more than 512 ranges), announced as above:
 *     addr frag    0xA 1600   a private file mapping, read, every other page written:
 *                             file and anonymous pages alternate, 1600 ranges
 *     addr huge    0xA 8192   (DIR not "-") a 32 MiB file in DIR (a tmpfs mounted
 *                             huge=always gives it huge pages), 2 MiB-aligned, read
 *     addr libdata 0xA 4      a private file mapping of 4 pages, all written, like
 *                             a library's data
 *     addr big     0xA PAGES  MB MiB anonymous right after it, every page written
 *                  then "ready layout"
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

#define FRAG_PAGES 1600UL
#define HUGE_FILE (32UL << 20)
#define LIBDATA_PAGES 4UL
#define PMD (2UL << 20)

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

/* A file of @len bytes at @path, each page filled with its number; open, unlinked. */
static int page_file(const char *path, size_t len)
{
	unsigned char buf[64 * PG];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	unlink(path);
	for (size_t off = 0; off < len; off += sizeof(buf)) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);

		for (size_t p = 0; p < n; p += PG)
			memset(buf + p, (int)((off + p) / PG + 1), PG);
		if (write(fd, buf, n) != (ssize_t)n) {
			perror("write");
			exit(1);
		}
	}
	return fd;
}

static void *map_at(void *at, size_t len, int prot, int flags, int fd)
{
	void *p = mmap(at, len, prot, flags | MAP_FIXED, fd, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/*
 * The layout command: one reservation, cut into the mappings, so that they
 * are neighbours; the huge file starts at a 2 MiB boundary (a PMD can map
 * it) and the fragmented mapping ends there.
 */
static void layout(const char *dir, unsigned long mb)
{
	size_t frag = FRAG_PAGES * PG, huge = strcmp(dir, "-") ? HUGE_FILE : 0;
	size_t lib = LIBDATA_PAGES * PG, big = mb << 20;
	size_t len = frag + PMD + huge + lib + big;
	unsigned char *res = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *h, *f, *l, *b;
	char path[4200];
	int ffd, hfd;

	if (res == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	h = (unsigned char *)(((uintptr_t)res + frag + PMD - 1) & ~(PMD - 1));
	f = h - frag;
	l = h + huge;
	b = l + lib;
	if (f > res)
		munmap(res, (size_t)(f - res));
	if (b + big < res + len)
		munmap(b + big, (size_t)(res + len - (b + big)));
	snprintf(path, sizeof(path), "/tmp/snaptarget.%d.frag", getpid());
	ffd = page_file(path, frag);
	/* frag and libdata: private, writable, at offsets that do not let them merge */
	f = map_at(f, frag, PROT_READ | PROT_WRITE, MAP_PRIVATE, ffd);
	for (size_t i = 0; i < FRAG_PAGES; i++)
		sink = f[i * PG];
	for (size_t i = 0; i < FRAG_PAGES; i += 2)
		f[i * PG] = 0xfe;
	if (huge) {
		snprintf(path, sizeof(path), "%.4000s/snaptarget.%d.huge", dir, getpid());
		hfd = page_file(path, huge);
		h = map_at(h, huge, PROT_READ, MAP_SHARED, hfd);
		close(hfd);
		for (size_t off = 0; off < huge; off += PG)
			sink = h[off];
	}
	l = mmap(l, lib, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, ffd, (off_t)(8 * PG));
	if (l == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	close(ffd);
	memset(l, 0x11, lib);
	b = map_at(b, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	for (size_t off = 0; off < big; off += PG)
		b[off] = 0x22;
	printf("addr frag %p %lu\n", (void *)f, FRAG_PAGES);
	if (huge)
		printf("addr huge %p %lu\n", (void *)h, HUGE_FILE / PG);
	printf("addr libdata %p %lu\n", (void *)l, LIBDATA_PAGES);
	printf("addr big %p %lu\n", (void *)b, (unsigned long)(big / PG));
	printf("ready layout\n");
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
	char line[4200], fpath[256], dir[4096];
	unsigned long n;
	int stack_var = 1;
	char *heap = malloc(64);

	/*
	 * stdin's buffer, allocated and touched now: stdio would malloc it at
	 * the first fgets, after "ready", and a snapshot taken in between
	 * would see [heap] grow under it
	 */
	char *inbuf = malloc(BUFSIZ);

	if (!inbuf)
		return 1;
	memset(inbuf, 0, BUFSIZ);
	setvbuf(stdin, inbuf, _IOFBF, BUFSIZ);
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
		} else if (sscanf(line, "layout %4095s %lu", dir, &n) == 2) {
			layout(dir, n);
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
