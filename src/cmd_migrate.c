// SPDX-License-Identifier: MIT
/*
 * memlens migrate: live-migrate a process tree with CRIU. Pre-dump rounds
 * (hot memory left out when the CRIU can), a final dump, all sent to
 * `criu page-server`s at the destination, then the restore there; each
 * round and the downtime measured. `memlens migrate --receive` is the
 * destination side (migrate_recv.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cliutil.h"
#include "table.h"
#include "command.h"
#include "criu_cli.h"
#include "opts.h"
#include "memlens/jsonw.h"
#include "memlens/criu.h"
#include "memlens/heat.h"
#include "memlens/profiler.h"
#include "migrate.h"
#include "migrate_wire.h"

static const char about[] =
	"Live-migrate the process tree of PID with CRIU. While it runs, pre-dump rounds\n"
	"copy its memory to the destination; the hot memory (the VMAs it keeps writing)\n"
	"is left out of them when the CRIU in use has --exclude-range / --exclude-file,\n"
	"since it would be sent again anyway. Pre-copy stops when a round sends less\n"
	"than the stop threshold or after the last round; then the tree is frozen, the\n"
	"final dump sends what changed since the last round, and the destination\n"
	"restores it. Every round is printed (pages, bytes, time, what was left out and\n"
	"why), then the downtime (frozen until running again at the destination:\n"
	"CRIU's own count of the frozen time in the final dump, then the transfer and\n"
	"restore) and the total bytes sent.\n"
	"Pages go to a `criu page-server` the destination starts for each round.\n"
	"On a kernel without soft-dirty page tracking pre-copy is impossible: one\n"
	"stop-and-copy dump, measured the same way.\n";

static const char footer[] =
	"What limits the gain: CRIU leaves out whole VMAs (a VMA that overlaps a hot\n"
	"range is left out entirely, cold pages included), and the ranges apply to every\n"
	"process of the tree at those addresses. Exit status: 0 migrated, 1 CRIU or the\n"
	"destination failed (the tree keeps running at the source when the final dump\n"
	"did not happen), 2 usage, 3 no such process, 5 missing CRIU.\n";

struct mig_cli {
	pid_t pid;
	const char *to, *dir, *listen, *criu;
	struct criu_cli_opts extra;
	int max_rounds;
	double threshold_mib, round_s;
	unsigned int interval_ms, timeout_s;
	double hot_threshold; /* 0: the profiler's default */
	int hot_consecutive;
	bool no_exclude, receive, shell_job, json;
};

#define MAX_ROUNDS 50

struct mig_round {
	int k;
	bool pre_dump;
	int64_t pages;
	uint64_t bytes, stored;
	uint64_t duration_ms, start_ms;
	size_t hot_ranges, excluded, no_parent;
	uint64_t hot_bytes;
	char note[768];
};

struct mig_run {
	struct mig_cli *c;
	struct criu_caps caps;
	struct wire w;
	char host[256], work[PATH_MAX];
	pid_t recv_pid;
	struct profiler *p;
	struct criu_session *sess;
	bool precopy, exclude;
	char why[256]; /* why nothing is excluded */
	struct mig_round r[MAX_ROUNDS + 1];
	int nr;
	uint64_t total, downtime_ms, restore_ms, dump_ms, t0_ns;
	uint64_t criu_end_ns; /* when the last CRIU dump returned */
	int64_t frozen_us; /* how long the final dump kept the tree frozen */
	pid_t restored;
	char error[1024];
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
		{ .name = "to",
		  .arg = "DIR|HOST:PORT",
		  .kind = CLI_STR,
		  .target = &c->to,
		  .help = "DIR: restore on this machine from images under DIR; HOST:PORT: send "
			  "it to a `memlens migrate --receive` listening there" },
		CLI_OPT_MAX_ROUNDS(&c->max_rounds, 0, MAX_ROUNDS,
				   "pre-dump rounds at most (default 5; 0: stop-and-copy)"),
		CLI_OPT_STOP_THRESHOLD(&c->threshold_mib, "stop pre-copy after a round that sends "
							  "less than MIB MiB (default 16)"),
		CLI_OPT_ROUND_INTERVAL(&c->round_s, 0,
				       "seconds between rounds, profiling the writes (default 2)"),
		CLI_OPT_INTERVAL(&iv, 10, 600000, "profiling interval (default 500)"),
		CLI_OPT_THRESHOLD(&c->hot_threshold,
				  "written ratio above which an interval is hot (default 0.3)"),
		CLI_OPT_CONSECUTIVE(&c->hot_consecutive, HEAT_WINDOW,
				    "hot intervals in a row before a VMA is hot (default 3)"),
		{ .name = "no-exclude",
		  .kind = CLI_FLAG,
		  .target = &c->no_exclude,
		  .help = "never leave hot memory out" },
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
		CLI_OPT_CRIU_OPT(&c->extra, criu_cli_opt_fn,
				 "one more option for criu dump/pre-dump (repeatable)"),
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "migrate",
				 .synopsis = "(-p PID --to DIR|HOST:PORT | --receive -l HOST:PORT "
					     "-D DIR)",
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
	if (c->receive && (!c->listen || !c->dir || c->pid || c->to))
		return cli_usage_error("migrate", "--receive needs -l/--listen HOST:PORT and -D "
						  "DIR, and takes no -p or --to");
	if (!c->receive && (!c->pid || !c->to || c->listen))
		return cli_usage_error("migrate", "-p PID and --to DIR|HOST:PORT are required; "
						  "-l/--listen goes with --receive");
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

/* The destination: a receiver of our own for a local DIR, or HOST:PORT. */
static int connect_dest(struct mig_run *m)
{
	struct stat st;
	int port = 0, fd;

	if (wire_parse_hostport(m->c->to, m->host, sizeof(m->host), &port) ||
	    (stat(m->c->to, &st) == 0 && S_ISDIR(st.st_mode)) || strchr(m->c->to, '/')) {
		struct migrate_recv_opts ro = { .dir = m->c->to,
						.host = "127.0.0.1",
						.caps = &m->caps,
						.timeout_s = m->c->timeout_s };
		int lfd = wire_listen("127.0.0.1", 0, &port);

		if (lfd < 0)
			return lfd;
		snprintf(m->host, sizeof(m->host), "127.0.0.1");
		fflush(NULL);
		m->recv_pid = fork();
		if (m->recv_pid < 0)
			return -errno;
		if (!m->recv_pid)
			_exit(migrate_receive(lfd, &ro) ? 1 : 0);
		close(lfd);
	} else if (!port) {
		return -EINVAL;
	}
	fd = wire_connect(m->host, port);
	if (fd < 0)
		return fd;
	return wire_open(&m->w, fd);
}

/* Send a request, read the answer; -EPROTO with the destination's ERR text. */
static int ask(struct mig_run *m, char *ans, size_t len, const char *fmt, int k)
{
	int r = wire_send(&m->w, fmt, k);

	if (!r)
		r = wire_recv(&m->w, ans, len);
	if (r) {
		snprintf(m->error, sizeof(m->error), "the destination closed the connection");
		return r;
	}
	if (!strncmp(ans, "ERR ", 4)) {
		snprintf(m->error, sizeof(m->error), "the destination: %s", ans + 4);
		return -EPROTO;
	}
	return 0;
}

static void round_dir(const struct mig_run *m, int k, char *buf, size_t len)
{
	snprintf(buf, len, "%.4000s/%d", m->work, k);
}

static void print_round(const struct mig_run *m, const struct mig_round *r)
{
	char b[16], h[16];

	if (m->c->json)
		return;
	printf("round %d %-8s %6.2f s %8lld pages %6s", r->k, r->pre_dump ? "pre-dump" : "dump",
	       r->duration_ms / 1000.0, (long long)r->pages, ml_fmt_bytes(r->bytes, b, sizeof(b)));
	if (r->hot_ranges)
		printf("  hot: %zu range(s), %s", r->hot_ranges,
		       ml_fmt_bytes(r->hot_bytes, h, sizeof(h)));
	printf("\n        ");
	table_wrap(stdout, table_width(stdout) - 8, 8, "%s", r->note);
	fflush(stdout);
}

static void fill_round(struct mig_run *m, struct mig_round *r, const struct criu_result *res,
		       const struct rangeset *hot)
{
	r->pages = res->pages_written;
	r->bytes = res->pages_written > 0 ? (uint64_t)res->pages_written * 4096 : 0;
	r->duration_ms = res->duration_ms;
	r->hot_ranges = hot->n;
	r->hot_bytes = ml_rangeset_bytes(hot);
	r->excluded = res->exclude.nexclude;
	r->no_parent = res->exclude.nno_parent;
	if (!r->pre_dump && !res->exclude.nno_parent && !res->exclude.parent_unusable)
		snprintf(r->note, sizeof(r->note), "%s",
			 r->k > 1 ? "the frozen tree: what changed since the last round"
				  : "the frozen tree: all of its memory");
	else if (!m->exclude && r->pre_dump)
		snprintf(r->note, sizeof(r->note), "nothing left out: %s", m->why);
	else
		snprintf(r->note, sizeof(r->note), "%s", res->exclude.note);
}

/* One round: a page server at the destination, CRIU, the destination's count. */
static int do_round(struct mig_run *m, int k, bool pre_dump)
{
	struct mig_round *r = &m->r[m->nr];
	struct criu_result *res = calloc(1, sizeof(*res));
	char ans[512], dir[PATH_MAX], parent[PATH_MAX];
	struct ml_err err = { 0 };
	struct rangeset hot;
	int port, ret, k2;
	unsigned long long stored;

	if (!res)
		return -ENOMEM;
	ml_rangeset_init(&hot);
	memset(r, 0, sizeof(*r));
	r->k = k;
	r->pre_dump = pre_dump;
	r->start_ms = (ml_mono_ns() - m->t0_ns) / 1000000;
	ret = ask(m, ans, sizeof(ans), "ROUND %d", k);
	if (!ret && sscanf(ans, "PORT %d", &port) != 1)
		ret = -EPROTO;
	if (ret)
		goto out;
	round_dir(m, k, dir, sizeof(dir));
	round_dir(m, k - 1, parent, sizeof(parent));
	struct criu_dump_req req = {
		.pid = m->c->pid,
		.images_dir = dir,
		.parent_dir = k > 1 ? parent : NULL,
		.pre_dump = pre_dump,
		.shell_job = m->c->shell_job,
		.page_server_addr = m->host,
		.page_server_port = port,
		.no_exclude = !m->exclude,
		.extra_args = m->c->extra.n ? m->c->extra.v : NULL,
	};

	ret = ml_criu_checkpoint(m->sess, m->p, &req, res, &hot, &err);
	m->criu_end_ns = ml_mono_ns();
	if (!ret && !pre_dump)
		ml_criu_read_dump_frozen(dir, &m->frozen_us, &err);
	if (ret)
		snprintf(m->error, sizeof(m->error), "%s", err.msg);
	/* the page server ends with the dump, failed or not */
	if (ask(m, ans, sizeof(ans), "DONE %d", k) == 0 &&
	    sscanf(ans, "STORED %d %llu", &k2, &stored) == 2)
		r->stored = stored;
	if (ret)
		goto out;
	fill_round(m, r, res, &hot);
	m->total += r->bytes;
	m->nr++;
	print_round(m, r);
out:
	ml_rangeset_free(&hot);
	free(res);
	return ret;
}

/* The final dump's images other than pages (those are at the destination). */
static int send_images(struct mig_run *m, int k)
{
	char dir[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	round_dir(m, k, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return -errno;
	while (!ret && (de = readdir(d)))
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && wire_name_ok(de->d_name) && !strstr(de->d_name, ".log"))
			ret = wire_send_file(&m->w, dir, de->d_name);
	closedir(d);
	if (ret)
		snprintf(m->error, sizeof(m->error), "sending the images of %.900s: %s", dir,
			 strerror(-ret));
	return ret;
}

/* The dumped tree's pid must be free again before a restore on this machine. */
static void wait_pid_free(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	for (int i = 0; i < 1000 && access(p, F_OK) == 0; i++)
		usleep(10000);
}

static int final_round(struct mig_run *m, int k)
{
	uint64_t t0 = ml_mono_ns();
	char ans[512];
	int ret, pid;
	unsigned long long ms;

	ret = do_round(m, k, false);
	if (ret)
		return ret;
	m->dump_ms = (ml_mono_ns() - t0) / 1000000;
	ret = send_images(m, k);
	if (ret)
		return ret;
	/* the same PID namespace at the destination (this machine, a
	 * container or network namespace of it) needs the pid free again */
	wait_pid_free(m->c->pid);
	ret = wire_send(&m->w, "RESTORE %d %d", k, m->c->shell_job);
	if (!ret)
		ret = wire_recv(&m->w, ans, sizeof(ans));
	if (ret) {
		snprintf(m->error, sizeof(m->error), "the destination closed the connection");
		return ret;
	}
	if (sscanf(ans, "RESTORED %d %llu", &pid, &ms) != 2) {
		snprintf(m->error, sizeof(m->error), "the destination could not restore: %s",
			 strncmp(ans, "ERR ", 4) ? ans : ans + 4);
		return -EPROTO;
	}
	/* frozen: from the moment CRIU froze the tree (its own count of the
	 * frozen time, up to the end of the dump) until it runs at the
	 * destination; without that count, from the start of the final round */
	if (m->frozen_us >= 0)
		m->downtime_ms =
			(ml_mono_ns() - m->criu_end_ns) / 1000000 + (uint64_t)m->frozen_us / 1000;
	else
		m->downtime_ms = (ml_mono_ns() - t0) / 1000000;
	m->restored = pid;
	m->restore_ms = ms;
	return 0;
}

/* The profiler's latest interval number (0: none yet). */
static uint64_t latest_seq(struct profiler *p)
{
	struct profiler_sample smp;
	uint64_t seq;

	memset(&smp, 0, sizeof(smp));
	if (!p || ml_profiler_latest(p, &smp))
		return 0;
	seq = smp.seq;
	ml_profiler_sample_free(&smp);
	return seq;
}

/*
 * Between rounds: at least --round-interval, and, when profiling, enough
 * intervals since the profiler took the target again for a VMA to turn hot
 * (a slow machine's intervals run late), up to 10 times longer.
 */
static int wait_round(struct mig_run *m, const sigset_t *sigs)
{
	uint64_t t0 = ml_mono_ns(), seq0 = latest_seq(m->p);
	double max_s = 10 * (m->c->round_s > 1 ? m->c->round_s : 1);
	int cons = m->c->hot_consecutive ? m->c->hot_consecutive : HEAT_DEFAULT_CONSECUTIVE;

	for (;;) {
		double el = (ml_mono_ns() - t0) / 1e9;
		uint64_t seq = latest_seq(m->p);

		if (seq < seq0) /* re-initialised after the last round: counting from 1 */
			seq0 = 0;
		if (el >= m->c->round_s &&
		    (!m->p || seq >= seq0 + (uint64_t)cons + 1 || el >= max_s))
			return 0;
		if (cli_wait_signal(sigs, 50))
			return -EINTR;
	}
}

static int start_profiling(struct mig_run *m, const sigset_t *sigs)
{
	struct profiler_opts po = { .interval_ms = m->c->interval_ms,
				    .hot_threshold = m->c->hot_threshold,
				    .hot_consecutive = m->c->hot_consecutive };
	struct ml_err err = { 0 };
	int r = ml_profiler_open(&m->p, m->c->pid, &po, &err);

	if (!r)
		r = ml_profiler_start(m->p, NULL, NULL, &err);
	if (r) {
		snprintf(m->error, sizeof(m->error), "profiling pid %d: %s", (int)m->c->pid,
			 err.msg);
		return r;
	}
	return wait_round(m, sigs);
}

static void decide(struct mig_run *m)
{
	char opts[128];

	m->precopy = m->caps.mem_dirty_track && m->c->max_rounds > 0;
	m->exclude = m->precopy && !m->c->no_exclude && ml_criu_can_exclude(&m->caps);
	ml_criu_caps_options(&m->caps, opts, sizeof(opts));
	if (m->c->no_exclude)
		snprintf(m->why, sizeof(m->why), "exclusion off (--no-exclude)");
	else if (!ml_criu_can_exclude(&m->caps))
		snprintf(m->why, sizeof(m->why),
			 "this CRIU cannot leave memory out of a pre-dump (%s)", opts);
}

static int migrate(struct mig_run *m, const sigset_t *sigs)
{
	struct criu_run_opts ro = { .timeout_ms = m->c->timeout_s * 1000 };
	struct ml_err err = { 0 };
	char ans[256];
	int ret, k = 1;

	m->t0_ns = ml_mono_ns();
	m->frozen_us = -1;
	ret = ml_criu_session_open(&m->sess, &m->caps, &ro, &err);
	if (ret)
		return ret;
	ret = wire_send(&m->w, MIGRATE_HELLO);
	if (!ret)
		ret = wire_recv(&m->w, ans, sizeof(ans));
	if (ret || strncmp(ans, "OK", 2)) {
		snprintf(m->error, sizeof(m->error), "no memlens migrate receiver at %s: %s",
			 m->c->to, ret ? "no answer" : ans);
		return ret ? ret : -EPROTO;
	}
	if (!m->precopy && !m->c->json)
		table_wrap(stdout, table_width(stdout), 2,
			   "this kernel has no soft-dirty page tracking: pre-copy rounds are "
			   "impossible, so one stop-and-copy dump");
	if (m->exclude && (ret = start_profiling(m, sigs)))
		return ret;
	for (; m->precopy && k <= m->c->max_rounds; k++) {
		if (k > 1 && (ret = wait_round(m, sigs)))
			return ret;
		ret = do_round(m, k, true);
		if (ret)
			return ret;
		if (m->r[m->nr - 1].bytes < m->c->threshold_mib * (1 << 20)) {
			k++;
			break;
		}
	}
	return final_round(m, k);
}

static void print_json(const struct mig_run *m, int rc)
{
	struct jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "migrate");
	ml_jw_kint(&w, "pid", m->c->pid);
	ml_jw_kstr(&w, "to", m->c->to);
	ml_jw_kbool(&w, "ok", rc == EXIT_OK);
	criu_cli_json_caps(&w, &m->caps);
	ml_jw_kbool(&w, "precopy", m->precopy);
	ml_jw_kbool(&w, "exclusion", m->exclude);
	ml_jw_key(&w, "rounds");
	ml_jw_arr(&w);
	for (int i = 0; i < m->nr; i++) {
		const struct mig_round *r = &m->r[i];

		ml_jw_obj(&w);
		ml_jw_kint(&w, "round", r->k);
		ml_jw_kstr(&w, "kind", r->pre_dump ? "pre-dump" : "dump");
		ml_jw_kint(&w, "pages", r->pages);
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
	ml_jw_kuint(&w, "total_bytes", m->total);
	ml_jw_kuint(&w, "downtime_ms", m->downtime_ms);
	ml_jw_kuint(&w, "final_dump_ms", m->dump_ms);
	ml_jw_kint(&w, "frozen_in_dump_ms", m->frozen_us >= 0 ? m->frozen_us / 1000 : -1);
	ml_jw_kuint(&w, "restore_ms", m->restore_ms);
	ml_jw_kint(&w, "restored_pid", m->restored);
	if (m->exclude)
		ml_jw_kstr(
			&w, "limits",
			"whole VMAs are left out; the ranges apply to every process of the tree");
	if (m->error[0])
		ml_jw_kstr(&w, "error", m->error);
	ml_jw_obj_end(&w);
}

static void print_summary(const struct mig_run *m, int rc)
{
	int width = table_width(stdout);
	char b[16];

	if (m->c->json) {
		print_json(m, rc);
		return;
	}
	if (rc != EXIT_OK)
		return;
	table_wrap(stdout, width, 12, "migrated pid %d to %s: restored as pid %d", (int)m->c->pid,
		   m->c->to, (int)m->restored);
	table_wrap(stdout, width, 12, "  rounds:   %d (%d pre-dump)", m->nr, m->nr - 1);
	table_wrap(stdout, width, 12, "  total:    %s sent", ml_fmt_bytes(m->total, b, sizeof(b)));
	table_wrap(stdout, width, 12,
		   "  downtime: %.3f s frozen until running again (final round %.3f s, restore "
		   "%.3f s)",
		   m->downtime_ms / 1000.0, m->dump_ms / 1000.0, m->restore_ms / 1000.0);
	if (m->exclude)
		table_wrap(
			stdout, width, 12,
			"  note:     CRIU leaves out whole VMAs (cold pages of a hot VMA too) and "
			"applies the ranges to every process of the tree");
}

static int run_source(struct mig_cli *c)
{
	struct mig_run *m = calloc(1, sizeof(*m));
	struct ml_err err = { 0 };
	const char *base = getenv("TMPDIR");
	sigset_t sigs;
	int rc, r;

	if (!m)
		return EXIT_FAIL;
	m->c = c;
	r = ml_criu_dump_target_check(c->pid, &err);
	if (r) {
		cli_error("migrate", "%s", err.msg);
		free(m);
		return exit_code_for(r);
	}
	rc = criu_cli_setup("migrate", c->criu, &m->caps);
	if (rc) {
		free(m);
		return rc;
	}
	if (c->dir)
		snprintf(m->work, sizeof(m->work), "%s", c->dir);
	else
		snprintf(m->work, sizeof(m->work), "%s/memlens-migrate-XXXXXX",
			 base && *base ? base : "/tmp");
	if ((c->dir && mkdir(m->work, 0700) < 0 && errno != EEXIST) ||
	    (!c->dir && !mkdtemp(m->work))) {
		cli_error("migrate", "cannot create the images directory %s: %s", m->work,
			  strerror(errno));
		free(m);
		return EXIT_FAIL;
	}
	decide(m);
	r = connect_dest(m);
	if (r) {
		cli_error("migrate",
			  "cannot reach the destination %s: %s (give a directory, or "
			  "HOST:PORT where `memlens migrate --receive` listens)",
			  c->to, strerror(-r));
		free(m);
		return r == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	cli_block_signals(&sigs);
	if (!c->json)
		table_wrap(stdout, table_width(stdout), 2,
			   "migrating pid %d to %s (CRIU %s; source images in %s)", (int)c->pid,
			   c->to, m->caps.version, m->work);
	r = migrate(m, &sigs);
	rc = r ? (r == -ESRCH ? EXIT_NOTARGET : EXIT_FAIL) : EXIT_OK;
	if (r && m->nr && !m->r[m->nr - 1].pre_dump)
		cli_error("migrate",
			  "%s; the tree was dumped: its complete images are at the destination, "
			  "in round %d's directory (`memlens restore -D DIR/%d` there)",
			  m->error[0] ? m->error : strerror(-r), m->r[m->nr - 1].k,
			  m->r[m->nr - 1].k);
	else if (r)
		cli_error("migrate", "%s; the process tree is still running at the source",
			  m->error[0] ? m->error : strerror(-r));
	if (m->p)
		ml_profiler_close(m->p);
	ml_criu_session_close(m->sess);
	wire_close(&m->w);
	if (m->recv_pid)
		waitpid(m->recv_pid, NULL, 0);
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
		"live-migrate a process tree with CRIU, hot memory left out", cmd_migrate);
