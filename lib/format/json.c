// SPDX-License-Identifier: MIT
/* A small recursive-descent JSON reader (RFC 8259), see memlens/json.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/json.h"

struct jp {
	const char *s;
	size_t len, pos;
	struct ml_err *err;
};

static int jp_fail(struct jp *p, const char *what)
{
	return ml_err_set(p->err, EINVAL, "malformed JSON at byte %zu: %s", p->pos, what);
}

static void jp_ws(struct jp *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int jp_peek(struct jp *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int jp_literal(struct jp *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n))
		return jp_fail(p, "unknown literal");
	p->pos += n;
	return 0;
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

static int jp_hex4(struct jp *p, unsigned int *out)
{
	unsigned int v = 0;

	if (p->len - p->pos < 4)
		return jp_fail(p, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		int h = hexval((unsigned char)p->s[p->pos + i]);

		if (h < 0)
			return jp_fail(p, "bad \\u escape");
		v = v << 4 | (unsigned int)h;
	}
	p->pos += 4;
	*out = v;
	return 0;
}

static size_t utf8_put(char *d, unsigned int cp)
{
	if (cp < 0x80) {
		d[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (char)(0xc0 | cp >> 6);
		d[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (char)(0xe0 | cp >> 12);
		d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		d[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	d[0] = (char)(0xf0 | cp >> 18);
	d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	d[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int jp_escape(struct jp *p, char *d, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	unsigned int cp, lo;
	const char *e;
	int c = jp_peek(p);

	if (c < 0)
		return jp_fail(p, "unterminated escape");
	p->pos++;
	if (c != 'u') {
		e = strchr(from, c);
		if (!e || !c)
			return jp_fail(p, "bad escape");
		d[(*n)++] = to[e - from];
		return 0;
	}
	if (jp_hex4(p, &cp))
		return -EINVAL;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jp_fail(p, "lone low surrogate");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
			return jp_fail(p, "lone high surrogate");
		p->pos += 2;
		if (jp_hex4(p, &lo))
			return -EINVAL;
		if (lo < 0xdc00 || lo > 0xdfff)
			return jp_fail(p, "bad surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n += utf8_put(d + *n, cp);
	return 0;
}

/* At the opening quote. The decoded string is never longer than the source. */
static int jp_string(struct jp *p, char **out, size_t *outlen)
{
	size_t start = ++p->pos, n = 0;
	char *d;
	int c;

	while (p->pos < p->len && p->s[p->pos] != '"')
		p->pos += p->s[p->pos] == '\\' ? 2 : 1;
	if (p->pos >= p->len)
		return jp_fail(p, "unterminated string");
	d = malloc(p->pos - start + 1);
	if (!d)
		return ml_err_set(p->err, ENOMEM, "out of memory parsing JSON");
	p->pos = start;
	while ((c = jp_peek(p)) != '"') {
		if (c < 0x20) {
			free(d);
			return jp_fail(p, "control character in string");
		}
		p->pos++;
		if (c != '\\') {
			d[n++] = (char)c;
			continue;
		}
		if (jp_escape(p, d, &n)) {
			free(d);
			return -EINVAL;
		}
	}
	p->pos++;
	d[n] = '\0';
	*out = d;
	*outlen = n;
	return 0;
}

static void jp_digits(struct jp *p)
{
	while (jp_peek(p) >= '0' && jp_peek(p) <= '9')
		p->pos++;
}

static int jp_number(struct jp *p, struct json *j)
{
	size_t start = p->pos;
	bool integer = true;
	char buf[64], *end;

	if (jp_peek(p) == '-')
		p->pos++;
	if (jp_peek(p) == '0')
		p->pos++;
	else if (jp_peek(p) >= '1' && jp_peek(p) <= '9')
		jp_digits(p);
	else
		return jp_fail(p, "bad number");
	if (jp_peek(p) == '.') {
		integer = false;
		p->pos++;
		if (jp_peek(p) < '0' || jp_peek(p) > '9')
			return jp_fail(p, "digit expected after '.'");
		jp_digits(p);
	}
	if (jp_peek(p) == 'e' || jp_peek(p) == 'E') {
		integer = false;
		p->pos++;
		if (jp_peek(p) == '+' || jp_peek(p) == '-')
			p->pos++;
		if (jp_peek(p) < '0' || jp_peek(p) > '9')
			return jp_fail(p, "digit expected in exponent");
		jp_digits(p);
	}
	if (p->pos - start >= sizeof(buf))
		return jp_fail(p, "number too long");
	memcpy(buf, p->s + start, p->pos - start);
	buf[p->pos - start] = '\0';
	j->type = JSON_NUMBER;
	j->number = strtod(buf, NULL);
	if (integer) {
		errno = 0;
		j->integer = strtoll(buf, &end, 10);
		j->is_int = errno == 0;
	}
	return 0;
}

static int jp_value(struct jp *p, struct json *j, int depth);

static int jp_grow(struct jp *p, struct json *j, size_t *cap, bool keys)
{
	size_t ncap = *cap ? *cap * 2 : 4;
	struct json *it;
	char **k;

	it = realloc(j->items, ncap * sizeof(*it));
	if (!it)
		return ml_err_set(p->err, ENOMEM, "out of memory parsing JSON");
	j->items = it;
	if (keys) {
		k = realloc(j->keys, ncap * sizeof(*k));
		if (!k)
			return ml_err_set(p->err, ENOMEM, "out of memory parsing JSON");
		j->keys = k;
	}
	*cap = ncap;
	return 0;
}

/* One member: "key": value (objects) or value (arrays). */
static int jp_member(struct jp *p, struct json *j, size_t *cap, bool obj, int depth)
{
	struct json *it;
	size_t klen;
	int ret;

	if (j->len == *cap && (ret = jp_grow(p, j, cap, obj)))
		return ret;
	it = &j->items[j->len];
	memset(it, 0, sizeof(*it));
	if (obj) {
		jp_ws(p);
		if (jp_peek(p) != '"')
			return jp_fail(p, "object key expected");
		ret = jp_string(p, &j->keys[j->len], &klen);
		if (ret)
			return ret;
		j->len++; /* the key is owned now; the value starts as null */
		jp_ws(p);
		if (jp_peek(p) != ':')
			return jp_fail(p, "':' expected");
		p->pos++;
	} else {
		j->len++;
	}
	return jp_value(p, it, depth + 1);
}

static int jp_container(struct jp *p, struct json *j, int depth)
{
	bool obj = jp_peek(p) == '{';
	char close = obj ? '}' : ']';
	size_t cap = 0;
	int ret;

	if (depth >= JSON_MAX_DEPTH)
		return jp_fail(p, "nested too deeply");
	j->type = obj ? JSON_OBJECT : JSON_ARRAY;
	p->pos++;
	jp_ws(p);
	if (jp_peek(p) == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		ret = jp_member(p, j, &cap, obj, depth);
		if (ret)
			return ret;
		jp_ws(p);
		if (jp_peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (jp_peek(p) != close)
			return jp_fail(p, obj ? "',' or '}' expected" : "',' or ']' expected");
		p->pos++;
		return 0;
	}
}

static int jp_value(struct jp *p, struct json *j, int depth)
{
	int c;

	jp_ws(p);
	c = jp_peek(p);
	switch (c) {
	case '{':
	case '[':
		return jp_container(p, j, depth);
	case '"':
		j->type = JSON_STRING;
		return jp_string(p, &j->string, &j->len);
	case 't':
		j->type = JSON_BOOL;
		j->boolean = true;
		return jp_literal(p, "true");
	case 'f':
		j->type = JSON_BOOL;
		return jp_literal(p, "false");
	case 'n':
		return jp_literal(p, "null");
	case -1:
		return jp_fail(p, "value expected, found end of input");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return jp_number(p, j);
		return jp_fail(p, "value expected");
	}
}

static void json_clear(struct json *j)
{
	if (j->type == JSON_ARRAY || j->type == JSON_OBJECT) {
		for (size_t i = 0; i < j->len; i++) {
			json_clear(&j->items[i]);
			if (j->keys)
				free(j->keys[i]);
		}
		free(j->items);
		free(j->keys);
	}
	if (j->type == JSON_STRING)
		free(j->string);
}

void ml_json_free(struct json *j)
{
	if (!j)
		return;
	json_clear(j);
	free(j);
}

int ml_json_parse(const char *text, size_t len, struct json **out, struct ml_err *err)
{
	struct jp p = { .s = text, .len = len, .err = err };
	struct json *j;
	int ret;

	*out = NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return ml_err_set(err, ENOMEM, "out of memory parsing JSON");
	ret = jp_value(&p, j, 0);
	if (!ret) {
		jp_ws(&p);
		if (p.pos != p.len)
			ret = jp_fail(&p, "trailing characters after the value");
	}
	if (ret) {
		ml_json_free(j);
		return ret;
	}
	*out = j;
	return 0;
}

const struct json *ml_json_get(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT || !key)
		return NULL;
	for (size_t i = 0; i < obj->len; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const struct json *ml_json_at(const struct json *arr, size_t i)
{
	if (!arr || (arr->type != JSON_ARRAY && arr->type != JSON_OBJECT) || i >= arr->len)
		return NULL;
	return &arr->items[i];
}

size_t ml_json_count(const struct json *j)
{
	if (!j || (j->type != JSON_ARRAY && j->type != JSON_OBJECT))
		return 0;
	return j->len;
}

int ml_json_as_int(const struct json *j, int64_t *out)
{
	if (!j || j->type != JSON_NUMBER)
		return -EINVAL;
	if (j->is_int) {
		*out = j->integer;
		return 0;
	}
	if (!isfinite(j->number) || j->number != floor(j->number) || fabs(j->number) > 9.0e18)
		return -EINVAL;
	*out = (int64_t)j->number;
	return 0;
}

int ml_json_as_uint(const struct json *j, uint64_t *out)
{
	int64_t v;

	if (ml_json_as_int(j, &v) || v < 0)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int ml_json_as_double(const struct json *j, double *out)
{
	if (!j || j->type != JSON_NUMBER)
		return -EINVAL;
	*out = j->number;
	return 0;
}

int ml_json_as_bool(const struct json *j, bool *out)
{
	if (!j || j->type != JSON_BOOL)
		return -EINVAL;
	*out = j->boolean;
	return 0;
}

const char *ml_json_as_str(const struct json *j)
{
	return j && j->type == JSON_STRING ? j->string : NULL;
}

int ml_json_as_hex(const struct json *j, uint64_t *out)
{
	const char *s = ml_json_as_str(j);
	uint64_t v = 0;
	int h;

	if (!s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s || strlen(s) > 16 || strlen(s) != j->len - (size_t)(s - j->string))
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

int ml_json_get_int(const struct json *obj, const char *key, int64_t *out)
{
	return ml_json_as_int(ml_json_get(obj, key), out);
}

int ml_json_get_uint(const struct json *obj, const char *key, uint64_t *out)
{
	return ml_json_as_uint(ml_json_get(obj, key), out);
}

int ml_json_get_double(const struct json *obj, const char *key, double *out)
{
	return ml_json_as_double(ml_json_get(obj, key), out);
}

int ml_json_get_bool(const struct json *obj, const char *key, bool *out)
{
	return ml_json_as_bool(ml_json_get(obj, key), out);
}

const char *ml_json_get_str(const struct json *obj, const char *key)
{
	return ml_json_as_str(ml_json_get(obj, key));
}

int ml_json_get_hex(const struct json *obj, const char *key, uint64_t *out)
{
	return ml_json_as_hex(ml_json_get(obj, key), out);
}
