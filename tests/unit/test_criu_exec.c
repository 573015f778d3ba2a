// SPDX-License-Identifier: MIT
/* Running CRIU under a time limit (lib/criu/criu_exec.c), with ordinary programs. */
#include <errno.h>
#include <signal.h>

#include "harness.h"
#include "../../lib/criu/criu_exec.h"

static void test_status_and_output(void)
{
	char *argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct criu_exec x = { .argv = argv };
	struct ml_err err = { 0 };

	REQUIRE(mli_criu_exec_run(&x, &err) == 0);
	CHECK_EQ(x.status, 3);
	CHECK(!x.timed_out);
	REQUIRE(x.output);
	CHECK(strstr(x.output, "out\n") && strstr(x.output, "err\n"));
	free(x.output);
}

static void test_criu_fault_env(void)
{
	char *argv[] = { "/bin/sh", "-c", "echo \"fault=$CRIU_FAULT\"", NULL };
	ML_OPTS(ml_criu_run_opts, hw, .hw_breakpoints = true);
	struct criu_exec x = { .argv = argv };
	struct ml_err err = { 0 };

	setenv("CRIU_FAULT", "7", 1);
	REQUIRE(mli_criu_exec_run(&x, &err) == 0);
	CHECK(x.output && strstr(x.output, "fault=130\n"));
	free(x.output);
	x.o = &hw;
	REQUIRE(mli_criu_exec_run(&x, &err) == 0);
	CHECK(x.output && strstr(x.output, "fault=\n")); /* ours removed, none added */
	free(x.output);
	unsetenv("CRIU_FAULT");
}

static void test_timeout_kills_the_tree(void)
{
	/* the shell's child sleeps too: the whole session must go */
	char *argv[] = { "/bin/sh", "-c", "sleep 30 & echo $! > /tmp/memlens-exec-test.pid; wait",
			 NULL };
	struct criu_exec x = { .argv = argv, .timeout_ms = 300 };
	struct ml_err err = { 0 };
	FILE *f;
	int child = 0;

	REQUIRE(mli_criu_exec_run(&x, &err) == 0);
	CHECK(x.timed_out);
	CHECK_EQ(x.status, -1);
	CHECK_EQ(x.signal, SIGKILL);
	free(x.output);
	f = fopen("/tmp/memlens-exec-test.pid", "r");
	REQUIRE(f);
	CHECK(fscanf(f, "%d", &child) == 1);
	fclose(f);
	unlink("/tmp/memlens-exec-test.pid");
	for (int i = 0; i < 100 && child > 0 && kill(child, 0) == 0; i++)
		usleep(20000);
	CHECK(child > 0 && kill(child, 0) < 0);
}

static void test_missing_binary(void)
{
	char *argv[] = { "/nonexistent/criu", "check", NULL };
	struct criu_exec x = { .argv = argv };
	struct ml_err err = { 0 };

	CHECK(mli_criu_exec_run(&x, &err) == -ENOENT);
	CHECK(strstr(err.msg, "/nonexistent/criu") && strstr(err.msg, "--criu"));
}

static void test_error_tail(void)
{
	char buf[256];

	mli_criu_error_tail(
		"(0.1) ok\n(0.2) Error (a.c:1): one\n(0.3) fine\n(0.4) Error (b.c:2): two\n", buf,
		sizeof(buf));
	CHECK_STR(buf, "(0.2) Error (a.c:1): one | (0.4) Error (b.c:2): two");
	mli_criu_error_tail("nothing wrong\n", buf, sizeof(buf));
	CHECK_STR(buf, "");
	mli_criu_error_tail("Error 1\nError 2\nError 3\nError 4\n", buf, 12);
	CHECK_EQ(strlen(buf), 11);
}

int main(void)
{
	RUN(test_status_and_output);
	RUN(test_criu_fault_env);
	RUN(test_timeout_kills_the_tree);
	RUN(test_missing_binary);
	RUN(test_error_tail);
	return T_DONE();
}
