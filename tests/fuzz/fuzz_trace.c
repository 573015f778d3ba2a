// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for memlens migrate-model's input: any bytes through
 * the bounded line reader (a 512-byte limit here, so long lines are
 * refused as often as kept) and the trace reader, then the model when the
 * trace was accepted. The reader's errors must name the input and the line.
 *   make fuzz  (or build/fuzz/fuzz_trace -max_total_time=60)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/lines.h"
#include "memlens/migrate_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ML_OPTS(ml_mm_params, p, .bandwidth_mbps = 100, .round_interval_s = 0.5);
	ML_MM_RESULTS(res);
	struct ml_err err = { 0 };
	struct ml_lines in;
	struct ml_mm_trace t;
	const char *line;
	size_t n;
	FILE *f;
	int r;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	ml_mm_trace_init(&t);
	ml_lines_init(&in, f, "fuzz", 512);
	while ((r = ml_lines_next(&in, &line, &n, &err)) > 0) {
		if (n > 512)
			abort(); /* the limit holds */
		if (ml_mm_trace_add_line(&t, line, n, &err))
			break;
	}
	/* the reader's errors name the input and the line */
	if (r < 0 && strncmp(err.msg, "fuzz:", 5))
		abort();
	if (r == 0 && !ml_mm_run(&t, &p, res, &err))
		ml_mm_results_free(res);
	ml_lines_free(&in);
	fclose(f);
	ml_mm_trace_free(&t);
	return 0;
}
