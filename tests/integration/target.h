/* SPDX-License-Identifier: MIT */
/* Drive workloads/pagewriter from a test: start it, send commands, read answers. */
#ifndef MEMLENS_TEST_TARGET_H
#define MEMLENS_TEST_TARGET_H

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct target {
	pid_t pid;
	FILE *in, *out;
};

static inline const char *workload(const char *name)
{
	static char path[4096];
	const char *dir = getenv("WORKLOADS");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "build/workloads", name);
	return path;
}

static inline int target_start(struct target *t, const char *prog, char *const argv[])
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return -1;
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (t->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(to[0], 0);
		dup2(from[1], 1);
		/* stderr too is ours, not the runner's: CRIU refuses to dump a
		 * file it cannot look up (another mount namespace) or a socket */
		if (null >= 0)
			dup2(null, 2);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		/* nothing else of ours: a socket the test runner's caller left
		 * open would make CRIU refuse to dump the target */
		close_range(3, ~0U, 0);
		/* its own session: CRIU refuses a process whose session leader
		 * is outside its PID namespace, as the runner's may be */
		setsid();
		execv(prog, argv);
		_exit(127);
	}
#ifdef MEMLENS_TEST_HARNESS_H
	T_CHILD(t->pid); /* killed and reaped when the test ends, however it ends */
#endif
	close(to[0]);
	close(from[1]);
	t->in = fdopen(to[1], "w");
	t->out = fdopen(from[0], "r");
	setvbuf(t->in, NULL, _IOLBF, 0);
	return 0;
}

/* A kernel thread we can see (kthreadd is 2 in the initial PID namespace;
 * none is visible in another), or 0. */
static inline pid_t kthread_pid(void)
{
	char path[64], buf[512], *p;
	unsigned long flags;

	for (pid_t pid = 2; pid < 4096; pid++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000)) /* PF_KTHREAD */
			return pid;
	}
	return 0;
}

/* Send a command, return the answer line (static buffer), or NULL. */
static inline const char *target_cmd(struct target *t, const char *fmt, ...)
{
	static char line[512];
	va_list ap;

	va_start(ap, fmt);
	vfprintf(t->in, fmt, ap);
	va_end(ap);
	fputc('\n', t->in);
	fflush(t->in);
	if (!fgets(line, sizeof(line), t->out))
		return NULL;
	line[strcspn(line, "\n")] = '\0';
	return line;
}

/* "mapped NAME 0xS 0xE" -> range */
static inline int target_map(struct target *t, const char *name, unsigned long pages,
			     uint64_t *start, uint64_t *end)
{
	const char *a = target_cmd(t, "map %s %lu", name, pages);
	char nm[64];
	unsigned long long s, e;

	if (!a || sscanf(a, "mapped %63s %llx %llx", nm, &s, &e) != 3)
		return -1;
	*start = s;
	*end = e;
	return 0;
}

static inline int target_stop(struct target *t)
{
	int status = -1;

	if (t->pid <= 0)
		return -1;
	if (t->in)
		fclose(t->in);
	t->in = NULL;
	kill(t->pid, SIGTERM);
	waitpid(t->pid, &status, 0);
	if (t->out)
		fclose(t->out);
	t->out = NULL;
	t->pid = 0;
	return status;
}

/*
 * Wait (up to 2 s) until @pid's main thread is blocked in read(): after
 * answering, the target still updates stdio's state before it blocks, and
 * those writes must not land in the interval a test measures.
 */
static inline void target_wait_blocked(pid_t pid)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		int ok = 0;

		if (f) {
			ok = fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 0x0 ", 6);
			fclose(f);
		}
		if (ok || !f)
			return;
		usleep(1000);
	}
}

/* Count VMAs with "uw" in VmFlags, and userfaultfd fds, of @pid. */
static inline int count_uw_vmas(pid_t pid)
{
	char path[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmFlags:", 8) && strstr(line, " uw"))
			n++;
	fclose(f);
	return n;
}

static inline int count_uffd_fds(pid_t pid)
{
	char path[128], link[256];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		if (strstr(link, "userfaultfd"))
			n++;
	}
	return n;
}

static inline char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 65536, len = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (n == 0)
			break;
		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

#endif
