// SPDX-License-Identifier: MIT
/*
 * stress: the stress suite's driver.
 *   stress [-f] [-j JOBS] [-c PATTERN] [-n TRIES] [-T TABLE]
 * -f: the full run (`make stress`: more tries, at most ~10 min); without it
 * the short one (`make test`: at most ~2 min). Every case is bounded both in
 * tries and in time, and the whole run by a deadline. JOBS cases run at
 * once (default 2, 3 with -f). Each case prints
 *   CASE | TRIES | FAILURES | HARM
 * and "ok - stress/CASE" or "not ok - stress/CASE" (any failed try fails
 * it), or "skip - stress/CASE: reason". TABLE gets all rows as a Markdown
 * table. Environment: MEMLENS (the binary), WORKLOADS (its directory of
 * built workloads), STRESS_TMP (a scratch directory, default a new one).
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

struct env E;

#define T(...)                                                                                     \
	{                                                                                          \
		__VA_ARGS__, NULL                                                                  \
	}

/* target, its arguments, static maps; kind; tries short/full; seconds short/full */
static const struct kase cases[] = {
	{ "cycles/busy", "stress_busy", T(NULL), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/busy-fp", "stress_busy_fp", T(NULL), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiter-nanosleep", "stress_waiter", T("nanosleep"), true, case_cycles, 50, 1000,
	  6, 60 },
	{ "cycles/waiter-read", "stress_waiter", T("read"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiter-poll", "stress_waiter", T("poll"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiter-select", "stress_waiter", T("select"), true, case_cycles, 50, 1000, 6,
	  60 },
	{ "cycles/waiter-futex", "stress_waiter", T("futex"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiter-cond", "stress_waiter", T("cond"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiter-epoll", "stress_waiter", T("epoll"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/waiters-all", "stress_waiter",
	  T("nanosleep", "read", "poll", "select", "futex", "cond", "epoll"), true, case_cycles, 30,
	  300, 4, 30 },
	{ "cycles/sigalrm-1ms", "stress_sigalrm", T(NULL), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/sigqueue-rt-1ms", "stress_rtsig", T(NULL), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/segv-barrier", "stress_segv", T(NULL), false, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/fork-exec", "stress_forkexec", T(NULL), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/vmas-5000", "stress_vmas", T("5000"), true, case_cycles, 50, 1000, 6, 60 },
	{ "cycles/vma-grow", "stress_vmagrow", T(NULL), false, case_cycles, 50, 1000, 6, 60 },
	{ "sigint/busy", "stress_busy", T(NULL), true, case_sigint, 20, 200, 5, 30 },
	{ "sigint/vma-grow", "stress_vmagrow", T(NULL), false, case_sigint, 20, 200, 5, 30 },
	{ "snapshot/vma-grow", "stress_vmagrow", T(NULL), false, case_snapshot, 30, 300, 5, 30 },
	{ "kill-random/busy", "stress_busy", T(NULL), true, case_kill_random, 50, 300, 8, 60 },
	{ "kill-random/waiter-nanosleep", "stress_waiter", T("nanosleep"), true, case_kill_random,
	  50, 300, 8, 60 },
	{ "kill-ptrace/busy", "stress_busy", T(NULL), true, case_kill_ptrace, 1, 3, 15, 60 },
	{ "kill-ptrace/busy-fp", "stress_busy_fp", T(NULL), true, case_kill_ptrace, 1, 3, 15, 60 },
	{ "kill-agent/busy", "stress_busy", T(NULL), true, case_kill_agent, 20, 100, 8, 45 },
	{ "agent/vma-grow", "stress_vmagrow", T(NULL), false, case_agent_profiles, 30, 100, 5, 15 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void usage(void)
{
	fprintf(stderr, "usage: stress [-f] [-j JOBS] [-c PATTERN] [-n TRIES] [-T TABLE]\n"
			"  -f          the full run (default: the short one)\n"
			"  -j JOBS     cases run at once (1-8)\n"
			"  -c PATTERN  only the cases whose name matches (fnmatch, e.g. 'kill-*')\n"
			"  -n TRIES    at most TRIES tries per case\n"
			"  -T TABLE    write the results as a Markdown table to TABLE\n");
	exit(2);
}

/* Run one case in a child; its result comes back through shared memory. */
static pid_t run_case(const struct kase *k, struct result *out, const char *log)
{
	pid_t p;

	fflush(NULL);
	p = fork();
	if (p == 0) {
		FILE *f = freopen(log, "w", stdout);

		if (!f)
			_exit(3);
		dup2(1, 2);
		setvbuf(stdout, NULL, _IOLBF, 0);
		k->fn(k, out);
		fflush(NULL);
		_exit(0);
	}
	return p;
}

static void print_row(FILE *f, const struct kase *k, const struct result *r, bool md)
{
	char h[4096];

	tally_format(&r->harm, h, sizeof(h));
	if (md)
		fprintf(f, "| %s | %d | %d | %s |\n", k->name, r->tries, r->failures, h);
	else
		printf("%s | %d | %d | %s\n", k->name, r->tries, r->failures, h);
}

int main(int argc, char **argv)
{
	const char *pattern = NULL, *table = NULL;
	char tmpl[] = "/tmp/memlens-stress.XXXXXX", root[PATH_MAX];
	struct result *res;
	pid_t running[NCASES] = { 0 };
	bool want[NCASES];
	size_t next = 0, done = 0, nwant = 0, order[NCASES], norder = 0;
	int jobs = 0, c, failed = 0;
	uint64_t t0 = now_us();

	while ((c = getopt(argc, argv, "fj:c:n:T:h")) != -1) {
		switch (c) {
		case 'n':
			E.max_tries = atoi(optarg);
			if (E.max_tries < 1)
				usage();
			break;
		case 'f':
			E.full = true;
			break;
		case 'j':
			jobs = atoi(optarg);
			if (jobs < 1 || jobs > 8)
				usage();
			break;
		case 'c':
			pattern = optarg;
			break;
		case 'T':
			table = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (!jobs)
		jobs = E.full ? 3 : 2;
	/* the whole run's bound: no case goes on past it */
	E.deadline_us = t0 + (E.full ? 570u : 85u) * 1000000u;
	E.memlens = getenv("MEMLENS");
	E.workloads = getenv("WORKLOADS");
	if (!E.memlens || !E.workloads) {
		fprintf(stderr, "stress: set MEMLENS (the memlens binary) and WORKLOADS (the "
				"directory of the built workloads), as tests/stress/run.sh does\n");
		return 2;
	}
	/* the source tree (for agent_client.py and proto/): the current directory */
	if (!getcwd(root, sizeof(root)) || access("tests/stress/agent_client.py", R_OK)) {
		fprintf(stderr, "stress: run it from the top of the memlens source tree\n");
		return 2;
	}
	E.root = root;
	E.tmp = getenv("STRESS_TMP");
	if (!E.tmp && !(E.tmp = mkdtemp(tmpl))) {
		fprintf(stderr, "stress: cannot create a scratch directory: %s\n", strerror(errno));
		return 2;
	}
	res = mmap(NULL, sizeof(*res) * NCASES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		   -1, 0);
	if (res == MAP_FAILED) {
		perror("stress: mmap");
		return 2;
	}
	memset(res, 0, sizeof(*res) * NCASES);
	for (size_t i = 0; i < NCASES; i++) {
		want[i] = !pattern || !fnmatch(pattern, cases[i].name, 0);
		nwant += want[i];
	}
	/* the cases of a kind of their own first, the many cycle cases after:
	 * what the run's deadline cuts short is some cycles, not a whole kind */
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].fn != case_cycles)
			order[norder++] = i;
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].fn == case_cycles)
			order[norder++] = i;
	printf("# stress (%s run, %d at once, scratch %s): case | tries | failures | harm\n",
	       E.full ? "full" : "short", jobs, E.tmp);
	fflush(stdout);
	while (done < nwant) {
		int nrun = 0, st;
		pid_t p;

		for (size_t i = 0; i < NCASES; i++)
			nrun += running[i] > 0;
		while (nrun < jobs && next < NCASES) {
			size_t i = order[next++];

			if (want[i]) {
				char log[PATH_MAX];

				snprintf(log, sizeof(log), "%s/case-%zu.log", E.tmp, i);
				running[i] = run_case(&cases[i], &res[i], log);
				nrun++;
			}
		}
		p = wait(&st);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (size_t i = 0; i < NCASES; i++) {
			char log[PATH_MAX], line[1024];
			FILE *f;

			if (running[i] != p)
				continue;
			running[i] = -1;
			done++;
			snprintf(log, sizeof(log), "%s/case-%zu.log", E.tmp, i);
			/* what the case said (the tries that failed), if it failed */
			f = res[i].failures ? fopen(log, "r") : NULL;
			for (int n = 0; f && n < 10 && fgets(line, sizeof(line), f); n++)
				printf("#   %s", line[0] == '#' ? line + 2 : line);
			if (f)
				fclose(f);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				tally_add(&res[i].harm, "the case itself died (driver bug)");
				res[i].failures++;
			}
			if (!res[i].skip[0] && !res[i].tries && !res[i].failures &&
			    now_us() >= E.deadline_us)
				snprintf(res[i].skip, sizeof(res[i].skip),
					 "the run's time budget was used up before its first try");
			if (res[i].skip[0]) {
				printf("skip - stress/%s: %s\n", cases[i].name, res[i].skip);
			} else {
				print_row(stdout, &cases[i], &res[i], false);
				if (res[i].note[0])
					printf("#   %s\n", res[i].note);
				tally_examples(&res[i].harm, stdout);
				if (res[i].failures || !res[i].tries) {
					printf("not ok - stress/%s: %d of %d tries failed\n",
					       cases[i].name, res[i].failures, res[i].tries);
					failed++;
				} else {
					printf("ok - stress/%s\n", cases[i].name);
				}
			}
			fflush(stdout);
		}
	}
	printf("# stress: %zu cases in %.0f s, %d failed\n", nwant, (now_us() - t0) / 1e6, failed);
	if (table) {
		FILE *f = fopen(table, "w");

		if (f) {
			fprintf(f, "| case | tries | failures | harm |\n|---|---|---|---|\n");
			for (size_t i = 0; i < NCASES; i++)
				if (want[i] && !res[i].skip[0])
					print_row(f, &cases[i], &res[i], true);
				else if (want[i])
					fprintf(f, "| %s | - | - | skipped: %s |\n", cases[i].name,
						res[i].skip);
			fclose(f);
		}
	}
	return failed ? 1 : 0;
}
