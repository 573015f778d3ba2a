// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memlens/lines.h"

#define READ_AHEAD (64u << 10)

void ml_lines_init(struct ml_lines *l, FILE *f, const char *name, size_t max)
{
	memset(l, 0, sizeof(*l));
	l->f = f;
	l->name = name;
	l->max = max ? max : ML_MAX_LINE;
}

void ml_lines_free(struct ml_lines *l)
{
	free(l->line);
	free(l->rbuf);
	l->line = l->rbuf = NULL;
}

int ml_lines_check_file(FILE *f, const char *name, struct ml_err *err)
{
	struct stat st;

	if (!fstat(fileno(f), &st) && S_ISDIR(st.st_mode))
		return ml_err_set(err, EISDIR, "%s: is a directory; give a JSON Lines file", name);
	return 0;
}

static int append(struct ml_lines *l, size_t *len, const char *p, size_t n, struct ml_err *err)
{
	if (*len + n > l->max)
		return ml_err_set(err, EINVAL, "%s:%ld: line longer than %zu bytes", l->name,
				  l->lineno, l->max);
	if (*len + n + 1 > l->cap) {
		size_t cap = l->cap ? l->cap : 256;
		char *nl;

		while (cap < *len + n + 1)
			cap *= 2;
		if (cap > l->max + 1)
			cap = l->max + 1;
		nl = realloc(l->line, cap);
		if (!nl)
			return ml_err_set(err, ENOMEM, "%s:%ld: out of memory", l->name, l->lineno);
		l->line = nl;
		l->cap = cap;
	}
	memcpy(l->line + *len, p, n);
	*len += n;
	return 0;
}

static int fill(struct ml_lines *l, struct ml_err *err)
{
	size_t n;

	if (!l->rbuf && !(l->rbuf = malloc(READ_AHEAD)))
		return ml_err_set(err, ENOMEM, "out of memory");
	n = fread(l->rbuf, 1, READ_AHEAD, l->f);
	l->rpos = 0;
	l->rend = n;
	if (n)
		return 0;
	if (ferror(l->f)) {
		int e = errno ? errno : EIO;

		if (e == EISDIR)
			return ml_err_set(err, EISDIR, "%s: is a directory; give a JSON Lines file",
					  l->name);
		return ml_err_set(err, EIO, "%s:%ld: read error: %s", l->name, l->lineno,
				  strerror(e));
	}
	l->eof = true;
	return 0;
}

int ml_lines_next(struct ml_lines *l, const char **line, size_t *len, struct ml_err *err)
{
	size_t n = 0;
	bool any = false;
	int r;

	l->lineno++;
	for (;;) {
		if (l->rpos == l->rend) {
			if (l->eof)
				break;
			errno = 0;
			r = fill(l, err);
			if (r)
				return r;
			if (l->eof)
				break;
		}
		const char *p = l->rbuf + l->rpos;
		size_t avail = l->rend - l->rpos;
		const char *nl = memchr(p, '\n', avail);
		size_t take = nl ? (size_t)(nl - p) : avail;

		any = true;
		r = append(l, &n, p, take, err);
		if (r)
			return r;
		l->rpos += take + (nl != NULL);
		if (nl)
			break;
	}
	if (!any) {
		l->lineno--;
		return 0;
	}
	if (!l->line && append(l, &n, "", 0, err))
		return -err->code;
	l->line[n] = '\0';
	*line = l->line;
	*len = n;
	return 1;
}
