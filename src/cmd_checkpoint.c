// SPDX-License-Identifier: MIT
/*
 * memlens checkpoint: profile a process, then checkpoint it with CRIU,
 * leaving its hot memory out of pre-dumps when the CRIU in use can
 *: profile -> release -> CRIU -> re-init.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "command.h"
#include "criu_cli.h"
#include "memlens/jsonw.h"
#include "memlens/criu.h"
#include "memlens/profiler.h"

static const char usage_text[] =
	"usage: memlens checkpoint -p PID -D DIR [options]\n"
	"\n"
	"Profile where PID writes for a few seconds, then checkpoint it with CRIU. The\n"
	"hot VMAs are passed to CRIU as --exclude-range / --exclude-file (and the VMAs\n"
	"that turned cold since the last checkpoint as --no-parent-range) when the CRIU\n"
	"in use has those options (a CRIU fork; upstream CRIU does not: then nothing is\n"
	"excluded and the report says so). The profiler lets go of the target while CRIU\n"
	"runs and tracks it again afterwards.\n"
	"\n"
	"  -p, --pid PID            the process to checkpoint (required)\n"
	"  -D, --images-dir DIR     CRIU images directory (required; created 0700)\n"
	"      --pre-dump           `criu pre-dump` (needs soft-dirty, which this kernel lacks)\n"
	"      --parent DIR         images of the previous (pre-)dump (--prev-images-dir)\n"
	"  -R, --leave-running      leave the target running after the dump\n"
	"      --page-server HOST:PORT  send the pages to a `criu page-server`\n"
	"  -s, --profile-seconds N  profile N seconds first (default 5; 0: no profiling,\n"
	"                           nothing excluded)\n"
	"  -i, --interval MS        profiling interval (default 1000)\n"
	"      --resume-seconds N   after the checkpoint, profile N more seconds and report\n"
	"                           the first interval (default 0)\n"
	"      --criu PATH          the CRIU binary (default: $MEMLENS_CRIU, then the one\n"
	"                           scripts/ensure-criu.sh built, then criu on PATH)\n"
	"      --timeout SEC        kill CRIU after SEC seconds (default 120)\n"
	"      --shell-job          pass --shell-job (target attached to a terminal)\n"
	"      --no-exclude         never pass exclude options\n"
	"      --criu-opt OPT       pass one more option to criu dump, e.g.\n"
	"                           --tcp-established or --ext-unix-sk (repeatable)\n"
	"      --json               one JSON object on one line\n"
	"  -h, --help               this text\n"
	"\n"
	"CRIU runs with CRIU_FAULT=130 (no hardware breakpoints): on some VMs its dump\n"
	"hangs otherwise. Exit status: 0 ok, 1 CRIU failed (see its log), 2 usage,\n"
	"3 no such process / it exited, 4 permission denied, 5 missing kernel feature or CRIU.\n";

enum {
	OPT_JSON = 1000,
	OPT_PRE,
	OPT_PARENT,
	OPT_PS,
	OPT_RESUME,
	OPT_CRIU,
	OPT_TIMEOUT,
	OPT_SHELL,
	OPT_NOEXCL,
	OPT_CRIUOPT
};

struct ckpt_cli {
	struct criu_dump_req req;
	const char *criu;
	struct criu_cli_opts extra;
	char ps_host[256];
	double profile_s, resume_s;
	unsigned int interval_ms, timeout_s;
	bool json;
};

struct ckpt_ticks {
	pthread_mutex_t lock;
	uint64_t after; /* ticks since the re-init */
	bool counting;
	struct profiler_sample first; /* first interval after the re-init */
	bool have_first;
};

static void on_tick(const struct profiler_sample *s, void *arg)
{
	struct ckpt_ticks *t = arg;

	pthread_mutex_lock(&t->lock);
	if (t->counting && !t->have_first && !ml_profiler_sample_copy(&t->first, s))
		t->have_first = true;
	if (t->counting)
		t->after++;
	pthread_mutex_unlock(&t->lock);
}

static int bad(const char *what, const char *arg)
{
	cli_error("checkpoint", "%s, not '%s' (see --help)", what, arg);
	return EXIT_USAGE;
}

static int parse_page_server(struct ckpt_cli *c, const char *arg)
{
	const char *colon = strrchr(arg, ':');
	long port;

	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(c->ps_host) ||
	    parse_long(colon + 1, 1, 65535, &port))
		return bad("--page-server must be HOST:PORT", arg);
	snprintf(c->ps_host, sizeof(c->ps_host), "%.*s", (int)(colon - arg), arg);
	c->req.page_server_addr = c->ps_host;
	c->req.page_server_port = (int)port;
	return 0;
}

static int parse_opt(struct ckpt_cli *c, int opt)
{
	long v;

	switch (opt) {
	case 'p':
		return parse_pid(optarg, &c->req.pid) ? bad("invalid pid", optarg) : 0;
	case 'D':
		c->req.images_dir = optarg;
		return 0;
	case OPT_PRE:
		c->req.pre_dump = true;
		return 0;
	case OPT_PARENT:
		c->req.parent_dir = optarg;
		return 0;
	case 'R':
		c->req.leave_running = true;
		return 0;
	case OPT_PS:
		return parse_page_server(c, optarg);
	case 's':
		return parse_double(optarg, 0, 86400, &c->profile_s)
			       ? bad("--profile-seconds must be 0..86400", optarg)
			       : 0;
	case OPT_RESUME:
		return parse_double(optarg, 0, 86400, &c->resume_s)
			       ? bad("--resume-seconds must be 0..86400", optarg)
			       : 0;
	case 'i':
		if (parse_long(optarg, 10, 600000, &v))
			return bad("--interval must be 10..600000 ms", optarg);
		c->interval_ms = (unsigned int)v;
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
		c->req.shell_job = true;
		return 0;
	case OPT_NOEXCL:
		c->req.no_exclude = true;
		return 0;
	case OPT_CRIUOPT:
		if (criu_cli_add_opt("checkpoint", &c->extra, optarg))
			return EXIT_USAGE;
		c->req.extra_args = c->extra.v;
		return 0;
	case OPT_JSON:
		c->json = true;
		return 0;
	case 'h':
		return cli_usage(usage_text, true);
	default:
		return cli_usage(usage_text, false);
	}
}

static int parse_args(int argc, char **argv, struct ckpt_cli *c)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "images-dir", required_argument, NULL, 'D' },
		{ "pre-dump", no_argument, NULL, OPT_PRE },
		{ "parent", required_argument, NULL, OPT_PARENT },
		{ "leave-running", no_argument, NULL, 'R' },
		{ "page-server", required_argument, NULL, OPT_PS },
		{ "profile-seconds", required_argument, NULL, 's' },
		{ "resume-seconds", required_argument, NULL, OPT_RESUME },
		{ "interval", required_argument, NULL, 'i' },
		{ "criu", required_argument, NULL, OPT_CRIU },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "shell-job", no_argument, NULL, OPT_SHELL },
		{ "no-exclude", no_argument, NULL, OPT_NOEXCL },
		{ "criu-opt", required_argument, NULL, OPT_CRIUOPT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, r;

	c->profile_s = 5;
	while ((opt = getopt_long(argc, argv, "p:D:Rs:i:h", opts, NULL)) != -1) {
		r = parse_opt(c, opt);
		if (r)
			return r;
	}
	if (optind != argc)
		return bad("unexpected argument", argv[optind]);
	if (!c->req.pid || !c->req.images_dir) {
		cli_error("checkpoint", "-p PID and -D DIR are required (see --help)");
		return EXIT_USAGE;
	}
	return 0;
}

static void json_ranges(struct jw *w, const char *key, const struct rangeset *s)
{
	ml_jw_key(w, key);
	ml_jw_arr(w);
	for (size_t i = 0; i < s->n; i++) {
		ml_jw_arr(w);
		ml_jw_hex(w, s->r[i].start);
		ml_jw_hex(w, s->r[i].end);
		ml_jw_arr_end(w);
	}
	ml_jw_arr_end(w);
}

struct ckpt_out {
	const struct ckpt_cli *c;
	const struct criu_caps *caps;
	const struct criu_result *res;
	const struct rangeset *hot;
	const struct ckpt_ticks *ticks;
	bool profiled;
	int rc;
	const char *error;
};

static void json_profiler(struct jw *w, const struct ckpt_out *o)
{
	const struct profiler_sample *f = &o->ticks->first;

	ml_jw_key(w, "profiler");
	ml_jw_obj(w);
	ml_jw_kbool(w, "profiled", o->profiled);
	ml_jw_kbool(w, "reinit", o->res->profiler_reinit);
	ml_jw_kstr(w, "note", o->res->profiler_note);
	ml_jw_kuint(w, "resumed_intervals", o->ticks->after);
	if (o->ticks->have_first) {
		ml_jw_kint(w, "resumed_tracked_vmas", f->tracked_vmas);
		ml_jw_kint(w, "resumed_dirty_pages", f->dirty.dirty_pages);
		ml_jw_kint(w, "resumed_cumulative_dirty_bytes", f->dirty.cumulative_dirty_bytes);
	}
	ml_jw_obj_end(w);
}

static void json_exclusion(struct jw *w, const struct criu_exclude_report *x)
{
	ml_jw_key(w, "exclusion");
	ml_jw_obj(w);
	ml_jw_kbool(w, "applied", x->nexclude || x->nno_parent);
	ml_jw_kbool(w, "skipped", x->skipped);
	ml_jw_kuint(w, "exclude_ranges", x->nexclude);
	ml_jw_kuint(w, "no_parent_ranges", x->nno_parent);
	ml_jw_kbool(w, "exclude_file_used", x->used_file);
	ml_jw_kstr(w, "note", x->note);
	ml_jw_obj_end(w);
}

static void print_json(const struct ckpt_out *o)
{
	const struct criu_result *r = o->res;
	struct jw w;

	ml_jw_init(&w, stdout);
	ml_jw_obj(&w);
	ml_jw_kstr(&w, "type", "checkpoint");
	ml_jw_kint(&w, "pid", o->c->req.pid);
	ml_jw_kstr(&w, "images_dir", o->c->req.images_dir);
	ml_jw_kstr(&w, "action", o->c->req.pre_dump ? "pre-dump" : "dump");
	ml_jw_kbool(&w, "ok", o->rc == EXIT_OK);
	ml_jw_kint(&w, "exit_code", o->rc);
	criu_cli_json_caps(&w, o->caps);
	ml_jw_kstr(&w, "command", r->cmdline);
	ml_jw_kbool(&w, "criu_ran", r->ran);
	ml_jw_kint(&w, "criu_exit_status", r->exit_status);
	ml_jw_kbool(&w, "timed_out", r->timed_out);
	ml_jw_kuint(&w, "duration_ms", r->duration_ms);
	ml_jw_kuint(&w, "image_bytes", r->image_bytes);
	ml_jw_kint(&w, "pages_written", r->pages_written);
	ml_jw_kint(&w, "pages_scanned", r->pages_scanned);
	ml_jw_kint(&w, "pages_skipped_parent", r->pages_skipped_parent);
	json_ranges(&w, "hot_ranges", o->hot);
	json_exclusion(&w, &r->exclude);
	json_profiler(&w, o);
	ml_jw_kstr(&w, "log", r->log_path);
	if (o->error)
		ml_jw_kstr(&w, "error", o->error);
	ml_jw_obj_end(&w);
}

static void print_human(const struct ckpt_out *o)
{
	const struct criu_result *r = o->res;
	char b[16];

	printf("%s of pid %d into %s: %s\n", o->c->req.pre_dump ? "pre-dump" : "dump",
	       (int)o->c->req.pid, o->c->req.images_dir, o->rc == EXIT_OK ? "ok" : "FAILED");
	printf("  criu:      %s (version %s)\n", o->caps->path, o->caps->version);
	if (r->ran)
		printf("  command:   %s\n  status:    exit %d%s, %.2f s\n", r->cmdline,
		       r->exit_status, r->timed_out ? " (killed: timed out)" : "",
		       r->duration_ms / 1000.0);
	if (o->rc == EXIT_OK)
		printf("  images:    %s; pages written %lld (scanned %lld, skipped because in the "
		       "parent %lld)\n",
		       fmt_bytes(r->image_bytes, b, sizeof(b)), (long long)r->pages_written,
		       (long long)r->pages_scanned, (long long)r->pages_skipped_parent);
	printf("  hot:       %zu range(s), %s\n", o->hot->n,
	       fmt_bytes(ml_rangeset_bytes(o->hot), b, sizeof(b)));
	printf("  exclusion: %s\n", r->exclude.note[0] ? r->exclude.note : "none");
	if (o->profiled)
		printf("  profiler:  %s%s\n", r->profiler_reinit ? "re-initialised" : "",
		       r->profiler_note);
	if (o->ticks->have_first)
		printf("  resumed:   %llu interval(s); first: %d VMAs tracked, %lld pages "
		       "written\n",
		       (unsigned long long)o->ticks->after, o->ticks->first.tracked_vmas,
		       (long long)o->ticks->first.dirty.dirty_pages);
	if (o->rc != EXIT_OK && r->ran)
		printf("  log:       %s\n", r->log_path);
}

/* Sleep @secs, or until a signal or the profiler stops. -EINTR / -ESRCH. */
static int wait_profiling(struct profiler *p, const sigset_t *sigs, double secs)
{
	uint64_t t0 = cli_now_ns();

	while ((cli_now_ns() - t0) / 1e9 < secs) {
		if (cli_wait_signal(sigs, 50))
			return -EINTR;
		if (p && !ml_profiler_running(p))
			return ml_profiler_error(p, NULL) ? ml_profiler_error(p, NULL) : -ESRCH;
	}
	return 0;
}

static int start_profiling(struct ckpt_cli *c, struct ckpt_ticks *t, const sigset_t *sigs,
			   struct profiler **pp)
{
	struct profiler_opts po = { .interval_ms = c->interval_ms };
	struct ml_err err = { 0 };
	int r;

	r = ml_profiler_open(pp, c->req.pid, &po, &err);
	if (!r)
		r = ml_profiler_start(*pp, on_tick, t, &err);
	if (r) {
		cli_error("checkpoint", "profiling pid %d: %s", (int)c->req.pid, err.msg);
		return r;
	}
	fprintf(stderr,
		"memlens checkpoint: profiling pid %d for %g s (an interval every %u ms) to find "
		"its hot memory...\n",
		(int)c->req.pid, c->profile_s, c->interval_ms ? c->interval_ms : 1000);
	r = wait_profiling(*pp, sigs, c->profile_s);
	if (r == -EINTR)
		cli_error("checkpoint", "interrupted while profiling; nothing was checkpointed");
	else if (r)
		cli_error("checkpoint",
			  "the target %d exited while being profiled; nothing was "
			  "checkpointed",
			  (int)c->req.pid);
	return r;
}

static int run_criu(struct ckpt_cli *c, const struct criu_caps *caps, struct profiler *p,
		    struct ckpt_ticks *t, struct criu_result *res, struct rangeset *hot,
		    struct ml_err *err)
{
	struct criu_run_opts ro = { .timeout_ms = c->timeout_s * 1000 };
	struct criu_session *s;
	int r = ml_criu_session_open(&s, caps, &ro, err);

	if (r)
		return r;
	pthread_mutex_lock(&t->lock);
	t->counting = true;
	pthread_mutex_unlock(&t->lock);
	fprintf(stderr, "memlens checkpoint: running criu %s on pid %d (time limit %u s)...\n",
		c->req.pre_dump ? "pre-dump" : "dump", (int)c->req.pid,
		c->timeout_s ? c->timeout_s : CRIU_DEFAULT_TIMEOUT_MS / 1000);
	r = ml_criu_checkpoint(s, p, &c->req, res, hot, err);
	ml_criu_session_close(s);
	return r;
}

static int checkpoint(struct ckpt_cli *c, const struct criu_caps *caps, struct ckpt_out *o,
		      struct ckpt_ticks *t, const sigset_t *sigs)
{
	static struct ml_err err;
	struct profiler *p = NULL;
	int r = 0;

	if (c->profile_s > 0) {
		r = start_profiling(c, t, sigs, &p);
		o->profiled = !r;
		if (r)
			goto out;
	}
	r = run_criu(c, caps, p, t, (struct criu_result *)o->res, (struct rangeset *)o->hot, &err);
	if (r) {
		cli_error("checkpoint", "%s", err.msg);
		o->error = err.msg;
		goto out;
	}
	if (p && o->res->profiler_reinit && c->resume_s > 0) {
		fprintf(stderr, "memlens checkpoint: profiling again for %g s...\n", c->resume_s);
		wait_profiling(p, sigs, c->resume_s);
	}
out:
	if (p)
		ml_profiler_close(p);
	return r;
}

static int cmd_checkpoint(int argc, char **argv)
{
	struct ckpt_ticks t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct ckpt_cli c = { 0 };
	struct criu_caps caps;
	struct criu_result res;
	struct rangeset hot;
	struct ckpt_out o = { .c = &c, .caps = &caps, .res = &res, .hot = &hot, .ticks = &t };
	struct ml_err err = { 0 };
	sigset_t sigs;
	int rc;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	rc = ml_criu_dump_target_check(c.req.pid, &err);
	if (rc) {
		cli_error("checkpoint", "%s", err.msg);
		return exit_code_for(rc);
	}
	rc = criu_cli_setup("checkpoint", c.criu, &caps);
	if (rc)
		return rc;
	if (c.req.pre_dump && !caps.mem_dirty_track) {
		cli_error("checkpoint",
			  "--pre-dump needs soft-dirty page tracking, which this "
			  "kernel lacks (CONFIG_MEM_SOFT_DIRTY is not set: `criu check --feature "
			  "mem_dirty_track` fails); CRIU was not run. Take a full dump (drop "
			  "--pre-dump), or model pre-copy rounds with `memlens migrate-model`");
		return EXIT_NOFEATURE;
	}
	memset(&res, 0, sizeof(res));
	res.exit_status = -1;
	res.pages_written = res.pages_scanned = res.pages_skipped_parent = -1;
	ml_rangeset_init(&hot);
	cli_block_signals(&sigs);
	rc = checkpoint(&c, &caps, &o, &t, &sigs);
	o.rc = rc = rc ? exit_code_for(rc) : EXIT_OK;
	if (c.json)
		print_json(&o);
	else
		print_human(&o);
	ml_rangeset_free(&hot);
	ml_profiler_sample_free(&t.first);
	return rc;
}

MEMLENS_COMMAND(checkpoint, "checkpoint", 15,
		"profile, then checkpoint with CRIU, leaving hot memory out",
		cmd_checkpoint);
