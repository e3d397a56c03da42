/* bench/median.h - the median of a sample, for the benchmark programs. Header-only:
 * allreduce_raw and incast_raw are also built alone with smpicc (bench/sim_validate.sh). */
#ifndef PACER_BENCH_MEDIAN_H
#define PACER_BENCH_MEDIAN_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) in place and returns v[n / 2] (the upper median for even n). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

#endif
