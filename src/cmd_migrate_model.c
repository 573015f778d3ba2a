// SPDX-License-Identifier: MIT
/* memlens migrate-model: replay a write trace through a pre-copy migration model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "table.h"
#include "command.h"
#include "memlens/hotrange.h"
#include "memlens/format_migrate.h"
#include "memlens/format_migrate_model.h"
#include "memlens/json.h"
#include "memlens/lines.h"
#include "memlens/migrate_model.h"
#include "mm_sweep.h"
#include "opts.h"
#include "output.h"

static const char about[] =
	"Replay a write trace recorded by `memlens writes --record FILE` through an\n"
	"iterative pre-copy migration (pre-dump rounds every SEC seconds, then a\n"
	"stop-and-copy dump) and compare three policies: none (no exclusion), hot-vma\n"
	"and hot-range (the hot ranges `memlens writes` reports: pages written in N\n"
	"intervals in a row, cold again after --cool intervals unwritten, at most\n"
	"--hot-ranges ranges).\n";

static const char footer[] =
	"Downtime = the final dump (--dump-fixed + the final round's bytes / bandwidth)\n"
	"+ the restore (--restore-fixed + the tree's memory / --restore-bandwidth; the\n"
	"restore loads every page, those of the pre-dump rounds too) + --freeze-overhead.\n"
	"With post-copy (migrate --postcopy) the process runs again after the fixed\n"
	"parts alone and all of its memory arrives after that, the pre-dump rounds'\n"
	"pages too (memlens's CRIU loads those lazily as well): the last page after\n"
	"the tree's memory / --lazy-bandwidth + --lazy-faults x --lazy-fault-wait.\n"
	"JSON gives that downtime as postcopy_downtime_ms and the last page as\n"
	"postcopy_last_page_ms, the text a line under the table. --calibrate fits the\n"
	"bandwidth, the dump's fixed part and the restore's bandwidth (or, from a\n"
	"post-copy migration, its fixed part and the lazy pages' bandwidth, faults\n"
	"and wait) from what a `memlens migrate --json` run measured; an option given\n"
	"on the command line wins over the fit.\n";

/* -b and -r when not given: a 1 Gbit/s link's worth, migrate's round interval */
#define MM_DEFAULT_BANDWIDTH 100.0
#define MM_DEFAULT_ROUND_S 2.0
/*
 * The fixed parts and the restore's bandwidth when neither given nor fitted:
 * a small tree on a machine of today (CRIU's dump of its state and its restore
 * take tenths of a second, its images are read back from the page cache)
 */
#define MM_DEFAULT_DUMP_FIXED_S 0.1
#define MM_DEFAULT_RESTORE_FIXED_S 0.2
#define MM_DEFAULT_RESTORE_BANDWIDTH 1000.0

struct mm_cli {
	const char *file;
	const char *calibrate; /* a migrate --json record, or NULL */
	struct ml_mm_params p;
	struct ml_mm_fit fit;
	bool json;
	bool sweep; /* --sweep: hot-range over a grid of -c and --cool */
	bool b_given, r_given; /* else the defaults */
	bool df_given, rf_given, rb_given;
	bool lb_given, lf_given, lw_given;
	bool resident; /* the trace has every region's resident pages */
	const char *round_at; /* --round-at SEC,SEC,... */
	int64_t *round_at_ms;
	long lazy_faults;
};

/* 0, or the exit status after printing why (2 bad input, 1 a read error). */
static int read_trace(const char *path, struct ml_mm_trace *t)
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

/* The "migrate" object of @path (memlens migrate --json) into c->fit; 0 or an exit status. */
static int calibrate(struct mm_cli *c)
{
	struct ml_err err = { 0 };
	FILE *f = fopen(c->calibrate, "re");
	struct ml_migrate_rec m = { 0 };
	struct ml_json *j = NULL;
	struct ml_lines in;
	const char *line, *type;
	bool found = false;
	size_t n;
	int ret;

	if (!f) {
		cli_error("migrate-model", "cannot open the migration record %s: %s", c->calibrate,
			  strerror(errno));
		return EXIT_USAGE;
	}
	ret = ml_lines_check_file(f, c->calibrate, &err);
	ml_lines_init(&in, f, c->calibrate, 0);
	while (!ret && !found && (ret = ml_lines_next(&in, &line, &n, &err)) > 0) {
		ret = ml_json_parse(line, n, &j, &err);
		type = ret ? NULL : ml_json_get_str(j, "type");
		if (type && !strcmp(type, "migrate")) {
			found = true;
			ret = ml_fmt_migrate_read(j, &m, &err);
			if (!ret)
				ret = ml_mm_calibrate(&m, &c->fit, &err);
			ml_fmt_migrate_free(&m);
		}
		ml_json_free(j);
		j = NULL;
		if (ret)
			ml_err_wrap(&err, "%s:%ld", c->calibrate, in.lineno);
	}
	ml_lines_free(&in);
	fclose(f);
	if (!ret && !found)
		ret = ml_err_set(&err, EINVAL,
				 "%s: no \"migrate\" line (the output of `memlens migrate --json`)",
				 c->calibrate);
	if (ret < 0) {
		cli_error("migrate-model", "%s", err.msg);
		return ret == -EIO || ret == -ENOMEM ? EXIT_FAIL : EXIT_USAGE;
	}
	if (!c->b_given)
		c->p.bandwidth_mbps = c->fit.bandwidth_mbps;
	if (!c->df_given)
		c->p.dump_fixed_s = c->fit.dump_fixed_s;
	if (!c->rf_given && c->fit.restore_fixed_fitted)
		c->p.restore_fixed_s = c->fit.restore_fixed_s;
	if (!c->rb_given && c->fit.restore_bandwidth_mbps > 0)
		c->p.restore_bandwidth_mbps = c->fit.restore_bandwidth_mbps;
	if (!c->lb_given && c->fit.lazy_bandwidth_mbps > 0)
		c->p.lazy_bandwidth_mbps = c->fit.lazy_bandwidth_mbps;
	if (!c->lf_given && c->fit.lazy_faults)
		c->p.lazy_faults = c->fit.lazy_faults;
	if (!c->lw_given && c->fit.lazy_faults)
		c->p.lazy_fault_s = c->fit.lazy_fault_s;
	return 0;
}

/* The model's results as the record memlens/format_migrate_model.h writes. */
static int print_json(const struct mm_cli *c, const struct ml_mm_result *r)
{
	struct ml_migrate_model_policy_rec pol[ML_MM_NPOLICIES] = { 0 };
	struct ml_migrate_model_rec rec = { .bandwidth_mbps = c->p.bandwidth_mbps,
					    .round_interval_s = c->p.round_interval_s,
					    .freeze_overhead_s = c->p.freeze_overhead_s,
					    .dump_fixed_s = c->p.dump_fixed_s,
					    .restore_fixed_s = c->p.restore_fixed_s,
					    .restore_bandwidth_mbps = c->p.restore_bandwidth_mbps,
					    .lazy_bandwidth_mbps =
						    c->p.lazy_bandwidth_mbps > 0
							    ? c->p.lazy_bandwidth_mbps
							    : c->p.bandwidth_mbps,
					    .lazy_faults = c->p.lazy_faults,
					    .lazy_fault_ms = c->p.lazy_fault_s * 1000.0,
					    .calibrated_from = c->calibrate,
					    .memory_resident = c->resident,
					    .no_precopy = c->p.no_precopy,
					    .keep_hot_out = c->p.keep_hot_out,
					    .pol = pol,
					    .npol = ML_MM_NPOLICIES };
	int ret = 0;
	struct ml_jw w;

	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		struct ml_migrate_model_policy_rec *p = &pol[k];

		snprintf(p->name, sizeof(p->name), "%s", ml_mm_policy_name(r[k].policy));
		p->rounds = calloc(r[k].nrounds ? r[k].nrounds : 1, sizeof(*p->rounds));
		if (!p->rounds) {
			cli_error("migrate-model", "out of memory");
			ret = EXIT_FAIL;
			goto out;
		}
		for (size_t i = 0; i < r[k].nrounds; i++)
			p->rounds[i] = (struct ml_migrate_model_round_rec){ r[k].rounds[i].round,
									    r[k].rounds[i].bytes };
		p->nrounds = r[k].nrounds;
		p->total_bytes = r[k].total_bytes;
		p->final_round_bytes = r[k].final_round_bytes;
		p->downtime_ms = r[k].downtime_ms;
		p->postcopy_downtime_ms = r[k].postcopy_downtime_ms;
		p->postcopy_last_page_ms = r[k].postcopy_last_page_ms;
		p->dump_ms = r[k].dump_ms;
		p->restore_ms = r[k].restore_ms;
		p->restored_bytes = r[k].restored_bytes;
		p->lazy_bytes = r[k].lazy_bytes;
	}
	ml_jw_init(&w, stdout);
	ml_fmt_migrate_model(&w, &rec);
out:
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		free(pol[k].rounds);
	return ret;
}

/* "64 12 3 3": the bytes of each round of @r in @div units */
static char *per_round(const struct ml_mm_result *r, uint64_t div)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < r->nrounds; i++)
		fprintf(f, "%s%llu", i ? " " : "",
			(unsigned long long)ml_in_unit(r->rounds[i].bytes, div));
	fclose(f);
	return buf;
}

static void print_human(const struct mm_cli *c, const struct ml_mm_trace *t,
			const struct ml_mm_result *r)
{
	static const struct table_col cols[] = {
		{ "POLICY", TABLE_LEFT, 0, false },	  { "ROUNDS", TABLE_RIGHT, 1, false },
		{ "TOTAL", TABLE_RIGHT, 0, false },	  { "FINAL", TABLE_RIGHT, 0, false },
		{ "DOWNTIME_MS", TABLE_RIGHT, 0, false },
	};
	int width = table_width(stdout);
	char restore[128] = "";
	uint64_t max = 0, div;
	const char *unit;
	struct table *tb;

	table_wrap(stdout, width, 2,
		   "trace %s: %zu intervals over %.1f s; bandwidth %.1f MiB/s%s, a pre-dump round "
		   "every %.1f s%s",
		   c->file, t->n, t->iv[t->n - 1].t_ms / 1000.0, c->p.bandwidth_mbps,
		   c->b_given ? "" : " (the default; -b sets it)", c->p.round_interval_s,
		   c->r_given ? "" : " (the default; -r sets it)");
	for (int k = 0; k < ML_MM_NPOLICIES; k++)
		if (r[k].total_bytes > max)
			max = r[k].total_bytes;
	div = ml_size_unit(max, 6, &unit);
	printf("\nsizes in %s:\n", unit);
	tb = table_new(cols, 5);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		table_row(tb);
		table_cell(tb, "%s", ml_mm_policy_name(r[k].policy));
		table_cell(tb, "%zu", r[k].nrounds);
		table_cell(tb, "%llu", (unsigned long long)ml_in_unit(r[k].total_bytes, div));
		table_cell(tb, "%llu", (unsigned long long)ml_in_unit(r[k].final_round_bytes, div));
		table_cell(tb, "%.1f", r[k].downtime_ms);
	}
	table_print(tb, stdout, width, 0, 0);
	table_free(tb);
	/* every round, wrapped at spaces, never cut */
	putchar('\n');
	table_wrap(stdout, width, 0, "%s per round, the last one the final dump:", unit);
	for (int k = 0; k < ML_MM_NPOLICIES; k++) {
		char *rounds = per_round(&r[k], div);

		table_wrap(stdout, width, 13, "  %-10s %s", ml_mm_policy_name(r[k].policy),
			   rounds ? rounds : "");
		free(rounds);
	}
	if (r[0].downtime_ms > 0) {
		putchar('\n');
		table_wrap(stdout, width, 2,
			   "downtime vs none: hot-vma %.2fx, hot-range %.2fx; total bytes vs none: "
			   "hot-vma %.2fx, hot-range %.2fx",
			   r[1].downtime_ms / r[0].downtime_ms, r[2].downtime_ms / r[0].downtime_ms,
			   r[0].total_bytes ? (double)r[1].total_bytes / r[0].total_bytes : 0.0,
			   r[0].total_bytes ? (double)r[2].total_bytes / r[0].total_bytes : 0.0);
	}
	putchar('\n');
	table_wrap(stdout, width, 2, "the tree's memory: %s",
		   c->resident ? "the resident pages the trace recorded"
			       : "its VMAs' size (the trace has no resident pages: record it "
				 "again with this memlens for them)");
	if (c->calibrate)
		table_wrap(stdout, width, 2,
			   "fitted from %s: bandwidth %.1f MiB/s (%s), the final dump's fixed part "
			   "%.2f s, the restore's %s",
			   c->calibrate, c->fit.bandwidth_mbps,
			   c->fit.slope ? "the slope of round time on bytes"
					: "bytes / time of its rounds",
			   c->fit.dump_fixed_s,
			   c->fit.restore_fixed_fitted	       ? "fixed part: all of its restore"
			   : c->fit.restore_bandwidth_mbps > 0 ? "bandwidth"
							       : "bandwidth: none to fit");
	if (c->calibrate && c->fit.lazy_bandwidth_mbps > 0)
		table_wrap(stdout, width, 2,
			   "fitted from its lazy pages: %.1f MiB copied in at %.1f MiB/s besides "
			   "%llu page faults waiting %.2f ms each",
			   c->fit.lazy_bytes / ML_MM_MIB, c->fit.lazy_bandwidth_mbps,
			   (unsigned long long)c->fit.lazy_faults, c->fit.lazy_fault_s * 1000.0);
	if (c->p.restore_bandwidth_mbps > 0)
		snprintf(restore, sizeof(restore),
			 " + the tree's memory at %.1f MiB/s: %.1f ms for none's %.1f MiB",
			 c->p.restore_bandwidth_mbps, r[0].restore_ms,
			 r[0].restored_bytes / ML_MM_MIB);
	table_wrap(stdout, width, 2,
		   "DOWNTIME_MS = the final dump (%.2f s + its bytes at %.1f MiB/s) + the restore "
		   "(%.2f s%s)%s",
		   c->p.dump_fixed_s, c->p.bandwidth_mbps, c->p.restore_fixed_s, restore,
		   c->p.freeze_overhead_s > 0 ? " + the freeze overhead" : "");
	table_wrap(stdout, width, 2,
		   "with post-copy: running again after %.1f ms (the fixed parts: no memory in the "
		   "final dump nor in the restore); all of the tree's memory follows (none's %.1f "
		   "MiB, the pre-dump rounds' pages too) at %.1f MiB/s%s, %llu page faults waiting "
		   "%.2f ms each: the last page %.1f ms after the freeze (none; hot-vma %.1f, "
		   "hot-range %.1f)",
		   r[0].postcopy_downtime_ms, r[0].lazy_bytes / ML_MM_MIB,
		   c->p.lazy_bandwidth_mbps > 0 ? c->p.lazy_bandwidth_mbps : c->p.bandwidth_mbps,
		   c->p.lazy_bandwidth_mbps > 0 ? "" : " (the bandwidth; --lazy-bandwidth sets it)",
		   (unsigned long long)c->p.lazy_faults, c->p.lazy_fault_s * 1000.0,
		   r[0].postcopy_last_page_ms, r[1].postcopy_last_page_ms,
		   r[2].postcopy_last_page_ms);
}

/* --round-at "2.5,6,9.25" into c->p.round_at_ms; -1 when it is not that. */
static int parse_round_at(struct mm_cli *c)
{
	const char *q = c->round_at;
	size_t n = 0;

	for (const char *x = q; *x; x++)
		n += *x == ',';
	c->round_at_ms = calloc(n + 1, sizeof(*c->round_at_ms));
	if (!c->round_at_ms)
		return -1;
	for (n = 0; *q; n++) {
		char *end;
		double v = strtod(q, &end);

		if (end == q || (*end && *end != ',') || !(v > 0) || v > 1e9)
			return -1;
		c->round_at_ms[n] = (int64_t)llround(v * 1000.0);
		if (n && c->round_at_ms[n] <= c->round_at_ms[n - 1])
			return -1;
		q = *end ? end + 1 : end;
		if (*end && !*q)
			return -1; /* a trailing comma */
	}
	c->p.round_at_ms = c->round_at_ms;
	c->p.nround_at = n;
	return n ? 0 : -1;
}

static int parse_args(int argc, char **argv, struct mm_cli *c)
{
	const char *out = NULL;
	struct cli_opt opts[] = {
		{ .arg = "FILE", .kind = CLI_ARGS, .help = "the trace ('-' for stdin)" },
		{ .letter = 'b',
		  .name = "bandwidth",
		  .arg = "MIBPS",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.bandwidth_mbps,
		  .min = 1e-6,
		  .max = 1e9,
		  .help = "link bandwidth in MiB/s (default 100, a little under a 1 Gbit/s "
			  "link)" },
		{ .letter = 'F',
		  .name = "freeze-overhead",
		  .arg = "SEC",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.freeze_overhead_s,
		  .min = 0,
		  .max = 1e6,
		  .help = "seconds added to every downtime besides the dump and the "
			  "restore (default 0)" },
		{ .name = "dump-fixed",
		  .arg = "SEC",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.dump_fixed_s,
		  .min = 0,
		  .max = 1e6,
		  .help = "the final dump's fixed part: the tree frozen, CRIU's dump of "
			  "all but the memory, the images' way over (default 0.1, or fitted "
			  "by --calibrate)" },
		{ .name = "restore-fixed",
		  .arg = "SEC",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.restore_fixed_s,
		  .min = 0,
		  .max = 1e6,
		  .help = "the restore's fixed part: the process tree, its files, "
			  "mappings and sockets (default 0.2; --calibrate on a post-copy "
			  "migration fits it)" },
		{ .name = "restore-bandwidth",
		  .arg = "MIBPS",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.restore_bandwidth_mbps,
		  .min = 0,
		  .max = 1e9,
		  .help = "MiB/s the restore loads the tree's memory at; 0: no part per "
			  "byte (default 1000, or fitted by --calibrate)" },
		{ .name = "lazy-bandwidth",
		  .arg = "MIBPS",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.lazy_bandwidth_mbps,
		  .min = 0,
		  .max = 1e9,
		  .help = "post-copy: MiB/s the pages arrive at after the restore; 0: "
			  "the bandwidth (default, or fitted by --calibrate on a post-copy "
			  "migration)" },
		{ .name = "lazy-faults",
		  .arg = "N",
		  .kind = CLI_LONG,
		  .target = &c->lazy_faults,
		  .min = 0,
		  .max = 1000000000000L,
		  .help = "post-copy: page faults the restored tree waits on (default 0, "
			  "or fitted by --calibrate)" },
		{ .name = "lazy-fault-wait",
		  .arg = "SEC",
		  .kind = CLI_DOUBLE,
		  .target = &c->p.lazy_fault_s,
		  .min = 0,
		  .max = 1e6,
		  .help = "post-copy: seconds each of those waits (default 0, or fitted "
			  "by --calibrate)" },
		{ .name = "calibrate",
		  .arg = "FILE",
		  .kind = CLI_STR,
		  .target = &c->calibrate,
		  .help = "fit the bandwidth, the dump's fixed part and the restore's from "
			  "a `memlens migrate --json` output of the same workload" },
		{ .name = "round-at",
		  .arg = "SEC,...",
		  .kind = CLI_STR,
		  .target = &c->round_at,
		  .help = "the rounds at these times (seconds since the trace started, "
			  "increasing), the last one the final dump: a migration's rounds as "
			  "they happened, instead of -r (-m: the rounds the migration planned)" },
		CLI_OPT_ROUND_INTERVAL(&c->p.round_interval_s, 0.001,
				       "seconds between pre-dump rounds (default 2, as memlens "
				       "migrate's)"),
		CLI_OPT_MAX_ROUNDS(&c->p.max_rounds, 0, 10000,
				   "at most N pre-dump rounds before the final dump (default "
				   "10; 0: none, the final dump at the first round, as migrate "
				   "-m 0)"),
		CLI_OPT_STOP_THRESHOLD(&c->p.stop_threshold_mb,
				       "stop pre-copy once a round sends <= MIB MiB (default 0)"),
		CLI_OPT_CONSECUTIVE(&c->p.hot_intervals, 1000,
				    "hot-range: written in N intervals in a row (default 3)"),
		CLI_OPT_COOL(&c->p.hot_cool,
			     "hot-range: cold after N intervals in a row unwritten (default: -c)"),
		CLI_OPT_HOT_RANGES(&c->p.hot_ranges_max,
				   "hot-range: at most N ranges, the smallest gaps merged (default "
				   "16384, as migrate)"),
		{ .name = "keep-hot-out",
		  .kind = CLI_FLAG,
		  .target = &c->p.keep_hot_out,
		  .help = "leave the hot memory out of the last pre-dump too, as migrate "
			  "--keep-hot-out and --postcopy do (by default it leaves nothing "
			  "out; with --round-at, when -m is not given or equals the pre-dump "
			  "rounds there)" },
		{ .name = "sweep",
		  .kind = CLI_FLAG,
		  .target = &c->sweep,
		  .help = "run hot-range with every -c of 1, 2, 3 and --cool of 1, 2, 3, 5, "
			  "8, 1000 and say which sends the fewest bytes, with the downtime kept "
			  "at none's and at all (-c and --cool are not taken)" },
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_OUTPUT(&out,
			       "write what would go to stdout (text, or JSON with --json) to FILE"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "migrate-model",
				 .about = about,
				 .footer = footer,
				 .opts = opts,
				 .check_operand = cli_input_file };
	int r, first;

	c->p.bandwidth_mbps = MM_DEFAULT_BANDWIDTH;
	c->p.round_interval_s = MM_DEFAULT_ROUND_S;
	c->p.dump_fixed_s = MM_DEFAULT_DUMP_FIXED_S;
	c->p.restore_fixed_s = MM_DEFAULT_RESTORE_FIXED_S;
	c->p.restore_bandwidth_mbps = MM_DEFAULT_RESTORE_BANDWIDTH;
	c->fit.restore_fixed_s = MM_DEFAULT_RESTORE_FIXED_S;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	if (first + 1 != argc)
		return cli_usage_error("migrate-model", "give exactly one trace FILE (%s)",
				       first == argc ? "none was given"
						     : "more than one was given");
	c->file = argv[first];
	c->b_given = cli_given(&spec, "bandwidth");
	c->r_given = cli_given(&spec, "round-interval");
	c->df_given = cli_given(&spec, "dump-fixed");
	c->rf_given = cli_given(&spec, "restore-fixed");
	c->rb_given = cli_given(&spec, "restore-bandwidth");
	c->lb_given = cli_given(&spec, "lazy-bandwidth");
	c->lf_given = cli_given(&spec, "lazy-faults");
	c->lw_given = cli_given(&spec, "lazy-fault-wait");
	c->p.lazy_faults = (uint64_t)c->lazy_faults;
	c->p.no_precopy = cli_given(&spec, "max-rounds") && !c->p.max_rounds;
	if (c->rf_given)
		c->fit.restore_fixed_s = c->p.restore_fixed_s; /* the fit assumes it */
	if (c->sweep && (cli_given(&spec, "consecutive") || cli_given(&spec, "cool")))
		return cli_usage_error("migrate-model",
				       "--sweep tries -c and --cool itself: give neither");
	if (c->round_at && parse_round_at(c))
		return cli_usage_error("migrate-model",
				       "--round-at wants seconds, increasing and above 0, "
				       "separated by commas (\"%s\")",
				       c->round_at);
	return out_option("migrate-model", out);
}

static int cmd_migrate_model(int argc, char **argv)
{
	ML_MM_RESULTS(res);
	struct ml_err err = { 0 };
	struct mm_cli c = { .p.sz = sizeof(struct ml_mm_params),
			    .fit.sz = sizeof(struct ml_mm_fit) };
	struct ml_mm_trace t;
	int rc;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	ml_mm_trace_init(&t);
	if (c.calibrate) {
		rc = calibrate(&c);
		if (rc)
			goto out;
	}
	rc = read_trace(c.file, &t);
	if (rc)
		goto out;
	c.resident = t.n && t.with_resident == t.n;
	if (c.sweep) {
		rc = mm_sweep(c.file, &t, &c.p, c.json, &err);
		if (rc)
			cli_error("migrate-model", "%s: %s", c.file, err.msg);
		goto out;
	}
	if (ml_mm_run(&t, &c.p, res, &err)) {
		cli_error("migrate-model", "%s: %s", c.file, err.msg);
		rc = exit_code_for(-err.code);
		goto out;
	}
	if (c.json)
		rc = print_json(&c, res);
	else
		print_human(&c, &t, res);
	ml_mm_results_free(res);
out:
	ml_mm_trace_free(&t);
	free(c.round_at_ms);
	return rc;
}

MEMLENS_COMMAND(migrate_model, "migrate-model", 17,
		"model pre-copy migration on a write trace: bytes, downtime", cmd_migrate_model);
