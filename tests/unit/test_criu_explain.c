// SPDX-License-Identifier: MIT
/*
 * CRIU's refusals turned into what to do (lib/criu/criu_explain.c), on
 * CRIU 4.1.1's own log lines (tests/data/criu/logs/, see the README
 * there); the TCP policy's names and the options a restore repeats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "harness.h"
#include "memlens/criu.h"
#include "../../lib/criu/criu_restore_opts.h"

#define LOGS "tests/data/criu/logs/"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	REQUIRE_MSG(f && buf, "cannot read %s", path);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The hint for @file holds every one of the NULL-terminated @want. */
static void expect(const char *file, size_t nfound, const char *const *want)
{
	char *log = slurp(file), hint[2048];
	size_t n = ml_criu_explain(log, hint, sizeof(hint));

	CHECK_EQ(n, nfound);
	for (; *want; want++)
		if (!strstr(hint, *want))
			T_FAILMSG("%s: no \"%s\" in \"%s\"", file, *want, hint);
	free(log);
}

static void test_socket_option(void)
{
	expect(LOGS "sockopt-6.18.log", 1,
	       (const char *[]){ "SO_PASSCRED (1:16)",
				 "the IPv4 socket (inode 90172) at fd 3 of pid 14511", "Linux 6.16",
				 "CRIU 4.2 or newer (--criu PATH)", NULL });
}

static void test_tcp_established(void)
{
	expect(LOGS "tcp-established.log", 1,
	       (const char *[]){ "the IPv4 socket (inode 91997) at fd 3 of pid 16265",
				 "established TCP connection", "--tcp established", "--tcp close",
				 NULL });
}

static void test_sysv_host_ipc(void)
{
	expect(LOGS "sysv-host-ipc.log", 1,
	       (const char *[]){ "pid 16356 has SysV shared memory (mapped at 0x7f4d54861000)",
				 "host's IPC namespace", "unshare --ipc", NULL });
}

static void test_restore_pid_taken(void)
{
	expect(LOGS "restore-pid-taken.log", 1,
	       (const char *[]){ "pid 16398 is still running", "stop pid 16398",
				 "new PID namespace", NULL });
}

/* the pid is a zombie: the dump ended the process, its parent has not collected it */
static void test_restore_pid_zombie(void)
{
	char log[160], hint[512], want[64], st = 0;
	pid_t z = fork();

	REQUIRE(z >= 0);
	if (!z)
		_exit(0);
	for (int i = 0; i < 500 && st != 'Z'; i++) {
		char path[64], line[256], *p;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)z);
		f = fopen(path, "r");
		p = f && fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		if (f)
			fclose(f);
		if (!p || sscanf(p + 1, " %c", &st) != 1 || st != 'Z')
			usleep(10000);
	}
	CHECK(st == 'Z');
	snprintf(log, sizeof(log),
		 "(00.28) Error (criu/cr-restore.c:1230): Can't fork for %d: File exists\n",
		 (int)z);
	CHECK_EQ(ml_criu_explain(log, hint, sizeof(hint)), 1);
	snprintf(want, sizeof(want), "its parent, pid %d, has not collected it", (int)getpid());
	CHECK(strstr(hint, "has exited") != NULL);
	CHECK(strstr(hint, want) != NULL);
	CHECK(strstr(hint, "still running") == NULL);
	waitpid(z, NULL, 0);
}

static void test_ext_unix_sk(void)
{
	expect(LOGS "ext-unix-sk.log", 1,
	       (const char *[]){ "the unix socket (inode 93928) at fd 4 of pid 16615",
				 "the unix socket /tmp/cm.n4KB/peer.sock",
				 "--criu-opt --ext-unix-sk", NULL });
}

static void test_file_locks(void)
{
	expect(LOGS "file-locks.log", 1,
	       (const char *[]){ "the process tree of pid 21769 holds file locks",
				 "--criu-opt --file-locks", NULL });
}

static void test_nested_namespace(void)
{
	expect(LOGS "nested-ns.log", 1,
	       (const char *[]){ "pid 28891 of the tree is in a uts namespace of its own",
				 "only for the tree's root", "unshare", NULL });
}

static void test_quoted(void)
{
	expect(LOGS "quoted.log", 4,
	       (const char *[]){ "family 2 protocol 6", "inet_diag and tcp_diag",
				 "restore with --tcp established", "--criu-opt --skip-in-flight",
				 "lock the established TCP connection (socket inode 91997) with "
				 "iptables",
				 "install iptables", NULL });
}

static void test_unknown_and_near_misses(void)
{
	char hint[256] = "x";

	CHECK_EQ(ml_criu_explain("(00.1) Error (criu/cr-dump.c:2111): Dumping FAILED.\n", hint,
				 sizeof(hint)),
		 0);
	CHECK_STR(hint, "");
	CHECK_EQ(ml_criu_explain(NULL, hint, sizeof(hint)), 0);
	/* a fork that failed for another reason, an option refused otherwise */
	CHECK_EQ(ml_criu_explain("Error (criu/cr-restore.c:1230): Can't fork for 7: Resource "
				 "temporarily unavailable\n"
				 "Error (criu/sockets.c:628): sockets: Can't get 1:34 opt: Bad "
				 "file descriptor\n",
				 hint, sizeof(hint)),
		 0);
}

static void test_small_buffer(void)
{
	char *log = slurp(LOGS "sockopt-6.18.log");
	char hint[24];

	memset(hint, 'z', sizeof(hint));
	CHECK_EQ(ml_criu_explain(log, hint, sizeof(hint) - 4), 1);
	CHECK_EQ(strlen(hint), sizeof(hint) - 5);
	CHECK_EQ(hint[sizeof(hint) - 1], 'z');
	CHECK_EQ(ml_criu_explain(log, hint, 0), 0);
	free(log);
}

static void test_tcp_names(void)
{
	enum ml_criu_tcp t = ML_CRIU_TCP_UNSET;

	CHECK_EQ(ml_criu_tcp_parse("established", &t), 0);
	CHECK_EQ(t, ML_CRIU_TCP_ESTABLISHED);
	CHECK_EQ(ml_criu_tcp_parse("close", &t), 0);
	CHECK_EQ(t, ML_CRIU_TCP_CLOSE);
	CHECK_EQ(ml_criu_tcp_parse("refuse", &t), 0);
	CHECK_EQ(t, ML_CRIU_TCP_REFUSE);
	CHECK_EQ(ml_criu_tcp_parse("unset", &t), -EINVAL);
	CHECK_EQ(ml_criu_tcp_parse("Established", &t), -EINVAL);
	CHECK_STR(ml_criu_tcp_name(ML_CRIU_TCP_CLOSE), "close");
	CHECK_STR(ml_criu_tcp_name(ML_CRIU_TCP_UNSET), "unset");
}

static void test_describe(void)
{
	struct ml_criu_tcp_conns c = { .n = 5 };
	char buf[512];

	for (int i = 0; i < 5; i++)
		c.c[i] = (struct ml_criu_tcp_conn){ .pid = 42, .fd = 3 + i, .state = 1 };
	snprintf(c.c[0].local, sizeof(c.c[0].local), "127.0.0.1:6379");
	snprintf(c.c[0].remote, sizeof(c.c[0].remote), "127.0.0.1:40112");
	ml_criu_tcp_describe(&c, 2, buf, sizeof(buf));
	CHECK(!strncmp(buf,
		       "fd 3 of pid 42: 127.0.0.1:6379 <-> 127.0.0.1:40112 (established); "
		       "fd 4 of pid 42",
		       78));
	CHECK(strstr(buf, "; and 3 more") != NULL);
}

static void test_restore_needs(void)
{
	CHECK(ml_criu_restore_needs("--tcp-established"));
	CHECK(ml_criu_restore_needs("--ext-unix-sk"));
	CHECK(ml_criu_restore_needs("--manage-cgroups=full"));
	CHECK(!ml_criu_restore_needs("--skip-in-flight"));
	CHECK(!ml_criu_restore_needs("--tcp-established-x"));
	CHECK(!ml_criu_restore_needs("tcp-established"));
	CHECK(!ml_criu_restore_needs("--cgroup-root=/a b"));
}

static char tmpdir[64];

static void rm_tmpdir(void *unused)
{
	char p[128];

	(void)unused;
	snprintf(p, sizeof(p), "%s/%s", tmpdir, ML_CRIU_RESTORE_OPTS_NAME);
	unlink(p);
	rmdir(tmpdir);
}

/* The argv a restore from the record gets, space-separated, into @buf. */
static void restore_args(const struct ml_criu_restore_req *r, char *buf, size_t len, char *rep)
{
	struct ml_criu_argv a;
	size_t pos = 0;

	ml_criu_argv_init(&a);
	REQUIRE(mli_criu_restore_opts_add(&a, tmpdir, r, rep, 256) == 0);
	buf[0] = '\0';
	for (size_t i = 0; i < a.n; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", i ? " " : "", a.v[i]);
	ml_criu_argv_free(&a);
}

static void test_restore_record(void)
{
	const char *extra[] = { "--ext-unix-sk", "--skip-in-flight", "--tcp-close", NULL };
	const char *mine[] = { "--ext-unix-sk", NULL };
	struct ml_criu_restore_req r = { 0 };
	struct ml_err err = { 0 };
	char args[256], rep[256];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/memlens-explain-XXXXXX");
	REQUIRE(mkdtemp(tmpdir));
	T_DEFER(rm_tmpdir, NULL);
	/* no record: nothing repeated */
	restore_args(&r, args, sizeof(args), rep);
	CHECK_STR(args, "");
	/* the policy wins over the same option passed through */
	REQUIRE(mli_criu_restore_opts_write(tmpdir, ML_CRIU_TCP_ESTABLISHED, extra, NULL, &err) ==
		0);
	restore_args(&r, args, sizeof(args), rep);
	CHECK_STR(args, "--tcp-established --ext-unix-sk");
	CHECK_STR(rep, "--tcp-established --ext-unix-sk");
	/* the restore's own choice replaces the recorded one; its own options are not doubled */
	r.tcp = ML_CRIU_TCP_CLOSE;
	r.extra_args = mine;
	restore_args(&r, args, sizeof(args), rep);
	CHECK_STR(args, "--tcp-close");
	CHECK_STR(rep, "");
	/* a record sent by anyone: only the options a restore needs */
	{
		char p[128];
		FILE *f;

		snprintf(p, sizeof(p), "%s/%s", tmpdir, ML_CRIU_RESTORE_OPTS_NAME);
		f = fopen(p, "w");
		REQUIRE(f);
		fputs("--action-script=/tmp/x\n--file-locks\n--exec-cmd\n", f);
		fclose(f);
	}
	r = (struct ml_criu_restore_req){ 0 };
	restore_args(&r, args, sizeof(args), rep);
	CHECK_STR(args, "--file-locks");
	/* a container's: what only its restore takes is recorded as given, the
	 * dump's --external=mnt[] is not (only the restore's), nor a relative root */
	{
		const char *dump[] = { "--external=mnt[]", "--manage-cgroups=ignore", NULL };
		const char *rest[] = { "--root=/c/rootfs", "--external=mnt[]", "--root=rel",
				       "--exec-cmd", NULL };

		REQUIRE(mli_criu_restore_opts_write(tmpdir, ML_CRIU_TCP_UNSET, dump, rest, &err) ==
			0);
	}
	restore_args(&r, args, sizeof(args), rep);
	CHECK_STR(args, "--manage-cgroups=ignore --root=/c/rootfs --external=mnt[]");
}

int main(void)
{
	RUN(test_socket_option);
	RUN(test_tcp_established);
	RUN(test_sysv_host_ipc);
	RUN(test_restore_pid_taken);
	RUN(test_restore_pid_zombie);
	RUN(test_ext_unix_sk);
	RUN(test_file_locks);
	RUN(test_nested_namespace);
	RUN(test_quoted);
	RUN(test_unknown_and_near_misses);
	RUN(test_small_buffer);
	RUN(test_tcp_names);
	RUN(test_describe);
	RUN(test_restore_needs);
	RUN(test_restore_record);
	return T_DONE();
}
