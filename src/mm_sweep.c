// SPDX-License-Identifier: MIT
/*
 * memlens migrate-model --sweep: the hot-range policy run over a grid of
 * -c and --cool on one trace, against no exclusion, and the settings that
 * send the fewest bytes (with the downtime kept at none's, and at all).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exitcode.h"
#include "memlens/jsonw.h"
#include "memlens/hotrange.h"
#include "memlens/migrate_model.h"
#include "memlens/units.h"
#include "mm_sweep.h"
#include "table.h"

static const int sweep_c[] = { 1, 2, 3 };
static const int sweep_cool[] = { 1, 2, 3, 5, 8, ML_HOTRANGE_MAX_INTERVALS };

#define NC (sizeof(sweep_c) / sizeof(sweep_c[0]))
#define NCOOL (sizeof(sweep_cool) / sizeof(sweep_cool[0]))
#define NSET (NC * NCOOL)

struct sweep_row {
	int c, cool; /* 0, 0: none */
	size_t nrounds;
	uint64_t total, precopy, final;
	double downtime_ms, postcopy_downtime_ms;
};

static void row_from(struct sweep_row *s, int c, int cool, const struct ml_mm_result *r)
{
	*s = (struct sweep_row){ .c = c,
				 .cool = cool,
				 .nrounds = r->nrounds,
				 .total = r->total_bytes,
				 .precopy = r->total_bytes - r->final_round_bytes,
				 .final = r->final_round_bytes,
				 .downtime_ms = r->downtime_ms,
				 .postcopy_downtime_ms = r->postcopy_downtime_ms };
}

/* fewest bytes, then the shorter downtime; with @kept only those at most none's */
static int best(const struct sweep_row *rows, size_t n, const struct sweep_row *none, bool kept)
{
	int b = -1;

	for (size_t i = 0; i < n; i++) {
		if (kept && rows[i].downtime_ms > none->downtime_ms)
			continue;
		if (b < 0 || rows[i].total < rows[b].total ||
		    (rows[i].total == rows[b].total && rows[i].downtime_ms < rows[b].downtime_ms))
			b = (int)i;
	}
	return b;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

static void json_row(struct ml_jw *w, const char *key, const struct sweep_row *s,
		     const struct sweep_row *none)
{
	if (key)
		ml_jw_key(w, key);
	if (!s) {
		ml_jw_null(w);
		return;
	}
	ml_jw_obj(w);
	if (s != none) {
		ml_jw_kint(w, "consecutive", s->c);
		ml_jw_kint(w, "cool", s->cool);
	}
	ml_jw_kuint(w, "rounds", s->nrounds);
	ml_jw_kuint(w, "total_bytes", s->total);
	ml_jw_kuint(w, "precopy_bytes", s->precopy);
	ml_jw_kuint(w, "final_round_bytes", s->final);
	ml_jw_kdbl(w, "downtime_ms", s->downtime_ms);
	ml_jw_kdbl(w, "postcopy_downtime_ms", s->postcopy_downtime_ms);
	if (s != none) {
		ml_jw_kdbl(w, "total_vs_none", ratio(s->total, none->total));
		ml_jw_kdbl(w, "precopy_vs_none", ratio(s->precopy, none->precopy));
		ml_jw_kdbl(w, "downtime_vs_none", ratio(s->downtime_ms, none->downtime_ms));
	}
	ml_jw_obj_end(w);
}

static void print_json(const struct sweep_row *rows, const struct sweep_row *none, int bk, int bb)
{
	struct ml_jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "migrate_model_sweep");
	json_row(&w, "none", none, none);
	ml_jw_key(&w, "settings");
	ml_jw_arr(&w);
	for (size_t i = 0; i < NSET; i++)
		json_row(&w, NULL, &rows[i], none);
	ml_jw_arr_end(&w);
	json_row(&w, "fewest_bytes_downtime_kept", bk >= 0 ? &rows[bk] : NULL, none);
	json_row(&w, "fewest_bytes", bb >= 0 ? &rows[bb] : NULL, none);
	ml_jw_obj_end(&w);
}

/* one line of the table: @s (none itself: "none" and "-") and its ratios to @none */
static void table_row_of(struct table *tb, const struct sweep_row *s, const struct sweep_row *none,
			 uint64_t div)
{
	table_row(tb);
	if (s == none) {
		table_cell(tb, "none");
		table_cell(tb, "-");
	} else {
		table_cell(tb, "%d", s->c);
		table_cell(tb, "%d", s->cool);
	}
	table_cell(tb, "%zu", s->nrounds);
	table_cell(tb, "%llu", (unsigned long long)ml_in_unit(s->total, div));
	table_cell(tb, "%.2f", ratio(s->total, none->total));
	table_cell(tb, "%llu", (unsigned long long)ml_in_unit(s->precopy, div));
	table_cell(tb, "%.2f", ratio(s->precopy, none->precopy));
	table_cell(tb, "%llu", (unsigned long long)ml_in_unit(s->final, div));
	table_cell(tb, "%.1f", s->downtime_ms);
	table_cell(tb, "%.2f", ratio(s->downtime_ms, none->downtime_ms));
}

static void print_human(const char *file, const struct sweep_row *rows,
			const struct sweep_row *none, int bk, int bb)
{
	static const struct table_col cols[] = {
		{ "-c", TABLE_RIGHT, 0, false },	  { "--cool", TABLE_RIGHT, 0, false },
		{ "ROUNDS", TABLE_RIGHT, 1, false },	  { "TOTAL", TABLE_RIGHT, 0, false },
		{ "xNONE", TABLE_RIGHT, 0, false },	  { "PRECOPY", TABLE_RIGHT, 0, false },
		{ "xNONE", TABLE_RIGHT, 0, false },	  { "FINAL", TABLE_RIGHT, 0, false },
		{ "DOWNTIME_MS", TABLE_RIGHT, 0, false }, { "xNONE", TABLE_RIGHT, 0, false },
	};
	int width = table_width(stdout);
	const char *unit;
	uint64_t max = none->total, div;
	struct table *tb;

	for (size_t i = 0; i < NSET; i++)
		if (rows[i].total > max)
			max = rows[i].total;
	div = ml_size_unit(max, 6, &unit);
	table_wrap(stdout, width, 2,
		   "trace %s: the hot-range policy (pages written in -c intervals in a row, "
		   "cold after --cool unwritten) against no exclusion; sizes in %s, "
		   "PRECOPY: the pre-dump rounds, FINAL: the final dump",
		   file, unit);
	putchar('\n');
	tb = table_new(cols, 10);
	table_row_of(tb, none, none, div);
	for (size_t i = 0; i < NSET; i++)
		table_row_of(tb, &rows[i], none, div);
	table_print(tb, stdout, width, 0, 0);
	table_free(tb);
	putchar('\n');
	if (bk >= 0)
		table_wrap(stdout, width, 2,
			   "fewest bytes with the downtime at most none's: -c %d --cool %d "
			   "(%.2fx none's bytes, %.2fx its downtime)",
			   rows[bk].c, rows[bk].cool, ratio(rows[bk].total, none->total),
			   ratio(rows[bk].downtime_ms, none->downtime_ms));
	else
		table_wrap(stdout, width, 2,
			   "no setting keeps the downtime at none's: every one leaves more to "
			   "the final dump");
	if (bb >= 0 && bb != bk)
		table_wrap(stdout, width, 2,
			   "fewest bytes: -c %d --cool %d (%.2fx none's bytes, %.2fx its "
			   "downtime; with --postcopy the final dump's pages follow the restore, "
			   "the downtime is its fixed parts)",
			   rows[bb].c, rows[bb].cool, ratio(rows[bb].total, none->total),
			   ratio(rows[bb].downtime_ms, none->downtime_ms));
}

int mm_sweep(const char *file, const struct ml_mm_trace *t, const struct ml_mm_params *base,
	     bool json, struct ml_err *err)
{
	struct sweep_row rows[NSET], none = { 0 };
	bool progress = !json && isatty(STDERR_FILENO);
	int bk, bb;

	/* none, then hot-range alone with each setting */
	for (size_t i = 0; i <= NSET; i++) {
		struct ml_mm_params p = *base;
		ML_MM_RESULTS(res);

		p.policies = ML_MM_POLICY(i ? ML_MM_HOT_RANGE : ML_MM_NONE);
		if (i) {
			p.hot_intervals = sweep_c[(i - 1) / NCOOL];
			p.hot_cool = sweep_cool[(i - 1) % NCOOL];
		}
		if (progress)
			fprintf(stderr, "\rmigrate-model: %zu of %zu runs", i + 1,
				(size_t)NSET + 1);
		if (ml_mm_run(t, &p, res, err)) {
			if (progress)
				fputc('\n', stderr);
			return exit_code_for(-err->code);
		}
		if (!i)
			row_from(&none, 0, 0, &res[ML_MM_NONE]);
		else
			row_from(&rows[i - 1], p.hot_intervals, p.hot_cool, &res[ML_MM_HOT_RANGE]);
		ml_mm_results_free(res);
	}
	if (progress)
		fprintf(stderr, "\r%*s\r", 60, "");
	bk = best(rows, NSET, &none, true);
	bb = best(rows, NSET, &none, false);
	if (json)
		print_json(rows, &none, bk, bb);
	else
		print_human(file, rows, &none, bk, bb);
	return EXIT_OK;
}
