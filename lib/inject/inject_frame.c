// SPDX-License-Identifier: MIT
#include <string.h>
#include <sys/syscall.h>

#include "inject_frame.h"

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

_Static_assert(sizeof(struct ml_sigcontext) == 256, "struct sigcontext is 256 bytes");
_Static_assert(sizeof(struct ml_ucontext) == 304, "struct ucontext is 304 bytes");
_Static_assert(sizeof(struct ml_rt_sigframe) == 440, "struct rt_sigframe is 440 bytes");
_Static_assert(ML_FRAME_FP_OFF >= sizeof(struct ml_rt_sigframe), "fpstate after the frame");

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

size_t mli_inject_fp_len(const void *xstate, size_t xstate_len)
{
	uint32_t magic1, size;

	if (xstate_len < 512)
		return 0;
	memcpy(&magic1, (const char *)xstate + ML_FXSAVE_SW_OFF, 4);
	memcpy(&size, (const char *)xstate + ML_FXSAVE_SW_OFF + 16, 4);
	if (magic1 != ML_FP_XSTATE_MAGIC1 || size < 512 + 64 || size > xstate_len)
		return 512; /* legacy fxsave image: the kernel restores x87/SSE from it */
	return (xstate_len > size + 4 ? xstate_len : size + 4);
}

size_t mli_inject_frame_len(size_t fp_len)
{
	return ML_FRAME_FP_OFF + align64(fp_len);
}

void mli_inject_frame_build(void *buf, uint64_t at, uint64_t pretcode,
			    const struct user_regs_struct *r, uint64_t mask, const void *xstate,
			    size_t xstate_len, size_t fp_len)
{
	struct ml_rt_sigframe f;
	struct ml_sigcontext *mc = &f.uc.mc;
	char *fp = (char *)buf + ML_FRAME_FP_OFF;

	memset(buf, 0, mli_inject_frame_len(fp_len));
	memset(&f, 0, sizeof(f));
	f.pretcode = pretcode;
	f.uc.uc_flags = ML_UC_SIGCONTEXT_SS | ML_UC_STRICT_RESTORE_SS;
	/* not SS_DISABLE, SS_ONSTACK or 0: do_sigaltstack() refuses it before
	 * changing anything, and rt_sigreturn ignores that refusal */
	f.uc.ss_flags = 3;
	mc->r8 = r->r8;
	mc->r9 = r->r9;
	mc->r10 = r->r10;
	mc->r11 = r->r11;
	mc->r12 = r->r12;
	mc->r13 = r->r13;
	mc->r14 = r->r14;
	mc->r15 = r->r15;
	mc->rdi = r->rdi;
	mc->rsi = r->rsi;
	mc->rbp = r->rbp;
	mc->rbx = r->rbx;
	mc->rdx = r->rdx;
	mc->rax = r->rax;
	mc->rcx = r->rcx;
	mc->rsp = r->rsp;
	mc->rip = r->rip;
	mc->eflags = r->eflags & ~(1ULL << 8); /* never the trap flag */
	mc->cs = (uint16_t)r->cs;
	mc->ss = (uint16_t)r->ss;
	f.uc.sigmask = mask;
	if (fp_len) {
		size_t n = xstate_len < fp_len ? xstate_len : fp_len;
		uint32_t magic1, size;

		memcpy(fp, xstate, n);
		memcpy(&magic1, fp + ML_FXSAVE_SW_OFF, 4);
		memcpy(&size, fp + ML_FXSAVE_SW_OFF + 16, 4);
		if (magic1 == ML_FP_XSTATE_MAGIC1 && size + 4 <= fp_len) {
			uint32_t m2 = ML_FP_XSTATE_MAGIC2;

			memcpy(fp + size, &m2, 4);
			f.uc.uc_flags |= ML_UC_FP_XSTATE;
		} else {
			memset(fp + ML_FXSAVE_SW_OFF, 0, 48);
		}
		mc->fpstate = at + ML_FRAME_FP_OFF;
	}
	memcpy(buf, &f, sizeof(f));
}

void mli_inject_apply_restart(struct user_regs_struct *r)
{
	if ((long)r->orig_rax < 0)
		return;
	switch ((long)r->rax) {
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
	case -ERESTART_RESTARTBLOCK:
		r->rax = r->orig_rax;
		r->rip -= 2;
		break;
	}
	r->orig_rax = (uint64_t)-1;
}
