/* SPDX-License-Identifier: MIT */
/*
 * The result file of a stress target (workloads/stress_*.c): one page the
 * target maps shared and the driver (tests/stress) reads while it runs.
 */
#ifndef MEMLENS_STRESS_RESULT_H
#define MEMLENS_STRESS_RESULT_H

#include <stdint.h>

#define STRESS_MAGIC 0x5354524du /* "STRM" */

struct stress_result {
	uint32_t magic; /* STRESS_MAGIC once the target is set up */
	int32_t pid;
	uint64_t checks; /* checks done: grows while the target makes progress */
	uint64_t harm; /* harm seen */
	uint32_t done; /* 1 once the final checks and the summary are written */
	uint32_t exit_code;
	char first[256]; /* the first harm, in words */
	char summary[1024]; /* counts and figures, written at the end */
};

#endif
