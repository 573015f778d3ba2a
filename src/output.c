// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliutil.h"
#include "exitcode.h"
#include "output.h"

#define MAX_STREAMS 8

struct ostream {
	FILE *f;
	int fd;
	int err; /* the first failure's errno */
	bool reported, is_stdout;
	char name[256];
};

static struct ostream streams[MAX_STREAMS];

static struct ostream *find(FILE *f)
{
	for (int i = 0; f && i < MAX_STREAMS; i++)
		if (streams[i].f == f)
			return &streams[i];
	return NULL;
}

static ssize_t o_write(void *cookie, const char *buf, size_t n)
{
	struct ostream *o = cookie;
	size_t done = 0;

	while (!o->err && done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			o->err = errno;
		else if (w == 0)
			o->err = EIO;
		else
			done += (size_t)w;
	}
	/* short: stdio marks the stream in error */
	return o->err ? 0 : (ssize_t)done;
}

static int o_close(void *cookie)
{
	struct ostream *o = cookie;
	int r = 0;

	if (!o->is_stdout && close(o->fd) && errno != EINTR && !o->err)
		o->err = errno, r = -1;
	o->f = NULL;
	return r;
}

static FILE *wrap(int fd, const char *name, bool is_stdout)
{
	static const cookie_io_functions_t io = { .write = o_write, .close = o_close };
	struct ostream *o = NULL;
	FILE *f;

	for (int i = 0; !o && i < MAX_STREAMS; i++)
		if (!streams[i].f)
			o = &streams[i];
	if (!o) {
		errno = EMFILE;
		return NULL;
	}
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->is_stdout = is_stdout;
	snprintf(o->name, sizeof(o->name), "%s", name);
	f = fopencookie(o, "w", io);
	if (!f)
		return NULL;
	o->f = f;
	return f;
}

void out_wrap_stdout(void)
{
	FILE *f = wrap(STDOUT_FILENO, "standard output", true);

	if (!f)
		return; /* out of memory at start: the plain stdout, unchecked */
	if (isatty(STDOUT_FILENO))
		setvbuf(f, NULL, _IOLBF, 0);
	stdout = f;
}

FILE *out_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = wrap(fd, path, false);
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

void out_set_name(FILE *f, const char *name)
{
	struct ostream *o = find(f);

	if (o)
		snprintf(o->name, sizeof(o->name), "%s", name);
}

int out_failed(FILE *f)
{
	struct ostream *o = find(f);

	if (!o)
		return f && ferror(f) ? EIO : 0;
	return o->err ? o->err : ferror(f) ? EIO : 0;
}

int out_flush(FILE *f)
{
	fflush(f);
	return out_failed(f);
}

int out_close(const char *cmd, FILE *f)
{
	struct ostream *o = find(f);
	char name[256];
	bool reported;
	int e;

	if (!f)
		return 0;
	e = out_flush(f);
	snprintf(name, sizeof(name), "%s", o ? o->name : "the output");
	reported = o && o->reported;
	if (o)
		o->reported = true;
	if (!(o && o->is_stdout) && f != stdout) {
		if (fclose(f) && !e)
			e = errno ? errno : EIO;
		if (o && o->err && !e)
			e = o->err;
	}
	if (e && !reported)
		fprintf(stderr, "memlens %s: writing %s: %s\n", cmd, name, strerror(e));
	return -e;
}

static const char *redirect_path; /* -o FILE */
static int redirect_fd = -1;

int out_stdout_open(const char *path)
{
	redirect_path = path;
	redirect_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	return redirect_fd < 0 ? -errno : 0;
}

int out_option(const char *cmd, const char *path)
{
	int e = path ? out_stdout_open(path) : 0;

	if (e) {
		cli_error(cmd, "cannot create the output file %s: %s", path, strerror(-e));
		return e == -EACCES || e == -EPERM ? EXIT_PERM : EXIT_FAIL;
	}
	out_stdout_switch();
	return 0;
}

void out_stdout_switch(void)
{
	if (redirect_fd < 0)
		return;
	fflush(stdout);
	dup2(redirect_fd, STDOUT_FILENO);
	close(redirect_fd);
	redirect_fd = -1;
	out_set_name(stdout, redirect_path); /* a failed write names the file */
}
