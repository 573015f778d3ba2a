/* SPDX-License-Identifier: MIT */
/* How both binaries print what a migration says (memlens/migrate.h). */
#ifndef MEMLENS_MIGRATE_MSG_H
#define MEMLENS_MIGRATE_MSG_H

#include "memlens/migrate.h"

/* On stderr: "memlens migrate: MSG". An ml_mig_event_fn; @arg unused. */
void migrate_print_event(const struct ml_mig_event *ev, void *arg);

#endif
