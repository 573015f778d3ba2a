/* SPDX-License-Identifier: MIT */
/* A small streaming JSON writer: one object per line (JSON Lines). */
#ifndef MEMLENS_JSONW_H
#define MEMLENS_JSONW_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ml_jw {
	FILE *f;
	int depth;
	bool first[32];
};

void ml_jw_init(struct ml_jw *w, FILE *f);
void ml_jw_obj(struct ml_jw *w); /* { (as a value) */
void ml_jw_obj_end(struct ml_jw *w); /* } ; at depth 0 also prints '\n' and flushes */
void ml_jw_arr(struct ml_jw *w);
void ml_jw_arr_end(struct ml_jw *w);
void ml_jw_key(struct ml_jw *w, const char *k);
void ml_jw_str(struct ml_jw *w, const char *s);
void ml_jw_int(struct ml_jw *w, int64_t v);
void ml_jw_uint(struct ml_jw *w, uint64_t v);
void ml_jw_dbl(struct ml_jw *w, double v);
void ml_jw_bool(struct ml_jw *w, bool v);
void ml_jw_null(struct ml_jw *w);
void ml_jw_hex(struct ml_jw *w, uint64_t v); /* "0x..." string */

/* key + value shorthands */
void ml_jw_kstr(struct ml_jw *w, const char *k, const char *s);
void ml_jw_kint(struct ml_jw *w, const char *k, int64_t v);
void ml_jw_kuint(struct ml_jw *w, const char *k, uint64_t v);
void ml_jw_kdbl(struct ml_jw *w, const char *k, double v);
void ml_jw_kbool(struct ml_jw *w, const char *k, bool v);
void ml_jw_khex(struct ml_jw *w, const char *k, uint64_t v);

#pragma GCC visibility pop

#endif
