/* worker/algo_local_sgd.h - local-sgd's batch-weighted model average (algo_local_sgd.c),
 * shared with hier-bsp (algo_hier_bsp.c), compressed or not. */
#ifndef PACER_ALGO_LOCAL_SGD_H
#define PACER_ALGO_LOCAL_SGD_H

#include <mpi.h>

#include "worker.h"

/* Batch-weighted model average over comm (params and batch-norm buffers), weight = this
 * rank's samples since the last average; buf holds nparams + nbuffers + 1 floats.
 * With algorithm.compression (w->compress, kind other than none) the average goes
 * through lavg (local_compress_init; NULL without compression). Implemented in
 * algo_local_sgd.c, shared with hier-bsp. */
typedef struct {
    float *base;  /* (nparams) the model of the last average, the same on every rank */
    float *delta; /* (nparams + MODEL_GRAD_EXTRA) weight x (params - base), compressed */
} local_compress_t;
int local_compress_init(worker_t *w, local_compress_t **out);
void local_compress_free(local_compress_t *lc);
/* At an epoch end, after its average: rank 0 gathers the ranks' error feedback again for
 * the epoch end's checkpoint (collective over MPI_COMM_WORLD; nothing without PowerSGD
 * or checkpoints). */
void local_gather_errors(worker_t *w);
/* The batch-weighted average over comm (algo_local_sgd.c); returns 1, or 0 where comm
 * holds one rank (nothing averaged). */
int local_average(worker_t *w, MPI_Comm comm, float *buf, float weight, local_compress_t *lc);
/* weight x the parameters an average or a broadcast sends, into buf: every tensor's but
 * the frozen ones (model.h's no_update), which are equal on every rank and stay so only
 * unsent (an average of equal floats need not give them back bit for bit). Returns the
 * floats; local_unpack_params writes them back times inv. */
size_t local_pack_params(const model_t *m, float weight, float *buf);
void local_unpack_params(model_t *m, const float *buf, float inv);

#endif
