/* SPDX-License-Identifier: MIT */
/*
 * Reading text input one line at a time, in bounded memory: a line longer
 * than the limit is refused (after reading at most limit + 1 bytes of it),
 * so /dev/zero, a binary file or a runaway line cannot exhaust memory.
 * NUL bytes are kept (the length is what counts).
 */
#ifndef MEMLENS_LINES_H
#define MEMLENS_LINES_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "memlens/err.h"

/*
 * The longest line `memlens report` and `migrate-model` accept, without its
 * newline: 64 MiB (a `writes --record` interval of about 1.8 million
 * written ranges).
 */
#define ML_MAX_LINE (64u << 20)

struct ml_lines {
	FILE *f;
	const char *name; /* the input, in messages */
	size_t max; /* longest line accepted */
	long lineno; /* of the line last returned */
	char *line; /* the current line (NUL-terminated, its '\n' removed) */
	size_t cap;
	char *rbuf; /* read-ahead */
	size_t rpos, rend;
	bool eof;
};

/* @max 0: ML_MAX_LINE. */
void ml_lines_init(struct ml_lines *l, FILE *f, const char *name, size_t max);
void ml_lines_free(struct ml_lines *l);

/*
 * The next line: 1 with *@line and *@len set (valid until the next call),
 * 0 at the end of the input, or a negative errno with @err set:
 * -EINVAL "NAME:LINE: line longer than N bytes", -EISDIR, -EIO (read error),
 * -ENOMEM.
 */
int ml_lines_next(struct ml_lines *l, const char **line, size_t *len, struct ml_err *err);

/* fstat() check before reading @f: -EISDIR with a message for a directory. */
int ml_lines_check_file(FILE *f, const char *name, struct ml_err *err);

#pragma GCC visibility pop

#endif
