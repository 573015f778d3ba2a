// SPDX-License-Identifier: MIT
/*
 * CRIU arguments from the heat map: --exclude-range,
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

void ml_criu_argv_init(struct ml_criu_argv *a)
{
	memset(a, 0, sizeof(*a));
}

void ml_criu_argv_free(struct ml_criu_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int argv_push(struct ml_criu_argv *a, char *s)
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

int ml_criu_argv_add(struct ml_criu_argv *a, const char *s)
{
	return argv_push(a, strdup(s));
}

int ml_criu_argv_addf(struct ml_criu_argv *a, const char *fmt, ...)
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

void ml_criu_argv_format(const struct ml_criu_argv *a, char *buf, size_t len)
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

int ml_criu_transitions(const struct ml_rangeset *prev, const struct ml_rangeset *cur,
			struct ml_rangeset *no_parent)
{
	int ret;

	ml_rangeset_clear(no_parent);
	if (!prev)
		return 0;
	ret = ml_rangeset_copy(no_parent, prev);
	if (ret || !cur)
		return ret;
	for (size_t i = 0; i < cur->n; i++) {
		ret = ml_rangeset_remove(no_parent, cur->r[i].start, cur->r[i].end);
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

static int write_ranges(int fd, pid_t pid, const struct ml_rangeset *ranges)
{
	char line[80];
	int ret, n;

	for (size_t i = 0; ranges && i < ranges->n; i++) {
		if (pid > 0)
			n = snprintf(line, sizeof(line), "%d %llx %llx\n", (int)pid,
				     (unsigned long long)ranges->r[i].start,
				     (unsigned long long)ranges->r[i].end);
		else
			n = snprintf(line, sizeof(line), "%llx %llx\n",
				     (unsigned long long)ranges->r[i].start,
				     (unsigned long long)ranges->r[i].end);
		ret = write_all(fd, line, (size_t)n);
		if (ret)
			return ret;
	}
	return 0;
}

static int write_procs(int fd, const struct ml_criu_proc_ranges *procs, size_t nprocs,
		       bool with_pid)
{
	int ret = 0;

	for (size_t i = 0; i < nprocs && !ret; i++)
		ret = write_ranges(fd, with_pid ? procs[i].pid : 0, procs[i].ranges);
	return ret;
}

int ml_criu_write_exclude_file(const char *dir, pid_t pid, const struct ml_rangeset *ranges,
			       char *path, size_t len, struct ml_err *err)
{
	struct ml_criu_proc_ranges one = { pid, ranges };

	return ml_criu_write_exclude_file_procs(dir, &one, 1, pid > 0, path, len, err);
}

int ml_criu_write_exclude_file_procs(const char *dir, const struct ml_criu_proc_ranges *procs,
				     size_t nprocs, bool with_pid, char *path, size_t len,
				     struct ml_err *err)
{
	int dfd, fd, ret;

	dfd = open_private_dir(dir, err);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, ML_CRIU_EXCLUDE_FILE_NAME,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = ml_err_set(err, errno,
				 "cannot create the CRIU exclude file %s/%s: %s (it must not exist "
				 "yet; use a fresh private directory)",
				 dir, ML_CRIU_EXCLUDE_FILE_NAME, strerror(errno));
		goto out;
	}
	ret = write_procs(fd, procs, nprocs, with_pid);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		unlinkat(dfd, ML_CRIU_EXCLUDE_FILE_NAME, 0);
		ml_err_set(err, -ret, "cannot write the CRIU exclude file %s/%s: %s", dir,
			   ML_CRIU_EXCLUDE_FILE_NAME, strerror(-ret));
		goto out;
	}
	if ((size_t)snprintf(path, len, "%s/%s", dir, ML_CRIU_EXCLUDE_FILE_NAME) >= len)
		ret = ml_err_set(err, ENAMETOOLONG, "the exclude file path under %s is too long",
				 dir);
out:
	close(dfd);
	return ret;
}

static int add_ranges(struct ml_criu_argv *a, const char *opt, pid_t pid,
		      const struct ml_rangeset *s)
{
	int ret;

	for (size_t i = 0; i < s->n; i++) {
		ret = ml_criu_argv_add(a, opt);
		if (!ret && pid > 0)
			ret = ml_criu_argv_addf(a, "%d:%llx:%llx", (int)pid,
						(unsigned long long)s->r[i].start,
						(unsigned long long)s->r[i].end);
		else if (!ret)
			ret = ml_criu_argv_addf(a, "%llx:%llx", (unsigned long long)s->r[i].start,
						(unsigned long long)s->r[i].end);
		if (ret)
			return ret;
	}
	return 0;
}

static int add_exclude_file(struct ml_criu_argv *a, const struct ml_criu_proc_ranges *procs,
			    size_t nprocs, bool with_pid, size_t nexcl, const char *private_dir,
			    struct ml_criu_exclude_report *rep, struct ml_err *err)
{
	int ret;

	if (!private_dir)
		return ml_err_set(err, EINVAL,
				  "%zu hot ranges need an exclude file, but no private directory "
				  "was given for it",
				  nexcl);
	ret = ml_criu_write_exclude_file_procs(private_dir, procs, nprocs, with_pid, rep->file,
					       sizeof(rep->file), err);
	if (ret)
		return ret;
	rep->used_file = true;
	ret = ml_criu_argv_add(a, "--exclude-file");
	if (!ret)
		ret = ml_criu_argv_add(a, rep->file);
	return ret;
}

static void note_skipped(struct ml_criu_exclude_report *rep, const struct ml_criu_caps *caps,
			 size_t nexcl)
{
	rep->skipped = true;
	snprintf(rep->note, sizeof(rep->note),
		 "exclusion skipped: %zu hot range(s) were not passed because the CRIU in use "
		 "(%.200s) accepts neither --exclude-range nor --exclude-file (upstream CRIU lacks "
		 "them; memlens's patches to CRIU 4.1.1 and an older CRIU fork of 4.0 have them)",
		 nexcl, caps && caps->path[0] ? caps->path : "criu");
}

/* Where the exclude ranges go: 'r' inline, 'f' a file, 0 nowhere. */
static char exclude_how(size_t n, const struct ml_criu_caps *caps, const char *private_dir)
{
	bool can_range = !caps || caps->exclude_range;
	bool can_file = (!caps || caps->exclude_file) && private_dir;

	if (n > ML_CRIU_EXCLUDE_RANGE_MAX && can_file)
		return 'f';
	if (can_range)
		return 'r';
	return can_file ? 'f' : 0;
}

static size_t note_add(struct ml_criu_exclude_report *rep, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static size_t note_add(struct ml_criu_exclude_report *rep, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (pos >= sizeof(rep->note))
		return pos;
	va_start(ap, fmt);
	n = vsnprintf(rep->note + pos, sizeof(rep->note) - pos, fmt, ap);
	va_end(ap);
	return n > 0 ? pos + (size_t)n : pos;
}

static void note_applied(struct ml_criu_exclude_report *rep, size_t pos, char how, size_t nexcl,
			 uint64_t bytes)
{
	if (nexcl)
		pos = note_add(rep, pos, "excluded %zu hot range(s) (%llu KiB) %s via %s%.300s",
			       nexcl, (unsigned long long)(bytes >> 10),
			       !strcmp(rep->granularity, "page") ? "page by page"
								 : "as the whole VMAs they touch",
			       how == 'f' ? "--exclude-file " : "--exclude-range",
			       how == 'f' ? rep->file : "");
	if (rep->nno_parent)
		pos = note_add(rep, pos,
			       "%s%zu range(s) the parent images left out passed as "
			       "--no-parent-range (sent in full now)",
			       pos ? "; " : "", rep->nno_parent);
	if (rep->parent_unusable)
		note_add(rep, pos,
			 "%s%zu range(s) the parent images left out cannot be marked: this CRIU "
			 "has no --no-parent-range, so the parent is not used (everything is sent)",
			 pos ? "; " : "", rep->nno_parent_missing);
}

int ml_criu_exclude_args(struct ml_criu_argv *a, pid_t pid, const struct ml_rangeset *exclude,
			 const struct ml_rangeset *parent_excluded, const struct ml_criu_caps *caps,
			 const char *private_dir, struct ml_criu_exclude_report *rep,
			 struct ml_err *err)
{
	struct ml_criu_proc_ranges one = { pid, exclude };

	return ml_criu_exclude_args_procs(a, pid, exclude ? &one : NULL, exclude ? 1 : 0,
					  parent_excluded, caps, private_dir, rep, err);
}

int ml_criu_exclude_args_procs(struct ml_criu_argv *a, pid_t pid,
			       const struct ml_criu_proc_ranges *procs, size_t nprocs,
			       const struct ml_rangeset *parent_excluded,
			       const struct ml_criu_caps *caps, const char *private_dir,
			       struct ml_criu_exclude_report *rep, struct ml_err *err)
{
	const struct ml_rangeset *exclude = NULL; /* @pid's own */
	size_t nexcl = 0;
	uint64_t bytes = 0;
	char how;
	bool with_pid = caps && caps->page_granular;
	struct ml_rangeset np;
	int ret = 0;

	for (size_t i = 0; i < nprocs; i++) {
		nexcl += procs[i].ranges ? procs[i].ranges->n : 0;
		bytes += procs[i].ranges ? ml_rangeset_bytes(procs[i].ranges) : 0;
		if (procs[i].pid == pid)
			exclude = procs[i].ranges;
	}
	how = exclude_how(nexcl, caps, private_dir);
	memset(rep, 0, sizeof(*rep));
	rep->granularity = ml_criu_granularity(caps);
	if (!with_pid)
		pid = 0; /* CRIU takes no PID in a range */
	ml_rangeset_init(&np);
	if (nexcl && !how)
		note_skipped(rep, caps, nexcl);
	/* the parent's left-out ranges not excluded again: in full, without the parent */
	if (ml_criu_transitions(parent_excluded, rep->skipped ? NULL : exclude, &np)) {
		ret = -ENOMEM;
		goto out;
	}
	if (np.n && caps && !caps->no_parent_range) {
		rep->parent_unusable = true;
		rep->nno_parent_missing = np.n;
	}
	if (nexcl && how == 'f')
		ret = add_exclude_file(a, procs, nprocs, with_pid, nexcl, private_dir, rep, err);
	for (size_t i = 0; nexcl && how == 'r' && !ret && i < nprocs; i++)
		if (procs[i].ranges)
			ret = add_ranges(a, "--exclude-range", with_pid ? procs[i].pid : 0,
					 procs[i].ranges);
	if (!ret && nexcl && how)
		rep->nexclude = nexcl;
	if (!ret && np.n && !rep->parent_unusable) {
		ret = add_ranges(a, "--no-parent-range", pid, &np);
		rep->nno_parent = np.n;
	}
	if (ret)
		goto out;
	if (rep->skipped)
		note_applied(rep, strlen(rep->note), 0, 0, 0);
	else if (nexcl || np.n)
		note_applied(rep, 0, how, nexcl, bytes);
	else
		snprintf(rep->note, sizeof(rep->note), "no hot ranges: nothing to exclude");
out:
	ml_rangeset_free(&np);
	if (ret == -ENOMEM)
		return ml_err_set(err, ENOMEM, "out of memory");
	return ret;
}
