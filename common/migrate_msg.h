/* SPDX-License-Identifier: MIT */
/* How both binaries print what a migration says (lib/migrate/migrate_event.h). */
#ifndef MEMLENS_MIGRATE_MSG_H
#define MEMLENS_MIGRATE_MSG_H

#include "../lib/migrate/migrate_event.h"

/* On stderr: "memlens migrate: MSG". An ml_mig_event_fn; @arg unused. */
void migrate_print_event(const struct ml_mig_event *ev, void *arg);

#endif
