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

/* Exit codes, the same for every subcommand: exitcode.h */
#include "exitcode.h"

#endif
