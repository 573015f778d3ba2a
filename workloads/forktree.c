// SPDX-License-Identifier: MIT
/*
 * forktree: a process tree that writes into private memory of each
 * process and into one shared mapping of all of them.
 *   forktree [-c CHILDREN] [-p PRIVATE_PAGES] [-s SHARED_PAGES] [-m] [-P]
 * The root maps SHARED_PAGES of shared anonymous memory (MAP_SHARED |
 * MAP_ANONYMOUS, "/dev/zero (deleted)" in maps; with -m a memfd), then
 * forks CHILDREN children; every process maps PRIVATE_PAGES of private
 * memory of its own and, each pass, writes all of its private pages and
 * all of the shared pages (the same pages in every process), and prints
 *   forktree: pid PID private 0xS-0xE shared 0xS-0xE
 * once. SIGUSR1 to the root forks one more child; SIGTERM to a child ends
 * it (the root reaps it); the children end with the root. The root checks, when it gets SIGINT or
 * SIGTERM, that its memory holds what it wrote last, and prints "forktree: data intact" or
 * "forktree: data corrupt" (a restored tree's check).
 *
 * -P paces every process against a write profiler, as memwrite -P does:
 * after each pass it waits until a page of its own is write-protected by
 * userfaultfd again (pagemap's uffd-wp bit). That page is shared memory of
 * its own, mapped above the others, so that a profiler's scan, which takes
 * private memory first and then shared memory by address, protects it
 * last: one pass per interval, whole, however little CPU the process gets.
 * Without a profiler it writes once ("forktree: first pass written") and
 * idles.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096UL

static volatile sig_atomic_t fork_req, stop_req;
static size_t npriv = 64, nshared = 32;
static int paced, memfd;
static unsigned char *shared;
static pid_t kids[256];
static int nkids;

/* A child ends with the root (SIGTERM), however the root ends. */
static pid_t spawn_child(void)
{
	pid_t root = getpid(), c = fork();

	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != root)
			_exit(0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		nkids = 0;
	} else if (c > 0 && nkids < (int)(sizeof(kids) / sizeof(kids[0]))) {
		kids[nkids++] = c;
	}
	return c;
}

static void on_usr1(int sig)
{
	(void)sig;
	fork_req = 1;
}

static void on_stop(int sig)
{
	(void)sig;
	stop_req = 1;
}

/* the page's pte is write-protected by userfaultfd (pagemap bit 57) */
static int uffd_wp(int pagemap, const void *p)
{
	uint64_t e = 0;

	if (pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)p / PG * 8)) != (ssize_t)sizeof(e))
		return 0;
	return (e >> 57) & 1;
}

/*
 * The pacing page sits above the shared pages (a guard page between keeps
 * the kernel from merging them), in a slot the root reserved: every
 * process maps a page of its own there.
 */
static unsigned char *clock_slot;

static int map_own(unsigned char **priv, unsigned char **clock)
{
	*priv = mmap(NULL, npriv * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*clock = mmap(clock_slot, PG, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return *priv == MAP_FAILED || *clock == MAP_FAILED ? -1 : 0;
}

static int check(const unsigned char *priv, unsigned char v)
{
	for (size_t i = 0; i < npriv; i++)
		if (priv[i * PG] != v || priv[i * PG + PG - 1] != v)
			return 0;
	return 1;
}

/* The root: reap the children that ended, and forget them (their pids may be reused). */
static void reap(void)
{
	pid_t c;

	while ((c = waitpid(-1, NULL, WNOHANG)) > 0)
		for (int i = 0; i < nkids; i++)
			if (kids[i] == c)
				kids[i] = kids[--nkids];
}

/* Write every pass until stopped; the root forks on request. */
static int run(int is_root)
{
	unsigned char *priv, *clock;
	unsigned long pass = 0;
	int pagemap = -1;

	if (map_own(&priv, &clock)) {
		perror("forktree: mmap");
		return 1;
	}
	if (paced && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
		perror("forktree: /proc/self/pagemap");
		return 1;
	}
	printf("forktree: pid %d private %p-%p shared %p-%p\n", (int)getpid(), (void *)priv,
	       (void *)(priv + npriv * PG), (void *)shared, (void *)(shared + nshared * PG));
	fflush(stdout);
	while (!stop_req) {
		unsigned char v = (unsigned char)(pass % 250 + 1);

		for (size_t i = 0; i < npriv; i++)
			memset(priv + i * PG, v, PG);
		for (size_t i = 0; i < nshared; i++)
			shared[i * PG + (size_t)getpid() % 64] = v;
		clock[0] = v;
		if (!pass && is_root) {
			printf("forktree: first pass written, ready\n");
			fflush(stdout);
		}
		pass++;
		while (!stop_req && !fork_req && (!paced || !uffd_wp(pagemap, clock)))
			usleep(paced ? 1000 : 100000);
		if (is_root && fork_req) {
			fork_req = 0;
			if (spawn_child() == 0)
				return run(0);
		}
		if (is_root)
			reap();
		if (stop_req && is_root) {
			int ok = check(priv, v);

			printf("forktree: data %s\n", ok ? "intact" : "corrupt");
			fflush(stdout);
		}
	}
	for (int i = 0; is_root && i < nkids; i++)
		kill(kids[i], SIGTERM);
	while (is_root && wait(NULL) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int children = 2, opt;
	struct sigaction sa = { 0 };

	while ((opt = getopt(argc, argv, "c:p:s:mP")) != -1) {
		switch (opt) {
		case 'c':
			children = atoi(argv[optind - 1]);
			break;
		case 'p':
			npriv = strtoul(optarg, NULL, 0);
			break;
		case 's':
			nshared = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			memfd = 1;
			break;
		case 'P':
			paced = 1;
			break;
		default:
			fprintf(stderr, "usage: forktree [-c CHILDREN] [-p PRIVATE_PAGES] "
					"[-s SHARED_PAGES] [-m] [-P]\n");
			return 2;
		}
	}
	if (!npriv || !nshared || children < 0) {
		fprintf(stderr, "forktree: -p and -s must be positive, -c not negative\n");
		return 2;
	}
	/* shared pages, a guard page, the pacing page's slot */
	unsigned char *area =
		mmap(NULL, (nshared + 2) * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (area == MAP_FAILED) {
		perror("forktree: mmap");
		return 1;
	}
	clock_slot = area + (nshared + 1) * PG;
	if (memfd) {
		int fd = memfd_create("forktree", MFD_CLOEXEC);

		if (fd < 0 || ftruncate(fd, (off_t)(nshared * PG))) {
			perror("forktree: memfd");
			return 1;
		}
		shared = mmap(area, nshared * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			      fd, 0);
	} else {
		shared = mmap(area, nshared * PG, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	if (shared == MAP_FAILED) {
		perror("forktree: mmap shared");
		return 1;
	}
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < children; i++) {
		pid_t c = spawn_child();

		if (c < 0) {
			perror("forktree: fork");
			return 1;
		}
		if (c == 0)
			return run(0);
	}
	/* the root checks its data when stopped, and ends its children */
	sigaction(SIGTERM, &sa, NULL);
	return run(1);
}
