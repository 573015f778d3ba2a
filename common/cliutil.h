/* SPDX-License-Identifier: MIT */
/* Helpers shared by the subcommands: number parsing, units, signals (options: opts.h). */
#ifndef MEMLENS_CLIUTIL_H
#define MEMLENS_CLIUTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/clock.h" /* ml_mono_ns(): the commands measure with it */

/* Strict parsers: the whole string must be a number in [min, max]. 0 or -EINVAL. */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double min, double max, double *out);
int parse_pid(const char *s, pid_t *out);

/* sizes: ml_fmt_bytes(), the one byte formatter */
#include "memlens/units.h"

/* Print "memlens <cmd>: <msg>" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Block SIGINT/SIGTERM/SIGHUP in every thread (call before starting any),
 * then wait for one of them for up to @ms milliseconds: returns the signal
 * or 0 on timeout.
 */
void cli_block_signals(sigset_t *set);
int cli_wait_signal(const sigset_t *set, long ms);

#endif
