/* SPDX-License-Identifier: MIT */
/*
 * The `check` JSON schema: the one "check" line memlens check --json
 * prints (the kernel, whether the core features are there, each feature
 * probed). Written from the record below, which the command fills; read
 * back into the same record.
 */
#ifndef MEMLENS_FORMAT_CHECK_H
#define MEMLENS_FORMAT_CHECK_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>

#include "memlens/err.h"
#include "memlens/features.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/*
 * Strings: NULL is written as "" (but see a feature's fix); read, they
 * point into the JSON read (valid while it is), NULL when absent.
 */
struct ml_check_rec {
	const char *kernel; /* uname's release */
	const char *arch; /* uname's machine */
	bool root; /* memlens ran as root */
	bool core_ok; /* no core feature is missing */
	/*
	 * Each one's group, name, state ("ok", "missing", "info"), core,
	 * detail, used_by, and fix (NULL: not written). Read, detail is cut
	 * to its size.
	 */
	const struct ml_feature *features;
	size_t nfeatures;
};

/* The "check" line, as memlens check --json writes it. */
void ml_fmt_check(struct ml_jw *w, const struct ml_check_rec *r);

/*
 * Read a "check" object. Required: "core_ok" (a boolean) and "features"
 * (an array of objects, each with the strings "group" and "name" and a
 * "state" of "ok", "missing" or "info"). -EINVAL naming the field,
 * -ENOMEM. Free with ml_fmt_check_free() (also on error).
 */
int ml_fmt_check_read(const struct ml_json *o, struct ml_check_rec *out, struct ml_err *err);
void ml_fmt_check_free(struct ml_check_rec *r);

#pragma GCC visibility pop

#endif
