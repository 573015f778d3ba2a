// SPDX-License-Identifier: MIT
/*
 * faultgen: cause a known number of page faults and count them with
 * getrusage(), for memlens faults to be checked against.
 *
 *   faultgen [-w] anon MIB    write one byte per page of MIB MiB of fresh
 *                             anonymous memory (minor faults, THP off)
 *   faultgen [-w] file PATH   read one byte per page of PATH after evicting
 *                             it from the page cache (major faults)
 *
 * -w: wait for a line on stdin before touching and again after, so that a
 * tracer sees nothing but the touching; "touched" on stderr says the pages
 * are done (written from memory touched before, so it faults nothing). Prints the getrusage()
 * deltas of the touching loop and its duration: "pages=N minflt=N majflt=N cached_before=N ns=N".
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

static char *map_file(const char *path, size_t *len, size_t *cached)
{
	unsigned char *vec;
	struct stat st;
	char *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(1);
	}
	*len = (size_t)st.st_size;
	/* evict only this file: cleaner than dropping every cache on the machine */
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, *len, MADV_RANDOM); /* no readahead: one major fault per page */
	vec = calloc((*len + 4095) / 4096, 1);
	*cached = 0;
	if (vec && !mincore(p, *len, vec))
		for (size_t i = 0; i < (*len + 4095) / 4096; i++)
			*cached += vec[i] & 1;
	free(vec);
	close(fd);
	return p;
}

int main(int argc, char **argv)
{
	volatile char sink = 0;
	char done[] = "touched\n";
	struct rusage r0, r1;
	struct timespec t0, t1;
	size_t len, cached = 0;
	int wait = 0, a = 1;
	bool anon;
	char *p;

	if (argc > 1 && !strcmp(argv[1], "-w")) {
		wait = 1;
		a++;
	}
	if (argc != a + 2 || (strcmp(argv[a], "anon") && strcmp(argv[a], "file"))) {
		fprintf(stderr, "usage: faultgen [-w] anon MIB | file PATH\n");
		return 2;
	}
	anon = !strcmp(argv[a], "anon");
	if (anon) {
		len = (size_t)atol(argv[a + 1]) << 20;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		madvise(p, len, MADV_NOHUGEPAGE);
	} else {
		p = map_file(argv[a + 1], &len, &cached);
	}
	if (wait)
		wait_line();
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t off = 0; off < len; off += 4096) {
		if (anon)
			p[off] = 1;
		else
			sink += p[off];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);
	if (wait) {
		if (write(2, done, sizeof(done) - 1) < 0)
			return 1;
		wait_line();
	}
	printf("pages=%zu minflt=%ld majflt=%ld cached_before=%zu ns=%lld\n", len / 4096,
	       r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt, cached,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}
