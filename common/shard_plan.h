/* common/shard_plan.h - how a sharded job (algorithm.shard) splits the fused parameter
 * buffer over its ranks: the pure arithmetic the worker (worker/shard.c) and the memory
 * estimate (common/memest.c) share, so both count the same ranges.
 *
 * Rank r owns the contiguous range [bounds[r], bounds[r + 1]) of the nparams floats, of a
 * length proportional to its weight. Every boundary but the last (nparams) is a multiple
 * of SHARD_ALIGN floats: a range starts on a 64-byte boundary of the fused buffers (which
 * are at least that aligned), so the optimizer's vector loops run on a range as on the
 * whole buffer, and the rank's gradient, received at the start of the buffer, has the
 * same alignment as its parameters. */
#ifndef PACER_SHARD_PLAN_H
#define PACER_SHARD_PLAN_H

#include <stddef.h>

#include "spec.h"

#define SHARD_ALIGN 16
/* Stage 2's smallest bucket of the reduce-scatter at most (worker/shard.c: a sixteenth of
 * the model up to this many floats), which the memory estimate counts as resident. */
#define SHARD_BUCKET ((size_t)1 << 21)
/* Stage 2's backward pass goes on while at most this many buckets it finished are not yet
 * reduced (worker/shard.c: their transfer overlaps the next bucket's layers), so that
 * many more buckets may be resident besides the one the pass writes. */
#define SHARD_LAG 1

/* bounds (n + 1 entries) of n ranks with these weights (each > 0 and finite). Returns 0,
 * or -1 when n < 1 or a weight is not > 0 (bounds untouched). A rank whose share rounds
 * to nothing owns an empty range. */
int shard_plan(size_t nparams, const double *weights, int n, size_t *bounds);

/* The weights of s's split for a world of n ranks into out (n entries): even = all 1;
 * the spec's list when it has n entries, else even (an elastic restart on another world:
 * *fallback is set to 1, else 0); memory = mem[r] (each rank's available bytes; NULL, or
 * any entry not > 0: even for all). */
void shard_weights(const job_spec_t *s, int n, const double *mem, double *out, int *fallback);

#endif
