/* SPDX-License-Identifier: MIT */
/* The clocks memlens measures with: one helper each. */
#ifndef MEMLENS_CLOCK_H
#define MEMLENS_CLOCK_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds (intervals, timeouts, durations). */
uint64_t ml_mono_ns(void);
/* CLOCK_MONOTONIC in milliseconds. */
uint64_t ml_mono_ms(void);
/* CLOCK_REALTIME in milliseconds since the epoch (timestamps in output). */
int64_t ml_wall_ms(void);

#pragma GCC visibility pop

#endif
