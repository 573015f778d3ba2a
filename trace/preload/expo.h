/* SPDX-License-Identifier: MIT */
/*
 * The preloaded sampler's exponential draw (trace/preload/sample.c): the
 * BPF sampler's (trace/leaks.h, leaks_expo_fixed()) without its table, for
 * a process that samples a few times and must not pay for a table it
 * barely uses: -ln(W) of a uniform 64-bit W is k ln 2 - ln(m), k the
 * leading zero bits of W and m in [1/2, 1) its mantissa, and -ln(m) =
 * 2 atanh((1 - m) / (1 + m)) summed to double precision (|z| <= 1/3: 24
 * terms). An exponential variate of mean 1, times 2^32, as the BPF
 * sampler's is (the same to 2e-7: its table is interpolated).
 */
#ifndef MEMLENS_PRELOAD_EXPO_H
#define MEMLENS_PRELOAD_EXPO_H

#include <stdint.h>

#define MLS_LN_TERMS 24

/* -ln(@x), @x in [1/2, 1] */
static inline double mls_neg_ln(double x)
{
	static const double inv[MLS_LN_TERMS] = {
		1.0 / 1,  1.0 / 3,  1.0 / 5,  1.0 / 7,	1.0 / 9,  1.0 / 11, 1.0 / 13, 1.0 / 15,
		1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23, 1.0 / 25, 1.0 / 27, 1.0 / 29, 1.0 / 31,
		1.0 / 33, 1.0 / 35, 1.0 / 37, 1.0 / 39, 1.0 / 41, 1.0 / 43, 1.0 / 45, 1.0 / 47,
	};
	double z = (1 - x) / (1 + x), z2 = z * z, sum = 0;

	for (int i = MLS_LN_TERMS - 1; i >= 0; i--)
		sum = sum * z2 + inv[i];
	return 2 * z * sum;
}

/* an exponential variate of mean 1, times 2^32, from the 64 random bits @r */
static inline uint64_t mls_expo_fixed(uint64_t r)
{
	int k;
	double m;

	if (!r)
		return 64 * 2977044472ULL; /* 64 ln 2, as leaks_expo_fixed() */
	k = __builtin_clzll(r);
	m = (double)((r << k) >> 11) * 0x1p-53; /* [1/2, 1) */
	return (uint64_t)((k * 0.69314718055994530942 + mls_neg_ln(m)) * 4294967296.0);
}

#endif
