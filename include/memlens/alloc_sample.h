/* SPDX-License-Identifier: MIT */
/*
 * Sampling allocations by bytes, as pprof's heap profiler and tcmalloc do
 * (memlens leaks --sample BYTES): the allocations are points on the line of
 * bytes allocated, and a Poisson process of rate 1/BYTES along it picks the
 * allocations it falls into. An allocation of s bytes is sampled with
 * probability p(s) = 1 - exp(-s / BYTES), independently of every other one;
 * counting each sampled block as 1 / p(s) blocks and s / p(s) bytes makes
 * the estimates unbiased (Horvitz-Thompson).
 */
#ifndef MEMLENS_ALLOC_SAMPLE_H
#define MEMLENS_ALLOC_SAMPLE_H

/* the interface libmemlens.so exports (built with -fvisibility=hidden) */
#pragma GCC visibility push(default)

#include <stdint.h>

/* 1 / p(@size): the blocks one sampled block of @size bytes stands for (1 when @mean is 0) */
double ml_alloc_sample_weight(uint64_t size, uint64_t mean);

/*
 * The variance of the estimate of the bytes that one sampled block of
 * @size bytes contributes, as estimated from that sample: (1 - p) / p^2 *
 * size^2. Summed over the sampled blocks of a stack: the variance of its
 * estimated bytes (its square root: the standard error).
 */
double ml_alloc_sample_var(uint64_t size, uint64_t mean);

/*
 * The relative standard error of the estimated bytes of a stack that has
 * @bytes outstanding in blocks of @size bytes: sqrt(size (1/p - 1) / bytes).
 * It is at most sqrt(@mean / @bytes), which small blocks approach.
 */
double ml_alloc_sample_rse(double bytes, uint64_t size, uint64_t mean);

/*
 * The table the BPF program draws its exponential distances from:
 * @tab[j] = -ln(1/2 + j / (2 @n)) * 2^32 for j = 0..@n (@n + 1 values).
 */
void ml_alloc_sample_expo_table(uint64_t *tab, unsigned int n);

#pragma GCC visibility pop

#endif
