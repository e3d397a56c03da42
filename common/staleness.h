/* common/staleness.h - gradient staleness statistics, one definition everywhere
 * (ALGORITHMS.md): tau = t_now - t_read for every applied update.
 *
 * Two types, so that what travels stays small and what is exact stays in one place:
 *  - staleness_acc_t, the accumulator (about 8 KB): an exact count per value 0 ..
 *    STALENESS_EXACT_MAX and an overflow count above it. One per rank (worker_t) and
 *    nothing else; every applied update goes through staleness_add.
 *  - staleness_t, the summary it keeps current (about 130 bytes): count, sum, sum of
 *    squares, max, exact p50 and p95, the overflow count and a display histogram with
 *    buckets 0, 1, 2, 3, 4-7, 8-15, 16-31, 32-63, 64+. Plain data: it is copied into
 *    metrics records (a ring of METRICS_RING of them), stored in Redis hashes and written
 *    as JSON by staleness_to_json, the one writer every output uses.
 * A quantile is the value at 1-based position ceil(q * count) of the sorted values;
 * when that position falls among the overflow values it reads STALENESS_EXACT_MAX + 1
 * ("more than STALENESS_EXACT_MAX"), and "overflow" says how many there were. */
#ifndef PACER_STALENESS_H
#define PACER_STALENESS_H

#include <stddef.h>
#include <stdint.h>

#define STALENESS_BUCKETS 9
#define STALENESS_EXACT_MAX 1023

typedef struct {
    int64_t count;
    int64_t sum;
    int64_t sumsq;
    int64_t max;
    int64_t p50, p95; /* exact (see above) */
    int64_t overflow; /* values above STALENESS_EXACT_MAX */
    int64_t hist[STALENESS_BUCKETS];
} staleness_t;

typedef struct {
    staleness_t s; /* kept current by staleness_add */
    int64_t counts[STALENESS_EXACT_MAX + 1];
} staleness_acc_t;

/* Bucket of a staleness value; lower bounds are 0,1,2,3,4,8,16,32,64. */
int staleness_bucket(int64_t tau);
/* Records one applied update (negative tau counts as 0) and refreshes a->s, quantiles
 * included (a scan of at most min(max, STALENESS_EXACT_MAX) + 1 counts: no allocation). */
void staleness_add(staleness_acc_t *a, int64_t tau);
/* The exact q-quantile of the accumulated values (0 when empty). */
int64_t staleness_quantile(const staleness_acc_t *a, double q);
/* The mean of the accumulated values; NaN when there are none (not measured, not 0). */
double staleness_mean(const staleness_t *s);
/* The one JSON form of a summary:
 *   {"count","sum","sumsq","mean","p50","p95","max","overflow","hist":[9]}
 * written into buf without a newline; returns the length, or -1 when it does not fit.
 * With count 0 (no update applied yet) "mean", "p50", "p95" and "max" are null: the
 * statistics of no values are missing, never 0. */
int staleness_to_json(const staleness_t *s, char *buf, size_t len);
#define STALENESS_JSON_MAX 512 /* always enough for staleness_to_json */
/* The same object for jansson users (summary, coordinator API): a new reference, NULL
 * when out of memory. */
struct json_t;
struct json_t *staleness_json(const staleness_t *s);

#endif
