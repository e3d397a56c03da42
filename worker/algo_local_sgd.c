/* worker/algo_local_sgd.c - "local-sgd": every rank takes algorithm.local_steps (H) plain
 * local SGD steps, then all ranks replace their model by the batch-weighted average
 * w = sum(s_p w_p) / sum(s_p) (s_p = samples rank p computed since the last average), in
 * one allreduce of [s_p * params, s_p * buffers, s_p]. Momentum stays local.
 * Staleness: every local step records how many local steps the model it computed its
 * gradient at is away from the last average (0, 1, ..., H - 1), so the mean is exact
 * and (H - 1) / 2 for a whole number of rounds. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"

typedef struct {
    int since;    /* local steps since the last average */
    long samples; /* samples since the last average */
    float *buf;   /* (nparams + nbuffers + 1) */
} local_state_t;

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
    return 0;
}

/* Batch-weighted average of params and buffers over comm; weight = samples since the last
 * average. Shared with hier-bsp (which averages across group leaders). */
void local_average(worker_t *w, MPI_Comm comm, float *buf, float weight)
{
    model_t *m = w->model;
    size_t np = m->nparams, nb = m->nbuffers;
    int size = 1;
    if (w->use_mpi && comm != MPI_COMM_NULL) MPI_Comm_size(comm, &size);
    if (size == 1) return; /* the average of one model is itself (one process or one rank) */
    phase_mark(&w->phases, PHASE_OTHER);
    worker_model_to_host(w); /* a GPU rank's newest weights and batch-norm statistics */
    for (size_t i = 0; i < np; i++) buf[i] = weight * m->params[i];
    for (size_t i = 0; i < nb; i++) buf[np + i] = weight * m->buffers[i];
    buf[np + nb] = weight;
    phase_mark(&w->phases, PHASE_COMM); /* packing the average's buffer */
    comm_wait_peers(w, comm);
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)(np + nb + 1), MPI_FLOAT, MPI_SUM, comm));
    waitmark_leave(&w->wait);
    double dt = clock_mono_s() - t0;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    float inv = 1.0f / buf[np + nb];
    for (size_t i = 0; i < np; i++) m->params[i] = buf[i] * inv;
    for (size_t i = 0; i < nb; i++) m->buffers[i] = buf[np + i] * inv;
    worker_buffers_to_device(w);        /* the params go up with the next step (worker.h) */
    phase_mark(&w->phases, PHASE_COMM); /* the reduction and unpacking */
    phase_event(&w->phases, STEP_EV_MERGE);
}

static void average(worker_t *w, local_state_t *st)
{
    local_average(w, MPI_COMM_WORLD, st->buf, (float)st->samples);
    st->since = 0;
    st->samples = 0;
}

static int local_step(worker_t *w)
{
    local_state_t *st = w->algo_state;
    comm_replan(w, MPI_COMM_WORLD);
    worker_next_batch(w);
    worker_compute_grad(w, 1.0f);
    worker_apply_local_update(w);
    staleness_add(&w->staleness, st->since);
    st->since++;
    st->samples += w->batch;
    if (st->since >= w->spec->algorithm.local_steps) average(w, st);
    return 0;
}

static int local_epoch_end(worker_t *w)
{
    local_state_t *st = w->algo_state;
    if (st->since > 0) average(w, st);
    return 0;
}

static void local_fini(worker_t *w)
{
    local_state_t *st = w->algo_state;
    if (!st) return;
    free(st->buf);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_local_sgd = {
    .name = "local-sgd",
    .init = local_init,
    .step = local_step,
    .epoch_end = local_epoch_end,
    .evaluate = comm_evaluate_root,
    .fini = local_fini,
};
