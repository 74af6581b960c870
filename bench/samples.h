/* SPDX-License-Identifier: MIT */
/*
 * Samples of the kernel-socket baselines (udp_pingpong, tcp_connect): sorting
 * them and their percentiles, computed as xroce-perf computes its own.
 */
#ifndef XROCE_BENCH_SAMPLES_H
#define XROCE_BENCH_SAMPLES_H

#include <stdint.h>

static inline int compare_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with p of them at or below it. */
static inline int64_t percentile(const int64_t *sorted, long n, double p)
{
	long rank = (long)(p * (double)n);

	if ((double)rank < p * (double)n)
		rank++;
	return sorted[rank > 0 ? (rank > n ? n : rank) - 1 : 0];
}

#endif /* XROCE_BENCH_SAMPLES_H */
