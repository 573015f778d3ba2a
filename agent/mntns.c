// SPDX-License-Identifier: MIT
/*
 * The application's mount namespace for CRIU's restore (mntns.h): found
 * and recorded at the dump, cloned from its keeper at the restore.
 *
 * A bind mount (CRIU's --root, its external mounts) cannot take its source
 * from another mount namespace (/proc/PID/root/...: EINVAL). A child of the
 * agent enters the keeper's namespace, clones the mounts there
 * (open_tree(OPEN_TREE_CLONE): detached trees of its own), comes back and
 * attaches them under the images directory (move_mount), where CRIU's
 * restore binds them from.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "mntns.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif

static unsigned long long ns_ino(pid_t pid)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/mnt");
	return stat(path, &st) ? 0 : (unsigned long long)st.st_ino;
}

/* @pid's parent and start time (in clock ticks), from /proc/PID/stat. */
static int stat_of(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int pp;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* ") S PPID PGRP SESSION TTY TPGID FLAGS MINFLT CMINFLT MAJFLT CMAJFLT
	 * UTIME STIME CUTIME CSTIME PRIORITY NICE THREADS ITREALVALUE START" */
	if (!p || sscanf(p + 2,
			 "%*c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %llu",
			 &pp, start) != 2)
		return -1;
	*ppid = pp;
	return 0;
}

static bool in_tree(pid_t pid, pid_t root)
{
	unsigned long long st;

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		if (pid == root)
			return true;
		if (stat_of(pid, &pid, &st))
			return false;
	}
	return pid == root;
}

/* The oldest process in mount namespace @ino outside @target's tree. */
static pid_t find_keeper(pid_t target, unsigned long long ino)
{
	unsigned long long best = ~0ULL, start;
	pid_t keeper = 0, pp;
	struct dirent *d;
	DIR *dir = opendir("/proc");

	while (dir && (d = readdir(dir))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == target || ns_ino((pid_t)pid) != ino ||
		    stat_of((pid_t)pid, &pp, &start) || start >= best ||
		    in_tree((pid_t)pid, target))
			continue;
		best = start;
		keeper = (pid_t)pid;
	}
	if (dir)
		closedir(dir);
	return keeper;
}

/* The restore's options; each fits a line of the dump's record of them
 * (lib/criu/criu_restore_opts.c reads lines of up to 255 characters). */
static int set_args(struct mntns_keep *k, const char *dir)
{
	size_t i;
	int n;

	n = snprintf(k->root_arg, sizeof(k->root_arg), "--root=%.3000s/" MNTNS_STAGE "/root", dir);
	if (n < 0 || n >= 250)
		return -ENAMETOOLONG;
	k->restore[0] = k->root_arg;
	for (i = 0; i < k->n; i++) {
		n = snprintf(k->ext_arg[i], sizeof(k->ext_arg[i]),
			     "--external=mnt[%s]:%.3000s/" MNTNS_STAGE "/ext-%zu", k->key[i], dir,
			     i);
		if (n < 0 || n >= 250)
			return -ENAMETOOLONG;
		k->restore[i + 1] = k->ext_arg[i];
	}
	k->restore[i + 1] = NULL;
	return 0;
}

/* "--external=mnt[MOUNTPOINT]:KEY" into @k (other options: 0, nothing). */
static int take_ext(const char *opt, struct mntns_keep *k, struct ml_err *err)
{
	static const char pre[] = "--external=mnt[";
	const char *mp = opt + sizeof(pre) - 1, *close, *key;

	if (strncmp(opt, pre, sizeof(pre) - 1))
		return 0;
	close = strchr(mp, ']');
	key = close && close[1] == ':' ? close + 2 : NULL;
	/* mnt[] (every external mount, by its mount point): nothing to map here */
	if (!key || close == mp || !*key || strpbrk(key, " \t\n,") || mp[0] != '/')
		return 0;
	if (k->n == MNTNS_EXT_MAX)
		return ml_err_set(err, E2BIG, "more than %d --criu-opt=--external=mnt[...] options",
				  MNTNS_EXT_MAX);
	if ((size_t)(close - mp) >= sizeof(k->mp[0]) || strlen(key) >= sizeof(k->key[0]))
		return ml_err_set(err, ENAMETOOLONG, "%s: its mount point or key is too long", opt);
	snprintf(k->mp[k->n], sizeof(k->mp[0]), "%.*s", (int)(close - mp), mp);
	snprintf(k->key[k->n], sizeof(k->key[0]), "%s", key);
	k->n++;
	return 0;
}

int mntns_prepare(pid_t target, const char *const *criu_opts, const char *dir, struct mntns_keep *k,
		  struct ml_err *err)
{
	unsigned long long self = ns_ino(0);
	int r;

	memset(k, 0, sizeof(*k));
	k->ino = ns_ino(target);
	if (!k->ino || !self || k->ino == self)
		return 0;
	for (; criu_opts && *criu_opts; criu_opts++) {
		r = take_ext(*criu_opts, k, err);
		if (r)
			return r;
	}
	k->keeper = find_keeper(target, k->ino);
	if (!k->keeper)
		return ml_err_set(err, ESRCH,
				  "pid %d is in a mount namespace of its own (mnt:[%llu], not the "
				  "agent's) with no other process to hold it: its restore could "
				  "not rebuild it; keep a process of the application's container "
				  "running beside it (its main process, e.g. `sleep infinity`)",
				  (int)target, k->ino);
	if (set_args(k, dir))
		return ml_err_set(
			err, ENAMETOOLONG,
			"the images directory %s, or a key of --criu-opt=--external=mnt[], "
			"is too long for the options its restore repeats (255 characters "
			"each): give a shorter images_dir or --images-root",
			dir);
	return 0;
}

int mntns_write(const struct mntns_keep *k, const char *dir, struct ml_err *err)
{
	char path[PATH_MAX + 32];
	FILE *f;

	if (!k->keeper)
		return 0;
	snprintf(path, sizeof(path), "%.4000s/" MNTNS_FILE, dir);
	f = fopen(path, "we");
	if (!f)
		return ml_err_set(err, errno, "cannot write %s: %s", path, strerror(errno));
	fprintf(f, "# memlens: the application's mount namespace, for the restore\n");
	fprintf(f, "keeper %d %llu\n", (int)k->keeper, k->ino);
	for (size_t i = 0; i < k->n; i++)
		fprintf(f, "ext %s %s\n", k->key[i], k->mp[i]);
	if (fclose(f))
		return ml_err_set(err, EIO, "cannot write %s", path);
	return 0;
}

int mntns_parse(const char *text, struct mntns_keep *k, struct ml_err *err)
{
	const char *line = text;

	memset(k, 0, sizeof(*k));
	while (*line) {
		size_t len = strcspn(line, "\n");
		char buf[800], key[128];
		int pid, used = 0;

		if (len >= sizeof(buf))
			return ml_err_set(err, EINVAL, "a line of " MNTNS_FILE " is too long");
		snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
		line += len + (line[len] == '\n');
		if (!buf[0] || buf[0] == '#')
			continue;
		if (sscanf(buf, "keeper %d %llu%n", &pid, &k->ino, &used) == 2 && !buf[used] &&
		    pid > 0) {
			k->keeper = pid;
		} else if (sscanf(buf, "ext %127s %n", key, &used) == 1 && used &&
			   buf[used] == '/' && k->n < MNTNS_EXT_MAX &&
			   strlen(buf + used) < sizeof(k->mp[0])) {
			snprintf(k->key[k->n], sizeof(k->key[0]), "%s", key);
			snprintf(k->mp[k->n], sizeof(k->mp[0]), "%s", buf + used);
			k->n++;
		} else {
			return ml_err_set(err, EINVAL, MNTNS_FILE " has a line it cannot be: '%s'",
					  buf);
		}
	}
	if (!k->keeper || !k->ino)
		return ml_err_set(err, EINVAL, MNTNS_FILE " names no keeper");
	return 0;
}

/* The child's report of its failure: the step and its errno. */
struct step_fail {
	int step; /* index into steps[] */
	int item; /* the mount (-1: the root) */
	int err;
};

static const char *const steps[] = {
	"open the keeper's mount namespace",
	"open the agent's mount namespace",
	"enter the keeper's mount namespace (setns; the agent needs CAP_SYS_ADMIN and "
	"CAP_SYS_CHROOT)",
	"clone a mount there (open_tree)",
	"return to the agent's mount namespace",
	"make the mount point beside the images",
	"attach the clone beside the images (move_mount)",
};

static void child_fail(int fd, int step, int item)
{
	struct step_fail f = { step, item, errno };

	if (write(fd, &f, sizeof(f)) < 0)
		_exit(2);
	_exit(1);
}

/*
 * In a child (single-threaded, for setns): only system calls. @targets:
 * the root's, then each external mount's, prepared by the parent.
 */
static void child(pid_t keeper, const struct mntns_keep *k, char (*targets)[PATH_MAX], int fd)
{
	int trees[MNTNS_EXT_MAX + 1];
	char nspath[64];
	int keep, self;

	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/mnt", (int)keeper);
	keep = open(nspath, O_RDONLY | O_CLOEXEC);
	if (keep < 0)
		child_fail(fd, 0, -1);
	self = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		child_fail(fd, 1, -1);
	if (setns(keep, CLONE_NEWNS))
		child_fail(fd, 2, -1);
	for (size_t i = 0; i <= k->n; i++) {
		trees[i] = (int)syscall(SYS_open_tree, AT_FDCWD, i ? k->mp[i - 1] : "/",
					OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (trees[i] < 0)
			child_fail(fd, 3, (int)i - 1);
	}
	if (setns(self, CLONE_NEWNS))
		child_fail(fd, 4, -1);
	for (size_t i = 0; i <= k->n; i++) {
		struct stat st;
		int r;

		if (fstat(trees[i], &st))
			child_fail(fd, 3, (int)i - 1);
		if (S_ISDIR(st.st_mode))
			r = mkdir(targets[i], 0700);
		else
			r = mknodat(AT_FDCWD, targets[i], S_IFREG | 0600, 0);
		if (r && errno != EEXIST)
			child_fail(fd, 5, (int)i - 1);
		if (syscall(SYS_move_mount, trees[i], "", AT_FDCWD, targets[i],
			    MOVE_MOUNT_F_EMPTY_PATH))
			child_fail(fd, 6, (int)i - 1);
	}
	_exit(0);
}

int mntns_stage(const char *dir, bool *staged, struct ml_err *err)
{
	static char targets[MNTNS_EXT_MAX + 1][PATH_MAX];
	char path[PATH_MAX + 32], text[16384];
	struct mntns_keep k;
	struct step_fail f = { 0 };
	int p[2], st, r;
	pid_t pid;

	*staged = false;
	snprintf(path, sizeof(path), "%.4000s/" MNTNS_FILE, dir);
	r = agent_read_small(path, text, sizeof(text));
	if (r == -ENOENT)
		return 0;
	if (r)
		return ml_err_set(err, -r, "cannot read %s: %s", path, strerror(-r));
	r = mntns_parse(text, &k, err);
	if (r)
		return r;
	if (ns_ino(k.keeper) != k.ino)
		return ml_err_set(err, ESRCH,
				  "the application's mount namespace (mnt:[%llu]) is gone: its "
				  "keeper, pid %d, has exited; the restore rebuilds that namespace "
				  "from the application's container, which must still run (restore "
				  "before the container stops)",
				  k.ino, (int)k.keeper);
	mntns_unstage(dir);
	snprintf(path, sizeof(path), "%.4000s/" MNTNS_STAGE, dir);
	if (mkdir(path, 0700) && errno != EEXIST)
		return ml_err_set(err, errno, "cannot make %s: %s", path, strerror(errno));
	snprintf(targets[0], PATH_MAX, "%.4000s/root", path);
	for (size_t i = 0; i < k.n; i++)
		snprintf(targets[i + 1], PATH_MAX, "%.4000s/ext-%zu", path, i);
	if (pipe2(p, O_CLOEXEC))
		return ml_err_set(err, errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		r = errno;
		close(p[0]);
		close(p[1]);
		return ml_err_set(err, r, "fork: %s", strerror(r));
	}
	if (!pid) {
		close(p[0]);
		child(k.keeper, &k, targets, p[1]);
	}
	close(p[1]);
	r = (int)read(p[0], &f, sizeof(f));
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*staged = true;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	mntns_unstage(dir);
	*staged = false;
	if (r != (int)sizeof(f) || f.step < 0 || f.step >= (int)(sizeof(steps) / sizeof(steps[0])))
		return ml_err_set(err, EIO,
				  "the child that clones the application's mounts failed");
	return ml_err_set(err, f.err,
			  "cannot rebuild the application's mount namespace from its keeper "
			  "(pid %d): %s for %s: %s",
			  (int)k.keeper, steps[f.step], f.item < 0 ? "its root" : k.mp[f.item],
			  strerror(f.err));
}

void mntns_unstage(const char *dir)
{
	char path[PATH_MAX + 64];
	struct dirent *d;
	DIR *dd;

	snprintf(path, sizeof(path), "%.4000s/" MNTNS_STAGE, dir);
	dd = opendir(path);
	while (dd && (d = readdir(dd))) {
		char sub[PATH_MAX + 400];

		if (d->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, d->d_name);
		while (!umount2(sub, MNT_DETACH | UMOUNT_NOFOLLOW))
			;
		if (rmdir(sub) && errno == ENOTDIR)
			unlink(sub);
	}
	if (dd)
		closedir(dd);
	rmdir(path);
}
