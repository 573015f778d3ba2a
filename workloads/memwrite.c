// SPDX-License-Identifier: MIT
/*
 * memwrite: rewrites a 64 MiB buffer with memset in a loop.
 *   memwrite [-m MIB] [-s SECONDS] [-r] [-P] [-x [-n RUNS]] [-R MIBPS] [-Z MIB]
 * -r prints the write throughput (MiB/s) when it ends, and on a second line
 * what the writing cost (getrusage: CPU time, minor faults, context switches,
 * counted from the first write of the loop, after -R's first pass). Prints
 * its pid and the range it writes first.
 * -R paces it at MIBPS MiB/s: it writes the whole buffer once (its pages
 * faulted in), then every 10 ms writes, page by page in order round the
 * buffer, what it is due by then, and sleeps; one that falls behind
 * writes without sleeping until it catches up (-r then shows less than
 * asked). A steady write rate whose cost (CPU time for the same bytes) can be
 * compared with and without a profiler.
 * -x writes only a fixed scattered set of page runs (8, or -n RUNS) inside the buffer, each
 * pass, and prints them first ("memwrite: run 0xS-0xE", one line each): hot
 * data spread through one big VMA whose written ratio stays tiny. SIGUSR1
 * makes it leave the set unwritten for one pass, then print "memwrite:
 * skipped one pass". With -P it paces against a page of its own, in a
 * separate mapping (a guard page keeps the kernel from merging the two),
 * written every pass, skipped or not.
 * -P paces it against a write profiler: after each pass it waits until some
 * page of the buffer is write-protected again (pagemap's uffd-wp bit, set by
 * the profiler at the end of an interval: on every page, or on those of its
 * next sample when it samples; with -x, on the pacing page), and writes
 * the whole buffer again, until no page of it is write-protected, so that every
 * interval sees the whole buffer written once however little CPU the
 * process gets, rather than as much as it managed to write. A test that
 * expects the buffer hot then depends on the profiler, not on the machine's
 * load. Without a profiler it writes the buffer once ("memwrite: first pass
 * written") and idles: a still target of known size.
 * -Z MIB also maps a second buffer of MIB MiB, its own VMA (guard pages
 * round it), writes it once before anything is printed and never again,
 * and prints "memwrite: still 0xS-0xE": memory present but never written
 * while profiled.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define PG 4096UL
static int nruns = 8;

static volatile sig_atomic_t skip_req;

static void on_usr1(int sig)
{
	(void)sig;
	skip_req = 1;
}

/*
 * -x: run k is (k % 4) + 1 pages at page k * stride + 3k % (stride - 5) + 1,
 * stride = npages / nruns: at least two unwritten pages between runs
 */
static void run_of(size_t npages, int k, size_t *first, size_t *n)
{
	size_t stride = npages / (size_t)nruns;

	*first = (size_t)k * stride + 3 * (size_t)k % (stride - 5) + 1;
	*n = (size_t)(k % 4) + 1;
}

static void write_runs(unsigned char *buf, size_t npages, unsigned long pass)
{
	for (int k = 0; k < nruns; k++) {
		size_t first, n;

		run_of(npages, k, &first, &n);
		for (size_t i = 0; i < n; i++)
			buf[(first + i) * PG] = (unsigned char)pass;
	}
}

/*
 * -R: write the pages due by now (rate MiB/s since t0), each whole, in order
 * from *pos round the buffer
 */
static void write_paced(unsigned char *buf, size_t len, double rate, double t0, uint64_t *done,
			size_t *pos)
{
	uint64_t due = (uint64_t)((now() - t0) * rate * 1048576.0) / PG;

	for (; *done < due; (*done)++) {
		memset(buf + *pos, (int)(*done & 0xff), PG);
		*pos = *pos + PG < len ? *pos + PG : 0;
	}
}

static double cpu_s(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

static void sleep_until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (time_t)t) * 1e9) };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* the first page's pte is write-protected by userfaultfd (pagemap bit 57) */
static int uffd_wp(int pagemap, const void *p)
{
	uint64_t e = 0;

	if (pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)p / 4096 * 8)) != (ssize_t)sizeof(e))
		return 0;
	return (e >> 57) & 1;
}

/* Is some page of [p, p + len) write-protected by userfaultfd? */
static int uffd_wp_any(int pagemap, const unsigned char *p, size_t len)
{
	uint64_t e[512];
	size_t n = len / 4096;

	for (size_t i = 0; i < n; i += 512) {
		size_t k = n - i < 512 ? n - i : 512;
		off_t off = (off_t)(((uintptr_t)p / 4096 + i) * 8);

		if (pread(pagemap, e, k * 8, off) != (ssize_t)(k * 8))
			return 0;
		for (size_t j = 0; j < k; j++)
			if ((e[j] >> 57) & 1)
				return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t mib = 64, still_mib = 0;
	double secs = 0, rate = 0, t0;
	int report = 0, paced = 0, scattered = 0, pagemap = -1, opt;
	unsigned long passes = 0;
	struct rusage ru0, ru;
	uint64_t paced_pages = 0;
	size_t pos = 0;
	unsigned char *buf, *clock;

	while ((opt = getopt(argc, argv, "m:s:rPxn:R:Z:")) != -1) {
		if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'r')
			report = 1;
		else if (opt == 'P')
			paced = 1;
		else if (opt == 'x')
			scattered = 1;
		else if (opt == 'n')
			nruns = atoi(optarg);
		else if (opt == 'R')
			rate = atof(optarg);
		else if (opt == 'Z')
			still_mib = strtoul(optarg, NULL, 10);
		else {
			fprintf(stderr,
				"usage: memwrite [-m MIB] [-s SECONDS] [-r] [-P] [-x [-n RUNS]] "
				"[-R MIBPS] [-Z MIB]\n");
			return 2;
		}
	}
	size_t len = mib << 20;
	if (rate < 0 || (rate > 0 && (paced || scattered || !mib))) {
		fprintf(stderr,
			"memwrite: -R needs a rate above 0, a buffer, and neither -P nor -x\n");
		return 2;
	}
	if (scattered && (!mib || nruns < 1 || len / PG / (size_t)nruns < 8)) {
		fprintf(stderr,
			"memwrite: -x needs a buffer of 1 MiB or more and 8 pages a run "
			"(-n 1..%zu)\n",
			len / PG / 8);
		return 2;
	}
	/* -x: the buffer, a guard page, the pacing page */
	buf = mmap(NULL, len + (scattered ? 2 * PG : 0), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	clock = buf;
	if (scattered) {
		clock = buf + len + PG;
		/* exact pages: a huge page would make a whole 2 MiB look written */
		if (mprotect(buf + len, PG, PROT_NONE) || madvise(buf, len, MADV_NOHUGEPAGE)) {
			perror("mprotect/madvise");
			return 1;
		}
		signal(SIGUSR1, on_usr1);
	}
	if (still_mib) {
		size_t sl = still_mib << 20;
		unsigned char *st = mmap(NULL, sl + 2 * PG, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (st == MAP_FAILED || mprotect(st, PG, PROT_NONE) ||
		    mprotect(st + PG + sl, PG, PROT_NONE)) {
			perror("mmap/mprotect");
			return 1;
		}
		memset(st + PG, 1, sl);
		printf("memwrite: still %p-%p\n", (void *)(st + PG), (void *)(st + PG + sl));
	}
	printf("memwrite pid %d writes %p-%p (%zu MiB)\n", getpid(), (void *)buf,
	       (void *)(buf + len), mib);
	for (int k = 0; scattered && k < nruns; k++) {
		size_t first, n;

		run_of(len / PG, k, &first, &n);
		printf("memwrite: run %p-%p\n", (void *)(buf + first * PG),
		       (void *)(buf + (first + n) * PG));
	}
	fflush(stdout);
	if (paced && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
		perror("/proc/self/pagemap");
		return 1;
	}
	if (rate > 0)
		memset(buf, 0, len); /* faulted in: the loop measures rewrites */
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	for (double tick = t0; rate > 0;) {
		write_paced(buf, len, rate, t0, &paced_pages, &pos);
		if (secs > 0 && now() - t0 >= secs)
			break;
		tick += 0.01;
		if (tick > now())
			sleep_until(tick);
		else
			tick = now(); /* behind: write on without sleeping */
	}
	for (; rate == 0;) {
		int skipped = 0;

		if (!scattered) {
			memset(buf, (int)(passes & 0xff), len);
		} else if (skip_req && passes) {
			skip_req = 0;
			skipped = 1;
		} else {
			write_runs(buf, len / PG, passes);
		}
		if (scattered)
			clock[0] = (unsigned char)passes;
		if (paced && !passes) {
			printf("memwrite: first pass written\n"); /* idle until profiled */
			fflush(stdout);
		}
		passes++;
		while (paced &&
		       !(scattered ? uffd_wp(pagemap, clock) : uffd_wp_any(pagemap, buf, len)) &&
		       !(secs > 0 && now() - t0 >= secs))
			usleep(1000);
		if (skipped) {
			printf("memwrite: skipped one pass\n");
			fflush(stdout);
		}
		if (secs > 0 && now() - t0 >= secs)
			break;
	}
	if (report) {
		double t = now() - t0;
		double written =
			rate > 0 ? paced_pages * (double)PG / 1048576.0 : passes * (double)mib;

		printf("memwrite: %.1f MiB/s over %.2f s\n", written / t, t);
		getrusage(RUSAGE_SELF, &ru);
		printf("memwrite: cost %.6f s cpu for %.1f MiB, %ld minor faults, %ld voluntary "
		       "and %ld involuntary context switches\n",
		       cpu_s(&ru) - cpu_s(&ru0), written, ru.ru_minflt - ru0.ru_minflt,
		       ru.ru_nvcsw - ru0.ru_nvcsw, ru.ru_nivcsw - ru0.ru_nivcsw);
	}
	return 0;
}
