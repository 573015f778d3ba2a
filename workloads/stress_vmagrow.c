// SPDX-License-Identifier: MIT
/*
 * stress_vmagrow: VMAs that change all the time, as those of a JIT, a
 * garbage collector or a growing heap do.
 *   stress_vmagrow -r RESULT [-t SECONDS] [MUTATORS]
 * MUTATORS threads (default 2: one of them keeps running beside any reader)
 * each own a PROT_NONE reservation in which
 *   a read-write VMA grows and shrinks a page at a time with mprotect()
 *   (its boundary with the PROT_NONE rest moves), and
 *   a 64-page read-write VMA is split in three (one page made read-only)
 *   and merged back, page after page.
 * Another thread grows a mapping with mremap() (in place or moved) and
 * shrinks it back. Every page keeps the value written into it first: all
 * of them are checked. The main thread sleeps 1 ms at a time and checks
 * its registers in between (the mutators keep the CPUs).
 *
 * The kernel prints /proc/PID/maps a VMA at a time without holding the
 * whole map still, so a reader sees the merging VMA twice now and then:
 * the reader must read again, and the target must notice nothing.
 */
#include <pthread.h>

#include "stress.h"

#define PG 4096ul
#define GROW 256ul
#define SPLIT 64ul
#define MAX_MUTATORS 8
#define REMAP_MIN 16ul
#define REMAP_MAX 64ul

static uint64_t steps, remaps;

static uint64_t page_value(uintptr_t base, size_t i)
{
	return (uint64_t)(base + i * PG) * 0x9e3779b97f4a7c15ull;
}

static void check_pages(char *base, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (*(uint64_t *)(base + i * PG) != page_value((uintptr_t)base, i))
			stress_harm2("page lost its value", (long long)(uintptr_t)(base + i * PG),
				     (long long)*(uint64_t *)(base + i * PG), true);
}

static int protect(char *p, size_t pages, int prot)
{
	if (!mprotect(p, pages * PG, prot))
		return 0;
	stress_harm2("mprotect failed", errno, (long long)(uintptr_t)p, true);
	return -1;
}

/*
 * The reservation, low to high: GROW pages whose first @rw are read-write,
 * a PROT_NONE guard page, SPLIT read-write pages.
 */
static void *mutator(void *arg)
{
	size_t rw = 0, next, i;
	char *grow =
		mmap(NULL, (GROW + 1 + SPLIT) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *sp = grow + (GROW + 1) * PG;
	int dir = 1;

	(void)arg;
	if (grow == MAP_FAILED) {
		stress_harm("mmap of the reservation failed", errno, 0);
		return NULL;
	}
	if (protect(sp, SPLIT, PROT_READ | PROT_WRITE))
		return NULL;
	for (i = 0; i < SPLIT; i++)
		*(uint64_t *)(sp + i * PG) = page_value((uintptr_t)sp, i);
	while (!stress_stopping()) {
		if (rw == GROW)
			dir = -1;
		else if (rw <= 2)
			dir = 1;
		next = rw + (size_t)(long)dir;
		if (protect(grow, next, PROT_READ | PROT_WRITE) ||
		    (next < rw && protect(grow + next * PG, rw - next, PROT_NONE)))
			return NULL;
		if (next > rw) {
			uint64_t *p = (uint64_t *)(grow + rw * PG);

			if (*p && *p != page_value((uintptr_t)grow, rw))
				stress_harm2("page changed under mprotect", (long long)(uintptr_t)p,
					     (long long)*p, true);
			*p = page_value((uintptr_t)grow, rw);
		}
		rw = next;
		for (i = 1; i + 1 < SPLIT; i++)
			if (protect(sp + i * PG, 1, PROT_READ) ||
			    protect(sp + i * PG, 1, PROT_READ | PROT_WRITE))
				return NULL;
		check_pages(grow, 0, rw);
		check_pages(sp, 0, SPLIT);
		__atomic_add_fetch(&steps, 1, __ATOMIC_RELAXED);
		stress_checked(1);
	}
	return NULL;
}

static void *remapper(void *arg)
{
	char *m = mmap(NULL, REMAP_MIN * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	struct timespec pause = { 0, 200000 };
	uint64_t gen = 1;

	(void)arg;
	if (m == MAP_FAILED) {
		stress_harm("mmap of the mremap region failed", errno, 0);
		return NULL;
	}
	for (size_t i = 0; i < REMAP_MIN; i++)
		*(uint64_t *)(m + i * PG) = i;
	while (!stress_stopping()) {
		size_t big = REMAP_MIN + 1 + (gen % (REMAP_MAX - REMAP_MIN));
		char *g = mremap(m, REMAP_MIN * PG, big * PG, MREMAP_MAYMOVE);

		if (g == MAP_FAILED) {
			stress_harm("mremap grow failed", errno, (long long)big);
			break;
		}
		for (size_t i = REMAP_MIN; i < big; i++)
			*(uint64_t *)(g + i * PG) = gen;
		m = mremap(g, big * PG, REMAP_MIN * PG, 0);
		if (m == MAP_FAILED) {
			stress_harm("mremap shrink failed", errno, (long long)big);
			break;
		}
		for (size_t i = 0; i < REMAP_MIN; i++)
			if (*(uint64_t *)(m + i * PG) != i)
				stress_harm2("page changed across mremap",
					     (long long)(uintptr_t)(m + i * PG),
					     (long long)*(uint64_t *)(m + i * PG), true);
		gen++;
		__atomic_add_fetch(&remaps, 1, __ATOMIC_RELAXED);
		stress_checked(1);
		/* mremap() locks the whole memory map for writing, which keeps
		 * readers out: a pause lets the mutators' VMAs meet them */
		nanosleep(&pause, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t rm, mt[MAX_MUTATORS];
	uint64_t seed = 1, bad = 0;
	int i = stress_init(argc, argv, "[MUTATORS]"), mutators = 2;

	if (i < argc)
		mutators = atoi(argv[i++]);
	if (i != argc || mutators < 1 || mutators > MAX_MUTATORS)
		stress_usage(argv[0], "[MUTATORS (1-8)]");
	if (pthread_create(&rm, NULL, remapper, NULL)) {
		fprintf(stderr, "stress_vmagrow: pthread_create failed\n");
		return 2;
	}
	for (int k = 0; k < mutators; k++)
		if (pthread_create(&mt[k], NULL, mutator, NULL)) {
			fprintf(stderr, "stress_vmagrow: pthread_create failed\n");
			return 2;
		}
	stress_ready();
	while (!stress_stopping()) {
		struct timespec ms = { 0, 1000000 };
		int n;

		if (nanosleep(&ms, NULL) && !stress_stop_eintr(-1))
			stress_harm("nanosleep failed (no signal handler is installed)", errno, 0);
		n = stress_regs_changed(seed++, 1000);
		if (n) {
			stress_harm("registers changed", n, (long long)seed);
			bad++;
		}
		stress_checked(1);
	}
	pthread_join(rm, NULL);
	for (int k = 0; k < mutators; k++)
		pthread_join(mt[k], NULL);
	return stress_finish("vmagrow: %llu mprotect steps, %llu mremap cycles, %llu register "
			     "checks failed",
			     (unsigned long long)steps, (unsigned long long)remaps,
			     (unsigned long long)bad);
}
