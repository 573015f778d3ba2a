// SPDX-License-Identifier: MIT
/*
 * stress_forkexec: a thread that forks and execs continuously.
 *   stress_forkexec -r RESULT [-t SECONDS]
 * Every child looks through /proc/self/fd before it execs: a userfaultfd
 * ("anon_inode:[userfaultfd]") there came from the parent, which held one
 * at the instant it forked; CRIU refuses to dump a process holding one. The
 * child then execs this program again (--child), which looks again: a
 * userfaultfd that survives exec is worse still. Any is harm. The main
 * thread checks its registers around spins meanwhile.
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "stress.h"

#define FOUND_BEFORE_EXEC 3
#define FOUND_AFTER_EXEC 4

static uint64_t children, before_exec, after_exec, failed;

/* Async-signal-safe (a child of a threaded process): raw system calls only. */
static int holds_uffd(void)
{
	static const char want[] = "anon_inode:[userfaultfd]";
	char buf[4096], link[64];
	int dir = (int)syscall(SYS_open, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (dir < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			long l = syscall(SYS_readlinkat, dir, d->d_name, link, sizeof(link) - 1);

			off += d->d_reclen;
			if (l == (long)sizeof(want) - 1 && !memcmp(link, want, sizeof(want) - 1)) {
				syscall(SYS_close, dir);
				return 1;
			}
		}
	}
	syscall(SYS_close, dir);
	return 0;
}

static void *forker(void *arg)
{
	const char *self = arg;
	struct timespec rest = { 0, 1000000 };

	while (!stress_stopping()) {
		pid_t c = fork();
		int st;

		if (c == 0) {
			char *argv[] = { (char *)"stress_forkexec", (char *)"--child", NULL };

			if (holds_uffd() == 1)
				_exit(FOUND_BEFORE_EXEC);
			execv(self, argv);
			_exit(127);
		}
		if (c < 0) {
			failed++;
			nanosleep(&rest, NULL);
			continue;
		}
		while (waitpid(c, &st, 0) < 0)
			if (errno != EINTR)
				break;
		children++;
		if (WIFEXITED(st) && WEXITSTATUS(st) == FOUND_BEFORE_EXEC) {
			before_exec++;
			stress_harm("a forked child held a userfaultfd (child pid, children)", c,
				    (long long)children);
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == FOUND_AFTER_EXEC) {
			after_exec++;
			stress_harm("an exec'd child held a userfaultfd (child pid, children)", c,
				    (long long)children);
		} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			failed++;
		}
		stress_checked(1);
		nanosleep(&rest, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static char self[4096];
	uint64_t seed = 0, regs = 0;
	pthread_t t;
	ssize_t n;

	if (argc == 2 && !strcmp(argv[1], "--child"))
		return holds_uffd() == 1 ? FOUND_AFTER_EXEC : 0;
	if (stress_init(argc, argv, NULL) != argc)
		stress_usage(argv[0], NULL);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || pthread_create(&t, NULL, forker, self)) {
		perror("stress_forkexec: set-up");
		return 2;
	}
	stress_ready();
	stress_regs_loop(seed, &regs);
	pthread_join(t, NULL);
	return stress_finish("forkexec: %llu children, %llu held a userfaultfd before exec, %llu "
			     "after, %llu failed to run, %llu register checks failed",
			     (unsigned long long)children, (unsigned long long)before_exec,
			     (unsigned long long)after_exec, (unsigned long long)failed,
			     (unsigned long long)regs);
}
