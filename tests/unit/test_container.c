// SPDX-License-Identifier: MIT
/*
 * A container's init, root filesystem and bind mounts as memlens reads them
 * from its runtime: real answers of podman 4.3.1 and runc 1.1.5 about one
 * container (tests/data/container/README), and what must be refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memlens/container.h"

#define DATA "tests/data/container/"
#define ID "b3411201573f4a9e5984455c3fcd069ac313f1fcbb000a00a2d186998665499a"
#define BUNDLE "/var/lib/containers/storage/overlay-containers/" ID "/userdata"

static char *slurp(const char *name, size_t *len)
{
	char path[256];
	FILE *f;
	char *buf;

	snprintf(path, sizeof(path), DATA "%s", name);
	f = fopen(path, "re");
	REQUIRE_MSG(f, "cannot open %s", path);
	buf = calloc(1, 1 << 16);
	REQUIRE(buf);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	T_DEFER(free, buf);
	return buf;
}

static struct ml_container c;

static void test_podman_inspect(void)
{
	struct ml_err e = { 0 };
	size_t n;
	char *s = slurp("podman-inspect.json", &n);

	CHECK_EQ(ml_container_parse_podman(s, n, &c, &e), 0);
	CHECK_EQ(c.pid, 8811);
	CHECK_STR(c.id, ID);
	CHECK_STR(c.name, "ctrtest");
	CHECK_STR(c.runtime, "podman/runc");
	CHECK_STR(c.status, "running");
	CHECK_STR(c.rootfs, "/tmp/ctr-root");
	CHECK_STR(c.config, BUNDLE "/config.json");
	CHECK_STR(c.bundle, BUNDLE);
}

/* podman run --runtime PATH: OCIRuntime is the path, the runtime its name */
static void test_podman_runtime_path(void)
{
	struct ml_err e = { 0 };
	size_t n;
	char *s = slurp("podman-inspect.json", &n), *p = strstr(s, "\"OCIRuntime\": \"runc\"");
	char *t = calloc(1, n + 64);

	REQUIRE(p && t);
	T_DEFER(free, t);
	snprintf(t, n + 64, "%.*s\"OCIRuntime\": \"/usr/local/libexec/crun\"%s", (int)(p - s), s,
		 p + strlen("\"OCIRuntime\": \"runc\""));
	CHECK_EQ(ml_container_parse_podman(t, strlen(t), &c, &e), 0);
	CHECK_STR(c.runtime, "podman/crun");
	CHECK_EQ(c.pid, 8811);
}

static void test_runc_state(void)
{
	struct ml_err e = { 0 };
	size_t n;
	char *s = slurp("runc-state.json", &n);

	CHECK_EQ(ml_container_parse_state(s, n, &c, &e), 0);
	CHECK_EQ(c.pid, 8811);
	CHECK_STR(c.id, ID);
	CHECK_STR(c.status, "running");
	CHECK_STR(c.rootfs, "/tmp/ctr-root");
	CHECK_STR(c.bundle, BUNDLE);
	CHECK_STR(c.config, BUNDLE "/config.json");
}

static void test_runc_list(void)
{
	struct ml_err e = { 0 };
	size_t n;
	char *s = slurp("runc-list.json", &n);

	CHECK_EQ(ml_container_parse_list(s, n, 8811, &c, &e), 0);
	CHECK_STR(c.id, ID);
	CHECK_STR(c.rootfs, "/tmp/ctr-root");
	CHECK_EQ(c.pid, 8811);
	CHECK_EQ(ml_container_parse_list(s, n, 8812, &c, &e), -ESRCH);
	CHECK(strstr(e.msg, "8812") != NULL);
	/* runc prints null when it has no container */
	CHECK_EQ(ml_container_parse_list("null", 4, 1, &c, &e), -ESRCH);
	CHECK_EQ(ml_container_parse_list("{}", 2, 1, &c, &e), -EINVAL);
}

static void test_config(void)
{
	static const char *const dest[] = {
		"/usr", "/etc", "/etc/hosts", "/dev/shm", "/run/.containerenv", "/etc/hostname"
	};
	struct ml_err e = { 0 };
	size_t n;
	char *s = slurp("config.json", &n);

	memset(&c, 0, sizeof(c));
	CHECK_EQ(ml_container_parse_config(s, n, &c, &e), 0);
	CHECK_STR(c.rootfs, "/tmp/ctr-root");
	REQUIRE(c.nmounts == 6);
	for (size_t i = 0; i < 6; i++)
		CHECK_STR(c.mounts[i].dest, dest[i]);
	CHECK_STR(c.mounts[0].src, "/usr");
	CHECK_STR(c.mounts[3].src, BUNDLE "/shm");
	/* a root relative to the bundle; a rootfs already known stays */
	memset(&c, 0, sizeof(c));
	snprintf(c.bundle, sizeof(c.bundle), "/b");
	CHECK_EQ(ml_container_parse_config("{\"root\":{\"path\":\"rootfs\"}}", 26, &c, &e), 0);
	CHECK_STR(c.rootfs, "/b/rootfs");
	CHECK_EQ(c.nmounts, 0);
	CHECK_EQ(ml_container_parse_config("{\"root\":{\"path\":\"/x\"}}", 22, &c, &e), 0);
	CHECK_STR(c.rootfs, "/b/rootfs");
	CHECK_EQ(ml_container_parse_config("[1]", 3, &c, &e), -EINVAL);
}

static void test_refusals(void)
{
	static const char stopped[] = "{\"id\":\"a\",\"pid\":0,\"status\":\"stopped\"}";
	static const char podman_stopped[] =
		"[{\"Id\":\"a\",\"State\":{\"Status\":\"exited\",\"Pid\":0}}]";
	struct ml_err e = { 0 };

	CHECK_EQ(ml_container_parse_state(stopped, strlen(stopped), &c, &e), -ESRCH);
	CHECK(strstr(e.msg, "not running") && strstr(e.msg, "stopped"));
	CHECK_EQ(ml_container_parse_podman(podman_stopped, strlen(podman_stopped), &c, &e), -ESRCH);
	CHECK(strstr(e.msg, "exited") != NULL);
	CHECK_EQ(ml_container_parse_state("not json", 8, &c, &e), -EINVAL);
	CHECK_EQ(ml_container_parse_state("{\"pid\":5}", 9, &c, &e), -EINVAL);
	CHECK_EQ(ml_container_parse_state("{\"id\":\"a\",\"pid\":-1}", 19, &c, &e), -EINVAL);
	CHECK_EQ(ml_container_parse_podman("[]", 2, &c, &e), -EINVAL);
	CHECK_EQ(ml_container_parse_podman("[{\"Id\":\"a\"}]", 12, &c, &e), -EINVAL);
}

/* a made-up process table: 10 -> 11 -> 12, 10 -> 13; 20 alone; 1 is outside */
static pid_t ppid(pid_t p, void *arg)
{
	(void)arg;
	switch (p) {
	case 10:
		return 1;
	case 11:
	case 13:
		return 10;
	case 12:
		return 11;
	case 20:
		return 1;
	default:
		return -1; /* gone */
	}
}

static void test_cgroup_init(void)
{
	struct ml_err e = { 0 };
	pid_t init = 0;

	CHECK_EQ(ml_container_cgroup_init("12\n11\n10\n13\n", ppid, NULL, &init, &e), 0);
	CHECK_EQ(init, 10);
	/* a process gone meanwhile is no root */
	CHECK_EQ(ml_container_cgroup_init("11\n10\n99\n", ppid, NULL, &init, &e), 0);
	CHECK_EQ(init, 10);
	CHECK_EQ(ml_container_cgroup_init("10\n11\n20\n", ppid, NULL, &init, &e), -EINVAL);
	CHECK(strstr(e.msg, "2 trees") != NULL);
	CHECK_EQ(init, 0);
	CHECK_EQ(ml_container_cgroup_init("", ppid, NULL, &init, &e), -ESRCH);
	CHECK_EQ(ml_container_cgroup_init("10\nabc\n", ppid, NULL, &init, &e), -EINVAL);
}

int main(void)
{
	RUN(test_podman_inspect);
	RUN(test_podman_runtime_path);
	RUN(test_runc_state);
	RUN(test_runc_list);
	RUN(test_config);
	RUN(test_refusals);
	RUN(test_cgroup_init);
	return T_DONE();
}
