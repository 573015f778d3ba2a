// SPDX-License-Identifier: MIT
/* The test harness's teardown: cleanups and children survive no REQUIRE. */
#include "harness.h"

static int cleaned;
static pid_t child;

static void note_cleanup(void *arg)
{
	cleaned = cleaned * 10 + (int)(intptr_t)arg;
}

/* what a failing test does: starts a child, registers cleanups, fails */
static void failing_inner(void)
{
	child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	T_CHILD(child);
	T_DEFER(note_cleanup, 1);
	T_DEFER(note_cleanup, 2);
	REQUIRE(!"a failing requirement");
	T_DEFER(note_cleanup, 3); /* never reached */
}

static void test_require_runs_teardown(void)
{
	int base = t_ndefer;

	cleaned = 0;
	printf("# the next REQUIRE failure is the inner test's, on purpose\n");
	/* run it as t_run() does, without printing its result */
	if (!setjmp(t_jmp))
		failing_inner();
	t_teardown(base);
	CHECK(t_cur_failed);
	t_cur_failed = 0; /* the inner failure was the point */
	CHECK_EQ(cleaned, 21); /* last registered first; the unreached one not */
	CHECK_EQ(t_ndefer, base);
	/* the child was killed and reaped: no longer ours, no zombie */
	CHECK_EQ(waitpid(child, NULL, WNOHANG), -1);
	CHECK_EQ(errno, ECHILD);
	CHECK_EQ(kill(child, 0), -1);
}

static void test_reaped_child_not_signalled(void)
{
	pid_t c = fork();

	REQUIRE(c >= 0);
	if (c == 0)
		_exit(3);
	T_CHILD(c);
	int st;
	REQUIRE(waitpid(c, &st, 0) == c); /* the test reaps it itself */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	/* teardown then finds it gone and signals nothing */
}

int main(void)
{
	RUN(test_require_runs_teardown);
	RUN(test_reaped_child_not_signalled);
	return T_DONE();
}
