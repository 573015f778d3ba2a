/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* memlens faults: what the BPF side and the user side share. */
#ifndef MEMLENS_FAULTS_H
#define MEMLENS_FAULTS_H

#define FAULTS_HIST_SLOTS 26 /* log2 buckets of microseconds */
#define FAULTS_COMM_LEN 16

struct faults_key {
	__u32 pid; /* tgid, or 0 when counting per comm */
	char comm[FAULTS_COMM_LEN];
};

struct faults_val {
	__u64 minor;
	__u64 major;
	__u64 retried; /* completed with FAULT_FLAG_TRIED (a retry after I/O) */
};

/*
 * A thread of the traced process at its exit: the kernel's own counters
 * (task_struct min_flt/maj_flt, what getrusage() adds up), keyed by its
 * thread id as memlens sees it.
 */
struct faults_exit {
	__u64 minflt;
	__u64 majflt;
};

#endif
