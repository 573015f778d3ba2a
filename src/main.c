// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "opts.h"
#include "output.h"

extern const struct memlens_cmd __start_memlens_cmds[];
extern const struct memlens_cmd __stop_memlens_cmds[];

static int cmp_cmd(const void *a, const void *b)
{
	const struct memlens_cmd *x = *(const struct memlens_cmd *const *)a;
	const struct memlens_cmd *y = *(const struct memlens_cmd *const *)b;

	return x->order != y->order ? x->order - y->order : strcmp(x->name, y->name);
}

static void usage(FILE *f)
{
	const struct memlens_cmd *c;
	const struct memlens_cmd *list[64];
	size_t n = 0;

	for (c = __start_memlens_cmds; c < __stop_memlens_cmds && n < 64; c++)
		list[n++] = c;
	qsort(list, n, sizeof(list[0]), cmp_cmd);
	fprintf(f, "usage: memlens <command> [options]\n\n"
		   "memlens looks at a running process's memory: where it writes, what the\n"
		   "kernel does to it, and what it looks like, fast and without disturbing it.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "  %-14s ", list[i]->name);
		cli_wrap(f, list[i]->summary, 17, 17);
	}
	fprintf(f, "\nThe options they share mean the same in each: -p/--pid PID, -- CMD [ARGS]\n"
		   "(start CMD and follow it), -d/--duration SEC, -i/--interval MS,\n"
		   "-o/--output FILE (what would go to standard output goes to FILE, in the\n"
		   "format --json or --csv chose: never guessed from the file's name), --json,\n"
		   "-q/--quiet, -v/--verbose, -h/--help, -V/--version.\n"
		   "\n'memlens <command> --help' describes a command's options;\n"
		   "'memlens --version' (-V) the versions and the features found.\n"
		   "\nExit status, the same for every command:\n");
	exit_table_print(f);
}

/* What went to standard output must have got there: else exit status 1. */
static int finish(const char *cmd, int rc)
{
	if (out_close(cmd, stdout) && rc == EXIT_OK)
		rc = EXIT_FAIL;
	return rc;
}

int main(int argc, char **argv)
{
	const struct memlens_cmd *c;

	out_wrap_stdout();
	if (argc < 2) {
		fprintf(stderr, "memlens: give a command\nTry 'memlens --help'.\n");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return finish("--help", EXIT_OK);
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		cli_print_version(stdout);
		return finish("--version", EXIT_OK);
	}
	for (c = __start_memlens_cmds; c < __stop_memlens_cmds; c++)
		if (!strcmp(c->name, argv[1]))
			return finish(c->name, c->run(argc - 1, argv + 1));
	fprintf(stderr, "memlens: unknown command '%s'\nTry 'memlens --help'.\n", argv[1]);
	return EXIT_USAGE;
}
