/* common/staleness.c - see staleness.h. */
#include "staleness.h"

#include <string.h>

static const int64_t LOW[STALENESS_BUCKETS] = { 0, 1, 2, 3, 4, 8, 16, 32, 64 };

int staleness_bucket(int64_t tau)
{
    if (tau < 0) tau = 0;
    int b = 0;
    while (b + 1 < STALENESS_BUCKETS && tau >= LOW[b + 1]) b++;
    return b;
}

int64_t staleness_bucket_low(int b) { return LOW[b]; }

void staleness_add(staleness_t *s, int64_t tau)
{
    if (tau < 0) tau = 0;
    s->count++;
    s->sum += tau;
    s->sumsq += tau * tau;
    if (tau > s->max) s->max = tau;
    s->hist[staleness_bucket(tau)]++;
}

void staleness_merge(staleness_t *into, const staleness_t *from)
{
    into->count += from->count;
    into->sum += from->sum;
    into->sumsq += from->sumsq;
    if (from->max > into->max) into->max = from->max;
    for (int b = 0; b < STALENESS_BUCKETS; b++) into->hist[b] += from->hist[b];
}

double staleness_mean(const staleness_t *s)
{
    return s->count ? (double)s->sum / (double)s->count : 0.0;
}

int64_t staleness_quantile(const staleness_t *s, double q)
{
    if (s->count == 0) return 0;
    /* rank of the q-th value, 1-based: ceil(q * count), at least 1 */
    int64_t want = (int64_t)(q * (double)s->count);
    if ((double)want < q * (double)s->count) want++;
    if (want < 1) want = 1;
    int64_t seen = 0;
    for (int b = 0; b < STALENESS_BUCKETS; b++) {
        seen += s->hist[b];
        if (seen >= want) return LOW[b] < s->max ? LOW[b] : s->max;
    }
    return s->max;
}
