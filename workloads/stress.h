/* SPDX-License-Identifier: MIT */
/*
 * Shared by the stress targets (workloads/stress_*.c): each one checks
 * itself while memlens attaches, profiles, detaches or dies, and reports any
 * harm it saw.
 *
 *   stress_NAME -r RESULT [-t SECONDS] [target options]
 *
 * RESULT is a file the target maps shared (struct stress_result, one page):
 * the driver reads the counters while the target runs (no signal, no pipe:
 * nothing that would itself disturb the target). The target stops on SIGTERM
 * (taken by a thread of its own: see stress_stop_thread()) or after SECONDS
 * (default 600: it never outlives a dead driver for long),
 * runs its final checks, writes its summary and exits 0 without harm, 1 with.
 * Any other end (a signal) is harm the driver sees in the wait status.
 *
 * Harm is recorded from signal handlers too, so stress_harm() only uses
 * async-signal-safe operations.
 */
#ifndef MEMLENS_STRESS_H
#define MEMLENS_STRESS_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stress_result.h"

static struct stress_result *stress_res;
static volatile sig_atomic_t stress_stop_flag;
static struct timespec stress_deadline;

static inline uint64_t stress_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline bool stress_stopping(void)
{
	struct timespec ts;

	if (stress_stop_flag)
		return true;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (ts.tv_sec > stress_deadline.tv_sec)
		stress_stop_flag = 1;
	return stress_stop_flag;
}

/*
 * The target is told to stop by SIGTERM, whose handler interrupts the
 * call a thread is blocked in: that EINTR is the stop, not harm.
 */
static inline bool stress_stop_eintr(long r)
{
	return r < 0 && errno == EINTR && stress_stop_flag;
}

static inline void stress_checked(uint64_t n)
{
	__atomic_add_fetch(&stress_res->checks, n, __ATOMIC_RELAXED);
}

/* Async-signal-safe: append a decimal (or 0x-hex) number to @b. */
static inline size_t stress_put_num(char *b, size_t at, size_t cap, long long v, bool hex)
{
	char t[24];
	int n = 0;
	unsigned long long u =
		(!hex && v < 0) ? 0ull - (unsigned long long)v : (unsigned long long)v;

	do {
		t[n++] = "0123456789abcdef"[u % (hex ? 16 : 10)];
		u /= hex ? 16 : 10;
	} while (u && n < 20);
	if (!hex && v < 0 && at + 1 < cap)
		b[at++] = '-';
	if (hex) {
		if (at + 2 < cap) {
			b[at++] = '0';
			b[at++] = 'x';
		}
	}
	while (n && at + 1 < cap)
		b[at++] = t[--n];
	b[at] = '\0';
	return at;
}

/*
 * Record one harm: @what, then the numbers @a and @b ("what (a, b)"; @hex
 * prints them in hex). The first harm's text is kept. Async-signal-safe.
 */
static inline void stress_harm2(const char *what, long long a, long long b, bool hex)
{
	static int claimed;
	char *t = stress_res->first;
	size_t cap = sizeof(stress_res->first), at = 0;

	__atomic_add_fetch(&stress_res->harm, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(&claimed, 1, __ATOMIC_SEQ_CST))
		return;
	while (*what && at + 3 < cap)
		t[at++] = *what++;
	t[at++] = ' ';
	t[at++] = '(';
	at = stress_put_num(t, at, cap, a, hex);
	if (at + 2 < cap) {
		t[at++] = ',';
		t[at++] = ' ';
	}
	at = stress_put_num(t, at, cap, b, hex);
	if (at + 1 < cap)
		t[at++] = ')';
	t[at] = '\0';
}

static inline void stress_harm(const char *what, long long a, long long b)
{
	stress_harm2(what, a, b, false);
}

/*
 * SIGTERM is blocked in every thread and taken by a thread of its own,
 * which blocks every other signal:
 * the driver's stop interrupts no system call of the target's threads (an
 * EINTR they see is never the driver's), and the waiters run without any
 * signal handler.
 */
static void *stress_stop_thread(void *arg)
{
	sigset_t *term = arg;
	int sig;

	while (sigwait(term, &sig))
		;
	__atomic_store_n(&stress_stop_flag, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static inline void stress_usage(const char *name, const char *more)
{
	fprintf(stderr, "usage: %s -r RESULT_FILE [-t SECONDS]%s%s\n", name, more ? " " : "",
		more ? more : "");
	exit(2);
}

/*
 * Parse -r and -t (they must come first), map the result file, stop on
 * SIGTERM. Returns the index of the first target-specific argument.
 */
static inline int stress_init(int argc, char **argv, const char *more)
{
	const char *path = NULL;
	long secs = 600;
	static sigset_t term;
	sigset_t all;
	int i = 1, fd;
	pthread_t stopper;

	while (i + 1 < argc && argv[i][0] == '-' && argv[i][2] == '\0' &&
	       (argv[i][1] == 'r' || argv[i][1] == 't')) {
		if (argv[i][1] == 'r')
			path = argv[i + 1];
		else
			secs = atol(argv[i + 1]);
		i += 2;
	}
	if (!path || secs <= 0)
		stress_usage(argv[0], more);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096)) {
		fprintf(stderr, "%s: cannot create the result file %s: %s\n", argv[0], path,
			strerror(errno));
		exit(2);
	}
	stress_res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (stress_res == MAP_FAILED) {
		fprintf(stderr, "%s: cannot map %s: %s\n", argv[0], path, strerror(errno));
		exit(2);
	}
	memset(stress_res, 0, sizeof(*stress_res));
	stress_res->pid = getpid();
	clock_gettime(CLOCK_MONOTONIC, &stress_deadline);
	stress_deadline.tv_sec += secs;
	/* the stopper starts with every signal blocked (it takes none of the
	 * signals the target's own threads handle), the others with SIGTERM */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (pthread_create(&stopper, NULL, stress_stop_thread, &term)) {
		fprintf(stderr, "%s: pthread_create failed\n", argv[0]);
		exit(2);
	}
	pthread_sigmask(SIG_SETMASK, &term, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return i;
}

static inline void stress_ready(void)
{
	__atomic_store_n(&stress_res->magic, STRESS_MAGIC, __ATOMIC_SEQ_CST);
	printf("ready %d\n", getpid());
}

/* Write the summary (printf format), mark the result done; the exit code. */
__attribute__((format(printf, 1, 2))) static inline int stress_finish(const char *fmt, ...)
{
	va_list ap;
	int code = stress_res->harm ? 1 : 0;

	va_start(ap, fmt);
	vsnprintf(stress_res->summary, sizeof(stress_res->summary), fmt, ap);
	va_end(ap);
	stress_res->exit_code = (uint32_t)code;
	__atomic_store_n(&stress_res->done, 1, __ATOMIC_SEQ_CST);
	printf("%s\nharm %llu%s%s\n", stress_res->summary, (unsigned long long)stress_res->harm,
	       stress_res->harm ? ": " : "", stress_res->first);
	return code;
}

/*
 * Every general-purpose register but rsp and rbp (the frame pointer of a
 * -fno-omit-frame-pointer build), and xmm0-7, hold values derived from
 * @seed while the thread spins @spins times; all must come out unchanged.
 * A stop, an injected system call or a signal handler in between must
 * restore them. Returns the number of registers that changed.
 */
struct stress_regblk {
	uint64_t in[15], out[15]; /* rax rbx rcx rdx rsi rdi r8-r15 */
	uint64_t xin[16], xout[16]; /* xmm0-7, two halves each */
	uint64_t spins;
};

static inline int stress_regs_changed(uint64_t seed, unsigned int spins)
{
	struct stress_regblk b, *bp = &b;
	int bad = 0;

	for (int i = 0; i < 15; i++)
		b.in[i] = seed ^ (0x0101010101010101ull * (uint64_t)(i + 1));
	for (int i = 0; i < 16; i++)
		b.xin[i] = ~seed ^ (0x1111111111111111ull * (uint64_t)i);
	b.spins = spins ? spins : 1;
	/* clang-format off */
#define STRESS_LD(reg, i) "mov %c[in]+" #i "*8(%%rax), %%" reg "\n\t"
#define STRESS_ST(reg, i) "mov %%" reg ", %c[out]+" #i "*8(%%rax)\n\t"
#define STRESS_XLD(i) "movdqu %c[xin]+" #i "*16(%%rax), %%xmm" #i "\n\t"
#define STRESS_XST(i) "movdqu %%xmm" #i ", %c[xout]+" #i "*16(%%rax)\n\t"
	asm volatile(
		"sub $128, %%rsp\n\t" /* the red zone is the compiler's */
		"push %%rax\n\t"
		"pushq %c[spins](%%rax)\n\t"
		STRESS_LD("rbx", 1) STRESS_LD("rcx", 2) STRESS_LD("rdx", 3)
		STRESS_LD("rsi", 4) STRESS_LD("rdi", 5) STRESS_LD("r8", 6)
		STRESS_LD("r9", 7) STRESS_LD("r10", 8) STRESS_LD("r11", 9)
		STRESS_LD("r12", 10) STRESS_LD("r13", 11) STRESS_LD("r14", 12)
		STRESS_LD("r15", 13)
		STRESS_XLD(0) STRESS_XLD(1) STRESS_XLD(2) STRESS_XLD(3)
		STRESS_XLD(4) STRESS_XLD(5) STRESS_XLD(6) STRESS_XLD(7)
		STRESS_LD("rax", 0)
		"1: decq (%%rsp)\n\t"
		"jnz 1b\n\t"
		"add $8, %%rsp\n\t"
		"xchg %%rax, (%%rsp)\n\t"
		STRESS_ST("rbx", 1) STRESS_ST("rcx", 2) STRESS_ST("rdx", 3)
		STRESS_ST("rsi", 4) STRESS_ST("rdi", 5) STRESS_ST("r8", 6)
		STRESS_ST("r9", 7) STRESS_ST("r10", 8) STRESS_ST("r11", 9)
		STRESS_ST("r12", 10) STRESS_ST("r13", 11) STRESS_ST("r14", 12)
		STRESS_ST("r15", 13)
		STRESS_XST(0) STRESS_XST(1) STRESS_XST(2) STRESS_XST(3)
		STRESS_XST(4) STRESS_XST(5) STRESS_XST(6) STRESS_XST(7)
		"pop %%rbx\n\t"
		STRESS_ST("rbx", 0)
		"add $128, %%rsp"
		: "+a"(bp)
		: [in] "i"(offsetof(struct stress_regblk, in)),
		  [out] "i"(offsetof(struct stress_regblk, out)),
		  [xin] "i"(offsetof(struct stress_regblk, xin)),
		  [xout] "i"(offsetof(struct stress_regblk, xout)),
		  [spins] "i"(offsetof(struct stress_regblk, spins))
		: "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
		  "r13", "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
		  "xmm6", "xmm7", "memory", "cc");
	/* clang-format on */
#undef STRESS_LD
#undef STRESS_ST
#undef STRESS_XLD
#undef STRESS_XST
	for (int i = 0; i < 14; i++)
		bad += b.in[i] != b.out[i];
	for (int i = 0; i < 16; i += 2)
		bad += b.xin[i] != b.xout[i] || b.xin[i + 1] != b.xout[i + 1];
	return bad;
}

/*
 * The main thread's work until the run stops: register checks (20000 spins
 * each) from @seed on; every check that found a register changed is
 * reported and counted in *@regs.
 */
static inline void stress_regs_loop(uint64_t seed, uint64_t *regs)
{
	while (!stress_stopping()) {
		int k = stress_regs_changed(seed++, 20000);

		if (k) {
			stress_harm("registers changed", k, (long long)seed);
			(*regs)++;
		}
		stress_checked(1);
	}
}

#endif
