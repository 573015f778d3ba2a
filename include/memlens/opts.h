/* SPDX-License-Identifier: MIT */
/*
 * Options structs of libmemlens's public API (struct ml_profiler_opts,
 * ml_snapshot_opts, ml_mm_params, ml_report_opts, ml_criu_probe_opts, ml_criu_run_opts,
 * ml_criu_preflight_opts, and the tracers' in memlens/trace_*.h)
 * start with `size_t sz`: the size of the struct as the caller was compiled,
 * as libbpf's _opts. Declare one with ML_OPTS(), which sets it:
 *
 *	ML_OPTS(ml_profiler_opts, o, .interval_ms = 100);
 *	ml_profiler_open(&p, pid, &o, &err);
 *
 * A library newer than its caller reads the fields the caller did not know
 * as 0 (their defaults); a caller built against newer headers may pass the
 * fields this library does not know only as 0, else the call fails with
 * -EINVAL and says which library it is. A struct whose sz is not set fails
 * the same way. NULL, where a function takes it, means every default.
 */
#ifndef MEMLENS_OPTS_SIZE_H
#define MEMLENS_OPTS_SIZE_H

#include <stddef.h>

#include "memlens/err.h"

/*
 * As libbpf's LIBBPF_OPTS: zero the whole struct first, so that its padding
 * (where a later version may put a field) reads 0 in a newer library.
 * __builtin_memset, not <string.h>: a caller may have another string.h
 * first on its include path (CRIU's criu/include has one).
 */
#define ML_OPTS(TYPE, NAME, ...)                                                                   \
	struct TYPE NAME = ({                                                                      \
		__builtin_memset(&NAME, 0, sizeof(struct TYPE));                                   \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ };                           \
	})

#pragma GCC visibility push(default)

/*
 * For libmemlens and the libraries built on it: copy the caller's options
 * @src (a struct starting with size_t sz; NULL: all zero) into @dst of the
 * library's @dst_sz bytes, zero-filling what the caller did not know, and
 * set dst's sz to @dst_sz. @what names the struct in the error. Returns 0 or
 * -EINVAL (sz unset, or a field this library does not know set).
 */
int ml_opts_load(void *dst, size_t dst_sz, const void *src, const char *what, struct ml_err *err);

/*
 * Results the caller allocates and a library fills start with `size_t sz`
 * too, which the caller sets (sizeof the struct as it was compiled) before
 * the call: the library writes only that much, so a program built against
 * older headers is never written past its struct (or, stepping by it, its
 * array). ml_result_store() is how: store the library's result @src
 * (@src_sz bytes, starting with its own sz) into the caller's @dst, which
 * must cover at least @min bytes (the fields every version had); what
 * @dst has beyond @src_sz is zeroed, its sz kept. 0, or -EINVAL (nothing
 * written) with @err naming @what.
 */
#define ML_RESULT_SZ_MAX (1u << 20)
/* A result struct to hand to the library, zeroed, its sz set. */
#define ML_RESULT(TYPE, NAME) struct TYPE NAME = { .sz = sizeof(struct TYPE) }
int ml_result_store(void *dst, const void *src, size_t src_sz, size_t min, const char *what,
		    struct ml_err *err);

#pragma GCC visibility pop

#endif
