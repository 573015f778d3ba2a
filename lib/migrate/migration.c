// SPDX-License-Identifier: MIT
/* The public API of live migration (memlens/migrate.h): the handle, the receiver. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "memlens/migrate.h"
#include "migrate_recv.h"
#include "migrate_run.h"
#include "migrate_wire.h"

int ml_migration_open(struct ml_migration **out, const struct ml_migrate_opts *o,
		      struct ml_err *err)
{
	struct ml_migration *h;
	int r;

	*out = NULL;
	if (!o)
		return ml_err_set(err, EINVAL,
				  "struct ml_migrate_opts: none given (the tree, "
				  "the destination and the CRIU are needed)");
	h = calloc(1, sizeof(*h));
	if (!h)
		return ml_err_set(err, ENOMEM, "out of memory for a migration");
	r = ml_opts_load(&h->o, sizeof(h->o), o, "ml_migrate_opts", err);
	if (!r && (h->o.pid <= 0 || !h->o.to || !*h->o.to || !h->o.work || !h->o.caps))
		r = ml_err_set(err, EINVAL,
			       "struct ml_migrate_opts: pid, to, work and caps are required "
			       "(the tree's root, the destination, the source's images "
			       "directory, the CRIU from ml_criu_probe())");
	if (!r && (h->o.max_rounds < 0 || h->o.max_rounds > ML_MIGRATE_MAX_ROUNDS))
		r = ml_err_set(err, EINVAL,
			       "struct ml_migrate_opts: max_rounds must be 0..%d, not %d",
			       ML_MIGRATE_MAX_ROUNDS, h->o.max_rounds);
	if (r) {
		free(h);
		return r;
	}
	mli_migrate_plan(&h->o, &h->res);
	*out = h;
	return 0;
}

int ml_migration_check_postcopy(struct ml_migration *m)
{
	if (!m->o.postcopy)
		return 0;
	return mli_migrate_postcopy_precheck(&m->o, m->res.error, sizeof(m->res.error));
}

int ml_migration_run(struct ml_migration *m)
{
	return mli_migrate_run(m);
}

const struct ml_migrate_result *ml_migration_result(const struct ml_migration *m)
{
	return &m->res;
}

const struct ml_migrate_round *ml_migration_round(const struct ml_migration *m, int i)
{
	return i >= 0 && i < m->res.nr ? &m->r[i] : NULL;
}

const struct ml_profiler_proc *ml_migration_proc(const struct ml_migration *m, size_t i)
{
	return i < m->res.nprocs ? &m->procs[i] : NULL;
}

void ml_migration_close(struct ml_migration *m)
{
	free(m);
}

int ml_migrate_parse_hostport(const char *s, char *host, size_t len, int *port)
{
	return mli_wire_parse_hostport(s, host, len, port);
}

int ml_migrate_listen(const char *host, int port, int *bound)
{
	return mli_wire_listen(host, port, bound);
}

int ml_migrate_receive(int lfd, const struct ml_migrate_recv_opts *o, struct ml_err *err)
{
	struct ml_migrate_recv_opts ro;
	int r = ml_opts_load(&ro, sizeof(ro), o, "ml_migrate_recv_opts", err);

	if (r)
		return r;
	if (!ro.dir || !*ro.dir || !ro.host || !ro.caps)
		return ml_err_set(err, EINVAL,
				  "struct ml_migrate_recv_opts: dir, host and caps are required "
				  "(the images root, the page servers' address, the CRIU from "
				  "ml_criu_probe())");
	return mli_migrate_receive(lfd, &ro);
}
