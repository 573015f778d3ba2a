// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for memlens report: any bytes, split into lines as
 * report_load_file does, go through the JSON Lines reader and, when some
 * line was accepted, the HTML renderer. Build and run: make fuzz-report
 * (mk/report.mk); seeds: the .jsonl files in tests/report.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report r;
	struct rbuf page = { 0 };
	struct ml_err err = { 0 };
	size_t start = 0;
	long lineno = 0;

	report_init(&r);
	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '\n')
			continue;
		lineno++;
		if (i > start && report_load_line(&r, "fuzz", lineno, (const char *)data + start,
						  i - start, &err)) {
			/* every error says where it happened */
			if (strncmp(err.msg, "fuzz:", 5))
				abort();
			break;
		}
		start = i + 1;
	}
	if (r.nw || r.ns || r.nf || r.nm) {
		if (report_render(&r, &(struct report_opts){ .max_cols = 50 }, &page, &err))
			abort();
	}
	rb_free(&page);
	report_free(&r);
	return 0;
}
