// SPDX-License-Identifier: MIT
/*
 * stress_rtsig: real-time signals with a payload, every millisecond.
 *   stress_rtsig -r RESULT [-t SECONDS]
 * A sender process (a child of the target, never profiled) queues SIGRTMIN
 * to the target with sigqueue() every millisecond, its payload 0, 1, 2, ...
 * Real-time signals queue: every one must arrive, once, in order, as
 * SI_QUEUE from the sender with its payload. A gap in the sequence (lost
 * signals), a repeat or a step back, or a SIGRTMIN without its payload is
 * harm. At the end the target stops the sender, takes the count it sent,
 * and waits for every one of them.
 */
#include <sys/wait.h>

#include "stress.h"

struct shared {
	volatile int stop;
	volatile pid_t pid; /* the sender's, set before it sends */
	volatile int64_t sent, full;
};

static struct shared *sh;
static volatile int64_t next_seq, got, lost, bad;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	int64_t v = si->si_value.sival_int;

	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || si->si_pid != sh->pid) {
		bad++;
		stress_harm("SIGRTMIN without its payload (si_code, si_pid)", si->si_code,
			    si->si_pid);
		return;
	}
	got++;
	if (v > next_seq) {
		lost += v - next_seq;
		stress_harm("real-time signals lost (first missing, count)", next_seq,
			    v - next_seq);
	} else if (v < next_seq) {
		bad++;
		stress_harm("real-time signal repeated or out of order (got, want)", v, next_seq);
		return;
	}
	next_seq = v + 1;
}

static void send_loop(pid_t target)
{
	struct timespec next;
	int64_t seq = 0;

	sh->pid = getpid();
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!sh->stop && getppid() == target) {
		union sigval v = { .sival_int = (int)seq };

		if (sigqueue(target, SIGRTMIN, v) == 0)
			seq++;
		else if (errno == EAGAIN)
			sh->full++; /* the target's queue is full: the same payload again */
		else
			break;
		sh->sent = seq;
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000l) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000l;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_rt, .sa_flags = SA_SIGINFO | SA_RESTART };
	uint64_t seed = 0, regs = 0;
	pid_t self = getpid();
	int64_t sent;
	pid_t sender;

	if (stress_init(argc, argv, NULL) != argc)
		stress_usage(argv[0], NULL);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	sigemptyset(&sa.sa_mask);
	if (sh == MAP_FAILED || sigaction(SIGRTMIN, &sa, NULL)) {
		perror("stress_rtsig: set-up");
		return 2;
	}
	sender = fork();
	if (sender < 0) {
		perror("stress_rtsig: fork");
		return 2;
	}
	if (sender == 0)
		send_loop(self);
	stress_ready();
	while (!stress_stopping()) {
		int n = stress_regs_changed(seed++, 20000);

		if (n) {
			stress_harm("registers changed", n, (long long)seed);
			regs++;
		}
		stress_checked(1);
	}
	sh->stop = 1;
	while (waitpid(sender, NULL, 0) < 0 && errno == EINTR)
		;
	sent = sh->sent;
	/* what was queued before the sender stopped arrives at once */
	for (int i = 0; i < 1000 && next_seq < sent; i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	if (next_seq < sent) {
		lost += sent - next_seq;
		stress_harm("real-time signals never delivered (first missing, count)", next_seq,
			    sent - next_seq);
	}
	return stress_finish("rtsig: %lld sent (%lld times the queue was full), %lld delivered "
			     "with their payload, %lld lost, %lld without payload or out of "
			     "order, %llu register checks failed",
			     (long long)sent, (long long)sh->full, (long long)got, (long long)lost,
			     (long long)bad, (unsigned long long)regs);
}
