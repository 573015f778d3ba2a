/* SPDX-License-Identifier: MIT */
/*
 * The exit status of every memlens command, in one table: the enum the
 * commands return, and the rows `memlens --help` prints. The README's
 * "Exit status" table and memlens(8) say the same
 * (tests/integration/test_exit_codes.sh compares them with --help).
 */
#ifndef MEMLENS_EXITCODE_H
#define MEMLENS_EXITCODE_H

#include <stdio.h>

enum {
	EXIT_OK = 0, /* success, also when nothing was seen (no fault, no leak) */
	EXIT_FAIL = 1, /* the operation failed */
	EXIT_USAGE = 2, /* bad command line or bad input; a kernel thread target */
	EXIT_NOTARGET = 3, /* no such process, or it exited (a zombie) */
	EXIT_PERM = 4, /* permission denied */
	EXIT_NOFEATURE = 5, /* the kernel lacks a needed feature */
	EXIT_REFUSED = 6, /* CRIU would refuse the target: found before anything was frozen */
	EXIT_NOCMD = 127, /* -- CMD: CMD could not be started */
};

struct exit_row {
	int code;
	const char *meaning; /* one sentence, as in the README's table */
};

/* The table, ending with { -1, NULL }. */
extern const struct exit_row exit_table[];

/* The table as "  N  meaning" lines, wrapped to 80 columns. */
void exit_table_print(FILE *f);

/* Map a negative errno from libmemlens to an exit code. */
int exit_code_for(int err);

#endif
