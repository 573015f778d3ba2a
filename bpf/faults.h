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

#endif
