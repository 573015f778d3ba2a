// SPDX-License-Identifier: MIT
/* Options structs with a size field: memlens/opts.h. */
#include <errno.h>
#include <string.h>

#include "memlens/opts.h"

int ml_opts_load(void *dst, size_t dst_sz, const void *src, const char *what, struct ml_err *err)
{
	const unsigned char *s = src;
	size_t sz;

	memset(dst, 0, dst_sz);
	if (src) {
		memcpy(&sz, src, sizeof(sz));
		if (sz < sizeof(size_t))
			return ml_err_set(
				err, EINVAL,
				"struct %s: its sz is %zu, not the struct's size: declare "
				"it with ML_OPTS() or set .sz = sizeof(struct %s)",
				what, sz, what);
		for (size_t i = dst_sz; i < sz; i++)
			if (s[i])
				return ml_err_set(
					err, EINVAL,
					"struct %s: a field this libmemlens does not know "
					"is set (the caller's struct has %zu bytes, the "
					"library's %zu): use the library the program was "
					"built against",
					what, sz, dst_sz);
		memcpy(dst, src, sz < dst_sz ? sz : dst_sz);
	}
	memcpy(dst, &dst_sz, sizeof(dst_sz));
	return 0;
}
