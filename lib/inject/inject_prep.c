// SPDX-License-Identifier: MIT
/*
 * What an injection needs, found before the target is stopped: the two
 * instruction sequences it executes (in code the target already has) and
 * its main stack mapping, at whose bottom the continuation frames go.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "inject.h"
#include "memlens/maps.h"

static const unsigned char SYSCALL_RET[] = { 0x0f, 0x05, 0xc3 };
static const unsigned char SIGRETURN_RAX[] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
};
static const unsigned char SIGRETURN_EAX[] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* Find the sequences still missing in [start, end) of the target. */
static int search_range(pid_t pid, uint64_t start, uint64_t end, struct mli_inject_prep *p)
{
	static const size_t chunk = 256 * 1024, overlap = 16;
	unsigned char *buf = malloc(chunk + overlap);
	uint64_t pos;

	if (!buf)
		return -ENOMEM;
	for (pos = start; pos < end && (!p->syscall_ret || !p->sigreturn); pos += chunk) {
		size_t len = end - pos < chunk + overlap ? end - pos : chunk + overlap;
		struct iovec l = { buf, len }, r = { (void *)(uintptr_t)pos, len };
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (n < (ssize_t)sizeof(SIGRETURN_RAX))
			break;
		for (ssize_t i = 0; i + (ssize_t)sizeof(SIGRETURN_RAX) <= n; i++) {
			unsigned char c = buf[i];

			if (c != 0x0f && c != 0x48 && c != 0xb8)
				continue; /* the common case, cheaply */
			if (!p->syscall_ret && !memcmp(buf + i, SYSCALL_RET, sizeof(SYSCALL_RET)))
				p->syscall_ret = pos + (uint64_t)i;
			if (!p->sigreturn &&
			    (!memcmp(buf + i, SIGRETURN_RAX, sizeof(SIGRETURN_RAX)) ||
			     !memcmp(buf + i, SIGRETURN_EAX, sizeof(SIGRETURN_EAX))))
				p->sigreturn = pos + (uint64_t)i;
		}
	}
	free(buf);
	return 0;
}

static int find_in(pid_t pid, const struct ml_vma_set *s, struct mli_inject_prep *p)
{
	int r = 0;

	/* the vDSO first (the kernel's, never written), then file-backed
	 * code; never anonymous executable memory, which a JIT rewrites */
	for (size_t i = 0; i < s->n && !r; i++)
		if (s->v[i].kind == ML_VMA_VDSO)
			r = search_range(pid, s->v[i].start, s->v[i].end, p);
	for (size_t i = 0; i < s->n && !r && (!p->syscall_ret || !p->sigreturn); i++) {
		const struct ml_vma *v = &s->v[i];

		if (v->perms[2] == 'x' && v->inode && v->kind != ML_VMA_VSYSCALL &&
		    v->kind != ML_VMA_VDSO)
			r = search_range(pid, v->start, v->end, p);
	}
	return r;
}

static int gadget_error(const struct mli_inject_prep *p, pid_t pid, struct ml_err *err)
{
	return ml_err_set(err, ENOEXEC,
			  "pid %d has no %s in its vDSO or mapped code: memlens injects only "
			  "through code the target already has, so it cannot attach safely",
			  (int)pid,
			  !p->syscall_ret ? "\"syscall; ret\" instruction pair"
					  : "rt_sigreturn sequence (mov $15,%eax; syscall)");
}

/* Read the maps; find the sequences, and with @stack the [stack] mapping. */
static int read_and_find(pid_t pid, struct mli_inject_prep *p, bool stack, struct ml_err *err)
{
	struct ml_vma_set s;
	int r;

	ml_vma_set_init(&s);
	r = ml_maps_read(pid, &s, err);
	if (r)
		goto out;
	ml_maps_classify(&s, NULL);
	for (size_t i = 0; stack && i < s.n; i++) {
		const char *path = ml_vma_path(&s, &s.v[i]);

		if (path && !strcmp(path, "[stack]")) {
			p->stack_start = s.v[i].start;
			p->stack_end = s.v[i].end;
		}
	}
	p->syscall_ret = p->sigreturn = 0;
	r = find_in(pid, &s, p);
	if (r)
		r = ml_err_set(err, -r, "searching the target's code: %s", strerror(-r));
	else if (!p->syscall_ret || !p->sigreturn)
		r = gadget_error(p, pid, err);
out:
	ml_vma_set_free(&s);
	return r;
}

int mli_inject_find_gadgets(pid_t pid, struct mli_inject_prep *p, struct ml_err *err)
{
	return read_and_find(pid, p, false, err);
}

int mli_inject_prepare(pid_t pid, struct mli_inject_prep *p, struct ml_err *err)
{
	memset(p, 0, sizeof(*p));
	return read_and_find(pid, p, true, err);
}
