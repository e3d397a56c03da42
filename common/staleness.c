/* common/staleness.c - see staleness.h. */
#include "staleness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static const int64_t LOW[STALENESS_BUCKETS] = {0, 1, 2, 3, 4, 8, 16, 32, 64};

int staleness_bucket(int64_t tau)
{
    if (tau < 0) tau = 0;
    int b = 0;
    while (b + 1 < STALENESS_BUCKETS && tau >= LOW[b + 1]) b++;
    return b;
}

int64_t staleness_quantile(const staleness_acc_t *a, double q)
{
    const staleness_t *s = &a->s;
    if (s->count == 0) return 0;
    /* 1-based position of the q-th value: ceil(q * count), at least 1 */
    int64_t want = (int64_t)(q * (double)s->count);
    if ((double)want < q * (double)s->count) want++;
    if (want < 1) want = 1;
    int64_t seen = 0, top = s->max < STALENESS_EXACT_MAX ? s->max : STALENESS_EXACT_MAX;
    for (int64_t v = 0; v <= top; v++) {
        seen += a->counts[v];
        if (seen >= want) return v;
    }
    return STALENESS_EXACT_MAX + 1; /* among the overflow values */
}

void staleness_add(staleness_acc_t *a, int64_t tau)
{
    staleness_t *s = &a->s;
    if (tau < 0) tau = 0;
    s->count++;
    s->sum += tau;
    s->sumsq += tau * tau;
    if (tau > s->max) s->max = tau;
    s->hist[staleness_bucket(tau)]++;
    if (tau > STALENESS_EXACT_MAX) s->overflow++;
    else a->counts[tau]++;
    s->p50 = staleness_quantile(a, 0.5);
    s->p95 = staleness_quantile(a, 0.95);
}

double staleness_mean(const staleness_t *s) { return s->count ? (double)s->sum / (double)s->count : NAN; }

int staleness_to_json(const staleness_t *s, char *buf, size_t len)
{
    int o = s->count ? snprintf(buf, len,
                                "{\"count\":%lld,\"sum\":%lld,\"sumsq\":%lld,\"mean\":%.4f,\"p50\":%lld,\"p95\":%lld,"
                                "\"max\":%lld,\"overflow\":%lld,\"hist\":[",
                                (long long)s->count, (long long)s->sum, (long long)s->sumsq, staleness_mean(s),
                                (long long)s->p50, (long long)s->p95, (long long)s->max, (long long)s->overflow)
                     : snprintf(buf, len,
                                "{\"count\":0,\"sum\":%lld,\"sumsq\":%lld,\"mean\":null,\"p50\":null,\"p95\":null,"
                                "\"max\":null,\"overflow\":%lld,\"hist\":[",
                                (long long)s->sum, (long long)s->sumsq, (long long)s->overflow);
    for (int b = 0; b < STALENESS_BUCKETS && o >= 0 && (size_t)o < len; b++)
        o += snprintf(buf + o, len - (size_t)o, "%s%lld", b ? "," : "", (long long)s->hist[b]);
    if (o >= 0 && (size_t)o < len) o += snprintf(buf + o, len - (size_t)o, "]}");
    return o >= 0 && (size_t)o < len ? o : -1;
}

json_t *staleness_json(const staleness_t *s)
{
    char buf[STALENESS_JSON_MAX];
    return staleness_to_json(s, buf, sizeof buf) < 0 ? NULL : json_loads(buf, 0, NULL);
}
