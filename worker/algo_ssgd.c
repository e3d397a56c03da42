/* worker/algo_ssgd.c - "ssgd": synchronous data-parallel SGD, Horovod style
 * (ALGORITHMS.md section 1).
 *
 * Each rank computes the gradient of b_i * (its mean loss), i.e. b_i * g_i, straight out of
 * the backward pass (loss_scale = b_i), appends [b_i, b_i * loss_i, b_i |g_i|^2, 1] in the
 * spare slots of the fused gradient buffer (adaptive_pack), and one MPI_Allreduce(SUM) of
 * nparams + MODEL_GRAD_EXTRA floats gives sum(b_i g_i), sum(b_i), the global loss and what
 * the gradient noise scale needs (worker/adaptive.h). The update applies 1 / sum(b_i) as
 * the optimizer's gradient scale, so every rank makes the identical batch-weighted step
 * without another pass over the buffer. Dynamic batching, or the goodput planner,
 * re-plans at step boundaries; a rank the goodput planner leaves out contributes an
 * empty gradient. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"
#include "comm.h"
#include "comm_mpi.h"
#include "compress.h"
#include "shard.h"
#include "sim.h"
#include "step.h"

/* Benchmark mode (--comm-baseline): each step also times a raw MPI_Allreduce of the
 * same count on a scratch buffer, before or after the real one on alternate steps, so the
 * two see the same conditions; the bench compares their medians. The scratch buffer is
 * ssgd's algo_state (NULL without --comm-baseline). Right before it is reduced it gets a
 * copy of the gradient buffer (untimed), so it is as hot in cache as the real buffer,
 * which the backward pass (or the real allreduce) has just written: a cold buffer the
 * step never touched made the baseline slower than ssgd itself. */

static int ssgd_init(worker_t *w)
{
    /* the running statistics too: sync_batchnorm's sums are shifted by them, alike on
     * every rank */
    comm_broadcast_model(w, MPI_COMM_WORLD);
    comm_bn_sync_setup(w);
    /* Every kind, none included, goes through compress_allreduce, which measures the
     * payload; a resumed job's compressor exists already (worker_resume restored it). */
    char err[256];
    if (worker_compress_setup(w, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (shard_setup(w, err, sizeof err) != 0) { /* algorithm.shard: this rank's range and state */
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    w->notice_in_extras = 1; /* the notice rides in the all-reduce's extras (sigterm.h) */
    if (w->use_mpi && w->opts && w->opts->comm_baseline)
        w->algo_state = calloc(w->model->nparams + MODEL_GRAD_EXTRA, sizeof(float));
    return 0;
}

static void baseline_allreduce(worker_t *w)
{
    memcpy(w->algo_state, w->model->grads, (w->model->nparams + MODEL_GRAD_EXTRA) * sizeof(float));
    double t0 = clock_mono_s();
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, w->algo_state, (int)w->model->nparams + MODEL_GRAD_EXTRA, MPI_FLOAT, MPI_SUM,
                            MPI_COMM_WORLD));
    w->stats.step_baseline_s = clock_mono_s() - t0;
}

/* The step's stages (algo_step books each in its phase): re-plan, batch, gradient,
 * packing, the barrier, the all-reduce, the update. */

static int ssgd_plan(worker_t *w, algo_step_t *s)
{
    comm_replan(w, MPI_COMM_WORLD);
    adaptive_begin_step(w);
    return 0;
}

/* A rank the goodput planner leaves out computes nothing: its empty contribution is
 * booked with the packing, not as compute. */
static int ssgd_grad(worker_t *w, algo_step_t *s)
{
    shard_begin_step(w); /* algorithm.shard: buckets reduced while the backward pass goes on */
    s->loss = adaptive_compute_grad(w, (float)w->batch);
    return w->batch > 0 ? 0 : ALGO_SKIP;
}

static int ssgd_pack(worker_t *w, algo_step_t *s)
{
    shard_finish_grad(w); /* every rank's buckets, before the barrier (the next stage) */
    adaptive_pack(w, s->loss);
    return 0;
}

/* The sum of the ranks' b_i g_i and their extras; the update's scale 1 / sum(b_i). */
static int ssgd_reduce(worker_t *w, algo_step_t *s)
{
    model_t *m = w->model;
    if (w->shard) { /* algorithm.shard: a reduce-scatter, this rank's range reduced */
        s->sumsq = shard_reduce(w);
        s->scale = adaptive_reduced_sumsq(w, s->sumsq);
        return 0;
    }
    int baseline_first = w->algo_state && w->global_step % 2 == 0;
    if (baseline_first) baseline_allreduce(w);
    const double t_probe = clock_mono_s();  /* min_gain's probe: pacer-sim's charge included */
    sim_charge_compress(w, w->global_step); /* compress_allreduce books it as compress */
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    /* One process (workers: 1): the sum over one rank is the buffer (compressed all the
     * same, so that one process learns as the ranks would). */
    size_t bytes = compress_allreduce(w->compress, m->grads, w->global_step, w->use_mpi, MPI_COMM_WORLD);
    waitmark_leave(&w->wait);
    compress_observe(w->compress, w->global_step, clock_mono_s() - t_probe, w->use_mpi, MPI_COMM_WORLD);
    if (w->use_mpi) { /* one process sends nothing: the summary leaves the figure out */
        w->stats.comm_bytes += (double)bytes;
        w->stats.comm_steps++;
    }
    double dt = clock_mono_s() - t0;
    /* Before a checkpoint: rank 0 collects the ranks' error feedback (comm phase, not in
     * the all-reduce's time). */
    worker_compress_gather(w);
    if (w->algo_state && !baseline_first) baseline_allreduce(w);
    w->stats.step_comm_s = dt;
    w->stats.comm_s += dt;
    s->scale = adaptive_reduced(w);
    return 0;
}

static int ssgd_update(worker_t *w, algo_step_t *s)
{
    /* the update's own time for the goodput model: a sharded update's all-gather is
     * communication */
    const double t0 = clock_mono_s(), comm0 = w->stats.step_comm_s;
    if (w->shard) shard_update(w, s->scale, s->sumsq);
    else worker_apply_update(w, s->scale);
    adaptive_step_done(w, clock_mono_s() - t0 - (w->stats.step_comm_s - comm0));
    shard_gather_state(w, 0);
    staleness_add(&w->staleness, 0);
    return 0;
}

/* The epoch end precedes keep_best's and the final checkpoints: the sharded state is
 * gathered for them. */
static int ssgd_epoch_end(worker_t *w)
{
    shard_gather_state(w, 1);
    return 0;
}

static void ssgd_fini(worker_t *w)
{
    free(w->algo_state);
    w->algo_state = NULL;
    shard_free(w);
}

const algo_ops_t algo_ssgd = {
    .name = "ssgd",
    .init = ssgd_init,
    .step = {{PHASE_OTHER, ssgd_plan},
             {PHASE_DATA, worker_batch_stage},
             {PHASE_COMPUTE, ssgd_grad},
             {PHASE_COMM, ssgd_pack},
             {PHASE_WAIT, comm_wait_stage},
             {PHASE_COMM, ssgd_reduce},
             {PHASE_OPTIMIZER, ssgd_update}},
    .epoch_end = ssgd_epoch_end,
    .evaluate = comm_evaluate_root,
    .fini = ssgd_fini,
};
