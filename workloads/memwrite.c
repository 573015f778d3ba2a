// SPDX-License-Identifier: MIT
/*
 * memwrite: rewrites a 64 MiB buffer with memset in a loop.
 *   memwrite [-m MIB] [-s SECONDS] [-r] [-P]
 * -r prints the write throughput (MiB/s) when it ends. Prints its pid and
 * the range it writes first.
 * -P paces it against a write profiler: after each pass it waits until the
 * buffer is write-protected again (pagemap's uffd-wp bit on its first page,
 * set by the profiler's scan at the end of an interval), so that every
 * interval sees the whole buffer written once however little CPU the
 * process gets, rather than as much as it managed to write. A test that
 * expects the buffer hot then depends on the profiler, not on the machine's
 * load. Without a profiler it writes the buffer once ("memwrite: first pass
 * written") and idles: a still target of known size.
 */
#include <fcntl.h>
#include <stdint.h>
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

/* the first page's pte is write-protected by userfaultfd (pagemap bit 57) */
static int uffd_wp(int pagemap, const void *p)
{
	uint64_t e = 0;

	if (pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)p / 4096 * 8)) != (ssize_t)sizeof(e))
		return 0;
	return (e >> 57) & 1;
}

int main(int argc, char **argv)
{
	size_t mib = 64;
	double secs = 0, t0;
	int report = 0, paced = 0, pagemap = -1, opt;
	unsigned long passes = 0;
	unsigned char *buf;

	while ((opt = getopt(argc, argv, "m:s:rP")) != -1) {
		if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'r')
			report = 1;
		else if (opt == 'P')
			paced = 1;
		else {
			fprintf(stderr, "usage: memwrite [-m MIB] [-s SECONDS] [-r] [-P]\n");
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
	if (paced && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
		perror("/proc/self/pagemap");
		return 1;
	}
	t0 = now();
	for (;;) {
		memset(buf, (int)(passes & 0xff), len);
		if (paced && !passes) {
			printf("memwrite: first pass written\n"); /* idle until profiled */
			fflush(stdout);
		}
		passes++;
		while (paced && !uffd_wp(pagemap, buf) && !(secs > 0 && now() - t0 >= secs))
			usleep(1000);
		if (secs > 0 && now() - t0 >= secs)
			break;
	}
	if (report)
		printf("memwrite: %.1f MiB/s over %.2f s\n", passes * (double)mib / (now() - t0),
		       now() - t0);
	return 0;
}
