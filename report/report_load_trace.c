// SPDX-License-Identifier: MIT
/*
 * The report's input from the tracers: the "leaks", "slab" and "oom_kill"
 * lines (and their "_interval" and summary lines) that memlens leaks, slab
 * and oom write with --json. Also the helpers every reader shares.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_leaks.h"
#include "memlens/format_oom.h"
#include "memlens/format_slab.h"
#include "report_load.h"

int mlr_rl_bad(const struct line_ctx *c, const char *fmt, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return ml_err_set(c->err, EINVAL,
			  "%s:%ld: %s; give report the JSON Lines that memlens writes/snapshot/"
			  "faults/migrate-model/leaks/slab/oom --json write",
			  c->src, c->lineno, msg);
}

int mlr_rl_rec_err(const struct line_ctx *c, int ret)
{
	if (ret == -ENOMEM)
		return mlr_rl_oom(c);
	return mlr_rl_bad(c, "%.200s", c->err->msg);
}

bool mlr_rl_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t nc;
	void *p;

	if (n < *cap)
		return true;
	nc = *cap ? *cap * 2 : 16;
	p = realloc(*arr, nc * size);
	if (!p)
		return false;
	memset((char *)p + *cap * size, 0, (nc - *cap) * size);
	*arr = p;
	*cap = nc;
	return true;
}

int mlr_rl_oom(const struct line_ctx *c)
{
	return ml_err_set(c->err, ENOMEM,
			  "%s:%ld: out of memory; give report fewer or smaller files", c->src,
			  c->lineno);
}

/* A count or pid from a double, clamped: a cast of 1e300 to long is undefined. */
long mlr_rl_long(double v)
{
	if (!(v > -1e15))
		return v < 0 ? -1000000000000000L : 0;
	return v < 1e15 ? (long)v : 1000000000000000L;
}

static void copy_str(char *dst, size_t size, const char *s)
{
	snprintf(dst, size, "%s", s ? s : "");
}

/* ---- leaks ---------------------------------------------------------------- */

static void free_stacks(struct ml_rep_leaks *l)
{
	for (size_t i = 0; i < l->nstacks; i++) {
		for (size_t j = 0; j < l->stacks[i].nframes; j++)
			free(l->stacks[i].frames[j]);
		free(l->stacks[i].frames);
	}
	free(l->stacks);
	free(l->sizes);
	l->stacks = NULL;
	l->sizes = NULL;
	l->nstacks = l->nsizes = 0;
}

static struct ml_rep_leaks *leaks_for(const struct line_ctx *c, long pid)
{
	struct ml_report *r = c->r;
	struct ml_rep_leaks *l;

	for (size_t i = 0; i < r->nl; i++)
		if (r->l[i].pid == pid && !strcmp(r->l[i].src, c->src))
			return &r->l[i];
	l = realloc(r->l, (r->nl + 1) * sizeof(*l));
	if (!l)
		return NULL;
	r->l = l;
	l = &r->l[r->nl];
	memset(l, 0, sizeof(*l));
	l->src = strdup(c->src);
	if (!l->src)
		return NULL;
	l->pid = pid;
	r->nl++;
	return l;
}

/* "main+0x18d (leaky)" -> "main (leaky)", as leaks --folded names frames */
static char *frame_name(const char *s)
{
	const char *plus = strstr(s, "+0x"), *paren = strstr(s, " (");
	char *out;

	if (!plus || !paren || plus > paren || !plus[3])
		return strdup(s);
	out = malloc(strlen(s) + 1);
	if (out)
		sprintf(out, "%.*s%s", (int)(plus - s), s, paren);
	return out;
}

static int leak_stack(const struct line_ctx *c, struct ml_rep_leak_stack *st,
		      const struct ml_leaks_stack_rec *s)
{
	size_t n = s->nstack;

	st->count = (double)s->count;
	st->bytes = (double)s->bytes;
	st->frames = calloc(n ? n : 1, sizeof(*st->frames));
	if (!st->frames)
		return mlr_rl_oom(c);
	/* innermost first in the JSON; the picture reads from the outermost down */
	for (size_t i = 0; i < n; i++) {
		st->frames[i] = frame_name(s->stack[n - 1 - i]);
		if (!st->frames[i])
			return mlr_rl_oom(c);
		st->nframes++;
	}
	return 0;
}

static int leak_tables(const struct line_ctx *c, struct ml_rep_leaks *l,
		       const struct ml_leaks_rec *rec)
{
	l->sizes = calloc(rec->nsizes ? rec->nsizes : 1, sizeof(*l->sizes));
	l->stacks = calloc(rec->nstacks ? rec->nstacks : 1, sizeof(*l->stacks));
	if (!l->sizes || !l->stacks)
		return mlr_rl_oom(c);
	for (size_t i = 0; i < rec->nsizes; i++) {
		struct ml_rep_leak_size *z = &l->sizes[l->nsizes++];

		z->size = (double)rec->sizes[i].size;
		z->count = (double)rec->sizes[i].count;
		z->bytes = (double)rec->sizes[i].bytes;
	}
	for (size_t i = 0; i < rec->nstacks; i++) {
		int ret = leak_stack(c, &l->stacks[l->nstacks++], &rec->stacks[i]);

		if (ret)
			return ret;
	}
	return 0;
}

static int add_leaks(const struct line_ctx *c, const struct ml_leaks_rec *rec)
{
	struct ml_rep_leaks *l = leaks_for(c, mlr_rl_long((double)rec->pid));

	if (!l)
		return mlr_rl_oom(c);
	copy_str(l->allocator, sizeof(l->allocator), rec->allocator);
	if (rec->interval) {
		struct ml_rep_leak_point *p;

		if (!mlr_rl_grow((void **)&l->pt, &l->cpt, l->npt, sizeof(*l->pt)))
			return mlr_rl_oom(c);
		p = &l->pt[l->npt++];
		p->t_ms = (double)rec->elapsed_ms;
		p->outstanding = (double)rec->outstanding;
		p->outstanding_bytes = (double)rec->outstanding_bytes;
		return 0;
	}
	/* one run per file and pid: a later "leaks" line replaces an earlier one */
	free_stacks(l);
	l->have_final = true;
	l->outstanding_bytes = (double)rec->outstanding_bytes;
	l->outstanding = (double)rec->outstanding;
	l->mallocs = (double)rec->mallocs;
	l->frees = (double)rec->frees;
	l->sample_bytes = (double)rec->sample_bytes;
	l->outstanding_bytes_stderr = (double)rec->outstanding_bytes_stderr;
	l->no_stack = (double)rec->outstanding_no_stack;
	l->stacks_kept = (double)rec->stacks_kept;
	l->no_stack_bytes = (double)rec->outstanding_no_stack_bytes;
	return leak_tables(c, l, rec);
}

/* "leaks" and "leaks_interval" (memlens/format_leaks.h) */
int mlr_rl_leaks(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_leaks_rec rec;
	int ret = ml_fmt_leaks_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else
		ret = add_leaks(c, &rec);
	ml_fmt_leaks_free(&rec);
	return ret;
}

void mlr_rl_free_leaks(struct ml_rep_leaks *l)
{
	free_stacks(l);
	free(l->src);
	free(l->pt);
}

/* ---- slab ----------------------------------------------------------------- */

static struct ml_rep_slab *slab_for(const struct line_ctx *c)
{
	struct ml_report *r = c->r;
	struct ml_rep_slab *s;

	for (size_t i = 0; i < r->nsl; i++)
		if (!strcmp(r->sl[i].src, c->src))
			return &r->sl[i];
	s = realloc(r->sl, (r->nsl + 1) * sizeof(*s));
	if (!s)
		return NULL;
	r->sl = s;
	s = &r->sl[r->nsl];
	memset(s, 0, sizeof(*s));
	s->src = strdup(c->src);
	if (!s->src)
		return NULL;
	r->nsl++;
	return s;
}

static long slab_cache(struct ml_rep_slab *s, const char *name)
{
	for (size_t i = 0; i < s->ncache; i++)
		if (!strcmp(s->cache[i].name, name))
			return (long)i;
	if (!mlr_rl_grow((void **)&s->cache, &s->ccache, s->ncache, sizeof(*s->cache)))
		return -1;
	copy_str(s->cache[s->ncache].name, sizeof(s->cache[0].name), name);
	return (long)s->ncache++;
}

static int slab_row(const struct line_ctx *c, struct ml_rep_slab *s,
		    const struct ml_slab_row_rec *row, bool interval)
{
	long k = slab_cache(s, row->cache);

	if (k < 0)
		return mlr_rl_oom(c);
	if (interval) {
		struct ml_rep_slab_cell *cell;

		if (!mlr_rl_grow((void **)&s->cell, &s->ccell, s->ncell, sizeof(*s->cell)))
			return mlr_rl_oom(c);
		cell = &s->cell[s->ncell++];
		cell->iv = (uint32_t)(s->niv - 1);
		cell->cache = (uint32_t)k;
		cell->allocs = (double)row->allocs;
		cell->frees = (double)row->frees;
		if (!s->cache[k].in_final) {
			s->cache[k].allocs += cell->allocs;
			s->cache[k].frees += cell->frees;
			s->cache[k].net = s->cache[k].allocs - s->cache[k].frees;
		}
		return 0;
	}
	s->cache[k].in_final = true;
	s->cache[k].allocs = (double)row->allocs;
	s->cache[k].frees = (double)row->frees;
	s->cache[k].net = (double)row->net;
	s->cache[k].net_kb = (double)row->net_kb;
	return 0;
}

static int add_slab(const struct line_ctx *c, const struct ml_slab_rec *rec)
{
	struct ml_rep_slab *s = slab_for(c);

	if (!s)
		return mlr_rl_oom(c);
	copy_str(s->kmalloc, sizeof(s->kmalloc), rec->kmalloc);
	if (rec->interval) {
		if (!mlr_rl_grow((void **)&s->iv_ms, &s->civ, s->niv, sizeof(*s->iv_ms)))
			return mlr_rl_oom(c);
		s->iv_ms[s->niv++] = (double)rec->elapsed_ms;
	} else {
		s->have_final = true;
		s->unseen_allocs = (double)rec->unseen_allocs;
	}
	for (size_t i = 0; i < rec->nrows; i++) {
		int ret = slab_row(c, s, &rec->rows[i], rec->interval);

		if (ret)
			return ret;
	}
	return 0;
}

/* "slab" and "slab_interval" (memlens/format_slab.h) */
int mlr_rl_slab(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_slab_rec rec;
	int ret = ml_fmt_slab_read(o, &rec, c->err);

	if (ret)
		ret = mlr_rl_rec_err(c, ret);
	else
		ret = add_slab(c, &rec);
	ml_fmt_slab_free(&rec);
	return ret;
}

void mlr_rl_free_slab(struct ml_rep_slab *s)
{
	free(s->src);
	free(s->iv_ms);
	free(s->cache);
	free(s->cell);
}

/* ---- oom ------------------------------------------------------------------ */

static struct ml_rep_oom *oom_for(const struct line_ctx *c)
{
	struct ml_report *r = c->r;
	struct ml_rep_oom *m;

	for (size_t i = 0; i < r->no; i++)
		if (!strcmp(r->o[i].src, c->src))
			return &r->o[i];
	m = realloc(r->o, (r->no + 1) * sizeof(*m));
	if (!m)
		return NULL;
	r->o = m;
	m = &r->o[r->no];
	memset(m, 0, sizeof(*m));
	m->src = strdup(c->src);
	if (!m->src)
		return NULL;
	r->no++;
	return m;
}

int mlr_rl_oom_kill(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_rep_oom *m = oom_for(c);
	struct ml_oom_kill_rec rec;
	struct ml_rep_oom_kill *k;
	int ret;

	if (!m || !mlr_rl_grow((void **)&m->kill, &m->ckill, m->nkill, sizeof(*m->kill)))
		return mlr_rl_oom(c);
	ret = ml_fmt_oom_kill_read(o, &rec, c->err);
	if (ret)
		return mlr_rl_rec_err(c, ret);
	k = &m->kill[m->nkill++];
	memset(k, 0, sizeof(*k));
	k->time_ms = (double)rec.time_ms;
	k->victim_pid = mlr_rl_long((double)rec.victim_pid);
	k->trigger_pid = rec.trigger_pid >= 0 ? mlr_rl_long((double)rec.trigger_pid) : -1;
	copy_str(k->victim_comm, sizeof(k->victim_comm), rec.victim_comm);
	copy_str(k->trigger_comm, sizeof(k->trigger_comm), rec.trigger_comm);
	copy_str(k->scope, sizeof(k->scope), rec.scope);
	/* the report keeps the path's first 127 bytes */
	snprintf(k->cgroup, sizeof(k->cgroup), "%.*s", (int)sizeof(k->cgroup) - 1, rec.cgroup);
	k->anon_rss_kb = (double)rec.anon_rss_kb;
	k->file_rss_kb = (double)rec.file_rss_kb;
	k->shmem_rss_kb = (double)rec.shmem_rss_kb;
	k->total_vm_kb = (double)rec.total_vm_kb;
	k->limit_kb = (double)rec.limit_kb;
	return 0;
}

/* "oom_interval" and "oom_summary" (memlens/format_oom.h) */
int mlr_rl_oom_count(const struct line_ctx *c, const struct ml_json *o)
{
	struct ml_rep_oom *m = oom_for(c);
	struct ml_oom_count_rec rec;
	int ret;

	if (!m)
		return mlr_rl_oom(c);
	ret = ml_fmt_oom_count_read(o, &rec, c->err);
	if (ret)
		return mlr_rl_rec_err(c, ret);
	if (!rec.interval) {
		m->have_summary = true;
		m->kills = (double)rec.kills;
		m->lost = (double)rec.lost;
		return 0;
	}
	if (!mlr_rl_grow((void **)&m->iv_ms, &m->civ, m->niv, sizeof(*m->iv_ms)))
		return mlr_rl_oom(c);
	/* both arrays grow together: the second one's capacity is the first's */
	m->iv_ms[m->niv] = (double)rec.elapsed_ms;
	{
		double *k = realloc(m->iv_kills, m->civ * sizeof(*k));

		if (!k)
			return mlr_rl_oom(c);
		m->iv_kills = k;
	}
	m->iv_kills[m->niv++] = (double)rec.kills;
	return 0;
}

void mlr_rl_free_oom(struct ml_rep_oom *m)
{
	free(m->src);
	free(m->kill);
	free(m->iv_ms);
	free(m->iv_kills);
}

/* ---- faults -i ------------------------------------------------------------ */

int mlr_rl_faults_interval(const struct line_ctx *c, const struct ml_faults_rec *rec)
{
	struct ml_report *r = c->r;
	struct ml_rep_fault_series *fs = NULL;
	struct ml_rep_fault_point *p;

	for (size_t i = 0; i < r->nfs && !fs; i++)
		if (!strcmp(r->fs[i].src, c->src))
			fs = &r->fs[i];
	if (!fs) {
		fs = realloc(r->fs, (r->nfs + 1) * sizeof(*fs));
		if (!fs)
			return mlr_rl_oom(c);
		r->fs = fs;
		fs = &r->fs[r->nfs];
		memset(fs, 0, sizeof(*fs));
		fs->src = strdup(c->src);
		if (!fs->src)
			return mlr_rl_oom(c);
		r->nfs++;
	}
	if (!mlr_rl_grow((void **)&fs->pt, &fs->cpt, fs->npt, sizeof(*fs->pt)))
		return mlr_rl_oom(c);
	p = &fs->pt[fs->npt++];
	p->t_ms = (double)rec->elapsed_ms;
	for (size_t i = 0; i < rec->nrows; i++) {
		p->minor += (double)rec->rows[i].minor;
		p->major += (double)rec->rows[i].major;
	}
	return 0;
}
