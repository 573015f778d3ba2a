// SPDX-License-Identifier: MIT
/*
 * memlens migrate: live-migrate a process tree with CRIU. Pre-dump rounds
 * (hot memory left out when the CRIU can), a final dump, all sent to
 * `criu page-server`s at the destination, then the restore there; each
 * round and the downtime measured. `memlens migrate --receive` is the
 * destination side (ml_migrate_receive()).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_target.h"
#include "container_find.h"
#include "cliutil.h"
#include "table.h"
#include "tree_rows.h"
#include "command.h"
#include "criu_cli.h"
#include "migrate_msg.h"
#include "memlens/format_migrate.h"
#include "opts.h"
#include "memlens/heat.h"
#include "memlens/criu.h"
#include "memlens/migrate.h"

static const char about[] =
	"Live-migrate the process tree of PID with CRIU. While it runs, pre-dump rounds\n"
	"copy its memory to the destination; the hot memory (the pages it keeps writing)\n"
	"is left out of them when the CRIU in use has --exclude-range / --exclude-file,\n"
	"since it would be sent again anyway. Pre-copy stops when a round sends less\n"
	"than the stop threshold or after the last round; then the tree is frozen, the\n"
	"final dump sends what changed since the last round, and the destination\n"
	"restores it. The first round waits until the hot memory is known (-c plus\n"
	"--cool intervals); the last round (-m) leaves nothing out, so the final dump\n"
	"carries only what is written after it (--keep-hot-out: fewer bytes, more\n"
	"downtime). Every round is printed (pages, bytes, time, what was left out and\n"
	"why), then the downtime (frozen until running again at the destination:\n"
	"CRIU's own count of the frozen time in the final dump, then the transfer and\n"
	"restore) and the total bytes sent.\n"
	"Pages go to a `criu page-server` the destination starts for each round.\n"
	"With --postcopy the rounds are written here and shipped as files, and the\n"
	"final dump leaves private memory at the source: the destination restores the\n"
	"tree at once and fetches those pages while it runs (faulting pages first).\n"
	"The downtime then ends at the restore; also printed: when the last page\n"
	"arrived and the page faults the restored tree waited on.\n"
	"On a kernel without soft-dirty page tracking pre-copy is impossible: one\n"
	"stop-and-copy dump, measured the same way.\n"
	"--container migrates a container's processes: its init (found through podman,\n"
	"runc or crun, or a cgroup) and everything it started, every one profiled. CRIU\n"
	"dumps them directly with the container's namespaces and cgroups, the mounts\n"
	"bound from the host as external (--external mnt[]); the restore recreates its\n"
	"cgroups and runs it in its root filesystem (--root), which must be at\n"
	"the same path at the destination, as must the mounts' sources. The runtime\n"
	"does not take part: after the migration it sees its container as exited.\n"
	"SIGUSR1 ends pre-copy: the final dump follows the round under way.\n";

static const char footer[] =
	"What limits the gain depends on the CRIU: the CRIU 4.1.1 that\n"
	"scripts/ensure-criu.sh builds with memlens's patches leaves hot pages out, per\n"
	"process; an older CRIU fork of 4.0 leaves out every VMA a hot range touches,\n"
	"whole, in every process of the tree; upstream CRIU nothing. Exit status:\n"
	"0 migrated, 1 CRIU or the destination failed (the tree keeps running at the\n"
	"source when the final dump did not happen), 2 usage, 3 no such process,\n"
	"5 missing CRIU, 6 CRIU would refuse the tree (each process, resource and fix\n"
	"named; nothing frozen; --check-only stops there). On Linux 6.16 and later,\n"
	"CRIU before 4.2 (4.1.1 too) cannot dump a TCP or UDP socket: give CRIU 4.2 or\n"
	"newer with --criu PATH.\n";

struct mig_cli {
	pid_t pid;
	const char *container; /* --container: the name given */
	struct container_migrate cm; /* what it resolved to, what CRIU needs for it */
	volatile bool end_precopy; /* SIGUSR1 */
	const char *to, *dir, *listen, *criu;
	struct criu_cli_opts extra;
	enum ml_criu_tcp tcp;
	int max_rounds;
	double threshold_mib, round_s;
	unsigned int interval_ms, timeout_s;
	double hot_threshold; /* 0: the profiler's default */
	int hot_consecutive, hot_cool;
	unsigned int hot_ranges_max;
	unsigned int sample_k;
	double max_overhead, max_error; /* percent */
	bool no_exclude, receive, shell_job, json, postcopy, keep_hot_out;
	bool check_only; /* --check-only: the preflight, then exit */
	const sigset_t *sigs; /* the signals that stop a migration */
};

static int bad(const char *what, const char *arg)
{
	return cli_usage_error("migrate", "%s, not '%s'", what, arg);
}

static int parse_args(int argc, char **argv, struct mig_cli *c)
{
	long iv = 500;
	struct cli_opt opts[] = {
		{ .section = "Source:",
		  .letter = 'p',
		  .name = "pid",
		  .arg = "PID",
		  .kind = CLI_PID,
		  .target = &c->pid,
		  .help = "the root of the process tree to migrate" },
		{ .name = "container",
		  .arg = "NAME|ID|CGROUP",
		  .kind = CLI_STR,
		  .target = &c->container,
		  .help = "instead of -p: a container's processes (podman, runc or crun "
			  "container, or a cgroup directory); see above" },
		{ .name = "to",
		  .arg = "DIR|HOST:PORT",
		  .kind = CLI_STR,
		  .target = &c->to,
		  .help = "DIR: restore on this machine from images under DIR; HOST:PORT: send "
			  "it to a `memlens migrate --receive` listening there" },
		CLI_OPT_MAX_ROUNDS(&c->max_rounds, 0, ML_MIGRATE_MAX_ROUNDS,
				   "pre-dump rounds at most (default 5; 0: stop-and-copy)"),
		CLI_OPT_STOP_THRESHOLD(&c->threshold_mib, "stop pre-copy after a round that sends "
							  "less than MIB MiB (default 16)"),
		CLI_OPT_ROUND_INTERVAL(&c->round_s, 0,
				       "seconds between rounds, profiling the writes (default 2)"),
		CLI_OPT_INTERVAL(&iv, 10, 600000, "profiling interval (default 500)"),
		CLI_OPT_THRESHOLD(&c->hot_threshold,
				  "written ratio above which an interval is hot (default 0.3)"),
		CLI_OPT_CONSECUTIVE(&c->hot_consecutive, ML_HEAT_WINDOW,
				    "intervals written in a row before a page (a VMA with a "
				    "CRIU that leaves out whole VMAs) is hot (default 3)"),
		CLI_OPT_COOL(&c->hot_cool, "unwritten intervals in a row before a hot page "
					   "is cold again (default: -c)"),
		CLI_OPT_HOT_RANGES(&c->hot_ranges_max,
				   "hot ranges left out at most, the smallest gaps between "
				   "them merged beyond that (default 16384)"),
		CLI_OPT_SAMPLE(&c->sample_k,
			       "profile with only this fraction of each VMA's pages "
			       "write-protected each interval (0.1 or 1/10, rotating): hot "
			       "memory estimated, for a fraction of the cost to the target "
			       "(default: every page)"),
		CLI_OPT_MAX_OVERHEAD(&c->max_overhead,
				     "keep what profiling costs each process under PCT% of one "
				     "CPU, sampling fewer pages while it would not be"),
		CLI_OPT_MAX_ERROR(&c->max_error,
				  "sample as few pages as keep each VMA's estimated written "
				  "pages within a standard error of PCT% of them, as many as "
				  "--max-overhead allows (default 1): every page to start with, "
				  "then down to --sample's fraction (default 1/10)"),
		{ .name = "no-exclude",
		  .kind = CLI_FLAG,
		  .target = &c->no_exclude,
		  .help = "never leave hot memory out" },
		{ .name = "keep-hot-out",
		  .kind = CLI_FLAG,
		  .target = &c->keep_hot_out,
		  .help = "leave the hot memory out of the last pre-dump round too: fewer "
			  "bytes, but the final dump carries it (by default the last round "
			  "sends it, so the final dump carries only what is written after "
			  "it; --postcopy always leaves it out)" },
		{ .name = "postcopy",
		  .kind = CLI_FLAG,
		  .target = &c->postcopy,
		  .help = "restore before the last pages are copied: the final dump leaves "
			  "private memory at the source, fetched on demand and in the "
			  "background after the restore (CRIU's lazy pages; needs soft-dirty "
			  "here and userfaultfd at the destination)" },
		{ .section = "Destination:",
		  .name = "receive",
		  .kind = CLI_FLAG,
		  .target = &c->receive,
		  .help = "serve one migration, then exit" },
		CLI_OPT_LISTEN(&c->listen, "where to listen (page servers use the same HOST)"),
		{ .section = "Both:",
		  .letter = 'D',
		  .name = "images-dir",
		  .arg = "DIR",
		  .kind = CLI_STR,
		  .target = &c->dir,
		  .help = "the source's images (the pages go to the destination; default: a new "
			  "directory under $TMPDIR or /tmp); with --receive: images go to DIR/1, "
			  "DIR/2, ... (one per round)" },
		CLI_OPT_CRIU(&c->criu, "the CRIU binary (default: $MEMLENS_CRIU, then criu on "
				       "PATH, then the one scripts/ensure-criu.sh built)"),
		CLI_OPT_TIMEOUT(&c->timeout_s,
				"kill a CRIU command after SEC seconds (default 300)"),
		CLI_OPT_SHELL_JOB(&c->shell_job,
				  "the tree is attached to a terminal (--shell-job)"),
		CLI_OPT_TCP(&c->tcp, criu_cli_tcp_fn, CRIU_CLI_TCP_HELP),
		CLI_OPT_CRIU_OPT(&c->extra, criu_cli_opt_fn,
				 "one more option for criu dump/pre-dump (repeatable; the restore "
				 "repeats those it needs, e.g. --ext-unix-sk)"),
		{ .name = "check-only",
		  .kind = CLI_FLAG,
		  .target = &c->check_only,
		  .help = CRIU_CLI_CHECK_ONLY_HELP },
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "migrate",
				 .synopsis =
					 "(-p PID|--container NAME --to DIR|HOST:PORT | --receive "
					 "-l HOST:PORT -D DIR)",
				 .about = about,
				 .footer = footer,
				 .opts = opts };
	int r, first;

	c->max_rounds = 5;
	c->threshold_mib = 16;
	c->round_s = 2;
	c->timeout_s = 300;
	r = cli_parse(&spec, argc, argv, &first);
	if (r)
		return r;
	c->interval_ms = (unsigned int)iv;
	if (c->receive && (!c->listen || !c->dir || c->pid || c->to || c->container))
		return cli_usage_error("migrate", "--receive needs -l/--listen HOST:PORT and -D "
						  "DIR, and takes no -p, --container or --to");
	if (c->pid && c->container)
		return cli_usage_error("migrate", "-p PID or --container NAME, not both");
	if (c->container && c->postcopy)
		return cli_usage_error("migrate", "--postcopy is not for a container (its restore "
						  "needs the pages at once)");
	if (c->receive && c->postcopy)
		return cli_usage_error("migrate", "--postcopy goes with the source (-p PID "
						  "--to ...); a receiver takes post-copy when the "
						  "source asks");
	if (!c->receive && ((!c->pid && !c->container) || !c->to || c->listen))
		return cli_usage_error("migrate",
				       "-p PID and --to DIR|HOST:PORT are required "
				       "(or --container NAME instead of -p); -l/--listen "
				       "goes with --receive");
	return 0;
}

/* ---- destination side ------------------------------------------------ */

static int run_receive(struct mig_cli *c)
{
	ML_OPTS(ml_migrate_recv_opts, ro, .dir = c->dir, .timeout_s = c->timeout_s, .verbose = true,
		.on_event = migrate_print_event);
	struct ml_criu_caps caps;
	struct ml_err err = { 0 };
	char host[256];
	int port, bound, lfd, rc;

	if (ml_migrate_parse_hostport(c->listen, host, sizeof(host), &port) || !port)
		return bad("--listen must be HOST:PORT with a port 1..65535", c->listen);
	rc = criu_cli_setup("migrate", c->criu, c->timeout_s * 1000, &caps);
	if (rc)
		return rc;
	lfd = ml_migrate_listen(host, port, &bound);
	if (lfd < 0) {
		cli_error("migrate", "cannot listen on %s: %s", c->listen, strerror(-lfd));
		return EXIT_FAIL;
	}
	ro.host = host;
	ro.caps = &caps;
	fprintf(stderr, "memlens migrate: receiving on %s:%d into %s (CRIU %s)\n", host, bound,
		c->dir, caps.version);
	rc = ml_migrate_receive(lfd, &ro, &err);
	close(lfd);
	if (rc == -EINVAL && err.msg[0]) {
		cli_error("migrate", "%s", err.msg);
		return EXIT_FAIL;
	}
	if (rc && rc != -ECANCELED) /* canceled: the source's reason is said */
		cli_error("migrate", "the migration did not complete: %s", strerror(-rc));
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---- source side ----------------------------------------------------- */

static void print_round(const struct ml_migrate_round *r, void *arg)
{
	const struct mig_cli *c = arg;
	char b[16], h[16];

	if (c->json)
		return;
	/* pages: private and shared memory, as CRIU counted them */
	printf("round %d %-8s %6.2f s %8lld pages %6s", r->k, r->pre_dump ? "pre-dump" : "dump",
	       r->duration_ms / 1000.0, (long long)r->pages + (r->shpages > 0 ? r->shpages : 0),
	       ml_fmt_bytes(r->bytes, b, sizeof(b)));
	if (r->pages_lazy > 0)
		printf("  + %lld page(s) after the restore", (long long)r->pages_lazy);
	if (r->hot_ranges)
		printf("  hot: %zu range(s), %s", r->hot_ranges,
		       ml_fmt_bytes(r->hot_bytes, h, sizeof(h)));
	printf("\n        ");
	table_wrap(stdout, table_width(stdout) - 8, 8, "%s", r->note);
	fflush(stdout);
}

static int wait_signal(unsigned int ms, void *arg)
{
	struct mig_cli *c = arg;
	int s = cli_wait_signal(c->sigs, (int)ms);

	if (s == SIGUSR1) {
		c->end_precopy = true;
		return 0;
	}
	return s ? -EINTR : 0;
}

struct mig_run {
	struct mig_cli *c;
	struct ml_criu_caps caps;
	char work[PATH_MAX];
	struct ml_migration *mig; /* once the options are given */
	struct ml_migrate_result none; /* the result before that: nothing ran */
	char error[1280]; /* why the command stopped before the migration */
	struct ml_profiler_proc procs[ML_MIGRATE_MAX_PROCS]; /* the result's, for the record */
	struct ml_criu_preflight pf;
	bool pf_ran;
};

static const struct ml_migrate_result *result_of(const struct mig_run *m)
{
	return m->mig ? ml_migration_result(m->mig) : &m->none;
}

/* The last round, or NULL. */
static const struct ml_migrate_round *last_round(const struct mig_run *m)
{
	return m->mig ? ml_migration_round(m->mig, result_of(m)->nr - 1) : NULL;
}

/* The "migrate" line (memlens/format_migrate.h). */
static void print_json(struct mig_run *m, int rc)
{
	const struct ml_migrate_result *x = result_of(m);
	const struct ml_migrate_round *last = last_round(m);
	const struct ml_migrate_lazy *l = &x->lazy;
	struct ml_migrate_round_rec rounds[ML_MIGRATE_MAX_ROUNDS + 1];
	struct ml_migrate_rec rec = {
		.pid = m->c->pid,
		.has_container = m->c->container != NULL,
		.to = m->c->to,
		.ok = rc == EXIT_OK,
		.precopy = x->precopy,
		.exclusion = x->exclude,
		.rounds = rounds,
		.postcopy = m->c->postcopy,
		.total_bytes = x->total,
		.tcp = ml_criu_tcp_name(m->c->tcp),
		.lazy = { .pages_left = last ? last->pages_lazy : -1,
			  .pages_total = l->pages_total,
			  .pages_copied = l->pages_copied,
			  .pages_parent = l->pages_parent,
			  .bytes = l->bytes,
			  .copy_bytes = l->copy_bytes,
			  .faults = l->faults,
			  .faults_served = l->faults_served,
			  .fault_wait_avg_us =
				  l->faults_served ? l->wait_sum_us / l->faults_served : 0,
			  .fault_wait_max_us = l->wait_max_us,
			  .last_page_ms = l->last_page_ms,
			  .source_done_ms = l->done_ms },
		.downtime_ms = x->downtime_ms,
		.final_dump_ms = x->dump_ms,
		.frozen_in_dump_ms = x->frozen_us >= 0 ? x->frozen_us / 1000 : -1,
		.restore_ms = x->restore_ms,
		.restored_pid = x->restored,
		.granularity = x->exclude ? ml_criu_granularity(&m->caps) : "none",
		.limits = !x->exclude		  ? NULL
			  : m->caps.page_granular ? ML_MIGRATE_LIMITS_PAGE
						  : ML_MIGRATE_LIMITS_VMA,
		.error = m->mig ? x->error : m->error,
		.preflight = m->pf_ran ? &m->pf : NULL,
		.procs = m->procs,
		.nprocs = x->nprocs,
		.nprocs_total = x->nprocs_total,
		.procs_profiled = x->procs_profiled,
		.procs_hot_bytes = x->procs_hot_bytes,
		.procs_dirty_bytes = x->procs_dirty_bytes,
		.check_only = m->c->check_only,
	};
	struct ml_jw w;

	for (size_t i = 0; i < x->nprocs; i++)
		m->procs[i] = *ml_migration_proc(m->mig, i);
	if (m->c->container) {
		const struct ml_container *k = &m->c->cm.ctr;

		rec.container = (struct ml_migrate_container_rec){ .id = k->id,
								   .name = k->name,
								   .runtime = k->runtime,
								   .init_pid = k->pid,
								   .rootfs = k->rootfs,
								   .bind_mounts = k->nmounts };
	}
	for (int i = 0; i < x->nr; i++) {
		const struct ml_migrate_round *r = ml_migration_round(m->mig, i);

		rounds[rec.nrounds++] = (struct ml_migrate_round_rec){
			.round = r->k,
			.pre_dump = r->pre_dump,
			.pages = r->pages,
			.shpages = r->shpages,
			.pages_scanned = r->pages_scanned,
			.pages_skipped_parent = r->pages_skipped_parent,
			.bytes = r->bytes,
			.stored_bytes = r->stored,
			.images_bytes = r->images,
			.files_bytes = r->files_bytes,
			.pages_lazy = r->pages_lazy,
			.start_ms = r->start_ms,
			.duration_ms = r->duration_ms,
			.hot_ranges = r->hot_ranges,
			.hot_bytes = r->hot_bytes,
			.excluded_ranges = r->excluded,
			.no_parent_ranges = r->no_parent,
			.note = r->note,
		};
	}
	ml_fmt_criu_caps_of(&rec.criu, &m->caps);
	ml_jw_init(&w, stdout);
	ml_fmt_migrate(&w, &rec);
}

/* A row per process of the tree before the final dump, and the tree's total. */
static void print_procs(const struct ml_migration *mig)
{
	const struct ml_migrate_result *x = ml_migration_result(mig);
	struct ml_profiler_proc procs[ML_MIGRATE_MAX_PROCS];
	size_t n = 0;

	while (n < x->nprocs && n < ML_MIGRATE_MAX_PROCS && ml_migration_proc(mig, n)) {
		procs[n] = *ml_migration_proc(mig, n);
		n++;
	}
	tree_rows_print(stdout, &(struct tree_rows){ .label = "  processes: ",
						     .procs = procs,
						     .n = n,
						     .total = x->nprocs_total,
						     .profiled = x->procs_profiled,
						     .hot_bytes = x->procs_hot_bytes,
						     .dirty_bytes = x->procs_dirty_bytes });
}

static void print_summary(struct mig_run *m, int rc)
{
	const struct ml_migrate_result *x = result_of(m);
	char b[16];

	if (m->c->json) {
		print_json(m, rc);
		return;
	}
	if (m->c->check_only) {
		const struct ml_criu_preflight *p = &m->pf;

		printf("check of pid %d's tree for a migration: %s\n", (int)m->c->pid,
		       rc == EXIT_OK	    ? "nothing CRIU would refuse was found"
		       : rc == EXIT_REFUSED ? "CRIU would refuse it"
					    : "FAILED");
		printf("  processes: %zu inspected; %zu finding(s), %zu refused\n", p->nprocs,
		       p->nfound, p->nrefused);
		for (size_t i = 0; i < p->n; i++)
			table_wrap(stdout, table_width(stdout), 13, "  %-10s pid %d (%s): %s; %s%s",
				   p->f[i].absorbed ? "absorbed:" : "refused:", (int)p->f[i].pid,
				   p->f[i].comm, p->f[i].resource,
				   p->f[i].absorbed ? "" : "fix: ", p->f[i].fix);
		return;
	}
	if (rc != EXIT_OK)
		return;
	printf("migrated pid %d to %s: restored as pid %d\n", (int)m->c->pid, m->c->to,
	       (int)x->restored);
	printf("  rounds:   %d (%d pre-dump)\n", x->nr, x->nr - 1);
	printf("  total:    %s sent%s\n", ml_fmt_bytes(x->total, b, sizeof(b)),
	       m->c->postcopy ? " (pre-dumps, final dump and the pages after the restore)" : "");
	print_procs(m->mig);
	printf("  downtime: %.3f s frozen until running again (final round %.3f s, restore "
	       "%.3f s)\n",
	       x->downtime_ms / 1000.0, x->dump_ms / 1000.0, x->restore_ms / 1000.0);
	if (m->c->postcopy) {
		const struct ml_migrate_lazy *l = &x->lazy;

		printf("  post-copy: %s in %lld page(s) after the restore; the last arrived "
		       "%.3f s after the freeze\n",
		       ml_fmt_bytes(l->bytes, b, sizeof(b)), (long long)l->pages_copied,
		       l->last_page_ms / 1000.0);
		printf("  faults:   %llu the restored tree waited on: %.2f ms on average, %.2f ms "
		       "at most\n",
		       (unsigned long long)l->faults,
		       l->faults_served ? l->wait_sum_us / 1000.0 / l->faults_served : 0.0,
		       l->wait_max_us / 1000.0);
	}
	if (x->exclude && m->caps.page_granular)
		printf("  note:     CRIU left hot pages out page by page, per process of the tree; "
		       "shared memory is always sent\n");
	else if (x->exclude)
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

/*
 * Before anything is profiled or frozen: what CRIU would refuse in the tree
 * (and, with --check-only, CRIU's own check). An exit code when the
 * command stops here, else -1.
 */
static int preflight(struct mig_run *m)
{
	struct mig_cli *c = m->c;
	const char *const *extra = c->extra.n ? c->extra.v : NULL;
	ML_OPTS(ml_criu_preflight_opts, po, .tcp = c->tcp, .extra_args = extra,
		.shell_job = c->shell_job);
	int rc = criu_cli_preflight("migrate", c->pid, &m->caps, &po, c->json || c->check_only,
				    c->check_only && !c->json, &m->pf);

	m->pf_ran = true;
	if (!rc && c->check_only && !make_work_dir(m)) {
		struct ml_criu_dump_req req = { .pid = c->pid,
						.images_dir = m->work,
						.shell_job = c->shell_job,
						.tcp = c->tcp,
						.extra_args = extra };

		rc = criu_cli_check_only("migrate", &m->caps, &req, c->timeout_s, m->error,
					 sizeof(m->error));
		if (!c->dir)
			rmdir(m->work); /* when CRIU left nothing there */
	}
	if (!rc && !c->check_only)
		return -1;
	if (rc == EXIT_REFUSED && !m->error[0])
		snprintf(m->error, sizeof(m->error),
			 "CRIU would refuse the process tree; nothing was frozen");
	if (rc == EXIT_REFUSED && !c->check_only) {
		const struct ml_criu_finding *f = NULL;
		char why[400];
		int k;

		for (size_t i = 0; i < m->pf.n && !f; i++)
			if (!m->pf.f[i].absorbed)
				f = &m->pf.f[i];
		k = snprintf(why, sizeof(why),
			     "CRIU would refuse the process tree of pid %d (%zu finding(s), the "
			     "source's message names them all)",
			     (int)c->pid, m->pf.nrefused);
		if (f)
			snprintf(why + k, sizeof(why) - (size_t)k,
				 "; the first: pid %d (%s): %.200s", (int)f->pid, f->comm,
				 f->resource);
		ml_migrate_abort(c->to, why);
	}
	print_summary(m, rc);
	return rc;
}

static int run_source(struct mig_cli *c)
{
	struct mig_run *m = calloc(1, sizeof(*m));
	const struct ml_migrate_result *x;
	const struct ml_migrate_round *last;
	struct ml_err err = { 0 };
	sigset_t sigs;
	int rc, r;

	if (!m)
		return EXIT_FAIL;
	m->c = c;
	r = ml_criu_dump_target_check(c->pid, &err);
	if (r) { /* -EINVAL: a session CRIU cannot see, which it refuses */
		cli_error("migrate", "%s", err.msg);
		free(m);
		return r == -EINVAL ? EXIT_REFUSED : exit_code_for(r);
	}
	rc = criu_cli_setup("migrate", c->criu, c->timeout_s * 1000, &m->caps);
	if (!rc)
		rc = preflight(m);
	if (rc >= 0) {
		free(m);
		return rc;
	}
	rc = make_work_dir(m);
	if (rc) {
		free(m);
		return rc;
	}
	ML_OPTS(ml_migrate_opts, o, .pid = c->pid, .to = c->to, .work = m->work, .caps = &m->caps,
		.max_rounds = c->max_rounds, .threshold_mib = c->threshold_mib,
		.round_s = c->round_s, .interval_ms = c->interval_ms,
		.hot_threshold = c->hot_threshold, .hot_consecutive = c->hot_consecutive,
		.hot_cool = c->hot_cool, .hot_ranges_max = c->hot_ranges_max,
		.sample_k = c->sample_k, .max_overhead = c->max_overhead / 100,
		.max_error = c->max_error / 100, .timeout_s = c->timeout_s,
		.no_exclude = c->no_exclude, .off_note = "exclusion off (--no-exclude)",
		.shell_job = c->shell_job, .postcopy = c->postcopy, .keep_hot_out = c->keep_hot_out,
		.extra_args = c->extra.n ? c->extra.v : NULL,
		.restore_args = c->container ? c->cm.restore : NULL, .end_precopy = &c->end_precopy,
		.tcp = c->tcp, .settle_dirs = c->container ? c->cm.settle_v : NULL,
		.on_round = print_round, .pause = wait_signal, .on_event = migrate_print_event,
		.arg = c);

	r = ml_migration_open(&m->mig, &o, &err);
	if (r) {
		cli_error("migrate", "%s", err.msg);
		free(m);
		return EXIT_USAGE;
	}
	x = ml_migration_result(m->mig);
	cli_block_signals(&sigs);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	c->sigs = &sigs;
	/* before anything is frozen or even profiled */
	r = ml_migration_check_postcopy(m->mig);
	if (r) {
		cli_error("migrate", "%s", x->error);
		ml_migrate_abort(c->to, x->error);
		rc = r == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
		print_summary(m, rc);
		ml_migration_close(m->mig);
		free(m);
		return rc;
	}
	if (!c->json) {
		if (c->container)
			printf("container %s (%s, %s): init pid %d, root filesystem %s, %zu bind "
			       "mount(s)\n",
			       c->cm.ctr.name[0] ? c->cm.ctr.name : c->cm.ctr.id, c->cm.ctr.id,
			       c->cm.ctr.runtime, (int)c->cm.ctr.pid, c->cm.ctr.rootfs,
			       c->cm.ctr.nmounts);
		printf("migrating pid %d to %s (CRIU %s; source images in %s)\n", (int)c->pid,
		       c->to, m->caps.version, m->work);
		if (!x->precopy)
			printf("this kernel has no soft-dirty page tracking: pre-copy rounds are "
			       "impossible, so one stop-and-copy dump\n");
		fflush(stdout);
	}
	r = ml_migration_run(m->mig);
	rc = r ? (r == -ESRCH ? EXIT_NOTARGET : EXIT_FAIL) : EXIT_OK;
	last = last_round(m);
	if (r && !x->connected) {
		cli_error("migrate", "%s", x->error);
		rc = r == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
	} else if (r && last && !last->pre_dump) {
		cli_error("migrate",
			  "%s; the tree was dumped: its complete images are at the destination, "
			  "in round %d's directory (`memlens restore -D DIR/%d` there)",
			  x->error[0] ? x->error : strerror(-r), last->k, last->k);
	} else if (r) {
		cli_error("migrate", "%s; the process tree is still running at the source",
			  x->error[0] ? x->error : strerror(-r));
	}
	print_summary(m, rc);
	ml_migration_close(m->mig);
	free(m);
	return rc;
}

/* --container: its init is the tree's root (container_migrate_find()). */
static int find_container(struct mig_cli *c)
{
	struct ml_err err = { 0 };
	int r = container_migrate_find(c->container, &c->cm, &err);

	if (r) {
		cli_error("migrate", "%s", err.msg);
		return r == -ESRCH || r == -ENOENT ? EXIT_NOTARGET : EXIT_FAIL;
	}
	c->pid = c->cm.ctr.pid;
	if (criu_cli_add_opt("migrate", &c->extra, CONTAINER_DUMP_OPT))
		return EXIT_USAGE;
	return 0;
}

static int cmd_migrate(int argc, char **argv)
{
	struct mig_cli c = { 0 };
	int rc = parse_args(argc, argv, &c);

	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	if (c.container) {
		rc = find_container(&c);
		if (rc)
			return rc;
	}
	if (!c.receive) {
		rc = cli_check_pid("migrate", c.pid);
		if (rc)
			return rc;
	}
	return c.receive ? run_receive(&c) : run_source(&c);
}

MEMLENS_COMMAND(migrate, "migrate", 16,
		"live-migrate a process tree with CRIU: pre-dump rounds, hot memory left out",
		cmd_migrate);
