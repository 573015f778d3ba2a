// SPDX-License-Identifier: MIT
/* The continuation frames and the seccomp evaluation: pure logic. */
#include <errno.h>
#include <linux/audit.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "../../lib/inject/inject_frame.h"
#include "../../lib/inject/inject_seccomp.h"
#include "harness.h"

static void test_frame_layout(void)
{
	/* offsets of the kernel's struct rt_sigframe (x86_64) */
	CHECK_EQ(offsetof(struct ml_rt_sigframe, uc), 8);
	CHECK_EQ(offsetof(struct ml_ucontext, mc), 40);
	CHECK_EQ(offsetof(struct ml_sigcontext, rip), 128);
	CHECK_EQ(offsetof(struct ml_sigcontext, fpstate), 184);
	CHECK_EQ(offsetof(struct ml_ucontext, sigmask), 296);
	CHECK_EQ(offsetof(struct ml_rt_sigframe, info), 312);
}

static void test_frame_contents(void)
{
	unsigned char xs[1024] = { 0 }, buf[4096];
	struct user_regs_struct r = { 0 };
	struct ml_rt_sigframe f;
	uint32_t magic1 = ML_FP_XSTATE_MAGIC1, size = 832, m2;
	size_t fp;

	memcpy(xs + ML_FXSAVE_SW_OFF, &magic1, 4);
	memcpy(xs + ML_FXSAVE_SW_OFF + 16, &size, 4);
	xs[0] = 0x7f; /* fcw byte, copied as is */
	fp = mli_inject_fp_len(xs, 1024);
	CHECK_EQ(fp, 1024); /* the whole image, and room for MAGIC2 at 832 */
	CHECK_EQ(mli_inject_frame_len(fp), ML_FRAME_FP_OFF + 1024);
	r.rip = 0x401000;
	r.rsp = 0x7ffd0000;
	r.rax = 42;
	r.eflags = 0x346; /* with TF */
	r.cs = 0x33;
	r.ss = 0x2b;
	mli_inject_frame_build(buf, 0x7ffc0000, 0xdead, &r, 0x1234, xs, 1024, fp);
	memcpy(&f, buf, sizeof(f));
	CHECK_EQ(f.pretcode, 0xdead);
	CHECK_EQ(f.uc.mc.rip, 0x401000);
	CHECK_EQ(f.uc.mc.rsp, 0x7ffd0000);
	CHECK_EQ(f.uc.mc.rax, 42);
	CHECK_EQ(f.uc.mc.eflags, 0x246); /* never the trap flag */
	CHECK_EQ(f.uc.mc.cs, 0x33);
	CHECK_EQ(f.uc.mc.ss, 0x2b);
	CHECK_EQ(f.uc.sigmask, 0x1234);
	CHECK_EQ(f.uc.mc.fpstate, 0x7ffc0000 + ML_FRAME_FP_OFF);
	CHECK(f.uc.uc_flags & ML_UC_FP_XSTATE);
	CHECK_EQ(f.uc.ss_flags, 3); /* an invalid mode: the altstack stays */
	CHECK_EQ(buf[ML_FRAME_FP_OFF], 0x7f);
	memcpy(&m2, buf + ML_FRAME_FP_OFF + 832, 4);
	CHECK_EQ(m2, ML_FP_XSTATE_MAGIC2);
}

static void test_legacy_fp_image(void)
{
	unsigned char xs[512] = { 0 };

	CHECK_EQ(mli_inject_fp_len(xs, 512), 512);
	CHECK_EQ(mli_inject_fp_len(xs, 100), 0);
}

static void test_restart_applied(void)
{
	struct user_regs_struct r = { 0 };

	r.orig_rax = SYS_nanosleep;
	r.rax = (uint64_t)-516; /* -ERESTART_RESTARTBLOCK */
	r.rip = 0x1002;
	mli_inject_apply_restart(&r);
	CHECK_EQ(r.rax, SYS_nanosleep);
	CHECK_EQ(r.rip, 0x1000);
	CHECK_EQ((long)r.orig_rax, -1);
	r.orig_rax = SYS_read;
	r.rax = 5; /* completed: nothing to restart */
	r.rip = 0x2002;
	mli_inject_apply_restart(&r);
	CHECK_EQ(r.rax, 5);
	CHECK_EQ(r.rip, 0x2002);
	r.orig_rax = (uint64_t)-1; /* not in a call */
	r.rax = (uint64_t)-512;
	mli_inject_apply_restart(&r);
	CHECK_EQ((long)r.rax, -512);
}

static void test_seccomp_eval(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 400, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct seccomp_data d = { .nr = SYS_userfaultfd, .arch = AUDIT_ARCH_X86_64 };

	CHECK_EQ(mli_seccomp_bpf_run(f, 9, &d), SECCOMP_RET_ERRNO | EPERM);
	d.nr = SYS_close;
	CHECK_EQ(mli_seccomp_bpf_run(f, 9, &d), SECCOMP_RET_ALLOW);
	d.nr = 435;
	CHECK_EQ(mli_seccomp_bpf_run(f, 9, &d), SECCOMP_RET_TRAP);
	d.arch = 0x40000003; /* i386 */
	CHECK_EQ(mli_seccomp_bpf_run(f, 9, &d), SECCOMP_RET_KILL_PROCESS);
}

int main(void)
{
	RUN(test_frame_layout);
	RUN(test_frame_contents);
	RUN(test_legacy_fp_image);
	RUN(test_restart_applied);
	RUN(test_seccomp_eval);
	return T_DONE();
}
