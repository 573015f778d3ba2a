// SPDX-License-Identifier: MIT
/* The table-driven option parser of every memlens command (opts.h). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cliutil.h"
#include "command.h"
#include "memlens/features.h"
#include "memlens/sample.h"
#include "opts.h"

#ifndef MEMLENS_VERSION
#define MEMLENS_VERSION "0.1.0"
#endif

#define WIDTH 80
#define MAX_OPTS 64
/* getopt values of the long-only options, and of --help/--version */
#define LONG_ONLY 256
#define KEY_HELP (LONG_ONLY + MAX_OPTS)
#define KEY_VERSION (KEY_HELP + 1)
#define KEY_LIST (KEY_HELP + 2)

/* the eBPF tracers' part of --version, when the binary has them (cli_set_tracers) */
static const struct cli_tracers *tracers;

static const char help_help[] = "this text";
static const char version_help[] =
	"memlens's, libbpf's and the kernel's versions and the features found";

static bool is_option(const struct cli_opt *o)
{
	return o->kind != CLI_CMD && o->kind != CLI_ARGS;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "memlens %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'memlens %s --help'.\n", cmd);
	return EXIT_USAGE;
}

int cli_input_file(const char *cmd, const char *path)
{
	struct stat st;

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) < 0 || access(path, R_OK) < 0) {
		fprintf(stderr, "memlens %s: cannot read %s: %s; check the path\n", cmd, path,
			strerror(errno));
		return EXIT_USAGE;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "memlens %s: %s: is a directory; give a JSON Lines file\n", cmd,
			path);
		return EXIT_USAGE;
	}
	return 0;
}

bool cli_given(const struct cli_spec *s, const char *name)
{
	for (const struct cli_opt *o = s->opts; o->kind; o++)
		if (o->name && !strcmp(o->name, name))
			return o->given > 0;
	return false;
}

/* "-i/--interval", "--json", "-p" */
static const char *opt_name(const struct cli_opt *o, char *buf, size_t len)
{
	if (o->letter && o->name)
		snprintf(buf, len, "-%c/--%s", o->letter, o->name);
	else if (o->name)
		snprintf(buf, len, "--%s", o->name);
	else
		snprintf(buf, len, "-%c", o->letter);
	return buf;
}

static void fmt_num(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.15g", v);
}

/* Store @arg into @o's target: 0, or the exit code after the message. */
static int take(const struct cli_spec *s, struct cli_opt *o, const char *arg)
{
	char name[64], lo[32], hi[32], why[256] = "";
	double d = 0;
	long l = 0;
	pid_t pid;

	opt_name(o, name, sizeof(name));
	fmt_num(lo, sizeof(lo), o->min);
	fmt_num(hi, sizeof(hi), o->max);
	switch (o->kind) {
	case CLI_FLAG:
		*(bool *)o->target = true;
		return 0;
	case CLI_COUNT:
		(*(int *)o->target)++;
		return 0;
	case CLI_STR:
		if (!*arg)
			return cli_usage_error(s->cmd, "%s %s must not be empty", name, o->arg);
		*(const char **)o->target = arg;
		return 0;
	case CLI_INT:
	case CLI_UINT:
	case CLI_LONG:
		if (parse_long(arg, (long)o->min, (long)o->max, &l))
			return cli_usage_error(
				s->cmd, "%s %s must be a whole number from %s to %s, not '%s'",
				name, o->arg, lo, hi, arg);
		if (o->kind == CLI_INT)
			*(int *)o->target = (int)l;
		else if (o->kind == CLI_UINT)
			*(unsigned int *)o->target = (unsigned int)l;
		else
			*(long *)o->target = l;
		return 0;
	case CLI_DOUBLE:
		if (parse_double(arg, o->min, o->max, &d))
			return cli_usage_error(s->cmd,
					       "%s %s must be a number from %s to %s, not '%s'",
					       name, o->arg, lo, hi, arg);
		*(double *)o->target = d;
		return 0;
	case CLI_PID:
		if (parse_pid(arg, &pid))
			return cli_usage_error(s->cmd,
					       "%s PID must be a process id (a number from 1 to "
					       "4194304), not '%s'",
					       name, arg);
		*(pid_t *)o->target = pid;
		return 0;
	case CLI_CHOICE:
		for (int i = 0; o->choices[i]; i++) {
			if (!strcmp(arg, o->choices[i])) {
				*(int *)o->target = i;
				return 0;
			}
			snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s",
				 i ? ", " : "", o->choices[i]);
		}
		return cli_usage_error(s->cmd, "%s %s must be one of %s, not '%s'", name, o->arg,
				       why, arg);
	case CLI_FUNC:
		if (o->fn(o->target, arg, why, sizeof(why)))
			return cli_usage_error(s->cmd, "%s %s, not '%s'", name, why, arg);
		return 0;
	default:
		return 0;
	}
}

/* the option an unknown or incomplete argv element names, for the message */
static void bad_option(const struct cli_spec *s, const char *argvi, int optopt_, bool missing,
		       const struct cli_opt *o)
{
	char name[64];

	if (missing && o) {
		cli_usage_error(s->cmd, "%s needs an argument (%s)",
				opt_name(o, name, sizeof(name)), o->arg);
		return;
	}
	if (!optopt_ && argvi && !strncmp(argvi, "--", 2)) {
		int n = (int)strcspn(argvi, "=");

		cli_usage_error(s->cmd, "unknown option '%.*s'", n, argvi);
		return;
	}
	cli_usage_error(s->cmd, "unknown option '-%c'", optopt_ ? optopt_ : '?');
}

/* An operand that is a PID where a command takes -p PID: it means -p PID. */
static bool bare_pid(const struct cli_opt *pid_opt, const char *arg)
{
	pid_t pid;

	return pid_opt && arg && !parse_pid(arg, &pid);
}

/* -p PID, or a bare PID: once only */
static int take_pid(const struct cli_spec *s, struct cli_opt *o, const char *arg)
{
	if (o->given++)
		return cli_usage_error(s->cmd,
				       "one process only: -p PID (or a PID alone) was given twice, "
				       "as '%s' and as '%s'",
				       o->first_arg, arg);
	o->first_arg = arg;
	return take(s, o, arg);
}

/*
 * Any other option: one that takes a single value may be given once (two
 * -d or -o are a mistake, not a choice of the last one); flags, counts
 * (-v -v) and CLI_REPEAT options may be repeated.
 */
static int take_once(const struct cli_spec *s, struct cli_opt *o, const char *arg)
{
	char name[64];

	if (o->given++ && o->arg && !(o->flags & CLI_REPEAT))
		return cli_usage_error(s->cmd,
				       "%s was given twice, as '%s' and as '%s': give it once",
				       opt_name(o, name, sizeof(name)), o->first_arg, arg);
	if (o->given == 1)
		o->first_arg = arg;
	return take(s, o, arg);
}

int cli_parse(struct cli_spec *s, int argc, char **argv, int *first)
{
	struct option lo[MAX_OPTS + 4];
	char so[3 * MAX_OPTS + 4];
	struct cli_opt *by_key[KEY_HELP] = { 0 }, *pid_opt = NULL;
	bool cmd = false, args = false;
	size_t nl = 0, ns = 0;
	int n = 0, c;

	for (struct cli_opt *o = s->opts; o->kind && n < MAX_OPTS; o++, n++) {
		o->given = 0;
		o->first_arg = NULL;
		if (o->kind == CLI_CMD)
			cmd = true;
		if (o->kind == CLI_ARGS)
			args = true;
		if (o->kind == CLI_PID && !pid_opt)
			pid_opt = o;
	}
	so[ns++] = cmd ? '+' : '-'; /* '-': operands come back as 1 */
	so[ns++] = ':';
	for (int i = 0; i < n; i++) {
		struct cli_opt *o = &s->opts[i];
		int key = o->letter ? (unsigned char)o->letter : LONG_ONLY + i;

		if (!is_option(o))
			continue;
		by_key[key] = o;
		if (o->letter) {
			so[ns++] = o->letter;
			if (o->arg)
				so[ns++] = ':';
		}
		if (o->name)
			lo[nl++] =
				(struct option){ o->name, o->arg ? required_argument : no_argument,
						 NULL, key };
	}
	so[ns++] = 'h';
	so[ns++] = 'V';
	so[ns] = 0;
	lo[nl++] = (struct option){ "help", no_argument, NULL, KEY_HELP };
	lo[nl++] = (struct option){ "version", no_argument, NULL, KEY_VERSION };
	lo[nl++] = (struct option){ "list-options", no_argument, NULL, KEY_LIST };
	lo[nl] = (struct option){ 0 };

	/* operands collected in order, for the commands that take them anywhere */
	char **ops = calloc((size_t)argc + 1, sizeof(*ops));
	int nops = 0, r = 0;

	if (!ops)
		return cli_usage_error(s->cmd, "out of memory");
	opterr = 0;
	/* the operands first (only '-' parsing returns them in order, argv
	 * untouched), unless --help or --version is asked for */
	if (s->check_operand && !cmd) {
		int nc = 0;
		char **check = calloc((size_t)argc + 1, sizeof(*check));

		if (!check) {
			r = cli_usage_error(s->cmd, "out of memory");
			goto out;
		}
		optind = 0;
		while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
			if (c == 'h' || c == 'V' || c == KEY_HELP || c == KEY_VERSION ||
			    c == KEY_LIST)
				nc = -1;
			if (c == 1 && nc >= 0)
				check[nc++] = optarg;
		}
		while (nc >= 0 && optind < argc)
			check[nc++] = argv[optind++];
		for (int i = 0; i < nc && !r; i++)
			r = s->check_operand(s->cmd, check[i]);
		free(check);
		if (r)
			goto out;
	}
	optind = 0; /* glibc: start afresh, reading the '+' or '-' of @so */
	for (;;) {
		c = getopt_long(argc, argv, so, lo, NULL);
		/* '+': options stop at the first operand; a PID there is -p PID
		 * (memlens snapshot 1234 -i 10), not a command named 1234 */
		if (c == -1 && cmd && optind < argc && strcmp(argv[optind - 1], "--") &&
		    bare_pid(pid_opt, argv[optind])) {
			r = take_pid(s, pid_opt, argv[optind++]);
			if (r)
				goto out;
			continue;
		}
		if (c == -1)
			break;
		if (c == 1) {
			if (bare_pid(pid_opt, optarg)) {
				r = take_pid(s, pid_opt, optarg);
				if (r)
					goto out;
				continue;
			}
			if (!args) {
				r = cli_usage_error(s->cmd, "unexpected argument '%s'", optarg);
				goto out;
			}
			ops[nops++] = optarg;
			continue;
		}
		if (c == 'h' || c == KEY_HELP) {
			cli_print_help(s, stdout);
			r = -1;
			goto out;
		}
		if (c == 'V' || c == KEY_VERSION) {
			cli_print_version(stdout);
			r = -1;
			goto out;
		}
		if (c == KEY_LIST) {
			cli_list_options(s, stdout);
			r = -1;
			goto out;
		}
		if (c == '?' || c == ':') {
			const struct cli_opt *o =
				optopt > 0 && optopt < KEY_HELP ? by_key[optopt] : NULL;

			bad_option(s, optind > 0 && optind <= argc ? argv[optind - 1] : NULL,
				   optopt < 256 ? optopt : 0, c == ':', o);
			r = EXIT_USAGE;
			goto out;
		}
		if (c > 0 && c < KEY_HELP && by_key[c]) {
			if (by_key[c]->kind == CLI_PID) {
				r = take_pid(s, by_key[c], optarg);
				if (r)
					goto out;
				continue;
			}
			r = take_once(s, by_key[c], optarg);
			if (r)
				goto out;
		}
	}
	if (!cmd && !args && optind < argc) {
		r = cli_usage_error(s->cmd, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	/* operands after "--" (or all of them with '+'), after the ones seen */
	while (optind < argc)
		ops[nops++] = argv[optind++];
	memcpy(argv + argc - nops, ops, (size_t)nops * sizeof(*ops));
	*first = argc - nops;
out:
	free(ops);
	return r;
}

/* ---- help ------------------------------------------------------------- */

void cli_wrap(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);
		int room = WIDTH - col;
		const char *cut = end;

		if (end - p > room) {
			for (cut = p + room; cut > p && *cut != ' '; cut--)
				;
			if (cut == p) /* one word longer than the line */
				for (cut = p + room; cut < end && *cut != ' '; cut++)
					;
		}
		fprintf(f, "%.*s\n", (int)(cut - p), p);
		p = cut;
		while (*p == ' ')
			p++;
		if (*p == '\n')
			p++;
		if (*p)
			fprintf(f, "%*s", indent, "");
		col = indent;
	}
}

/* "-p, --pid PID", "    --json", "-- CMD [ARGS]" */
static int opt_label(const struct cli_opt *o, char *buf, size_t len)
{
	if (o->kind == CLI_CMD)
		return snprintf(buf, len, "-- %s", o->arg);
	if (o->kind == CLI_ARGS)
		return snprintf(buf, len, "%s", o->arg);
	return snprintf(buf, len, "%s%c%s%s%s%s%s", o->letter ? "-" : " ",
			o->letter ? o->letter : ' ', o->letter && o->name ? ", " : "  ",
			o->name ? "--" : "", o->name ? o->name : "", o->arg ? " " : "",
			o->arg ? o->arg : "");
}

/* Does the synopsis already name @o ("-p PID", "--to")? */
static bool in_synopsis(const struct cli_spec *s, const struct cli_opt *o)
{
	char want[64];
	const char *p;

	if (!s->synopsis || !is_option(o))
		return s->synopsis && !is_option(o);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && !o->letter)
			continue;
		if (pass == 1 && !o->name)
			continue;
		if (pass == 0)
			snprintf(want, sizeof(want), "-%c", o->letter);
		else
			snprintf(want, sizeof(want), "--%s", o->name);
		for (p = s->synopsis; (p = strstr(p, want)); p += strlen(want)) {
			char next = p[strlen(want)];
			bool start = p == s->synopsis || p[-1] == ' ' || p[-1] == '(' ||
				     p[-1] == '[' || p[-1] == '|';

			if (start && (next == 0 || next == ' ' || next == ']' || next == ')' ||
				      next == '|' || next == '='))
				return true;
		}
	}
	return false;
}

/* one word of the usage line, wrapped under the first word after the command */
static void usage_word(FILE *f, const char *w, int *col, int indent)
{
	int n = (int)strlen(w);

	if (*col + 1 + n > WIDTH && *col > indent) {
		fprintf(f, "\n%*s", indent, "");
		*col = indent;
	} else {
		fputc(' ', f);
		(*col)++;
	}
	fputs(w, f);
	*col += n;
}

static void print_usage(const struct cli_spec *s, FILE *f)
{
	char word[128], flags[MAX_OPTS + 4] = "";
	int col, indent;
	size_t nf = 0;

	col = fprintf(f, "usage: memlens %s", s->cmd);
	indent = col + 1;
	if (s->synopsis) {
		/* the synopsis is kept whole where it fits; split at its spaces if not */
		char buf[512], *save = NULL, *t;

		snprintf(buf, sizeof(buf), "%s", s->synopsis);
		char *tok[64];
		int nt = 0;

		for (t = strtok_r(buf, " ", &save); t && nt < 64; t = strtok_r(NULL, " ", &save))
			tok[nt++] = t;
		for (int i = 0; i < nt; i++) {
			/* "-D DIR" stays on one line */
			if (tok[i][0] == '-' && i + 1 < nt && !strchr("-|(", tok[i + 1][0])) {
				snprintf(word, sizeof(word), "%s %s", tok[i], tok[i + 1]);
				usage_word(f, word, &col, indent);
				i++;
			} else {
				usage_word(f, tok[i], &col, indent);
			}
		}
	}
	/* the flags without an argument that have a letter: [-aR] */
	for (const struct cli_opt *o = s->opts; o->kind; o++)
		if (is_option(o) && o->letter && !o->arg && !(o->flags & CLI_HIDDEN) &&
		    !in_synopsis(s, o))
			flags[nf++] = o->letter;
	flags[nf] = 0;
	if (nf) {
		snprintf(word, sizeof(word), "[-%s]", flags);
		usage_word(f, word, &col, indent);
	}
	for (const struct cli_opt *o = s->opts; o->kind; o++) {
		bool req = o->flags & CLI_REQUIRED;

		if ((o->flags & CLI_HIDDEN) || in_synopsis(s, o) || (o->letter && !o->arg))
			continue;
		if (o->kind == CLI_CMD)
			snprintf(word, sizeof(word), "[-- %s]", o->arg);
		else if (o->kind == CLI_ARGS)
			snprintf(word, sizeof(word), "%s", o->arg);
		else if (o->letter)
			snprintf(word, sizeof(word), "%s-%c %s%s", req ? "" : "[", o->letter,
				 o->arg, req ? "" : "]");
		else
			snprintf(word, sizeof(word), "%s--%s%s%s%s", req ? "" : "[", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "", req ? "" : "]");
		/* an option and its argument stay on one line */
		int n = (int)strlen(word);

		if (col + 1 + n > WIDTH && col > indent) {
			fprintf(f, "\n%*s%s", indent, "", word);
			col = indent + n;
		} else {
			col += fprintf(f, " %s", word);
		}
	}
	fputc('\n', f);
}

void cli_print_help(const struct cli_spec *s, FILE *f)
{
	static const struct cli_opt help = {
		.letter = 'h', .name = "help", .help = help_help, .kind = CLI_FLAG
	};
	static const struct cli_opt version = {
		.letter = 'V', .name = "version", .help = version_help, .kind = CLI_FLAG
	};
	const struct cli_opt *list[MAX_OPTS + 2];
	char label[128];
	int n = 0, w = 0;

	print_usage(s, f);
	if (s->about) {
		fputc('\n', f);
		cli_wrap(f, s->about, 0, 0);
	}
	for (const struct cli_opt *o = s->opts; o->kind && n < MAX_OPTS; o++)
		if (!(o->flags & CLI_HIDDEN))
			list[n++] = o;
	list[n++] = &help;
	list[n++] = &version;
	for (int i = 0; i < n; i++) {
		int l = opt_label(list[i], label, sizeof(label));

		if (l > w && l <= 24)
			w = l;
	}
	fputc('\n', f);
	if (!s->opts[0].kind || !s->opts[0].section)
		fprintf(f, "Options:\n");
	for (int i = 0; i < n; i++) {
		const struct cli_opt *o = list[i];
		int l = opt_label(o, label, sizeof(label));

		if (o->section) {
			if (i)
				fputc('\n', f);
			cli_wrap(f, o->section, 0, 0);
		}
		fprintf(f, "  %s", label);
		if (l > w) {
			fprintf(f, "\n%*s", 2 + w + 2, "");
		} else {
			fprintf(f, "%*s", w - l + 2, "");
		}
		if (o->kind == CLI_PID) {
			char h[512];

			/* a bare PID means -p PID (cli_parse) */
			snprintf(h, sizeof(h), "%s; a PID alone means the same (memlens %s 1234)",
				 o->help ? o->help : "", s->cmd);
			cli_wrap(f, h, 2 + w + 2, 2 + w + 2);
			continue;
		}
		cli_wrap(f, o->help ? o->help : "", 2 + w + 2, 2 + w + 2);
	}
	if (s->footer) {
		fputc('\n', f);
		cli_wrap(f, s->footer, 0, 0);
	}
}

void cli_list_options(const struct cli_spec *s, FILE *f)
{
	for (const struct cli_opt *o = s->opts; o->kind; o++) {
		if (!is_option(o))
			fprintf(f, "%s - %s\n", o->kind == CLI_CMD ? "--" : "-", o->arg);
		else
			fprintf(f, "%c %s %s%s\n", o->letter ? o->letter : '-',
				o->name ? o->name : "-", o->arg ? o->arg : "-",
				o->flags & CLI_HIDDEN ? " hidden" : "");
	}
	fprintf(f, "h help -\nV version -\n");
}

/* ---- --version -------------------------------------------------------- */

static void print_features(FILE *f, const struct ml_feature_list *l, enum ml_feature_state want,
			   const char *head)
{
	int col = fprintf(f, "%s", head), n = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct ml_feature *x = &l->items[i];
		int len = (int)strlen(x->name) + 2;

		if (x->state != want)
			continue;
		if (n && col + len > WIDTH) {
			fprintf(f, ",\n%*s", (int)strlen(head), "");
			col = (int)strlen(head);
		} else if (n) {
			col += fprintf(f, ", ");
		}
		col += fprintf(f, "%s", x->name);
		n++;
	}
	if (!n)
		fprintf(f, "none");
	fputc('\n', f);
}

void cli_set_tracers(const struct cli_tracers *t)
{
	tracers = t;
}

void cli_print_version(FILE *f)
{
	static struct ml_feature_list l; /* 48 features of 500+ bytes each */
	struct utsname u;

	fprintf(f, "memlens %s\n", MEMLENS_VERSION);
	if (tracers && tracers->libbpf_version) {
		unsigned int maj = 0, min = 0;

		tracers->libbpf_version(&maj, &min);
		fprintf(f, "using libbpf v%u.%u\n", maj, min);
	} else {
		fprintf(f, "using libbpf: no (this binary has no eBPF tracers)\n");
	}
	if (!uname(&u))
		fprintf(f, "kernel %s %s\n", u.release, u.machine);
	memset(&l, 0, sizeof(l));
	ml_features_probe_memory(&l);
	if (tracers && tracers->probe_features)
		tracers->probe_features(&l);
	fflush(f);
	print_features(f, &l, ML_FEATURE_OK, "features: ");
	print_features(f, &l, ML_FEATURE_MISSING, "missing: ");
}

int cli_sample_fraction(void *target, const char *arg, char *why, size_t len)
{
	unsigned int *k = target;
	char *end;
	double f;

	if (!strncmp(arg, "1/", 2)) {
		unsigned long v;

		errno = 0;
		v = strtoul(arg + 2, &end, 10);
		if (errno || end == arg + 2 || *end || !v || v > ML_SAMPLE_K_MAX)
			goto bad;
		*k = (unsigned int)v;
		return 0;
	}
	errno = 0;
	f = strtod(arg, &end);
	if (errno || end == arg || *end || !(f > 0 && f <= 1))
		goto bad;
	/* the nearest 1/K: every page is sampled once in K intervals */
	f = 1 / f + 0.5;
	if (f > ML_SAMPLE_K_MAX)
		goto bad;
	*k = (unsigned int)f;
	return 0;
bad:
	snprintf(why, len, "must be a fraction in [1/%d, 1], as 0.1 or 1/10", ML_SAMPLE_K_MAX);
	return -1;
}
