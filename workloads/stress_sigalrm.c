// SPDX-License-Identifier: MIT
/*
 * stress_sigalrm: SIGALRM every millisecond from an interval timer.
 *   stress_sigalrm -r RESULT [-t SECONDS]
 * setitimer(ITIMER_REAL) sends SIGALRM from the kernel: its si_code is
 * SI_KERNEL, always. A SIGALRM with any other si_code (SI_USER from a
 * kill() or tkill() of a tracer that re-sends what it caught) is harm. The
 * main thread checks its registers around spins while the signals land.
 */
#include <sys/time.h>

#include "stress.h"

static volatile uint64_t alarms, wrong;

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	alarms++;
	if (si->si_code != SI_KERNEL) {
		wrong++;
		stress_harm("SIGALRM not from the kernel (si_code, si_pid)", si->si_code,
			    si->si_pid);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	uint64_t seed = 0, bad = 0;

	if (stress_init(argc, argv, NULL) != argc)
		stress_usage(argv[0], NULL);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL)) {
		perror("stress_sigalrm: set-up");
		return 2;
	}
	stress_ready();
	while (!stress_stopping()) {
		int n = stress_regs_changed(seed++, 20000);

		if (n) {
			stress_harm("registers changed", n, (long long)seed);
			bad++;
		}
		stress_checked(1);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	return stress_finish("sigalrm: %llu SIGALRM, %llu not from the kernel, %llu register "
			     "checks failed",
			     (unsigned long long)alarms, (unsigned long long)wrong,
			     (unsigned long long)bad);
}
