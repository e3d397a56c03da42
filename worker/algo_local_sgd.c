/* worker/algo_local_sgd.c - "local-sgd": every rank takes algorithm.local_steps (H) plain
 * local SGD steps, then all ranks replace their model by the batch-weighted average
 * w = sum(s_p w_p) / sum(s_p) (s_p = samples rank p computed since the last average), in
 * one allreduce of [s_p * params, s_p * buffers, s_p]. Momentum stays local.
 * Staleness: every local step records how many local steps the model it computed its
 * gradient at is away from the last average (0, 1, ..., H - 1), so the mean is exact
 * and (H - 1) / 2 for a whole number of rounds.
 *
 * With algorithm.compression (worker/compress.h) the average sends, instead of the
 * weighted parameters, each rank's weighted parameter delta since the last average,
 * s_p (w_p - w_avg), through compress_allreduce as ssgd sends its gradient (its weight
 * s_p in the first extra slot, exact): PowerSGD keeps what it dropped of the delta in the
 * rank's error feedback, which joins the next round's delta. The new model is
 * w_avg + sum(s_p d_p)^ / sum(s_p); the batch-norm buffers (few floats) are averaged
 * uncompressed in a second all-reduce. Warm-up counts global steps as in ssgd. */
#include "algo_local_sgd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "comm_mpi.h"
#include "compress.h"
#include "sim.h"
#include "step.h"

typedef struct {
    int since;            /* local steps since the last average */
    long samples;         /* samples since the last average */
    float *buf;           /* (nparams + nbuffers + 1) */
    local_compress_t *lc; /* with algorithm.compression; NULL without */
} local_state_t;

int local_compress_init(worker_t *w, local_compress_t **out)
{
    *out = NULL;
    char err[256];
    if (worker_compress_setup(w, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (compress_kind(w->compress) == COMPRESS_NONE) return 0;
    const size_t np = w->model->nparams;
    local_compress_t *lc = calloc(1, sizeof *lc);
    if (lc) {
        lc->base = malloc(np * sizeof(float));
        lc->delta = calloc(np + MODEL_GRAD_EXTRA, sizeof(float));
    }
    if (!lc || !lc->base || !lc->delta) {
        local_compress_free(lc);
        fprintf(stderr, "algorithm.compression: out of memory for the average's delta (%zu floats)\n", 2 * np);
        return -1;
    }
    /* After comm_broadcast_model: every rank starts from the same base. */
    worker_model_to_host(w);
    memcpy(lc->base, w->model->params, np * sizeof(float));
    *out = lc;
    return 0;
}

void local_compress_free(local_compress_t *lc)
{
    if (!lc) return;
    free(lc->base);
    free(lc->delta);
    free(lc);
}

/* The compressed average's collectives (see the top): returns the bytes handed to MPI. */
static size_t compressed_average(worker_t *w, MPI_Comm comm, float *buf, float weight, local_compress_t *lc)
{
    model_t *m = w->model;
    const size_t np = m->nparams, nb = m->nbuffers;
    float *d = lc->delta, *base = lc->base;
    for (size_t i = 0; i < np; i++) d[i] = weight * (m->params[i] - base[i]);
    d[np] = weight;
    for (int k = 1; k < MODEL_GRAD_EXTRA; k++) d[np + k] = 0.0f;
    comm_wait_peers(w, comm);
    const double t_probe = clock_mono_s();  /* min_gain's probe: pacer-sim's charge included */
    sim_charge_compress(w, w->global_step); /* booked as compress by compress_allreduce's first mark */
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    size_t bytes = compress_allreduce(w->compress, d, w->global_step, 1, comm);
    compress_observe(w->compress, w->global_step, clock_mono_s() - t_probe, 1, comm);
    for (size_t i = 0; i < nb; i++) buf[i] = weight * m->buffers[i];
    if (nb) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)nb, MPI_FLOAT, MPI_SUM, comm));
    bytes += nb * sizeof(float);
    waitmark_leave(&w->wait);
    double dt = clock_mono_s() - t0;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    const float inv = 1.0f / d[np];
    for (size_t i = 0; i < np; i++) base[i] = m->params[i] = base[i] + d[i] * inv;
    for (size_t i = 0; i < nb; i++) m->buffers[i] = buf[i] * inv;
    return bytes;
}

static int local_init(worker_t *w)
{
    local_state_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->buf = malloc((w->model->nparams + w->model->nbuffers + 1) * sizeof(float));
    if (!st->buf) {
        free(st);
        return -1;
    }
    w->algo_state = st;
    comm_broadcast_model(w, MPI_COMM_WORLD);
    return local_compress_init(w, &st->lc);
}

size_t local_pack_params(const model_t *m, float weight, float *buf)
{
    size_t k = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if (x->is_buffer || x->no_update) continue;
        const float *p = m->params + x->offset;
        for (size_t i = 0; i < x->count; i++) buf[k++] = weight * p[i];
    }
    return k;
}

void local_unpack_params(model_t *m, const float *buf, float inv)
{
    size_t k = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *x = &m->tensors[t];
        if (x->is_buffer || x->no_update) continue;
        float *p = m->params + x->offset;
        for (size_t i = 0; i < x->count; i++) p[i] = buf[k++] * inv;
    }
}

/* Batch-weighted average of params and buffers over comm; weight = samples since the last
 * average. Shared with hier-bsp (which averages across group leaders). */
int local_average(worker_t *w, MPI_Comm comm, float *buf, float weight, local_compress_t *lc)
{
    model_t *m = w->model;
    size_t np = m->nparams, nb = m->nbuffers;
    int size = 1;
    if (w->use_mpi && comm != MPI_COMM_NULL) MPI_Comm_size(comm, &size);
    if (size == 1) return 0; /* the average of one model is itself (one process or one rank) */
    worker_model_to_host(w); /* a GPU rank's newest weights and batch-norm statistics */
    if (lc) {
        w->stats.comm_bytes += (double)compressed_average(w, comm, buf, weight, lc);
        worker_buffers_to_device(w);
        return 1;
    }
    if (w->any_frozen) np = local_pack_params(m, weight, buf);
    else
        for (size_t i = 0; i < np; i++) buf[i] = weight * m->params[i];
    for (size_t i = 0; i < nb; i++) buf[np + i] = weight * m->buffers[i];
    buf[np + nb] = weight;
    comm_wait_peers(w, comm);
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)(np + nb + 1), MPI_FLOAT, MPI_SUM, comm));
    waitmark_leave(&w->wait);
    w->stats.comm_bytes += (double)(np + nb + 1) * sizeof(float);
    double dt = clock_mono_s() - t0;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    float inv = 1.0f / buf[np + nb];
    if (w->any_frozen) local_unpack_params(m, buf, inv);
    else
        for (size_t i = 0; i < np; i++) m->params[i] = buf[i] * inv;
    for (size_t i = 0; i < nb; i++) m->buffers[i] = buf[np + i] * inv;
    worker_buffers_to_device(w); /* the params go up with the next step (worker.h) */
    return 1;
}

/* The epoch end's average comes after the last step's worker_compress_gather: gather
 * again, so that the epoch end's checkpoint carries the errors it left. */
void local_gather_errors(worker_t *w)
{
    size_t ne;
    compress_error(w->compress, &ne);
    if (ne > 0 && w->spec->checkpoint.every_steps > 0)
        compress_gather_errors(w->compress, w->use_mpi, MPI_COMM_WORLD, w->global_step);
}

static int average(worker_t *w, local_state_t *st)
{
    int merged = local_average(w, MPI_COMM_WORLD, st->buf, (float)st->samples, st->lc);
    st->since = 0;
    st->samples = 0;
    return merged;
}

/* The step's stages (algo_step books each in its phase): re-plan, batch, gradient, the
 * local update, every H steps the average. */

static int local_grad(worker_t *w, algo_step_t *s)
{
    s->loss = worker_compute_grad(w, 1.0f);
    return 0;
}

static int local_update(worker_t *w, algo_step_t *s)
{
    local_state_t *st = w->algo_state;
    worker_apply_local_update(w);
    staleness_add(&w->staleness, st->since);
    st->since++;
    st->samples += w->batch;
    return 0;
}

/* A step without an average skips: the rest is the loop's bookkeeping (other). */
static int local_exchange(worker_t *w, algo_step_t *s)
{
    local_state_t *st = w->algo_state;
    int merged = st->since >= w->spec->algorithm.local_steps && average(w, st);
    if (w->use_mpi) w->stats.comm_steps++; /* the summary's bytes per step: averages' bytes over steps */
    worker_compress_gather(w);
    return merged ? ALGO_MERGED : ALGO_SKIP;
}

static int local_epoch_end(worker_t *w)
{
    local_state_t *st = w->algo_state;
    if (st->since > 0) average(w, st);
    local_gather_errors(w);
    return 0;
}

static void local_fini(worker_t *w)
{
    local_state_t *st = w->algo_state;
    if (!st) return;
    free(st->buf);
    local_compress_free(st->lc);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_local_sgd = {
    .name = "local-sgd",
    .init = local_init,
    .step = {{PHASE_OTHER, comm_replan_stage},
             {PHASE_DATA, worker_batch_stage},
             {PHASE_COMPUTE, local_grad},
             {PHASE_OPTIMIZER, local_update},
             {PHASE_COMM, local_exchange}},
    .epoch_end = local_epoch_end,
    .evaluate = comm_evaluate_root,
    .fini = local_fini,
};
