// SPDX-License-Identifier: MIT
/* The `slab` JSON Lines schema, written and read (see memlens/format_slab.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/format_slab.h"
#include "rec.h"

static void put_int_or_null(struct ml_jw *w, const char *key, bool known, int64_t v)
{
	ml_jw_key(w, key);
	if (known)
		ml_jw_int(w, v);
	else
		ml_jw_null(w);
}

static void put_row(struct ml_jw *w, const struct ml_slab_row_rec *row, bool slabinfo)
{
	ml_jw_obj(w);
	ml_jw_kstr(w, "cache", row->cache);
	ml_jw_kuint(w, "allocs", row->allocs);
	ml_jw_kuint(w, "frees", row->frees);
	ml_jw_kint(w, "net", row->net);
	ml_jw_kint(w, "net_kb", row->net_kb);
	ml_jw_kuint(w, "unseen_allocs", row->unseen_allocs);
	if (slabinfo) {
		put_int_or_null(w, "slabinfo_delta", row->window_known, row->slabinfo_delta);
		put_int_or_null(w, "window_net", row->window_known, row->window_net);
		put_int_or_null(w, "window_unseen_allocs", row->window_known,
				row->window_unseen_allocs);
		ml_jw_kint(w, "objperslab", row->objperslab);
	}
	ml_jw_obj_end(w);
}

void ml_fmt_slab(struct ml_jw *w, const struct ml_slab_rec *r)
{
	ml_jw_obj(w);
	mli_rec_put_head(w, "slab", "slab_interval", r->interval, r->elapsed_ms, r->last);
	ml_jw_kuint(w, "recursion_misses", r->recursion_misses);
	ml_jw_kuint(w, "copies", r->copies);
	ml_jw_kuint(w, "rescued", r->rescued);
	ml_jw_kuint(w, "rescued_by_last", r->rescued_by_last);
	ml_jw_kstr(w, "kmalloc", r->kmalloc);
	ml_jw_kuint(w, "kfree_unattributed", r->kfree_unattributed);
	ml_jw_kuint(w, "kmalloc_large", r->kmalloc_large);
	ml_jw_kuint(w, "unseen_allocs", r->unseen_allocs);
	ml_jw_key(w, "rows");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nrows; i++)
		put_row(w, &r->rows[i], r->has_slabinfo);
	ml_jw_arr_end(w);
	if (r->has_slabinfo) {
		ml_jw_key(w, "slabinfo_only");
		ml_jw_arr(w);
		for (size_t i = 0; i < r->nonly; i++) {
			ml_jw_obj(w);
			ml_jw_kstr(w, "cache", r->only[i].cache);
			ml_jw_kint(w, "slabinfo_delta", r->only[i].slabinfo_delta);
			ml_jw_kint(w, "objperslab", r->only[i].objperslab);
			ml_jw_obj_end(w);
		}
		ml_jw_arr_end(w);
	}
	ml_jw_key(w, "merged");
	ml_jw_arr(w);
	for (size_t i = 0; i < r->nmerged; i++) {
		ml_jw_obj(w);
		ml_jw_kstr(w, "cache", r->merged[i].cache);
		ml_jw_kint(w, "users", r->merged[i].users);
		ml_jw_kstr(w, "aliases", r->merged[i].aliases);
		ml_jw_obj_end(w);
	}
	ml_jw_arr_end(w);
	ml_jw_obj_end(w);
}

/* An array at @key (absent: @optional, an empty one), its members' room in *@out. */
static int array_of(const struct ml_json *o, const char *key, bool optional, size_t size,
		    void **out, const struct ml_json **a, struct ml_err *err)
{
	*a = ml_json_get(o, key);
	if (!*a && optional)
		return 0;
	if (ml_json_type(*a) != ML_JSON_ARRAY)
		return ml_err_set(err, EINVAL, "field \"%s\" is missing or not an array", key);
	*out = calloc(ml_json_count(*a) ? ml_json_count(*a) : 1, size);
	return *out ? 0 : ml_err_set(err, ENOMEM, "out of memory");
}

static int read_row(const struct ml_json *o, size_t i, struct ml_slab_row_rec *row,
		    struct ml_err *err)
{
	const char *cache = ml_json_get_str(o, "cache");
	int ret;

	if (!cache)
		return ml_err_set(err, EINVAL,
				  "row %zu: field \"cache\" is missing or not a string", i);
	snprintf(row->cache, sizeof(row->cache), "%s", cache);
	ret = mli_rec_need_count(o, "allocs", &row->allocs, err);
	if (!ret)
		ret = mli_rec_need_count(o, "frees", &row->frees, err);
	if (ret)
		return ml_err_wrap(err, "row %zu", i);
	row->net = mli_rec_int_or0(o, "net");
	row->net_kb = mli_rec_int_or0(o, "net_kb");
	row->unseen_allocs = mli_rec_count_or0(o, "unseen_allocs");
	row->window_known = ml_json_type(ml_json_get(o, "slabinfo_delta")) == ML_JSON_NUMBER;
	row->slabinfo_delta = mli_rec_int_or0(o, "slabinfo_delta");
	row->window_net = mli_rec_int_or0(o, "window_net");
	row->window_unseen_allocs = mli_rec_int_or0(o, "window_unseen_allocs");
	row->objperslab = mli_rec_int_or0(o, "objperslab");
	return 0;
}

static int read_lists(const struct ml_json *o, struct ml_slab_rec *r, struct ml_err *err)
{
	const struct ml_json *a;
	int ret;

	ret = array_of(o, "slabinfo_only", true, sizeof(*r->only), (void **)&r->only, &a, err);
	if (ret)
		return ret;
	r->has_slabinfo = a != NULL;
	for (size_t i = 0; i < ml_json_count(a); i++) {
		struct ml_slab_only_rec *x = &r->only[r->nonly++];
		const struct ml_json *e = ml_json_at(a, i);

		mli_rec_str(e, "cache", x->cache, sizeof(x->cache));
		x->slabinfo_delta = mli_rec_int_or0(e, "slabinfo_delta");
		x->objperslab = mli_rec_int_or0(e, "objperslab");
	}
	ret = array_of(o, "merged", true, sizeof(*r->merged), (void **)&r->merged, &a, err);
	if (ret)
		return ret;
	for (size_t i = 0; i < ml_json_count(a); i++) {
		struct ml_slab_merged_rec *x = &r->merged[r->nmerged++];
		const struct ml_json *e = ml_json_at(a, i);

		mli_rec_str(e, "cache", x->cache, sizeof(x->cache));
		x->users = mli_rec_int_or0(e, "users");
		mli_rec_str(e, "aliases", x->aliases, sizeof(x->aliases));
	}
	return 0;
}

int ml_fmt_slab_read(const struct ml_json *o, struct ml_slab_rec *r, struct ml_err *err)
{
	const char *type = ml_json_get_str(o, "type");
	const struct ml_json *rows;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!type || (strcmp(type, "slab") && strcmp(type, "slab_interval")))
		return ml_err_set(err, EINVAL,
				  "field \"type\" is not \"slab\" or \"slab_interval\"");
	r->interval = !strcmp(type, "slab_interval");
	ret = array_of(o, "rows", false, sizeof(*r->rows), (void **)&r->rows, &rows, err);
	if (ret)
		return ret;
	if (r->interval) {
		ret = mli_rec_read_interval(o, &r->elapsed_ms, &r->last, err);
		if (ret)
			return ret;
	}
	r->recursion_misses = mli_rec_count_or0(o, "recursion_misses");
	r->copies = mli_rec_count_or0(o, "copies");
	r->rescued = mli_rec_count_or0(o, "rescued");
	r->rescued_by_last = mli_rec_count_or0(o, "rescued_by_last");
	mli_rec_str(o, "kmalloc", r->kmalloc, sizeof(r->kmalloc));
	r->kfree_unattributed = mli_rec_count_or0(o, "kfree_unattributed");
	r->kmalloc_large = mli_rec_count_or0(o, "kmalloc_large");
	r->unseen_allocs = mli_rec_count_or0(o, "unseen_allocs");
	for (size_t i = 0; i < ml_json_count(rows); i++) {
		ret = read_row(ml_json_at(rows, i), i, &r->rows[r->nrows], err);
		if (ret)
			return ret;
		r->nrows++;
	}
	return read_lists(o, r, err);
}

void ml_fmt_slab_free(struct ml_slab_rec *r)
{
	free(r->rows);
	free(r->only);
	free(r->merged);
	r->rows = NULL;
	r->only = NULL;
	r->merged = NULL;
	r->nrows = r->nonly = r->nmerged = 0;
}
