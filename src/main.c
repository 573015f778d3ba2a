// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "opts.h"
#include "output.h"
#include "suggest.h"
#include "trace/trace.h"

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
		   "\n'memlens <command> --help' (or 'memlens help <command>') describes a\n"
		   "command's options; 'memlens --version' (-V) the versions and the features\n"
		   "found. Where a command takes -p PID, a PID alone means the same:\n"
		   "'memlens snapshot 1234' is 'memlens snapshot -p 1234'.\n"
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

static const struct memlens_cmd *find(const char *name)
{
	for (const struct memlens_cmd *c = __start_memlens_cmds; c < __stop_memlens_cmds; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* "memlens: unknown command 'write'; did you mean 'writes'?" and the Try line */
static int unknown(const char *name)
{
	const char *names[64];
	const char *near;
	size_t n = 0;

	for (const struct memlens_cmd *c = __start_memlens_cmds; c < __stop_memlens_cmds && n < 64;
	     c++)
		names[n++] = c->name;
	near = cli_suggest(name, names, n);
	if (near)
		fprintf(stderr, "memlens: unknown command '%s'; did you mean '%s'?\n", name, near);
	else
		fprintf(stderr, "memlens: unknown command '%s'\n", name);
	fprintf(stderr, "Try 'memlens --help' for the list of commands.\n");
	return EXIT_USAGE;
}

/* CMD's own --help, as `memlens CMD --help` prints it */
static int command_help(const struct memlens_cmd *c)
{
	char *args[] = { (char *)c->name, (char *)"--help", NULL };

	return finish(c->name, c->run(2, args));
}

/* the eBPF tracers' part of --version (common/ knows nothing of src/trace/) */
static const struct cli_tracers tracers = {
	.libbpf_version = mlt_trace_libbpf_version,
	.probe_features = mlt_trace_probe_features,
};

int main(int argc, char **argv)
{
	const struct memlens_cmd *c;

	cli_set_tracers(&tracers);
	out_wrap_stdout();
	if (argc < 2) {
		fprintf(stderr, "memlens: give a command\nTry 'memlens --help'.\n");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		/* memlens help CMD: as git's */
		if (argc > 2 && !strcmp(argv[1], "help")) {
			if (argc > 3) {
				fprintf(stderr,
					"memlens help: give one command, not '%s ...'\n"
					"Try 'memlens --help'.\n",
					argv[2]);
				return EXIT_USAGE;
			}
			c = find(argv[2]);
			return c ? command_help(c) : unknown(argv[2]);
		}
		usage(stdout);
		return finish("--help", EXIT_OK);
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		cli_print_version(stdout);
		return finish("--version", EXIT_OK);
	}
	c = find(argv[1]);
	if (!c)
		return unknown(argv[1]);
	/* memlens CMD help: its --help (help alone, as no command is named help) */
	if (argc == 3 && !strcmp(argv[2], "help"))
		return command_help(c);
	return finish(c->name, c->run(argc - 1, argv + 1));
}
