// SPDX-License-Identifier: MIT
/* The OOM tracer's user side (memlens/trace_oom.h): load, attach, records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "memlens/opts.h"
#include "memlens/trace_oom.h"
#include "bpfutil.h"
#include "oom.h"
#include "oom.skel.h"

struct ml_oom_tracer {
	struct ml_oom_tracer_opts o;
	struct oom_bpf *skel;
	struct ring_buffer *rb;
	struct ml_oom_tracer_info info;
	uint64_t kills;
	uint64_t boot_to_real_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
};

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

_Static_assert(OOM_CG_DEPTH *(OOM_CG_NAME + 1) + 8 <= sizeof(((struct ml_oom_kill_rec *)0)->cgroup),
	       "the record holds every cgroup path");

static int on_event(void *arg, void *data, size_t len)
{
	struct ml_oom_tracer *t = arg;
	const struct oom_event *e = data;
	uint64_t kb = (uint64_t)getpagesize() / 1024, limit;
	struct ml_oom_kill_rec r;

	if (len < sizeof(*e))
		return 0;
	t->kills++;
	limit = e->limit_pages;
	if (e->scope == OOM_SCOPE_GLOBAL && !e->from_fentry)
		limit = global_limit_pages();
	r = (struct ml_oom_kill_rec){ .time_ms = (e->ts_ns + t->boot_to_real_ns) / 1000000,
				      .victim_pid = e->victim_pid,
				      .trigger_pid = e->trigger_pid,
				      .anon_rss_kb = (uint64_t)e->anon_pages * kb,
				      .file_rss_kb = (uint64_t)e->file_pages * kb,
				      .shmem_rss_kb = (uint64_t)e->shmem_pages * kb,
				      .total_vm_kb = e->total_vm_pages * kb,
				      .limit_kb = limit * kb };
	snprintf(r.victim_comm, sizeof(r.victim_comm), "%s", e->victim_comm);
	snprintf(r.trigger_comm, sizeof(r.trigger_comm), "%s", e->trigger_comm);
	snprintf(r.scope, sizeof(r.scope), "%s", scope_name(e->scope));
	cgroup_path(e, r.cgroup, sizeof(r.cgroup));
	snprintf(r.source, sizeof(r.source), "%s", e->from_fentry ? "fentry" : "tracepoint");
	return t->o.on_kill ? t->o.on_kill(t->o.arg, &r) : 0;
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
	mlt_trace_pidns(&s->rodata->pidns_dev, &s->rodata->pidns_ino);
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

static uint64_t realtime_offset(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((uint64_t)r.tv_sec - (uint64_t)m.tv_sec) * 1000000000ULL + (uint64_t)r.tv_nsec -
	       (uint64_t)m.tv_nsec;
}

int ml_oom_tracer_open(struct ml_oom_tracer **out, const struct ml_oom_tracer_opts *opts,
		       struct ml_err *err)
{
	struct ml_oom_tracer *t;
	unsigned long long offsets;
	int e, fe;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ml_err_set(err, ENOMEM, "out of memory");
	e = ml_opts_load(&t->o, sizeof(t->o), opts, "ml_oom_tracer_opts", err);
	if (!e)
		e = mlt_trace_preflight(err);
	if (e)
		goto fail;
	offsets = rss_sum_offsets();
	t->info.rss_summed = offsets != 0;
	t->skel = try_load(true, offsets, &fe);
	t->info.fentry = t->skel != NULL;
	if (!t->skel) {
		t->info.fentry_error = fe;
		t->skel = try_load(false, offsets, &e);
		if (!t->skel) {
			e = mlt_trace_bpf_error(err, e,
						"loading the OOM tracer (tp_btf/mark_victim)");
			goto fail;
		}
	}
	t->boot_to_real_ns = realtime_offset();
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_event, t, NULL);
	if (!t->rb) {
		e = mlt_trace_bpf_error(err, -errno, "creating the ring buffer");
		goto fail;
	}
	*out = t;
	return 0;
fail:
	ml_oom_tracer_close(t);
	return e;
}

int ml_oom_tracer_poll(struct ml_oom_tracer *t, int timeout_ms)
{
	return timeout_ms ? ring_buffer__poll(t->rb, timeout_ms) : ring_buffer__consume(t->rb);
}

int ml_oom_tracer_info(const struct ml_oom_tracer *t, struct ml_oom_tracer_info *out)
{
	return ml_result_store(out, &t->info, sizeof(t->info), sizeof(t->info),
			       "ml_oom_tracer_info", NULL);
}

int ml_oom_tracer_stats(const struct ml_oom_tracer *t, struct ml_oom_tracer_stats *out)
{
	struct ml_oom_tracer_stats v = {
		.kills = t->kills,
		.lost = t->skel->bss->lost_events,
		.recursion_misses = mlt_trace_recursion_misses(t->skel->obj),
	};

	return ml_result_store(out, &v, sizeof(v), sizeof(v), "ml_oom_tracer_stats", NULL);
}

void ml_oom_tracer_close(struct ml_oom_tracer *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	oom_bpf__destroy(t->skel);
	free(t);
}
