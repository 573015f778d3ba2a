// SPDX-License-Identifier: MIT
/* The report model's life: reading JSON Lines files, freeing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/lines.h"
#include "report_int.h"
#include "report_load.h"

void ml_report_init(struct ml_report *r)
{
	memset(r, 0, sizeof(*r));
}

static void free_writes(struct ml_rep_writes *w)
{
	free(w->src);
	free(w->also);
	free(w->iv);
	for (size_t i = 0; i < w->nvma; i++)
		free(w->vma[i].path);
	free(w->vma);
	free(w->cell);
	free(w->hint);
	free(w->range);
}

void ml_report_free(struct ml_report *r)
{
	for (size_t i = 0; i < r->nw; i++)
		free_writes(&r->w[i]);
	for (size_t i = 0; i < r->ns; i++) {
		free(r->s[i].src);
		free(r->s[i].pt);
	}
	for (size_t i = 0; i < r->nf; i++) {
		free(r->f[i].src);
		free(r->f[i].rows);
	}
	for (size_t i = 0; i < r->nm; i++) {
		for (size_t j = 0; j < r->m[i].npol; j++)
			free(r->m[i].pol[j].rounds);
		free(r->m[i].pol);
		free(r->m[i].src);
	}
	for (size_t i = 0; i < r->nfs; i++) {
		free(r->fs[i].src);
		free(r->fs[i].pt);
	}
	for (size_t i = 0; i < r->nl; i++)
		mlr_rl_free_leaks(&r->l[i]);
	for (size_t i = 0; i < r->nsl; i++)
		mlr_rl_free_slab(&r->sl[i]);
	for (size_t i = 0; i < r->no; i++)
		mlr_rl_free_oom(&r->o[i]);
	free(r->fs);
	free(r->l);
	free(r->sl);
	free(r->o);
	for (size_t i = 0; i < r->nsrcs; i++)
		free(r->srcs[i]);
	free(r->w);
	free(r->s);
	free(r->f);
	free(r->m);
	free(r->srcs);
	memset(r, 0, sizeof(*r));
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

static int add_src(struct ml_report *r, const char *path, struct ml_err *err)
{
	char **s = realloc(r->srcs, (r->nsrcs + 1) * sizeof(*s));

	if (!s)
		return ml_err_set(err, ENOMEM, "out of memory reading %s", path);
	r->srcs = s;
	s[r->nsrcs] = strdup(path);
	if (!s[r->nsrcs])
		return ml_err_set(err, ENOMEM, "out of memory reading %s", path);
	r->nsrcs++;
	return 0;
}

int ml_report_load_stream(struct ml_report *r, FILE *f, const char *name, struct ml_err *err)
{
	size_t before = r->lines + r->skipped, n;
	struct ml_lines in;
	const char *line;
	int ret;

	ret = add_src(r, name, err);
	if (!ret)
		ret = ml_lines_check_file(f, name, err);
	if (ret)
		return ret;
	ml_lines_init(&in, f, name, r->max_line);
	while ((ret = ml_lines_next(&in, &line, &n, err)) > 0) {
		if (!blank(line, n)) {
			ret = ml_report_load_line(r, name, in.lineno, line, n, err);
			if (ret)
				break;
		}
	}
	if (ret == -EISDIR)
		ret = -EINVAL; /* bad input, like a line that is not JSON */
	if (!ret && r->lines + r->skipped == before)
		ret = ml_err_set(err, EINVAL,
				 "%s:%ld: empty: no JSON lines in the file; give report the output "
				 "of memlens writes/snapshot/faults/migrate-model/leaks/slab/oom "
				 "--json",
				 name, in.lineno + 1);
	ml_lines_free(&in);
	return ret;
}

int ml_report_load_file(struct ml_report *r, const char *path, struct ml_err *err)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (!f)
		return ml_err_set(err, errno, "cannot read %s: %s; check the path and permissions",
				  path, strerror(errno));
	ret = ml_report_load_stream(r, f, path, err);
	fclose(f);
	return ret;
}
