/* SPDX-License-Identifier: MIT */
/* Private to lib/format: what the tracers' record readers and writers share. */
#ifndef MEMLENS_FORMAT_REC_H
#define MEMLENS_FORMAT_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/* A count at @key: an integer as written, else a finite number >= 0 cut to one, else 0. */
uint64_t mli_rec_count_or0(const struct ml_json *o, const char *key);
/* A number at @key: an integer as written, else a finite number clamped and cut, else 0. */
int64_t mli_rec_int_or0(const struct ml_json *o, const char *key);
/* A count that must be there: a finite number >= 0. -EINVAL naming @key. */
int mli_rec_need_count(const struct ml_json *o, const char *key, uint64_t *out, struct ml_err *err);
/* "@key": @s, or "" when absent (cut to @size). */
void mli_rec_str(const struct ml_json *o, const char *key, char *dst, size_t size);
/* A pid from a number, clamped to +-1e15 (a cast of 1e300 is undefined). */
int64_t mli_rec_pid(double v);
/*
 * The head every tracer record starts with: "type": @itype for an
 * interval's block (then "elapsed_ms" and "last"), else @type.
 */
void mli_rec_put_head(struct ml_jw *w, const char *type, const char *itype, bool interval,
		      uint64_t elapsed_ms, bool last);
/* An interval block's "elapsed_ms" (a number: -EINVAL when not) and "last". */
int mli_rec_read_interval(const struct ml_json *o, uint64_t *elapsed_ms, bool *last,
			  struct ml_err *err);
/* "@key": [@slots up to the last one that is not 0] */
void mli_rec_put_hist(struct ml_jw *w, const char *key, const uint64_t *slots, size_t n);
/*
 * "@key": an array of counts, its first @max kept in @slots (*@n of them).
 * Absent: an error unless @optional (then *@n is 0). -EINVAL naming @key.
 */
int mli_rec_read_hist(const struct ml_json *o, const char *key, bool optional, uint64_t *slots,
		      size_t max, size_t *n, struct ml_err *err);
/*
 * The "preflight" object of a record that ran CRIU (checkpoint, migrate)
 * into *@pf (the caller frees it; NULL when absent) and its "check_only".
 */
struct ml_criu_preflight;
int mli_rec_read_preflight(const struct ml_json *o, const struct ml_criu_preflight **pf,
			   bool *check_only, struct ml_err *err);

#endif
