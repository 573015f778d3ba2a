/* SPDX-License-Identifier: MIT */
/*
 * uprobe_multi links (kernel 6.6+): many uprobes of one program on one file
 * in a single link, attached in one system call and removed with one wait
 * for the kernel's grace periods (a perf-event uprobe waits once per
 * probe). libbpf 1.1 has no API for them: this is the raw BPF_LINK_CREATE.
 */
#ifndef MEMLENS_TRACE_UMULTI_H
#define MEMLENS_TRACE_UMULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* the bpf_attach_type a program must be loaded with to be attached so */
#define UMULTI_ATTACH_TYPE 48 /* BPF_TRACE_UPROBE_MULTI */
/* the same for a uprobe session (Linux 6.13+): one program at entry and return */
#define UMULTI_SESSION_ATTACH_TYPE 57 /* BPF_TRACE_UPROBE_SESSION */

/*
 * Attach @prog_fd at the @cnt file offsets @offs of @path, each with its
 * cookie (bpf_get_attach_cookie()), for process @pid only (0: every
 * process); @ret: return probes. Returns the link's fd (close it to
 * detach) or -errno.
 */
int mlt_umulti_attach(int prog_fd, const char *path, const uint64_t *offs, const uint64_t *cookies,
		      unsigned int cnt, bool ret, pid_t pid);

/*
 * The same as a uprobe session: the program runs at each entry, and at its
 * return when the entry returned 0 (the program tells which by its ip).
 */
int mlt_umulti_attach_session(int prog_fd, const char *path, const uint64_t *offs,
			      const uint64_t *cookies, unsigned int cnt, pid_t pid);

#endif
