/* SPDX-License-Identifier: MIT */
/* Internal to the report's input reader: one line's context and its helpers. */
#ifndef MEMLENS_REPORT_LOAD_H
#define MEMLENS_REPORT_LOAD_H

#include "memlens/format_faults.h"
#include "memlens/json.h"
#include "memlens/report.h"

#define TYPES_KNOWN                                                                                \
	"interval, summary, snapshot, faults, faults_interval, migrate_model, leaks, "             \
	"leaks_interval, slab, slab_interval, oom_kill, oom_interval, oom_summary"

struct line_ctx {
	struct ml_report *r;
	const char *src;
	long lineno;
	struct ml_err *err;
};

/* -EINVAL with "FILE:LINE: @fmt" (@what its one %s) and what report reads. */
int mlr_rl_bad(const struct line_ctx *c, const char *fmt, const char *what);
/* -ENOMEM with the file and line. */
int mlr_rl_oom(const struct line_ctx *c);
/* Room for element @n of *@arr (elements of @size, zeroed when new). */
bool mlr_rl_grow(void **arr, size_t *cap, size_t n, size_t size);
/* A format reader's error @ret, with the file and line. */
int mlr_rl_rec_err(const struct line_ctx *c, int ret);
/* A count or pid from a double, clamped to +-1e15. */
long mlr_rl_long(double v);

/* The tracers' lines: memlens leaks, slab, oom (report_load_trace.c). */
int mlr_rl_leaks(const struct line_ctx *c, const struct ml_json *o);
int mlr_rl_slab(const struct line_ctx *c, const struct ml_json *o);
int mlr_rl_oom_kill(const struct line_ctx *c, const struct ml_json *o);
int mlr_rl_oom_count(const struct line_ctx *c, const struct ml_json *o);
/* "faults_interval": the faults of one interval, summed over its rows. */
int mlr_rl_faults_interval(const struct line_ctx *c, const struct ml_faults_rec *rec);
void mlr_rl_free_leaks(struct ml_rep_leaks *l);
void mlr_rl_free_slab(struct ml_rep_slab *s);
void mlr_rl_free_oom(struct ml_rep_oom *m);

#endif
