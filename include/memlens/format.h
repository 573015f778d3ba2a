/* SPDX-License-Identifier: MIT */
/*
 * What the JSON Lines schemas share: why a run stopped, written as a token
 * ("stopped_because") and shown to people as a sentence. The schemas
 * themselves: memlens/format_writes.h, memlens/format_snapshot.h,
 * memlens/format_faults.h, memlens/format_migrate_model.h,
 * memlens/format_slab.h, memlens/format_oom.h, memlens/format_checkpoint.h,
 * memlens/format_migrate.h (and memlens/format_criu.h, the "criu" object).
 */
#ifndef MEMLENS_FORMAT_H
#define MEMLENS_FORMAT_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

enum ml_stop {
	ML_STOP_UNKNOWN, /* not given, or a word this version does not know */
	ML_STOP_DURATION, /* "duration": the requested duration elapsed */
	ML_STOP_SIGNAL, /* "signal": interrupted (SIGINT, SIGTERM, ...) */
	ML_STOP_TARGET_EXITED, /* "target_exited" */
	ML_STOP_ERROR, /* "error": the command's error message says which */
	ML_STOP_COUNT, /* "count": the requested number of snapshots was taken */
	ML_STOP_SINGLE, /* "single": one snapshot was asked for */
};

/* The token written to JSON ("" for ML_STOP_UNKNOWN). */
const char *ml_stop_token(enum ml_stop s);
/* The sentence for people: "the duration elapsed", "interrupted", ... */
const char *ml_stop_text(enum ml_stop s);
/* A token, or a sentence older versions wrote; ML_STOP_UNKNOWN otherwise. */
enum ml_stop ml_stop_parse(const char *s);

#pragma GCC visibility pop

#endif
