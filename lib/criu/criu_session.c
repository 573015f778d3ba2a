// SPDX-License-Identifier: MIT
/*
 * The checkpoint flow around the write profiler:
 * hot set -> ml_profiler_release() -> exclude / no-parent ranges -> CRIU ->
 * ml_profiler_reinit() -> previous exclude set := hot set.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/criu.h"
#include "memlens/profiler.h"

struct ml_criu_session {
	pthread_mutex_t lock;
	struct ml_criu_caps caps;
	struct ml_criu_run_opts opts;
	struct ml_rangeset prev; /* what the last checkpoint left out (for callers) */
};

int ml_criu_session_open(struct ml_criu_session **out, const struct ml_criu_caps *caps,
			 const struct ml_criu_run_opts *o, struct ml_err *err)
{
	struct ml_criu_session *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ml_err_set(err, ENOMEM, "out of memory");
	ret = ml_opts_load(&s->opts, sizeof(s->opts), o, "ml_criu_run_opts", err);
	if (ret) {
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->caps = *caps;
	ml_rangeset_init(&s->prev);
	*out = s;
	return 0;
}

void ml_criu_session_close(struct ml_criu_session *s)
{
	if (!s)
		return;
	ml_rangeset_free(&s->prev);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int ml_criu_session_prev_exclude(struct ml_criu_session *s, struct ml_rangeset *out)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = ml_rangeset_copy(out, &s->prev);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void ml_criu_session_reset(struct ml_criu_session *s)
{
	pthread_mutex_lock(&s->lock);
	ml_rangeset_clear(&s->prev);
	pthread_mutex_unlock(&s->lock);
}

/*
 * The hot set of one process of the sample (@pid 0: every process, united).
 * Shared memory is never in it: CRIU dumps a shared memory object once, by
 * the first process that maps it, and leaves none of its pages out.
 */
static int hot_of(const struct ml_profiler_sample *smp, bool pages, pid_t pid,
		  struct ml_rangeset *out)
{
	struct ml_rangeset shm;
	int ret = 0;

	ml_rangeset_init(&shm);
	for (size_t i = 0; i < smp->nregions && !ret; i++) {
		const struct ml_profiler_region *g = &smp->regions[i];

		if (pid && g->pid != pid)
			continue;
		if (g->shared)
			ret = ml_rangeset_add(&shm, g->start, g->end);
		else if (!pages && g->hot)
			ret = ml_rangeset_add(out, g->start, g->end);
	}
	for (size_t i = 0; pages && i < smp->hot.n && !ret; i++) {
		const struct ml_hotrange_range *h = &smp->hot.r[i];

		if (!pid || h->pid == pid)
			ret = ml_rangeset_add(out, h->start, h->end);
	}
	/* a merged hot range may span shared memory (pages only: no hot region is shared) */
	for (size_t i = 0; pages && i < shm.n && !ret; i++)
		ret = ml_rangeset_remove(out, shm.r[i].start, shm.r[i].end);
	ml_rangeset_free(&shm);
	return ret;
}

int ml_criu_hot_set(struct ml_profiler *p, bool pages, struct ml_rangeset *out, struct ml_err *err)
{
	struct ml_profiler_sample smp;
	int ret = 0;

	ml_rangeset_clear(out);
	if (!p)
		return 0;
	memset(&smp, 0, sizeof(smp));
	if (ml_profiler_latest(p, &smp))
		return 0; /* no interval yet: nothing is hot */
	if (!smp.tree) {
		ret = hot_of(&smp, pages, 0, out);
	} else {
		/* one process at a time: a shared range of one is not another's */
		struct ml_rangeset one;

		ml_rangeset_init(&one);
		for (size_t i = 0; i < smp.nprocs && !ret; i++) {
			ml_rangeset_clear(&one);
			ret = hot_of(&smp, pages, smp.procs[i].pid, &one);
			for (size_t k = 0; k < one.n && !ret; k++)
				ret = ml_rangeset_add(out, one.r[k].start, one.r[k].end);
		}
		ml_rangeset_free(&one);
	}
	ml_profiler_sample_free(&smp);
	if (ret)
		return ml_err_set(err, ENOMEM, "out of memory");
	return 0;
}

void ml_criu_hot_procs_free(struct ml_criu_hot_procs *h)
{
	for (size_t i = 0; i < h->n; i++) {
		ml_rangeset_free(&h->sets[i]);
	}
	free(h->sets);
	free(h->procs);
	memset(h, 0, sizeof(*h));
}

int ml_criu_hot_procs(struct ml_profiler *p, bool pages, struct ml_criu_hot_procs *out,
		      struct ml_err *err)
{
	struct ml_profiler_sample smp;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!p)
		return 0;
	memset(&smp, 0, sizeof(smp));
	if (ml_profiler_latest(p, &smp))
		return 0;
	if (smp.nprocs) {
		out->sets = calloc(smp.nprocs, sizeof(*out->sets));
		out->procs = calloc(smp.nprocs, sizeof(*out->procs));
		ret = out->sets && out->procs ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < smp.nprocs && !ret; i++) {
		struct ml_rangeset *s = &out->sets[out->n];

		if (smp.procs[i].exited || smp.procs[i].failed)
			continue;
		ml_rangeset_init(s);
		ret = hot_of(&smp, pages, smp.procs[i].pid, s);
		if (!ret && !s->n) {
			ml_rangeset_free(s);
			continue;
		}
		out->procs[out->n] = (struct ml_criu_proc_ranges){ smp.procs[i].pid, s };
		out->n++;
	}
	ml_profiler_sample_free(&smp);
	if (ret) {
		ml_criu_hot_procs_free(out);
		return ml_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* After CRIU: re-init the profiler, unless the target is gone. */
static void reinit_profiler(struct ml_profiler *p, const struct ml_criu_dump_req *req, bool dumped,
			    struct ml_criu_result *res)
{
	struct ml_err e = { 0 };

	if (!p)
		return;
	if (dumped && !req->leave_running && !req->pre_dump) {
		snprintf(res->profiler_note, sizeof(res->profiler_note),
			 "not re-initialised: the target was dumped without being left "
			 "running, and CRIU ended it");
		return;
	}
	if (kill(req->pid, 0) < 0 && errno == ESRCH) {
		snprintf(res->profiler_note, sizeof(res->profiler_note),
			 "not re-initialised: the target %d is gone", (int)req->pid);
		return;
	}
	if (ml_profiler_reinit(p, &e)) {
		snprintf(res->profiler_note, sizeof(res->profiler_note), "re-init failed: %.200s",
			 e.msg);
		return;
	}
	res->profiler_reinit = true;
}

static int run_checkpoint(struct ml_criu_session *s, struct ml_profiler *p,
			  const struct ml_criu_dump_req *req, struct ml_criu_result *res,
			  struct ml_rangeset *hot, struct ml_criu_hot_procs *procs_out,
			  struct ml_err *err)
{
	struct ml_criu_dump_req r = *req;
	struct ml_criu_hot_procs procs = { 0 };
	int ret;

	/* what would make CRIU refuse, before the profiler is taken down for it */
	ret = ml_criu_dump_precheck(&s->caps, req, err);
	if (!ret)
		ret = ml_criu_hot_set(p, s->caps.page_granular, hot, err);
	if (!ret)
		ret = ml_criu_hot_procs(p, s->caps.page_granular, &procs, err);
	if (ret)
		goto out;
	/* a tree: each process's own ranges, to a CRIU that takes them so */
	if (procs.n) {
		r.exclude_procs = procs.procs;
		r.nexclude_procs = procs.n;
	}
	if (p && (ret = ml_profiler_release(p, err)))
		goto out;
	/* what the parent left out comes from the parent's own records
	 * (ml_criu_dump()), whichever checkpoint made it */
	r.exclude = hot;
	ret = ml_criu_dump(&s->caps, &r, &s->opts, res, err);
	reinit_profiler(p, req, ret == 0, res);
	if (!ret && !res->exclude.nexclude)
		ml_rangeset_clear(&s->prev);
	else if (!ret && ml_rangeset_copy(&s->prev, hot))
		ret = ml_err_set(err, ENOMEM, "out of memory");
out:
	if (procs_out && !ret) {
		*procs_out = procs;
		return 0;
	}
	ml_criu_hot_procs_free(&procs);
	return ret;
}

int ml_criu_checkpoint(struct ml_criu_session *s, struct ml_profiler *p,
		       const struct ml_criu_dump_req *req, struct ml_criu_result *res,
		       struct ml_rangeset *hot, struct ml_err *err)
{
	return ml_criu_checkpoint_procs(s, p, req, res, hot, NULL, err);
}

int ml_criu_checkpoint_procs(struct ml_criu_session *s, struct ml_profiler *p,
			     const struct ml_criu_dump_req *req, struct ml_criu_result *res,
			     struct ml_rangeset *hot, struct ml_criu_hot_procs *procs,
			     struct ml_err *err)
{
	struct ml_rangeset local;
	int ret;

	memset(res, 0, sizeof(*res));
	res->exit_status = -1;
	res->pages_written = res->pages_scanned = res->pages_skipped_parent = -1;
	res->shpages_written = -1;
	res->pages_lazy = -1;
	ml_rangeset_init(&local);
	pthread_mutex_lock(&s->lock);
	if (procs)
		memset(procs, 0, sizeof(*procs));
	ret = run_checkpoint(s, p, req, res, hot ? hot : &local, procs, err);
	pthread_mutex_unlock(&s->lock);
	ml_rangeset_free(&local);
	return ret;
}
