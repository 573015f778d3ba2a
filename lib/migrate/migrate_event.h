/* SPDX-License-Identifier: MIT */
/*
 * What a migration has to say while it runs, besides its result: the
 * library prints nothing, it hands each message to the caller's callback
 * (struct migrate_opts and struct migrate_recv_opts: on_event, arg), which
 * prints it, logs it or drops it. Progress comes from the receiver only
 * with its verbose option; the problems always come.
 */
#ifndef MEMLENS_MIGRATE_EVENT_H
#define MEMLENS_MIGRATE_EVENT_H

#include <stdint.h>
#include <sys/types.h>

enum ml_mig_ev {
	/* the receiver (progress, with verbose) */
	ML_MIG_EV_RESTORED, /* the tree runs here: pid, dir, ms */
	ML_MIG_EV_RESTORED_LAZY, /* the same, its lazy pages still to come */
	ML_MIG_EV_LAZY_DONE, /* every lazy page arrived (counts in msg) */
	/* the receiver (problems) */
	ML_MIG_EV_DIR_FAILED, /* its images root cannot be created: dir, err */
	ML_MIG_EV_STORE_FAILED, /* an image file cannot be stored: dir, name, err */
	ML_MIG_EV_ABORTED, /* the source refused the migration before its first round */
	/* the source (problems) */
	ML_MIG_EV_LAZY_DUMP_FAILED, /* its lazy dump failed once every page was delivered */
};

struct ml_mig_event {
	enum ml_mig_ev kind;
	/* the whole message, one line without its newline, not naming the
	 * program: `memlens migrate` prints "memlens migrate: MSG" */
	const char *msg;
	const char *dir; /* the images directory concerned, or NULL */
	const char *name; /* STORE_FAILED: the image file */
	int err; /* a negative errno, or 0 */
	pid_t pid; /* RESTORED*: the restored tree's root */
	uint64_t ms; /* RESTORED*: how long the restore took */
};

/* Called from the thread that runs the step (for a directory destination,
 * the source's receiver thread too): keep it short, thread-safe. */
typedef void (*ml_mig_event_fn)(const struct ml_mig_event *ev, void *arg);

/* @ev with its msg formatted from @fmt, to @fn (NULL: nothing). */
void mli_mig_emit(ml_mig_event_fn fn, void *arg, struct ml_mig_event *ev, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
