// SPDX-License-Identifier: MIT
/*
 * stop_time: how long memlens stops a target, as the target itself sees it.
 *   stop_time MEMLENS [CYCLES] [VMAS]
 * Forks a target with VMAS VMAs (default 5000: pages alternately read-write
 * and read-only) whose main thread, and one more thread, read the clock in
 * a tight loop and keep the longest gap between two readings. Then, CYCLES
 * times (default 200): one cycle of `memlens writes -p PID -i 10 -d 0.05 -q`
 * (attach, five 10 ms intervals, detach), and as long again without memlens
 * (the peer: what the machine itself does to a spinning thread). Prints the
 * median, p99 and max of the longest gap per window, profiled, unprofiled,
 * and their ratio; and the stop memlens itself reports, for comparison.
 * The longest gap of a profiled window is the stop
 * (ptrace, injected system calls) plus whatever the profiling does to the
 * thread (write-protect faults, contention on the memory map's lock).
 * Everything runs at nice -20 (when allowed), so that the rest of a busy
 * machine disturbs the measure less; an idle machine is still best.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096ul

struct shared {
	uint64_t max_gap[2]; /* ns, main thread and the other: reset by the driver */
	int ready;
};

static struct shared *sh;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin(int slot)
{
	uint64_t last = now_ns();

	for (;;) {
		uint64_t t = now_ns(), gap = t - last,
			 cur = __atomic_load_n(&sh->max_gap[slot], __ATOMIC_RELAXED);

		last = t;
		while (gap > cur &&
		       !__atomic_compare_exchange_n(&sh->max_gap[slot], &cur, gap, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
}

static void *other(void *arg)
{
	(void)arg;
	spin(1);
	return NULL;
}

static void target(size_t vmas)
{
	char *m = mmap(NULL, vmas * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;

	if (m == MAP_FAILED)
		_exit(2);
	for (size_t i = 0; i < vmas; i++) {
		m[i * PG] = 1;
		if ((i & 1) && mprotect(m + i * PG, PG, PROT_READ))
			_exit(2);
	}
	if (pthread_create(&t, NULL, other, NULL))
		_exit(2);
	__atomic_store_n(&sh->ready, 1, __ATOMIC_SEQ_CST);
	spin(0);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double med, p99, max;
};

static struct stats stats(uint64_t *v, int n)
{
	struct stats s;
	int i99 = (int)((n - 1) * 0.99 + 0.5);

	qsort(v, (size_t)n, sizeof(*v), cmp);
	s.med = v[n / 2] / 1e6;
	s.p99 = v[i99] / 1e6;
	s.max = v[n - 1] / 1e6;
	return s;
}

static void row(const char *what, struct stats p, struct stats b)
{
	printf("%-13s profiled   %8.2f %8.2f %8.2f\n", what, p.med, p.p99, p.max);
	printf("%-13s unprofiled %8.2f %8.2f %8.2f\n", "", b.med, b.p99, b.max);
	printf("%-13s ratio      %7.1fx %7.1fx %7.1fx\n", "", p.med / b.med, p.p99 / b.p99,
	       p.max / b.max);
}

/*
 * One cycle of memlens; its exit status. @own gets the stop memlens itself
 * reports ("target stopped X ms for setup"), or -1 when it says none.
 */
static int run_memlens(const char *memlens, pid_t pid, double *own)
{
	char p[16], buf[8192];
	size_t len = 0;
	int fds[2], st;
	ssize_t n;
	pid_t m;

	*own = -1;
	snprintf(p, sizeof(p), "%d", (int)pid);
	if (pipe(fds))
		return -1;
	m = fork();
	if (m == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(memlens, memlens, "writes", "-p", p, "-i", "10", "-d", "0.05", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	buf[len] = '\0';
	{
		const char *q = strstr(buf, "stopped ");

		if (q && strstr(q, " ms for setup"))
			*own = strtod(q + 8, NULL);
	}
	while (waitpid(m, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	int cycles = argc > 2 ? atoi(argv[2]) : 200, failed = 0;
	size_t vmas = argc > 3 ? strtoul(argv[3], NULL, 10) : 5000;
	uint64_t *gp[2], *gb[2], *own;
	int nown = 0;
	pid_t pid;

	if (argc < 2 || cycles < 1 || vmas < 2) {
		fprintf(stderr, "usage: stop_time MEMLENS [CYCLES] [VMAS]\n");
		return 2;
	}
	/* the target and memlens at nice -20 (as root): load that other
	 * processes put on the machine counts less in both columns */
	if (setpriority(PRIO_PROCESS, 0, -20))
		fprintf(stderr, "stop_time: not at nice -20 (%s): other load counts fully\n",
			strerror(errno));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (int k = 0; k < 2; k++) {
		gp[k] = calloc((size_t)cycles, sizeof(uint64_t));
		gb[k] = calloc((size_t)cycles, sizeof(uint64_t));
		if (!gp[k] || !gb[k])
			return 1;
	}
	own = calloc((size_t)cycles, sizeof(uint64_t));
	if (sh == MAP_FAILED || !own)
		return 1;
	pid = fork();
	if (pid == 0)
		target(vmas);
	for (int i = 0; i < 500 && !__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	if (!sh->ready) {
		fprintf(stderr, "stop_time: the target did not start\n");
		kill(pid, SIGKILL);
		return 1;
	}
	usleep(200000);
	for (int c = 0; c < cycles; c++) {
		uint64_t t0;
		double ms;
		int r;

		for (int k = 0; k < 2; k++)
			__atomic_store_n(&sh->max_gap[k], 0, __ATOMIC_SEQ_CST);
		t0 = now_ns();
		r = run_memlens(argv[1], pid, &ms);
		if (ms >= 0)
			own[nown++] = (uint64_t)(ms * 1e6);
		for (int k = 0; k < 2; k++)
			gp[k][c] = __atomic_exchange_n(&sh->max_gap[k], 0, __ATOMIC_SEQ_CST);
		failed += r != 0;
		/* as long again, unprofiled */
		t0 = now_ns() - t0;
		usleep((useconds_t)(t0 / 1000));
		for (int k = 0; k < 2; k++)
			gb[k][c] = __atomic_exchange_n(&sh->max_gap[k], 0, __ATOMIC_SEQ_CST);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("stop time as the target sees it: %zu VMAs, %d cycles of `memlens writes -i 10 "
	       "-d 0.05` (%d failed)\n",
	       vmas, cycles, failed);
	printf("longest gap of a thread reading the clock in a tight loop, per cycle (ms):\n");
	printf("%-13s %-10s %8s %8s %8s\n", "", "", "median", "p99", "max");
	row("main thread", stats(gp[0], cycles), stats(gb[0], cycles));
	row("other thread", stats(gp[1], cycles), stats(gb[1], cycles));
	if (nown) {
		struct stats o = stats(own, nown);

		printf("%-13s %-10s %8.2f %8.2f %8.2f   (the stop memlens reports, %d cycles)\n",
		       "memlens says", "", o.med, o.p99, o.max, nown);
	}
	return failed ? 1 : 0;
}
