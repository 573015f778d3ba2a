// SPDX-License-Identifier: MIT
/*
 * leaks --sample -- CMD with the preloaded sampler: which programs can be
 * given it (trace/preload.c), where it is found, and CMD's LD_PRELOAD. The
 * files examined are made here: a copy of this test (dynamically linked),
 * ELF headers written by hand (static, 32-bit), a script, a set-user-ID
 * copy, a text file.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "../../trace/preload.c"

static char dir[] = "/tmp/memlens-preload-test.XXXXXX";

static void path_in(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, n) == (ssize_t)n);
	close(fd);
	REQUIRE(!chmod(path, mode));
}

/* an ELF header and one program header of @type (PT_LOAD: static; PT_INTERP...) */
static void write_elf(const char *path, int class, Elf64_Word type)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph[2];
	} f;

	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = (unsigned char)class;
	f.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	f.eh.e_type = ET_EXEC;
	f.eh.e_machine = OWN_MACHINE;
	f.eh.e_phoff = sizeof(f.eh);
	f.eh.e_phentsize = sizeof(Elf64_Phdr);
	f.eh.e_phnum = 2;
	f.ph[0].p_type = PT_LOAD;
	f.ph[0].p_vaddr = 0x1000;
	f.ph[0].p_memsz = 0x2345;
	f.ph[1].p_type = type;
	f.ph[1].p_vaddr = 0x10000;
	f.ph[1].p_memsz = 0x100;
	write_file(path, &f, sizeof(f), 0755);
}

static void copy_self(const char *to, mode_t mode)
{
	static char buf[1 << 16];
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC),
	    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	ssize_t n;

	REQUIRE(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		REQUIRE(write(out, buf, (size_t)n) == n);
	close(in);
	close(out);
	REQUIRE(!chmod(to, mode));
}

static void test_env(void)
{
	char out[64];

	CHECK(!mlt_preload_env(NULL, "/a/s.so", out, sizeof(out)));
	CHECK_STR(out, "/a/s.so");
	CHECK(!mlt_preload_env("", "/a/s.so", out, sizeof(out)));
	CHECK_STR(out, "/a/s.so");
	/* the user's own preloads kept, after the sampler */
	CHECK(!mlt_preload_env("/u/one.so /u/two.so", "/a/s.so", out, sizeof(out)));
	CHECK_STR(out, "/a/s.so /u/one.so /u/two.so");
	CHECK(mlt_preload_env("/a/very/long/path/that/does/not/fit.so", "/a/s.so", out, 16) ==
	      -ENAMETOOLONG);
}

static void test_kinds(void)
{
	char p[PATH_MAX], why[PATH_MAX + 128], script[2 * PATH_MAX];

	/* this test itself: started by the dynamic loader (ASan builds too) */
	path_in(p, sizeof(p), "dyn");
	copy_self(p, 0755);
	if (mlt_preload_exec_kind(p, NULL, why, sizeof(why)) == MLT_EXEC_STATIC)
		SKIP("this test is linked statically");
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_DYNAMIC);

	/* a script whose interpreter is dynamic */
	snprintf(script, sizeof(script), "#!%s -x\nexit 0\n", p);
	path_in(p, sizeof(p), "script");
	write_file(p, script, strlen(script), 0755);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_DYNAMIC);

	path_in(p, sizeof(p), "static");
	write_elf(p, ELFCLASS64, PT_NOTE);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_STATIC);
	CHECK(strstr(why, "statically linked") != NULL);

	path_in(p, sizeof(p), "interp");
	write_elf(p, ELFCLASS64, PT_INTERP);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_DYNAMIC);

	path_in(p, sizeof(p), "elf32");
	write_elf(p, ELFCLASS32, PT_INTERP);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_FOREIGN);

	/* a script whose interpreter is static: static */
	snprintf(script, sizeof(script), "#!%s/static\n", dir);
	path_in(p, sizeof(p), "script-static");
	write_file(p, script, strlen(script), 0755);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_STATIC);

	path_in(p, sizeof(p), "text");
	write_file(p, "hello\n", 6, 0755);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_UNKNOWN);

	path_in(p, sizeof(p), "suid");
	copy_self(p, 04755);
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_SECURE);
	CHECK(strstr(why, "LD_PRELOAD") != NULL);

	path_in(p, sizeof(p), "not-there");
	CHECK_EQ(mlt_preload_exec_kind(p, NULL, why, sizeof(why)), MLT_EXEC_UNKNOWN);
}

static void test_which(void)
{
	char p[PATH_MAX], old[PATH_MAX * 2];
	const char *path = getenv("PATH");

	snprintf(old, sizeof(old), "%s", path ? path : "");
	path_in(p, sizeof(p), "interp");
	write_elf(p, ELFCLASS64, PT_INTERP);
	/* found on PATH, after a directory that does not have it */
	setenv("PATH", "/nonexistent-memlens-dir:/tmp/memlens-none", 1);
	CHECK(mlt_preload_which("interp", p, sizeof(p)) == -ENOENT);
	snprintf(p, sizeof(p), "/nonexistent-memlens-dir:%s", dir);
	setenv("PATH", p, 1);
	CHECK(!mlt_preload_which("interp", p, sizeof(p)));
	CHECK(strstr(p, dir) == p);
	CHECK_EQ(mlt_preload_exec_kind("interp", NULL, p, sizeof(p)), MLT_EXEC_DYNAMIC);
	setenv("PATH", old, 1);
}

static void test_find(void)
{
	char p[2 * PATH_MAX], out[PATH_MAX], sub[PATH_MAX];
	uint64_t end;

	path_in(sub, sizeof(sub), "installed");
	REQUIRE(!mkdir(sub, 0755));
	CHECK(mlt_preload_find(dir, sub, out, sizeof(out)) == -ENOENT);
	/* installed only: found there */
	snprintf(p, sizeof(p), "%s/%s", sub, MLT_SAMPLER_SO);
	write_elf(p, ELFCLASS64, PT_DYNAMIC);
	CHECK(!mlt_preload_find(dir, sub, out, sizeof(out)));
	CHECK(strstr(out, "/installed/" MLT_SAMPLER_SO) != NULL);
	/* beside memlens first */
	path_in(p, sizeof(p), MLT_SAMPLER_SO);
	write_elf(p, ELFCLASS64, PT_DYNAMIC);
	CHECK(!mlt_preload_find(dir, sub, out, sizeof(out)));
	CHECK(strstr(out, "/installed/") == NULL);
	/* the image's end: the highest PT_LOAD */
	CHECK(!mlt_preload_image_end(p, &end));
	CHECK_EQ(end, (uint64_t)0x3345);
	path_in(p, sizeof(p), "text");
	write_file(p, "hello\n", 6, 0644);
	CHECK(mlt_preload_image_end(p, &end) == -ENOEXEC);
}

static void test_environ(void)
{
	static const char env[] =
		"HOME=/root\0LD_PRELOAD=/u/one.so:/opt/m/lib/libmemlens-sample.so "
		"/u/two.so\0MEMLENS_SAMPLE_BYTES=524288\0PATH=/bin";
	static const char no_rate[] = "LD_PRELOAD=/opt/libmemlens-sample.so\0";
	static const char other[] = "LD_PRELOAD=/opt/libmemlens-sample.so.old\0"
				    "MEMLENS_SAMPLE_BYTES=4096\0";
	char so[128];
	uint64_t rate = 0;

	CHECK(!mlt_preload_from_environ(env, sizeof(env), so, sizeof(so), &rate));
	CHECK_STR(so, "/opt/m/lib/libmemlens-sample.so");
	CHECK_EQ(rate, (uint64_t)524288);
	CHECK(mlt_preload_from_environ(no_rate, sizeof(no_rate), so, sizeof(so), &rate) == -ENOENT);
	CHECK(mlt_preload_from_environ(other, sizeof(other), so, sizeof(so), &rate) == -ENOENT);
	CHECK(mlt_preload_from_environ("", 0, so, sizeof(so), &rate) == -ENOENT);
}

static void cleanup(void *arg)
{
	char cmd[PATH_MAX + 16];

	(void)arg;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	T_DEFER(cleanup, NULL);
	RUN(test_env);
	RUN(test_kinds);
	RUN(test_which);
	RUN(test_find);
	RUN(test_environ);
	return T_DONE();
}
