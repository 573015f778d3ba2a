// SPDX-License-Identifier: MIT
/*
 * DWARF unwinding of copied user stacks with libdwfl (unwind.h).
 *
 * One Dwfl per process, kept: its modules (the ELF files of
 * /proc/PID/maps) and their call frame information are read once, not per
 * stack. It is reported again when a pc falls in no module (a library
 * loaded since), at most every REPORT_EVERY_NS. The process is "attached"
 * with callbacks that never stop nor ptrace it: the thread to unwind is
 * always the one of the current input, its initial registers those copied,
 * its memory the copy (and the file mappings, through /proc/PID/mem).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unwind.h"

/*
 * The 64-bit word at @addr from the copy in @in: false when it is not
 * wholly inside [regs[UNWIND_SP], regs[UNWIND_SP] + size). (Unused without
 * libdw but by tests/unit/test_unwind.c, which includes this file.)
 */
static __attribute__((unused)) bool unwind_copy_read(const struct unwind_input *in, uint64_t addr,
						     uint64_t *out)
{
	uint64_t sp = in->regs[UNWIND_SP];

	if (addr < sp || addr + sizeof(*out) < addr || addr + sizeof(*out) > sp + in->size ||
	    sp + in->size < sp)
		return false;
	memcpy(out, (const char *)in->stack + (addr - sp), sizeof(*out));
	return true;
}

/*
 * The x86-64 DWARF register numbers of the copied registers (rbx 3, rbp 6,
 * rsp 7, r12-r15 12-15; the pc is apart): @dwarf[i] for enum unwind_reg i,
 * -1 for UNWIND_IP. (Unused without libdw, as unwind_copy_read().)
 */
static __attribute__((unused)) int unwind_dwarf_regno(enum unwind_reg r)
{
	static const int x86_64[UNWIND_NR_REGS] = {
		[UNWIND_IP] = -1,  [UNWIND_SP] = 7,   [UNWIND_BP] = 6,	 [UNWIND_BX] = 3,
		[UNWIND_R12] = 12, [UNWIND_R13] = 13, [UNWIND_R14] = 14, [UNWIND_R15] = 15,
	};

	return (unsigned)r < UNWIND_NR_REGS ? x86_64[r] : -1;
}

const char *mlt_unwind_end_name(enum unwind_end e)
{
	static const char *const names[UNWIND_NR_ENDS] = {
		[UNWIND_COMPLETE] = "complete",
		[UNWIND_CUT] = "cut",
		[UNWIND_OUT_OF_COPY] = "out_of_copy",
		[UNWIND_NO_CFI] = "no_cfi",
	};

	return (unsigned)e < UNWIND_NR_ENDS ? names[e] : "?";
}

#if defined(MEMLENS_LIBDW) && defined(__x86_64__)
#include <elfutils/libdwfl.h>
#include <dwarf.h>

#define REPORT_EVERY_NS 10000000ULL /* 10 ms */
#define RULES_SIZE 16384 /* a power of two */

/*
 * The call frame information at one pc, when it is of the simple kind
 * compilers emit for x86-64 code: the CFA is rsp or rbp plus a constant,
 * the return address is saved at CFA - 8, rbp is unchanged or saved at
 * CFA plus a constant. Anything else (expressions, signal frames, no
 * information) is RULE_SLOW: the stack is then unwound by libdwfl itself.
 */
enum { RULE_EMPTY = 0, RULE_OK, RULE_OUTERMOST, RULE_SLOW };

struct frame_rule {
	uint64_t pc; /* the pc looked up (a return address - 1 but in the first frame) */
	uint8_t kind;
	uint8_t cfa_reg; /* DWARF 7 (rsp) or 6 (rbp) */
	uint8_t bp_how; /* 0 unchanged, 1 saved at CFA + bp_off, 2 not recoverable */
	int32_t cfa_off, bp_off;
};

struct unwinder {
	pid_t pid;
	Dwfl *dwfl;
	bool attached;
	int mem_fd; /* /proc/PID/mem, or -1 */
	uint64_t reported_ns; /* when the modules were last reported */
	/* the stack being unwound */
	const struct unwind_input *in;
	uint64_t *ips;
	int n, max;
	bool out_of_copy; /* a read above the copy failed */
	bool slow_only; /* never the rule cache (tests compare the two) */
	struct frame_rule *rules; /* RULES_SIZE, direct-mapped by pc */
};

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

bool mlt_unwind_supported(void)
{
	return true;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The modules of the process again, unless it is gone (they are kept then). */
static void report_modules(struct unwinder *u)
{
	char path[64];
	int fd;
	char c;
	bool alive;

	u->reported_ns = now_ns();
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)u->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	alive = fd >= 0 && read(fd, &c, 1) == 1;
	if (fd >= 0)
		close(fd);
	if (!alive)
		return;
	dwfl_report_begin(u->dwfl);
	dwfl_linux_proc_report(u->dwfl, u->pid);
	dwfl_report_end(u->dwfl, NULL, NULL);
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->in ? u->in->tid : 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* @addr is in the range of a module (dwfl_addrmodule also answers past the last one) */
static bool in_module(Dwfl *dwfl, Dwarf_Addr addr)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr lo, hi;

	return m && dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL) && addr >= lo &&
	       addr < hi;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	uint64_t w, sp = u->in->regs[UNWIND_SP];

	if (unwind_copy_read(u->in, addr, &w)) {
		*result = w;
		return true;
	}
	/* the file mappings (read-only data, .got): what the process has there now */
	if (u->mem_fd >= 0 && in_module(dwfl, addr) &&
	    pread(u->mem_fd, &w, sizeof(w), (off_t)addr) == (ssize_t)sizeof(w)) {
		*result = w;
		return true;
	}
	if (addr >= sp && !u->in->to_end)
		u->out_of_copy = true; /* most likely a frame above the copy */
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;

	for (int r = 0; r < UNWIND_NR_REGS; r++) {
		Dwarf_Word w = u->in->regs[r];
		int regno = unwind_dwarf_regno((enum unwind_reg)r);

		if (regno >= 0 && !dwfl_thread_state_registers(thread, regno, 1, &w))
			return false;
	}
	dwfl_thread_state_register_pc(thread, u->in->regs[UNWIND_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct unwinder *mlt_unwinder_new(pid_t pid)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	char path[64];

	if (!u)
		return NULL;
	u->pid = pid;
	u->rules = calloc(RULES_SIZE, sizeof(*u->rules));
	u->dwfl = u->rules ? dwfl_begin(&proc_callbacks) : NULL;
	if (!u->dwfl) {
		free(u->rules);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	u->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	report_modules(u);
	return u;
}

void mlt_unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	free(u->rules);
	if (u->mem_fd >= 0)
		close(u->mem_fd);
	free(u);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (u->n >= u->max)
		return DWARF_CB_ABORT;
	u->ips[u->n++] = pc;
	return DWARF_CB_OK;
}

/* a register's rule: 0 unchanged, 1 saved at CFA + *off, 2 undefined, -1 anything else */
static int reg_rule(Dwarf_Frame *fr, int regno, int32_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t v = 0;

	if (dwarf_frame_register(fr, regno, mem, &ops, &n))
		return -1;
	if (!n)
		return ops ? 2 : 0; /* ops_mem: undefined; NULL: same value */
	if (ops[0].atom != DW_OP_call_frame_cfa || ops[n - 1].atom == DW_OP_stack_value)
		return -1;
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst)
		v = (int64_t)ops[1].number;
	else if (n == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus)
		v = (int64_t)ops[1].number;
	else if (n != 1)
		return -1;
	if (v < INT32_MIN || v > INT32_MAX)
		return -1;
	*off = (int32_t)v;
	return 1;
}

static void make_rule(struct unwinder *u, uint64_t pc, struct frame_rule *r)
{
	Dwfl_Module *m = dwfl_addrmodule(u->dwfl, pc);
	Dwarf_CFI *cfi[2] = { NULL, NULL };
	Dwarf_Addr bias[2] = { 0, 0 }, lo, hi;
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops;
	bool signalp;
	int32_t off;
	int k;

	*r = (struct frame_rule){ .pc = pc, .kind = RULE_SLOW };
	if (!m || !dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL) || pc < lo ||
	    pc >= hi)
		return;
	for (k = 0; k < 2 && !fr; k++) {
		/* .eh_frame, else .debug_frame (of the debug file: read only then) */
		cfi[k] = k ? dwfl_module_dwarf_cfi(m, &bias[k]) : dwfl_module_eh_cfi(m, &bias[k]);
		if (cfi[k] && dwarf_cfi_addrframe(cfi[k], pc - bias[k], &fr))
			fr = NULL;
	}
	if (!fr)
		return;
	if (dwarf_frame_info(fr, NULL, NULL, &signalp) != 16 || signalp)
		goto out;
	switch (reg_rule(fr, 16, &off)) {
	case 2:
		r->kind = RULE_OUTERMOST; /* the return address undefined: the outermost frame */
		goto out;
	case 1:
		if (off == -8)
			break;
		/* fall through */
	default:
		goto out;
	}
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx && (ops[0].number == 6 || ops[0].number == 7)) {
		r->cfa_reg = (uint8_t)ops[0].number;
		off = (int32_t)(int64_t)ops[0].number2;
	} else if (ops[0].atom == DW_OP_breg6 || ops[0].atom == DW_OP_breg7) {
		r->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		off = (int32_t)(int64_t)ops[0].number;
	} else {
		goto out;
	}
	r->cfa_off = off;
	k = reg_rule(fr, 6, &r->bp_off);
	if (k < 0)
		goto out;
	r->bp_how = (uint8_t)k;
	r->kind = RULE_OK;
out:
	free(fr);
}

static const struct frame_rule *rule_at(struct unwinder *u, uint64_t pc)
{
	struct frame_rule *r = &u->rules[(pc ^ (pc >> 14)) & (RULES_SIZE - 1)];

	if (r->kind == RULE_EMPTY || r->pc != pc)
		make_rule(u, pc, r);
	return r;
}

/*
 * A frame saved at @addr, not in the copy: above it, while the stack goes
 * on, the stack was cut by --stack-size (libdwfl would look no further,
 * and may call that the end). Else libdwfl says how it ends.
 */
static bool above_copy(const struct unwind_input *in, uint64_t addr, enum unwind_end *end)
{
	if (in->to_end || addr < in->regs[UNWIND_SP] + in->size)
		return false;
	*end = UNWIND_OUT_OF_COPY;
	return true;
}

/*
 * The common case, without libdwfl's frame states: each frame by its
 * cached rule. False when a frame needs more (then libdwfl unwinds it all).
 */
static bool walk_fast(struct unwinder *u, enum unwind_end *end)
{
	const struct unwind_input *in = u->in;
	uint64_t ip = in->regs[UNWIND_IP], sp = in->regs[UNWIND_SP], bp = in->regs[UNWIND_BP];
	bool bp_ok = true;

	u->n = 0;
	for (;;) {
		const struct frame_rule *r = rule_at(u, u->n ? ip - 1 : ip);
		uint64_t cfa, ra, nbp;

		if (r->kind == RULE_SLOW || (r->kind == RULE_OK && r->cfa_reg == 6 && !bp_ok))
			return false;
		if (u->n >= u->max) {
			*end = UNWIND_CUT;
			return true;
		}
		u->ips[u->n++] = ip;
		if (r->kind == RULE_OUTERMOST) {
			*end = UNWIND_COMPLETE;
			return true;
		}
		cfa = (r->cfa_reg == 7 ? sp : bp) + (uint64_t)(int64_t)r->cfa_off;
		if (!unwind_copy_read(in, cfa - 8, &ra))
			return above_copy(in, cfa - 8, end);
		if (r->bp_how == 1) {
			if (!unwind_copy_read(in, cfa + (uint64_t)(int64_t)r->bp_off, &nbp))
				return above_copy(in, cfa + (uint64_t)(int64_t)r->bp_off, end);
			bp = nbp;
		} else if (r->bp_how == 2) {
			bp_ok = false;
		}
		if (!ra) {
			*end = UNWIND_COMPLETE;
			return true;
		}
		if (cfa <= sp)
			return false; /* not going up the stack: let libdwfl judge */
		sp = cfa;
		ip = ra;
	}
}

/* one attempt: the frames found, how it ended */
static enum unwind_end walk(struct unwinder *u)
{
	int e;

	u->n = 0;
	u->out_of_copy = false;
	e = dwfl_getthread_frames(u->dwfl, u->in->tid, frame_cb, u);
	/*
	 * Ended where libdwfl found no caller. (It may also end so where it
	 * could not read a frame above the copy and its frame-pointer fallback
	 * found nothing either: a stack cut by --stack-size can look complete.)
	 */
	if (e == 0)
		return UNWIND_COMPLETE;
	if (e > 0)
		return u->n >= u->max ? UNWIND_CUT : UNWIND_NO_CFI;
	return u->out_of_copy ? UNWIND_OUT_OF_COPY : UNWIND_NO_CFI;
}

int mlt_unwind_stack(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		     enum unwind_end *end)
{
	bool late = now_ns() - u->reported_ns >= REPORT_EVERY_NS;

	u->in = in;
	u->ips = ips;
	u->max = max;
	*end = UNWIND_NO_CFI;
	if (!in_module(u->dwfl, in->regs[UNWIND_IP])) {
		if (!late)
			return 0;
		report_modules(u);
		late = false;
		if (!in_module(u->dwfl, in->regs[UNWIND_IP]))
			return 0;
	}
	if (!u->attached) {
		u->attached = dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_callbacks, u);
		if (!u->attached)
			return 0;
	}
	if (!u->slow_only && walk_fast(u, end)) {
		u->in = NULL;
		return u->n;
	}
	*end = walk(u);
	/* stopped at a pc in no file known: one loaded since? */
	if (*end == UNWIND_NO_CFI && u->n && late && !dwfl_addrmodule(u->dwfl, u->ips[u->n - 1])) {
		report_modules(u);
		*end = walk(u);
	}
	u->in = NULL;
	return u->n;
}

void mlt_unwinder_set_slow(struct unwinder *u, bool slow)
{
	u->slow_only = slow;
}

void mlt_unwinder_stale(struct unwinder *u)
{
	u->reported_ns = 0;
}

#else /* no libdw: nothing unwinds */

bool mlt_unwind_supported(void)
{
	return false;
}

struct unwinder *mlt_unwinder_new(pid_t pid)
{
	(void)pid;
	errno = ENOSYS;
	return NULL;
}

void mlt_unwinder_free(struct unwinder *u)
{
	(void)u;
}

void mlt_unwinder_set_slow(struct unwinder *u, bool slow)
{
	(void)u;
	(void)slow;
}

void mlt_unwinder_stale(struct unwinder *u)
{
	(void)u;
}

int mlt_unwind_stack(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		     enum unwind_end *end)
{
	(void)u;
	(void)in;
	(void)ips;
	(void)max;
	*end = UNWIND_NO_CFI;
	return 0;
}
#endif
