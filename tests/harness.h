/* SPDX-License-Identifier: MIT */
/*
 * A tiny test harness. Each test prints one line the runner counts:
 *   ok - NAME
 *   not ok - NAME: why
 *   skip - NAME: reason
 * CHECK* record a failure and go on; REQUIRE* and SKIP end the test.
 */
#ifndef MEMLENS_TEST_HARNESS_H
#define MEMLENS_TEST_HARNESS_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_cur_failed;
static int t_skipped;
static int t_nfail, t_npass, t_nskip;
static jmp_buf t_jmp;
static char t_skip_reason[256];

#define T_FAILMSG(...)                                                                             \
	do {                                                                                       \
		printf("#   %s:%d: ", __FILE__, __LINE__);                                         \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		t_cur_failed = 1;                                                                  \
	} while (0)

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			T_FAILMSG("CHECK(%s) failed", #c);                                         \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b)                                                                      \
			T_FAILMSG("%s == %s failed: %lld != %lld", #a, #b, _a, _b);                \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b))                                                  \
			T_FAILMSG("%s == %s failed: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)", \
				  _b ? _b : "(null)");                                             \
	} while (0)

#define REQUIRE(c)                                                                                 \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			T_FAILMSG("REQUIRE(%s) failed", #c);                                       \
			longjmp(t_jmp, 1);                                                         \
		}                                                                                  \
	} while (0)

#define REQUIRE_MSG(c, ...)                                                                        \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			T_FAILMSG(__VA_ARGS__);                                                    \
			longjmp(t_jmp, 1);                                                         \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		snprintf(t_skip_reason, sizeof(t_skip_reason), __VA_ARGS__);                       \
		t_skipped = 1;                                                                     \
		longjmp(t_jmp, 1);                                                                 \
	} while (0)

static void t_run(const char *name, void (*fn)(void))
{
	t_cur_failed = 0;
	t_skipped = 0;
	fflush(stdout);
	if (!setjmp(t_jmp))
		fn();
	if (t_skipped) {
		printf("skip - %s: %s\n", name, t_skip_reason);
		t_nskip++;
	} else if (t_cur_failed) {
		printf("not ok - %s\n", name);
		t_nfail++;
	} else {
		printf("ok - %s\n", name);
		t_npass++;
	}
	fflush(stdout);
}

#define RUN(fn) t_run(#fn, fn)
#define T_DONE() (t_nfail ? 1 : 0)

#endif
