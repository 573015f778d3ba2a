// SPDX-License-Identifier: MIT
/* uprobe_multi links through the raw bpf(2) system call (see umulti.h). */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "umulti.h"

/*
 * The uprobe_multi member of union bpf_attr's link_create, as the kernel
 * defines it (include/uapi/linux/bpf.h since 6.6): older system headers
 * lack it, so it is spelt out here with the same layout.
 */
struct umulti_link_create {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__aligned_u64 path;
	__aligned_u64 offsets;
	__aligned_u64 ref_ctr_offsets;
	__aligned_u64 cookies;
	__u32 cnt;
	__u32 multi_flags; /* BPF_F_UPROBE_MULTI_RETURN */
	__u32 pid;
};

#define UMULTI_RETURN 1U /* BPF_F_UPROBE_MULTI_RETURN */

static int link_create(int prog_fd, __u32 attach_type, const char *path, const uint64_t *offs,
		       const uint64_t *cookies, unsigned int cnt, bool ret, pid_t pid)
{
	union {
		union bpf_attr attr;
		struct umulti_link_create lc;
		char pad[sizeof(union bpf_attr) > sizeof(struct umulti_link_create)
				 ? sizeof(union bpf_attr)
				 : sizeof(struct umulti_link_create)];
	} a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = (__u32)prog_fd;
	a.lc.attach_type = attach_type;
	a.lc.path = (__u64)(uintptr_t)path;
	a.lc.offsets = (__u64)(uintptr_t)offs;
	a.lc.cookies = (__u64)(uintptr_t)cookies;
	a.lc.cnt = cnt;
	a.lc.multi_flags = ret ? UMULTI_RETURN : 0;
	a.lc.pid = (__u32)pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : (int)fd;
}

int mlt_umulti_attach(int prog_fd, const char *path, const uint64_t *offs, const uint64_t *cookies,
		      unsigned int cnt, bool ret, pid_t pid)
{
	return link_create(prog_fd, UMULTI_ATTACH_TYPE, path, offs, cookies, cnt, ret, pid);
}

int mlt_umulti_attach_session(int prog_fd, const char *path, const uint64_t *offs,
			      const uint64_t *cookies, unsigned int cnt, pid_t pid)
{
	return link_create(prog_fd, UMULTI_SESSION_ATTACH_TYPE, path, offs, cookies, cnt, false,
			   pid);
}
