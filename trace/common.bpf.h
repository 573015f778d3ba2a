/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Helpers shared by the BPF side of every tracer. */
#ifndef MEMLENS_COMMON_BPF_H
#define MEMLENS_COMMON_BPF_H

/* log2 slot of @v: 0 for 0 and 1, 1 for 2..3, 2 for 4..7 ... capped at @max - 1 */
static __always_inline __u32 log2_slot(__u64 v, __u32 max)
{
	__u32 slot = 0;

#pragma unroll
	for (int i = 0; i < 40; i++) {
		if (v <= 1 || slot >= max - 1)
			break;
		v >>= 1;
		slot++;
	}
	return slot;
}

/*
 * memlens's own PID namespace (the nsfs device and inode of
 * /proc/self/ns/pid), set by user space when it is not the initial one:
 * pids are then reported and matched as memlens sees them (a container, a
 * Kubernetes pod), not as the kernel's global ones. 0: initial namespace.
 */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* Max PID namespace nesting looked at by task_tgid_ns() (the kernel's is 32). */
#define PIDNS_MAX_LEVEL 8

/*
 * struct bpf_pidns_info, a UAPI structure: spelt out so that reading it is
 * no CO-RE relocation (vmlinux.h's would be one, and an object with any
 * makes libbpf load the kernel's BTF).
 */
struct pidns_info {
	__u32 pid;
	__u32 tgid;
};

/* current's process id in memlens's PID namespace; 0 when it is not visible there */
static __always_inline __u32 current_tgid(void)
{
	struct pidns_info ns = {};

	if (!pidns_ino)
		return bpf_get_current_pid_tgid() >> 32;
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, (struct bpf_pidns_info *)&ns,
					sizeof(ns)))
		return 0;
	return ns.tgid;
}

/* @t's process id in memlens's PID namespace; 0 when it is not visible there */
static __always_inline __u32 task_tgid_ns(struct task_struct *t)
{
	struct pid *pid;
	unsigned int level;

	if (!pidns_ino)
		return BPF_CORE_READ(t, tgid);
	pid = BPF_CORE_READ(t, group_leader, thread_pid);
	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
#pragma unroll
	for (int i = 0; i < PIDNS_MAX_LEVEL; i++) {
		struct upid up = {};

		if (i > level)
			break;
		bpf_core_read(&up, sizeof(up), &pid->numbers[i]);
		if (up.ns && BPF_CORE_READ(up.ns, ns.inum) == pidns_ino)
			return up.nr;
	}
	return 0;
}

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

#endif
