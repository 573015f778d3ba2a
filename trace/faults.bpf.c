// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * memlens faults, kernel side. Two ways to see a page fault:
 *
 * fentry/fexit handle_mm_fault (preferred): every call with its flags and
 *   result. A fault that returns VM_FAULT_RETRY is called again with
 *   FAULT_FLAG_TRIED; the kernel (mm_account_fault) counts only the
 *   completing call, as major when it has VM_FAULT_MAJOR or FAULT_FLAG_TRIED.
 *   We count exactly the same way, so the TRIED completion of a major fault
 *   is never also counted as a minor one, and errors are not counted.
 *
 * tp_btf page_fault_user/page_fault_kernel + perf software events
 *   PAGE_FAULTS_MIN/MAJ (fallback, where fentry is refused): the exception
 *   tracepoint starts the clock, the perf event, which the kernel emits from
 *   mm_account_fault() once per completed fault with its final class, stops
 *   it. One exception -> one count, however many retries it took. The
 *   kernel emits no perf event for a fault without user registers (regs
 *   NULL: get_user_pages() faulting pages in for a system call), though it
 *   counts it in current's min_flt/maj_flt like any other: this mode cannot
 *   see those.
 *
 * For one process, both modes also keep the kernel's own counters of each
 * thread at its exit (sched_process_exit), which user space adds to those
 * of the threads still alive: the kernel's total, to compare with.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "common.bpf.h"
#include "faults.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile bool per_pid = false;

__u64 minor_hist[FAULTS_HIST_SLOTS];
__u64 major_hist[FAULTS_HIST_SLOTS];

/*
 * A thread's fault in progress, in task-local storage: its own, freed with
 * it, and no other thread's update can touch it while a program holds it
 * (a hash map keyed by thread id could not promise that on Linux 7.2 and
 * 7.3, as leaks found there).
 */
struct fault_start {
	__u64 ts; /* 0: none in progress */
	__u32 pending; /* the last call returned VM_FAULT_RETRY */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct faults_key);
	__type(value, struct faults_val);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fault_start);
} start SEC(".maps");

/* current's fault in progress, created when @create (NULL: none, or no memory) */
static __always_inline struct fault_start *fault_of_current(bool create)
{
	return bpf_task_storage_get(&start, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct faults_exit);
} exited SEC(".maps");

/* current's thread id in memlens's PID namespace (0: not visible there) */
static __always_inline __u32 current_tid_here(void)
{
	struct bpf_pidns_info ns = {};

	if (!pidns_ino)
		return current_tid();
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	return ns.pid;
}

static __always_inline bool wanted(void)
{
	return !target_tgid || current_tgid() == target_tgid;
}

static __always_inline void account(bool major, bool retried, __u64 ts)
{
	struct faults_key key = {};
	struct faults_val zero = {}, *val;
	__u32 slot;

	key.pid = per_pid ? current_tgid() : 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	val = bpf_map_lookup_elem(&counts, &key);
	if (!val) {
		bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		val = bpf_map_lookup_elem(&counts, &key);
		if (!val)
			return;
	}
	if (major)
		__sync_fetch_and_add(&val->major, 1);
	else
		__sync_fetch_and_add(&val->minor, 1);
	if (retried)
		__sync_fetch_and_add(&val->retried, 1);
	if (!ts)
		return;
	slot = log2_slot((bpf_ktime_get_ns() - ts) / 1000, FAULTS_HIST_SLOTS);
	if (slot >= FAULTS_HIST_SLOTS)
		return;
	if (major)
		__sync_fetch_and_add(&major_hist[slot], 1);
	else
		__sync_fetch_and_add(&minor_hist[slot], 1);
}

/* ---- fentry/fexit mode ---- */

SEC("fentry/handle_mm_fault")
int BPF_PROG(mm_fault_enter, struct vm_area_struct *vma, unsigned long address, unsigned int flags,
	     struct pt_regs *regs)
{
	struct fault_start *st;

	if (!wanted())
		return 0;
	st = fault_of_current(true);
	if (!st)
		return 0;
	if (st->pending) { /* the retry of a fault we already timed */
		st->pending = 0;
		return 0;
	}
	st->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("fexit/handle_mm_fault")
int BPF_PROG(mm_fault_exit, struct vm_area_struct *vma, unsigned long address, unsigned int flags,
	     struct pt_regs *regs, vm_fault_t ret)
{
	__u32 retry = bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_RETRY);
	__u32 error = bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_OOM) |
		      bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_SIGBUS) |
		      bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_SIGSEGV) |
		      bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_HWPOISON) |
		      bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_HWPOISON_LARGE) |
		      bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_FALLBACK);
	__u32 vmmajor = bpf_core_enum_value(enum vm_fault_reason, VM_FAULT_MAJOR);
	__u32 tried = bpf_core_enum_value(enum fault_flag, FAULT_FLAG_TRIED);
	struct fault_start *st;
	__u64 ts;

	st = fault_of_current(false);
	if (!st || !st->ts)
		return 0;
	if (ret & retry) { /* incomplete: the kernel calls us again */
		st->pending = 1;
		return 0;
	}
	ts = st->ts;
	st->ts = 0;
	if (ret & error)
		return 0;
	/* retried: completed with FAULT_FLAG_TRIED */
	account((ret & vmmajor) || (flags & tried), flags & tried, ts);
	return 0;
}

/* ---- tracepoint + perf event mode ---- */

static __always_inline int fault_begin(void)
{
	struct fault_start *st;

	if (!wanted())
		return 0;
	st = fault_of_current(true);
	if (st)
		st->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(pf_user, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return fault_begin();
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(pf_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return fault_begin();
}

static __always_inline int fault_end(bool major)
{
	struct fault_start *st;
	__u64 ts = 0;

	if (!wanted())
		return 0;
	st = fault_of_current(false);
	if (st) {
		ts = st->ts;
		st->ts = 0;
	}
	account(major, false, ts);
	return 0;
}

SEC("perf_event")
int sw_fault_min(struct bpf_perf_event_data *ctx)
{
	return fault_end(false);
}

SEC("perf_event")
int sw_fault_maj(struct bpf_perf_event_data *ctx)
{
	return fault_end(true);
}

/* ---- both modes, for one process: the kernel's counters at thread exit ---- */

/*
 * Called before exit_mm(): the thread can fault no more in its own memory.
 * A thread id used twice in a run adds up.
 */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(thread_exit)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct faults_exit c = {}, *old;
	__u32 tid;

	if (!target_tgid || !wanted())
		return 0;
	tid = current_tid_here();
	c.minflt = BPF_CORE_READ(t, min_flt);
	c.majflt = BPF_CORE_READ(t, maj_flt);
	old = bpf_map_lookup_elem(&exited, &tid);
	if (old) {
		old->minflt += c.minflt;
		old->majflt += c.majflt;
		return 0;
	}
	bpf_map_update_elem(&exited, &tid, &c, BPF_ANY);
	return 0;
}
