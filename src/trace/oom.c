// SPDX-License-Identifier: MIT
/* memlens oom: every OOM kill as it happens (eBPF). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "command.h"
#include "memlens/format_oom.h"
#include "memlens/opts.h"
#include "memlens/trace_oom.h"
#include "../table.h"
#include "opts.h"
#include "trace.h"

static const char about[] =
	"Report every OOM kill as it happens (eBPF): the victim, the task whose\n"
	"allocation triggered it, the victim's anon/file/shmem RSS and total VM, the\n"
	"limit that was hit, the memory cgroup, and whether it was a cgroup or a\n"
	"global (system-wide) OOM. cgroup v1 and v2.\n";

static const char footer[] = "Exit status 0 whether or not a kill was seen.\n";

struct oom_opts {
	double duration;
	bool json;
	int verbose;
};

struct oom_ctx {
	const struct oom_opts *o;
	struct ml_oom_tracer *t;
	unsigned long prev_kills;
};

static int parse_args(int argc, char **argv, struct oom_opts *o)
{
	struct cli_opt opts[10];
	struct cli_spec spec = { .cmd = "oom", .about = about, .footer = footer, .opts = opts };
	int first;

	memset(o, 0, sizeof(*o));
	trace_common_opts(opts, NULL, &o->duration, &o->json, &o->verbose,
			  "one {\"type\":\"oom_kill\",...} line per kill, and a "
			  "{\"type\":\"oom_summary\",...} line at the end");
	opts[1].help = "also print how many kills every MS milliseconds saw";
	return cli_parse(&spec, argc, argv, &first);
}

/* A kill: its record (memlens/format_oom.h) with --json, else a line. */
static int on_kill(void *arg, const struct ml_oom_kill_rec *r)
{
	struct oom_ctx *c = arg;
	char b1[16], b2[16], b3[16], b4[16];
	struct ml_jw w;

	if (c->o->json) {
		ml_jw_init(&w, stdout);
		ml_fmt_oom_kill(&w, r);
		return 0;
	}
	table_wrap(stdout, table_width(stdout), 2,
		   "OOM kill: pid %u (%s) anon-rss %s file-rss %s total-vm %s; limit %s (%s) "
		   "cgroup %s; triggered by %u (%s)",
		   (unsigned)r->victim_pid, r->victim_comm,
		   ml_fmt_bytes(r->anon_rss_kb * 1024, b1, 16),
		   ml_fmt_bytes(r->file_rss_kb * 1024, b2, 16),
		   ml_fmt_bytes(r->total_vm_kb * 1024, b3, 16),
		   ml_fmt_bytes(r->limit_kb * 1024, b4, 16), r->scope, r->cgroup,
		   (unsigned)r->trigger_pid, r->trigger_comm);
	fflush(stdout);
	return 0;
}

/* -v: which programs the tracer could load here */
static void say_mode(const struct ml_oom_tracer *t)
{
	ML_RESULT(ml_oom_tracer_info, i);

	ml_oom_tracer_info(t, &i);
	if (i.fentry)
		fprintf(stderr,
			"memlens oom: mode fentry: fentry/oom_kill_process + "
			"tp_btf/mark_victim; RSS %s\n",
			i.rss_summed ? "summed over the per-CPU counters"
				     : "as the shared counters");
	else
		fprintf(stderr,
			"memlens oom: mode tracepoint: tp_btf/mark_victim alone "
			"(fentry/oom_kill_process refused: %s); the limit is the memory "
			"cgroup found at its max\n",
			strerror(-i.fentry_error));
}

/* the kills of the whole run (@elapsed_s < 0), or of one interval */
static void summary(struct oom_ctx *c, double elapsed_s, bool last)
{
	ML_RESULT(ml_oom_tracer_stats, st);
	unsigned long kills;
	uint64_t lost, rec;
	struct ml_jw w;

	ml_oom_tracer_stats(c->t, &st);
	kills = elapsed_s < 0 ? st.kills : st.kills - c->prev_kills;
	lost = st.lost;
	rec = st.recursion_misses;

	if (c->o->json) {
		struct ml_oom_count_rec r = {
			.interval = elapsed_s >= 0,
			.elapsed_ms = elapsed_s >= 0 ? (uint64_t)(elapsed_s * 1000) : 0,
			.last = last,
			.kills = kills,
			.lost = lost,
			.recursion_misses = rec,
		};

		ml_jw_init(&w, stdout);
		ml_fmt_oom_count(&w, &r);
	} else if (elapsed_s >= 0) {
		printf("--- %.3f s%s: %lu OOM kill%s in this interval\n", elapsed_s,
		       last ? " (end)" : "", kills, kills == 1 ? "" : "s");
	} else {
		printf("%lu OOM kill%s seen\n", kills, kills == 1 ? "" : "s");
	}
	if (!c->o->json && (lost || rec))
		printf("warning: %llu kills not reported (the ring buffer was full), %llu not seen "
		       "(the kernel skipped the program while another BPF program ran on the "
		       "same CPU)\n",
		       (unsigned long long)lost, (unsigned long long)rec);
	fflush(stdout);
	c->prev_kills = st.kills;
}

static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct oom_ctx *c = arg;

	ml_oom_tracer_poll(c->t, 0); /* the kills of this interval, printed before it */
	summary(c, elapsed_s, last);
}

static int poll_oom(void *t, int timeout_ms)
{
	return ml_oom_tracer_poll(t, timeout_ms);
}

static int cmd_oom(int argc, char **argv)
{
	struct ml_oom_tracer *t = NULL;
	struct ml_err err = { 0 };
	struct oom_opts o;
	struct oom_ctx c = { .o = &o };
	ML_OPTS(ml_oom_tracer_opts, to, .on_kill = on_kill, .arg = &c);
	sigset_t sigs;
	enum trace_stop stop;
	int e;

	e = parse_args(argc, argv, &o);
	if (e)
		return e < 0 ? EXIT_OK : e;
	e = trace_output_open("oom", false);
	if (e)
		return e;
	trace_libbpf_quiet(o.verbose);
	trace_say_pidns("oom", o.verbose);
	e = ml_oom_tracer_open(&t, &to, &err);
	if (e)
		goto out;
	if (o.verbose)
		say_mode(t);
	trace_say_tracing("oom", "OOM kills system-wide", o.duration, false);
	cli_block_signals(&sigs);
	c.t = t;
	stop = trace_run(&sigs, &(struct trace_loop){ .duration_s = o.duration,
						      .poll = poll_oom,
						      .src = t,
						      .tick = on_tick,
						      .arg = &c });
	if (stop == TRACE_STOP_ERROR) {
		e = ml_err_set(&err, errno ? errno : EIO, "reading OOM events: %s",
			       strerror(errno ? errno : EIO));
		goto out;
	}
	if (stop == TRACE_STOP_OUTPUT)
		goto out; /* main() says which write failed and exits 1 */
	ml_oom_tracer_poll(t, 0);
	summary(&c, -1, true);
out:
	if (e)
		cli_error("oom", "%s", err.msg);
	ml_oom_tracer_close(t);
	return e ? exit_code_for(e) : EXIT_OK;
}

MEMLENS_COMMAND(oom, "oom", 23, "every OOM kill as it happens: victim, RSS, limit, cgroup (eBPF)",
		cmd_oom);
