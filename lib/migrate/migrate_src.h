/* SPDX-License-Identifier: MIT */
/*
 * Internal to the source side of a migration (migrate_run.c, and
 * migrate_post.c for post-copy): the state of one run and the helpers
 * both use.
 */
#ifndef MEMLENS_MIGRATE_SRC_H
#define MEMLENS_MIGRATE_SRC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "migrate_recv.h"
#include "migrate_run.h"
#include "migrate_wire.h"

struct mig {
	const struct ml_migrate_opts *o;
	struct ml_migrate_result *res;
	struct ml_migrate_round *r; /* the handle's rounds: res->nr of them */
	struct ml_profiler_proc *procs; /* the handle's processes: res->nprocs */
	struct wire w;
	bool w_open;
	char host[256];
	/* a receiver thread of ours for a directory on this machine */
	int lfd;
	bool recv_on;
	pthread_t recv;
	struct ml_migrate_recv_opts ro;
	struct ml_profiler *p;
	bool own_p;
	struct ml_criu_session *sess;
	uint64_t t0_ns;
	uint64_t criu_end_ns; /* when the last CRIU dump returned */
};

/* A destination given as a directory (not HOST:PORT). */
bool mli_mig_is_dir_dest(const char *to, int *port, char *host, size_t len);
/* Send a request, read the answer; -EPROTO with the destination's ERR text. */
int mli_mig_ask(struct mig *m, char *ans, size_t len, const char *fmt, int k);
/* WORK/K, the source's images of round K. */
void mli_mig_round_dir(const struct mig *m, int k, char *buf, size_t len);
/* Round @r from CRIU's @res (r->stored set first), its images in @dir. */
void mli_mig_fill_round(struct mig *m, struct ml_migrate_round *r, const struct ml_criu_result *res,
			const struct ml_rangeset *hot, const char *dir);
/* Round K's image files (not the logs) as FILE records; *@bytes (or NULL) adds their size. */
int mli_mig_send_images(struct mig *m, int k, uint64_t *bytes);

/* Post-copy (migrate_post.c): can the destination take it (userfaultfd)? */
int mli_mig_postcopy_check(struct mig *m);
/* Post-copy's final round: the lazy dump, its images, the restore, the lazy pages. */
int mli_mig_postcopy_final(struct mig *m, int k);

#endif
