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

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

#endif
