// SPDX-License-Identifier: MIT
/* The one exit-status table of every memlens command (exitcode.h). */
#include <errno.h>
#include <stdio.h>

#include "exitcode.h"
#include "opts.h"

const struct exit_row exit_table[] = {
	{ EXIT_OK, "success, also when nothing was seen (no page fault, no OOM kill, no "
		   "leak): the output says so" },
	{ EXIT_FAIL, "the operation failed (the message says why)" },
	{ EXIT_USAGE, "bad usage or bad input, or a process that cannot be looked at (a "
		      "kernel thread)" },
	{ EXIT_NOTARGET, "no such process, or it exited before anything could be done (a "
			 "zombie)" },
	{ EXIT_PERM, "permission denied: run as root or with CAP_SYS_PTRACE (CAP_BPF and "
		     "CAP_PERFMON for eBPF); as root, the message names what else refused" },
	{ EXIT_NOFEATURE, "the kernel, or the CRIU in use, lacks a feature the command needs "
			  "(the message names it)" },
	{ EXIT_REFUSED, "checkpoint, migrate: CRIU would refuse the process tree, found before "
			"anything was frozen (the message names each process, the resource and "
			"the option or set-up that fixes it)" },
	{ EXIT_NOCMD, "-- CMD: CMD could not be started (not found, or not executable)" },
	{ -1, NULL },
};

void exit_table_print(FILE *f)
{
	for (const struct exit_row *r = exit_table; r->meaning; r++) {
		fprintf(f, "  %3d  ", r->code);
		cli_wrap(f, r->meaning, 7, 7);
	}
}

int exit_code_for(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return EXIT_OK;
	case ESRCH:
	case ECHILD:
		return EXIT_NOTARGET;
	case EPERM:
	case EACCES:
		return EXIT_PERM;
	case ENOTSUP:
	case ENOSYS:
	case ENOTTY:
		return EXIT_NOFEATURE;
	case EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_FAIL;
	}
}
