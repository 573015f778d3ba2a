// SPDX-License-Identifier: MIT
/*
 * A pre-dump chain's CRIU command lines, end to end through ml_criu_probe()
 * and ml_criu_dump(), against a stand-in CRIU (a shell script that logs its
 * arguments and answers like the real one): the options detected by
 * acceptance, --no-parent-range from the parent's record whatever the
 * reason, --track-mem on the final dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "memlens/criu.h"

static char dir[64], criu[128], logf[128];
static pid_t target;

/*
 * A CRIU that accepts --exclude-range and --no-parent-range but not
 * --exclude-file=.. (the probe's spelling; the two-word form is let through
 * for the argument tests that say the option is there).
 */
static const char script[] =
	"#!/bin/sh\n"
	"printf '%%s\\n' \"$*\" >>%s\n"
	"for a in \"$@\"; do case $a in --exclude-file=*) "
	"echo \"criu: unrecognized option '$a'\" >&2; exit 1;; esac; done\n"
	"case \" $* \" in *' --version '*) echo 'Version: 4.0'; exit 0;; esac\n"
	"case \"$*\" in check) echo 'Looks good.'; exit 0;; esac\n"
	"exit 0\n";

static void setup(void)
{
	FILE *f;

	strcpy(dir, "/tmp/memlens-test-chain-XXXXXX");
	REQUIRE(mkdtemp(dir));
	snprintf(criu, sizeof(criu), "%s/criu", dir);
	snprintf(logf, sizeof(logf), "%s/args.log", dir);
	f = fopen(criu, "w");
	REQUIRE(f);
	fprintf(f, script, logf);
	fclose(f);
	chmod(criu, 0755);
	target = fork();
	REQUIRE(target >= 0);
	if (!target) {
		setsid();
		pause();
		_exit(0);
	}
	T_CHILD(target);
}

static void teardown(void)
{
	char cmd[128];

	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", dir);
}

/* Lines in the log, and the last one into @last. */
static int log_lines(char *last, size_t len)
{
	char line[8192];
	int n = 0;
	FILE *f = fopen(logf, "r");

	last[0] = '\0';
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		snprintf(last, len, "%s", line);
	}
	fclose(f);
	return n;
}

static void test_probe_by_acceptance(void)
{
	struct ml_err err = { 0 };
	ML_RESULT(ml_criu_caps, caps);
	char last[8192];

	REQUIRE(!ml_criu_probe(criu, &caps, &err));
	CHECK(caps.exclude_range);
	CHECK(!caps.exclude_file);
	CHECK(caps.no_parent_range);
	CHECK(caps.works);
	CHECK(caps.mem_dirty_track);
	CHECK_STR(caps.version, "4.0");
	/*
	 * refused --exclude-file, the version without it, --help (no
	 * "[PID:]START:END" there: VMA granularity), check, the soft-dirty check
	 */
	CHECK(!caps.page_granular);
	CHECK_STR(ml_criu_granularity(&caps), "vma");
	CHECK_EQ(log_lines(last, sizeof(last)), 5);
	CHECK_STR(last, "check --feature mem_dirty_track\n");
	CHECK(ml_criu_can_exclude(&caps));
	unlink(logf);
}

/*
 * A CRIU whose `check` fails as it does where /proc/sys is read-only (its
 * ns_last_pid check; the veth error is kerndat's, not a check's), and, when
 * DIR/other exists, a second check too; `check --feature clone3_set_tid`
 * passes when DIR/set_tid exists.
 */
static const char ro_script[] =
	"#!/bin/sh\n"
	"case \" $* \" in *' --version '*) echo 'Version: 4.1.1'; exit 0;; esac\n"
	"case \"$*\" in\n"
	"check) echo 'Error (criu/net.c:3997): net: Unable to create a veth pair: -1' >&2\n"
	"  echo 'Error (criu/cr-check.c:160): sys/kernel/ns_last_pid sysctl is inaccessible: "
	"Read-only file system' >&2\n"
	"  [ -e %s/other ] && echo 'Error (criu/cr-check.c:99): Kernel does not support "
	"PTRACE_O_SUSPEND_SECCOMP' >&2\n"
	"  echo 'Warn  (criu/cr-check.c:1648): Does not look good.' >&2; exit 1;;\n"
	"'check --feature clone3_set_tid') [ -e %s/set_tid ] && exit 0; exit 1;;\n"
	"esac\n"
	"exit 0\n";

static void probe_ro(const char *path, struct ml_criu_caps *caps)
{
	struct ml_err err = { 0 };

	REQUIRE(!ml_criu_probe(path, caps, &err));
}

static void touch(const char *name, bool on)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (on)
		close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	else
		unlink(p);
}

/* `criu check` failing on ns_last_pid alone does not matter with set_tid */
static void test_probe_ns_last_pid(void)
{
	ML_RESULT(ml_criu_caps, caps);
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/criu-ro", dir);
	f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, ro_script, dir, dir);
	fclose(f);
	chmod(path, 0755);

	touch("set_tid", true);
	probe_ro(path, &caps);
	CHECK(caps.works);
	CHECK_STR(caps.check_msg, "");
	CHECK(caps.mem_dirty_track);

	/* a kernel without clone3's set_tid: CRIU needs ns_last_pid */
	touch("set_tid", false);
	probe_ro(path, &caps);
	CHECK(!caps.works);
	CHECK(strstr(caps.check_msg, "ns_last_pid") != NULL);

	/* another check failed as well: CRIU does not work */
	touch("set_tid", true);
	touch("other", true);
	probe_ro(path, &caps);
	CHECK(!caps.works);
	CHECK(strstr(caps.check_msg, "SUSPEND_SECCOMP") != NULL);
	touch("other", false);
	touch("set_tid", false);
	unlink(path);
}

static struct ml_criu_caps fake_caps(void)
{
	struct ml_criu_caps c = { .works = true, .mem_dirty_track = true };

	snprintf(c.path, sizeof(c.path), "%s", criu);
	c.exclude_range = c.exclude_file = c.no_parent_range = true;
	return c;
}

/* ml_criu_dump() into @name (parent @parent or NULL); the command line into @cmd. */
static int dump(const struct ml_criu_caps *caps, const char *name, const char *parent, bool pre,
		const struct ml_rangeset *excl, bool no_exclude, struct ml_criu_result *res,
		char *cmd, size_t len)
{
	char d[128], p[128];
	struct ml_err err = { 0 };
	struct ml_criu_dump_req r = {
		.pid = target,
		.images_dir = d,
		.parent_dir = parent ? p : NULL,
		.pre_dump = pre,
		.exclude = excl,
		.no_exclude = no_exclude,
	};
	int ret;

	snprintf(d, sizeof(d), "%s/%s", dir, name);
	snprintf(p, sizeof(p), "%s/%s", dir, parent ? parent : "");
	ret = ml_criu_dump(caps, &r, NULL, res, &err);
	if (ret)
		fprintf(stderr, "# criu_dump %s: %s\n", name, err.msg);
	log_lines(cmd, len);
	return ret;
}

#define A 0x7f0000000000ULL
#define B 0x7f0010000000ULL
#define C 0x7f0020000000ULL
#define MB (1ULL << 20)

static void test_chain(void)
{
	static struct ml_criu_result res;
	struct ml_criu_caps caps = fake_caps();
	struct ml_rangeset ex, rec;
	char cmd[8192], path[160];
	struct ml_err err = { 0 };
	int found;

	ml_rangeset_init(&ex);
	ml_rangeset_init(&rec);
	/* round 1: A and B hot */
	ml_rangeset_add(&ex, A, A + 32 * MB);
	ml_rangeset_add(&ex, B, B + 64 * MB);
	REQUIRE(!dump(&caps, "d1", NULL, true, &ex, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, "pre-dump ") != NULL);
	CHECK(strstr(cmd, " --track-mem") != NULL);
	CHECK(strstr(cmd, "--prev-images-dir") == NULL);
	CHECK(strstr(cmd, "--exclude-range 7f0000000000:7f0002000000 --exclude-range "
			  "7f0010000000:7f0014000000") != NULL);
	CHECK(strstr(cmd, "--no-parent-range") == NULL);
	snprintf(path, sizeof(path), "%s/d1", dir);
	REQUIRE(!ml_criu_record_read(path, &rec, &found, &err));
	CHECK_EQ(found, 1);
	CHECK_EQ(rec.n, 2);
	/* round 2: A turned cold, C cold -> hot */
	ml_rangeset_clear(&ex);
	ml_rangeset_add(&ex, B, B + 64 * MB);
	ml_rangeset_add(&ex, C, C + 16 * MB);
	REQUIRE(!dump(&caps, "d2", "d1", true, &ex, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, " --prev-images-dir=../d1 --track-mem") != NULL);
	CHECK(strstr(cmd, "--exclude-range 7f0010000000:7f0014000000 --exclude-range "
			  "7f0020000000:7f0021000000") != NULL);
	CHECK(strstr(cmd, "--no-parent-range 7f0000000000:7f0002000000") != NULL);
	CHECK_EQ(res.exclude.nno_parent, 1);
	/* round 3: exclusion off: everything d2 left out goes without the parent */
	REQUIRE(!dump(&caps, "d3", "d2", true, &ex, true, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, "--exclude-range") == NULL);
	CHECK(strstr(cmd, "--no-parent-range 7f0010000000:7f0014000000 --no-parent-range "
			  "7f0020000000:7f0021000000") != NULL);
	CHECK(strstr(res.exclude.note, "exclusion off") != NULL);
	snprintf(path, sizeof(path), "%s/d3", dir);
	REQUIRE(!ml_criu_record_read(path, &rec, &found, &err));
	CHECK_EQ(rec.n, 0);
	/* the final dump after d3: incremental, nothing to mark */
	REQUIRE(!dump(&caps, "f3", "d3", false, &ex, false, &res, cmd, sizeof(cmd)));
	CHECK(!strncmp(cmd, "dump ", 5));
	CHECK(strstr(cmd, " --prev-images-dir=../d3 --track-mem") != NULL);
	CHECK(strstr(cmd, "-range") == NULL);
	/* a final dump right after d2: what d2 left out goes without the parent */
	REQUIRE(!dump(&caps, "f2", "d2", false, &ex, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, " --track-mem") != NULL);
	CHECK(strstr(cmd, "--exclude-range") == NULL);
	CHECK(strstr(cmd, "--no-parent-range 7f0010000000:7f0014000000 --no-parent-range "
			  "7f0020000000:7f0021000000") != NULL);
	/* the fork's own record counts too (a parent CRIU made without memlens) */
	snprintf(path, sizeof(path), "%s/d1/%s", dir, ML_CRIU_RECORD_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/d1/%s", dir, ML_CRIU_HOT_IOVS_NAME);
	FILE *f = fopen(path, "w");

	REQUIRE(f);
	fprintf(f,
		"{\n  \"excluded\": [\n    {\"start\": \"0x%llx\", \"end\": \"0x%llx\"}\n  ],\n"
		"  \"no_parent\": [\n\n  ]\n}\n",
		A, A + 32 * MB);
	fclose(f);
	REQUIRE(!dump(&caps, "f1", "d1", false, NULL, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, "--no-parent-range 7f0000000000:7f0002000000") != NULL);
	ml_rangeset_free(&ex);
	ml_rangeset_free(&rec);
}

/* More than 10 hot ranges and no --exclude-file: all of them inline. */
static void test_many_ranges(void)
{
	static struct ml_criu_result res;
	struct ml_criu_caps caps = fake_caps();
	struct ml_rangeset ex;
	char cmd[8192];
	int n = 0;

	caps.exclude_file = false;
	ml_rangeset_init(&ex);
	for (int i = 0; i < 12; i++)
		ml_rangeset_add(&ex, A + (uint64_t)i * 4 * MB, A + (uint64_t)i * 4 * MB + MB);
	REQUIRE(!dump(&caps, "m1", NULL, true, &ex, false, &res, cmd, sizeof(cmd)));
	for (const char *p = cmd; (p = strstr(p, "--exclude-range ")); p++)
		n++;
	CHECK_EQ(n, 12);
	CHECK(strstr(cmd, "--exclude-file") == NULL);
	CHECK_EQ(res.exclude.nexclude, 12);
	/* with --exclude-file: one file */
	caps.exclude_file = true;
	REQUIRE(!dump(&caps, "m2", "m1", true, &ex, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, "--exclude-file ") != NULL);
	CHECK(strstr(cmd, "--exclude-range") == NULL);
	CHECK(strstr(cmd, "--no-parent-range") == NULL);
	ml_rangeset_free(&ex);
}

/* The parent left memory out and this CRIU cannot mark it: no parent at all. */
static void test_parent_unusable(void)
{
	static struct ml_criu_result res;
	struct ml_criu_caps caps = fake_caps();
	char cmd[8192];

	caps.exclude_range = caps.exclude_file = caps.no_parent_range = false;
	REQUIRE(!dump(&caps, "u1", "d1", false, NULL, false, &res, cmd, sizeof(cmd)));
	CHECK(strstr(cmd, "--prev-images-dir") == NULL);
	CHECK(strstr(cmd, "--track-mem") == NULL);
	CHECK(!res.parent_used);
	CHECK(strstr(res.exclude.note, "parent is not used") != NULL);
}

int main(void)
{
	setup();
	RUN(test_probe_by_acceptance);
	RUN(test_probe_ns_last_pid);
	RUN(test_chain);
	RUN(test_many_ranges);
	RUN(test_parent_unusable);
	teardown();
	return T_DONE();
}
