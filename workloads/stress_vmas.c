// SPDX-License-Identifier: MIT
/*
 * stress_vmas: a process with thousands of VMAs that checks their contents.
 *   stress_vmas -r RESULT [-t SECONDS] [VMAS]
 * One mapping of VMAS pages (default 5000) whose pages alternate between
 * read-write and read-only, so that each page is a VMA of its own. A thread
 * writes a value that changes every pass into every writable page and
 * verifies all of them (the read-only ones keep their first value); the
 * main thread checks its registers around spins.
 */
#include <pthread.h>

#include "stress.h"

#define PG 4096ul

static char *base;
static size_t npages;
static uint64_t passes;

static void *writer(void *arg)
{
	struct timespec rest = { 0, 1000000 };
	uint64_t gen = 0;

	(void)arg;
	while (!stress_stopping()) {
		gen++;
		for (size_t i = 0; i < npages; i += 2)
			*(uint64_t *)(base + i * PG) = gen << 32 | i;
		for (size_t i = 0; i < npages; i++) {
			uint64_t want = i & 1 ? (uint64_t)i * 3 : gen << 32 | i;

			if (*(uint64_t *)(base + i * PG) != want)
				stress_harm2("a page changed (page, value)", (long long)i,
					     (long long)*(uint64_t *)(base + i * PG), true);
		}
		passes++;
		stress_checked(1);
		nanosleep(&rest, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int i = stress_init(argc, argv, "[VMAS]");
	uint64_t seed = 0, regs = 0;
	pthread_t t;

	npages = i < argc ? strtoul(argv[i++], NULL, 10) : 5000;
	if (i != argc || npages < 2 || npages > 60000)
		stress_usage(argv[0], "[VMAS (2-60000)]");
	base = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		perror("stress_vmas: mmap");
		return 2;
	}
	for (size_t k = 1; k < npages; k += 2) {
		*(uint64_t *)(base + k * PG) = (uint64_t)k * 3;
		if (mprotect(base + k * PG, PG, PROT_READ)) {
			perror("stress_vmas: mprotect (is vm.max_map_count too low?)");
			return 2;
		}
	}
	if (pthread_create(&t, NULL, writer, NULL)) {
		perror("stress_vmas: pthread_create");
		return 2;
	}
	stress_ready();
	stress_regs_loop(seed, &regs);
	pthread_join(t, NULL);
	return stress_finish("vmas: %zu pages, %llu passes over them, %llu register checks failed",
			     npages, (unsigned long long)passes, (unsigned long long)regs);
}
