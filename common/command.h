/* SPDX-License-Identifier: MIT */
/*
 * Subcommands register themselves with MEMLENS_COMMAND(); main() finds them
 * in the memlens_cmds section, so adding a command touches no shared file.
 */
#ifndef MEMLENS_COMMAND_H
#define MEMLENS_COMMAND_H

struct memlens_cmd {
	const char *name;
	const char *summary; /* one line for `memlens --help` */
	int (*run)(int argc, char **argv);
	int order; /* position in `memlens --help` */
};

#define MEMLENS_COMMAND(ident, nm, ord, sum, fn)                                                   \
	static const struct memlens_cmd memlens_cmd_##ident                                        \
		__attribute__((used, section("memlens_cmds"), aligned(8))) = {                     \
			.name = nm, .summary = sum, .run = fn, .order = ord                        \
		}

/* Exit codes, the same for every subcommand (memlens(8), EXIT STATUS). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1, /* the operation failed */
	EXIT_USAGE = 2, /* bad command line or bad input */
	EXIT_NOTARGET = 3, /* no such process, or it exited */
	EXIT_PERM = 4, /* permission denied */
	EXIT_NOFEATURE = 5, /* the kernel lacks a needed feature */
};

/* Map a negative errno from libmemlens to an exit code. */
int exit_code_for(int err);

#endif
