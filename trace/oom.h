/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens oom: the event the BPF side sends for every OOM kill. */
#ifndef MEMLENS_OOM_H
#define MEMLENS_OOM_H

#define OOM_COMM_LEN 16
#define OOM_CG_DEPTH 8 /* cgroup path components kept, innermost first */
#define OOM_CG_NAME 48

enum oom_scope {
	OOM_SCOPE_UNKNOWN = 0,
	OOM_SCOPE_GLOBAL = 1,
	OOM_SCOPE_CGROUP = 2,
};

struct oom_event {
	__u64 ts_ns;
	__u32 victim_pid;
	__u32 trigger_pid;
	char victim_comm[OOM_COMM_LEN];
	char trigger_comm[OOM_COMM_LEN];
	__s64 anon_pages;
	__s64 file_pages;
	__s64 shmem_pages;
	__u64 total_vm_pages;
	__u64 limit_pages; /* the limit that was hit (0: not known here) */
	__u64 usage_pages; /* that cgroup's usage at the kill */
	__u32 scope; /* enum oom_scope */
	__u32 from_fentry; /* scope and limit come from struct oom_control */
	__u32 cg_levels; /* components in cg_names[] */
	__u32 cg_truncated; /* the path goes up further than OOM_CG_DEPTH */
	char cg_names[OOM_CG_DEPTH][OOM_CG_NAME]; /* memcg of the limit, leaf first */
};

#endif
