// SPDX-License-Identifier: MIT
/*
 * hog [MAX_MIB]: allocate and touch anonymous memory 1 MiB at a time until
 * killed (or MAX_MIB, default 1024, is reached: then exit 0), reporting
 * progress on stderr. Meant to be OOM-killed inside a memory cgroup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long max = argc > 1 ? atol(argv[1]) : 1024;

	for (long mib = 1; mib <= max; mib++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED) {
			perror("hog: mmap");
			return 1;
		}
		memset(p, 0x5a, 1 << 20);
		if (mib % 8 == 0)
			fprintf(stderr, "hog: %ld MiB\n", mib);
	}
	fprintf(stderr, "hog: reached %ld MiB without being killed\n", max);
	return 0;
}
