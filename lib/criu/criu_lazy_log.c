// SPDX-License-Identifier: MIT
/*
 * What CRIU's logs say about post-copy: the page counts and the freeze of
 * a `criu dump --lazy-pages`, and the faults, copies and totals of a
 * `criu lazy-pages -v4` (criu/uffd.c's debug lines, "uffd: PID-FD: ..."). Pure: buffers in,
 * numbers out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "memlens/criu.h"

/* "(SS.uuuuuu) rest": the time in microseconds and the rest; -1 without one. */
static int64_t line_time(const char *s, const char **rest)
{
	unsigned long sec, usec;
	int n = 0;

	*rest = s;
	if (sscanf(s, "(%lu.%lu)%n", &sec, &usec, &n) != 2 || !n)
		return -1;
	*rest = s + n;
	while (**rest == ' ')
		(*rest)++;
	return (int64_t)sec * 1000000 + (int64_t)usec;
}

/* The next line of [*p, end) into a NUL-terminated @line; false at the end. */
static bool next_line(const char **p, const char *end, char *line, size_t len)
{
	const char *s = *p, *e;
	size_t n;

	if (s >= end)
		return false;
	e = memchr(s, '\n', (size_t)(end - s));
	if (!e)
		e = end;
	n = (size_t)(e - s) < len - 1 ? (size_t)(e - s) : len - 1;
	memcpy(line, s, n);
	line[n] = '\0';
	*p = e < end ? e + 1 : end;
	return true;
}

int ml_criu_parse_dump_log(const char *buf, size_t len, int64_t *written, int64_t *lazy,
			   int64_t *holes, int64_t *frozen_us)
{
	const char *p = buf, *end = buf + len, *rest, *m;
	char line[1024];
	unsigned long n, l, h;
	bool found = false;

	*written = *lazy = *holes = 0;
	*frozen_us = -1;
	while (next_line(&p, end, line, sizeof(line))) {
		int64_t t = line_time(line, &rest);

		if (*frozen_us < 0 && t >= 0 && strstr(rest, "Seized task "))
			*frozen_us = t;
		m = strstr(rest, "Pagemap generated: ");
		if (m && sscanf(m, "Pagemap generated: %lu pages (%lu lazy) %lu holes", &n, &l,
				&h) == 3) {
			*written += (int64_t)(n - l);
			*lazy += (int64_t)l;
			*holes += (int64_t)h;
			found = true;
		}
	}
	if (!found) {
		*written = *lazy = *holes = -1;
		return -EINVAL;
	}
	return 0;
}

struct fault {
	int pid;
	unsigned long long addr;
	int64_t t;
};

struct faults {
	struct fault *v;
	size_t n, cap;
};

static int fault_add(struct faults *f, int pid, unsigned long long addr, int64_t t)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64;
		struct fault *nv = realloc(f->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		f->v = nv;
		f->cap = cap;
	}
	f->v[f->n++] = (struct fault){ .pid = pid, .addr = addr, .t = t };
	return 0;
}

/* The page [@addr, @addr + @size) of @pid arrived at @t: its faults are served. */
static void faults_served(struct faults *f, int pid, unsigned long long addr,
			  unsigned long long size, int64_t t, struct ml_criu_lazy_stats *st)
{
	for (size_t i = 0; i < f->n;) {
		struct fault *x = &f->v[i];

		if (x->pid != pid || x->addr < addr || x->addr >= addr + size) {
			i++;
			continue;
		}
		if (t >= x->t) {
			uint64_t w = (uint64_t)(t - x->t);

			st->wait_sum_us += w;
			if (w > st->wait_max_us)
				st->wait_max_us = w;
		}
		st->faults_served++;
		*x = f->v[--f->n];
	}
}

static void note_error(struct ml_criu_lazy_stats *st, const char *rest)
{
	size_t used = strlen(st->error);

	st->errors = true;
	if (used && used + 4 < sizeof(st->error)) {
		memcpy(st->error + used, " | ", 4);
		used += 3;
	}
	if (used + 1 < sizeof(st->error))
		snprintf(st->error + used, sizeof(st->error) - used, "%s", rest);
}

/* One "PID-FD: what" line of criu/uffd.c (the pid, and what follows). */
static int lazy_line(struct ml_criu_lazy_stats *st, struct faults *f, int64_t t, const char *rest)
{
	unsigned long long addr, size;
	long c, tot;
	int pid, fd, n = 0;

	if (!strncmp(rest, "uffd: ", 6)) /* criu/uffd.c's LOG_PREFIX */
		rest += 6;
	if (sscanf(rest, "%d-%d: %n", &pid, &fd, &n) != 2 || !n)
		return 0;
	rest += n;
	if (sscanf(rest, "#PF at 0x%llx", &addr) == 1) {
		st->faults++;
		return fault_add(f, pid, addr, t);
	}
	if (sscanf(rest, "uffd_copy: 0x%llx/%llu", &addr, &size) == 2) {
		st->copies++;
		st->copy_bytes += size;
		if (st->first_us < 0)
			st->first_us = t;
		if (t > st->last_us)
			st->last_us = t;
		faults_served(f, pid, addr, size, t, st);
	} else if (sscanf(rest, "zero page at 0x%llx", &addr) == 1) {
		st->zero_pages++;
		faults_served(f, pid, addr, 4096, t, st);
	} else if (sscanf(rest, "Found %ld pages to be handled by UFFD", &tot) == 1) {
		st->pages_total += tot;
	} else if (sscanf(rest, "UFFD transferred pages: (%ld/%ld)", &c, &tot) == 2) {
		st->pages_copied += c;
		st->nprocs++;
	} else if (sscanf(rest, "UFFD pages from the parent images: %ld", &c) == 1) {
		st->pages_parent += c;
	}
	return 0;
}

static int parse_lazy_log(const char *buf, size_t len, struct ml_criu_lazy_stats *st)
{
	const char *p = buf, *end = buf + len, *rest;
	struct faults f = { 0 };
	char line[1024];
	bool timed = false;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	st->first_us = st->last_us = -1;
	while (!ret && next_line(&p, end, line, sizeof(line))) {
		int64_t t = line_time(line, &rest);

		if (t < 0)
			continue;
		timed = true;
		if (!strncmp(rest, "Error ", 6))
			note_error(st, rest);
		else
			ret = lazy_line(st, &f, t, rest);
	}
	free(f.v);
	if (ret)
		return ret;
	return timed ? 0 : -EINVAL;
}

/* the fields every caller's struct ml_criu_lazy_stats has: up to error */
#define LAZY_STATS_MIN (offsetof(struct ml_criu_lazy_stats, error) + 256)

int ml_criu_parse_lazy_log(const char *buf, size_t len, struct ml_criu_lazy_stats *st)
{
	struct ml_criu_lazy_stats v = { 0 };
	int ret;

	/* the caller's struct as large as its sz says (memlens/opts.h): cleared, or refused */
	ret = ml_result_store(st, &v, sizeof(v), LAZY_STATS_MIN, "ml_criu_lazy_stats", NULL);
	if (ret)
		return ret;
	ret = parse_lazy_log(buf, len, &v);
	ml_result_store(st, &v, sizeof(v), LAZY_STATS_MIN, "ml_criu_lazy_stats", NULL);
	return ret;
}
