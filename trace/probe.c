// SPDX-License-Identifier: MIT
/*
 * What the eBPF tracers can use here, for `memlens check`: BTF, whether
 * programs load, the program types the tracers choose between (fentry,
 * tp_btf, kprobes, uprobes), ring buffers, tracefs and the memory cgroup.
 * A probe loads a two-instruction program that returns 0 and, for fentry,
 * attaches it for an instant: nothing is left behind.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "memlens/features.h"
#include "allocfind.h"
#include "elfsym.h"
#include "bpfutil.h"
#include "umulti.h"
#include "slab.h"
#include "slab.skel.h"

static const struct bpf_insn ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

/* Load (and for fentry attach) a no-op tracing program at BTF @name of @kind. */
static int try_tracing(struct btf *vmlinux, const char *name, int kind, enum bpf_attach_type type)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o);
	int id = btf__find_by_name_kind(vmlinux, name, kind);
	int fd, link, e;

	if (id < 0)
		return -ENOENT;
	o.expected_attach_type = type;
	o.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "memlens_probe", "GPL", ret0, 2, &o);
	if (fd < 0)
		return -errno;
	link = type == BPF_TRACE_FENTRY ? bpf_link_create(fd, 0, type, NULL)
					: bpf_raw_tracepoint_open(NULL, fd);
	e = link < 0 ? -errno : 0;
	if (link >= 0)
		close(link);
	close(fd);
	return e;
}

/*
 * slab's own tp_btf programs on kmem_cache_alloc/kmem_cache_free, loaded
 * (not attached): a no-op program would load on any prototype, slab's
 * reads its arguments with their types, which differ between kernels.
 */
static void probe_kmem_tp_btf(struct ml_feature_list *l)
{
	struct slab_bpf *s = slab_bpf__open();
	struct bpf_program *p;
	int e;

	if (!s) {
		ml_feature_add(l, "ebpf", "tp_btf_kmem", ML_FEATURE_MISSING, "slab (tp_btf mode)",
			       "none needed: slab falls back to raw_tp", "opening the programs: %s",
			       strerror(errno));
		return;
	}
	/* one copy of each (the others are the same program) */
	bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(
		p, p == s->progs.cache_alloc0 || p == s->progs.cache_free0);
	e = slab_bpf__load(s);
	slab_bpf__destroy(s);
	if (!e)
		ml_feature_add(
			l, "ebpf", "tp_btf_kmem", ML_FEATURE_OK, "slab (tp_btf mode)", NULL,
			"slab's tp_btf programs on kmem_cache_alloc and kmem_cache_free load");
	else
		ml_feature_add(l, "ebpf", "tp_btf_kmem", ML_FEATURE_MISSING, "slab (tp_btf mode)",
			       "none needed: slab falls back to raw_tp",
			       "slab's tp_btf programs on kmem_cache_alloc/kmem_cache_free are "
			       "refused: %s",
			       mlt_trace_verifier_said()[0] ? mlt_trace_verifier_said()
							    : strerror(-e));
}

/* slab's kmalloc/kfree programs that find their object's cache (bpf_get_kmem_cache) */
static void probe_kmalloc_exact(struct ml_feature_list *l)
{
	struct slab_bpf *s = slab_bpf__open();
	struct bpf_program *p;
	int e;

	if (!s)
		return;
	bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(
		p, p == s->progs.kmalloc_exact0 || p == s->progs.kfree_exact0);
	e = slab_bpf__load(s);
	slab_bpf__destroy(s);
	if (!e)
		ml_feature_add(
			l, "ebpf", "kmalloc_cache", ML_FEATURE_OK, "slab (kmalloc, kfree)", NULL,
			"bpf_get_kmem_cache() works in tp_btf/kmalloc and kfree: each counted "
			"in its object's cache");
	else
		ml_feature_add(
			l, "ebpf", "kmalloc_cache", ML_FEATURE_MISSING, "slab (kmalloc, kfree)",
			"none needed: slab counts kmalloc() by its size and kfree() apart "
			"(Linux 6.13 or newer has bpf_get_kmem_cache())",
			"slab's kmalloc/kfree programs with bpf_get_kmem_cache() are refused: %s",
			mlt_trace_verifier_said()[0] ? mlt_trace_verifier_said() : strerror(-e));
}

static const char *why(int e)
{
	return e == -ENOENT ? "the kernel has no such function or tracepoint" : strerror(-e);
}

static void probe_programs(struct ml_feature_list *l)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int e;

	if (!vmlinux) {
		ml_feature_add(
			l, "ebpf", "btf", ML_FEATURE_MISSING, "faults, slab, leaks, oom",
			"use a kernel built with CONFIG_DEBUG_INFO_BTF=y",
			"no kernel BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot load");
		return;
	}
	ml_feature_add(l, "ebpf", "btf", ML_FEATURE_OK, "faults, slab, leaks, oom", NULL,
		       "kernel BTF at /sys/kernel/btf/vmlinux");
	e = try_tracing(vmlinux, "btf_trace_page_fault_user", BTF_KIND_TYPEDEF, BPF_TRACE_RAW_TP);
	if (e)
		ml_feature_add(l, "ebpf", "tp_btf", ML_FEATURE_MISSING, "faults, slab, oom",
			       "run as root (CAP_BPF and CAP_PERFMON); slab falls back to raw_tp",
			       "a tp_btf program on page_fault_user: %s", why(e));
	else
		ml_feature_add(l, "ebpf", "tp_btf", ML_FEATURE_OK, "faults, slab, oom", NULL,
			       "a tp_btf program on page_fault_user loads and attaches");
	probe_kmem_tp_btf(l);
	probe_kmalloc_exact(l);
	e = try_tracing(vmlinux, "handle_mm_fault", BTF_KIND_FUNC, BPF_TRACE_FENTRY);
	if (e)
		ml_feature_add(l, "ebpf", "fentry", ML_FEATURE_MISSING,
			       "faults --mode fentry (retried counts), oom (exact limit)",
			       "none needed: faults and oom fall back to tracepoints (faults then "
			       "reports retried as null, oom finds the limit from the cgroup)",
			       "an fentry program on handle_mm_fault: %s", why(e));
	else
		ml_feature_add(l, "ebpf", "fentry", ML_FEATURE_OK,
			       "faults --mode fentry (retried counts), oom (exact limit)", NULL,
			       "an fentry program on handle_mm_fault loads and attaches");
	btf__free(vmlinux);
}

static void probe_ringbuf(struct ml_feature_list *l)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "memlens_probe", 0, 0, 4096, NULL);

	if (fd >= 0) {
		close(fd);
		ml_feature_add(l, "ebpf", "ringbuf", ML_FEATURE_OK, "leaks, oom", NULL,
			       "BPF ring buffers can be created");
	} else {
		ml_feature_add(l, "ebpf", "ringbuf", ML_FEATURE_MISSING, "leaks, oom",
			       "run as root (CAP_BPF), on Linux 5.8 or newer",
			       "a BPF ring buffer cannot be created: %s", strerror(errno));
	}
}

/*
 * leaks' uprobe_multi links (@session: its uprobe session, Linux 6.13+):
 * a no-op program attached for an instant to free() of memlens's own C
 * library, for memlens only.
 */
static int try_uprobe_multi(bool session)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type =
			    session ? UMULTI_SESSION_ATTACH_TYPE : UMULTI_ATTACH_TYPE);
	struct ml_err err = { 0 };
	struct alloc_lib libc;
	struct elf_syms syms;
	uint64_t va, off, cookie = 0;
	int fd, link, e;

	if (mlt_alloc_find(getpid(), &libc, &err))
		return -err.code;
	if (mlt_elf_syms_load(libc.path, &syms, &err))
		return -err.code;
	e = mlt_elf_syms_find(&syms, "free", &va) || mlt_elf_vaddr_to_off(&syms, va, &off) ? -ENOENT
											   : 0;
	mlt_elf_syms_free(&syms);
	if (e)
		return e;
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "memlens_probe", "GPL", ret0, 2, &o);
	if (fd < 0)
		return -errno;
	link = session ? mlt_umulti_attach_session(fd, libc.path, &off, &cookie, 1, getpid())
		       : mlt_umulti_attach(fd, libc.path, &off, &cookie, 1, false, getpid());
	if (link >= 0)
		close(link);
	close(fd);
	return link < 0 ? link : 0;
}

static void probe_uprobe_multi(struct ml_feature_list *l)
{
	int e = try_uprobe_multi(false);

	if (!e)
		ml_feature_add(l, "ebpf", "uprobe_multi", ML_FEATURE_OK, "leaks", NULL,
			       "a uprobe_multi link attaches (leaks: two links, removed in "
			       "about 0.3 s)");
	else
		ml_feature_add(l, "ebpf", "uprobe_multi", ML_FEATURE_MISSING, "leaks",
			       "none needed: leaks falls back to one perf-event uprobe per probe "
			       "(slower to remove: Linux 6.6 or newer has uprobe_multi)",
			       "a uprobe_multi link on free() is refused: %s", strerror(-e));
	e = try_uprobe_multi(true);
	if (!e)
		ml_feature_add(l, "ebpf", "uprobe_session", ML_FEATURE_OK, "leaks --sample", NULL,
			       "a uprobe session attaches (leaks --sample: one link, and calls not "
			       "sampled take no return probe)");
	else
		ml_feature_add(l, "ebpf", "uprobe_session", ML_FEATURE_MISSING, "leaks --sample",
			       "none needed: leaks --sample falls back to two uprobe_multi links "
			       "(calls not sampled take their return probe too: Linux 6.13 or "
			       "newer has uprobe sessions)",
			       "a uprobe session on free() is refused: %s", strerror(-e));
}

/* @absent: ML_FEATURE_MISSING when a tracer needs it, else ML_FEATURE_INFO */
static void probe_pmu(struct ml_feature_list *l, const char *name, enum ml_feature_state absent,
		      const char *used_by, const char *fix, const char *what)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", name);
	if (access(path, R_OK) == 0)
		ml_feature_add(l, "ebpf", name,
			       absent == ML_FEATURE_INFO ? ML_FEATURE_INFO : ML_FEATURE_OK, used_by,
			       NULL, "the %s PMU is there (%s)", name, what);
	else
		ml_feature_add(l, "ebpf", name, absent, used_by, fix, "no %s PMU (%s)", name, what);
}

static void probe_files(struct ml_feature_list *l)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events", F_OK) == 0)
		ml_feature_add(l, "ebpf", "tracefs", ML_FEATURE_INFO, "none (libbpf's fallbacks)",
			       NULL, "tracefs is mounted");
	else
		ml_feature_add(l, "ebpf", "tracefs", ML_FEATURE_INFO, "none (libbpf's fallbacks)",
			       NULL,
			       "tracefs is not mounted; no tracer needs it while the uprobe PMU is "
			       "there (else: mount -t tracefs nodev /sys/kernel/tracing)");
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		ml_feature_add(l, "ebpf", "memory_cgroup", ML_FEATURE_INFO,
			       "oom (cgroup path, limit)", NULL,
			       "cgroup v2 (memory.max, memory.events)");
	else if (access("/sys/fs/cgroup/memory", F_OK) == 0)
		ml_feature_add(l, "ebpf", "memory_cgroup", ML_FEATURE_INFO,
			       "oom (cgroup path, limit)", NULL,
			       "cgroup v1 (memory.limit_in_bytes, memory.oom_control)");
	else
		ml_feature_add(l, "ebpf", "memory_cgroup", ML_FEATURE_INFO,
			       "oom (cgroup path, limit)", NULL,
			       "no memory cgroup: every OOM kill is global");
}

/* @word's value in the kernel command line (preempt=...), into @out */
static bool cmdline_value(const char *word, char *out, size_t len)
{
	char buf[4096], *p, *save;
	FILE *f = fopen("/proc/cmdline", "re");
	bool found = false;

	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		for (p = strtok_r(buf, " \n", &save); p; p = strtok_r(NULL, " \n", &save))
			if (!strncmp(p, word, strlen(word))) {
				snprintf(out, len, "%s", p + strlen(word));
				found = true;
			}
	}
	fclose(f);
	return found;
}

/* the preemption model the kernel was built with, from its config in /boot */
static const char *config_model(const char *release)
{
	static const struct {
		const char *opt, *mode;
	} models[] = {
		{ "CONFIG_PREEMPT_RT=y", "rt" },     { "CONFIG_PREEMPT_LAZY=y", "lazy" },
		{ "CONFIG_PREEMPT=y", "full" },	     { "CONFIG_PREEMPT_VOLUNTARY=y", "voluntary" },
		{ "CONFIG_PREEMPT_NONE=y", "none" },
	};
	const char *mode = NULL;
	char path[300], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/boot/config-%s", release);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (!mode && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		for (size_t i = 0; i < sizeof(models) / sizeof(models[0]) && !mode; i++)
			if (!strcmp(line, models[i].opt))
				mode = models[i].mode;
	}
	fclose(f);
	return mode;
}

/*
 * Whether the kernel preempts BPF programs. A preempted run of a tracing
 * program still holds its CPU's slot: the kernel skips other threads' runs
 * of it there (recursion_misses). The mode: debugfs's sched/preempt (the
 * one in parentheses), else preempt= on the command line, else the model
 * the kernel was built with (/boot/config-RELEASE, or a non-dynamic
 * kernel's version string).
 */
static void probe_preemption(struct ml_feature_list *l)
{
	static const char used_by[] = "faults, slab, oom";
	char buf[128];
	char *a, *b;
	const char *mode = NULL, *from = "sched/preempt";
	struct utsname u;
	FILE *f = fopen("/sys/kernel/debug/sched/preempt", "re");
	int why = f ? 0 : errno;

	if (f) {
		if (fgets(buf, sizeof(buf), f) && (a = strchr(buf, '(')) && (b = strchr(a, ')'))) {
			*b = '\0';
			mode = a + 1;
		}
		fclose(f);
	}
	if (!mode && cmdline_value("preempt=", buf, sizeof(buf))) {
		mode = buf;
		from = "preempt= at boot";
	}
	if (!mode && !uname(&u)) {
		from = "the kernel's build";
		mode = config_model(u.release);
		if (!mode && !strstr(u.version, "PREEMPT_DYNAMIC"))
			mode = strstr(u.version, "PREEMPT_RT") ? "rt"
			       : strstr(u.version, "PREEMPT ") ? "full"
							       : "none";
	}
	if (!mode)
		ml_feature_add(l, "ebpf", "preemption", ML_FEATURE_INFO, used_by, NULL,
			       "not known (debugfs's sched/preempt: %s); where BPF programs are "
			       "preempted, tracers count the runs the kernel skips",
			       why == ENOENT ? "not mounted" : strerror(why));
	else if (!strcmp(mode, "none") || !strcmp(mode, "voluntary"))
		ml_feature_add(l, "ebpf", "preemption", ML_FEATURE_INFO, used_by, NULL,
			       "%s (%s): BPF programs are not preempted", mode, from);
	else
		ml_feature_add(l, "ebpf", "preemption", ML_FEATURE_INFO, used_by, NULL,
			       "%s (%s): BPF programs are preempted; the kernel skips other "
			       "threads' runs of a preempted program on its CPU (recursion_misses)",
			       mode, from);
}

void mlt_trace_probe_features(struct ml_feature_list *l)
{
	struct ml_err err = { 0 };

	mlt_trace_libbpf_log(NULL);
	if (mlt_trace_preflight(&err)) {
		ml_feature_add(l, "ebpf", "bpf", ML_FEATURE_MISSING, "faults, slab, leaks, oom",
			       err.code == EPERM
				       ? "run as root (sudo)"
				       : "use a kernel built with CONFIG_DEBUG_INFO_BTF=y",
			       "%s", err.msg);
		return;
	}
	probe_programs(l);
	probe_ringbuf(l);
	probe_pmu(l, "uprobe", ML_FEATURE_MISSING, "leaks",
		  "use a kernel with CONFIG_UPROBE_EVENTS (libbpf then needs tracefs)",
		  "uprobes attach through perf_event_open");
	probe_uprobe_multi(l);
	probe_pmu(l, "kprobe", ML_FEATURE_INFO, "none (memlens uses tracepoints)", NULL,
		  "CONFIG_KPROBES; libbpf-tools such as oomkill need it");
	probe_preemption(l);
	probe_files(l);
}

/* `memlens --version`: the libbpf memlens runs with */
void mlt_trace_libbpf_version(unsigned int *major, unsigned int *minor)
{
	*major = libbpf_major_version();
	*minor = libbpf_minor_version();
}
