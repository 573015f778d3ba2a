// SPDX-License-Identifier: MIT
/* The estimator of sampled allocations (include/memlens/alloc_sample.h). */
#include <math.h>

#include "memlens/alloc_sample.h"

/* p(size) = 1 - exp(-size / mean), without losing digits when it is small */
static double sampled_p(uint64_t size, uint64_t mean)
{
	return -expm1(-(double)size / (double)mean);
}

double ml_alloc_sample_weight(uint64_t size, uint64_t mean)
{
	if (!mean)
		return 1;
	if (!size)
		return 0; /* never sampled: it stands for nothing */
	return 1 / sampled_p(size, mean);
}

double ml_alloc_sample_var(uint64_t size, uint64_t mean)
{
	double p;

	if (!mean || !size)
		return 0;
	p = sampled_p(size, mean);
	return (1 - p) / (p * p) * (double)size * (double)size;
}

double ml_alloc_sample_rse(double bytes, uint64_t size, uint64_t mean)
{
	if (!mean || !size || bytes <= 0)
		return 0;
	return sqrt((double)size * (ml_alloc_sample_weight(size, mean) - 1) / bytes);
}

void ml_alloc_sample_expo_table(uint64_t *tab, unsigned int n)
{
	for (unsigned int j = 0; j <= n; j++)
		tab[j] = (uint64_t)llround(-log(0.5 + (double)j / (2.0 * n)) * 4294967296.0);
}
