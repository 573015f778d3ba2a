// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cliutil.h"
#include "command.h"

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || isnan(v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_pid(const char *s, pid_t *out)
{
	long v;

	if (parse_long(s, 1, 4194304, &v))
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int cli_usage(const char *text, bool help)
{
	fputs(text, help ? stdout : stderr);
	return help ? -1 : EXIT_USAGE;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "memlens %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int cli_wait_signal(const sigset_t *set, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int s = sigtimedwait(set, NULL, &ts);

	return s > 0 ? s : 0;
}
