// SPDX-License-Identifier: MIT
/* The stress driver's process helpers and harm tally. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

void tally_add(struct tally *t, const char *fmt, ...)
{
	char full[256], *cut;
	va_list ap;
	size_t klen;

	va_start(ap, fmt);
	vsnprintf(full, sizeof(full), fmt, ap);
	va_end(ap);
	char key[sizeof(t->kind[0])];
	size_t k = 0;

	cut = strstr(full, " (");
	klen = cut ? (size_t)(cut - full) : strlen(full);
	/* numbers of two digits or more (pids, line numbers) vary: "N" */
	for (size_t i = 0; i < klen && k + 1 < sizeof(key); i++) {
		bool run = full[i] >= '0' && full[i] <= '9' && i + 1 < klen && full[i + 1] >= '0' &&
			   full[i + 1] <= '9' && (i == 0 || full[i - 1] < '0' || full[i - 1] > '9');

		if (run) {
			key[k++] = 'N';
			while (i + 1 < klen && full[i + 1] >= '0' && full[i + 1] <= '9')
				i++;
		} else {
			key[k++] = full[i];
		}
	}
	key[k] = '\0';
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->kind[i], key)) {
			t->count[i]++;
			return;
		}
	if (t->n == TALLY_KINDS) {
		t->other++;
		return;
	}
	memcpy(t->kind[t->n], key, k + 1);
	snprintf(t->example[t->n], sizeof(t->example[0]), "%s", full);
	t->count[t->n++] = 1;
}

void tally_examples(const struct tally *t, FILE *f)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->kind[i], t->example[i]))
			fprintf(f, "#   e.g. %s\n", t->example[i]);
}

void tally_format(const struct tally *t, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	if (!t->n) {
		snprintf(buf, len, "-");
		return;
	}
	for (int i = 0; i < t->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s x%d", i ? "; " : "", t->kind[i],
				       t->count[i]);
	if (t->other && at < len)
		snprintf(buf + at, len - at, "; %d more of other kinds", t->other);
}

uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

void sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint64_t rnd(uint64_t n)
{
	static uint64_t s;

	if (!s)
		s = now_us() * 0x9e3779b97f4a7c15ull | 1;
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return n ? s % n : 0;
}

pid_t spawn(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t p = fork();

	if (p == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out =
			open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err =
			open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (in < 0 || out < 0 || err < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		/* nothing of the driver's: no pipe, no result file */
		syscall(SYS_close_range, 3, ~0u, 0);
		/* its own process group: a signal to the driver's stays there */
		setpgid(0, 0);
		/* nothing outlives the driver's case that started it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	return p;
}

bool exits_within(pid_t pid, int timeout_ms)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), r;
	struct pollfd p = { .fd = pfd, .events = POLLIN };

	if (pfd < 0)
		return true; /* cannot tell: wait_for decides */
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	close(pfd);
	return r != 0;
}

void proc_where(pid_t pid, char *buf, size_t len)
{
	char path[64], stat[512], wchan[64] = "?";
	const char *st;
	int fd;
	ssize_t n;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, stat, sizeof(stat) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	stat[n] = 0;
	st = strrchr(stat, ')');
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		wchan[n] = 0;
	snprintf(buf, len, "%c in %s", st && st[1] && st[2] ? st[2] : '?',
		 n > 0 && strcmp(wchan, "0") ? wchan : "user space");
}

int wait_for(pid_t pid, int timeout_ms, bool *timed_out)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), st;

	if (timed_out)
		*timed_out = false;
	if (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int r;

		do
			r = poll(&p, 1, timeout_ms);
		while (r < 0 && errno == EINTR);
		close(pfd);
		if (r == 0) {
			if (timed_out)
				*timed_out = true;
			kill(pid, SIGKILL);
		}
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

void last_line(const char *path, char *buf, size_t len)
{
	char tmp[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;
	off_t size;

	buf[0] = '\0';
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof(tmp) - 1)
		lseek(fd, size - (off_t)sizeof(tmp) + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, tmp, sizeof(tmp) - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && (tmp[n - 1] == '\n' || tmp[n - 1] == ' '))
		n--;
	tmp[n] = '\0';
	char *nl = strrchr(tmp, '\n');

	snprintf(buf, len, "%s", nl ? nl + 1 : tmp);
}

void describe_status(int st, char *buf, size_t len)
{
	if (st < 0)
		snprintf(buf, len, "lost");
	else if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by SIG%s", sigabbrev_np(WTERMSIG(st)) ?: "?");
	else
		snprintf(buf, len, "status 0x%x", st);
}
