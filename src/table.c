// SPDX-License-Identifier: MIT
/* Text tables that fit the screen (see table.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "table.h"

int table_width(FILE *f)
{
	const char *env = getenv("COLUMNS");
	/* stdout is a checked stream over fd 1 (output.h): fileno() does not know it */
	int fd = f == stdout ? STDOUT_FILENO : fileno(f);
	struct winsize ws;
	char *end;
	long v;

	if (env && *env) {
		v = strtol(env, &end, 10);
		if (!*end && v >= 40 && v <= 4096)
			return (int)v;
	}
	if (fd >= 0 && isatty(fd) && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		return ws.ws_col;
	return 80;
}

struct table {
	const struct table_col *cols;
	int ncols;
	char **cells; /* row-major, ncols per row; NULL for a cell not given */
	size_t nrows, cap;
	int next; /* the next cell of the current row */
};

struct table *table_new(const struct table_col *cols, int ncols)
{
	struct table *t = calloc(1, sizeof(*t));

	if (t) {
		t->cols = cols;
		t->ncols = ncols;
		t->next = ncols;
	}
	return t;
}

void table_row(struct table *t)
{
	if (!t)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **n = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*n));

		if (!n) {
			t->next = t->ncols; /* out of memory: the row is dropped */
			return;
		}
		t->cells = n;
		t->cap = cap;
	}
	memset(&t->cells[t->nrows * (size_t)t->ncols], 0, (size_t)t->ncols * sizeof(char *));
	t->nrows++;
	t->next = 0;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (!t || t->next >= t->ncols)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	t->cells[(t->nrows - 1) * (size_t)t->ncols + (size_t)t->next++] = s;
}

size_t table_rows(const struct table *t)
{
	return t ? t->nrows : 0;
}

static const char *cell(const struct table *t, size_t r, int c)
{
	const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];

	return s ? s : "";
}

static int line_width(const struct table *t, const int *w, const bool *on, int indent)
{
	int n = indent, shown = 0;

	for (int c = 0; c < t->ncols; c++)
		if (on[c]) {
			n += w[c] + (shown ? 1 : 0);
			shown++;
		}
	return n;
}

/* Which columns, how wide: drop the most droppable until it fits, then cut the flex one. */
static void layout(const struct table *t, size_t nrows, int width, int indent, int *w, bool *on)
{
	int flex = -1, total;

	for (int c = 0; c < t->ncols; c++) {
		w[c] = (int)strlen(t->cols[c].name);
		on[c] = true;
		if (t->cols[c].flex)
			flex = c;
		for (size_t r = 0; r < nrows; r++) {
			int l = (int)strlen(cell(t, r, c));

			if (l > w[c])
				w[c] = l;
		}
	}
	for (;;) {
		int worst = -1;

		total = line_width(t, w, on, indent);
		if (total <= width)
			return;
		/* a flex column that can give enough room comes before dropping columns:
		 * room for a usual name (20), longer ones wrap */
		if (flex >= 0 && w[flex] - (total - width) >= (w[flex] < 20 ? w[flex] : 20)) {
			w[flex] -= total - width;
			return;
		}
		for (int c = 0; c < t->ncols; c++)
			if (on[c] && t->cols[c].drop &&
			    (worst < 0 || t->cols[c].drop >= t->cols[worst].drop))
				worst = c;
		if (worst < 0)
			break;
		on[worst] = false;
	}
	/* what is left, if anything: a name longer than that goes on a line of its own */
	if (flex >= 0 && total > width)
		w[flex] = w[flex] > total - width ? w[flex] - (total - width) : 0;
}

static void put_line(FILE *f, char *line, int width)
{
	size_t n = strlen(line);

	while (n && line[n - 1] == ' ')
		n--;
	if (n > (size_t)width)
		n = (size_t)width; /* never wider than the screen */
	fprintf(f, "%.*s\n", (int)n, line);
}

/*
 * How much of @s (longer than @w) goes on one line of the flexible column:
 * the whole words (runs without a space) that fit in @w, so "(shared)" and
 * "(deleted)" stay whole; 0 when the first word alone is longer than @w.
 * The caller skips the spaces the next line would start with.
 */
static int flex_words(const char *s, int w)
{
	for (int k = w; k > 0; k--)
		if (s[k] == ' ' && s[k - 1] != ' ')
			return k;
	return 0;
}

/*
 * A word of the flexible column longer than the column (a name with no
 * space: "libQt5WebEngineCore.so.5.15.8") goes on a line of its own, whole,
 * as pmap prints it and as grep finds it, from column @start (long_start():
 * every such name of the table starts there), with the words after it that
 * fit. One longer than the line from there is broken after its last '/'
 * that fits (a path), else at the edge. Returns how much of @s went on the
 * line; @lines counts it.
 */
static int long_word(FILE *f, char *line, const char *s, int width, int start, int *lines)
{
	int room = width - start, k = (int)strlen(s);

	if (k > room)
		k = flex_words(s, room);
	if (!k) {
		for (k = room; k > room / 2 && s[k - 1] != '/'; k--)
			;
		if (k <= room / 2)
			k = room;
	}
	sprintf(line, "%*s%.*s", start, "", k, s);
	put_line(f, line, width);
	(*lines)++;
	return k;
}

/*
 * Where the names too long for the flexible column (@w wide, from column
 * @at) start, on lines of their own: in the column when they fit, else as
 * far left as the longest of the first @nrows rows needs to end at @width,
 * one column right of @indent at the least, so that such a line never
 * reads as a row.
 */
static int long_start(const struct table *t, size_t nrows, int c, int w, int at, int width,
		      int indent)
{
	int longest = 0, start;

	for (size_t r = 0; r < nrows; r++)
		for (const char *s = cell(t, r, c); *s; s += strspn(s, " ")) {
			int l = (int)strcspn(s, " ");

			if (l > w && l > longest)
				longest = l;
			s += l;
		}
	start = width - longest < at ? width - longest : at;
	return start < indent + 1 ? indent + 1 : start;
}

/* @s into @buf padded or cut to @w columns; a cut cell ends in "~". */
static int put_cell(char *buf, const char *s, int w, enum table_align a, bool pad)
{
	int l = (int)strlen(s);

	if (l > w)
		return sprintf(buf, "%.*s~", w - 1, s);
	if (!pad)
		return sprintf(buf, "%s", s);
	return a == TABLE_RIGHT ? sprintf(buf, "%*s", w, s) : sprintf(buf, "%-*s", w, s);
}

/* Say which columns were left out, and how to see them. */
static void p_dropped(const struct table *t, FILE *f, int width, int indent, const bool *on,
		      char *buf, int *lines)
{
	size_t n = 0;

	buf[0] = 0;
	for (int c = 0; c < t->ncols; c++)
		if (!on[c])
			n += (size_t)sprintf(buf + n, " %s", t->cols[c].name);
	if (!n)
		return;
	fprintf(f, "%*s", indent, "");
	*lines +=
		table_wrap(f, width - indent, indent,
			   "(left out to fit %d columns:%s; a wider terminal, COLUMNS=N or --json "
			   "shows them)",
			   width, buf);
}

int table_print(const struct table *t, FILE *f, int width, int indent, size_t max_rows)
{
	int w[64], last = -1, lines = 0, long_at = -1;
	bool on[64];
	size_t nrows, len = 0, flex_max = 0;
	char *line;

	if (!t || t->ncols > 64)
		return 0;
	/* cut: the last of the @max_rows lines says how many rows are not shown */
	nrows = max_rows && max_rows < t->nrows ? max_rows - 1 : t->nrows;
	layout(t, nrows, width, indent, w, on);
	for (int c = 0; c < t->ncols; c++)
		if (on[c]) {
			last = c;
			len += (size_t)w[c] + 1;
		}
	for (size_t r = 0; r < nrows; r++)
		for (int c = 0; c < t->ncols; c++)
			if (t->cols[c].flex && strlen(cell(t, r, c)) > flex_max)
				flex_max = strlen(cell(t, r, c));
	line = malloc(len + (size_t)indent + flex_max + 4096);
	if (!line)
		return 0;
	for (size_t r = 0; r <= nrows; r++) {
		char *p = line + sprintf(line, "%*s", indent, "");
		const char *rest = NULL;
		bool first = true;
		int at = 0;

		for (int c = 0; c < t->ncols; c++) {
			const char *s = r ? cell(t, r - 1, c) : t->cols[c].name;

			if (!on[c])
				continue;
			if (!first)
				*p++ = ' ';
			first = false;
			/* a name is never cut: the last column wraps onto lines of its own */
			if (t->cols[c].flex && c == last && (int)strlen(s) > w[c]) {
				int k = flex_words(s, w[c]);

				at = (int)(p - line);
				p += sprintf(p, "%.*s", k, s);
				rest = s + k + strspn(s + k, " ");
				continue;
			}
			p += put_cell(p, s, w[c], t->cols[c].align,
				      c != last || t->cols[c].align == TABLE_RIGHT);
		}
		put_line(f, line, width);
		lines++;
		if (rest && *rest && long_at < 0)
			long_at = long_start(t, nrows, last, w[last], at, width, indent);
		while (rest && *rest) {
			int wl = (int)strcspn(rest, " ");
			int k = (int)strlen(rest) <= w[last] ? (int)strlen(rest)
							     : flex_words(rest, w[last]);

			if (wl > w[last]) {
				rest += long_word(f, line, rest, width, long_at, &lines);
			} else {
				sprintf(line, "%*s%.*s", at, "", k, rest);
				put_line(f, line, width);
				lines++;
				rest += k;
			}
			rest += strspn(rest, " ");
		}
	}
	if (nrows < t->nrows) {
		fprintf(f, "%*s", indent, "");
		lines += table_wrap(f, width - indent, indent,
				    "... %zu more row%s of %zu (a taller terminal shows them)",
				    t->nrows - nrows, t->nrows - nrows == 1 ? "" : "s", t->nrows);
	}
	p_dropped(t, f, width, indent, on, line, &lines);
	free(line);
	return lines;
}

int table_print_fit(const struct table *t, FILE *f, int width, int indent, int max_lines)
{
	if (!t || max_lines < 2)
		return 0;
	/* the header and one line a row is the most rows can take: fewer when names wrap */
	for (size_t m = (size_t)max_lines - 1; m >= 1; m--) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);
		int lines;

		if (!mem)
			return 0;
		lines = table_print(t, mem, width, indent, m < t->nrows ? m : 0);
		fclose(mem);
		if (lines <= max_lines || m == 1) {
			if (lines <= max_lines)
				fwrite(buf, 1, len, f);
			free(buf);
			return lines <= max_lines ? lines : 0;
		}
		free(buf);
		/* a taller table than asked: skip straight to what the excess leaves */
		if ((size_t)(lines - max_lines) < m)
			m -= (size_t)(lines - max_lines) - 1;
		else
			m = 2;
	}
	return 0;
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

int table_wrap(FILE *f, int width, int indent, const char *fmt, ...)
{
	const char *p;
	int lines = 0, room;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		va_end(ap);
		return 0;
	}
	va_end(ap);
	p = s;
	room = width;
	do {
		int n = (int)strlen(p), cut = n;

		if (n > room) {
			cut = room;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			/* one word longer than the line: after its last comma that fits
			 * (a list of names), else whole (a path): never cut inside a name */
			if (cut == 0) {
				for (cut = room; cut > 0 && p[cut - 1] != ','; cut--)
					;
				if (cut == 0)
					cut = (int)strcspn(p, " ");
			}
		}
		int keep = cut;

		while (keep > 0 && p[keep - 1] == ' ')
			keep--;
		fprintf(f, "%*s%.*s\n", lines ? indent : 0, "", keep, p);
		lines++;
		p += cut;
		while (*p == ' ')
			p++;
		room = width - indent;
	} while (*p);
	free(s);
	return lines;
}

const char *table_addr(uint64_t a, char *buf, size_t len)
{
	snprintf(buf, len, "%012llx", (unsigned long long)a);
	return buf;
}

const char *table_range(uint64_t start, uint64_t end, char *buf, size_t len)
{
	snprintf(buf, len, "%012llx-%012llx", (unsigned long long)start, (unsigned long long)end);
	return buf;
}

const char *table_basename(const char *path)
{
	const char *s;

	if (!path || path[0] != '/')
		return path ? path : "";
	s = strrchr(path, '/');
	return s[1] ? s + 1 : path;
}
