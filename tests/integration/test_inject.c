// SPDX-License-Identifier: MIT
/*
 * The injection never harms the target: memlens killed at each of its
 * ptrace calls (MEMLENS_FAULT_PTRACE), signals that arrive meanwhile,
 * children forked meanwhile, waits that must not see EINTR. The target is
 * forked here; its threads check themselves and count every harm in a
 * shared page the test reads.
 */
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/attach.h"

struct harm {
	volatile long reg_bad; /* a register or vector register changed under a thread */
	volatile long sleep_bad; /* nanosleep returned early or failed */
	volatile long cond_bad; /* pthread_cond_timedwait failed */
	volatile long epoll_eintr; /* epoll_wait returned EINTR */
	volatile long alrm, alrm_bad; /* SIGALRM seen, with si_code != SI_KERNEL */
	volatile long rt, rt_bad; /* RT signals seen, out of sequence or without payload */
	volatile long segv, segv_bad; /* write-barrier faults, forged ones */
	volatile long forks, inherited; /* children, those holding a userfaultfd */
	volatile long ppoll_bad; /* the mask outside ppoll changed */
	volatile int threads_ready;
	volatile int stop;
};

static struct harm *H;
static char *barrier_page;

static bool has_uffd(pid_t pid)
{
	char path[64], p[600], l[300];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		n = readlink(p, l, sizeof(l) - 1);
		if (n > 0) {
			l[n] = '\0';
			if (strstr(l, "userfaultfd"))
				found = true;
		}
	}
	closedir(d);
	return found;
}

/* ---- the target's threads ---- */

static void *busy(void *a)
{
	(void)a;
	__sync_fetch_and_add(&H->threads_ready, 1);
	while (!H->stop) {
		unsigned long r;

		__asm__ volatile("mov $0x1111,%%r12\n mov $0x2222,%%r13\n mov $0x3333,%%r14\n"
				 "mov $0x4444,%%r15\n mov $0x6666,%%rbx\n"
				 "mov $0x5555,%%rax\n movq %%rax,%%xmm8\n movq %%rax,%%xmm9\n"
				 "pshufd $0x44,%%xmm9,%%xmm9\n"
				 "mov $200000,%%rcx\n"
				 "1: dec %%rcx\n jnz 1b\n"
				 "xor %%rax,%%rax\n"
				 "cmp $0x1111,%%r12\n jne 2f\n cmp $0x2222,%%r13\n jne 2f\n"
				 "cmp $0x3333,%%r14\n jne 2f\n cmp $0x4444,%%r15\n jne 2f\n"
				 "cmp $0x6666,%%rbx\n jne 2f\n"
				 "movq %%xmm8,%%rdx\n cmp $0x5555,%%rdx\n jne 2f\n"
				 "pshufd $0xee,%%xmm9,%%xmm10\n movq %%xmm10,%%rdx\n"
				 "cmp $0x5555,%%rdx\n jne 2f\n"
				 "jmp 3f\n 2: mov $1,%%rax\n 3:\n"
				 : "=a"(r)
				 :
				 : "rcx", "rdx", "rbx", "r12", "r13", "r14", "r15", "xmm8", "xmm9",
				   "xmm10", "memory", "cc");
		if (r)
			H->reg_bad++;
	}
	return NULL;
}

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void *sleeper(void *a)
{
	(void)a;
	__sync_fetch_and_add(&H->threads_ready, 1);
	while (!H->stop) {
		struct timespec t = { 0, 5000000 };
		long long t0 = mono_us();

		if (nanosleep(&t, NULL) || mono_us() - t0 < 5000)
			H->sleep_bad++;
	}
	return NULL;
}

static void *cond_waiter(void *a)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;

	(void)a;
	__sync_fetch_and_add(&H->threads_ready, 1);
	pthread_mutex_lock(&m);
	while (!H->stop) {
		struct timespec ts;
		int r;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 3000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		r = pthread_cond_timedwait(&c, &m, &ts);
		if (r && r != ETIMEDOUT)
			H->cond_bad++;
	}
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *epoller(void *a)
{
	int ep = epoll_create1(0);
	struct epoll_event e;

	(void)a;
	__sync_fetch_and_add(&H->threads_ready, 1);
	while (!H->stop)
		if (epoll_wait(ep, &e, 1, 50) < 0 && errno == EINTR)
			H->epoll_eintr++;
	close(ep);
	return NULL;
}

static void *forker(void *a)
{
	(void)a;
	__sync_fetch_and_add(&H->threads_ready, 1);
	while (!H->stop) {
		pid_t c = fork();
		int st;

		if (c == 0)
			_exit(has_uffd(getpid()) ? 7 : 0);
		if (c < 0)
			continue;
		waitpid(c, &st, 0);
		H->forks++;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 7)
			H->inherited++;
	}
	return NULL;
}

static void on_alrm(int s, siginfo_t *si, void *u)
{
	(void)s;
	(void)u;
	H->alrm++;
	if (si->si_code != SI_KERNEL)
		H->alrm_bad++;
}

static volatile int rt_next = 1;

static void on_rt(int s, siginfo_t *si, void *u)
{
	(void)s;
	(void)u;
	H->rt++;
	if (si->si_code != SI_QUEUE || si->si_value.sival_int != rt_next)
		H->rt_bad++;
	rt_next = si->si_value.sival_int + 1;
}

static void on_segv(int s, siginfo_t *si, void *u)
{
	(void)s;
	(void)u;
	H->segv++;
	if (si->si_code <= 0 || si->si_addr != barrier_page)
		H->segv_bad++;
	mprotect(barrier_page, 4096, PROT_READ | PROT_WRITE);
}

static void on_wake(int s)
{
	(void)s;
}

enum { T_BUSY = 1, T_SLEEP = 2, T_COND = 4, T_EPOLL = 8, T_FORK = 16, T_SIG = 32, T_PPOLL = 64 };

/* The target: its threads; the main thread keeps the signals for itself. */
static pid_t start_target(int what)
{
	pid_t pid;
	int nthreads = 0;

	memset((void *)H, 0, sizeof(*H));
	pid = fork();
	if (pid) {
		if (pid > 0)
			T_CHILD(pid);
		return pid;
	}
	setsid();
	sigset_t rt;
	struct sigaction wake = { 0 };

	wake.sa_handler = on_wake;
	sigaction(SIGUSR2, &wake, NULL);
	pthread_t t;

	/* the threads never take the signals: one receiver keeps the order */
	sigemptyset(&rt);
	sigaddset(&rt, SIGALRM);
	sigaddset(&rt, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &rt, NULL);
	if (what & T_BUSY) {
		pthread_create(&t, NULL, busy, NULL);
		pthread_create(&t, NULL, busy, NULL);
		nthreads += 2;
	}
	if (what & T_SLEEP)
		nthreads += !pthread_create(&t, NULL, sleeper, NULL);
	if (what & T_COND)
		nthreads += !pthread_create(&t, NULL, cond_waiter, NULL);
	if (what & T_EPOLL)
		nthreads += !pthread_create(&t, NULL, epoller, NULL);
	if (what & T_FORK)
		nthreads += !pthread_create(&t, NULL, forker, NULL);
	pthread_sigmask(SIG_UNBLOCK, &rt, NULL);
	if (what & T_SIG) {
		struct sigaction sa = { 0 };
		struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sa.sa_sigaction = on_alrm;
		sigaction(SIGALRM, &sa, NULL);
		sa.sa_sigaction = on_rt;
		sigaction(SIGRTMIN, &sa, NULL);
		sa.sa_sigaction = on_segv;
		sigaction(SIGSEGV, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	while (H->threads_ready < nthreads)
		usleep(1000);
	H->threads_ready = -1;
	while (!H->stop) {
		if (what & T_SIG) {
			/* a write barrier, as JVMs and Go use: fault, unprotect */
			mprotect(barrier_page, 4096, PROT_READ);
			barrier_page[0]++;
		} else if (what & T_PPOLL) {
			/* a temporary mask: SIGUSR1 blocked outside, open inside */
			sigset_t out, in, cur;
			struct timespec ts = { 0, 2000000 };

			sigemptyset(&out);
			sigaddset(&out, SIGUSR1);
			sigprocmask(SIG_BLOCK, &out, NULL);
			sigemptyset(&in);
			ppoll(NULL, 0, &ts, &in);
			sigprocmask(SIG_BLOCK, NULL, &cur);
			if (!sigismember(&cur, SIGUSR1))
				H->ppoll_bad++;
		} else {
			pause();
		}
	}
	_exit(0);
}

static void wait_ready(void)
{
	for (int i = 0; i < 5000 && H->threads_ready != -1; i++)
		usleep(1000);
}

static int stop_target(pid_t pid)
{
	int st = 0;

	H->stop = 1;
	syscall(SYS_tgkill, pid, pid, SIGUSR2); /* the main thread, out of pause() */
	for (int i = 0; i < 3000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Every thread let go, none with a mask memlens set: wait up to 2 s. */
static bool released(pid_t pid, char *why, size_t whylen)
{
	char path[600], line[256];

	for (int tries = 0; tries < 200; tries++) {
		bool ok = true;
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		d = opendir(path);
		if (!d) {
			snprintf(why, whylen, "the target is gone");
			return false;
		}
		while ((de = readdir(d)) && ok) {
			FILE *f;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid,
				 de->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			while (fgets(line, sizeof(line), f)) {
				if (!strncmp(line, "TracerPid:", 10) && atoi(line + 10) != 0) {
					snprintf(why, whylen, "thread %s still traced", de->d_name);
					ok = false;
				}
				if (!strncmp(line, "SigBlk:", 7) &&
				    strtoull(line + 7, NULL, 16) == 0xfffffffffffbfeffULL) {
					snprintf(why, whylen, "thread %s keeps the blocked mask",
						 de->d_name);
					ok = false;
				}
			}
			fclose(f);
		}
		closedir(d);
		if (ok && !has_uffd(pid))
			return true;
		if (ok)
			snprintf(why, whylen, "the target holds a userfaultfd");
		usleep(10000);
	}
	return false;
}

/* What each thread of @pid is doing, and the main stack, for a failure's log. */
static void dump_threads(pid_t pid)
{
	char path[600], line[512];
	struct dirent *de;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			printf("#   %s", line);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char st[512] = "", sc[256] = "";

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f && !fgets(st, sizeof(st), f))
			st[0] = '\0';
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f && !fgets(sc, sizeof(sc), f))
			sc[0] = '\0';
		if (f)
			fclose(f);
		printf("#   thread %s: %.60s | syscall %s", de->d_name,
		       strrchr(st, ')') ? strrchr(st, ')') : st, sc);
	}
	if (d)
		closedir(d);
}

static char *const no_env[] = { NULL };

/* One attach by a separate process that dies at its @k-th ptrace call (0: never). */
static int attach_dying_at(pid_t target, int k)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		struct ml_err err = { 0 };
		char v[32];
		int fd;

		snprintf(v, sizeof(v), "%d", k);
		if (k)
			setenv("MEMLENS_FAULT_PTRACE", v, 1);
		fd = ml_wp_attach(target, false, NULL, &err);
		if (fd < 0) {
			printf("# attach: %s\n", err.msg);
			fflush(stdout);
			_exit(2);
		}
		_exit(0);
	}
	waitpid(c, &st, 0);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		return 1; /* died where asked */
	return WIFEXITED(st) ? -WEXITSTATUS(st) : -100;
}

static void test_death_at_every_ptrace_call(void)
{
	pid_t pid = start_target(T_BUSY | T_SLEEP | T_COND | T_EPOLL);
	char why[600];
	int k, deaths = 0, st;

	wait_ready();
	for (k = 1; k < 400; k++) {
		int r = attach_dying_at(pid, k);

		if (r == 0)
			break; /* the whole attach took fewer calls: done */
		if (r < 0) {
			T_FAILMSG("attach at k=%d failed (%d)", k, r);
			dump_threads(pid);
			break;
		}
		deaths++;
		if (!released(pid, why, sizeof(why))) {
			T_FAILMSG("memlens killed at its ptrace call %d: %s", k, why);
			break;
		}
		if (kill(pid, 0)) {
			T_FAILMSG("the target died after memlens was killed at call %d", k);
			break;
		}
	}
	printf("# memlens killed at each of its %d ptrace calls; target: %ld register "
	       "faults, %ld short sleeps, %ld cond errors, %ld epoll EINTR\n",
	       deaths, H->reg_bad, H->sleep_bad, H->cond_bad, H->epoll_eintr);
	CHECK(deaths > 20);
	CHECK_EQ(H->reg_bad, 0);
	CHECK_EQ(H->sleep_bad, 0);
	CHECK_EQ(H->cond_bad, 0);
	/*
	 * The one window the kernel leaves: a thread blocked in epoll_wait
	 * returns EINTR the moment it is stopped; memlens turns that into a
	 * restart right after. Killed in between (two ptrace calls per such
	 * thread), the EINTR stays.
	 */
	printf("# epoll_wait EINTR seen %ld time(s): only when memlens dies between "
	       "stopping that thread and restarting its wait (at most 2 of the calls)\n",
	       H->epoll_eintr);
	CHECK(H->epoll_eintr <= 2);
	st = stop_target(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* fewer cycles on the sanitizer build, which is ten times slower */
#ifdef __SANITIZE_ADDRESS__
#define CYCLES(n) ((n) / 5)
#else
#define CYCLES(n) (n)
#endif

static void cycles(pid_t pid, int n)
{
	n = CYCLES(n);
	for (int i = 0; i < n; i++) {
		struct ml_err err = { 0 };
		int fd = ml_wp_attach(pid, false, NULL, &err);

		if (fd < 0) {
			T_FAILMSG("attach %d: %s", i, err.msg);
			return;
		}
		close(fd);
	}
}

/*
 * A thread sleeping in a restarted nanosleep (restart_syscall: where every
 * thread is after it was stopped once in nanosleep), next to a busy one:
 * memlens killed at each of its ptrace calls, the sleep never ends early.
 * (The rt_sigreturn that brings an injection thread back after memlens's
 * death makes the kernel forget a restart: such a thread is not chosen
 * while another is there.)
 */
static void test_restarted_sleep_kept(void)
{
	int p[2], k, deaths = 0;
	pid_t pid;
	char c;

	memset((void *)H, 0, sizeof(*H)); /* its busy thread runs until H->stop */
	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct timespec ts = { 600, 0 };
		pthread_t t;

		close(p[0]);
		setsid();
		pthread_create(&t, NULL, busy, NULL);
		if (write(p[1], "r", 1) != 1)
			_exit(9);
		/* a byte on the pipe: the sleep ended (early) */
		if (nanosleep(&ts, NULL) != 0 && write(p[1], "e", 1) != 1)
			_exit(9);
		_exit(0);
	}
	T_CHILD(pid);
	close(p[1]);
	REQUIRE(read(p[0], &c, 1) == 1);
	REQUIRE(attach_dying_at(pid, 0) == 0); /* now in restart_syscall */
	for (k = 1; k < 400; k++) {
		int r = attach_dying_at(pid, k);

		if (r == 0)
			break;
		if (r < 0) {
			T_FAILMSG("attach at k=%d failed (%d)", k, r);
			dump_threads(pid);
			break;
		}
		deaths++;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	/* the continuation of the last death may still be running: give it
	 * the time an early wakeup would need to show */
	usleep(200000);
	printf("# memlens killed at each of its %d ptrace calls next to a restarted sleep\n",
	       deaths);
	CHECK(deaths > 10);
	CHECK(read(p[0], &c, 1) < 0 && errno == EAGAIN);
	CHECK_EQ(kill(pid, 0), 0);
	close(p[0]);
}

static void test_no_eintr_no_early_wakeup(void)
{
	pid_t pid = start_target(T_BUSY | T_SLEEP | T_COND | T_EPOLL);

	wait_ready();
	cycles(pid, 200);
	usleep(60000);
	printf("# %d attaches: %ld register faults, %ld short sleeps, %ld cond errors, %ld "
	       "epoll EINTR\n",
	       CYCLES(200), H->reg_bad, H->sleep_bad, H->cond_bad, H->epoll_eintr);
	CHECK_EQ(H->reg_bad, 0);
	CHECK_EQ(H->sleep_bad, 0);
	CHECK_EQ(H->cond_bad, 0);
	CHECK_EQ(H->epoll_eintr, 0);
	stop_target(pid);
}

static void test_signals_kept_exactly(void)
{
	pid_t pid = start_target(T_SIG), sender;
	long sent = 0;

	wait_ready();
	sender = fork();
	if (sender > 0)
		T_CHILD(sender);
	if (sender == 0) {
		for (int i = 1; i <= 100000; i++) {
			union sigval v = { .sival_int = i };

			if (sigqueue(pid, SIGRTMIN, v))
				_exit(0);
			usleep(1000);
		}
		_exit(0);
	}
	cycles(pid, 200);
	kill(sender, SIGKILL);
	waitpid(sender, NULL, 0);
	sent = rt_next; /* unused in the parent: the target counts */
	(void)sent;
	usleep(50000);
	printf("# %d attaches: SIGALRM %ld (%ld not SI_KERNEL), RT %ld (%ld out of order or "
	       "without payload), write-barrier faults %ld (%ld forged)\n",
	       CYCLES(200), H->alrm, H->alrm_bad, H->rt, H->rt_bad, H->segv, H->segv_bad);
	CHECK(H->alrm > 0 && H->rt > 0 && H->segv > 0);
	CHECK_EQ(H->alrm_bad, 0);
	CHECK_EQ(H->rt_bad, 0);
	CHECK_EQ(H->segv_bad, 0);
	stop_target(pid);
}

static void test_no_child_inherits_uffd(void)
{
	pid_t pid = start_target(T_FORK | T_BUSY);

	wait_ready();
	cycles(pid, 300);
	usleep(20000);
	printf("# %d attaches while a thread forks: %ld children, %ld with a userfaultfd\n",
	       CYCLES(300), H->forks, H->inherited);
	CHECK(H->forks > 0);
	CHECK_EQ(H->inherited, 0);
	stop_target(pid);
}

static void test_temporary_mask_kept(void)
{
	pid_t pid = start_target(T_PPOLL);

	wait_ready();
	cycles(pid, 200);
	printf("# %d attaches to a thread in ppoll: the mask outside changed %ld time(s)\n",
	       CYCLES(200), H->ppoll_bad);
	CHECK_EQ(H->ppoll_bad, 0);
	stop_target(pid);
}

/* A service whose system call filter kills (or refuses) userfaultfd. */
static void seccomp_case(unsigned int act, const char *expect)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, act),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { 4, f };
	struct ml_err err = { 0 };
	int ready[2], st, fd;
	pid_t pid;
	char c;

	REQUIRE(pipe(ready) == 0);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(9);
		if (write(ready[1], "r", 1) != 1)
			_exit(9);
		for (;;)
			pause();
	}
	if (pid > 0)
		T_CHILD(pid);
	REQUIRE(read(ready[0], &c, 1) == 1);
	fd = ml_wp_attach(pid, false, NULL, &err);
	CHECK(fd < 0);
	if (fd >= 0)
		close(fd);
	printf("# %s\n", err.msg);
	CHECK(strstr(err.msg, expect) != NULL);
	usleep(20000);
	CHECK(waitpid(pid, &st, WNOHANG) == 0); /* still alive */
	CHECK(!has_uffd(pid));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(ready[0]);
	close(ready[1]);
}

static void test_seccomp_kill_filter_refused(void)
{
	seccomp_case(SECCOMP_RET_KILL_PROCESS, "would kill the process on userfaultfd()");
}

static void test_seccomp_errno_filter_reported(void)
{
	seccomp_case(SECCOMP_RET_ERRNO | 1, "seccomp filter");
}

int main(void)
{
	(void)no_env;
	H = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	barrier_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (H == MAP_FAILED || barrier_page == MAP_FAILED)
		return 1;
	RUN(test_no_eintr_no_early_wakeup);
	RUN(test_signals_kept_exactly);
	RUN(test_no_child_inherits_uffd);
	RUN(test_temporary_mask_kept);
	RUN(test_seccomp_kill_filter_refused);
	RUN(test_seccomp_errno_filter_reported);
	RUN(test_death_at_every_ptrace_call);
	RUN(test_restarted_sleep_kept);
	return T_DONE();
}
