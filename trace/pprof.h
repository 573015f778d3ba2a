/* SPDX-License-Identifier: MIT */
/*
 * pprof profiles (profile.proto, gzip-compressed): what `go tool pprof`,
 * Parca, Pyroscope and speedscope read. A profile is built from call stacks
 * of one process, each with its values (for leaks: blocks and bytes still
 * outstanding), symbolized from the process's ELF files, with source files
 * and lines where they have DWARF. Built without protobuf-c, mlt_pprof_new()
 * fails with ENOTSUP.
 */
#ifndef MEMLENS_TRACE_PPROF_H
#define MEMLENS_TRACE_PPROF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memlens/err.h"
#include "symbolize.h"

struct pprof;

/* false when memlens was built without protobuf-c */
bool mlt_pprof_supported(void);

/* the sample types, e.g. {"inuse_objects", "count"}, {"inuse_space", "bytes"} */
struct pprof_type {
	const char *type, *unit;
};

struct pprof *mlt_pprof_new(struct symbolizer *sym, const struct pprof_type *types, int ntypes,
			    struct ml_err *err);
/*
 * One sample: the call stack @ips (innermost first, @n frames, return
 * addresses; cut at the first one outside executable code past the first),
 * @n = 0 for a stack that was not recorded; @values, one per type.
 * Stacks that are the same once cut are one sample: their values add up,
 * unrounded (estimates), and are rounded once, when the profile is written.
 */
int mlt_pprof_add(struct pprof *p, const uint64_t *ips, int n, const double *values);
void mlt_pprof_comment(struct pprof *p, const char *text);
void mlt_pprof_times(struct pprof *p, int64_t time_ns, int64_t duration_ns);
/* The sampling period: one sample per @period of @type (a sampled heap profile) */
void mlt_pprof_period(struct pprof *p, const struct pprof_type *type, int64_t period);
/* Write the gzip-compressed profile to @f (not closed). 0 or -errno. */
int mlt_pprof_write(struct pprof *p, FILE *f);
void mlt_pprof_free(struct pprof *p);

#endif
