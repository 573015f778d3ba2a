// SPDX-License-Identifier: MIT
/*
 * The unix socket's lock file. gRPC unlinks whatever is at a unix socket
 * path before it binds (DESIGN.md), so a second agent would silently take
 * the first one's socket: PATH.lock, held with flock() for the agent's
 * life, makes the second one fail instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

static int ensure_dir(const char *sock, struct ml_err *err)
{
	char tmp[512], *dir;
	struct stat st;

	snprintf(tmp, sizeof(tmp), "%s", sock);
	dir = dirname(tmp);
	if (!stat(dir, &st))
		return S_ISDIR(st.st_mode) ? 0
					   : ml_err_set(err, ENOTDIR, "%s is not a directory", dir);
	if (mkdir(dir, 0750) && errno != EEXIST)
		return ml_err_set(err, errno, "cannot create the socket directory %s: %s", dir,
				  strerror(errno));
	return 0;
}

static int held_by(struct listener *l, const char *path, struct ml_err *err)
{
	char pid[32] = "";
	ssize_t n = pread(l->lock_fd, pid, sizeof(pid) - 1, 0);

	if (n > 0)
		pid[n] = '\0';
	pid[strcspn(pid, "\n")] = '\0';
	close(l->lock_fd);
	l->lock_fd = -1;
	return ml_err_set(err, EADDRINUSE,
			  "another memlens agent (pid %s) is already serving %s (lock %s held): "
			  "stop it first or give another --socket",
			  *pid ? pid : "unknown", path, l->lock);
}

int listen_lock(struct listener *l, const char *path, struct ml_err *err)
{
	char pid[32];
	struct stat st;
	int r;

	memset(l, 0, sizeof(*l));
	l->lock_fd = -1;
	if (strlen(path) >= sizeof(l->sock) || strlen(path) > 100)
		return ml_err_set(
			err, ENAMETOOLONG,
			"socket path %s is too long for a unix socket (at most 100 bytes)", path);
	snprintf(l->sock, sizeof(l->sock), "%s", path);
	snprintf(l->lock, sizeof(l->lock), "%s.lock", path);
	r = ensure_dir(path, err);
	if (r)
		return r;
	l->lock_fd = open(l->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (l->lock_fd < 0)
		return ml_err_set(err, errno, "cannot open the lock file %s: %s", l->lock,
				  strerror(errno));
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB))
		return held_by(l, path, err);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(l->lock_fd, 0) || pwrite(l->lock_fd, pid, strlen(pid), 0) < 0)
		return ml_err_set(err, errno, "cannot write the lock file %s: %s", l->lock,
				  strerror(errno));
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return ml_err_set(err, EEXIST,
					  "%s exists and is not a socket: refusing to replace it; "
					  "remove it or give another --socket",
					  path);
		unlink(path); /* stale: its agent is gone, we hold the lock */
	}
	l->have_sock = true;
	return 0;
}

void listen_release(struct listener *l)
{
	if (l->lock_fd < 0)
		return;
	if (l->have_sock)
		unlink(l->sock);
	unlink(l->lock);
	close(l->lock_fd);
	l->lock_fd = -1;
}
