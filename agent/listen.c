// SPDX-License-Identifier: MIT
/*
 * The unix socket: who may reach it, and who may take it over.
 *
 * gRPC unlinks whatever is at a unix socket path before it binds
 * (seen in gRPC 1.51), so nothing may be left to chance:
 * - the socket's directory (created 0750 when missing) must be owned by
 *   root or by the agent's user and writable by nobody else, and every
 *   directory above it owned by root or that user and either writable by
 *   nobody else or sticky: otherwise another user could rename the socket
 *   away and serve an impostor at its path, or plant the lock file;
 * - PATH.lock, held with flock() for the agent's life, keeps a second
 *   agent out. Whoever may delete that file (root or the same user) could
 *   let a second agent in, so before taking the path an agent also
 *   connects to an existing socket: if something answers, it is served
 *   and the new agent stops. Both steps and the bind run under an flock of
 *   the directory itself, so two agents starting at once cannot both find
 *   the path free;
 * - on exit the socket and the lock file are removed only while they are
 *   still this agent's (the same inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static bool trusted_owner(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

static int unsafe(struct ml_err *err, const char *sock, const char *dir, const char *why)
{
	return ml_err_set(err, EPERM,
			  "refusing to serve %s: %s %s, so another user could replace the "
			  "socket or its lock; use a directory owned by root (or this user) "
			  "that nobody else may write, such as /run/memlens",
			  sock, dir, why);
}

/* The socket's directory and every one above it (see the top of the file). */
static int check_dirs(const char *sock, const char *dir, struct ml_err *err)
{
	char real[PATH_MAX], part[PATH_MAX];
	struct stat st;
	size_t n;

	if (!realpath(dir, real))
		return ml_err_set(err, errno, "cannot resolve the socket directory %s: %s", dir,
				  strerror(errno));
	if (stat(real, &st))
		return ml_err_set(err, errno, "cannot stat %s: %s", real, strerror(errno));
	if (!trusted_owner(&st))
		return unsafe(err, sock, real, "is owned by another user");
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return unsafe(err, sock, real, "is writable by group or others");
	/* the directories above: /, /a, /a/b, ... */
	n = strlen(real);
	for (size_t i = 0; i < n; i++) {
		if (real[i] != '/')
			continue;
		memcpy(part, real, i ? i : 1);
		part[i ? i : 1] = '\0';
		if (stat(part, &st))
			return ml_err_set(err, errno, "cannot stat %s: %s", part, strerror(errno));
		if (!trusted_owner(&st))
			return unsafe(err, sock, part,
				      "(a directory above the socket) is owned by another user");
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return unsafe(err, sock, part,
				      "(a directory above the socket) is writable by group or "
				      "others and not sticky");
	}
	return 0;
}

static int ensure_dir(struct listener *l, struct ml_err *err)
{
	char tmp[512], *dir;
	struct stat st;

	snprintf(tmp, sizeof(tmp), "%s", l->sock);
	dir = dirname(tmp);
	if (stat(dir, &st)) {
		if (mkdir(dir, 0750) && errno != EEXIST)
			return ml_err_set(err, errno, "cannot create the socket directory %s: %s",
					  dir, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		return ml_err_set(err, ENOTDIR, "%s is not a directory", dir);
	}
	return check_dirs(l->sock, dir, err);
}

/* flock the directory (a few seconds at most): start-ups in it, one at a time. */
static int lock_dir(struct listener *l, struct ml_err *err)
{
	char tmp[512], *dir;

	snprintf(tmp, sizeof(tmp), "%s", l->sock);
	dir = dirname(tmp);
	l->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dir_fd < 0)
		return ml_err_set(err, errno, "cannot open the socket directory %s: %s", dir,
				  strerror(errno));
	for (int i = 0; i < 500; i++) {
		if (!flock(l->dir_fd, LOCK_EX | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK)
			break;
		nanosleep(&(struct timespec){ 0, 10000000L }, NULL);
	}
	return ml_err_set(err, EADDRINUSE,
			  "another memlens agent is starting in %s (it holds the directory's "
			  "lock): try again, or give another --socket",
			  dir);
}

static void unlock_dir(struct listener *l)
{
	if (l->dir_fd >= 0)
		close(l->dir_fd); /* releases the flock */
	l->dir_fd = -1;
}

static int held_by(struct listener *l, const char *path, struct ml_err *err)
{
	char pid[32] = "";
	struct stat st;

	/* the pid only from a lock file nobody else could have written */
	if (!fstat(l->lock_fd, &st) && trusted_owner(&st) && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		ssize_t n = pread(l->lock_fd, pid, sizeof(pid) - 1, 0);

		pid[n > 0 ? n : 0] = '\0';
		pid[strspn(pid, "0123456789")] = '\0';
	}
	close(l->lock_fd);
	l->lock_fd = -1;
	return ml_err_set(err, EADDRINUSE,
			  "another memlens agent (pid %s) is already serving %s (lock %s held): "
			  "stop it first or give another --socket",
			  *pid ? pid : "unknown", path, l->lock);
}

/* Does something accept connections on the unix socket @path? */
static bool answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool yes;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	yes = !connect(fd, (struct sockaddr *)&sa, sizeof(sa)) || errno == EAGAIN ||
	      errno == EINPROGRESS;
	close(fd);
	return yes;
}

int listen_lock(struct listener *l, const char *path, struct ml_err *err)
{
	char pid[32];
	struct stat st;
	int r;

	memset(l, 0, sizeof(*l));
	l->lock_fd = l->dir_fd = -1;
	if (strlen(path) >= sizeof(l->sock) || strlen(path) > 100)
		return ml_err_set(
			err, ENAMETOOLONG,
			"socket path %s is too long for a unix socket (at most 100 bytes)", path);
	snprintf(l->sock, sizeof(l->sock), "%s", path);
	snprintf(l->lock, sizeof(l->lock), "%s.lock", path);
	r = ensure_dir(l, err);
	if (!r)
		r = lock_dir(l, err);
	if (r)
		return r;
	l->lock_fd = open(l->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (l->lock_fd < 0)
		return ml_err_set(err, errno, "cannot open the lock file %s: %s", l->lock,
				  strerror(errno));
	if (fstat(l->lock_fd, &st) || !S_ISREG(st.st_mode))
		return ml_err_set(err, EEXIST, "%s is not a regular file: remove it", l->lock);
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB))
		return held_by(l, path, err);
	l->lock_ino = st.st_ino;
	l->lock_dev = st.st_dev;
	l->own_lock = true;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return ml_err_set(err, EEXIST,
					  "%s exists and is not a socket: refusing to replace it; "
					  "remove it or give another --socket",
					  path);
		if (answers(path))
			return ml_err_set(err, EADDRINUSE,
					  "another memlens agent is already serving %s (it answers "
					  "on the socket, though its lock %s is gone): stop it "
					  "first or give another --socket",
					  path, l->lock);
		unlink(path); /* stale: its agent is gone, we hold the lock */
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(l->lock_fd, 0) || pwrite(l->lock_fd, pid, strlen(pid), 0) < 0)
		return ml_err_set(err, errno, "cannot write the lock file %s: %s", l->lock,
				  strerror(errno));
	l->have_sock = true;
	return 0;
}

void listen_bound(struct listener *l)
{
	struct stat st;

	if (l->have_sock && !lstat(l->sock, &st) && S_ISSOCK(st.st_mode)) {
		l->sock_ino = st.st_ino;
		l->sock_dev = st.st_dev;
		l->own_sock = true;
	}
	unlock_dir(l);
}

/* Is @path still the file (dev, ino)? */
static bool same_file(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;

	return !lstat(path, &st) && st.st_dev == dev && st.st_ino == ino;
}

void listen_release(struct listener *l)
{
	if (l->own_sock && same_file(l->sock, l->sock_dev, l->sock_ino))
		unlink(l->sock);
	else if (l->have_sock && !l->own_sock && l->dir_fd >= 0)
		unlink(l->sock); /* bound, or half-bound, under our directory lock: ours */
	if (l->own_lock && same_file(l->lock, l->lock_dev, l->lock_ino))
		unlink(l->lock);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	l->lock_fd = -1;
	l->own_sock = l->own_lock = l->have_sock = false;
	unlock_dir(l);
}
