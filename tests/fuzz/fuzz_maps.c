// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for the /proc/PID/maps parser (untrusted text: a
 * process can name its mappings, memfds and files almost anything).
 *   make fuzz && build/fuzz/fuzz_maps -max_total_time=60 tests/fuzz/corpus/maps
 */
#include <stddef.h>
#include <stdint.h>

#include "memlens/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ml_vma_set s;
	struct ml_err err;

	ml_vma_set_init(&s);
	if (ml_maps_parse((const char *)data, size, &s, &err) == 0) {
		ml_maps_classify(&s, NULL);
		for (size_t i = 0; i < s.n; i++) {
			(void)ml_vma_path(&s, &s.v[i]);
			(void)ml_vma_is_writable_private(&s.v[i]);
			(void)ml_vma_find(&s, s.v[i].start);
		}
	}
	ml_vma_set_free(&s);
	return 0;
}
