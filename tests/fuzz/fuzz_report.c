// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for memlens report: any bytes go through the reader
 * report_load_file uses (the bounded line reader, with a 512-byte limit
 * here, then the JSON Lines reader) and, when some line was accepted, the
 * HTML renderer. Build and run: make fuzz-report
 * (mk/report.mk); seeds: the .jsonl files in tests/report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memlens/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ml_report r;
	struct ml_rbuf page = { 0 };
	struct ml_err err = { 0 };
	FILE *f;

	ml_report_init(&r);
	/* a small line limit, so that long lines are refused as often as kept */
	r.max_line = 512;
	f = fmemopen(size ? (void *)data : (void *)"", size ? size : 1, "r");
	if (!f)
		return 0;
	if (!size)
		fgetc(f); /* empty input: at its end at once */
	if (ml_report_load_stream(&r, f, "fuzz", &err)) {
		/* every error says where it happened */
		if (strncmp(err.msg, "fuzz:", 5) && strncmp(err.msg, "out of memory", 13))
			abort();
	}
	fclose(f);
	if (r.nw || r.ns || r.nf || r.nm) {
		if (ml_report_render(&r,
				     &(struct ml_report_opts){ .sz = sizeof(struct ml_report_opts),
							       .max_cols = 50 },
				     &page, &err))
			abort();
	}
	ml_rb_free(&page);
	ml_report_free(&r);
	return 0;
}
