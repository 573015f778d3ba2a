// SPDX-License-Identifier: MIT
/* Results with a size field: memlens/opts.h. */
#include <errno.h>
#include <string.h>

#include "memlens/opts.h"

int ml_result_store(void *dst, const void *src, size_t src_sz, size_t min, const char *what,
		    struct ml_err *err)
{
	size_t sz;

	memcpy(&sz, dst, sizeof(sz));
	if (sz < min || sz < sizeof(size_t) || sz > ML_RESULT_SZ_MAX)
		return ml_err_set(err, EINVAL,
				  "struct %s: its sz is %zu, not the struct's size: set .sz = "
				  "sizeof(struct %s) before the call",
				  what, sz, what);
	memcpy(dst, src, sz < src_sz ? sz : src_sz);
	if (sz > src_sz)
		memset((char *)dst + src_sz, 0, sz - src_sz);
	memcpy(dst, &sz, sizeof(sz));
	return 0;
}
