// SPDX-License-Identifier: MIT
/*
 * migwork: a live-migration target that checks its own memory.
 *   migwork [-H MIB] [-k N] [-I MIB] [-C MIB] [-W MIB] [-t MS] [-T SEC] [-P] [-S]
 *   -H  a hot buffer rewritten continuously (default 64), split into
 *       -k N separate mappings (default 1; guard pages keep them apart)
 *   -I  memory written once and then left idle (default 192)
 *   -C  memory hot first and cold later: rewritten until SIGUSR2 (default 32)
 *   -W  memory cold first and hot later: written once, rewritten from
 *       SIGUSR2 on (default 0)
 *   -t  sleep MS after each pass, which rewrites 1/8 of every hot region
 *       (default 1): all of them turn over at the same rate, whatever their size
 *   -T  phase 2 (as on SIGUSR2) SEC seconds after the start (default: never)
 *   -P  paced against a write profiler: each turnover (8 passes: every
 *       chunk of every active region once) waits until the first hot
 *       region's first page is write-protected again (pagemap's uffd-wp
 *       bit, set by the profiler's scan), so every profiling interval sees
 *       each hot region written whole however little CPU the process gets.
 *       Unprofiled, it writes one turnover and waits.
 *   -S  one heap: every region is a part of a single mapping (one VMA, as
 *       an allocator's heap holds a server's data), the idle memory first,
 *       then the hot, hot-then-cold and cold-then-hot regions
 * Every region is a run of 256 KiB chunks; its step s writes chunk
 * (s * 7) mod CHUNKS with a pattern of (region, s). SIGTERM or SIGUSR1:
 * recompute from the step counters alone what every chunk must hold,
 * compare, print "migwork: correct ..." (exit 0) or "migwork: WRONG ..."
 * (exit 1). Memory lost or taken from a stale image by a checkpoint/restore
 * shows up as WRONG. Prints "migwork pid N ready" once everything is
 * written, "migwork: phase 2" on SIGUSR2.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024UL)
#define MAXREG 70

enum kind { HOT, IDLE, HOT_COLD, COLD_HOT };

struct region {
	unsigned char *base;
	size_t nchunks;
	uint64_t steps;
	enum kind kind;
};

static struct region reg[MAXREG];
static int nreg;
static unsigned char *heap; /* -S: the regions are parts of this mapping */
static size_t heap_off;
static volatile sig_atomic_t phase2, stop;

static void on_usr2(int sig)
{
	(void)sig;
	phase2 = 1;
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void fill(uint64_t *c, int r, uint64_t step)
{
	uint64_t v = (step + 1) * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)r << 56);

	for (size_t k = 0; k < CHUNK / 8; k++)
		c[k] = v ^ k;
}

static void step(int r)
{
	struct region *g = &reg[r];
	size_t c = (size_t)(g->steps * 7 % g->nchunks);

	fill((uint64_t *)(g->base + c * CHUNK), r, g->steps);
	g->steps++;
}

/* Chunks that do not hold what the step counter says they must. */
static long verify(int r, uint64_t *tmp)
{
	struct region *g = &reg[r];
	long bad = 0;

	for (size_t c = 0; c < g->nchunks; c++) {
		/* the last step that wrote chunk c: one of the last n (s * 7 mod n
		 * repeats every n steps) */
		uint64_t last = UINT64_MAX;

		for (uint64_t j = 0; j < g->steps && j < g->nchunks; j++) {
			uint64_t s = g->steps - 1 - j;

			if (s * 7 % g->nchunks == c) {
				last = s;
				break;
			}
		}
		if (last == UINT64_MAX)
			memset(tmp, 0, CHUNK);
		else
			fill(tmp, r, last);
		if (memcmp(tmp, g->base + c * CHUNK, CHUNK))
			bad++;
	}
	return bad;
}

/* A mapping of @mib MiB with a guard page before it, as its own VMA. */
static int add_region(size_t mib, enum kind kind)
{
	size_t len = mib << 20;
	unsigned char *p;

	if (!mib)
		return 0;
	if (nreg >= MAXREG)
		return -1;
	if (heap) {
		reg[nreg].base = heap + heap_off;
		heap_off += len;
		goto fill;
	}
	p = mmap(NULL, len + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mmap(p + 4096, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -1;
	reg[nreg].base = p + 4096;
fill:
	reg[nreg].nchunks = len / CHUNK;
	reg[nreg].kind = kind;
	nreg++;
	return 0;
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

/* the page at @p is write-protected by userfaultfd (pagemap bit 57) */
static bool uffd_wp(int pagemap, const void *p)
{
	uint64_t e = 0;

	if (pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)p / 4096 * 8)) != (ssize_t)sizeof(e))
		return false;
	return (e >> 57) & 1;
}

static bool active(const struct region *g)
{
	return g->kind == HOT || (g->kind == HOT_COLD && !phase2) ||
	       (g->kind == COLD_HOT && phase2);
}

int main(int argc, char **argv)
{
	long hot = 64, idle = 192, hc = 32, ch = 0, k = 1, ms = 1, phase_s = 0, bad = 0;
	uint64_t *tmp;
	int opt, pagemap = -1, h0 = 0;
	bool paced = false, one_heap = false;

	while ((opt = getopt(argc, argv, "H:k:I:C:W:t:T:PS")) != -1) {
		if (opt == 'P' || opt == 'S') {
			*(opt == 'P' ? &paced : &one_heap) = true;
			continue;
		}
		long *v = opt == 'H'   ? &hot
			  : opt == 'k' ? &k
			  : opt == 'I' ? &idle
			  : opt == 'C' ? &hc
			  : opt == 'W' ? &ch
			  : opt == 't' ? &ms
			  : opt == 'T' ? &phase_s
				       : NULL;

		if (!v) {
			fprintf(stderr, "usage: migwork [-H MIB] [-k N] [-I MIB] [-C MIB] [-W MIB] "
					"[-t MS] [-T SEC] [-P] [-S]\n");
			return 2;
		}
		*v = atol(optarg);
	}
	if (hot < 1 || k < 1 || k > 64 || hot % k || idle < 0 || hc < 0 || ch < 0 || ms < 0 ||
	    phase_s < 0) {
		fprintf(stderr, "migwork: -H >= 1 MiB split into -k 1..64 equal parts; -I -C -W "
				"-t >= 0\n");
		return 2;
	}
	if (one_heap) {
		size_t len = (size_t)(hot + idle + hc + ch) << 20;

		heap = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (heap == MAP_FAILED)
			goto nomem;
		if (add_region((size_t)idle, IDLE))
			goto nomem;
	}
	for (long i = 0; i < k; i++)
		if (add_region((size_t)(hot / k), HOT))
			goto nomem;
	if ((!one_heap && add_region((size_t)idle, IDLE)) || add_region((size_t)hc, HOT_COLD) ||
	    add_region((size_t)ch, COLD_HOT))
		goto nomem;
	signal(SIGUSR2, on_usr2);
	signal(SIGALRM, on_usr2);
	if (phase_s)
		alarm((unsigned int)phase_s);
	signal(SIGUSR1, on_stop);
	signal(SIGTERM, on_stop);
	for (int r = 0; r < nreg; r++) /* everything written once */
		while (reg[r].steps < reg[r].nchunks)
			step(r);
	if (paced && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
		perror("migwork: /proc/self/pagemap");
		return 1;
	}
	while (reg[h0].kind != HOT)
		h0++;
	printf("migwork pid %d ready\n", getpid());
	fflush(stdout);
	bool said = false;

	for (unsigned long pass = 0; !stop; pass++) {
		/* the first hot region (-H >= 1): a new interval protected it again */
		while (paced && pass % 8 == 0 && pass && !stop && !uffd_wp(pagemap, reg[h0].base))
			nap(1);
		if (phase2 && !said) {
			printf("migwork: phase 2\n");
			fflush(stdout);
			said = true;
		}
		for (int r = 0; r < nreg; r++) /* 1/8 of every active region */
			for (size_t i = 0; active(&reg[r]) && i < (reg[r].nchunks + 7) / 8; i++)
				step(r);
		nap(ms);
	}
	tmp = malloc(CHUNK);
	if (!tmp)
		goto nomem;
	for (int r = 0; r < nreg; r++)
		bad += verify(r, tmp);
	printf("migwork: %s regions=%d mismatched_chunks=%ld\n", bad ? "WRONG" : "correct", nreg,
	       bad);
	return bad ? 1 : 0;
nomem:
	perror("migwork: mmap");
	return 1;
}
