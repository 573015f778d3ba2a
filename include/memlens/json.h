/* SPDX-License-Identifier: MIT */
/*
 * The JSON reader: parse one document (one JSON Lines line) with Jansson
 * (strict RFC 8259, UTF-8, numbers read the same in every locale), then
 * look values up by key or index with typed accessors. No I/O, no global
 * state; safe on any input (nesting limited to ML_JSON_MAX_DEPTH).
 * struct ml_json is opaque: a parsed document and the values inside it.
 */
#ifndef MEMLENS_JSON_H
#define MEMLENS_JSON_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"

#define ML_JSON_MAX_DEPTH 64

enum ml_json_type {
	ML_JSON_NULL,
	ML_JSON_BOOL,
	ML_JSON_NUMBER,
	ML_JSON_STRING,
	ML_JSON_ARRAY,
	ML_JSON_OBJECT,
	ML_JSON_NONE, /* no value (a NULL pointer) */
};

struct ml_json;

/*
 * Parse @len bytes at @text (one value, surrounding white space allowed).
 * -EINVAL with "malformed JSON at byte N: what" in @err on malformed
 * input, -ENOMEM. Free with ml_json_free().
 */
int ml_json_parse(const char *text, size_t len, struct ml_json **out, struct ml_err *err);
void ml_json_free(struct ml_json *j);

enum ml_json_type ml_json_type(const struct ml_json *j);
/* NULL when @obj is not an object or has no such key. */
const struct ml_json *ml_json_get(const struct ml_json *obj, const char *key);
/* NULL when @arr is not an array/object or @i is out of range. */
const struct ml_json *ml_json_at(const struct ml_json *arr, size_t i);
/* Members of an array or object; 0 for anything else (or NULL). */
size_t ml_json_count(const struct ml_json *j);

/* Typed accessors: 0, or -EINVAL when @j is NULL or of another type / out of range. */
int ml_json_as_int(const struct ml_json *j, int64_t *out);
int ml_json_as_uint(const struct ml_json *j, uint64_t *out);
int ml_json_as_double(const struct ml_json *j, double *out);
int ml_json_as_bool(const struct ml_json *j, bool *out);
/* NULL unless @j is a string (decoded, NUL-terminated; may hold NULs). */
const char *ml_json_as_str(const struct ml_json *j);
/* The length of a string in bytes (0 for anything else). */
size_t ml_json_str_len(const struct ml_json *j);
/* A "0x..." (or plain hex) string as a number. */
int ml_json_as_hex(const struct ml_json *j, uint64_t *out);

/* Shorthands: json_as_*(ml_json_get(obj, key), out). */
int ml_json_get_int(const struct ml_json *obj, const char *key, int64_t *out);
int ml_json_get_uint(const struct ml_json *obj, const char *key, uint64_t *out);
int ml_json_get_double(const struct ml_json *obj, const char *key, double *out);
int ml_json_get_bool(const struct ml_json *obj, const char *key, bool *out);
const char *ml_json_get_str(const struct ml_json *obj, const char *key);
int ml_json_get_hex(const struct ml_json *obj, const char *key, uint64_t *out);
/* A finite number at @key: true, and *out set; false when it is absent,
 * null (jsonw writes NaN and the infinities as null) or not a number. */
bool ml_json_get_finite(const struct ml_json *obj, const char *key, double *out);
/* The finite number at @key, or 0. */
double ml_json_get_num_or0(const struct ml_json *obj, const char *key);

#pragma GCC visibility pop

#endif
