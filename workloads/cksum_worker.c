// SPDX-License-Identifier: MIT
/*
 * cksum_worker: a checkpoint/restore test target that checks its own memory.
 *   cksum_worker [-m MIB] [-n STEPS] [-t MS] [-x]
 * Step i rewrites chunk (i * 7) mod CHUNKS of a MIB buffer with a pattern of
 * i and folds the chunk's sum into a running hash; it sleeps MS between steps.
 * At the end it recomputes, from the step numbers alone, what the buffer and
 * the running hash must be and compares: prints "cksum_worker: correct ..."
 * (exit 0) or "cksum_worker: WRONG ..." (exit 1). Memory lost or corrupted by
 * a checkpoint/restore shows up as WRONG; -x flips one byte first, to show that. Prints
 * "cksum_worker pid N" first.
 * SIGUSR1 ends it early: after the step under way it checks the steps done,
 * so that a test can keep it running until it has done what it tests, and
 * not for a time that a loaded machine may need more of.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024UL)

static volatile sig_atomic_t finish;

static void on_usr1(int sig)
{
	(void)sig;
	finish = 1;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0x100000001b3ULL;
}

static void fill(uint64_t *c, uint64_t step)
{
	for (size_t k = 0; k < CHUNK / 8; k++)
		c[k] = step * 0x9e3779b97f4a7c15ULL ^ k;
}

static uint64_t sum(const uint64_t *c)
{
	uint64_t s = 0;

	for (size_t k = 0; k < CHUNK / 8; k++)
		s = mix(s, c[k]);
	return s;
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* What the buffer and hash must be after @steps steps, recomputed from scratch. */
static int verify(const unsigned char *buf, size_t nchunks, long steps, uint64_t hash)
{
	uint64_t *tmp = malloc(CHUNK), h = 0, *last = calloc(nchunks, sizeof(*last));
	int bad = 0;

	if (!tmp || !last)
		return -1;
	for (long i = 0; i < steps; i++) {
		size_t c = (size_t)(i * 7) % nchunks;

		fill(tmp, (uint64_t)i + 1);
		h = mix(h, sum(tmp));
		last[c] = (uint64_t)i + 1;
	}
	for (size_t c = 0; c < nchunks; c++) {
		fill(tmp, last[c]);
		if (!last[c])
			memset(tmp, 0, CHUNK);
		if (memcmp(tmp, buf + c * CHUNK, CHUNK))
			bad++;
	}
	if (h != hash)
		bad++;
	free(tmp);
	free(last);
	return bad;
}

int main(int argc, char **argv)
{
	long mib = 16, steps = 300, ms = 20;
	uint64_t hash = 0;
	unsigned char *buf;
	size_t nchunks;
	int opt, bad, corrupt = 0;

	while ((opt = getopt(argc, argv, "m:n:t:x")) != -1) {
		if (opt == 'm')
			mib = atol(optarg);
		else if (opt == 'n')
			steps = atol(optarg);
		else if (opt == 't')
			ms = atol(optarg);
		else if (opt == 'x')
			corrupt = 1; /* self-test of the check: flip one byte at the end */
		else {
			fprintf(stderr, "usage: cksum_worker [-m MIB] [-n STEPS] [-t MS]\n");
			return 2;
		}
	}
	if (mib < 1 || steps < 1 || ms < 0) {
		fprintf(stderr, "cksum_worker: MIB and STEPS must be >= 1, MS >= 0\n");
		return 2;
	}
	nchunks = (size_t)mib * (1 << 20) / CHUNK;
	buf = mmap(NULL, nchunks * CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (buf == MAP_FAILED) {
		perror("cksum_worker: mmap");
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	printf("cksum_worker pid %d\n", getpid());
	fflush(stdout);
	for (long i = 0; i < steps; i++) {
		if (finish) {
			steps = i;
			break;
		}
		uint64_t *c = (uint64_t *)(buf + (size_t)(i * 7) % nchunks * CHUNK);

		fill(c, (uint64_t)i + 1);
		hash = mix(hash, sum(c));
		nap(ms);
	}
	if (corrupt)
		buf[nchunks * CHUNK / 2] ^= 1;
	bad = verify(buf, nchunks, steps, hash);
	printf("cksum_worker: %s steps=%ld hash=0x%016llx mismatches=%d\n",
	       bad ? "WRONG" : "correct", steps, (unsigned long long)hash, bad);
	return bad ? 1 : 0;
}
