/* SPDX-License-Identifier: MIT */
/* Internal to the receiver (migrate_recv.c, migrate_recv_lazy.c): its state. */
#ifndef MEMLENS_MIGRATE_RECVST_H
#define MEMLENS_MIGRATE_RECVST_H

#include <stdbool.h>
#include <sys/types.h>

#include "migrate_recv.h"
#include "migrate_wire.h"

struct recv_state {
	const struct ml_migrate_recv_opts *o;
	struct wire w;
	pid_t ps_pid; /* the running page server */
	int round;
	bool files_round; /* the round's images come as FILE records (post-copy) */
};

/* DIR/K */
void mli_mig_recv_round_dir(const struct recv_state *s, int k, char *buf, size_t len);

/* Post-copy (migrate_recv_lazy.c). CANLAZY: can lazy pages work here? */
int mli_mig_recv_can_lazy(struct recv_state *s);
/* IMAGES K: round K's images will come as files (its parent linked). */
int mli_mig_recv_files_round(struct recv_state *s, int k);
/* LAZY K SHELLJOB ADDR PORT: `criu lazy-pages`, the lazy restore, then the count. */
int mli_mig_recv_restore_lazy(struct recv_state *s, int k, int shell_job, const char *addr,
			      int port);

#endif
