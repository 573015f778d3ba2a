/* SPDX-License-Identifier: MIT */
/*
 * Errors of libmemlens: a negative errno plus a sentence that says what
 * failed and what to do. The library never prints; callers decide.
 */
#ifndef MEMLENS_ERR_H
#define MEMLENS_ERR_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

struct ml_err {
	int code; /* positive errno, 0 when no error */
	char msg[1024];
};

/* Record errno-style error @code with a printf-style message; returns -code. */
int ml_err_set(struct ml_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context ("step: previous"). */
int ml_err_wrap(struct ml_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#pragma GCC visibility pop

#endif
