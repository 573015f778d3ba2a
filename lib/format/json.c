// SPDX-License-Identifier: MIT
/*
 * The JSON reader on Jansson (see memlens/json.h): a struct ml_json is a
 * json_t. Jansson parses strictly (RFC 8259) and reads numbers the same
 * under any LC_NUMERIC; this file adds the nesting limit, two fallbacks
 * that keep older files readable (bytes that are not UTF-8, integers
 * beyond 64 bits) and memlens's accessors.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/json.h"

#define J(x) ((json_t *)(x)) /* Jansson's getters are not all const */

static bool too_deep(const json_t *j, int depth)
{
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_array(j) && !json_is_object(j))
		return false;
	if (depth >= ML_JSON_MAX_DEPTH)
		return true;
	if (json_is_array(j)) {
		json_array_foreach(J(j), i, v) if (too_deep(v, depth + 1)) return true;
		return false;
	}
	json_object_foreach(J(j), key, v) if (too_deep(v, depth + 1)) return true;
	return false;
}

/* Length of the UTF-8 sequence at @s (RFC 3629), 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * A copy of @text with every byte that is not UTF-8 replaced by U+FFFD:
 * memlens once wrote file names and command names byte for byte.
 */
static char *utf8_clean(const char *text, size_t len, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)text;
	char *d = malloc(len * 3 + 1);
	size_t n = 0;

	if (!d)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = utf8_seq(s + i, len - i);

		if (k) {
			memcpy(d + n, s + i, k);
			n += k;
			i += k;
		} else {
			memcpy(d + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
		}
	}
	*outlen = n;
	return d;
}

static json_t *load(const char *text, size_t len, json_error_t *e, bool *oom)
{
	size_t flags = JSON_DECODE_ANY | JSON_ALLOW_NUL, clen;
	char *clean = NULL;
	json_t *j;

	j = json_loadb(text, len, flags, e);
	if (!j && json_error_code(e) == json_error_invalid_utf8) {
		clean = utf8_clean(text, len, &clen);
		if (!clean) {
			*oom = true;
			return NULL;
		}
		text = clean;
		len = clen;
		j = json_loadb(text, len, flags, e);
	}
	/* an integer beyond int64: every number of this document as a double */
	if (!j && json_error_code(e) == json_error_numeric_overflow)
		j = json_loadb(text, len, flags | JSON_DECODE_INT_AS_REAL, e);
	free(clean);
	return j;
}

int ml_json_parse(const char *text, size_t len, struct ml_json **out, struct ml_err *err)
{
	json_error_t e = { 0 };
	bool oom = false;
	json_t *j;

	*out = NULL;
	j = load(text, len, &e, &oom);
	if (!j) {
		if (oom || json_error_code(&e) == json_error_out_of_memory)
			return ml_err_set(err, ENOMEM, "out of memory parsing JSON");
		if (json_error_code(&e) == json_error_stack_overflow)
			return ml_err_set(err, EINVAL,
					  "malformed JSON at byte %d: nested too deeply",
					  e.position);
		return ml_err_set(err, EINVAL, "malformed JSON at byte %d: %s", e.position, e.text);
	}
	if (too_deep(j, 0)) {
		json_decref(j);
		return ml_err_set(
			err, EINVAL,
			"malformed JSON at byte 0: nested too deeply (more than %d levels)",
			ML_JSON_MAX_DEPTH);
	}
	*out = (struct ml_json *)j;
	return 0;
}

void ml_json_free(struct ml_json *j)
{
	json_decref(J(j));
}

enum ml_json_type ml_json_type(const struct ml_json *j)
{
	if (!j)
		return ML_JSON_NONE;
	switch (json_typeof(J(j))) {
	case JSON_OBJECT:
		return ML_JSON_OBJECT;
	case JSON_ARRAY:
		return ML_JSON_ARRAY;
	case JSON_STRING:
		return ML_JSON_STRING;
	case JSON_INTEGER:
	case JSON_REAL:
		return ML_JSON_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE:
		return ML_JSON_BOOL;
	default:
		return ML_JSON_NULL;
	}
}

const struct ml_json *ml_json_get(const struct ml_json *obj, const char *key)
{
	if (!obj || !key || !json_is_object(J(obj)))
		return NULL;
	return (const struct ml_json *)json_object_get(J(obj), key);
}

const struct ml_json *ml_json_at(const struct ml_json *arr, size_t i)
{
	void *it;

	if (!arr)
		return NULL;
	if (json_is_array(J(arr)))
		return (const struct ml_json *)json_array_get(J(arr), i);
	if (!json_is_object(J(arr)) || i >= json_object_size(J(arr)))
		return NULL;
	/* objects keep their members in the order they were read */
	for (it = json_object_iter(J(arr)); it && i; i--)
		it = json_object_iter_next(J(arr), it);
	return it ? (const struct ml_json *)json_object_iter_value(it) : NULL;
}

size_t ml_json_count(const struct ml_json *j)
{
	if (!j)
		return 0;
	if (json_is_array(J(j)))
		return json_array_size(J(j));
	if (json_is_object(J(j)))
		return json_object_size(J(j));
	return 0;
}

int ml_json_as_int(const struct ml_json *j, int64_t *out)
{
	double d;

	if (j && json_is_integer(J(j))) {
		*out = (int64_t)json_integer_value(J(j));
		return 0;
	}
	if (!j || !json_is_real(J(j)))
		return -EINVAL;
	d = json_real_value(J(j));
	/* integral and in [-2^63, 2^63): the cast is defined */
	if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 ||
	    d >= 9223372036854775808.0)
		return -EINVAL;
	*out = (int64_t)d;
	return 0;
}

int ml_json_as_uint(const struct ml_json *j, uint64_t *out)
{
	int64_t v;

	if (ml_json_as_int(j, &v) || v < 0)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int ml_json_as_double(const struct ml_json *j, double *out)
{
	if (!j || !json_is_number(J(j)))
		return -EINVAL;
	*out = json_number_value(J(j));
	return 0;
}

int ml_json_as_bool(const struct ml_json *j, bool *out)
{
	if (!j || !json_is_boolean(J(j)))
		return -EINVAL;
	*out = json_is_true(J(j));
	return 0;
}

const char *ml_json_as_str(const struct ml_json *j)
{
	return j && json_is_string(J(j)) ? json_string_value(J(j)) : NULL;
}

size_t ml_json_str_len(const struct ml_json *j)
{
	return j && json_is_string(J(j)) ? json_string_length(J(j)) : 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int ml_json_as_hex(const struct ml_json *j, uint64_t *out)
{
	const char *s = ml_json_as_str(j), *start = s;
	uint64_t v = 0;
	int h;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	/* a NUL inside the string ends it early: refused */
	if (!*s || strlen(s) > 16 || strlen(s) != ml_json_str_len(j) - (size_t)(s - start))
		return -EINVAL;
	for (; *s; s++) {
		h = hexval((unsigned char)*s);
		if (h < 0)
			return -EINVAL;
		v = v << 4 | (uint64_t)h;
	}
	*out = v;
	return 0;
}

int ml_json_get_int(const struct ml_json *obj, const char *key, int64_t *out)
{
	return ml_json_as_int(ml_json_get(obj, key), out);
}

int ml_json_get_uint(const struct ml_json *obj, const char *key, uint64_t *out)
{
	return ml_json_as_uint(ml_json_get(obj, key), out);
}

int ml_json_get_double(const struct ml_json *obj, const char *key, double *out)
{
	return ml_json_as_double(ml_json_get(obj, key), out);
}

int ml_json_get_bool(const struct ml_json *obj, const char *key, bool *out)
{
	return ml_json_as_bool(ml_json_get(obj, key), out);
}

const char *ml_json_get_str(const struct ml_json *obj, const char *key)
{
	return ml_json_as_str(ml_json_get(obj, key));
}

int ml_json_get_hex(const struct ml_json *obj, const char *key, uint64_t *out)
{
	return ml_json_as_hex(ml_json_get(obj, key), out);
}

bool ml_json_get_finite(const struct ml_json *obj, const char *key, double *out)
{
	return !ml_json_get_double(obj, key, out) && isfinite(*out);
}

double ml_json_get_num_or0(const struct ml_json *obj, const char *key)
{
	double v;

	return ml_json_get_finite(obj, key, &v) ? v : 0;
}
