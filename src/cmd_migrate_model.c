// SPDX-License-Identifier: MIT
/* memlens migrate-model: replay a write trace through a pre-copy migration model. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "command.h"
#include "memlens/jsonw.h"
#include "memlens/lines.h"
#include "memlens/migrate_model.h"

static const char usage_text[] =
	"usage: memlens migrate-model FILE --bandwidth MBPS --round-interval SEC [options]\n"
	"\n"
	"Replay a write trace recorded by `memlens writes --record FILE` through an\n"
	"iterative pre-copy migration (pre-dump rounds every SEC seconds, then a\n"
	"stop-and-copy dump) and compare three policies: none (no exclusion), hot-vma\n"
	" and\n"
	"hot-range (only the page spans written in each of the last N intervals).\n"
	"\n"
	"  FILE                     the trace ('-' for stdin)\n"
	"  -b, --bandwidth MBPS     link bandwidth in MiB/s (required, > 0)\n"
	"  -r, --round-interval SEC seconds between pre-dump rounds (required, > 0)\n"
	"  -m, --max-rounds R       at most R pre-dump rounds before the final dump (default 10)\n"
	"  -s, --stop-threshold MB  stop pre-copy once a round sends <= MB MiB (default 0)\n"
	"  -n, --hot-intervals N    hot-range: written in N intervals in a row (default 3)\n"
	"      --json               one JSON object on one line\n"
	"  -h, --help               this text\n"
	"\n"
	"Downtime = bytes of the final (stop-and-copy) round / bandwidth.\n";

enum { OPT_JSON = 1000 };

struct mm_cli {
	const char *file;
	struct mm_params p;
	bool json;
};

/* 0, or the exit status after printing why (2 bad input, 1 a read error). */
static int read_trace(const char *path, struct mm_trace *t)
{
	struct ml_err err = { 0 };
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	const char *name = f == stdin ? "(stdin)" : path;
	struct ml_lines in;
	const char *line;
	size_t n;
	int ret;

	if (!f) {
		cli_error("migrate-model", "cannot open the trace %s: %s", path, strerror(errno));
		return EXIT_USAGE;
	}
	ret = ml_lines_check_file(f, name, &err);
	ml_lines_init(&in, f, name, 0);
	while (!ret && (ret = ml_lines_next(&in, &line, &n, &err)) > 0) {
		ret = ml_mm_trace_add_line(t, line, n, &err);
		if (ret)
			ml_err_wrap(&err, "%s:%ld", name, in.lineno);
	}
	ml_lines_free(&in);
	if (f != stdin)
		fclose(f);
	if (ret)
		cli_error("migrate-model", "%s", err.msg);
	return !ret ? 0 : ret == -EIO || ret == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
}

static void print_json(const struct mm_cli *c, const struct mm_result *r)
{
	struct jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "migrate_model");
	ml_jw_kdbl(&w, "bandwidth_mbps", c->p.bandwidth_mbps);
	ml_jw_kdbl(&w, "round_interval_s", c->p.round_interval_s);
	ml_jw_key(&w, "policies");
	ml_jw_arr(&w);
	for (int k = 0; k < MM_NPOLICIES; k++) {
		ml_jw_obj(&w);
		ml_jw_kstr(&w, "name", ml_mm_policy_name(r[k].policy));
		ml_jw_key(&w, "rounds");
		ml_jw_arr(&w);
		for (size_t i = 0; i < r[k].nrounds; i++) {
			ml_jw_obj(&w);
			ml_jw_kint(&w, "round", r[k].rounds[i].round);
			ml_jw_kuint(&w, "bytes", r[k].rounds[i].bytes);
			ml_jw_obj_end(&w);
		}
		ml_jw_arr_end(&w);
		ml_jw_kuint(&w, "total_bytes", r[k].total_bytes);
		ml_jw_kuint(&w, "final_round_bytes", r[k].final_round_bytes);
		ml_jw_kdbl(&w, "downtime_ms", r[k].downtime_ms);
		ml_jw_obj_end(&w);
	}
	ml_jw_arr_end(&w);
	ml_jw_obj_end(&w);
}

static void print_human(const struct mm_cli *c, const struct mm_trace *t, const struct mm_result *r)
{
	char a[16], b[16];

	printf("trace %s: %zu intervals over %.1f s; bandwidth %.1f MiB/s, a pre-dump round every "
	       "%.1f s\n\n",
	       c->file, t->n, t->iv[t->n - 1].t_ms / 1000.0, c->p.bandwidth_mbps,
	       c->p.round_interval_s);
	printf("%-10s %6s %12s %12s %12s  %s\n", "policy", "rounds", "total", "final round",
	       "downtime", "bytes per round");
	for (int k = 0; k < MM_NPOLICIES; k++) {
		printf("%-10s %6zu %12s %12s %9.1f ms ", ml_mm_policy_name(r[k].policy),
		       r[k].nrounds, fmt_bytes(r[k].total_bytes, a, sizeof(a)),
		       fmt_bytes(r[k].final_round_bytes, b, sizeof(b)), r[k].downtime_ms);
		for (size_t i = 0; i < r[k].nrounds; i++)
			printf(" %s", fmt_bytes(r[k].rounds[i].bytes, a, sizeof(a)));
		printf("\n");
	}
	if (r[0].downtime_ms > 0)
		printf("\ndowntime vs none: hot-vma %.2fx, hot-range %.2fx; total bytes vs none: "
		       "hot-vma %.2fx, hot-range %.2fx\n",
		       r[1].downtime_ms / r[0].downtime_ms, r[2].downtime_ms / r[0].downtime_ms,
		       r[0].total_bytes ? (double)r[1].total_bytes / r[0].total_bytes : 0.0,
		       r[0].total_bytes ? (double)r[2].total_bytes / r[0].total_bytes : 0.0);
}

static int bad(const char *what, const char *arg)
{
	cli_error("migrate-model", "%s, not '%s' (see --help)", what, arg);
	return EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct mm_cli *c)
{
	static const struct option opts[] = {
		{ "bandwidth", required_argument, NULL, 'b' },
		{ "round-interval", required_argument, NULL, 'r' },
		{ "max-rounds", required_argument, NULL, 'm' },
		{ "stop-threshold", required_argument, NULL, 's' },
		{ "hot-intervals", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "b:r:m:s:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (parse_double(optarg, 1e-6, 1e9, &c->p.bandwidth_mbps))
				return bad("--bandwidth must be a positive number of MiB/s",
					   optarg);
			break;
		case 'r':
			if (parse_double(optarg, 0.001, 1e6, &c->p.round_interval_s))
				return bad("--round-interval must be a positive number of seconds",
					   optarg);
			break;
		case 'm':
			if (parse_long(optarg, 1, 10000, &v))
				return bad("--max-rounds must be 1..10000", optarg);
			c->p.max_rounds = (int)v;
			break;
		case 's':
			if (parse_double(optarg, 0, 1e9, &c->p.stop_threshold_mb))
				return bad("--stop-threshold must be a number of MiB >= 0", optarg);
			break;
		case 'n':
			if (parse_long(optarg, 1, 1000, &v))
				return bad("--hot-intervals must be 1..1000", optarg);
			c->p.hot_intervals = (int)v;
			break;
		case OPT_JSON:
			c->json = true;
			break;
		case 'h':
			return cli_usage(usage_text, true);
		default:
			return cli_usage(usage_text, false);
		}
	}
	if (optind + 1 != argc) {
		cli_error("migrate-model", "give exactly one trace FILE (see --help)");
		return EXIT_USAGE;
	}
	c->file = argv[optind];
	if (!c->p.bandwidth_mbps || !c->p.round_interval_s) {
		cli_error("migrate-model",
			  "--bandwidth and --round-interval are required (see --help)");
		return EXIT_USAGE;
	}
	return 0;
}

static int cmd_migrate_model(int argc, char **argv)
{
	struct mm_result res[MM_NPOLICIES];
	struct ml_err err = { 0 };
	struct mm_cli c = { 0 };
	struct mm_trace t;
	int rc;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	ml_mm_trace_init(&t);
	rc = read_trace(c.file, &t);
	if (rc)
		goto out;
	if (ml_mm_run(&t, &c.p, res, &err)) {
		cli_error("migrate-model", "%s: %s", c.file, err.msg);
		rc = exit_code_for(-err.code);
		goto out;
	}
	if (c.json)
		print_json(&c, res);
	else
		print_human(&c, &t, res);
	ml_mm_results_free(res);
out:
	ml_mm_trace_free(&t);
	return rc;
}

MEMLENS_COMMAND(migrate_model, "migrate-model", 17,
		"model pre-copy migration on a write trace: bytes, downtime",
		cmd_migrate_model);
