/* SPDX-License-Identifier: MIT */
/*
 * rt_sigreturn frames for the continuation of an orphaned injection
 * (x86_64 kernel ABI: arch/x86/include/asm/sigframe.h, uapi sigcontext.h).
 * Private to lib/inject*.c.
 */
#ifndef MEMLENS_INJECT_FRAME_H
#define MEMLENS_INJECT_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

struct ml_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved1[8];
};

struct ml_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t ss_pad;
	uint64_t ss_size;
	struct ml_sigcontext mc;
	uint64_t sigmask;
};

struct ml_rt_sigframe {
	uint64_t pretcode;
	struct ml_ucontext uc;
	unsigned char info[128];
};

#define ML_UC_FP_XSTATE 0x1
#define ML_UC_SIGCONTEXT_SS 0x2
#define ML_UC_STRICT_RESTORE_SS 0x4
#define ML_FP_XSTATE_MAGIC1 0x46505853U
#define ML_FP_XSTATE_MAGIC2 0x46505845U
#define ML_FXSAVE_SW_OFF 464 /* struct _fpx_sw_bytes in the fxsave area */
#define ML_FRAME_FP_OFF 448 /* fpstate: 64-byte aligned, after the frame */

/*
 * Bytes the signal frame's FPU area needs for this XSAVE image, the
 * MAGIC2 word included; 0 when the image is unusable.
 */
size_t mli_inject_fp_len(const void *xstate, size_t xstate_len);

/* Size of one frame (frame + FPU area), a multiple of 64. */
size_t mli_inject_frame_len(size_t fp_len);

/*
 * Build, in @buf, the frame that will sit at target address @at (64-byte
 * aligned): rt_sigreturn from it loads @r, @mask and the XSAVE image.
 * @pretcode is the word rsp points at before `ret` (the rt_sigreturn
 * sequence). The alternate signal stack is left as it is: the frame's
 * uc_stack carries an invalid mode, which the kernel ignores.
 */
void mli_inject_frame_build(void *buf, uint64_t at, uint64_t pretcode,
			    const struct user_regs_struct *r, uint64_t mask, const void *xstate,
			    size_t xstate_len, size_t fp_len);

/*
 * rt_sigreturn leaves no syscall to restart (orig_rax = -1): apply to @r,
 * as the kernel would on resume, the restart of the call it was stopped
 * in. A call with a restart block is entered again with its arguments.
 */
void mli_inject_apply_restart(struct user_regs_struct *r);

#endif
