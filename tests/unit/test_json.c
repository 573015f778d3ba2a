// SPDX-License-Identifier: MIT
/* The JSON reader: valid documents, accessors, and malformed input. */
#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>

#include "comma_locale.h"
#include "harness.h"
#include "memlens/json.h"

static struct ml_json *parse(const char *s)
{
	struct ml_err err = { 0 };
	struct ml_json *j = NULL;

	if (ml_json_parse(s, strlen(s), &j, &err))
		return NULL;
	return j;
}

static void test_interval_line(void)
{
	const char *s =
		"{\"type\":\"interval\",\"pid\":42,\"seq\":3,\"t_ms\":3001,\"interval_s\":1.0005,"
		"\"dirty\":{\"dirty_pages\":16384},\"regions\":[{\"start_addr\":\"0x7f0000000000\","
		"\"end_addr\":\"0x7f0004000000\",\"kind\":\"anon\",\"hot\":true}],"
		"\"written\":[[\"0x7f0000000000\",\"0x7f0000001000\"]]}";
	struct ml_json *j = parse(s);
	const struct ml_json *r, *w;
	uint64_t u;
	int64_t i;
	double d;
	bool b;

	REQUIRE(j);
	CHECK_STR(ml_json_get_str(j, "type"), "interval");
	CHECK(!ml_json_get_int(j, "pid", &i) && i == 42);
	CHECK(!ml_json_get_double(j, "interval_s", &d) && d == 1.0005);
	CHECK(!ml_json_get_int(ml_json_get(j, "dirty"), "dirty_pages", &i) && i == 16384);
	r = ml_json_at(ml_json_get(j, "regions"), 0);
	CHECK(!ml_json_get_hex(r, "start_addr", &u) && u == 0x7f0000000000ULL);
	CHECK(!ml_json_get_hex(r, "end_addr", &u) && u == 0x7f0004000000ULL);
	CHECK(!ml_json_get_bool(r, "hot", &b) && b);
	w = ml_json_at(ml_json_get(j, "written"), 0);
	CHECK_EQ(ml_json_count(w), 2);
	CHECK(!ml_json_as_hex(ml_json_at(w, 1), &u) && u == 0x7f0000001000ULL);
	CHECK_EQ(ml_json_count(ml_json_get(j, "regions")), 1);
	ml_json_free(j);
}

static void test_types_and_errors(void)
{
	struct ml_json *j =
		parse(" { \"a\" : [1, -2, 3.5, 1e3, true, false, null, \"x\"], \"big\": "
		      "18446744073709551616, \"neg\": -9223372036854775808 } ");
	const struct ml_json *a;
	uint64_t u;
	int64_t i;
	double d;
	bool b;

	REQUIRE(j);
	a = ml_json_get(j, "a");
	CHECK_EQ(ml_json_count(a), 8);
	CHECK(!ml_json_as_int(ml_json_at(a, 0), &i) && i == 1);
	CHECK(ml_json_as_uint(ml_json_at(a, 1), &u) == -EINVAL); /* negative */
	CHECK(ml_json_as_int(ml_json_at(a, 2), &i) == -EINVAL); /* not integral */
	CHECK(!ml_json_as_double(ml_json_at(a, 2), &d) && d == 3.5);
	CHECK(!ml_json_as_int(ml_json_at(a, 3), &i) && i == 1000);
	CHECK(!ml_json_as_bool(ml_json_at(a, 4), &b) && b);
	CHECK(!ml_json_as_bool(ml_json_at(a, 5), &b) && !b);
	CHECK(ml_json_type(ml_json_at(a, 6)) == ML_JSON_NULL);
	CHECK(ml_json_as_str(ml_json_at(a, 6)) == NULL);
	CHECK_STR(ml_json_as_str(ml_json_at(a, 7)), "x");
	CHECK(ml_json_as_int(ml_json_at(a, 7), &i) == -EINVAL);
	CHECK(ml_json_at(a, 8) == NULL);
	CHECK(ml_json_get(a, "x") == NULL); /* not an object */
	CHECK(ml_json_get(j, "missing") == NULL);
	CHECK(ml_json_get_int(j, "missing", &i) == -EINVAL);
	CHECK(ml_json_as_int(ml_json_get(j, "big"), &i) == -EINVAL); /* beyond int64 */
	CHECK(!ml_json_get_int(j, "neg", &i) && i == INT64_MIN);
	CHECK(ml_json_as_hex(ml_json_at(a, 7), &u) == -EINVAL); /* "x" is not hex */
	ml_json_free(j);
}

static void test_strings(void)
{
	struct ml_json *j =
		parse("[\"a\\\"b\\\\c\\/d\\n\\t\", \"\\u00e9\\u20ac\", \"\\ud83d\\ude00\", \"\"]");

	REQUIRE(j);
	CHECK_STR(ml_json_as_str(ml_json_at(j, 0)), "a\"b\\c/d\n\t");
	CHECK_STR(ml_json_as_str(ml_json_at(j, 1)), "\xc3\xa9\xe2\x82\xac");
	CHECK_STR(ml_json_as_str(ml_json_at(j, 2)), "\xf0\x9f\x98\x80");
	CHECK_STR(ml_json_as_str(ml_json_at(j, 3)), "");
	ml_json_free(j);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"",
		" ",
		"{",
		"}",
		"[",
		"[1,]",
		"[,1]",
		"{\"a\"}",
		"{\"a\":}",
		"{\"a\":1,}",
		"{a:1}",
		"{\"a\" 1}",
		"[1 2]",
		"\"abc",
		"\"a\\x\"",
		"\"\\u12\"",
		"\"\\ud800\"",
		"\"\\udc00\"",
		"\"\\ud800\\u0041\"",
		"tru",
		"nul",
		"falsey",
		"01",
		"-",
		"1.",
		"1e",
		".5",
		"+1",
		"[1]]",
		"{} {}",
		"\"a\nb\"",
		"NaN",
		"[\"\\",
		"{\"a\":[1,{\"b\":}]}",
	};
	struct ml_err err = { 0 };
	struct ml_json *j;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = ml_json_parse(bad[i], strlen(bad[i]), &j, &err);

		if (r != -EINVAL || j)
			T_FAILMSG("accepted malformed JSON #%zu: '%s' (ret %d)", i, bad[i], r);
		else
			CHECK(strstr(err.msg, "malformed JSON at byte") != NULL);
	}
}

static void test_depth_limit(void)
{
	char deep[ML_JSON_MAX_DEPTH * 2 + 8], ok[40];
	struct ml_err err = { 0 };
	struct ml_json *j;
	size_t n = ML_JSON_MAX_DEPTH + 1;

	memset(deep, '[', n);
	memset(deep + n, ']', n);
	CHECK(ml_json_parse(deep, 2 * n, &j, &err) == -EINVAL);
	CHECK(strstr(err.msg, "deep") != NULL);
	memset(ok, '[', 10);
	memset(ok + 10, ']', 10);
	CHECK(ml_json_parse(ok, 20, &j, &err) == 0);
	ml_json_free(j);
	/* a length shorter than the text: only that prefix is parsed */
	CHECK(ml_json_parse("[1]xyz", 3, &j, &err) == 0);
	ml_json_free(j);
	/* NUL inside a string is kept, and a hex accessor refuses it */
	CHECK(ml_json_parse("\"0x1\\u0000\"", 11, &j, &err) == 0);
	if (j) {
		uint64_t u;

		CHECK_EQ(ml_json_str_len(j), 4);
		CHECK(ml_json_as_hex(j, &u) == -EINVAL);
	}
	ml_json_free(j);
}

/* Bytes that are not UTF-8 (older files hold names byte for byte) read as U+FFFD. */
static void test_not_utf8(void)
{
	struct ml_json *j = parse("{\"path\":\"/tmp/a\xff\xc3(b\",\"n\":1}");
	int64_t i;

	REQUIRE(j);
	CHECK_STR(ml_json_get_str(j, "path"), "/tmp/a\xef\xbf\xbd\xef\xbf\xbd(b");
	CHECK(!ml_json_get_int(j, "n", &i) && i == 1);
	ml_json_free(j);
	/* still strict about everything else */
	CHECK(parse("{\"p\":\"\xff\",}") == NULL);
}

/* An integer beyond 64 bits: the document reads, its numbers as doubles. */
static void test_beyond_int64(void)
{
	struct ml_json *j = parse("[18446744073709551616, 3, -9223372036854775808, 0.25]");
	int64_t i;
	double d;

	REQUIRE(j);
	CHECK(!ml_json_as_double(ml_json_at(j, 0), &d) && d == 18446744073709551616.0);
	CHECK(ml_json_as_int(ml_json_at(j, 0), &i) == -EINVAL);
	CHECK(!ml_json_as_int(ml_json_at(j, 1), &i) && i == 3);
	CHECK(!ml_json_as_int(ml_json_at(j, 2), &i) && i == INT64_MIN);
	CHECK(!ml_json_as_double(ml_json_at(j, 3), &d) && d == 0.25);
	ml_json_free(j);
	/* a 64-bit integer that fits is exact */
	j = parse("[9007199254740993, -9007199254740993]");
	REQUIRE(j);
	CHECK(!ml_json_as_int(ml_json_at(j, 0), &i) && i == 9007199254740993LL);
	CHECK(!ml_json_as_int(ml_json_at(j, 1), &i) && i == -9007199254740993LL);
	ml_json_free(j);
}

static void test_locale_independent(void)
{
	bool have = comma_locale_enter();
	struct ml_json *j = NULL;
	double d = 0, c = -1;

	if (have) {
		c = strtod("0.5", NULL); /* this locale's strtod stops at the '.' */
		j = parse("{\"v\":0.5,\"e\":2.5e-1,\"n\":-1.75}");
	}
	comma_locale_leave();
	if (!have)
		SKIP("no locale with a ',' decimal point: no de_DE.UTF-8, and localedef could "
		     "not make one");
	CHECK(c == 0); /* the test can fail: the locale reads "0.5" as 0 */
	REQUIRE(j);
	CHECK(!ml_json_get_double(j, "v", &d) && d == 0.5);
	CHECK(!ml_json_get_double(j, "e", &d) && d == 0.25);
	CHECK(!ml_json_get_double(j, "n", &d) && d == -1.75);
	ml_json_free(j);
}

/* optional numbers: a finite number, or absent / null / another type */
static void test_finite_numbers(void)
{
	struct ml_json *j = parse("{\"a\":2.5,\"n\":null,\"s\":\"7\",\"i\":-3}");
	double d = 99;

	REQUIRE(j);
	CHECK(ml_json_get_finite(j, "a", &d) && d == 2.5);
	CHECK(ml_json_get_finite(j, "i", &d) && d == -3);
	CHECK(!ml_json_get_finite(j, "n", &d));
	CHECK(!ml_json_get_finite(j, "s", &d));
	CHECK(!ml_json_get_finite(j, "missing", &d));
	CHECK(ml_json_get_num_or0(j, "a") == 2.5);
	CHECK(ml_json_get_num_or0(j, "n") == 0);
	CHECK(ml_json_get_num_or0(j, "s") == 0);
	CHECK(ml_json_get_num_or0(j, "missing") == 0);
	ml_json_free(j);
}

int main(void)
{
	RUN(test_interval_line);
	RUN(test_types_and_errors);
	RUN(test_strings);
	RUN(test_malformed);
	RUN(test_depth_limit);
	RUN(test_not_utf8);
	RUN(test_beyond_int64);
	RUN(test_locale_independent);
	RUN(test_finite_numbers);
	return T_DONE();
}
