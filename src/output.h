/* SPDX-License-Identifier: MIT */
/*
 * Checked output. Every stream memlens writes its results to (standard
 * output, -o FILE, --record FILE) goes through one of these: the first
 * write that fails is kept with its errno, later writes to the stream fail
 * at once (a partly written file never grows into something that looks
 * complete), and closing says what failed: "memlens CMD: writing FILE:
 * No space left on device". main() checks standard output after every
 * command; a command checks its own files.
 */
#ifndef MEMLENS_OUTPUT_H
#define MEMLENS_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

/* Make stdout a checked stream over fd 1 (main() does it first). */
void out_wrap_stdout(void);

/* Create or truncate @path (mode 0644) as a checked stream; NULL with errno set. */
FILE *out_open(const char *path);

/* The name messages use for @f (the tracers point stdout at their -o FILE). */
void out_set_name(FILE *f, const char *name);

/*
 * -o FILE of every command: what the command prints on standard output goes
 * to FILE instead. out_stdout_open() creates the file (call it once the
 * options are parsed, before any work: 0 or -errno), out_stdout_switch()
 * points stdout at it: after a `-- CMD` was started, which keeps memlens's
 * own standard output. Both no-ops without -o.
 */
int out_stdout_open(const char *path);
void out_stdout_switch(void);

/*
 * -o FILE of a command that starts nothing: both of the above at once.
 * 0, or the exit code after "memlens CMD: cannot create the output file".
 */
int out_option(const char *cmd, const char *path);

/* The errno of the first write to @f that failed, or 0 (buffered data not flushed). */
int out_failed(FILE *f);

/* out_failed() after flushing what @f buffers. */
int out_flush(FILE *f);

/*
 * Flush and close @f (stdout: flush only). On a failure, now or earlier,
 * print "memlens @cmd: writing NAME: <strerror>" once and return the
 * negative errno; else 0.
 */
int out_close(const char *cmd, FILE *f);

#endif
