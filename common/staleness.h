/* common/staleness.h - gradient staleness statistics, one definition everywhere
 * (ALGORITHMS.md): tau = t_now - t_read for every applied update. Kept as count, sum, sum
 * of squares, max and a histogram with buckets 0, 1, 2, 3, 4-7, 8-15, 16-31, 32-63, 64+,
 * from which mean, p50, p95 and max are shown. Plain data: it is copied into metrics
 * records, summed across ranks for the job total, and stored in Redis hashes. */
#ifndef PACER_STALENESS_H
#define PACER_STALENESS_H

#include <stdint.h>

#define STALENESS_BUCKETS 9

typedef struct {
    int64_t count;
    int64_t sum;
    int64_t sumsq;
    int64_t max;
    int64_t hist[STALENESS_BUCKETS];
} staleness_t;

/* Bucket of a staleness value; lower bounds are 0,1,2,3,4,8,16,32,64. */
int staleness_bucket(int64_t tau);
/* Lower bound of bucket b (its label): 0,1,2,3,4,8,16,32,64. */
int64_t staleness_bucket_low(int b);
void staleness_add(staleness_t *s, int64_t tau);
void staleness_merge(staleness_t *into, const staleness_t *from);
double staleness_mean(const staleness_t *s);
/* Quantile from the histogram: the lower bound of the bucket that holds the q-th value
 * (exact for the single-value buckets 0..3), capped at max. */
int64_t staleness_quantile(const staleness_t *s, double q);

#endif
