/* SPDX-License-Identifier: MIT */
/*
 * Results a caller allocates and the library fills (private): the caller
 * says how large its struct is (its first field, size_t sz, as the
 * caller was compiled), and the library writes only that much, stepping
 * through an array by it. A program built against older headers then
 * gets the fields it knows and nothing past its struct or its array.
 */
#ifndef MEMLENS_RESULT_H
#define MEMLENS_RESULT_H

#include <stddef.h>

#include "memlens/err.h"

/*
 * The caller's size of the result struct @out (its sz), which must cover
 * at least @min bytes (the fields every version had): > 0, or -EINVAL
 * with @err naming @what.
 */
long mli_result_size(const void *out, size_t min, const char *what, struct ml_err *err);

/*
 * Store the library's result @src (@src_sz bytes, starting with size_t
 * sz) into the caller's @dst of @dst_sz bytes: what both know, the rest
 * of @dst zeroed, dst's sz set to @dst_sz.
 */
void mli_result_put(void *dst, size_t dst_sz, const void *src, size_t src_sz);

#endif
