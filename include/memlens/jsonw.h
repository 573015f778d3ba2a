/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: one object per line (JSON Lines). */
#ifndef MEMLENS_JSONW_H
#define MEMLENS_JSONW_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct jw {
	FILE *f;
	int depth;
	bool first[32];
};

void ml_jw_init(struct jw *w, FILE *f);
void ml_jw_obj(struct jw *w); /* { (as a value) */
void ml_jw_obj_end(struct jw *w); /* } ; at depth 0 also prints '\n' and flushes */
void ml_jw_arr(struct jw *w);
void ml_jw_arr_end(struct jw *w);
void ml_jw_key(struct jw *w, const char *k);
void ml_jw_str(struct jw *w, const char *s);
void ml_jw_int(struct jw *w, int64_t v);
void ml_jw_uint(struct jw *w, uint64_t v);
void ml_jw_dbl(struct jw *w, double v);
void ml_jw_bool(struct jw *w, bool v);
void ml_jw_null(struct jw *w);
void ml_jw_hex(struct jw *w, uint64_t v); /* "0x..." string */

/* key + value shorthands */
void ml_jw_kstr(struct jw *w, const char *k, const char *s);
void ml_jw_kint(struct jw *w, const char *k, int64_t v);
void ml_jw_kuint(struct jw *w, const char *k, uint64_t v);
void ml_jw_kdbl(struct jw *w, const char *k, double v);
void ml_jw_kbool(struct jw *w, const char *k, bool v);
void ml_jw_khex(struct jw *w, const char *k, uint64_t v);

#pragma GCC visibility pop

#endif
