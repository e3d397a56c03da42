/* common/shard_plan.c - see shard_plan.h. */
#include "shard_plan.h"

#include <math.h>
#include <string.h>

int shard_plan(size_t nparams, const double *weights, int n, size_t *bounds)
{
    if (n < 1) return -1;
    double total = 0;
    for (int r = 0; r < n; r++) {
        if (!(weights[r] > 0) || !isfinite(weights[r])) return -1;
        total += weights[r];
    }
    double cum = 0;
    bounds[0] = 0;
    for (int r = 1; r < n; r++) {
        cum += weights[r - 1];
        /* the nearest multiple of SHARD_ALIGN to the exact share, kept in order and in the buffer */
        double x = (double)nparams * (cum / total) / SHARD_ALIGN;
        size_t b = (size_t)llround(x) * SHARD_ALIGN;
        if (b > nparams) b = nparams / SHARD_ALIGN * SHARD_ALIGN;
        if (b < bounds[r - 1]) b = bounds[r - 1];
        bounds[r] = b;
    }
    bounds[n] = nparams;
    return 0;
}

void shard_weights(const job_spec_t *s, int n, const double *mem, double *out, int *fallback)
{
    *fallback = 0;
    const int list = strcmp(s->algorithm.shard.split, "weights") == 0;
    int memory = strcmp(s->algorithm.shard.split, "memory") == 0 && mem;
    for (int r = 0; memory && r < n; r++)
        if (!(mem[r] > 0) || !isfinite(mem[r])) memory = 0; /* one unknown: even for all */
    if (list && s->algorithm.shard.nweights != n) *fallback = 1;
    for (int r = 0; r < n; r++) {
        out[r] = 1.0;
        if (list && !*fallback) out[r] = s->algorithm.shard.weights[r];
        if (memory) out[r] = mem[r];
    }
}
