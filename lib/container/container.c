// SPDX-License-Identifier: MIT
/*
 * A container's init process, root filesystem and bind mounts, from what
 * its runtime says (see memlens/container.h): pure parsing, so that each
 * runtime's format is tested on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/container.h"
#include "memlens/json.h"

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static int parse(const char *json, size_t len, const char *what, struct ml_json **j,
		 struct ml_err *err)
{
	int r = ml_json_parse(json, len, j, err);

	if (r)
		return ml_err_set(err, -r, "%s is not JSON: %s", what, err->msg);
	return 0;
}

static int take_pid(const struct ml_json *obj, const char *key, struct ml_container *c,
		    struct ml_err *err)
{
	int64_t pid = 0;

	if (ml_json_get_int(obj, key, &pid) || pid < 0 || pid > 0x7fffffff)
		return ml_err_set(err, EINVAL, "no process id (%s) in the runtime's answer", key);
	c->pid = (pid_t)pid;
	if (!pid)
		return ml_err_set(err, ESRCH, "container %s is not running (status '%s')", c->id,
				  c->status[0] ? c->status : "unknown");
	return 0;
}

static void fill_state(const struct ml_json *j, struct ml_container *c)
{
	copy(c->id, sizeof(c->id), ml_json_get_str(j, "id"));
	copy(c->status, sizeof(c->status), ml_json_get_str(j, "status"));
	copy(c->bundle, sizeof(c->bundle), ml_json_get_str(j, "bundle"));
	copy(c->rootfs, sizeof(c->rootfs), ml_json_get_str(j, "rootfs"));
	if (c->bundle[0])
		snprintf(c->config, sizeof(c->config), "%.4000s/config.json", c->bundle);
}

int ml_container_parse_list(const char *json, size_t len, pid_t pid, struct ml_container *c,
			    struct ml_err *err)
{
	struct ml_json *j;
	int r;

	memset(c, 0, sizeof(*c));
	r = parse(json, len, "the runtime's list", &j, err);
	if (r)
		return r;
	if (ml_json_type(j) != ML_JSON_ARRAY && ml_json_type(j) != ML_JSON_NULL) {
		ml_json_free(j);
		return ml_err_set(err, EINVAL, "the runtime's list is not an array");
	}
	r = ml_err_set(err, ESRCH, "no container of the runtime's list has pid %d", (int)pid);
	for (size_t i = 0; ml_json_type(j) == ML_JSON_ARRAY && i < ml_json_count(j); i++) {
		const struct ml_json *o = ml_json_at(j, i);
		int64_t p = 0;

		if (ml_json_type(o) != ML_JSON_OBJECT || ml_json_get_int(o, "pid", &p) ||
		    p != pid || !ml_json_get_str(o, "id"))
			continue;
		fill_state(o, c);
		c->pid = pid;
		err->code = 0;
		err->msg[0] = '\0';
		r = 0;
		break;
	}
	ml_json_free(j);
	return r;
}

int ml_container_parse_state(const char *json, size_t len, struct ml_container *c,
			     struct ml_err *err)
{
	struct ml_json *j;
	int r;

	memset(c, 0, sizeof(*c));
	r = parse(json, len, "the runtime's state", &j, err);
	if (r)
		return r;
	if (ml_json_type(j) != ML_JSON_OBJECT || !ml_json_get_str(j, "id")) {
		ml_json_free(j);
		return ml_err_set(err, EINVAL, "the runtime's state is not an object with an id");
	}
	fill_state(j, c);
	r = take_pid(j, "pid", c, err);
	ml_json_free(j);
	return r;
}

int ml_container_parse_podman(const char *json, size_t len, struct ml_container *c,
			      struct ml_err *err)
{
	const struct ml_json *o, *st;
	struct ml_json *j;
	const char *cfg, *rt;
	char *slash;
	int r;

	memset(c, 0, sizeof(*c));
	r = parse(json, len, "podman inspect's answer", &j, err);
	if (r)
		return r;
	o = ml_json_type(j) == ML_JSON_ARRAY && ml_json_count(j) == 1 ? ml_json_at(j, 0) : j;
	st = o ? ml_json_get(o, "State") : NULL;
	if (!o || ml_json_type(o) != ML_JSON_OBJECT || !ml_json_get_str(o, "Id") || !st) {
		ml_json_free(j);
		return ml_err_set(err, EINVAL,
				  "podman inspect's answer is not one container (Id, State)");
	}
	copy(c->id, sizeof(c->id), ml_json_get_str(o, "Id"));
	copy(c->name, sizeof(c->name), ml_json_get_str(o, "Name"));
	/* a name from containers.conf ("runc"), or the path given to podman
	 * --runtime (a wrapper named after its runtime): its last component */
	rt = ml_json_get_str(o, "OCIRuntime");
	if (rt && strrchr(rt, '/'))
		rt = strrchr(rt, '/') + 1;
	snprintf(c->runtime, sizeof(c->runtime), "podman/%.20s", rt && *rt ? rt : "unknown");
	copy(c->status, sizeof(c->status), ml_json_get_str(st, "Status"));
	copy(c->rootfs, sizeof(c->rootfs), ml_json_get_str(o, "Rootfs"));
	cfg = ml_json_get_str(o, "OCIConfigPath");
	if (cfg && *cfg) {
		copy(c->config, sizeof(c->config), cfg);
		copy(c->bundle, sizeof(c->bundle), cfg);
		slash = strrchr(c->bundle, '/');
		if (slash)
			*slash = '\0';
	}
	r = take_pid(st, "Pid", c, err);
	ml_json_free(j);
	return r;
}

static bool is_bind(const struct ml_json *m)
{
	const struct ml_json *opts = ml_json_get(m, "options");
	const char *type = ml_json_get_str(m, "type");

	if (type && !strcmp(type, "bind"))
		return true;
	for (size_t i = 0; opts && i < ml_json_count(opts); i++) {
		const char *o = ml_json_as_str(ml_json_at(opts, i));

		if (o && (!strcmp(o, "bind") || !strcmp(o, "rbind")))
			return true;
	}
	return false;
}

int ml_container_parse_config(const char *json, size_t len, struct ml_container *c,
			      struct ml_err *err)
{
	const struct ml_json *root, *mounts;
	struct ml_json *j;
	int r;

	r = parse(json, len, "the OCI configuration", &j, err);
	if (r)
		return r;
	if (ml_json_type(j) != ML_JSON_OBJECT) {
		ml_json_free(j);
		return ml_err_set(err, EINVAL, "the OCI configuration is not an object");
	}
	root = ml_json_get(j, "root");
	if (!c->rootfs[0] && root && ml_json_get_str(root, "path")) {
		const char *p = ml_json_get_str(root, "path");

		if (p[0] == '/' || !c->bundle[0])
			copy(c->rootfs, sizeof(c->rootfs), p);
		else
			snprintf(c->rootfs, sizeof(c->rootfs), "%.2000s/%.2000s", c->bundle, p);
	}
	mounts = ml_json_get(j, "mounts");
	c->nmounts = 0;
	for (size_t i = 0; mounts && i < ml_json_count(mounts); i++) {
		const struct ml_json *m = ml_json_at(mounts, i);
		const char *d = ml_json_get_str(m, "destination"),
			   *s = ml_json_get_str(m, "source");

		if (!d || !s || !is_bind(m))
			continue;
		if (c->nmounts == ML_CONTAINER_MOUNTS_MAX) {
			ml_json_free(j);
			return ml_err_set(err, E2BIG, "more than %d bind mounts in %s",
					  ML_CONTAINER_MOUNTS_MAX,
					  c->config[0] ? c->config : "the OCI configuration");
		}
		copy(c->mounts[c->nmounts].dest, sizeof(c->mounts[0].dest), d);
		copy(c->mounts[c->nmounts].src, sizeof(c->mounts[0].src), s);
		c->nmounts++;
	}
	ml_json_free(j);
	return 0;
}

static bool in_list(const pid_t *v, size_t n, pid_t p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == p)
			return true;
	return false;
}

int ml_container_cgroup_init(const char *procs, pid_t (*ppid_of)(pid_t, void *), void *arg,
			     pid_t *init, struct ml_err *err)
{
	size_t n = 0, cap = 0, roots = 0;
	pid_t *v = NULL, *nv;
	const char *s = procs;
	char *end;
	int r = 0;

	*init = 0;
	while (*s) {
		long p = strtol(s, &end, 10);

		if (end == s || p <= 0 || p > 0x7fffffff || (*end && *end != '\n')) {
			free(v);
			return ml_err_set(err, EINVAL, "cgroup.procs has a line that is not a pid");
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return ml_err_set(err, ENOMEM, "out of memory");
			}
			v = nv;
		}
		v[n++] = (pid_t)p;
		s = *end ? end + 1 : end;
	}
	for (size_t i = 0; i < n; i++) {
		pid_t pp = ppid_of(v[i], arg);

		if (pp >= 0 && !in_list(v, n, pp)) {
			roots++;
			if (!*init)
				*init = v[i];
		}
	}
	if (!n)
		r = ml_err_set(err, ESRCH, "the cgroup has no process");
	else if (roots != 1)
		r = ml_err_set(err, EINVAL,
			       "the cgroup's %zu processes are %zu trees, not one container "
			       "(its init and what it started)",
			       n, roots);
	if (r)
		*init = 0;
	free(v);
	return r;
}
