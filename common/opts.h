/* SPDX-License-Identifier: MIT */
/*
 * One option language for every memlens command. A command declares a
 * table of its options (letter, long name, argument name, help line, type
 * and where the value goes); cli_parse() parses the command line with it,
 * and the usage line, --help and the one-line usage errors are generated
 * from the same table, so they cannot drift apart.
 *
 * The options several commands share are defined once, below (CLI_OPT_PID,
 * CLI_OPT_DURATION, ...): the same letter, long name and argument name in
 * every command that has them. -h/--help and -V/--version are added to
 * every table by the parser.
 *
 * Why not glibc argp: its messages start with the program's name and are
 * followed by a "Try `... --help' or `... --usage'" of its own, it exits
 * from inside argp_parse() on errors and --help, and its help layout is
 * not ours to choose; memlens wants "memlens CMD: <what is wrong>" and one
 * Try line from both binaries (memlens and memlens-agent). This is
 * getopt_long() under a table, so the parsing rules are getopt's.
 */
#ifndef MEMLENS_OPTS_H
#define MEMLENS_OPTS_H

#include <stdbool.h>
#include <stdio.h>

enum cli_kind {
	CLI_END = 0, /* the end of a table */
	CLI_FLAG, /* bool *: set */
	CLI_COUNT, /* int *: one more each time (-v -v) */
	CLI_STR, /* const char **: the argument itself */
	CLI_INT, /* int *: a whole number in [min, max] */
	CLI_UINT, /* unsigned int *: a whole number in [min, max] */
	CLI_LONG, /* long *: a whole number in [min, max] */
	CLI_DOUBLE, /* double *: a number in [min, max] */
	CLI_PID, /* pid_t *: a process id */
	CLI_CHOICE, /* int *: the index of the argument in .choices */
	CLI_FUNC, /* .fn parses the argument */
	CLI_CMD, /* not an option: the `-- CMD [ARGS]` a command may start */
	CLI_ARGS, /* not an option: the command's operands (FILE...) */
};

enum {
	CLI_HIDDEN = 1, /* parsed, but not in --help or the usage line */
	CLI_REQUIRED = 2, /* shown without brackets in the usage line (checked by the command) */
	CLI_REPEAT = 4, /* may be given more than once (each one adds); else twice is an error */
};

struct cli_opt {
	char letter; /* the short option, 0: long only */
	const char *name; /* the long option, without "--" */
	const char *arg; /* the argument's name in --help, NULL: takes none */
	const char *help; /* one sentence, wrapped to 80 columns */
	enum cli_kind kind;
	void *target;
	double min, max; /* for numbers */
	const char *const *choices; /* CLI_CHOICE: NULL-terminated */
	/* CLI_FUNC: 0, or -1 with @why ("must be HOST:PORT") filled in */
	int (*fn)(void *target, const char *arg, char *why, size_t len);
	unsigned flags;
	const char *section; /* a heading printed before this option in --help */
	unsigned given; /* set by cli_parse: how many times it was given */
	const char *first_arg; /* set by cli_parse: the argument it was first given */
};

struct cli_spec {
	const char *cmd; /* "writes": messages say "memlens writes: ..." */
	/* what comes first in the usage line, before the options not named in
	 * it, e.g. "(-p PID | -- CMD [ARGS...])"; may be NULL */
	const char *synopsis;
	const char *about; /* the paragraphs after the usage line */
	const char *footer; /* the paragraphs after the options, or NULL */
	struct cli_opt *opts; /* ends with { 0 } */
	/*
	 * CLI_ARGS: called for each operand before any option is looked at,
	 * so that a missing input file is what the user hears of first: 0,
	 * or the exit code after its message.
	 */
	int (*check_operand)(const char *cmd, const char *arg);
};

/*
 * Parse @argv with the table of @s. Options stop at the first operand when
 * the table has a CLI_CMD entry (what follows is the command to start);
 * operands are allowed only when it has a CLI_CMD or CLI_ARGS entry, and
 * *@first gets the index of the first one (argc when none).
 * Returns 0 to go on; -1 after printing --help or --version (exit 0);
 * EXIT_USAGE after printing the one-line error and the "Try" line.
 */
int cli_parse(struct cli_spec *s, int argc, char **argv, int *first);

/*
 * A usage error found after parsing (a missing or conflicting option):
 * "memlens CMD: <message>" and "Try 'memlens CMD --help'." on stderr.
 * Returns EXIT_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A check_operand for commands whose operands are JSON Lines input files
 * ('-' is standard input): one that cannot be read, or a directory, is a
 * bad input (EXIT_USAGE), said as ml_lines_check_file() says it.
 */
int cli_input_file(const char *cmd, const char *path);

/* The table option with this long name (NULL if none): was it given? */
bool cli_given(const struct cli_spec *s, const char *name);

/* --help of @s into @f (stdout), every line at most 80 columns. */
void cli_print_help(const struct cli_spec *s, FILE *f);

/*
 * The table in a form scripts read (bash completion, the tests): one line
 * per option, "LETTER LONG ARG" with "-" for a missing part; printed by
 * the hidden option --list-options.
 */
void cli_list_options(const struct cli_spec *s, FILE *f);

/*
 * --version: memlens's version, libbpf's (when the eBPF tracers are built
 * in), the kernel's release and machine, and the features found (the
 * probes of `memlens check`, without CRIU).
 */
void cli_print_version(FILE *f);

/*
 * What a binary with the eBPF tracers adds to --version: libbpf's version
 * and the tracers' feature probes. memlens hands them over at start
 * (src/main.c); a binary that does not (memlens-agent) has no tracers.
 */
struct ml_feature_list;
struct cli_tracers {
	void (*libbpf_version)(unsigned int *major, unsigned int *minor);
	void (*probe_features)(struct ml_feature_list *l);
};
void cli_set_tracers(const struct cli_tracers *t);

/* Word-wrap @text to 80 columns, every line after the first indented by @indent. */
void cli_wrap(FILE *f, const char *text, int col, int indent);

/* ---- the options several commands share: defined once, here ---------- */

#define CLI_OPT_PID(t, h)                                                                          \
	{                                                                                          \
		.letter = 'p', .name = "pid", .arg = "PID", .help = h, .kind = CLI_PID,            \
		.target = t                                                                        \
	}
/* `-- CMD [ARGS]`: the command's own process */
#define CLI_OPT_CMD(h)                                                                             \
	{                                                                                          \
		.arg = "CMD [ARGS]", .help = h, .kind = CLI_CMD                                    \
	}
#define CLI_OPT_DURATION(t, lo, h)                                                                 \
	{                                                                                          \
		.letter = 'd', .name = "duration", .arg = "SEC", .help = h, .kind = CLI_DOUBLE,    \
		.target = t, .min = lo, .max = 31536000                                            \
	}
/* -i MS: a long (milliseconds) */
#define CLI_OPT_INTERVAL(t, lo, hi, h)                                                             \
	{                                                                                          \
		.letter = 'i', .name = "interval", .arg = "MS", .help = h, .kind = CLI_LONG,       \
		.target = t, .min = lo, .max = hi                                                  \
	}
#define CLI_OPT_OUTPUT(t, h)                                                                       \
	{                                                                                          \
		.letter = 'o', .name = "output", .arg = "FILE", .help = h, .kind = CLI_STR,        \
		.target = t                                                                        \
	}
#define CLI_OPT_JSON(t, h)                                                                         \
	{                                                                                          \
		.name = "json", .help = h, .kind = CLI_FLAG, .target = t                           \
	}
#define CLI_OPT_QUIET(t, h)                                                                        \
	{                                                                                          \
		.letter = 'q', .name = "quiet", .help = h, .kind = CLI_FLAG, .target = t           \
	}
#define CLI_OPT_VERBOSE(t, h)                                                                      \
	{                                                                                          \
		.letter = 'v', .name = "verbose", .help = h, .kind = CLI_COUNT, .target = t        \
	}
/* the hot-VMA classifier of writes, checkpoint and migrate */
#define CLI_OPT_THRESHOLD(t, h)                                                                    \
	{                                                                                          \
		.letter = 't', .name = "threshold", .arg = "RATIO", .help = h, .kind = CLI_DOUBLE, \
		.target = t, .min = 1e-9, .max = 1                                                 \
	}
#define CLI_OPT_CONSECUTIVE(t, hi, h)                                                              \
	{                                                                                          \
		.letter = 'c', .name = "consecutive", .arg = "N", .help = h, .kind = CLI_INT,      \
		.target = t, .min = 1, .max = hi                                                   \
	}
/* the hot ranges inside VMAs (memlens/hotrange.h): writes and migrate-model */
#define CLI_OPT_COOL(t, h)                                                                         \
	{                                                                                          \
		.name = "cool", .arg = "N", .help = h, .kind = CLI_INT, .target = t, .min = 1,     \
		.max = ML_HOTRANGE_MAX_INTERVALS                                                   \
	}
#define CLI_OPT_HOT_RANGES(t, h)                                                                   \
	{                                                                                          \
		.name = "hot-ranges", .arg = "N", .help = h, .kind = CLI_UINT, .target = t,        \
		.min = 1, .max = ML_HOTRANGE_MAX_MAX                                               \
	}
/*
 * Sampled write tracking (memlens/sample.h): --sample FRACTION or 1/K into an
 * unsigned int K (1/K of the pages each interval), --max-overhead PCT (a
 * share of one CPU, in percent) into a double
 */
int cli_sample_fraction(void *target, const char *arg, char *why, size_t len);
#define CLI_OPT_SAMPLE(t, h)                                                                       \
	{                                                                                          \
		.name = "sample", .arg = "FRACTION", .help = h, .kind = CLI_FUNC, .target = t,     \
		.fn = cli_sample_fraction                                                          \
	}
#define CLI_OPT_MAX_OVERHEAD(t, h)                                                                 \
	{                                                                                          \
		.name = "max-overhead", .arg = "PCT", .help = h, .kind = CLI_DOUBLE, .target = t,  \
		.min = 0.01, .max = 100                                                            \
	}
/* --max-error PCT: a bound on the sampled estimates' relative standard error, in percent */
#define CLI_OPT_MAX_ERROR(t, h)                                                                    \
	{                                                                                          \
		.name = "max-error", .arg = "PCT", .help = h, .kind = CLI_DOUBLE, .target = t,     \
		.min = 0.1, .max = 100                                                             \
	}
#define CLI_OPT_IMAGES_DIR(t, h)                                                                   \
	{                                                                                          \
		.letter = 'D', .name = "images-dir", .arg = "DIR", .help = h, .kind = CLI_STR,     \
		.target = t                                                                        \
	}
#define CLI_OPT_LISTEN(t, h)                                                                       \
	{                                                                                          \
		.letter = 'l', .name = "listen", .arg = "HOST:PORT", .help = h, .kind = CLI_STR,   \
		.target = t                                                                        \
	}
#define CLI_OPT_TOP(t, h)                                                                          \
	{                                                                                          \
		.letter = 'T', .name = "top", .arg = "N", .help = h, .kind = CLI_LONG,             \
		.target = t, .min = 0, .max = 1000000                                              \
	}
#define CLI_OPT_MAX_ROUNDS(t, lo, hi, h)                                                           \
	{                                                                                          \
		.letter = 'm', .name = "max-rounds", .arg = "N", .help = h, .kind = CLI_INT,       \
		.target = t, .min = lo, .max = hi                                                  \
	}
#define CLI_OPT_ROUND_INTERVAL(t, lo, h)                                                           \
	{                                                                                          \
		.letter = 'r', .name = "round-interval", .arg = "SEC", .help = h,                  \
		.kind = CLI_DOUBLE, .target = t, .min = lo, .max = 1e6                             \
	}
#define CLI_OPT_STOP_THRESHOLD(t, h)                                                               \
	{                                                                                          \
		.name = "stop-threshold", .arg = "MIB", .help = h, .kind = CLI_DOUBLE,             \
		.target = t, .min = 0, .max = 1e9                                                  \
	}
#define CLI_OPT_THREADS(t, hi, h)                                                                  \
	{                                                                                          \
		.name = "threads", .arg = "N", .help = h, .kind = CLI_LONG, .target = t, .min = 1, \
		.max = hi                                                                          \
	}
/* CRIU: the binary, a time limit, --shell-job, one more option */
#define CLI_OPT_CRIU(t, h)                                                                         \
	{                                                                                          \
		.name = "criu", .arg = "PATH", .help = h, .kind = CLI_STR, .target = t             \
	}
#define CLI_OPT_TIMEOUT(t, h)                                                                      \
	{                                                                                          \
		.name = "timeout", .arg = "SEC", .help = h, .kind = CLI_UINT, .target = t,         \
		.min = 1, .max = 86400                                                             \
	}
#define CLI_OPT_SHELL_JOB(t, h)                                                                    \
	{                                                                                          \
		.name = "shell-job", .help = h, .kind = CLI_FLAG, .target = t                      \
	}
#define CLI_OPT_CRIU_OPT(t, fn_, h)                                                                \
	{                                                                                          \
		.name = "criu-opt", .arg = "OPT", .help = h, .kind = CLI_FUNC, .target = t,        \
		.fn = fn_, .flags = CLI_REPEAT                                                     \
	}
/* what CRIU does with established TCP connections (criu_cli_tcp_fn) */
#define CLI_OPT_TCP(t, fn_, h)                                                                     \
	{                                                                                          \
		.name = "tcp", .arg = "POLICY", .help = h, .kind = CLI_FUNC, .target = t,          \
		.fn = fn_                                                                          \
	}
#define CLI_OPT_END                                                                                \
	{                                                                                          \
		0                                                                                  \
	}

#endif
