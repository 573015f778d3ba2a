// SPDX-License-Identifier: MIT
/* Results with a size field: result.h. */
#include <errno.h>
#include <string.h>

#include "result.h"

long mli_result_size(const void *out, size_t min, const char *what, struct ml_err *err)
{
	size_t sz;

	memcpy(&sz, out, sizeof(sz));
	if (sz < min || sz < sizeof(size_t) || sz > (1u << 20))
		return ml_err_set(err, EINVAL,
				  "struct %s: its sz is %zu, not the struct's size: set .sz = "
				  "sizeof(struct %s) before the call",
				  what, sz, what);
	return (long)sz;
}

void mli_result_put(void *dst, size_t dst_sz, const void *src, size_t src_sz)
{
	memcpy(dst, src, dst_sz < src_sz ? dst_sz : src_sz);
	if (dst_sz > src_sz)
		memset((char *)dst + src_sz, 0, dst_sz - src_sz);
	memcpy(dst, &dst_sz, sizeof(dst_sz));
}
