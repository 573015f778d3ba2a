// SPDX-License-Identifier: MIT
/*
 * mapchurn: maps and unmaps as fast as it can, for the snapshot tests.
 *   mapchurn [MIB]     (default 64)
 * Loop: mmap MIB of anonymous memory, touch its first page, munmap it. Its
 * resident memory stays small (VmHWM), while a 64 MiB VMA comes and goes
 * thousands of times a second. Prints "ready PID" once running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) << 20;

	if (!len) {
		fprintf(stderr, "usage: mapchurn [MIB]\n");
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
