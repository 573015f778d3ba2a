// SPDX-License-Identifier: MIT
/*
 * pagecheck: a checkpoint/restore target whose every page says what it must
 * hold, for tests of dumps that leave pages out.
 *   pagecheck [-n PAGES] [-s START:COUNT]... [-c START:COUNT]...
 * Maps one anonymous VMA of PAGES pages (default 1024, no huge pages) and
 * writes every page with generation 1. SIGUSR1 runs the next step: step k
 * rewrites the k-th -s range of pages with the next generation; with -c a
 * child, forked at the start, has the same VMA at the same address and runs
 * its k-th -c range instead. SIGUSR2 checks every page of the VMA against
 * the generations written (kept in a separate mapping) and prints
 * "pagecheck: PID correct" or "pagecheck: PID WRONG ...": a page restored
 * from an older image, or not restored, shows up there. SIGTERM ends both.
 * Lines: "pagecheck: PID map ADDR pages N" at the start, "pagecheck: PID
 * step K done" after each step. The parent prints the child's lines too
 * (the child reports to it through a pipe): one process writes the output,
 * line-buffered (a file in tests), and a line for the child means the child
 * has done it.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_STEPS 64

struct steps {
	unsigned long start[MAX_STEPS], count[MAX_STEPS];
	int n;
};

static long page;

static uint64_t word(unsigned long pg, uint64_t gen, size_t k)
{
	uint64_t x = (pg + 1) * 0x9e3779b97f4a7c15ULL ^ gen * 0xff51afd7ed558ccdULL ^ k;

	return x ^ (x >> 29);
}

static void fill(char *map, unsigned long pg, uint64_t gen)
{
	uint64_t *w = (uint64_t *)(map + pg * page);

	for (size_t k = 0; k < (size_t)page / 8; k++)
		w[k] = word(pg, gen, k);
}

/* 0 when every page holds its generation, else the first page that does not (+1) */
static unsigned long check(const char *map, const uint64_t *gen, unsigned long n, uint64_t *found)
{
	for (unsigned long pg = 0; pg < n; pg++) {
		const uint64_t *w = (const uint64_t *)(map + pg * page);

		for (size_t k = 0; k < (size_t)page / 8; k++) {
			if (w[k] != word(pg, gen[pg], k)) {
				*found = 0;
				for (uint64_t g = 0; g <= gen[pg] + 1; g++)
					if (w[0] == word(pg, g, 0))
						*found = g;
				return pg + 1;
			}
		}
	}
	return 0;
}

static int parse_range(const char *arg, struct steps *s, unsigned long n)
{
	char *end;
	unsigned long a, b;

	if (s->n == MAX_STEPS)
		return -1;
	a = strtoul(arg, &end, 0);
	if (*end != ':')
		return -1;
	b = strtoul(end + 1, &end, 0);
	if (*end || a >= n || b > n - a)
		return -1;
	s->start[s->n] = a;
	s->count[s->n++] = b;
	return 0;
}

/* What the child did, sent to the parent, which prints it. */
struct report {
	int sig; /* SIGUSR1: a step, SIGUSR2: a check */
	int step;
	unsigned long bad; /* check: first wrong page + 1, or 0 */
	uint64_t found, expected;
};

static void say(pid_t pid, const struct report *r, unsigned long n)
{
	if (r->sig == SIGUSR1)
		printf("pagecheck: %d step %d done\n", (int)pid, r->step);
	else if (r->bad)
		printf("pagecheck: %d WRONG at page %lu: generation %llu, expected %llu\n",
		       (int)pid, r->bad - 1, (unsigned long long)r->found,
		       (unsigned long long)r->expected);
	else
		printf("pagecheck: %d correct (%lu pages)\n", (int)pid, n);
}

/* @child > 0: the parent, which reads the child's reports from @fd; 0: the child, which writes
 * them; -1: alone */
static int run(char *map, uint64_t *gen, unsigned long n, const struct steps *s, pid_t child,
	       int fd)
{
	sigset_t set;
	int k = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);

		if (sig < 0) {
			if (errno == EINTR)
				continue;
			perror("pagecheck: sigwaitinfo");
			return 2;
		}
		struct report r = { .sig = sig };

		if (child > 0)
			kill(child, sig);
		if (sig == SIGTERM)
			break;
		if (sig == SIGUSR1) {
			if (k < s->n) {
				for (unsigned long pg = s->start[k]; pg < s->start[k] + s->count[k];
				     pg++)
					fill(map, pg, ++gen[pg]);
			}
			r.step = ++k;
		} else {
			r.bad = check(map, gen, n, &r.found);
			r.expected = r.bad ? gen[r.bad - 1] : 0;
		}
		if (!child) { /* the parent prints it */
			if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
				return 2;
			continue;
		}
		say(getpid(), &r, n);
		if (child > 0) {
			struct report cr;
			ssize_t got;

			do
				got = read(fd, &cr, sizeof(cr));
			while (got < 0 && errno == EINTR);
			if (got != (ssize_t)sizeof(cr)) {
				fprintf(stderr, "pagecheck: the child %d stopped reporting\n",
					(int)child);
				return 2;
			}
			say(child, &cr, n);
		}
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	struct steps mine = { .n = 0 }, theirs = { .n = 0 };
	unsigned long n = 1024;
	const char *sarg[MAX_STEPS], *carg[MAX_STEPS];
	int ns = 0, nc = 0, opt;
	sigset_t set;
	uint64_t *gen;
	pid_t child = -1;
	int pfd[2] = { -1, -1 };
	char *map;

	page = sysconf(_SC_PAGESIZE);
	while ((opt = getopt(argc, argv, "n:s:c:")) != -1) {
		switch (opt) {
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 's':
			if (ns < MAX_STEPS)
				sarg[ns++] = optarg;
			break;
		case 'c':
			if (nc < MAX_STEPS)
				carg[nc++] = optarg;
			break;
		default:
			fprintf(stderr, "usage: pagecheck [-n PAGES] [-s START:COUNT]... [-c "
					"START:COUNT]...\n");
			return 2;
		}
	}
	for (int i = 0; i < ns; i++)
		if (n == 0 || parse_range(sarg[i], &mine, n))
			goto bad;
	for (int i = 0; i < nc; i++)
		if (parse_range(carg[i], &theirs, n))
			goto bad;
	setvbuf(stdout, NULL, _IOLBF, 0);
	map = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gen = mmap(NULL, n * sizeof(*gen), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (map == MAP_FAILED || gen == MAP_FAILED) {
		perror("pagecheck: mmap");
		return 2;
	}
	madvise(map, n * page, MADV_NOHUGEPAGE);
	for (unsigned long pg = 0; pg < n; pg++)
		fill(map, pg, gen[pg] = 1);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (nc) {
		if (pipe(pfd)) {
			perror("pagecheck: pipe");
			return 2;
		}
		child = fork();
		if (child < 0) {
			perror("pagecheck: fork");
			return 2;
		}
		if (child == 0) {
			close(pfd[0]);
			return run(map, gen, n, &theirs, 0, pfd[1]);
		}
		close(pfd[1]);
	}
	printf("pagecheck: %d map %p pages %lu\n", (int)getpid(), (void *)map, n);
	if (child > 0)
		printf("pagecheck: %d map %p pages %lu\n", (int)child, (void *)map, n);
	return run(map, gen, n, &mine, child, pfd[0]);
bad:
	fprintf(stderr, "pagecheck: a range is not START:COUNT within the %lu pages\n", n);
	return 2;
}
