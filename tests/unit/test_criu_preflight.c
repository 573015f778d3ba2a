// SPDX-License-Identifier: MIT
/*
 * What CRIU would refuse, found before anything is frozen
 * (lib/criu/criu_preflight.c): the classifiers of /proc's contents, then
 * the whole inspection on children of this test: a clean one, one whose
 * unix socket's peer is this test (outside its tree), one holding a file
 * lock, each with and without the option that takes care of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/criu_preflight.h"
#include "memlens/opts.h"

static void test_sockets_dumpable(void)
{
	CHECK(!ml_criu_sockets_dumpable("4.1.1", "6.18.44-fc-v1272"));
	CHECK(!ml_criu_sockets_dumpable("4.0", "6.16.0"));
	CHECK(ml_criu_sockets_dumpable("4.2", "6.18.1"));
	CHECK(ml_criu_sockets_dumpable("5.0", "7.1"));
	CHECK(ml_criu_sockets_dumpable("4.1.1", "6.12.0"));
	CHECK(ml_criu_sockets_dumpable("3.17.1", "5.10.0-28-amd64"));
	CHECK(ml_criu_sockets_dumpable("", "6.18"));
	CHECK(ml_criu_sockets_dumpable(NULL, "6.18"));
	CHECK(ml_criu_sockets_dumpable("4.1", "garbage"));
}

static void test_anon_inodes(void)
{
	char what[96];

	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[io_uring]", what, sizeof(what)), 1);
	CHECK_STR(what, "an io_uring instance");
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[userfaultfd]", what, sizeof(what)), 1);
	CHECK_STR(what, "a userfaultfd");
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[perf_event]", what, sizeof(what)), 1);
	CHECK_STR(what, "a perf_event file descriptor");
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:bpf-prog", what, sizeof(what)), 1);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[something-new]", what, sizeof(what)),
		 1);
	CHECK_STR(what, "an anonymous inode [something-new]");
	/* what CRIU dumps */
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[eventfd]", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[eventpoll]", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:inotify", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[signalfd]", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[timerfd]", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("anon_inode:[pidfd]", what, sizeof(what)), 0);
	/* not anonymous inodes at all */
	CHECK_EQ(ml_criu_anon_inode_unsupported("/dev/null", what, sizeof(what)), 0);
	CHECK_EQ(ml_criu_anon_inode_unsupported("socket:[1234]", what, sizeof(what)), 0);
}

static void test_chrdevs(void)
{
	CHECK(ml_criu_chrdev_dumpable(1, 3)); /* /dev/null */
	CHECK(ml_criu_chrdev_dumpable(1, 9)); /* /dev/urandom */
	CHECK(ml_criu_chrdev_dumpable(5, 0)); /* /dev/tty */
	CHECK(ml_criu_chrdev_dumpable(5, 2)); /* /dev/ptmx */
	CHECK(ml_criu_chrdev_dumpable(136, 4)); /* /dev/pts/4 */
	CHECK(ml_criu_chrdev_dumpable(4, 1)); /* /dev/tty1 */
	CHECK(ml_criu_chrdev_dumpable(10, 200)); /* /dev/net/tun */
	CHECK(!ml_criu_chrdev_dumpable(10, 232)); /* /dev/kvm */
	CHECK(!ml_criu_chrdev_dumpable(10, 229)); /* /dev/fuse */
	CHECK(!ml_criu_chrdev_dumpable(4, 64)); /* /dev/ttyS0 */
	CHECK(!ml_criu_chrdev_dumpable(226, 0)); /* /dev/dri/card0 */
	CHECK(ml_criu_chrdev_pts(136, 0));
	CHECK(!ml_criu_chrdev_pts(5, 2));
	CHECK(ml_criu_chrdev_ptmx(5, 2));
	CHECK(!ml_criu_chrdev_ptmx(136, 0));
}

static void test_locks_and_tracer(void)
{
	struct ml_criu_lock l;

	CHECK_EQ(ml_criu_parse_lock("1: POSIX  ADVISORY  WRITE 1234 08:02:131 0 EOF\n", &l), 0);
	CHECK_STR(l.type, "POSIX");
	CHECK_STR(l.access, "WRITE");
	CHECK_EQ(l.pid, 1234);
	CHECK_EQ(l.dev_major, 8u);
	CHECK_EQ(l.dev_minor, 2u);
	CHECK_EQ(l.ino, 131ul);
	CHECK_EQ(ml_criu_parse_lock("2: FLOCK  ADVISORY  READ 77 fd:01:9000 0 EOF", &l), 0);
	CHECK_STR(l.type, "FLOCK");
	CHECK_EQ(l.dev_major, 0xfdu);
	CHECK_EQ(l.ino, 9000ul);
	CHECK_EQ(ml_criu_parse_lock("3: OFDLCK ADVISORY  WRITE -1 00:2a:55 0 EOF", &l), 0);
	CHECK_EQ(l.pid, -1);
	CHECK_EQ(ml_criu_parse_lock("1: -> FLOCK  ADVISORY  WRITE 99 08:02:131 0 EOF", &l),
		 -EINVAL);
	CHECK_EQ(ml_criu_parse_lock("garbage", &l), -EINVAL);
	CHECK_EQ(ml_criu_parse_tracer("Name:\tx\nState:\tS\nTracerPid:\t4242\nUid: 0\n"), 4242);
	CHECK_EQ(ml_criu_parse_tracer("TracerPid:\t0\n"), 0);
	CHECK_EQ(ml_criu_parse_tracer("Name:\tx\n"), -1);
	CHECK_STR(ml_criu_finding_name(ML_CRIU_FINDING_TCP), "tcp");
	CHECK_STR(ml_criu_finding_name(ML_CRIU_FINDING_SYSV), "sysv_ipc");
	CHECK_STR(ml_criu_finding_name(ML_CRIU_FINDING_NAMESPACE), "namespace");
	CHECK_STR(ml_criu_finding_name(ML_CRIU_FINDING_FILE_LOCK), "file_lock");
}

/* A child that sleeps in a session of its own; @fd kept open in it (-1: none). */
static pid_t child(int keep, int close_fd, const char *lock)
{
	int go[2];
	pid_t pid;
	char c;

	REQUIRE(pipe(go) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		int fd;

		setsid();
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (close_fd >= 0)
			close(close_fd);
		for (fd = 3; fd < 64; fd++)
			if (fd != keep && fd != go[1])
				close(fd);
		if (lock) {
			fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
			if (fd < 0 || flock(fd, LOCK_EX))
				_exit(1);
		}
		if (write(go[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	T_CHILD(pid);
	close(go[1]);
	REQUIRE(read(go[0], &c, 1) == 1);
	close(go[0]);
	return pid;
}

static const struct ml_criu_finding *find(const struct ml_criu_preflight *p,
					  enum ml_criu_finding_kind k)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->f[i].kind == k)
			return &p->f[i];
	return NULL;
}

static void test_clean_child(void)
{
	ML_OPTS(ml_criu_preflight_opts, o, .criu_version = "4.2");
	ML_RESULT(ml_criu_preflight, p);
	struct ml_err err = { 0 };
	int efd = eventfd(0, EFD_CLOEXEC);
	pid_t pid = child(efd, -1, NULL); /* an eventfd: CRIU dumps it */
	char text[4096];

	REQUIRE(ml_criu_preflight(pid, &o, &p, &err) == 0);
	ml_criu_preflight_describe(&p, text, sizeof(text));
	CHECK_EQ(p.nrefused, 0u);
	CHECK_EQ(p.nprocs, 1u);
	if (p.nrefused)
		fprintf(stderr, "# %s\n", text);
	close(efd);
	CHECK_EQ(ml_criu_preflight(999999999, &o, &p, &err), -ESRCH);
}

/*
 * The result's size (memlens/opts.h): an unset sz is refused before anything
 * is inspected and nothing is written; a newer caller's larger struct gets
 * the result and zeros after it, its own sz kept.
 */
static void test_result_size(void)
{
	ML_OPTS(ml_criu_preflight_opts, o, .criu_version = "4.2");
	struct {
		struct ml_criu_preflight p;
		uint64_t newer[4];
	} *big = malloc(sizeof(*big));
	struct ml_err err = { 0 };

	REQUIRE(big);
	memset(big, 0xa5, sizeof(*big));
	big->p.sz = 0;
	CHECK_EQ(ml_criu_preflight(getpid(), &o, &big->p, &err), -EINVAL);
	CHECK(strstr(err.msg, "ml_criu_preflight") != NULL);
	CHECK_EQ(big->p.nprocs, (size_t)0xa5a5a5a5a5a5a5a5ULL);
	big->p.sz = sizeof(*big);
	REQUIRE_MSG(ml_criu_preflight(getpid(), &o, &big->p, &err) == 0, "%s", err.msg);
	CHECK_EQ(big->p.sz, sizeof(*big));
	CHECK(big->p.nprocs >= 1);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(big->newer[i], 0);
	free(big);
}

static void test_unix_peer_outside(void)
{
	ML_OPTS(ml_criu_preflight_opts, o, .criu_version = "4.2");
	const struct ml_criu_finding *f;
	ML_RESULT(ml_criu_preflight, p);
	struct ml_err err = { 0 };
	int sv[2];
	pid_t pid;
	char want[64];

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = child(sv[1], sv[0], NULL);
	REQUIRE(ml_criu_preflight(pid, &o, &p, &err) == 0);
	f = find(&p, ML_CRIU_FINDING_UNIX_PEER);
	if (!f) {
		close(sv[0]);
		close(sv[1]);
		SKIP("no unix socket diagnostics here (unix_diag)");
	}
	CHECK_EQ(p.nrefused, 1u);
	CHECK(!f->absorbed);
	CHECK_EQ(f->pid, pid);
	snprintf(want, sizeof(want), "fd %d: a unix stream socket", sv[1]);
	CHECK(strstr(f->resource, want) != NULL);
	snprintf(want, sizeof(want), "of pid %d (", (int)getpid());
	CHECK(strstr(f->resource, want) != NULL);
	CHECK(strstr(f->fix, "same process tree") != NULL);
	/* a stream: --ext-unix-sk does not help */
	{
		const char *extra[] = { "--ext-unix-sk", NULL };
		ML_OPTS(ml_criu_preflight_opts, x, .criu_version = "4.2", .extra_args = extra);

		REQUIRE(ml_criu_preflight(pid, &x, &p, &err) == 0);
		CHECK_EQ(p.nrefused, 1u);
	}
	close(sv[0]);
	close(sv[1]);
}

static void test_file_lock(void)
{
	const char *extra[] = { "--file-locks", NULL };
	ML_OPTS(ml_criu_preflight_opts, o, .criu_version = "4.2");
	ML_OPTS(ml_criu_preflight_opts, given, .criu_version = "4.2", .extra_args = extra);
	char path[] = "/tmp/memlens-pf-lock-XXXXXX";
	const struct ml_criu_finding *f;
	ML_RESULT(ml_criu_preflight, p);
	struct ml_err err = { 0 };
	int fd = mkstemp(path);
	pid_t pid;

	REQUIRE(fd >= 0);
	close(fd);
	pid = child(-1, -1, path);
	REQUIRE(ml_criu_preflight(pid, &o, &p, &err) == 0);
	f = find(&p, ML_CRIU_FINDING_FILE_LOCK);
	REQUIRE_MSG(f, "no file lock found");
	CHECK(!f->absorbed);
	CHECK(strstr(f->resource, "FLOCK WRITE lock on") != NULL);
	CHECK(strstr(f->resource, path) != NULL);
	CHECK(strstr(f->fix, "--criu-opt --file-locks") != NULL);
	CHECK_EQ(p.nrefused, 1u);
	REQUIRE(ml_criu_preflight(pid, &given, &p, &err) == 0);
	f = find(&p, ML_CRIU_FINDING_FILE_LOCK);
	REQUIRE(f);
	CHECK(f->absorbed);
	CHECK_EQ(p.nrefused, 0u);
	unlink(path);
}

/* An inet socket: CRIU 4.1.1 cannot dump it after Linux 6.16 */
static void test_criu_kernel(void)
{
	ML_OPTS(ml_criu_preflight_opts, old, .criu_version = "4.1.1", .kernel_release = "6.18.2");
	ML_OPTS(ml_criu_preflight_opts, okk, .criu_version = "4.1.1", .kernel_release = "6.12.9");
	const struct ml_criu_finding *f;
	ML_RESULT(ml_criu_preflight, p);
	struct ml_err err = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	REQUIRE(s >= 0);
	REQUIRE(bind(s, (struct sockaddr *)&a, sizeof(a)) == 0); /* listed in /proc/net/udp */
	pid = child(s, -1, NULL);
	REQUIRE(ml_criu_preflight(pid, &old, &p, &err) == 0);
	f = find(&p, ML_CRIU_FINDING_CRIU_KERNEL);
	REQUIRE_MSG(f, "no finding for a UDP socket with CRIU 4.1.1 on 6.18");
	CHECK(strstr(f->resource, "a UDP socket") != NULL);
	CHECK(strstr(f->fix, "CRIU 4.2 or newer") != NULL);
	REQUIRE(ml_criu_preflight(pid, &okk, &p, &err) == 0);
	CHECK(!find(&p, ML_CRIU_FINDING_CRIU_KERNEL));
	close(s);
}

int main(void)
{
	RUN(test_sockets_dumpable);
	RUN(test_result_size);
	RUN(test_anon_inodes);
	RUN(test_chrdevs);
	RUN(test_locks_and_tracer);
	RUN(test_clean_child);
	RUN(test_unix_peer_outside);
	RUN(test_file_lock);
	RUN(test_criu_kernel);
	return T_DONE();
}
