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

bool unwind_copy_read(const struct unwind_input *in, uint64_t addr, uint64_t *out)
{
	uint64_t sp = in->regs[UNWIND_SP];

	if (addr < sp || addr + sizeof(*out) < addr || addr + sizeof(*out) > sp + in->size ||
	    sp + in->size < sp)
		return false;
	memcpy(out, (const char *)in->stack + (addr - sp), sizeof(*out));
	return true;
}

int unwind_dwarf_regno(enum unwind_reg r)
{
	static const int x86_64[UNWIND_NR_REGS] = {
		[UNWIND_IP] = -1,  [UNWIND_SP] = 7,   [UNWIND_BP] = 6,	 [UNWIND_BX] = 3,
		[UNWIND_R12] = 12, [UNWIND_R13] = 13, [UNWIND_R14] = 14, [UNWIND_R15] = 15,
	};

	return (unsigned)r < UNWIND_NR_REGS ? x86_64[r] : -1;
}

const char *unwind_end_name(enum unwind_end e)
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
};

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

bool unwind_supported(void)
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

struct unwinder *unwinder_new(pid_t pid)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	char path[64];

	if (!u)
		return NULL;
	u->pid = pid;
	u->dwfl = dwfl_begin(&proc_callbacks);
	if (!u->dwfl) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	u->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	report_modules(u);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
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

int unwind_stack(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
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
	*end = walk(u);
	/* stopped at a pc in no file known: one loaded since? */
	if (*end == UNWIND_NO_CFI && u->n && late && !dwfl_addrmodule(u->dwfl, u->ips[u->n - 1])) {
		report_modules(u);
		*end = walk(u);
	}
	u->in = NULL;
	return u->n;
}

#else /* no libdw: nothing unwinds */

bool unwind_supported(void)
{
	return false;
}

struct unwinder *unwinder_new(pid_t pid)
{
	(void)pid;
	errno = ENOSYS;
	return NULL;
}

void unwinder_free(struct unwinder *u)
{
	(void)u;
}

int unwind_stack(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
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
