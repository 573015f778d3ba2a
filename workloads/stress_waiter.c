// SPDX-License-Identifier: MIT
/*
 * stress_waiter: threads that block in system calls, again and again, and
 * check that each call returned exactly what it returns untouched.
 *   stress_waiter -r RESULT [-t SECONDS] MODE [MODE...]
 * The main thread waits in the first MODE, one more thread in each other.
 * Every wait is 20 ms; no signal handler is installed, so no call may end
 * with EINTR:
 *   nanosleep  returns 0, never early
 *   read       a pipe another thread writes a byte into every 10 ms:
 *              returns 1 and the next byte of the sequence
 *   poll       an empty pipe: returns 0 (timeout), never early
 *   select     an empty pipe: returns 0, the set cleared, never early
 *   futex      FUTEX_WAIT on a word nobody changes: ETIMEDOUT, never early
 *   cond       pthread_cond_timedwait (CLOCK_MONOTONIC): ETIMEDOUT, not
 *              before its deadline
 *   epoll      epoll_wait on an empty pipe: returns 0, never early
 * "Never early": a stop that interrupts the call must resume it with the
 * time that was left (the kernel's restart), not end it. How much later than
 * asked a call returned is shown (it includes the time the process was
 * stopped), not judged: the machine is shared.
 */
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

#include "stress.h"

#define WAIT_NS 20000000ll
#define MAX_MODES 8

struct waiter {
	const char *mode;
	int rd, wr; /* a pipe: empty, or fed by a thread (read) */
	uint64_t calls, late_max_ns;
	pthread_t thread, feeder;
};

static long long elapsed_since(uint64_t t0)
{
	return (long long)(stress_now_ns() - t0);
}

static void timed(struct waiter *w, uint64_t t0, const char *early)
{
	long long el = elapsed_since(t0);

	if (el < WAIT_NS)
		stress_harm(early, el, WAIT_NS);
	else if ((uint64_t)(el - WAIT_NS) > w->late_max_ns)
		w->late_max_ns = (uint64_t)(el - WAIT_NS);
}

static void *feed(void *arg)
{
	struct waiter *w = arg;
	struct timespec ts = { 0, 10000000 };
	unsigned char c = 0;

	while (!stress_stopping()) {
		if (nanosleep(&ts, NULL))
			stress_harm("the feeder's nanosleep failed", errno, 0);
		if (write(w->wr, &c, 1) != 1) {
			stress_harm("the feeder's write failed", errno, 0);
			break;
		}
		c++;
	}
	close(w->wr);
	return NULL;
}

static pthread_mutex_t cond_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_cv; /* on CLOCK_MONOTONIC, nobody signals it */
static uint32_t futex_word; /* nobody changes it */

static void wait_cond(struct waiter *w, uint64_t t0)
{
	struct timespec dl;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += WAIT_NS;
	if (dl.tv_nsec >= 1000000000l) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000l;
	}
	pthread_mutex_lock(&cond_mu);
	r = pthread_cond_timedwait(&cond_cv, &cond_mu, &dl);
	pthread_mutex_unlock(&cond_mu);
	if (r != ETIMEDOUT)
		stress_harm("pthread_cond_timedwait did not time out (result)", r, 0);
	timed(w, t0, "pthread_cond_timedwait returned early (ns, asked)");
}

static void wait_epoll(struct waiter *w, uint64_t t0)
{
	static __thread int ep = -1;
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	if (ep < 0) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, w->rd, &ev)) {
			stress_harm("epoll set-up failed", errno, 0);
			return;
		}
	}
	r = epoll_wait(ep, &ev, 1, (int)(WAIT_NS / 1000000));
	if (stress_stop_eintr(r))
		return;
	if (r != 0)
		stress_harm("epoll_wait returned other than 0 (result, errno)", r,
			    r < 0 ? errno : 0);
	timed(w, t0, "epoll_wait returned early (ns, asked)");
}

static void wait_read(struct waiter *w, unsigned char *next_byte)
{
	unsigned char c;
	long r = read(w->rd, &c, 1);

	if (stress_stop_eintr(r))
		return;
	if (r == 0 && stress_stopping())
		return; /* the feeder stopped first */
	if (r != 1)
		stress_harm("read returned other than 1 (result, errno)", r, r < 0 ? errno : 0);
	else if (c != *next_byte)
		stress_harm("read returned a byte out of sequence (got, want)", c, *next_byte);
	*next_byte = (unsigned char)(c + 1);
}

static void one_call(struct waiter *w, unsigned char *next_byte)
{
	uint64_t t0 = stress_now_ns();
	long r;

	if (!strcmp(w->mode, "nanosleep")) {
		struct timespec ts = { 0, WAIT_NS };

		r = nanosleep(&ts, NULL);
		if (stress_stop_eintr(r))
			return;
		if (r)
			stress_harm("nanosleep failed (result, errno)", r, errno);
		timed(w, t0, "nanosleep returned early (ns, asked)");
	} else if (!strcmp(w->mode, "read")) {
		wait_read(w, next_byte);
	} else if (!strcmp(w->mode, "poll")) {
		struct pollfd p = { .fd = w->rd, .events = POLLIN };

		r = poll(&p, 1, (int)(WAIT_NS / 1000000));
		if (stress_stop_eintr(r))
			return;
		if (r != 0)
			stress_harm("poll returned other than 0 (result, errno)", r,
				    r < 0 ? errno : 0);
		timed(w, t0, "poll returned early (ns, asked)");
	} else if (!strcmp(w->mode, "select")) {
		struct timeval tv = { 0, WAIT_NS / 1000 };
		fd_set set;

		FD_ZERO(&set);
		FD_SET(w->rd, &set);
		r = select(w->rd + 1, &set, NULL, NULL, &tv);
		if (stress_stop_eintr(r))
			return;
		if (r != 0 || FD_ISSET(w->rd, &set))
			stress_harm("select returned other than 0 (result, errno)", r,
				    r < 0 ? errno : 0);
		timed(w, t0, "select returned early (ns, asked)");
	} else if (!strcmp(w->mode, "futex")) {
		struct timespec ts = { 0, WAIT_NS };

		r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (stress_stop_eintr(r))
			return;
		if (r != -1 || errno != ETIMEDOUT)
			stress_harm("futex wait did not time out (result, errno)", r,
				    r < 0 ? errno : 0);
		timed(w, t0, "futex wait returned early (ns, asked)");
	} else if (!strcmp(w->mode, "cond")) {
		wait_cond(w, t0);
	} else {
		wait_epoll(w, t0);
	}
	w->calls++;
	stress_checked(1);
}

static void *run(void *arg)
{
	struct waiter *w = arg;
	unsigned char next = 0;

	while (!stress_stopping())
		one_call(w, &next);
	return NULL;
}

static const char *const modes[] = {
	"nanosleep", "read", "poll", "select", "futex", "cond", "epoll"
};

static bool known(const char *m)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(m, modes[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const char usage[] = "MODE [MODE...] (nanosleep read poll select futex cond epoll)";
	int first = stress_init(argc, argv, usage), n = argc - first, fds[2];
	struct waiter w[MAX_MODES] = { 0 };
	pthread_condattr_t ca;
	char sum[900];
	size_t at = 0;

	if (n < 1 || n > MAX_MODES)
		stress_usage(argv[0], usage);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond_cv, &ca);
	for (int i = 0; i < n; i++) {
		w[i].mode = argv[first + i];
		if (!known(w[i].mode))
			stress_usage(argv[0], usage);
		if (pipe2(fds, O_CLOEXEC)) {
			perror("pipe2");
			return 2;
		}
		w[i].rd = fds[0];
		w[i].wr = fds[1];
		if (!strcmp(w[i].mode, "read") && pthread_create(&w[i].feeder, NULL, feed, &w[i])) {
			fprintf(stderr, "stress_waiter: pthread_create failed\n");
			return 2;
		}
	}
	for (int i = 1; i < n; i++)
		if (pthread_create(&w[i].thread, NULL, run, &w[i])) {
			fprintf(stderr, "stress_waiter: pthread_create failed\n");
			return 2;
		}
	stress_ready();
	run(&w[0]);
	for (int i = 1; i < n; i++)
		pthread_join(w[i].thread, NULL);
	for (int i = 0; i < n; i++) {
		if (!strcmp(w[i].mode, "read"))
			pthread_join(w[i].feeder, NULL);
		at += (size_t)snprintf(sum + at, sizeof(sum) - at,
				       "%s%s: %llu calls, at most %.1f ms late", i ? "; " : "",
				       w[i].mode, (unsigned long long)w[i].calls,
				       (double)w[i].late_max_ns / 1e6);
		if (at >= sizeof(sum))
			break;
	}
	return stress_finish("waiter: %s", sum);
}
