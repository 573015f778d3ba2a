/* SPDX-License-Identifier: MIT */
/*
 * A small JSON reader: parse one document (one JSON Lines line) into a
 * tree, then look values up by key or index with typed accessors. Pure:
 * no I/O, no global state; safe on any input (depth and size limited).
 */
#ifndef MEMLENS_JSON_H
#define MEMLENS_JSON_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"

#define JSON_MAX_DEPTH 64

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type type;
	bool boolean;
	double number;
	bool is_int; /* the number was written as an integer that fits int64 */
	int64_t integer;
	char *string; /* JSON_STRING: decoded, NUL-terminated (may hold NULs: see len) */
	size_t len; /* string length; array/object: number of members */
	struct json *items; /* array elements / object values */
	char **keys; /* object keys (decoded), same order as items */
};

/*
 * Parse @len bytes at @text (one value, surrounding white space allowed).
 * -EINVAL with "byte N: what" in @err on malformed input, -ENOMEM.
 * Free with ml_json_free().
 */
int ml_json_parse(const char *text, size_t len, struct json **out, struct ml_err *err);
void ml_json_free(struct json *j);

/* NULL when @obj is not an object or has no such key (first match). */
const struct json *ml_json_get(const struct json *obj, const char *key);
/* NULL when @arr is not an array/object or @i is out of range. */
const struct json *ml_json_at(const struct json *arr, size_t i);
/* Members of an array or object; 0 for anything else (or NULL). */
size_t ml_json_count(const struct json *j);

/* Typed accessors: 0, or -EINVAL when @j is NULL or of another type / out of range. */
int ml_json_as_int(const struct json *j, int64_t *out);
int ml_json_as_uint(const struct json *j, uint64_t *out);
int ml_json_as_double(const struct json *j, double *out);
int ml_json_as_bool(const struct json *j, bool *out);
/* NULL unless @j is a string. */
const char *ml_json_as_str(const struct json *j);
/* A "0x..." (or plain hex) string as a number. */
int ml_json_as_hex(const struct json *j, uint64_t *out);

/* Shorthands: json_as_*(ml_json_get(obj, key), out). */
int ml_json_get_int(const struct json *obj, const char *key, int64_t *out);
int ml_json_get_uint(const struct json *obj, const char *key, uint64_t *out);
int ml_json_get_double(const struct json *obj, const char *key, double *out);
int ml_json_get_bool(const struct json *obj, const char *key, bool *out);
const char *ml_json_get_str(const struct json *obj, const char *key);
int ml_json_get_hex(const struct json *obj, const char *key, uint64_t *out);

#pragma GCC visibility pop

#endif
