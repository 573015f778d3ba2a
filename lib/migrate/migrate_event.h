/* SPDX-License-Identifier: MIT */
/*
 * What a migration has to say while it runs, besides its result (the
 * events of memlens/migrate.h): each message formatted and handed to the
 * caller's callback.
 */
#ifndef MEMLENS_MIGRATE_EVENT_H
#define MEMLENS_MIGRATE_EVENT_H

#include "memlens/migrate.h"

/* @ev with its msg formatted from @fmt, to @fn (NULL: nothing). */
void mli_mig_emit(ml_mig_event_fn fn, void *arg, struct ml_mig_event *ev, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
