// SPDX-License-Identifier: MIT
/*
 * bench_writes: (a) the profiler's tick vs one raw PAGEMAP_SCAN doing the
 * same work on a 1 GiB, ~125-VMA target with 0 %, 10 %, 100 % of its pages
 * written; (c) how long injection stops a busy target.
 *   bench_writes WORKLOADS_DIR [reps]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memlens/attach.h"
#include "../../lib/scan/pagescan.h"
#include "memlens/profiler.h"

#define NREG 120
#define PAGES_PER_REG 2185 /* 120 x 2185 pages = 1.0 GiB */

static FILE *tin, *tout;

static const char *cmd(const char *fmt, ...)
{
	static char line[256];
	va_list ap;

	va_start(ap, fmt);
	vfprintf(tin, fmt, ap);
	va_end(ap);
	fputc('\n', tin);
	fflush(tin);
	if (!fgets(line, sizeof(line), tout))
		return "";
	return line;
}

static pid_t start(const char *prog, char *const argv[], int pipes)
{
	int to[2], from[2];
	pid_t pid;

	if (pipes && (pipe(to) || pipe(from)))
		exit(1);
	pid = fork();
	if (pid == 0) {
		if (pipes) {
			dup2(to[0], 0);
			dup2(from[1], 1);
			close(to[0]);
			close(to[1]);
			close(from[0]);
			close(from[1]);
		} else if (!freopen("/dev/null", "w", stdout)) {
			_exit(127);
		}
		execv(prog, argv);
		_exit(127);
	}
	if (pipes) {
		close(to[0]);
		close(from[1]);
		tin = fdopen(to[1], "w");
		tout = fdopen(from[0], "r");
	}
	return pid;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static void write_pct(int pct)
{
	for (int r = 0; r < NREG && pct; r++)
		cmd("write r%d %d", r, pct == 100 ? 1 : 100 / pct);
}

int main(int argc, char **argv)
{
	char prog[4096];
	ML_OPTS(ml_profiler_opts, o);
	struct ml_profiler *p;
	struct pagescan ps;
	struct ml_err err = { 0 };
	uint64_t lo = UINT64_MAX, hi = 0;
	int reps = argc > 2 ? atoi(argv[2]) : 15;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: bench_writes WORKLOADS_DIR [reps]\n");
		return 2;
	}
	snprintf(prog, sizeof(prog), "%s/pagewriter", argv[1]);
	char *pw_argv[] = { "pagewriter", NULL };
	pid_t pid = start(prog, pw_argv, 1);

	for (int r = 0; r < NREG; r++) {
		unsigned long long s, e;
		char nm[16];

		if (sscanf(cmd("map r%d %d", r, PAGES_PER_REG), "mapped %15s %llx %llx", nm, &s,
			   &e) != 3) {
			fprintf(stderr, "bench_writes: pagewriter failed to map\n");
			return 1;
		}
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
		cmd("write r%d 1", r);
	}
	if (ml_profiler_open(&p, pid, &o, &err) || mli_pagescan_open(&ps, pid, 1024, &err)) {
		fprintf(stderr, "bench_writes: %s\n", err.msg);
		return 1;
	}
	struct ml_profiler_sample s;
	ml_profiler_tick(p, &s, &err);
	printf("(a) tick vs raw PAGEMAP_SCAN, 1 GiB in %d VMAs of the target (%d VMAs in all), %d "
	       "reps, medians\n",
	       NREG, s.total_vmas, reps);
	ml_profiler_sample_free(&s);
	printf("    %-8s %12s %12s %12s %12s %8s\n", "written", "dirty pages", "tick (us)",
	       "its scans", "raw (us)", "ratio");
	static const int pcts[] = { 0, 10, 100 };
	for (int k = 0; k < 3; k++) {
		uint64_t tick[64], raw[64], scan[64];
		int64_t pages = 0;

		for (int i = 0; i < reps && i < 64; i++) {
			write_pct(pcts[k]);
			if (ml_profiler_tick(p, &s, &err)) {
				fprintf(stderr, "bench_writes: %s\n", err.msg);
				return 1;
			}
			tick[i] = s.tick_ns;
			scan[i] = s.scan_ns;
			pages = s.dirty.dirty_pages;
			ml_profiler_sample_free(&s);
			write_pct(pcts[k]);
			uint64_t t0 = now_ns();
			long n = mli_pagescan_dirty(&ps, lo, hi, 0, NULL, NULL, &err);
			raw[i] = now_ns() - t0;
			if (n < 0) {
				fprintf(stderr, "bench_writes: %s\n", err.msg);
				return 1;
			}
		}
		uint64_t mt = median(tick, reps), mr = median(raw, reps), ms = median(scan, reps);
		printf("    %6d %% %12lld %12.0f %12.0f %12.0f %7.2fx\n", pcts[k], (long long)pages,
		       mt / 1e3, ms / 1e3, mr / 1e3, (double)mt / (double)mr);
	}
	mli_pagescan_close(&ps);
	ml_profiler_close(p);
	fclose(tin);
	waitpid(pid, NULL, 0);

	/* (c) injection stop time on a busy target */
	snprintf(prog, sizeof(prog), "%s/memwrite", argv[1]);
	char *mw_argv[] = { "memwrite", "-s", "30", NULL };
	pid = start(prog, mw_argv, 0);
	usleep(300000);
	uint64_t stop[64];
	int n = 0;
	for (int i = 0; i < 30; i++) {
		ML_RESULT(ml_attach_stats, st);
		int fd = ml_wp_attach(pid, false, &st, &err);

		if (fd < 0) {
			fprintf(stderr, "bench_writes: %s\n", err.msg);
			break;
		}
		close(fd);
		stop[n++] = st.stopped_ns;
		usleep(20000);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	if (n) {
		uint64_t mx = 0;

		for (int i = 0; i < n; i++)
			mx = stop[i] > mx ? stop[i] : mx;
		printf("(c) injection stops a busy target for %.3f ms (median), %.3f ms (max) over "
		       "%d attaches\n",
		       median(stop, n) / 1e6, mx / 1e6, n);
	}
	return 0;
}
