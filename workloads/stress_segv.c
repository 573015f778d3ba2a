// SPDX-License-Identifier: MIT
/*
 * stress_segv: a SIGSEGV write barrier, as JVMs and Go use for card marking.
 *   stress_segv -r RESULT [-t SECONDS]
 * 256 pages are made read-only; the main thread writes into them in a
 * pseudo-random order. The first write to each page faults: the SIGSEGV
 * handler checks that it is the kernel's (SEGV_ACCERR) for exactly the
 * address being written, and makes the page writable. Then all pages are
 * made read-only again, and so on. Every round must take exactly one fault
 * per page. A SIGSEGV that is not that fault (SI_USER from a tracer that
 * re-sent one it caught, no address, another address) is harm, and so is a
 * fault missing or taken twice.
 */
#include "stress.h"

#define PG 4096ul
#define CARDS 256ul

static char *cards;
static char *volatile writing; /* the address the main thread writes now */
static volatile uint64_t faults, forged;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;

	(void)sig;
	(void)uc;
	if (si->si_code != SEGV_ACCERR || a != writing) {
		forged++;
		stress_harm2("SIGSEGV not from the write barrier (si_code, si_addr)", si->si_code,
			     (long long)(uintptr_t)a, true);
		if (!(a >= cards && a < cards + CARDS * PG) || si->si_code != SEGV_ACCERR)
			return; /* not a fault: the write, if any, faults again */
	}
	faults++;
	if (mprotect((void *)((uintptr_t)a & ~(PG - 1)), PG, PROT_READ | PROT_WRITE))
		_exit(99);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	uint64_t rounds = 0, rnd = 1, missed = 0, extra = 0, seed = 0;

	if (stress_init(argc, argv, NULL) != argc)
		stress_usage(argv[0], NULL);
	cards = mmap(NULL, CARDS * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sigemptyset(&sa.sa_mask);
	if (cards == MAP_FAILED || sigaction(SIGSEGV, &sa, NULL)) {
		perror("stress_segv: set-up");
		return 2;
	}
	memset(cards, 0, CARDS * PG);
	stress_ready();
	while (!stress_stopping()) {
		uint64_t f0 = faults;
		size_t step;

		if (mprotect(cards, CARDS * PG, PROT_READ)) {
			stress_harm("mprotect failed", errno, 0);
			break;
		}
		/* an odd step visits every page once, in an order that changes */
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		step = ((rnd >> 33) % CARDS) | 1;
		for (size_t k = 0, p = (rnd >> 20) % CARDS; k < CARDS;
		     k++, p = (p + step) % CARDS) {
			char *a = cards + p * PG + (k * 64) % PG;

			writing = a;
			*(volatile char *)a = (char)rounds;
			writing = NULL;
			if (*(volatile char *)a != (char)rounds)
				stress_harm2("the barrier's write was lost",
					     (long long)(uintptr_t)a, rounds, true);
		}
		if (faults - f0 != CARDS) {
			if (faults - f0 < CARDS)
				missed += CARDS - (faults - f0);
			else
				extra += faults - f0 - CARDS;
			stress_harm("a round did not take one fault per page (faults, pages)",
				    (long long)(faults - f0), CARDS);
		}
		if (stress_regs_changed(seed++, 2000))
			stress_harm("registers changed", 1, (long long)seed);
		rounds++;
		stress_checked(1);
	}
	return stress_finish("segv: %llu rounds, %llu faults, %llu forged SIGSEGV, %llu faults "
			     "missing, %llu extra",
			     (unsigned long long)rounds, (unsigned long long)faults,
			     (unsigned long long)forged, (unsigned long long)missed,
			     (unsigned long long)extra);
}
