/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: one object per line (JSON Lines). */
#ifndef MEMLENS_JSONW_H
#define MEMLENS_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct jw {
	FILE *f;
	int depth;
	bool first[32];
};

void jw_init(struct jw *w, FILE *f);
void jw_obj(struct jw *w); /* { (as a value) */
void jw_obj_end(struct jw *w); /* } ; at depth 0 also prints '\n' and flushes */
void jw_arr(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *k);
void jw_str(struct jw *w, const char *s);
void jw_int(struct jw *w, int64_t v);
void jw_uint(struct jw *w, uint64_t v);
void jw_dbl(struct jw *w, double v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
void jw_hex(struct jw *w, uint64_t v); /* "0x..." string */

/* key + value shorthands */
void jw_kstr(struct jw *w, const char *k, const char *s);
void jw_kint(struct jw *w, const char *k, int64_t v);
void jw_kuint(struct jw *w, const char *k, uint64_t v);
void jw_kdbl(struct jw *w, const char *k, double v);
void jw_kbool(struct jw *w, const char *k, bool v);
void jw_khex(struct jw *w, const char *k, uint64_t v);

#endif
