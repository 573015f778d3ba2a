// SPDX-License-Identifier: MIT
/* A migration's messages to its caller (see migrate_event.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "migrate_event.h"

void mli_mig_emit(ml_mig_event_fn fn, void *arg, struct ml_mig_event *ev, const char *fmt, ...)
{
	char msg[PATH_MAX + 1024];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ev->msg = msg;
	fn(ev, arg);
	ev->msg = NULL;
}
