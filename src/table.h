/* SPDX-License-Identifier: MIT */
/*
 * Text tables that fit the screen: 80 columns unless stdout is a wider
 * terminal (or $COLUMNS says so). Cells are collected row by row, the
 * column widths follow what they hold, columns of lower priority are left
 * out when the table would not fit, and the one flexible column (a name,
 * the last) gets what is left: a cell longer than that wraps at its spaces,
 * and a word longer than the column ("libQt5WebEngineCore.so.5.15.8") goes
 * whole on a line of its own under its row, never broken at a dot, as pmap
 * prints it and grep finds it. Addresses and ranges are formatted here, the
 * same way in every table.
 */
#ifndef MEMLENS_TABLE_H
#define MEMLENS_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The width output should fit: $COLUMNS, else a terminal's width, else 80. */
int table_width(FILE *f);

enum table_align { TABLE_LEFT, TABLE_RIGHT };

struct table_col {
	const char *name;
	enum table_align align;
	int drop; /* 0: always shown; else left out first when higher (1, 2, ...) */
	bool flex; /* the room left (at most one column, the last); never cut: see above */
};

struct table;

struct table *table_new(const struct table_col *cols, int ncols);
/* Start a row, then give its cells in column order. */
void table_row(struct table *t);
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rows so far. */
size_t table_rows(const struct table *t);
/*
 * Print the header and the first @max_rows rows (0: all) to @f within
 * @width columns, each line indented by @indent spaces; when there are more
 * rows, the last of the @max_rows lines says how many are not shown.
 * Returns the number of lines printed.
 */
int table_print(const struct table *t, FILE *f, int width, int indent, size_t max_rows);
/*
 * As table_print, with as many rows as fit in @max_lines lines in all: the
 * header, names wrapped onto lines of their own, the line that says how
 * many rows are not shown and the note on left-out columns count. At the
 * least the header and the line of rows not shown. Returns the lines printed.
 */
int table_print_fit(const struct table *t, FILE *f, int width, int indent, int max_lines);
void table_free(struct table *t);

/*
 * A paragraph wrapped at word boundaries to @width columns: the first line
 * as is, the following ones indented by @indent spaces. A word longer than
 * a line is broken after a comma (a list of names), else printed whole on
 * a line of its own (a path): never cut inside a name. Returns the lines.
 */
int table_wrap(FILE *f, int width, int indent, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* An address as every table shows one: "7f3a5c000000" (hex, no 0x, 12 digits at least). */
const char *table_addr(uint64_t a, char *buf, size_t len);
/* A range "start-end" in table_addr()'s form; 32 bytes are enough. */
const char *table_range(uint64_t start, uint64_t end, char *buf, size_t len);
/* The last component of a path ("libc.so.6"); "[heap]" and "" as they are. */
const char *table_basename(const char *path);

#endif
