// SPDX-License-Identifier: MIT
/* Why a run stopped: the tokens of "stopped_because" (see memlens/format.h). */
#include <stddef.h>
#include <string.h>

#include "memlens/format.h"

static const struct {
	const char *token, *text;
} stops[] = {
	[ML_STOP_UNKNOWN] = { "", "" },
	[ML_STOP_DURATION] = { "duration", "the duration elapsed" },
	[ML_STOP_SIGNAL] = { "signal", "interrupted" },
	[ML_STOP_TARGET_EXITED] = { "target_exited", "the target exited" },
	[ML_STOP_ERROR] = { "error", "error" },
	[ML_STOP_COUNT] = { "count", "the count was reached" },
	[ML_STOP_SINGLE] = { "single", "single snapshot" },
};

#define NSTOPS (sizeof(stops) / sizeof(stops[0]))

const char *ml_stop_token(enum ml_stop s)
{
	return (size_t)s < NSTOPS ? stops[s].token : "";
}

const char *ml_stop_text(enum ml_stop s)
{
	return (size_t)s < NSTOPS ? stops[s].text : "";
}

enum ml_stop ml_stop_parse(const char *s)
{
	if (!s || !*s)
		return ML_STOP_UNKNOWN;
	for (size_t i = 1; i < NSTOPS; i++)
		if (!strcmp(s, stops[i].token) || !strcmp(s, stops[i].text))
			return (enum ml_stop)i;
	return ML_STOP_UNKNOWN;
}
