/* SPDX-License-Identifier: MIT */
/*
 * A tiny test harness. Each test prints one line the runner counts:
 *   ok - NAME
 *   not ok - NAME: why
 *   skip - NAME: reason
 * CHECK* record a failure and go on; REQUIRE* and SKIP end the test.
 *
 * Teardown: T_DEFER(fn, arg) registers a cleanup and T_CHILD(pid) a child
 * process to kill and reap; they run, last registered first, when the test
 * ends, however it ends (returned, REQUIRE failed, SKIP); those registered
 * outside any test, at T_DONE(). Their argument is
 * passed by value or points to memory that outlives the test function (a
 * REQUIRE leaves the function's stack frame behind). T_DONE() ends the
 * program with one more check: no child process of the test program is left.
 */
#ifndef MEMLENS_TEST_HARNESS_H
#define MEMLENS_TEST_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int t_cur_failed;
static int t_skipped;
static int t_nfail, t_npass, t_nskip;
static jmp_buf t_jmp;
static char t_skip_reason[256];

#define T_FAILMSG(...)                                                                             \
	do {                                                                                       \
		printf("#   %s:%d: ", __FILE__, __LINE__);                                         \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		t_cur_failed = 1;                                                                  \
	} while (0)

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			T_FAILMSG("CHECK(%s) failed", #c);                                         \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b)                                                                      \
			T_FAILMSG("%s == %s failed: %lld != %lld", #a, #b, _a, _b);                \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b))                                                  \
			T_FAILMSG("%s == %s failed: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)", \
				  _b ? _b : "(null)");                                             \
	} while (0)

#define REQUIRE(c)                                                                                 \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			T_FAILMSG("REQUIRE(%s) failed", #c);                                       \
			longjmp(t_jmp, 1);                                                         \
		}                                                                                  \
	} while (0)

#define REQUIRE_MSG(c, ...)                                                                        \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			T_FAILMSG(__VA_ARGS__);                                                    \
			longjmp(t_jmp, 1);                                                         \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		snprintf(t_skip_reason, sizeof(t_skip_reason), __VA_ARGS__);                       \
		t_skipped = 1;                                                                     \
		longjmp(t_jmp, 1);                                                                 \
	} while (0)

#define T_MAX_DEFER 64
static struct {
	void (*fn)(void *);
	void *arg;
} t_defers[T_MAX_DEFER];
static int t_ndefer;

__attribute__((unused)) static void t_defer(void (*fn)(void *), void *arg)
{
	if (t_ndefer == T_MAX_DEFER) {
		printf("#   harness: more than %d cleanups in one test; running this one now\n",
		       T_MAX_DEFER);
		fn(arg);
		return;
	}
	t_defers[t_ndefer].fn = fn;
	t_defers[t_ndefer].arg = arg;
	t_ndefer++;
}
#define T_DEFER(fn, arg) t_defer((void (*)(void *))(fn), (void *)(arg))

/* Kill and reap a child unless it was reaped already (its pid may be reused
 * then: it is not signalled). */
__attribute__((unused)) static void t_kill_child(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	int st;

	if (waitpid(pid, &st, WNOHANG) != 0)
		return; /* reaped now (it had exited) or not our child any more */
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}
#define T_CHILD(pid) t_defer(t_kill_child, (void *)(intptr_t)(pid))

/* Run the cleanups registered after the first @base ones. */
static void t_teardown(int base)
{
	while (t_ndefer > base) {
		t_ndefer--;
		t_defers[t_ndefer].fn(t_defers[t_ndefer].arg);
	}
}

/*
 * T_ONLY=WORD[,WORD...]: run only the tests whose name contains one of the
 * words (the others print nothing); for running one part of a program again
 * under other conditions.
 */
static bool t_selected(const char *name)
{
	const char *only = getenv("T_ONLY"), *w;

	if (!only || !*only)
		return true;
	for (w = only; *w;) {
		size_t n = strcspn(w, ",");
		char word[128];

		if (n && n < sizeof(word)) {
			memcpy(word, w, n);
			word[n] = '\0';
			if (strstr(name, word))
				return true;
		}
		w += n + (w[n] == ',');
	}
	return false;
}

static void t_run(const char *name, void (*fn)(void))
{
	if (!t_selected(name))
		return;
	t_cur_failed = 0;
	t_skipped = 0;
	int base = t_ndefer; /* those registered outside a test run at T_DONE() */

	fflush(stdout);
	if (!setjmp(t_jmp))
		fn();
	t_teardown(base);
	if (t_skipped) {
		printf("skip - %s: %s\n", name, t_skip_reason);
		t_nskip++;
	} else if (t_cur_failed) {
		printf("not ok - %s\n", name);
		t_nfail++;
	} else {
		printf("ok - %s\n", name);
		t_npass++;
	}
	fflush(stdout);
}

#define RUN(fn) t_run(#fn, fn)

/* The children of this program still there (running or zombies), killed and
 * reaped; their pids into @out (up to @max). */
static int t_leftover_children(pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;
		int pid = atoi(e->d_name), ppid = -1;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "PPid: %d", &ppid) == 1)
				break;
		fclose(f);
		if (ppid == getpid()) {
			if (n < max)
				out[n] = pid;
			n++;
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	closedir(d);
	return n;
}

static int t_done(void)
{
	pid_t left[8];
	int n;

	t_teardown(0);
	n = t_leftover_children(left, 8);

	if (n) {
		printf("not ok - no_child_left_behind: %d child process(es) were still there:", n);
		for (int i = 0; i < n && i < 8; i++)
			printf(" %d", (int)left[i]);
		printf("\n");
		t_nfail++;
	} else {
		printf("ok - no_child_left_behind\n");
		t_npass++;
	}
	fflush(stdout);
	return t_nfail ? 1 : 0;
}
#define T_DONE() t_done()

#endif
