// SPDX-License-Identifier: MIT
/*
 * Find a container by what its runtime says (container_find.h): podman
 * inspect, then `runc state`, then `crun state`; a cgroup directory by its
 * member processes, its root filesystem then from the runtimes' lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container_find.h"
#include "memlens/json.h"

extern char **environ;

#define OUT_MAX (4 << 20)

/* Run @argv (found on PATH), its stdout into *@out (NUL-terminated, free it),
 * stderr discarded. 0 when it exited 0; -ENOENT when it is not there. */
static int run_capture(char *const argv[], char **out, size_t *len)
{
	posix_spawn_file_actions_t fa;
	int p[2], st, r;
	size_t n = 0, cap = 65536;
	char *buf = malloc(cap);
	pid_t pid;
	ssize_t k;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0) {
		free(buf);
		return -errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (r) {
		close(p[0]);
		free(buf);
		return -r;
	}
	while ((k = read(p[0], buf + n, cap - n - 1)) > 0 || (k < 0 && errno == EINTR)) {
		if (k < 0)
			continue;
		n += (size_t)k;
		if (n + 1 == cap && cap < OUT_MAX) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	/* posix_spawnp of a missing program: the child exits 127 */
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -ENOENT;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int read_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t n = 0, cap = 65536;
	char *buf;

	*out = NULL;
	if (!f)
		return -errno;
	buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n + 1 < cap || cap >= OUT_MAX)
			break;
		char *nb = realloc(buf, cap * 2);

		if (!nb)
			break;
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	if (!buf)
		return -ENOMEM;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* The bundle's config.json: the root filesystem when missing, the bind mounts. */
static void read_config(struct ml_container *c)
{
	struct ml_err e;
	char *s;
	size_t n;

	if (!c->config[0] || read_file(c->config, &s, &n))
		return;
	ml_container_parse_config(s, n, c, &e);
	free(s);
}

static int by_runtime(const char *rt, const char *root, const char *name, struct ml_container *c,
		      struct ml_err *err)
{
	char *argv[] = { (char *)rt, "--root", (char *)root, "state", (char *)name, NULL };
	char *s;
	size_t n;
	int r = run_capture(argv, &s, &n);

	if (!r)
		r = ml_container_parse_state(s, n, c, err);
	free(s);
	if (!r)
		snprintf(c->runtime, sizeof(c->runtime), "%s", rt);
	return r;
}

static int by_podman(const char *name, struct ml_container *c, struct ml_err *err)
{
	char *argv[] = { "podman", "container", "inspect", (char *)name, NULL };
	char *s;
	size_t n;
	int r = run_capture(argv, &s, &n);

	if (!r)
		r = ml_container_parse_podman(s, n, c, err);
	free(s);
	return r;
}

static pid_t ppid_of(pid_t pid, void *arg)
{
	char path[64], buf[512], *p;
	FILE *f;
	int pp = -1;

	(void)arg;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 2, "%*c %d", &pp) != 1)
		pp = -1;
	fclose(f);
	return pp;
}

/* The runtimes' lists (`runc list -f json`): the container whose init is @pid. */
static void rootfs_of(pid_t pid, struct ml_container *c)
{
	static const char *const rts[][2] = { { "runc", "/run/runc" }, { "crun", "/run/crun" } };

	for (size_t i = 0; i < sizeof(rts) / sizeof(rts[0]); i++) {
		char *argv[] = {
			(char *)rts[i][0], "--root", (char *)rts[i][1], "list", "-f", "json", NULL
		};
		struct ml_container x;
		struct ml_err e;
		char *s;
		size_t n;

		if (!run_capture(argv, &s, &n) && !ml_container_parse_list(s, n, pid, &x, &e)) {
			snprintf(c->id, sizeof(c->id), "%s", x.id);
			snprintf(c->rootfs, sizeof(c->rootfs), "%s", x.rootfs);
			snprintf(c->bundle, sizeof(c->bundle), "%s", x.bundle);
			snprintf(c->config, sizeof(c->config), "%s", x.config);
			snprintf(c->status, sizeof(c->status), "%s", x.status);
			free(s);
			return;
		}
		free(s);
	}
}

static int by_cgroup(const char *dir, struct ml_container *c, struct ml_err *err)
{
	char path[PATH_MAX + 16], *s;
	size_t n;
	int r;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%.4000s/cgroup.procs", dir);
	r = read_file(path, &s, &n);
	if (r)
		return ml_err_set(err, -r, "cannot read %s: %s", path, strerror(-r));
	r = ml_container_cgroup_init(s, ppid_of, NULL, &c->pid, err);
	free(s);
	if (r)
		return r;
	snprintf(c->runtime, sizeof(c->runtime), "cgroup");
	snprintf(c->id, sizeof(c->id), "%.127s", dir);
	rootfs_of(c->pid, c);
	return 0;
}

static bool is_cgroup_dir(const char *arg, char *dir, size_t len)
{
	char p[PATH_MAX + 32];
	struct stat st;

	if (arg[0] == '/')
		snprintf(dir, len, "%s", arg);
	else
		snprintf(dir, len, "/sys/fs/cgroup/%s", arg);
	snprintf(p, sizeof(p), "%.4000s/cgroup.procs", dir);
	return strchr(arg, '/') && stat(p, &st) == 0;
}

int container_find(const char *arg, struct ml_container *c, struct ml_err *err)
{
	struct ml_err e1 = { 0 };
	char dir[PATH_MAX];
	int r;

	memset(c, 0, sizeof(*c));
	if (is_cgroup_dir(arg, dir, sizeof(dir)))
		r = by_cgroup(dir, c, err);
	else if ((r = by_podman(arg, c, &e1)) == 0 || r == -ESRCH || (r == -EINVAL && e1.msg[0]))
		*err = e1;
	else if ((r = by_runtime("runc", "/run/runc", arg, c, err)) && r != -ESRCH &&
		 (r = by_runtime("crun", "/run/crun", arg, c, err)) && r != -ESRCH)
		r = ml_err_set(err, ENOENT,
			       "no container '%s': neither podman, runc (/run/runc) nor crun "
			       "(/run/crun) knows it, and it is no cgroup directory",
			       arg);
	if (r)
		return r;
	read_config(c);
	if (!c->rootfs[0])
		return ml_err_set(err, ENOENT,
				  "container %s (pid %d): its runtime does not say where its root "
				  "filesystem is, which the restore needs",
				  c->id, (int)c->pid);
	return 0;
}

static void add_dir(char (*dirs)[PATH_MAX], size_t max, size_t *n, const char *root,
		    const char *sub, const char *path)
{
	if (*n == max)
		return;
	snprintf(dirs[*n], PATH_MAX, "%s%s%.*s%s", root, sub[0] ? "/" : "", PATH_MAX / 2, sub,
		 path);
	if (access(dirs[*n], F_OK) == 0)
		(*n)++;
}

size_t container_cgroup_dirs(pid_t pid, const char *id, char (*dirs)[PATH_MAX], size_t max)
{
	char path[64], line[PATH_MAX];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* "ID:CONTROLLERS:PATH", "0::PATH" for cgroup v2 */
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *p = ctl ? strchr(ctl + 1, ':') : NULL;

		line[strcspn(line, "\n")] = '\0';
		/* the root cgroup and the parents are never removed */
		if (!p || p[1] != '/' || !p[2] || !id[0] || !strstr(p + 1, id))
			continue;
		*p = '\0';
		ctl++;
		if (!*ctl) {
			size_t k = n;

			add_dir(dirs, max, &n, "/sys/fs/cgroup", "", p + 1);
			if (n == k)
				add_dir(dirs, max, &n, "/sys/fs/cgroup/unified", "", p + 1);
		} else {
			/* a named hierarchy is mounted as its name (name=systemd: systemd) */
			add_dir(dirs, max, &n, "/sys/fs/cgroup",
				strncmp(ctl, "name=", 5) ? ctl : ctl + 5, p + 1);
		}
	}
	fclose(f);
	return n;
}

/*
 * @pid's number in its own PID namespace (the last of /proc/PID/status's
 * NSpid), when that namespace is not ours; 0 when it is ours or unknown.
 */
static long pid_in_other_ns(pid_t pid)
{
	char path[64], line[256];
	struct stat self, other;
	long last = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat("/proc/self/ns/pid", &self) || stat(path, &other) ||
	    (self.st_dev == other.st_dev && self.st_ino == other.st_ino))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
			last = v;
		break;
	}
	fclose(f);
	return last;
}

int container_migrate_find(const char *arg, struct container_migrate *m, struct ml_err *err)
{
	struct ml_container *c = &m->ctr;
	long nspid;
	int r;

	memset(m, 0, sizeof(*m));
	r = container_find(arg, c, err);
	if (r)
		return r;
	/*
	 * CRIU dumps a PID namespace only from its init: a container whose
	 * init is not pid 1 there shares the namespace with others (a pod's
	 * shareProcessNamespace, podman run --pid container:X), and CRIU
	 * would fail after freezing it ("Can't dump a pid namespace without
	 * the process init"). Refused before anything runs.
	 */
	nspid = pid_in_other_ns(c->pid);
	if (nspid > 1)
		return ml_err_set(
			err, ENOTSUP,
			"container %s (pid %d) shares its PID namespace with other "
			"containers (it is pid %ld there, a pod with shareProcessNamespace "
			"or --pid container:): CRIU dumps a PID namespace only from its "
			"first process, so this container cannot be checkpointed alone",
			c->name[0] ? c->name : c->id, (int)c->pid, nspid);
	snprintf(m->root_arg, sizeof(m->root_arg), "--root=%s", c->rootfs);
	m->restore[0] = m->root_arg;
	m->restore[1] = CONTAINER_DUMP_OPT;
	m->restore[2] = NULL;
	/*
	 * podman's clean-up of the exited container removes its cgroups while
	 * CRIU's restore recreates them ("Can't move into .../cgroup.procs"):
	 * the restore waits until they have gone (a runc container's stay
	 * until `runc delete`: no wait); only the cgroups of the container's
	 * own (its ID in the name) go away, in any order (every v1 hierarchy).
	 * A container found by its cgroup is podman's when the cgroup is named
	 * as podman names them (libpod-ID, libpod-ID.scope).
	 */
	if (!strncmp(c->runtime, "podman", 6) || !strcmp(c->runtime, "cgroup")) {
		char libpod[160];
		size_t n;

		snprintf(libpod, sizeof(libpod), "libpod-%s", c->id);
		n = container_cgroup_dirs(c->pid, strcmp(c->runtime, "cgroup") ? c->id : libpod,
					  m->settle, CONTAINER_CGROUPS_MAX);
		for (size_t i = 0; i < n; i++)
			m->settle_v[i] = m->settle[i];
	}
	return 0;
}
