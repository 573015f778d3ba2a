/* SPDX-License-Identifier: MIT */
/*
 * DWARF call-frame unwinding of a copied user stack, as perf record
 * --call-graph dwarf does it: the registers and the top of the stack of
 * one thread at one instant (copied by a BPF program), unwound with
 * elfutils' libdwfl against the ELF files (.eh_frame, .debug_frame) of a
 * live process. Reads inside the copy come from the copy; reads of other
 * addresses come from the process's file mappings (/proc/PID/mem).
 */
#ifndef MEMLENS_UNWIND_H
#define MEMLENS_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* the registers of a copy (x86-64) */
enum unwind_reg {
	UNWIND_IP = 0,
	UNWIND_SP,
	UNWIND_BP,
	UNWIND_BX,
	UNWIND_R12,
	UNWIND_R13,
	UNWIND_R14,
	UNWIND_R15,
	UNWIND_NR_REGS,
};

/* one thread's state at one instant: registers, and @size bytes of stack from regs[UNWIND_SP] */
struct unwind_input {
	pid_t tid;
	uint64_t regs[UNWIND_NR_REGS];
	const void *stack;
	size_t size;
	bool to_end; /* the copy ends where the stack does: nothing is above it */
};

/* how an unwinding ended */
enum unwind_end {
	UNWIND_COMPLETE = 0, /* at the outermost frame (its return address undefined) */
	UNWIND_CUT, /* the frames asked for were found; there were more */
	UNWIND_OUT_OF_COPY, /* a frame was saved above the copied stack (--stack-size) */
	UNWIND_NO_CFI, /* a frame without call frame information, or another error */
	UNWIND_NR_ENDS,
};

/* A short name of an end, for reports: "complete", "cut", "out_of_copy", "no_cfi". */
const char *mlt_unwind_end_name(enum unwind_end e);

/* libdw is there: unwinding is possible at all */
bool mlt_unwind_supported(void);

struct unwinder;

/* An unwinder of process @pid (its ELF files found from /proc/PID/maps); NULL, errno set. */
struct unwinder *mlt_unwinder_new(pid_t pid);
void mlt_unwinder_free(struct unwinder *u);
/*
 * Frames whose call frame information is of the simple kind (the CFA rsp
 * or rbp plus a constant, the return address at CFA - 8, rbp unchanged or
 * saved at a constant offset) are unwound from rules cached per pc, without
 * libdwfl's frame states; a stack with any other frame is unwound by
 * libdwfl whole. @slow: always by libdwfl (for tests comparing the two).
 */
void mlt_unwinder_set_slow(struct unwinder *u, bool slow);

/*
 * The next mlt_unwind_stack() whose pc is in no file known reads the
 * process's mappings again at once, not at most every few milliseconds
 * (a pc that is always in one file, mapped after the unwinder started).
 */
void mlt_unwinder_stale(struct unwinder *u);

/*
 * Unwind @in: its return addresses, innermost first (the first is
 * regs[UNWIND_IP]), at most @max into @ips. Returns how many (0: none,
 * the pc is in no known file), and how it ended in *@end.
 */
int mlt_unwind_stack(struct unwinder *u, const struct unwind_input *in, uint64_t *ips, int max,
		     enum unwind_end *end);

#endif
