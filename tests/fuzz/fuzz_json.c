// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the untrusted inputs of the CRIU area: the JSON
 * reader and the schema readers of lib/format, a trace line of the migration model, and CRIU's
 * stats-dump image. make fuzz && build/fuzz/fuzz_json -max_total_time=60
 */
#include <stddef.h>
#include <stdint.h>

#include "memlens/criu.h"
#include "memlens/format_snapshot.h"
#include "memlens/format_writes.h"
#include "memlens/json.h"
#include "memlens/migrate_model.h"

static void walk(const struct ml_json *j, int depth)
{
	uint64_t u;
	int64_t i;
	double d;
	bool b;

	(void)ml_json_as_int(j, &i);
	(void)ml_json_as_uint(j, &u);
	(void)ml_json_as_double(j, &d);
	(void)ml_json_as_bool(j, &b);
	(void)ml_json_as_hex(j, &u);
	(void)ml_json_get(j, "type");
	for (size_t k = 0; k < ml_json_count(j) && depth < 8; k++)
		walk(ml_json_at(j, k), depth + 1);
}

/* The schema readers of lib/format on whatever parsed. */
static void read_schemas(const struct ml_json *j)
{
	struct ml_writes_interval_rec wi;
	struct ml_writes_summary_rec ws;
	struct ml_snapshot_summary_rec ss;
	struct ml_snapshot_rec sr;
	struct ml_err err;

	(void)ml_fmt_writes_interval_read(j, &wi, &err);
	ml_fmt_writes_interval_free(&wi);
	(void)ml_fmt_writes_summary_read(j, &ws, &err);
	ml_fmt_writes_summary_free(&ws);
	(void)ml_fmt_snapshot_read(j, &sr, &err);
	ml_fmt_snapshot_free(&sr);
	ml_fmt_snapshot_summary_read(j, &ss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 1, .round_interval_s = 0.001);
	ML_MM_RESULTS(r);
	struct ml_err err;
	struct ml_mm_trace t;
	struct ml_json *j;
	int64_t a, b, c;

	if (ml_json_parse((const char *)data, size, &j, &err) == 0) {
		walk(j, 0);
		read_schemas(j);
		ml_json_free(j);
	}
	ml_mm_trace_init(&t);
	if (ml_mm_trace_add_line(&t, (const char *)data, size, &err) == 0 &&
	    ml_mm_trace_add_line(&t, (const char *)data, size, &err) == 0 &&
	    ml_mm_run(&t, &p, r, &err) == 0)
		ml_mm_results_free(r);
	ml_mm_trace_free(&t);
	(void)ml_criu_parse_dump_stats(data, size, &a, &b, &c);
	return 0;
}
