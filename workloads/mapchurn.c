// SPDX-License-Identifier: MIT
/*
 * mapchurn: maps and unmaps as fast as it can, for the snapshot tests.
 *   mapchurn [MIB]        (default 64)
 *   mapchurn -u [KIB]     (default 512)
 * Default loop: mmap MIB of anonymous memory, touch its first page, munmap
 * it. Its resident memory stays small (VmHWM), while a 64 MiB VMA comes and
 * goes thousands of times a second.
 * -u: first map 4 MiB and touch every page of it (resident R), then loop:
 * map KIB of anonymous memory right below R (the kernel merges the two into
 * one VMA), never touch it, unmap it. The resident memory is R plus the
 * program's own and never changes, while R's VMA grows and shrinks by KIB.
 * Prints "ready PID" once running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static int untouched(size_t len)
{
	const size_t rlen = 4 << 20;
	char *r = mmap(NULL, rlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(r, 1, rlen);
	printf("ready %d %p\n", getpid(), (void *)r);
	fflush(stdout);
	for (;;) {
		void *p = mmap(r - len, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap below the resident region");
			return 1;
		}
		munmap(p, len);
	}
}

int main(int argc, char **argv)
{
	size_t len;

	if (argc > 1 && !strcmp(argv[1], "-u"))
		return untouched((argc > 2 ? strtoul(argv[2], NULL, 10) : 512) << 10);
	len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) << 20;
	if (!len) {
		fprintf(stderr, "usage: mapchurn [MIB] | mapchurn -u [KIB]\n");
		return 2;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;) {
		volatile char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		p[0] = 1;
		munmap((void *)p, len);
	}
}
