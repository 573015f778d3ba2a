// SPDX-License-Identifier: MIT
/*
 * bigmap: a big, many-VMA, idle process for the snapshot benchmark.
 *   bigmap [MIB] [REGIONS] [thp]     (default 1024 MiB in 24 regions)
 * Maps REGIONS anonymous rw regions between guard pages (one VMA each),
 * writes every page of them, prints "ready PID" and sleeps until killed.
 * With "thp" the regions are madvise(MADV_HUGEPAGE)d first (transparent
 * huge pages where the kernel can).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096UL

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 24;
	int thp = argc > 3 && !strcmp(argv[3], "thp");
	unsigned long per;

	if (!mib || !n || (argc > 3 && !thp)) {
		fprintf(stderr, "usage: bigmap [MIB] [REGIONS] [thp]\n");
		return 2;
	}
	per = (mib << 20) / n / PG * PG;
	for (unsigned long i = 0; i < n; i++) {
		unsigned char *p =
			mmap(NULL, per + 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || mprotect(p + PG, per, PROT_READ | PROT_WRITE)) {
			perror("mmap");
			return 1;
		}
		if (thp && madvise(p + PG, per, MADV_HUGEPAGE))
			perror("madvise(MADV_HUGEPAGE)");
		memset(p + PG, (int)i + 1, per);
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;)
		pause();
}
