// SPDX-License-Identifier: MIT
/*
 * Would the target's seccomp filters let an injected call through? A
 * systemd service with SystemCallFilter= is killed (SIGSYS) by a call
 * outside its list, so memlens runs the thread's own filters (classic
 * BPF, read with PTRACE_SECCOMP_GET_FILTER) on each call before it injects
 * it, as the kernel would.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "inject_seccomp.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef SECCOMP_RET_ACTION_FULL
#define SECCOMP_RET_ACTION_FULL 0xffff0000U
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif

#define MAX_FILTERS 256

/* Run one classic BPF program on @d; returns its verdict. */
uint32_t mli_seccomp_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	size_t pc = 0;

	while (pc < n) {
		const struct sock_filter *in = &f[pc++];
		uint32_t k = in->k, src = BPF_SRC(in->code) == BPF_X ? X : k;

		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
			if (BPF_MODE(in->code) == BPF_ABS && BPF_SIZE(in->code) == BPF_W &&
			    k + 4 <= sizeof(*d) && !(k & 3))
				memcpy(&A, (const char *)d + k, 4);
			else if (BPF_MODE(in->code) == BPF_LEN)
				A = sizeof(*d);
			else if (BPF_MODE(in->code) == BPF_IMM)
				A = k;
			else if (BPF_MODE(in->code) == BPF_MEM && k < BPF_MEMWORDS)
				A = M[k];
			else
				return SECCOMP_RET_KILL_PROCESS; /* the kernel rejects it */
			break;
		case BPF_LDX:
			if (BPF_MODE(in->code) == BPF_IMM)
				X = k;
			else if (BPF_MODE(in->code) == BPF_MEM && k < BPF_MEMWORDS)
				X = M[k];
			else if (BPF_MODE(in->code) == BPF_LEN)
				X = sizeof(*d);
			else
				return SECCOMP_RET_KILL_PROCESS;
			break;
		case BPF_ST:
			if (k < BPF_MEMWORDS)
				M[k] = A;
			break;
		case BPF_STX:
			if (k < BPF_MEMWORDS)
				M[k] = X;
			break;
		case BPF_ALU:
			switch (BPF_OP(in->code)) {
			case BPF_ADD:
				A += src;
				break;
			case BPF_SUB:
				A -= src;
				break;
			case BPF_MUL:
				A *= src;
				break;
			case BPF_DIV:
				A = src ? A / src : 0;
				break;
			case BPF_MOD:
				A = src ? A % src : 0;
				break;
			case BPF_AND:
				A &= src;
				break;
			case BPF_OR:
				A |= src;
				break;
			case BPF_XOR:
				A ^= src;
				break;
			case BPF_LSH:
				A = src < 32 ? A << src : 0;
				break;
			case BPF_RSH:
				A = src < 32 ? A >> src : 0;
				break;
			case BPF_NEG:
				A = -A;
				break;
			default:
				return SECCOMP_RET_KILL_PROCESS;
			}
			break;
		case BPF_JMP: {
			bool t;

			if (BPF_OP(in->code) == BPF_JA) {
				pc += k;
				continue;
			}
			switch (BPF_OP(in->code)) {
			case BPF_JEQ:
				t = A == src;
				break;
			case BPF_JGT:
				t = A > src;
				break;
			case BPF_JGE:
				t = A >= src;
				break;
			case BPF_JSET:
				t = (A & src) != 0;
				break;
			default:
				return SECCOMP_RET_KILL_PROCESS;
			}
			pc += t ? in->jt : in->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(in->code) == BPF_A ? A : k;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

static int32_t action(uint32_t ret)
{
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

static const char *action_name(uint32_t a)
{
	switch (a & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS:
		return "kill the process";
	case SECCOMP_RET_KILL_THREAD:
		return "kill the thread";
	case SECCOMP_RET_TRAP:
		return "send it SIGSYS";
	case SECCOMP_RET_USER_NOTIF:
		return "wait for a supervisor";
	}
	return "stop it";
}

int mli_seccomp_mode(pid_t tid)
{
	char path[64], line[128];
	int mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			mode = atoi(line + 8);
	fclose(f);
	return mode;
}

int mli_seccomp_check_calls(pid_t tid, const struct seccomp_data *calls, size_t n,
			    const char **names, struct ml_err *err)
{
	uint32_t verdict[16];
	int r = 0;

	if (n > 16)
		return ml_err_set(err, EINVAL, "too many calls to check");
	if (mli_seccomp_mode(tid) != 2)
		return 0; /* no filter (mode 1, strict, is refused by the caller's ENOSYS) */
	for (size_t c = 0; c < n; c++)
		verdict[c] = SECCOMP_RET_ALLOW;
	for (unsigned long idx = 0; idx < MAX_FILTERS; idx++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, NULL);
		struct sock_filter *prog;

		if (len < 0) {
			if (errno == ENOENT)
				break; /* past the last filter */
			/* no CAP_SYS_ADMIN: the filters cannot be read. Container
			 * runtimes' default profiles answer EPERM, not SIGSYS */
			return 0;
		}
		prog = calloc((size_t)len, sizeof(*prog));
		if (!prog)
			return ml_err_set(err, ENOMEM, "out of memory");
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, prog) != len) {
			free(prog);
			return 0;
		}
		for (size_t c = 0; c < n; c++) {
			uint32_t v = mli_seccomp_bpf_run(prog, (size_t)len, &calls[c]);

			if (action(v) < action(verdict[c]))
				verdict[c] = v;
		}
		free(prog);
	}
	for (size_t c = 0; c < n && !r; c++) {
		uint32_t a = verdict[c] & SECCOMP_RET_ACTION_FULL;

		if (a == SECCOMP_RET_ALLOW || a == SECCOMP_RET_LOG || a == SECCOMP_RET_ERRNO ||
		    a == SECCOMP_RET_TRACE)
			continue; /* it runs, or fails with an error the caller reports */
		r = ml_err_set(err, EPERM,
			       "the target's seccomp filter would %s on %s(): memlens does not "
			       "inject it (allow userfaultfd, close and rt_sigreturn in the "
			       "service's system call filter to profile it)",
			       action_name(a), names[c]);
	}
	return r;
}
