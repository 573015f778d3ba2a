// SPDX-License-Identifier: MIT
/* /proc/PID/stat parsing and the clocks (lib/common/proc.c, clock.c). */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/clock.h"
#include "memlens/proc.h"

static void test_parse_hostile_comm(void)
{
	/* a comm holding spaces and parentheses, as a user can set with prctl */
	static const char line[] = "4242 (a) b (c)) S 1 4242 4240 34816 4242 4194560 "
				   "1234 0 56 0 3 4 0 0 20 0 1 0 987654 10000 300 "
				   "18446744073709551615\n";
	struct ml_proc_stat st;

	CHECK_EQ(ml_proc_stat_parse(line, &st), 0);
	CHECK_STR(st.comm, "a) b (c)");
	CHECK_EQ(st.state, 'S');
	CHECK_EQ(st.ppid, 1);
	CHECK_EQ(st.pgrp, 4242);
	CHECK_EQ(st.session, 4240);
	CHECK_EQ(st.flags, 4194560UL);
	CHECK_EQ(st.minflt, 1234);
	CHECK_EQ(st.majflt, 56);
	CHECK_EQ(st.starttime, 987654);
}

static void test_parse_garbage(void)
{
	struct ml_proc_stat st;

	CHECK_EQ(ml_proc_stat_parse("", &st), -EINVAL);
	CHECK_EQ(ml_proc_stat_parse("12 (x", &st), -EINVAL);
	CHECK_EQ(ml_proc_stat_parse("12 x) S 1", &st), -EINVAL);
	CHECK_EQ(ml_proc_stat_parse("12 (x) S 1 2 3", &st), -EINVAL);
}

static void test_read_self_and_child(void)
{
	struct ml_proc_stat st;
	pid_t c;
	int status;

	CHECK_EQ(ml_proc_stat_read(getpid(), 0, &st), 0);
	CHECK_EQ(st.ppid, getppid());
	CHECK_EQ(st.pgrp, getpgrp());
	CHECK_EQ(st.session, getsid(0));
	CHECK_EQ(ml_proc_stat_read(getpid(), getpid(), &st), 0); /* the main thread */
	CHECK_EQ(st.state, 'R');
	CHECK_EQ(ml_proc_exited(getpid(), 0), 0);

	c = fork();
	REQUIRE(c >= 0);
	if (c == 0) {
		pause();
		_exit(0);
	}
	kill(c, SIGKILL);
	/* a zombie until reaped: waitid(WNOWAIT) waits for that state */
	siginfo_t si;
	REQUIRE(waitid(P_PID, c, &si, WEXITED | WNOWAIT) == 0);
	CHECK_EQ(ml_proc_stat_read(c, 0, &st), 0);
	CHECK_EQ(st.state, 'Z');
	CHECK_EQ(ml_proc_exited(c, 0), 1);
	REQUIRE(waitpid(c, &status, 0) == c);
	CHECK_EQ(ml_proc_stat_read(c, 0, &st), -ESRCH);
	CHECK_EQ(ml_proc_exited(c, 0), 1);
	CHECK_EQ(ml_proc_stat_read(c, c, &st), -ESRCH);
}

static void test_clocks(void)
{
	uint64_t a = ml_mono_ns(), b = ml_mono_ns();
	int64_t w = ml_wall_ms();

	CHECK(b >= a);
	CHECK(ml_mono_ms() >= a / 1000000);
	CHECK(w > 1600000000000LL); /* after 2020 */
}

int main(void)
{
	RUN(test_parse_hostile_comm);
	RUN(test_parse_garbage);
	RUN(test_read_self_and_child);
	RUN(test_clocks);
	return T_DONE();
}
