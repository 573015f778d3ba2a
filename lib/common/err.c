// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memlens/err.h"

int ml_err_set(struct ml_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (code < 0)
		code = -code;
	if (!e)
		return -code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -code;
}

int ml_err_wrap(struct ml_err *e, const char *fmt, ...)
{
	char prefix[256], old[sizeof(e->msg)];
	va_list ap;

	if (!e)
		return -1;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	size_t n = strlen(prefix);

	if (n > sizeof(e->msg) - 3)
		n = sizeof(e->msg) - 3;
	memcpy(e->msg, prefix, n);
	memcpy(e->msg + n, ": ", 2);
	size_t room = sizeof(e->msg) - n - 3;
	size_t m = strnlen(old, room);

	memcpy(e->msg + n + 2, old, m);
	e->msg[n + 2 + m] = '\0';
	return -e->code;
}
