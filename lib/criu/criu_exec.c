// SPDX-License-Identifier: MIT
/*
 * Run CRIU as a child under a time limit: posix_spawn (safe in threaded
 * servers), its own session so a timeout kills the whole tree, output
 * captured in a memfd, CRIU_FAULT=130 unless hardware breakpoints are
 * wanted (on some VMs the parasite's hardware breakpoint never fires).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "criu_exec.h"
#include "memlens/clock.h"

extern char **environ;

#define OUTPUT_MAX (64 * 1024)

/* environ without CRIU_FAULT, plus CRIU_FAULT=130 unless @hw. */
static char **build_env(bool hw)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ && environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CRIU_FAULT=", 11))
			env[k++] = environ[i];
	if (!hw)
		env[k++] = (char *)"CRIU_FAULT=130";
	env[k] = NULL;
	return env;
}

static int spawn_child(struct criu_exec *x, int outfd, pid_t *pid, struct ml_err *err)
{
	bool hw = x->o && x->o->hw_breakpoints;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char **env = build_env(hw);
	int ret;

	if (!env)
		return ml_err_set(err, ENOMEM, "out of memory starting CRIU");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outfd, 1);
	posix_spawn_file_actions_adddup2(&fa, outfd, 2);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	{
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setsigdefault(&at, &all);
	}
	ret = posix_spawn(pid, x->argv[0], &fa, &at, x->argv, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (ret)
		return ml_err_set(err, ret,
				  "cannot run CRIU (%s): %s; install CRIU or pass its path "
				  "with --criu / MEMLENS_CRIU",
				  x->argv[0], strerror(ret));
	return 0;
}

/* Wait for @pid up to @timeout_ms; kill its session when it runs over. */
static int wait_child(pid_t pid, unsigned int timeout_ms, struct criu_exec *x)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t deadline = ml_mono_ms() + timeout_ms;
	int status = 0;

	while (pfd >= 0) {
		uint64_t now = ml_mono_ms();
		struct pollfd p = { .fd = pfd, .events = POLLIN };

		if (now >= deadline) {
			x->timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, (int)(deadline - now)) > 0)
			break;
	}
	if (pfd >= 0)
		close(pfd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status)) {
		x->status = WEXITSTATUS(status);
	} else {
		x->status = -1;
		x->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	return 0;
}

static void read_output(struct criu_exec *x, int fd)
{
	struct stat st;
	off_t off = 0;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return;
	if (st.st_size > OUTPUT_MAX)
		off = st.st_size - OUTPUT_MAX;
	x->output = malloc((size_t)(st.st_size - off) + 1);
	if (!x->output)
		return;
	n = pread(fd, x->output, (size_t)(st.st_size - off), off);
	x->output_len = n > 0 ? (size_t)n : 0;
	x->output[x->output_len] = '\0';
}

static unsigned int exec_timeout(const struct criu_exec *x)
{
	if (x->timeout_ms)
		return x->timeout_ms;
	return x->o && x->o->timeout_ms ? x->o->timeout_ms : ML_CRIU_DEFAULT_TIMEOUT_MS;
}

int mli_criu_exec_start(struct criu_exec *x, struct criu_child *c, struct ml_err *err)
{
	int ret;

	x->status = -1;
	x->signal = 0;
	x->timed_out = false;
	x->output = NULL;
	x->output_len = 0;
	c->pid = 0;
	c->t0_ms = ml_mono_ms();
	c->outfd = memfd_create("memlens-criu-output", MFD_CLOEXEC);
	if (c->outfd < 0)
		return ml_err_set(err, errno, "memfd_create for CRIU's output: %s",
				  strerror(errno));
	ret = spawn_child(x, c->outfd, &c->pid, err);
	if (ret) {
		close(c->outfd);
		c->outfd = -1;
	}
	return ret;
}

bool mli_criu_exec_running(const struct criu_child *c)
{
	siginfo_t si = { 0 };

	/* WNOWAIT: the child is left for mli_criu_exec_wait() to collect */
	if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return false;
	return si.si_pid == 0;
}

int mli_criu_exec_wait(struct criu_exec *x, struct criu_child *c, struct ml_err *err)
{
	uint64_t el = ml_mono_ms() - c->t0_ms, tmo = exec_timeout(x);
	int ret = wait_child(c->pid, el < tmo ? (unsigned int)(tmo - el) : 1, x);

	if (ret)
		ml_err_set(err, -ret, "waiting for CRIU (pid %d): %s", (int)c->pid, strerror(-ret));
	x->duration_ms = ml_mono_ms() - c->t0_ms;
	read_output(x, c->outfd);
	close(c->outfd);
	c->outfd = -1;
	c->pid = 0;
	return ret;
}

int mli_criu_exec_run(struct criu_exec *x, struct ml_err *err)
{
	struct criu_child c;
	int ret = mli_criu_exec_start(x, &c, err);

	return ret ? ret : mli_criu_exec_wait(x, &c, err);
}

static bool is_error_line(const char *s, size_t n)
{
	return memmem(s, n, "Error", 5) || memmem(s, n, "error", 5) ||
	       memmem(s, n, "unrecognized", 12) || memmem(s, n, "Can't", 5);
}

/* Append [s, s+n) to @buf as one line separated by " | ". */
static void append_line(char *buf, size_t len, const char *s, size_t n)
{
	size_t used = strlen(buf);

	if (used && used + 3 < len) {
		memcpy(buf + used, " | ", 4);
		used += 3;
	}
	if (used + 1 >= len)
		return;
	if (n > len - used - 1)
		n = len - used - 1;
	memcpy(buf + used, s, n);
	buf[used + n] = '\0';
}

void mli_criu_error_tail(const char *text, char *buf, size_t len)
{
	const char *lines[3] = { 0 };
	size_t lens[3] = { 0 }, k = 0;
	const char *s = text, *e;

	if (!len)
		return;
	buf[0] = '\0';
	if (!text)
		return;
	for (; *s; s = *e ? e + 1 : e) {
		e = strchrnul(s, '\n');
		if (e == s || !is_error_line(s, (size_t)(e - s)))
			continue;
		lines[k % 3] = s;
		lens[k % 3] = (size_t)(e - s);
		k++;
	}
	for (size_t i = k > 3 ? k - 3 : 0; i < k; i++)
		append_line(buf, len, lines[i % 3], lens[i % 3]);
}

bool mli_criu_log_tail_has(const char *path, const char *what, size_t tail)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *text;
	off_t size;
	ssize_t n;
	bool found;

	if (fd < 0)
		return false;
	text = malloc(tail + 1);
	if (!text) {
		close(fd);
		return false;
	}
	size = lseek(fd, 0, SEEK_END);
	n = pread(fd, text, tail, size > (off_t)tail ? size - (off_t)tail : 0);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	found = strstr(text, what) != NULL;
	free(text);
	return found;
}
