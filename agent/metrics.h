/* SPDX-License-Identifier: MIT */
/*
 * The agent's Prometheus metrics (metrics.c): what the handlers, the server
 * and the profiler thread count. It knows nothing of the handlers: the
 * server names the method of each call it counts.
 */
#ifndef MEMLENS_AGENT_METRICS_H
#define MEMLENS_AGENT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memlens/err.h"
#include "memlens/profiler.h"

enum ckpt_kind { CKPT_PRE_DUMP, CKPT_DUMP, CKPT_RESTORE, CKPT_PAGE_SERVER, CKPT_NKINDS };

/*
 * A call of method number @method (its name @name, a static string) answered
 * with status @code.
 */
void metrics_rpc(int method, const char *name, int code);
void metrics_sample(const struct ml_profiler_sample *s);
void metrics_profiling(bool on, pid_t pid);
/* The target found, profiled or not (0: none): the target_pid metric while not profiling. */
void metrics_target(pid_t pid);
void metrics_injection(uint64_t ns);
void metrics_checkpoint(enum ckpt_kind kind, bool ok, uint64_t ms);
void metrics_error(const char *kind);
/* The Prometheus text exposition; malloc'ed, NUL-terminated. */
char *metrics_render(size_t *len);
/* Serve /metrics on HOST:PORT (libmicrohttpd, its own thread). */
int metrics_serve(const char *hostport, struct ml_err *err);
void metrics_stop(void);

#endif
