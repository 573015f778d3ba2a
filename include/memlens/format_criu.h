/* SPDX-License-Identifier: MIT */
/*
 * The "criu" object of the JSON the commands that run CRIU write
 * (checkpoint, migrate, restore): which CRIU they ran and what it can do.
 * Written from the record below, filled from ml_criu_probe()'s answer;
 * read back into the same record.
 */
#ifndef MEMLENS_FORMAT_CRIU_H
#define MEMLENS_FORMAT_CRIU_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>

#include "memlens/criu.h"
#include "memlens/criu_preflight.h"
#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/* Strings: NULL is written as "". Read: they point into the JSON read. */
struct ml_criu_caps_rec {
	const char *path;
	const char *version; /* "" if not known */
	bool exclude_options; /* ml_criu_can_exclude() */
	bool exclude_range, exclude_file, no_parent_range, page_granular;
	const char *granularity; /* ml_criu_granularity(): "page", "vma" or "none" */
	bool mem_dirty_track;
};

/* The record of @caps; its strings point into @caps. */
void ml_fmt_criu_caps_of(struct ml_criu_caps_rec *r, const struct ml_criu_caps *caps);
/* "criu": {...} (a key and its object, inside an object being written). */
void ml_fmt_criu_caps(struct ml_jw *w, const struct ml_criu_caps_rec *r);
/*
 * Read the object at "criu" (@o is that object). Required: it is an
 * object. Booleans absent read as false, strings absent as NULL. -EINVAL.
 */
int ml_fmt_criu_caps_read(const struct ml_json *o, struct ml_criu_caps_rec *out,
			  struct ml_err *err);

/*
 * "preflight": {"refused": N, "found": N, "processes": N, "findings": [{"kind",
 * "pid", "comm", "resource", "fix", "absorbed"}, ...]}: what CRIU would refuse,
 * found before anything was frozen (ml_criu_preflight()).
 */
void ml_fmt_criu_preflight(struct ml_jw *w, const struct ml_criu_preflight *p);
/*
 * Read the object at "preflight" back (@o is that object) into *@out,
 * allocated (free() it; NULL on error). Required: the counts "refused",
 * "found" and "processes", and "findings", an array of objects each with
 * a known "kind" and a numeric "pid"; strings are cut to the finding's
 * fields, findings past ML_CRIU_PREFLIGHT_MAX counted in nfound only.
 * -EINVAL naming the field, -ENOMEM.
 */
int ml_fmt_criu_preflight_read(const struct ml_json *o, struct ml_criu_preflight **out,
			       struct ml_err *err);

#pragma GCC visibility pop

#endif
