// SPDX-License-Identifier: MIT
/* The clocks memlens measures with (see memlens/clock.h). */
#include <time.h>

#include "memlens/clock.h"

uint64_t ml_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t ml_mono_ms(void)
{
	return ml_mono_ns() / 1000000ULL;
}

int64_t ml_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
