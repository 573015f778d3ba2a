// SPDX-License-Identifier: MIT
/* How both binaries print what a migration says (see migrate_msg.h). */
#include <stdio.h>

#include "migrate_msg.h"

void migrate_print_event(const struct ml_mig_event *ev, void *arg)
{
	(void)arg;
	fprintf(stderr, "memlens migrate: %s\n", ev->msg);
}
