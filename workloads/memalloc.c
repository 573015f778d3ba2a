// SPDX-License-Identifier: MIT
/*
 * memalloc: allocates and fills 32 MiB every 3 s,
 * keeping the last 4 blocks.  memalloc [-m MIB] [-p PERIOD_MS] [-s SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mib = 32;
	long period_ms = 3000;
	double secs = 0;
	void *keep[4] = { 0 };
	int opt;
	unsigned long i = 0;
	time_t t0 = time(NULL);

	while ((opt = getopt(argc, argv, "m:p:s:")) != -1) {
		if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else if (opt == 'p')
			period_ms = atol(optarg);
		else if (opt == 's')
			secs = atof(optarg);
		else {
			fprintf(stderr, "usage: memalloc [-m MIB] [-p PERIOD_MS] [-s SECONDS]\n");
			return 2;
		}
	}
	printf("memalloc pid %d allocates %zu MiB every %ld ms\n", getpid(), mib, period_ms);
	fflush(stdout);
	for (;; i++) {
		size_t len = mib << 20;
		char *p = malloc(len);

		if (!p) {
			perror("malloc");
			return 1;
		}
		memset(p, (int)(i & 0xff), len);
		printf("memalloc: block %lu at %p-%p\n", i, (void *)p, (void *)(p + len));
		fflush(stdout);
		free(keep[i % 4]);
		keep[i % 4] = p;
		if (secs > 0 && difftime(time(NULL), t0) >= secs)
			break;
		usleep((useconds_t)period_ms * 1000);
	}
	return 0;
}
