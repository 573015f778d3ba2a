/* SPDX-License-Identifier: MIT */
/*
 * The `migrate-model` JSON Lines schema: one "migrate_model" line, the
 * model's parameters and, for each policy, the bytes of each round, the
 * totals and the downtimes. Written from the record below (memlens
 * migrate-model fills it from the model's results), read back into the same
 * record (what report uses).
 */
#ifndef MEMLENS_FORMAT_MIGRATE_MODEL_H
#define MEMLENS_FORMAT_MIGRATE_MODEL_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memlens/err.h"
#include "memlens/json.h"
#include "memlens/jsonw.h"

struct ml_migrate_model_round_rec {
	int64_t round; /* from 1; the last one the stop-and-copy (0 when absent) */
	uint64_t bytes;
};

struct ml_migrate_model_policy_rec {
	char name[32]; /* "none", "hot-vma", "hot-range" ("?" when absent) */
	struct ml_migrate_model_round_rec *rounds;
	size_t nrounds;
	uint64_t total_bytes, final_round_bytes;
	/* ms; written null when not finite, read 0 when absent or null */
	double downtime_ms, postcopy_downtime_ms, postcopy_last_page_ms;
	/* the downtime's parts: the final dump, the restore (0 when absent) */
	double dump_ms, restore_ms;
	uint64_t restored_bytes; /* the memory a restore loads (0 when absent) */
	uint64_t lazy_bytes; /* with post-copy: the pages that arrive lazily (0 when absent) */
};

struct ml_migrate_model_rec {
	double bandwidth_mbps, round_interval_s, freeze_overhead_s; /* 0 when absent */
	/* the fixed parts, s, and the restore's MiB/s (0 when absent) */
	double dump_fixed_s, restore_fixed_s, restore_bandwidth_mbps;
	/* the migration record they were fitted from; NULL: none (read: points
	 * into the JSON read) */
	const char *calibrated_from;
	/* post-copy: the lazy pages' MiB/s, the faults, each's wait in ms (0 when absent) */
	double lazy_bandwidth_mbps;
	uint64_t lazy_faults;
	double lazy_fault_ms;
	/* "memory": the tree's memory is its resident pages (the trace has them), else its VMAs'
	 * size */
	bool memory_resident;
	/* "pre_dump_rounds" 0 asked for (-m 0): no pre-dump round */
	bool no_precopy;
	struct ml_migrate_model_policy_rec *pol;
	size_t npol;
	/* "keep_hot_out": the hot memory left out of the last pre-dump too */
	bool keep_hot_out;
};

void ml_fmt_migrate_model(struct ml_jw *w, const struct ml_migrate_model_rec *r);

/*
 * Read a "migrate_model" object. Required: "policies" (an array of
 * objects, each with a "rounds" array of objects with a number "bytes").
 * -EINVAL naming the field, -ENOMEM. Free with ml_fmt_migrate_model_free()
 * (also on error).
 */
int ml_fmt_migrate_model_read(const struct ml_json *o, struct ml_migrate_model_rec *out,
			      struct ml_err *err);
void ml_fmt_migrate_model_free(struct ml_migrate_model_rec *r);

#pragma GCC visibility pop

#endif
