// SPDX-License-Identifier: MIT
/* memlens oom: every OOM kill as it happens (eBPF). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cliutil.h"
#include "command.h"
#include "memlens/format_oom.h"
#include "../table.h"
#include "opts.h"
#include "trace.h"
#include "../../trace/oom.h"
#include "oom.skel.h"

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
	struct oom_bpf *skel;
	struct ring_buffer *rb;
	unsigned long kills, prev_kills;
	uint64_t boot_to_real_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
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

/* "/a/b/c" from the names the BPF side read leaf first */
static void cgroup_path(const struct oom_event *e, char *out, size_t len)
{
	size_t used = 0;
	int levels = e->cg_levels < OOM_CG_DEPTH ? (int)e->cg_levels : OOM_CG_DEPTH;

	out[0] = 0;
	if (e->cg_truncated)
		used += (size_t)snprintf(out, len, "/...");
	for (int i = levels - 1; i >= 0 && used < len; i--)
		used += (size_t)snprintf(out + used, len - used, "/%.*s", OOM_CG_NAME,
					 e->cg_names[i]);
	if (!out[0])
		snprintf(out, len, "/");
}

static uint64_t global_limit_pages(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return 0;
	return ((uint64_t)si.totalram + si.totalswap) * si.mem_unit / (uint64_t)getpagesize();
}

static const char *scope_name(uint32_t s)
{
	return s == OOM_SCOPE_CGROUP ? "cgroup" : s == OOM_SCOPE_GLOBAL ? "global" : "unknown";
}

_Static_assert(OOM_CG_DEPTH *(OOM_CG_NAME + 1) + 8 <= sizeof(((struct oom_kill_rec *)0)->cgroup),
	       "the record holds every cgroup path");

/* The record of a kill (memlens/format_oom.h). */
static void print_json(const struct oom_event *e, const char *cg, uint64_t limit, uint64_t real_ns)
{
	uint64_t kb = (uint64_t)getpagesize() / 1024;
	struct oom_kill_rec r = { .time_ms = real_ns / 1000000,
				  .victim_pid = e->victim_pid,
				  .trigger_pid = e->trigger_pid,
				  .anon_rss_kb = (uint64_t)e->anon_pages * kb,
				  .file_rss_kb = (uint64_t)e->file_pages * kb,
				  .shmem_rss_kb = (uint64_t)e->shmem_pages * kb,
				  .total_vm_kb = e->total_vm_pages * kb,
				  .limit_kb = limit * kb };
	struct jw w;

	snprintf(r.victim_comm, sizeof(r.victim_comm), "%s", e->victim_comm);
	snprintf(r.trigger_comm, sizeof(r.trigger_comm), "%s", e->trigger_comm);
	snprintf(r.scope, sizeof(r.scope), "%s", scope_name(e->scope));
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", cg);
	snprintf(r.source, sizeof(r.source), "%s", e->from_fentry ? "fentry" : "tracepoint");
	ml_jw_init(&w, stdout);
	ml_fmt_oom_kill(&w, &r);
}

static void print_line(const struct oom_event *e, const char *cg, uint64_t limit)
{
	uint64_t pg = (uint64_t)getpagesize();
	char b1[16], b2[16], b3[16], b4[16];

	table_wrap(stdout, table_width(stdout), 2,
		   "OOM kill: pid %u (%s) anon-rss %s file-rss %s total-vm %s; limit %s (%s) "
		   "cgroup %s; triggered by %u (%s)",
		   e->victim_pid, e->victim_comm,
		   ml_fmt_bytes((uint64_t)e->anon_pages * pg, b1, 16),
		   ml_fmt_bytes((uint64_t)e->file_pages * pg, b2, 16),
		   ml_fmt_bytes(e->total_vm_pages * pg, b3, 16), ml_fmt_bytes(limit * pg, b4, 16),
		   scope_name(e->scope), cg, e->trigger_pid, e->trigger_comm);
	fflush(stdout);
}

static int on_event(void *arg, void *data, size_t len)
{
	struct oom_ctx *c = arg;
	const struct oom_event *e = data;
	uint64_t limit;
	char cg[OOM_CG_DEPTH * (OOM_CG_NAME + 1) + 8];

	if (len < sizeof(*e))
		return 0;
	c->kills++;
	cgroup_path(e, cg, sizeof(cg));
	limit = e->limit_pages;
	if (e->scope == OOM_SCOPE_GLOBAL && !e->from_fentry)
		limit = global_limit_pages();
	if (c->o->json)
		print_json(e, cg, limit, e->ts_ns + c->boot_to_real_ns);
	else
		print_line(e, cg, limit);
	return 0;
}

/*
 * Where the kernel's OOM report sums the per-CPU RSS counters exactly
 * (Linux 7.0 on), the address of __per_cpu_offset[] from /proc/kallsyms,
 * for the BPF side to sum them the same way; 0 elsewhere, or when the
 * symbol is not to be seen (kptr_restrict): then the shared count is read.
 */
static unsigned long long rss_sum_offsets(void)
{
	unsigned long long addr = 0, a;
	struct utsname u;
	char line[256], name[128], type;
	FILE *f;

	if (uname(&u) || atoi(u.release) < 7)
		return 0;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &a, &type, name) == 3 &&
		    !strcmp(name, "__per_cpu_offset")) {
			addr = a;
			break;
		}
	}
	fclose(f);
	return addr;
}

static struct oom_bpf *try_load(bool fentry, unsigned long long per_cpu_offsets, int *err)
{
	struct oom_bpf *s = oom_bpf__open();
	int e;

	if (!s) {
		*err = -errno;
		return NULL;
	}
	bpf_program__set_autoload(s->progs.oom_kill_enter, fentry);
	trace_pidns(&s->rodata->pidns_dev, &s->rodata->pidns_ino);
	e = libbpf_num_possible_cpus();
	s->rodata->nr_cpus = e > 0 ? (unsigned)e : 0;
	s->rodata->per_cpu_offsets = per_cpu_offsets;
	*err = oom_bpf__load(s);
	if (!*err)
		*err = oom_bpf__attach(s);
	if (*err) {
		oom_bpf__destroy(s);
		return NULL;
	}
	return s;
}

static int oom_start(struct oom_bpf **out, const struct oom_opts *o, struct ml_err *err)
{
	unsigned long long offsets = rss_sum_offsets();
	int e, fe;

	*out = try_load(true, offsets, &fe);
	if (*out) {
		if (o->verbose)
			fprintf(stderr,
				"memlens oom: mode fentry: fentry/oom_kill_process + "
				"tp_btf/mark_victim; RSS %s\n",
				offsets ? "summed over the per-CPU counters"
					: "as the shared counters");
		return 0;
	}
	*out = try_load(false, offsets, &e);
	if (!*out)
		return trace_bpf_error(err, e, "loading the OOM tracer (tp_btf/mark_victim)");
	if (o->verbose)
		fprintf(stderr,
			"memlens oom: mode tracepoint: tp_btf/mark_victim alone "
			"(fentry/oom_kill_process refused: %s); the limit is the memory "
			"cgroup found at its max\n",
			strerror(-fe));
	return 0;
}

/* the kills of the whole run (@elapsed_s < 0), or of one interval */
static void summary(struct oom_ctx *c, double elapsed_s, bool last)
{
	unsigned long kills = elapsed_s < 0 ? c->kills : c->kills - c->prev_kills;
	uint64_t lost = c->skel->bss->lost_events, rec = trace_recursion_misses(c->skel->obj);
	struct jw w;

	if (c->o->json) {
		struct oom_count_rec r = {
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
	c->prev_kills = c->kills;
}

static void on_tick(void *arg, double elapsed_s, bool last)
{
	struct oom_ctx *c = arg;

	ring_buffer__consume(c->rb); /* the kills of this interval, printed before it */
	summary(c, elapsed_s, last);
}

static uint64_t realtime_offset(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((uint64_t)r.tv_sec - (uint64_t)m.tv_sec) * 1000000000ULL + (uint64_t)r.tv_nsec -
	       (uint64_t)m.tv_nsec;
}

static int cmd_oom(int argc, char **argv)
{
	struct ring_buffer *rb = NULL;
	struct oom_bpf *skel = NULL;
	struct ml_err err = { 0 };
	struct oom_opts o;
	struct oom_ctx c = { .o = &o };
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
	e = trace_preflight(&err);
	if (!e)
		e = oom_start(&skel, &o, &err);
	if (e)
		goto out;
	c.boot_to_real_ns = realtime_offset();
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &c, NULL);
	if (!rb) {
		e = trace_bpf_error(&err, -errno, "creating the ring buffer");
		goto out;
	}
	trace_say_tracing("oom", "OOM kills system-wide", o.duration, false);
	cli_block_signals(&sigs);
	c.skel = skel;
	c.rb = rb;
	stop = trace_run(&sigs,
			 &(struct trace_loop){
				 .duration_s = o.duration, .rb = rb, .tick = on_tick, .arg = &c });
	if (stop == TRACE_STOP_ERROR) {
		e = ml_err_set(&err, errno ? errno : EIO, "reading OOM events: %s",
			       strerror(errno ? errno : EIO));
		goto out;
	}
	if (stop == TRACE_STOP_OUTPUT)
		goto out; /* main() says which write failed and exits 1 */
	ring_buffer__consume(rb);
	summary(&c, -1, true);
out:
	if (e)
		cli_error("oom", "%s", err.msg);
	ring_buffer__free(rb);
	oom_bpf__destroy(skel);
	return e ? exit_code_for(e) : EXIT_OK;
}

MEMLENS_COMMAND(oom, "oom", 23, "every OOM kill as it happens: victim, RSS, limit, cgroup (eBPF)",
		cmd_oom);
