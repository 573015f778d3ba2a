// SPDX-License-Identifier: MIT
/*
 * sleeper: blocks in one system call and reports how long it took, so a
 * test can check that being profiled does not change it.
 *   sleeper nanosleep MS      one nanosleep of MS ms
 *   sleeper read MS           read() on a pipe nobody writes, with alarm after MS ms
 *   sleeper poll MS           poll() with a timeout of MS ms
 *   sleeper futex MS          FUTEX_WAIT with a timeout of MS ms
 * Prints "ready PID" first, then "elapsed_us N result R errno E".
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void on_alarm(int s)
{
	(void)s;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	long ms;
	long long t0;
	long res = 0;
	int e = 0, fds[2];
	static int futex_word;

	if (argc < 3) {
		fprintf(stderr, "usage: sleeper nanosleep|read|poll|futex MS\n");
		return 2;
	}
	ms = atol(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(fds))
		return 1;
	printf("ready %d\n", getpid());
	t0 = now_us();
	if (!strcmp(argv[1], "nanosleep")) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		res = nanosleep(&ts, NULL);
	} else if (!strcmp(argv[1], "read")) {
		struct sigaction sa = { .sa_handler = on_alarm };
		struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };
		char c;

		sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: read returns EINTR */
		setitimer(ITIMER_REAL, &it, NULL);
		res = read(fds[0], &c, 1);
	} else if (!strcmp(argv[1], "poll")) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };

		res = poll(&p, 1, (int)ms);
	} else if (!strcmp(argv[1], "futex")) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		res = syscall(SYS_futex, &futex_word, FUTEX_WAIT, 0, &ts, NULL, 0);
	} else {
		return 2;
	}
	e = res < 0 ? errno : 0;
	printf("elapsed_us %lld result %ld errno %d\n", now_us() - t0, res, e);
	return 0;
}
