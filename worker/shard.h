/* worker/shard.h - ZeRO-style sharding of ssgd (algorithm.shard; Rajbhandari et al., SC
 * 2020): each rank owns a contiguous range of the fused parameter buffer
 * (common/shard_plan.h) and keeps the optimizer state of that range only.
 *
 * A sharded step, in place of ssgd's one all-reduce and whole-buffer update:
 *   1. a reduce-scatter of the fused gradient with per-rank counts, bucket by bucket while
 *      the backward pass goes on (model_t's grad_done), each in chunks: each rank sends
 *      every other rank its part of that rank's range and sums its own range's parts in
 *      place, in the order of Open MPI's linear reduction (shard.c says why not
 *      MPI_Reduce_scatter). The chunks are non-blocking rounds, several in flight, that
 *      the pass moves on after each layer and the end of the pass waits for: the pass
 *      never stops for a peer, as plain ssgd's does not before its one all-reduce;
 *      frozen tensors' gradients (0) stay out of it (shard_t's pieces);
 *   2. one MPI_Allreduce of five doubles: the four extras of adaptive_pack (batch, loss,
 *      the noise scale's norms) and the sum of the ranks' squared range norms, the global
 *      gradient norm that clipping and the noise-scale estimate need;
 *   3. stage 2: the pages of model->grads outside the rank's range are given back to the
 *      kernel (madvise DONTNEED) as soon as their bucket is reduced: at most the range,
 *      the buckets the pass is writing and a page per bucket edge are resident at once
 *      (the next backward pass touches them again);
 *   4. the optimizer rule (SGD, momentum, AdamW, no-decay groups, clipping) over the
 *      range, with the state of the range;
 *   5. MPI_Allgatherv of the updated parameters (with frozen tensors, of the trainable
 *      ones only, packed).
 * Each element's update is the same arithmetic as the unsharded one; what can differ is
 * the order in which the ranks' gradients are summed (ssgd's all-reduce associates three
 * or more addends as Open MPI chooses; the reduce-scatter here always as its linear
 * reduction does) and the global norm's double sum (by ranges, then across them):
 * docs/JOB_SPEC.md says what the tests bound.
 *
 * Checkpoints stay one gathered file: rank 0, which writes them, holds the full-size
 * state buffers when checkpoints are on (its own range is a view into them) and gathers
 * the other ranks' ranges before each checkpoint the loop will write (every_steps, and
 * every epoch end, which precedes keep_best's and the final checkpoints). A resume reads
 * the whole state (every rank, as without sharding) and keeps its range: a checkpoint
 * resumes on any world size and split, sharded or not.
 */
#ifndef PACER_SHARD_H
#define PACER_SHARD_H

#include <jansson.h>
#include <mpi.h>
#include <stddef.h>

#include "worker.h"

/* One round of the reduce-scatter in flight: a chunk of every rank's part of one bucket. */
typedef struct shard_round {
    float *scratch;    /* n x chunk floats: rank i's part of this rank's chunk at i x chunk;
                        * this rank's own slot receives the sum */
    MPI_Request *reqs; /* (2n) the round's receives and sends */
    int nreq;
    size_t at, c; /* this rank's chunk: grads[at, at + c) (c 0: nothing to sum here) */
    int last_of;  /* the bucket whose last round this is, or -1 */
} shard_round_t;

typedef struct shard {
    int stage;            /* 1 or 2 */
    int n;                /* ranks the buffer is split over */
    size_t *bounds;       /* (n + 1) rank r owns [bounds[r], bounds[r + 1]) */
    int *counts, *displs; /* (n) the same as MPI counts */
    size_t lo, hi;        /* this rank's range */
    int states;           /* optimizer state buffers: 1 (SGD's momentum) or 2 (AdamW's moments) */
    float *mom, *mom2;    /* the state of [lo, hi) (mom2 NULL without AdamW) */
    int own_state;        /* mom/mom2 allocated here (else views into the model's buffers) */
    int full_at_root;     /* rank 0 keeps the full-size state for the checkpoints */
    long gathered_step;   /* rank 0: the global step of the last gather of the state */
    int fallback;         /* a list of weights not of the world's length: split evenly */
    double *weights;      /* (n) the split's weights, as used */
    /* The reduce-scatter's rounds in flight, a ring of SHARD_DEPTH (shard.c): the next
     * round starts as soon as a bucket is final, while the backward pass goes on, and the
     * oldest is summed once it arrived, so a rank never waits mid-pass for a peer. */
    shard_round_t *rounds;
    int head, inflight; /* the oldest round's slot, and how many are in flight */
    size_t chunk;       /* floats a round takes from each rank's part */
    size_t chunk_set;   /* PACER_SHARD_CHUNK's chunk for tests (shard.c), 0 when unset */
    size_t *from, *cnt; /* (n) each rank's part of the bucket being started */
    size_t most, off;   /* that bucket's largest part, and the next round's offset into the parts */
    /* Frozen tensors (model.h's no_update) are in no round: with any frozen, a bucket is
     * sent as its pieces, the trainable runs inside it (model_decay_run), one after the
     * other; a bucket without one takes one empty round. */
    int pieces;        /* 1: some tensor is frozen (else a piece is the whole bucket) */
    size_t piece_from; /* the bucket's next piece starts at or above this offset */
    size_t covered;    /* the step's floats the rounds took (what comm_bytes counts) */
    size_t ntrain;     /* the trainable floats (the bytes a world of one counts) */
    /* With pieces, the all-gather of step 5 takes the trainable floats only (a frozen
     * tensor is the same on every rank and never changes): rank r's trainable floats in
     * its range, tcounts[r] of them, lie at tdispls[r] in packed (ntrain floats), in the
     * order of the runs; NULL without pieces or in a world of one. */
    int *tcounts, *tdispls;
    float *packed;
    /* The buckets of the reduce-scatter, from the top of the buffer down, as the backward
     * pass finishes them: bucket k is [edge[k + 1], edge[k]), edge[0] = nparams and
     * edge[nbuckets] = 0; final_below[i]: after layer i's backward, [final_below[i],
     * nparams) is final. The same on every rank (one model), so every rank reduces the
     * same buckets in the same order. */
    size_t *edge, *final_below;
    int nbuckets;
    int ready;          /* the step's buckets the backward pass has finished (norm taken) */
    int posted;         /* the step's buckets whose every round has started */
    int reduced;        /* the step's buckets whose every round is summed (stage 2: released) */
    double local_sumsq; /* the step's |local gradient|^2, summed by buckets */
    double hook_s;      /* the step's reduce-scatter time up to the update */
} shard_t;

/* ssgd's init with algorithm.shard.stage > 0, after any resume: the split (collective over
 * MPI_COMM_WORLD for "memory"), this rank's state moved into a range-sized buffer and the
 * full-size ones freed (except rank 0's with checkpoints). 0, or -1 with err. */
int shard_setup(worker_t *w, char *err, size_t errlen);
void shard_free(worker_t *w);

/* Before the step's forward and backward: the model calls back after each layer's
 * backward, and each bucket the pass has finished is reduce-scattered right then (stage 2
 * gives back its pages outside the rank's range at once, so the whole gradient is never
 * resident). */
void shard_begin_step(worker_t *w);
/* After the forward and backward (or none, for a rank the planner leaves out), before
 * anything else collective: the buckets not yet reduced, then the model's callback off. */
void shard_finish_grad(worker_t *w);
/* Steps 2 and 3 above, after adaptive_pack; returns the global squared norm of the
 * summed gradient. Books the collectives' time and bytes as the step's communication. */
double shard_reduce(worker_t *w);
/* Steps 4 and 5: the update of this rank's range on grad_scale x its summed gradient, then
 * the parameters all-gathered. */
void shard_update(worker_t *w, float grad_scale, double sumsq);
/* When a checkpoint follows this step or this epoch end (at_epoch_end): rank 0 gathers
 * every rank's state into its full-size buffers (collective; nothing without
 * checkpoints). */
void shard_gather_state(worker_t *w, int at_epoch_end);
/* A notice to stop, agreed by every rank at this step (collective): rank 0 gathers every
 * rank's state, this step's, for the checkpoint the notice leaves, with or without
 * periodic checkpoints. */
void shard_gather_for_notice(worker_t *w);
/* Rank 0, right before it writes a checkpoint: says on stderr when the other ranks'
 * state in it is older than the weights (a checkpoint at a step the gather did not
 * foresee). */
void shard_before_checkpoint(const worker_t *w);
/* The summary's "shard": {stage, split, state_bytes_per_rank, gradient_bytes_per_rank}. */
json_t *shard_json(const worker_t *w);

#endif
