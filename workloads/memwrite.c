// SPDX-License-Identifier: MIT
/*
 * memwrite: rewrites a 64 MiB buffer with memset in a loop (seed §7.2).
 *   memwrite [-m MIB] [-s SECONDS] [-r]
 * -r prints the write throughput (MiB/s) when it ends. Prints its pid and
 * the range it writes first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = 64;
	double secs = 0, t0;
	int report = 0, opt;
	unsigned long passes = 0;
	unsigned char *buf;

	while ((opt = getopt(argc, argv, "m:s:r")) != -1) {
		if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'r')
			report = 1;
		else {
			fprintf(stderr, "usage: memwrite [-m MIB] [-s SECONDS] [-r]\n");
			return 2;
		}
	}
	size_t len = mib << 20;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("memwrite pid %d writes %p-%p (%zu MiB)\n", getpid(), (void *)buf,
	       (void *)(buf + len), mib);
	fflush(stdout);
	t0 = now();
	for (;;) {
		memset(buf, (int)(passes & 0xff), len);
		passes++;
		if (secs > 0 && now() - t0 >= secs)
			break;
	}
	if (report)
		printf("memwrite: %.1f MiB/s over %.2f s\n", passes * (double)mib / (now() - t0),
		       now() - t0);
	return 0;
}
