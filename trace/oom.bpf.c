// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens oom, kernel side. mark_victim fires once per OOM victim, in the
 * context of the task whose allocation triggered the OOM (current).
 *
 * fentry/oom_kill_process (preferred) adds the struct oom_control: its memcg
 * says cgroup or global, its totalpages is the limit (filled in only once the
 * victim is chosen, which is why out_of_memory() entry is too early).
 * Without fentry, the memcg whose usage has reached its max, walking up from
 * the victim's, is the one that hit its limit; none at its max means global.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "oom.h"

char LICENSE[] SEC("license") = "GPL";

/* page_counter_try_charge() fails once usage + nr_pages > max; OOM only for
 * orders <= PAGE_ALLOC_COSTLY_ORDER after the charge batch was tried. */
#define OOM_USAGE_SLACK 64
#define PAGE_COUNTER_MAX_ (0x7fffffffffffffffUL / 4096)

struct oc_info {
	struct mem_cgroup *memcg;
	__u64 totalpages;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* entries of dead threads age out */
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct oc_info);
} pending SEC(".maps");

struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

SEC("fentry/oom_kill_process")
int BPF_PROG(oom_kill_enter, struct oom_control *oc, const char *message)
{
	__u32 tid = current_tid();
	struct oc_info info = {};

	info.memcg = BPF_CORE_READ(oc, memcg);
	info.totalpages = BPF_CORE_READ(oc, totalpages);
	bpf_map_update_elem(&pending, &tid, &info, BPF_ANY);
	return 0;
}

static __always_inline struct mem_cgroup *task_memcg(struct task_struct *t)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);

	return (struct mem_cgroup *)BPF_CORE_READ(t, cgroups, subsys[id]);
}

static __always_inline struct mem_cgroup *memcg_parent(struct mem_cgroup *m)
{
	return (struct mem_cgroup *)BPF_CORE_READ(m, css.parent);
}

/* The first memcg from @m up whose usage reached its max, or NULL. */
static __always_inline struct mem_cgroup *limit_memcg(struct mem_cgroup *m, struct oom_event *e)
{
	for (int i = 0; i < 16 && m; i++) {
		__u64 max = BPF_CORE_READ(m, memory.max);
		__u64 usage = BPF_CORE_READ(m, memory.usage.counter);

		if (!memcg_parent(m))
			break; /* the root has no limit */
		if (max < PAGE_COUNTER_MAX_ && usage + OOM_USAGE_SLACK >= max) {
			e->limit_pages = max;
			e->usage_pages = usage;
			return m;
		}
		m = memcg_parent(m);
	}
	return NULL;
}

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	struct kernfs_node___old *old = (void *)kn;

	if (bpf_core_field_exists(old->parent))
		return BPF_CORE_READ(old, parent);
	return BPF_CORE_READ(kn, __parent);
}

static __always_inline void cgroup_names(struct mem_cgroup *m, struct oom_event *e)
{
	struct kernfs_node *kn = BPF_CORE_READ(m, css.cgroup, kn);

	for (int i = 0; i < OOM_CG_DEPTH; i++) {
		struct kernfs_node *up;

		if (!kn)
			return;
		up = kn_parent(kn);
		if (!up)
			return; /* the hierarchy's root: path "/" */
		bpf_probe_read_kernel_str(e->cg_names[i], OOM_CG_NAME, BPF_CORE_READ(kn, name));
		e->cg_levels = i + 1;
		kn = up;
	}
	if (kn && kn_parent(kn))
		e->cg_truncated = 1;
}

/* before 6.2: struct mm_rss_stat { atomic_long_t count[NR_MM_COUNTERS]; } */
struct mm_rss_stat___pre62 {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

/* Linux 7.0 on, get_mm_counter(), which the kernel's own OOM report uses,
 * is the exact sum of the per-CPU counters (percpu_counter_sum_positive);
 * before, it was the shared count alone (percpu_counter_read_positive). The
 * per-CPU parts are at counters + __per_cpu_offset[cpu] for every possible
 * CPU (an offline one's part is folded into count when it goes). The loader
 * sets per_cpu_offsets (from /proc/kallsyms) on the kernels that sum. */
const volatile __u64 per_cpu_offsets = 0; /* &__per_cpu_offset, 0: do not sum */
const volatile __u32 nr_cpus = 0; /* possible CPUs */
#define OOM_MAX_CPUS 8192

static __always_inline __s64 percpu_counter_sum(struct percpu_counter *fbc)
{
	const unsigned long *offsets = (const unsigned long *)per_cpu_offsets;
	unsigned long base = (unsigned long)BPF_CORE_READ(fbc, counters);
	__s64 v = BPF_CORE_READ(fbc, count);

	for (__u32 cpu = 0; cpu < nr_cpus && cpu < OOM_MAX_CPUS; cpu++) {
		unsigned long off;
		__s32 part;

		if (bpf_probe_read_kernel(&off, sizeof(off), &offsets[cpu]) ||
		    bpf_probe_read_kernel(&part, sizeof(part), (void *)(base + off)))
			break;
		v += part;
	}
	return v;
}

static __always_inline __s64 mm_counter(struct mm_struct *mm, int member)
{
	struct mm_struct___pre62 *old = (void *)mm;
	__s64 v = 0;

	/* since 6.2 rss_stat is struct percpu_counter[]: read it the way the
	 * kernel's OOM report does (above); before, struct mm_rss_stat (gone
	 * since): the other branch is dead there, and its unresolved
	 * relocation with it */
	if (bpf_core_type_exists(struct mm_rss_stat___pre62))
		bpf_core_read(&v, sizeof(v), &old->rss_stat.count[member].counter);
	else if (per_cpu_offsets && nr_cpus)
		v = percpu_counter_sum(&mm->rss_stat[member]);
	else
		bpf_core_read(&v, sizeof(v), &mm->rss_stat[member].count);
	return v > 0 ? v : 0;
}

/* kills not reported: the ring buffer was full */
__u64 lost_events = 0;

SEC("tp_btf/mark_victim")
int BPF_PROG(victim, struct task_struct *task, uid_t uid)
{
	__u32 tid = current_tid();
	struct mem_cgroup *where = NULL;
	struct oc_info *oc;
	struct oom_event *e;
	struct mm_struct *mm;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost_events, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->victim_pid = task_tgid_ns(task);
	BPF_CORE_READ_STR_INTO(&e->victim_comm, task, comm);
	e->trigger_pid = current_tgid();
	bpf_get_current_comm(&e->trigger_comm, sizeof(e->trigger_comm));
	mm = BPF_CORE_READ(task, mm);
	if (mm) {
		e->anon_pages = mm_counter(mm, MM_ANONPAGES);
		e->file_pages = mm_counter(mm, MM_FILEPAGES);
		e->shmem_pages = mm_counter(mm, MM_SHMEMPAGES);
		e->total_vm_pages = BPF_CORE_READ(mm, total_vm);
	}
	oc = bpf_map_lookup_elem(&pending, &tid);
	if (oc) {
		e->from_fentry = 1;
		e->limit_pages = oc->totalpages;
		e->scope = oc->memcg ? OOM_SCOPE_CGROUP : OOM_SCOPE_GLOBAL;
		where = oc->memcg;
		if (where)
			e->usage_pages = BPF_CORE_READ(where, memory.usage.counter);
		bpf_map_delete_elem(&pending, &tid);
	} else {
		where = limit_memcg(task_memcg(task), e);
		e->scope = where ? OOM_SCOPE_CGROUP : OOM_SCOPE_GLOBAL;
	}
	if (!where)
		where = task_memcg(task);
	if (where)
		cgroup_names(where, e);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
