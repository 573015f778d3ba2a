/* SPDX-License-Identifier: MIT */
/* The receiver of a live migration (migrate_recv.c), the source talks to. */
#ifndef MEMLENS_MIGRATE_H
#define MEMLENS_MIGRATE_H

#include <stdbool.h>

#include "memlens/criu.h"
#include "migrate_event.h"

struct migrate_recv_opts {
	const char *dir; /* images root: DIR/1, DIR/2, ... one per round */
	const char *host; /* the address page servers listen on */
	const struct ml_criu_caps *caps;
	unsigned int timeout_s; /* CRIU time limit */
	bool verbose; /* the progress events too, not only the problems */
	/* what it has to say (migrate_event.h); NULL: nothing */
	ml_mig_event_fn on_event;
	void *arg;
};

/* Accept one source on @lfd and serve its migration. 0 once restored. */
int mli_migrate_receive(int lfd, const struct migrate_recv_opts *o);

#endif
