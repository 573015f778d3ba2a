// SPDX-License-Identifier: MIT
/*
 * stress_busy: a busy 8-thread process that checks itself.
 *   stress_busy -r RESULT [-t SECONDS]
 * The main thread never sleeps: it calls a function that makes a system
 * call in its middle and checks the value it returns, and checks its
 * registers (stress_regs_changed()) around a spin. Seven workers each fill
 * their own 1 MiB with a pattern that changes every pass and verify it, check
 * their registers, and rest 1 ms (the machine is shared). A stop, an
 * injected system call or a signal that lands anywhere in them must leave
 * every value as it was. Built twice: as is, and with frame pointers
 * (stress_busy_fp), whose calls and returns walk the stack differently.
 */
#include <pthread.h>
#include <sys/syscall.h>

#include "stress.h"

#define WORKERS 7
#define REGION (1ul << 20)

static pid_t self;
/* mapped before the target is ready: its memory map stays as it is then */
static uint64_t *regions[WORKERS];
static uint64_t calls, passes;

/* Mixes @i with the pid it asks the kernel for: the system call is where
 * the thread most often is when it is stopped. */
static __attribute__((noinline)) uint64_t mix_with_pid(uint64_t i)
{
	uint64_t acc = i * 0x9e3779b97f4a7c15ull;
	long pid = syscall(SYS_getpid);

	for (int k = 0; k < 32; k++)
		acc = acc * 6364136223846793005ull + (uint64_t)k;
	return acc ^ (uint64_t)pid;
}

static __attribute__((noinline)) uint64_t expected_mix(uint64_t i)
{
	uint64_t acc = i * 0x9e3779b97f4a7c15ull;

	for (int k = 0; k < 32; k++)
		acc = acc * 6364136223846793005ull + (uint64_t)k;
	return acc ^ (uint64_t)self;
}

static void *worker(void *arg)
{
	uint64_t id = (uintptr_t)arg, gen = 0, *m = regions[id - 1];
	struct timespec rest = { 0, 1000000 };

	while (!stress_stopping()) {
		uint64_t tag = (id << 56) | (++gen << 20);
		int n;

		for (size_t k = 0; k < REGION / 8; k += 8)
			m[k] = tag | k;
		for (size_t k = 0; k < REGION / 8; k += 8)
			if (m[k] != (tag | k))
				stress_harm2("worker memory changed", (long long)(uintptr_t)&m[k],
					     (long long)m[k], true);
		n = stress_regs_changed(tag, 5000);
		if (n)
			stress_harm("worker registers changed", n, (long long)id);
		__atomic_add_fetch(&passes, 1, __ATOMIC_RELAXED);
		stress_checked(1);
		if (nanosleep(&rest, NULL) && !stress_stop_eintr(-1))
			stress_harm("worker nanosleep failed (no handler is installed)", errno,
				    (long long)id);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t w[WORKERS];
	uint64_t i = 0, bad_calls = 0, bad_regs = 0;

	if (stress_init(argc, argv, NULL) != argc)
		stress_usage(argv[0], NULL);
	self = getpid();
	for (int k = 0; k < WORKERS; k++) {
		regions[k] = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		if (regions[k] == MAP_FAILED) {
			perror("stress_busy: mmap");
			return 2;
		}
	}
	for (uintptr_t k = 0; k < WORKERS; k++)
		if (pthread_create(&w[k], NULL, worker, (void *)(k + 1))) {
			fprintf(stderr, "stress_busy: pthread_create failed\n");
			return 2;
		}
	stress_ready();
	while (!stress_stopping()) {
		uint64_t got = mix_with_pid(i), want = expected_mix(i);
		int n;

		if (got != want) {
			stress_harm2("a function returned a wrong value", (long long)got,
				     (long long)want, true);
			bad_calls++;
		}
		n = stress_regs_changed(i, 2000);
		if (n) {
			stress_harm("main thread registers changed", n, (long long)i);
			bad_regs++;
		}
		i++;
		if (!(i & 63)) {
			__atomic_add_fetch(&calls, 64, __ATOMIC_RELAXED);
			stress_checked(1);
		}
	}
	for (int k = 0; k < WORKERS; k++)
		pthread_join(w[k], NULL);
	return stress_finish("busy: %llu checked calls (%llu wrong), %llu register checks failed, "
			     "%llu worker passes",
			     (unsigned long long)i, (unsigned long long)bad_calls,
			     (unsigned long long)bad_regs, (unsigned long long)passes);
}
