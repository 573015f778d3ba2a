// SPDX-License-Identifier: MIT
/*
 * memlens migrate: live-migrate a process tree with CRIU. Pre-dump rounds
 * (hot memory left out when the CRIU can), a final dump, all sent to
 * `criu page-server`s at the destination, then the restore there; each
 * round and the downtime measured. `memlens migrate --receive` is the
 * destination side (migrate_recv.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "criu_cli.h"
#include "jsonw.h"
#include "memlens/criu.h"
#include "migrate.h"
#include "migrate_run.h"
#include "migrate_wire.h"

static const char usage_text[] =
	"usage: memlens migrate -p PID --to DIR|HOST:PORT [options]\n"
	"       memlens migrate --receive --listen HOST:PORT -D DIR [options]\n"
	"\n"
	"Live-migrate the process tree of PID with CRIU. While it runs, pre-dump rounds\n"
	"copy its memory to the destination; the hot memory (the VMAs it keeps writing) is\n"
	"left out of them when the CRIU in use has --exclude-range / --exclude-file, since\n"
	"it would be sent again anyway. Pre-copy stops when a round sends less than the\n"
	"threshold or after the last round; then the tree is frozen, the final dump sends\n"
	"what changed since the last round, and the destination restores it. Every round\n"
	"is printed (pages, bytes, time, what was left out and why), then the downtime\n"
	"(frozen until running again at the destination: CRIU's own count of the\n"
	"frozen time in the final dump, then the transfer and restore) and the total\n"
	"bytes sent.\n"
	"Pages go to a `criu page-server` the destination starts for each round.\n"
	"On a kernel without soft-dirty page tracking pre-copy is impossible: one\n"
	"stop-and-copy dump, measured the same way.\n"
	"\n"
	"Source:\n"
	"  -p, --pid PID            the root of the process tree to migrate (required)\n"
	"      --to DIR             restore on this machine from images under DIR\n"
	"      --to HOST:PORT       a `memlens migrate --receive` listening there\n"
	"  -D, --images-dir DIR     the source's images (the pages go to the destination;\n"
	"                           default: a new directory under $TMPDIR or /tmp)\n"
	"      --max-rounds N       pre-dump rounds at most (default 5; 0: stop-and-copy)\n"
	"      --threshold MIB      stop pre-copy after a round that sends less (default 16)\n"
	"      --round-seconds S    time between rounds, profiling the writes (default 2)\n"
	"  -i, --interval MS        profiling interval (default 500)\n"
	"      --no-exclude         never leave hot memory out\n"
	"\n"
	"Destination:\n"
	"      --receive            serve one migration, then exit\n"
	"      --listen HOST:PORT   where to listen (page servers use the same HOST)\n"
	"  -D, --images-dir DIR     images go to DIR/1, DIR/2, ... (one per round)\n"
	"\n"
	"Both:\n"
	"      --criu PATH          the CRIU binary (default: $MEMLENS_CRIU, then the one\n"
	"                           scripts/ensure-criu.sh built, then criu on PATH)\n"
	"      --timeout SEC        kill a CRIU command after SEC seconds (default 300)\n"
	"      --shell-job          the tree is attached to a terminal (--shell-job)\n"
	"      --criu-opt OPT       one more option for criu dump/pre-dump (repeatable)\n"
	"      --json               one JSON object on one line\n"
	"  -h, --help               this text\n"
	"\n"
	"What limits the gain: CRIU leaves out whole VMAs (a VMA that overlaps a hot range\n"
	"is left out entirely, cold pages included), and the ranges apply to every process\n"
	"of the tree at those addresses. Exit status: 0 migrated, 1 CRIU or the\n"
	"destination failed (the tree keeps running at the source when the final dump\n"
	"did not happen), 2 usage, 3 no such process, 5 missing CRIU.\n";

enum {
	OPT_TO = 1000,
	OPT_MAXR,
	OPT_THR,
	OPT_ROUNDS,
	OPT_NOEXCL,
	OPT_RECV,
	OPT_LISTEN,
	OPT_CRIU,
	OPT_TIMEOUT,
	OPT_SHELL,
	OPT_CRIUOPT,
	OPT_JSON
};

struct mig_cli {
	pid_t pid;
	const char *to, *dir, *listen, *criu;
	struct criu_cli_opts extra;
	int max_rounds;
	double threshold_mib, round_s;
	unsigned int interval_ms, timeout_s;
	bool no_exclude, receive, shell_job, json;
	const sigset_t *sigs; /* the signals that stop a migration */
};

static int bad(const char *what, const char *arg)
{
	cli_error("migrate", "%s, not '%s' (see --help)", what, arg);
	return EXIT_USAGE;
}

static int parse_opt(struct mig_cli *c, int opt)
{
	long v;

	switch (opt) {
	case 'p':
		return parse_pid(optarg, &c->pid) ? bad("invalid pid", optarg) : 0;
	case OPT_TO:
		c->to = optarg;
		return 0;
	case 'D':
		c->dir = optarg;
		return 0;
	case OPT_MAXR:
		if (parse_long(optarg, 0, MIGRATE_MAX_ROUNDS, &v))
			return bad("--max-rounds must be 0..50", optarg);
		c->max_rounds = (int)v;
		return 0;
	case OPT_THR:
		return parse_double(optarg, 0, 1 << 20, &c->threshold_mib)
			       ? bad("--threshold must be 0..1048576 MiB", optarg)
			       : 0;
	case OPT_ROUNDS:
		return parse_double(optarg, 0, 3600, &c->round_s)
			       ? bad("--round-seconds must be 0..3600", optarg)
			       : 0;
	case 'i':
		if (parse_long(optarg, 10, 600000, &v))
			return bad("--interval must be 10..600000 ms", optarg);
		c->interval_ms = (unsigned int)v;
		return 0;
	case OPT_NOEXCL:
		c->no_exclude = true;
		return 0;
	case OPT_RECV:
		c->receive = true;
		return 0;
	case OPT_LISTEN:
		c->listen = optarg;
		return 0;
	case OPT_CRIU:
		c->criu = optarg;
		return 0;
	case OPT_TIMEOUT:
		if (parse_long(optarg, 1, 86400, &v))
			return bad("--timeout must be 1..86400 seconds", optarg);
		c->timeout_s = (unsigned int)v;
		return 0;
	case OPT_SHELL:
		c->shell_job = true;
		return 0;
	case OPT_CRIUOPT:
		return criu_cli_add_opt("migrate", &c->extra, optarg);
	case OPT_JSON:
		c->json = true;
		return 0;
	case 'h':
		return cli_usage(usage_text, true);
	default:
		return cli_usage(usage_text, false);
	}
}

static int parse_args(int argc, char **argv, struct mig_cli *c)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, OPT_TO },
		{ "images-dir", required_argument, NULL, 'D' },
		{ "max-rounds", required_argument, NULL, OPT_MAXR },
		{ "threshold", required_argument, NULL, OPT_THR },
		{ "round-seconds", required_argument, NULL, OPT_ROUNDS },
		{ "interval", required_argument, NULL, 'i' },
		{ "no-exclude", no_argument, NULL, OPT_NOEXCL },
		{ "receive", no_argument, NULL, OPT_RECV },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "shell-job", no_argument, NULL, OPT_SHELL },
		{ "criu-opt", required_argument, NULL, OPT_CRIUOPT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, r;

	c->max_rounds = 5;
	c->threshold_mib = 16;
	c->round_s = 2;
	c->interval_ms = 500;
	c->timeout_s = 300;
	while ((opt = getopt_long(argc, argv, "p:D:i:h", opts, NULL)) != -1) {
		r = parse_opt(c, opt);
		if (r)
			return r;
	}
	if (optind != argc)
		return bad("unexpected argument", argv[optind]);
	if (c->receive && (!c->listen || !c->dir || c->pid || c->to)) {
		cli_error("migrate", "--receive needs --listen HOST:PORT and -D DIR, and takes "
				     "no -p or --to (see --help)");
		return EXIT_USAGE;
	}
	if (!c->receive && (!c->pid || !c->to || c->listen)) {
		cli_error("migrate", "-p PID and --to DIR|HOST:PORT are required; --listen goes "
				     "with --receive (see --help)");
		return EXIT_USAGE;
	}
	return 0;
}

/* ---- destination side ------------------------------------------------ */

static int run_receive(struct mig_cli *c)
{
	struct migrate_recv_opts ro = { .dir = c->dir, .timeout_s = c->timeout_s, .verbose = true };
	struct criu_caps caps;
	char host[256];
	int port, bound, lfd, rc;

	if (wire_parse_hostport(c->listen, host, sizeof(host), &port) || !port)
		return bad("--listen must be HOST:PORT with a port 1..65535", c->listen);
	rc = criu_cli_setup("migrate", c->criu, &caps);
	if (rc)
		return rc;
	lfd = wire_listen(host, port, &bound);
	if (lfd < 0) {
		cli_error("migrate", "cannot listen on %s: %s", c->listen, strerror(-lfd));
		return EXIT_FAIL;
	}
	ro.host = host;
	ro.caps = &caps;
	fprintf(stderr, "memlens migrate: receiving on %s:%d into %s (CRIU %s)\n", host, bound,
		c->dir, caps.version);
	rc = migrate_receive(lfd, &ro);
	close(lfd);
	if (rc)
		cli_error("migrate", "the migration did not complete: %s", strerror(-rc));
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---- source side ----------------------------------------------------- */

static void print_round(const struct migrate_round *r, void *arg)
{
	const struct mig_cli *c = arg;
	char b[16], h[16];

	if (c->json)
		return;
	printf("round %d  %-8s %7.2f s  %8lld pages  %10s", r->k, r->pre_dump ? "pre-dump" : "dump",
	       r->duration_ms / 1000.0, (long long)r->pages, fmt_bytes(r->bytes, b, sizeof(b)));
	if (r->hot_ranges)
		printf("  hot: %zu range(s), %s", r->hot_ranges,
		       fmt_bytes(r->hot_bytes, h, sizeof(h)));
	printf("\n         %s\n", r->note);
	fflush(stdout);
}

static int wait_signal(unsigned int ms, void *arg)
{
	return cli_wait_signal(((struct mig_cli *)arg)->sigs, (int)ms) ? -EINTR : 0;
}

struct mig_run {
	struct mig_cli *c;
	struct criu_caps caps;
	char work[PATH_MAX];
	struct migrate_result res;
};

static void print_json(const struct mig_run *m, int rc)
{
	const struct migrate_result *x = &m->res;
	struct jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "migrate");
	ml_jw_kint(&w, "pid", m->c->pid);
	ml_jw_kstr(&w, "to", m->c->to);
	ml_jw_kbool(&w, "ok", rc == EXIT_OK);
	criu_cli_json_caps(&w, &m->caps);
	ml_jw_kbool(&w, "precopy", x->precopy);
	ml_jw_kbool(&w, "exclusion", x->exclude);
	ml_jw_key(&w, "rounds");
	ml_jw_arr(&w);
	for (int i = 0; i < x->nr; i++) {
		const struct migrate_round *r = &x->r[i];

		ml_jw_obj(&w);
		ml_jw_kint(&w, "round", r->k);
		ml_jw_kstr(&w, "kind", r->pre_dump ? "pre-dump" : "dump");
		ml_jw_kint(&w, "pages", r->pages);
		ml_jw_kint(&w, "pages_scanned", r->pages_scanned);
		ml_jw_kint(&w, "pages_skipped_parent", r->pages_skipped_parent);
		ml_jw_kuint(&w, "bytes", r->bytes);
		ml_jw_kuint(&w, "stored_bytes", r->stored);
		ml_jw_kuint(&w, "start_ms", r->start_ms);
		ml_jw_kuint(&w, "duration_ms", r->duration_ms);
		ml_jw_kuint(&w, "hot_ranges", r->hot_ranges);
		ml_jw_kuint(&w, "hot_bytes", r->hot_bytes);
		ml_jw_kuint(&w, "excluded_ranges", r->excluded);
		ml_jw_kuint(&w, "no_parent_ranges", r->no_parent);
		ml_jw_kstr(&w, "note", r->note);
		ml_jw_obj_end(&w);
	}
	ml_jw_arr_end(&w);
	ml_jw_kuint(&w, "total_bytes", x->total);
	ml_jw_kuint(&w, "downtime_ms", x->downtime_ms);
	ml_jw_kuint(&w, "final_dump_ms", x->dump_ms);
	ml_jw_kint(&w, "frozen_in_dump_ms", x->frozen_us >= 0 ? x->frozen_us / 1000 : -1);
	ml_jw_kuint(&w, "restore_ms", x->restore_ms);
	ml_jw_kint(&w, "restored_pid", x->restored);
	if (x->exclude)
		ml_jw_kstr(&w, "limits", MIGRATE_LIMITS);
	if (x->error[0])
		ml_jw_kstr(&w, "error", x->error);
	ml_jw_obj_end(&w);
}

static void print_summary(const struct mig_run *m, int rc)
{
	const struct migrate_result *x = &m->res;
	char b[16];

	if (m->c->json) {
		print_json(m, rc);
		return;
	}
	if (rc != EXIT_OK)
		return;
	printf("migrated pid %d to %s: restored as pid %d\n", (int)m->c->pid, m->c->to,
	       (int)x->restored);
	printf("  rounds:   %d (%d pre-dump)\n", x->nr, x->nr - 1);
	printf("  total:    %s sent\n", fmt_bytes(x->total, b, sizeof(b)));
	printf("  downtime: %.3f s frozen until running again (final round %.3f s, restore "
	       "%.3f s)\n",
	       x->downtime_ms / 1000.0, x->dump_ms / 1000.0, x->restore_ms / 1000.0);
	if (x->exclude)
		printf("  note:     CRIU leaves out whole VMAs (cold pages of a hot VMA too) and "
		       "applies the ranges to every process of the tree\n");
}

static int make_work_dir(struct mig_run *m)
{
	const char *base = getenv("TMPDIR");

	if (m->c->dir)
		snprintf(m->work, sizeof(m->work), "%s", m->c->dir);
	else
		snprintf(m->work, sizeof(m->work), "%s/memlens-migrate-XXXXXX",
			 base && *base ? base : "/tmp");
	if ((m->c->dir && mkdir(m->work, 0700) < 0 && errno != EEXIST) ||
	    (!m->c->dir && !mkdtemp(m->work))) {
		cli_error("migrate", "cannot create the images directory %s: %s", m->work,
			  strerror(errno));
		return EXIT_FAIL;
	}
	return 0;
}

static int run_source(struct mig_cli *c)
{
	struct mig_run *m = calloc(1, sizeof(*m));
	const struct migrate_result *x;
	struct ml_err err = { 0 };
	sigset_t sigs;
	int rc, r;

	if (!m)
		return EXIT_FAIL;
	m->c = c;
	x = &m->res;
	r = ml_criu_dump_target_check(c->pid, &err);
	if (r) {
		cli_error("migrate", "%s", err.msg);
		free(m);
		return exit_code_for(r);
	}
	rc = criu_cli_setup("migrate", c->criu, &m->caps);
	if (!rc)
		rc = make_work_dir(m);
	if (rc) {
		free(m);
		return rc;
	}
	struct migrate_opts o = {
		.pid = c->pid,
		.to = c->to,
		.work = m->work,
		.caps = &m->caps,
		.max_rounds = c->max_rounds,
		.threshold_mib = c->threshold_mib,
		.round_s = c->round_s,
		.interval_ms = c->interval_ms,
		.timeout_s = c->timeout_s,
		.no_exclude = c->no_exclude,
		.off_note = "exclusion off (--no-exclude)",
		.shell_job = c->shell_job,
		.extra_args = c->extra.n ? c->extra.v : NULL,
		.on_round = print_round,
		.pause = wait_signal,
		.arg = c,
	};

	cli_block_signals(&sigs);
	c->sigs = &sigs;
	migrate_plan(&o, &m->res);
	if (!c->json) {
		printf("migrating pid %d to %s (CRIU %s; source images in %s)\n", (int)c->pid,
		       c->to, m->caps.version, m->work);
		if (!x->precopy)
			printf("this kernel has no soft-dirty page tracking: pre-copy rounds are "
			       "impossible, so one stop-and-copy dump\n");
		fflush(stdout);
	}
	r = migrate_run(&o, &m->res);
	rc = r ? (r == -ESRCH ? EXIT_NOTARGET : EXIT_FAIL) : EXIT_OK;
	if (r && !x->connected) {
		cli_error("migrate", "%s", x->error);
		rc = r == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
	} else if (r && x->nr && !x->r[x->nr - 1].pre_dump) {
		cli_error("migrate",
			  "%s; the tree was dumped: its complete images are at the destination, "
			  "in round %d's directory (`memlens restore -D DIR/%d` there)",
			  x->error[0] ? x->error : strerror(-r), x->r[x->nr - 1].k,
			  x->r[x->nr - 1].k);
	} else if (r) {
		cli_error("migrate", "%s; the process tree is still running at the source",
			  x->error[0] ? x->error : strerror(-r));
	}
	print_summary(m, rc);
	free(m);
	return rc;
}

static int cmd_migrate(int argc, char **argv)
{
	struct mig_cli c = { 0 };
	int rc = parse_args(argc, argv, &c);

	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	return c.receive ? run_receive(&c) : run_source(&c);
}

MEMLENS_COMMAND(migrate, "migrate", 16,
		"live-migrate a process tree with CRIU: pre-dump rounds, hot memory left out",
		cmd_migrate);
