// SPDX-License-Identifier: MIT
/*
 * The probe cache: what a CRIU binary answered on this kernel, kept so that
 * the next command need not run `criu check` again (seconds on an idle
 * machine, half a minute on a loaded one). One small text file per binary
 * and kernel; only answers that passed are kept, so a CRIU or a kernel that
 * is fixed later is probed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "criu_cache.h"

/* 2: page_granular added (an answer without it is probed again) */
#define CACHE_MAGIC "memlens-criu-probe 2\n"

/* What identifies the answer: the binary's identity and the kernel's. */
static int cache_key(const char *path, char *key, size_t len)
{
	struct utsname u;
	struct stat st;
	int n;

	if (stat(path, &st) < 0 || uname(&u) < 0)
		return -errno;
	n = snprintf(key, len,
		     CACHE_MAGIC "path=%s\nbinary=%llx:%llx:%lld:%lld.%09ld\nkernel=%s %s %s\n",
		     path, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		     u.release, u.version, u.machine);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The file's name: FNV-1a of the key, so that each binary and kernel has its own. */
static int cache_file(const char *dir, const char *key, char *out, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int n;

	for (const char *k = key; *k; k++)
		h = (h ^ (unsigned char)*k) * 0x100000001b3ULL;
	n = snprintf(out, len, "%s/criu-probe-%016llx", dir, (unsigned long long)h);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool flag(const char *text, const char *name)
{
	char want[64];

	snprintf(want, sizeof(want), "\n%s=1\n", name);
	return strstr(text, want) != NULL;
}

int mli_criu_cache_load(const char *dir, const char *path, struct ml_criu_caps *c)
{
	char key[1024], file[4096], buf[2048];
	const char *v;
	struct stat st;
	ssize_t n;
	int fd, r;

	r = cache_key(path, key, sizeof(key));
	if (!r)
		r = cache_file(dir, key, file, sizeof(file));
	if (r)
		return r;
	fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* another user's file, or one others may write, is not our answer */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, key, strlen(key)) || !flag(buf + strlen(key) - 1, "works"))
		return -ESTALE;
	v = strstr(buf + strlen(key), "version=");
	if (!v)
		return -ESTALE;
	v += strlen("version=");
	snprintf(c->version, sizeof(c->version), "%.*s", (int)strcspn(v, "\n"), v);
	c->works = true;
	c->exclude_range = flag(buf + strlen(key) - 1, "exclude_range");
	c->exclude_file = flag(buf + strlen(key) - 1, "exclude_file");
	c->no_parent_range = flag(buf + strlen(key) - 1, "no_parent_range");
	c->page_granular = flag(buf + strlen(key) - 1, "page_granular");
	c->mem_dirty_track = flag(buf + strlen(key) - 1, "mem_dirty_track");
	c->cached = true;
	return 0;
}

int mli_criu_cache_store(const char *dir, const struct ml_criu_caps *c)
{
	char key[1024], file[4096], tmp[4200];
	struct stat st;
	FILE *f;
	int fd, r;

	if (!c->works || c->timed_out)
		return 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM; /* not a directory others cannot write into */
	r = cache_key(c->path, key, sizeof(key));
	if (!r)
		r = cache_file(dir, key, file, sizeof(file));
	if (r)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.%d", file, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlink(tmp);
		return r;
	}
	fprintf(f,
		"%sworks=1\nversion=%s\nexclude_range=%d\nexclude_file=%d\n"
		"no_parent_range=%d\npage_granular=%d\nmem_dirty_track=%d\n",
		key, c->version, c->exclude_range, c->exclude_file, c->no_parent_range,
		c->page_granular, c->mem_dirty_track);
	r = ferror(f) ? -EIO : 0;
	if (fclose(f) && !r)
		r = -errno;
	if (!r && rename(tmp, file) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}
