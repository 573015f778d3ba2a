/* SPDX-License-Identifier: MIT */
/* The receiver of a live migration (migrate_recv.c), the source talks to. */
#ifndef MEMLENS_MIGRATE_RECV_H
#define MEMLENS_MIGRATE_RECV_H

#include "memlens/migrate.h"
#include "migrate_event.h"

/* ml_migrate_receive() with @o already loaded (its sz this library's). */
int mli_migrate_receive(int lfd, const struct ml_migrate_recv_opts *o);

#endif
