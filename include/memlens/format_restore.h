/* SPDX-License-Identifier: MIT */
/*
 * The `restore` JSON schema: the one "restore" line memlens restore --json
 * prints (the CRIU run, the restored pid, the options repeated from the
 * checkpoint). Written from the record below, which the command fills;
 * read back into the same record.
 */
#ifndef MEMLENS_FORMAT_RESTORE_H
#define MEMLENS_FORMAT_RESTORE_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/format_criu.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

/*
 * Strings: NULL is written as "" (but see hint and error); read, they
 * point into the JSON read (valid while it is), NULL when absent.
 */
struct ml_restore_rec {
	const char *images_dir;
	bool ok;
	int64_t exit_code; /* memlens's exit status */
	int64_t pid; /* the restored process */
	struct ml_criu_caps_rec criu;
	const char *command; /* CRIU's command line */
	int64_t criu_exit_status; /* -1: killed or not run */
	bool timed_out;
	uint64_t duration_ms;
	const char *repeated; /* the dump options repeated from the images' record */
	const char *log; /* CRIU's log */
	const char *hint; /* NULL or "": not written */
	const char *error; /* NULL: not written */
};

/* The "restore" line, as memlens restore --json writes it. */
void ml_fmt_restore(struct ml_jw *w, const struct ml_restore_rec *r);

/*
 * Read a "restore" object. Required: "ok" (a boolean) and the object
 * "criu". Numbers absent read as 0. -EINVAL naming the field. Nothing to
 * free.
 */
int ml_fmt_restore_read(const struct ml_json *o, struct ml_restore_rec *out, struct ml_err *err);

#pragma GCC visibility pop

#endif
