// SPDX-License-Identifier: MIT
/*
 * CRIU arguments from the heat map (seed §5.3): --exclude-range,
 * --exclude-file, --no-parent-range, and the argv they go into. Pure apart
 * from writing the exclude file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memlens/criu.h"

void criu_argv_init(struct criu_argv *a)
{
	memset(a, 0, sizeof(*a));
}

void criu_argv_free(struct criu_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int argv_push(struct criu_argv *a, char *s)
{
	char **v;

	if (!s)
		return -ENOMEM;
	if (a->n + 1 >= a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;

		v = realloc(a->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			return -ENOMEM;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

int criu_argv_add(struct criu_argv *a, const char *s)
{
	return argv_push(a, strdup(s));
}

int criu_argv_addf(struct criu_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return argv_push(a, s);
}

static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "-_./:=,+@%",
			    *s))
			return false;
	return true;
}

/* Append @s (quoted when needed) at @pos; returns the new position. */
static size_t fmt_word(char *buf, size_t len, size_t pos, const char *s)
{
	if (pos + 1 >= len)
		return pos;
	if (pos)
		buf[pos++] = ' ';
	if (shell_safe(s)) {
		pos += (size_t)snprintf(buf + pos, len - pos, "%s", s);
		return pos < len ? pos : len - 1;
	}
	if (pos + 1 < len)
		buf[pos++] = '\'';
	for (; *s && pos + 5 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + pos, "'\\''", 4);
			pos += 4;
		} else {
			buf[pos++] = *s;
		}
	}
	if (pos + 1 < len)
		buf[pos++] = '\'';
	buf[pos] = '\0';
	return pos;
}

void criu_argv_format(const struct criu_argv *a, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < a->n; i++) {
		pos = fmt_word(buf, len, pos, a->v[i]);
		if (pos + 1 >= len && len > 4) {
			memcpy(buf + len - 4, "...", 4);
			return;
		}
	}
}

int criu_transitions(const struct rangeset *prev, const struct rangeset *cur,
		     struct rangeset *no_parent)
{
	int ret;

	rangeset_clear(no_parent);
	if (!prev)
		return 0;
	ret = rangeset_copy(no_parent, prev);
	if (ret || !cur)
		return ret;
	for (size_t i = 0; i < cur->n; i++) {
		ret = rangeset_remove(no_parent, cur->r[i].start, cur->r[i].end);
		if (ret)
			return ret;
	}
	return 0;
}

/* @dir must be ours, a real directory, and closed to everybody else. */
static int open_private_dir(const char *dir, struct ml_err *err)
{
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ml_err_set(err, errno,
				  "cannot open the directory for the CRIU exclude file %s: %s "
				  "(it must be an existing directory, not a symlink)",
				  dir, strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return ml_err_set(err, EPERM,
				  "refusing to write the CRIU exclude file into %s: the directory "
				  "must be owned by us and not writable by group or others "
				  "(use a private directory, mode 0700)",
				  dir);
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_ranges(int fd, const struct rangeset *ranges)
{
	char line[64];
	int ret, n;

	for (size_t i = 0; i < ranges->n; i++) {
		n = snprintf(line, sizeof(line), "%llx %llx\n",
			     (unsigned long long)ranges->r[i].start,
			     (unsigned long long)ranges->r[i].end);
		ret = write_all(fd, line, (size_t)n);
		if (ret)
			return ret;
	}
	return 0;
}

int criu_write_exclude_file(const char *dir, const struct rangeset *ranges, char *path, size_t len,
			    struct ml_err *err)
{
	int dfd, fd, ret;

	dfd = open_private_dir(dir, err);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, CRIU_EXCLUDE_FILE_NAME,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = ml_err_set(err, errno,
				 "cannot create the CRIU exclude file %s/%s: %s (it must not exist "
				 "yet; use a fresh private directory)",
				 dir, CRIU_EXCLUDE_FILE_NAME, strerror(errno));
		goto out;
	}
	ret = write_ranges(fd, ranges);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		unlinkat(dfd, CRIU_EXCLUDE_FILE_NAME, 0);
		ml_err_set(err, -ret, "cannot write the CRIU exclude file %s/%s: %s", dir,
			   CRIU_EXCLUDE_FILE_NAME, strerror(-ret));
		goto out;
	}
	if ((size_t)snprintf(path, len, "%s/%s", dir, CRIU_EXCLUDE_FILE_NAME) >= len)
		ret = ml_err_set(err, ENAMETOOLONG, "the exclude file path under %s is too long",
				 dir);
out:
	close(dfd);
	return ret;
}

static int add_ranges(struct criu_argv *a, const char *opt, const struct rangeset *s)
{
	int ret;

	for (size_t i = 0; i < s->n; i++) {
		ret = criu_argv_add(a, opt);
		if (!ret)
			ret = criu_argv_addf(a, "%llx:%llx", (unsigned long long)s->r[i].start,
					     (unsigned long long)s->r[i].end);
		if (ret)
			return ret;
	}
	return 0;
}

static int add_exclude_file(struct criu_argv *a, const struct rangeset *exclude,
			    const char *private_dir, struct criu_exclude_report *rep,
			    struct ml_err *err)
{
	int ret;

	if (!private_dir)
		return ml_err_set(err, EINVAL,
				  "%zu hot ranges need an exclude file, but no private directory "
				  "was given for it",
				  exclude->n);
	ret = criu_write_exclude_file(private_dir, exclude, rep->file, sizeof(rep->file), err);
	if (ret)
		return ret;
	rep->used_file = true;
	ret = criu_argv_add(a, "--exclude-file");
	if (!ret)
		ret = criu_argv_add(a, rep->file);
	return ret;
}

static void note_skipped(struct criu_exclude_report *rep, const struct criu_caps *caps,
			 size_t nexcl, size_t nnp)
{
	rep->skipped = true;
	snprintf(rep->note, sizeof(rep->note),
		 "exclusion skipped: %zu hot range(s) and %zu hot->cold transition(s) were not "
		 "passed because the CRIU in use (%.200s) has no --exclude-range/--exclude-file/"
		 "--no-parent-range (upstream CRIU lacks them; they exist only in a CRIU fork)",
		 nexcl, nnp, caps && caps->path[0] ? caps->path : "criu");
}

int criu_exclude_args(struct criu_argv *a, const struct rangeset *exclude,
		      const struct rangeset *no_parent, const struct criu_caps *caps,
		      const char *private_dir, struct criu_exclude_report *rep, struct ml_err *err)
{
	size_t nexcl = exclude ? exclude->n : 0, nnp = no_parent ? no_parent->n : 0;
	bool use_file = nexcl > CRIU_EXCLUDE_RANGE_MAX;
	bool can_excl = !caps || (use_file ? caps->exclude_file : caps->exclude_range);
	bool can_np = !caps || caps->no_parent_range;
	int ret = 0;

	memset(rep, 0, sizeof(*rep));
	if (!nexcl && !nnp) {
		snprintf(rep->note, sizeof(rep->note), "no hot ranges: nothing to exclude");
		return 0;
	}
	if ((nexcl && !can_excl) || (nnp && !can_np)) {
		note_skipped(rep, caps, nexcl, nnp);
		return 0;
	}
	if (use_file)
		ret = add_exclude_file(a, exclude, private_dir, rep, err);
	else if (nexcl)
		ret = add_ranges(a, "--exclude-range", exclude);
	if (!ret && nnp)
		ret = add_ranges(a, "--no-parent-range", no_parent);
	if (ret)
		return ret == -ENOMEM ? ml_err_set(err, ENOMEM, "out of memory") : ret;
	rep->nexclude = nexcl;
	rep->nno_parent = nnp;
	snprintf(rep->note, sizeof(rep->note),
		 "excluded %zu hot range(s)%s%.300s, %zu no-parent range(s)", nexcl,
		 use_file ? " via --exclude-file " : "", use_file ? rep->file : "", nnp);
	return 0;
}
