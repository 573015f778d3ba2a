// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>

#include "memlens/jsonw.h"

void ml_jw_init(struct ml_jw *w, FILE *f)
{
	w->f = f;
	w->depth = 0;
	w->first[0] = true;
}

/* Comma before a value that is not the first of its container (keys do it). */
static void sep(struct ml_jw *w)
{
	if (w->depth > 0 && !w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
}

static void open_c(struct ml_jw *w, char c)
{
	sep(w);
	fputc(c, w->f);
	if (w->depth < 31)
		w->depth++;
	w->first[w->depth] = true;
}

static void close_c(struct ml_jw *w, char c)
{
	fputc(c, w->f);
	if (w->depth > 0)
		w->depth--;
	if (w->depth == 0) {
		fputc('\n', w->f);
		fflush(w->f);
		w->first[0] = true;
	}
}

void ml_jw_obj(struct ml_jw *w)
{
	open_c(w, '{');
}

void ml_jw_obj_end(struct ml_jw *w)
{
	close_c(w, '}');
}

void ml_jw_arr(struct ml_jw *w)
{
	open_c(w, '[');
}

void ml_jw_arr_end(struct ml_jw *w)
{
	close_c(w, ']');
}

static void raw_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void ml_jw_key(struct ml_jw *w, const char *k)
{
	sep(w);
	raw_str(w->f, k);
	fputc(':', w->f);
	w->first[w->depth] = true; /* the value that follows takes no comma */
}

static void after_value(struct ml_jw *w)
{
	w->first[w->depth] = false;
}

void ml_jw_str(struct ml_jw *w, const char *s)
{
	sep(w);
	raw_str(w->f, s ? s : "");
	after_value(w);
}

void ml_jw_int(struct ml_jw *w, int64_t v)
{
	sep(w);
	fprintf(w->f, "%" PRId64, v);
	after_value(w);
}

void ml_jw_uint(struct ml_jw *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "%" PRIu64, v);
	after_value(w);
}

static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void)
{
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* "%.10g" with a '.' whatever LC_NUMERIC the program set: JSON has no ',' decimals. */
static void put_dbl(FILE *f, double v)
{
	locale_t old = (locale_t)0;

	pthread_once(&c_numeric_once, make_c_numeric);
	if (c_numeric)
		old = uselocale(c_numeric);
	fprintf(f, "%.10g", v);
	if (c_numeric)
		uselocale(old);
}

void ml_jw_dbl(struct ml_jw *w, double v)
{
	sep(w);
	if (isfinite(v))
		put_dbl(w->f, v);
	else
		fputs("null", w->f);
	after_value(w);
}

void ml_jw_bool(struct ml_jw *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->f);
	after_value(w);
}

void ml_jw_null(struct ml_jw *w)
{
	sep(w);
	fputs("null", w->f);
	after_value(w);
}

void ml_jw_hex(struct ml_jw *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "\"0x%" PRIx64 "\"", v);
	after_value(w);
}

void ml_jw_kstr(struct ml_jw *w, const char *k, const char *s)
{
	ml_jw_key(w, k);
	ml_jw_str(w, s);
}

void ml_jw_kint(struct ml_jw *w, const char *k, int64_t v)
{
	ml_jw_key(w, k);
	ml_jw_int(w, v);
}

void ml_jw_kuint(struct ml_jw *w, const char *k, uint64_t v)
{
	ml_jw_key(w, k);
	ml_jw_uint(w, v);
}

void ml_jw_kdbl(struct ml_jw *w, const char *k, double v)
{
	ml_jw_key(w, k);
	ml_jw_dbl(w, v);
}

void ml_jw_kbool(struct ml_jw *w, const char *k, bool v)
{
	ml_jw_key(w, k);
	ml_jw_bool(w, v);
}

void ml_jw_khex(struct ml_jw *w, const char *k, uint64_t v)
{
	ml_jw_key(w, k);
	ml_jw_hex(w, v);
}
