/* worker/algo_hier_bsp.c - "hier-bsp": hierarchical bulk-synchronous SGD (Cong and
 * Bhardwaj, ALGORITHMS.md section 9). Ranks form groups (the ranks of one host via
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or consecutive blocks of
 * algorithm.group_size); inside a group every step is synchronous SGD (the ssgd fused
 * allreduce on the group communicator); every algorithm.k_steps steps the group leaders
 * average their models with batch weights and broadcast the result inside their group.
 * Staleness: every step records the steps since the last average across groups (0 ..
 * k_steps - 1), as local-sgd does; inside a group the step itself is synchronous.
 *
 * algorithm.compression compresses the global averages among the leaders (local_average
 * with its delta and error feedback, algo_local_sgd.c; N = the leaders); the groups'
 * per-step all-reduces and the broadcasts stay uncompressed (a plain plan of their own,
 * which leaves the frozen tensors' gradients out as ssgd's does; a broadcast sends no
 * frozen weight either). Every rank holds a
 * compressor (a non-leader's error stays 0), so the checkpoints gather every rank's
 * error as ssgd's do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"
#include "algo_local_sgd.h"
#include "comm.h"
#include "comm_mpi.h"
#include "compress.h"
#include "step.h"

typedef struct {
    MPI_Comm group;   /* my group */
    MPI_Comm leaders; /* group leaders; MPI_COMM_NULL on the other ranks */
    int since;
    long group_samples;   /* samples the group computed since the last average */
    float *buf;           /* (nparams + nbuffers + 1) */
    local_compress_t *lc; /* the leaders' compressed averages; NULL without compression */
    compress_t *plain;    /* the group's per-step all-reduce (kind none) */
} hier_state_t;

static int gsize(MPI_Comm c)
{
    int n = 1;
    if (c != MPI_COMM_NULL) MPI_Comm_size(c, &n);
    return n;
}

static int hier_init(worker_t *w)
{
    hier_state_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->buf = malloc((w->model->nparams + w->model->nbuffers + 1) * sizeof(float));
    if (!st->buf) {
        free(st);
        return -1;
    }
    int gs = w->spec->algorithm.group_size;
    st->group = st->leaders = MPI_COMM_NULL;
    w->algo_state = st;
    if (!w->use_mpi) return 0; /* one process: one group of one rank, nothing to average */
    if (gs > 0) MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w->rank / gs, w->rank, &st->group));
    else MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &st->group));
    int grank;
    MPI_Comm_rank(st->group, &grank);
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, grank == 0 ? 0 : MPI_UNDEFINED, w->rank, &st->leaders));
    w->algo_state = st;
    comm_broadcast_model(w, MPI_COMM_WORLD);
    char err[256];
    if (compress_create(w->model, "none", 0, 0, 0, gsize(st->group), 0, &st->plain, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (local_compress_init(w, &st->lc) != 0) return -1;
    if (st->leaders != MPI_COMM_NULL) {
        int nleaders;
        MPI_Comm_size(st->leaders, &nleaders);
        compress_set_nranks(w->compress, nleaders);
    }
    return 0;
}

/* Returns 1 when the models were averaged and broadcast, 0 for one process. */
static int average(worker_t *w, hier_state_t *st)
{
    model_t *m = w->model;
    const int merged = st->group != MPI_COMM_NULL; /* one process: nothing to average or broadcast */
    if (merged) {
        /* Every rank: a GPU rank's host copy must be current before the broadcast
         * overwrites it, or its stale state would outlive the average (worker.h). */
        worker_model_to_host(w);
        if (st->leaders != MPI_COMM_NULL) local_average(w, st->leaders, st->buf, (float)st->group_samples, st->lc);
        double t0 = clock_mono_s();
        waitmark_enter(&w->wait, WAIT_BROADCAST, -1);
        size_t sent = m->nparams + m->nbuffers;
        if (w->any_frozen) { /* the trainable weights and the buffers in one message (x 1: exact) */
            const size_t n = local_pack_params(m, 1.0f, st->buf);
            memcpy(st->buf + n, m->buffers, m->nbuffers * sizeof(float));
            sent = n + m->nbuffers;
            MPI_CHECK(MPI_Bcast(st->buf, (int)sent, MPI_FLOAT, 0, st->group));
            local_unpack_params(m, st->buf, 1.0f);
            memcpy(m->buffers, st->buf + n, m->nbuffers * sizeof(float));
        } else {
            MPI_CHECK(MPI_Bcast(m->params, (int)m->nparams, MPI_FLOAT, 0, st->group));
            if (m->nbuffers) MPI_CHECK(MPI_Bcast(m->buffers, (int)m->nbuffers, MPI_FLOAT, 0, st->group));
        }
        waitmark_leave(&w->wait);
        if (gsize(st->group) > 1) w->stats.comm_bytes += (double)sent * sizeof(float);
        worker_buffers_to_device(w);
        double dt = clock_mono_s() - t0;
        w->stats.step_comm_s += dt;
        w->stats.comm_s += dt;
    }
    st->since = 0;
    st->group_samples = 0;
    return merged;
}

/* The step's stages (algo_step books each in its phase): re-plan, batch, gradient, the
 * group's all-reduce (packing, the barrier, the reduction), the update, every k_steps
 * steps the leaders' average and its broadcast. */

static int hier_grad(worker_t *w, algo_step_t *s)
{
    s->loss = worker_compute_grad(w, (float)w->batch);
    return 0;
}

static int hier_pack(worker_t *w, algo_step_t *s)
{
    adaptive_pack(w, s->loss);
    return 0;
}

static int hier_wait(worker_t *w, algo_step_t *s)
{
    const hier_state_t *st = w->algo_state;
    if (!w->use_mpi) return ALGO_SKIP;
    comm_barrier(w, st->group);
    return 0;
}

static int hier_reduce(worker_t *w, algo_step_t *s)
{
    hier_state_t *st = w->algo_state;
    model_t *m = w->model;
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    if (st->group != MPI_COMM_NULL) {
        /* the plain plan: the trainable gradients and the extras, frozen ones left out */
        const size_t bytes = compress_allreduce(st->plain, m->grads, w->global_step, 1, st->group);
        if (gsize(st->group) > 1) w->stats.comm_bytes += (double)bytes;
    }
    waitmark_leave(&w->wait);
    double dt = clock_mono_s() - t0;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    s->scale = adaptive_reduced(w); /* the group's noise scale, reported */
    return 0;
}

static int hier_update(worker_t *w, algo_step_t *s)
{
    hier_state_t *st = w->algo_state;
    worker_apply_update(w, s->scale);
    st->group_samples += (long)w->step_samples;
    staleness_add(&w->staleness, st->since);
    st->since++;
    return 0;
}

/* A step without an average skips: the rest is the loop's bookkeeping (other). */
static int hier_exchange(worker_t *w, algo_step_t *s)
{
    hier_state_t *st = w->algo_state;
    int merged = st->since >= w->spec->algorithm.k_steps && average(w, st);
    if (w->use_mpi) w->stats.comm_steps++; /* the summary's bytes per step */
    worker_compress_gather(w);
    return merged ? ALGO_MERGED : ALGO_SKIP;
}

static int hier_epoch_end(worker_t *w)
{
    hier_state_t *st = w->algo_state;
    if (st->since > 0) average(w, st);
    local_gather_errors(w);
    return 0;
}

static void hier_fini(worker_t *w)
{
    hier_state_t *st = w->algo_state;
    if (!st) return;
    if (st->leaders != MPI_COMM_NULL) MPI_Comm_free(&st->leaders);
    if (st->group != MPI_COMM_NULL) MPI_Comm_free(&st->group);
    free(st->buf);
    local_compress_free(st->lc);
    compress_free(st->plain);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hier_bsp = {
    .name = "hier-bsp",
    .init = hier_init,
    .step = {{PHASE_OTHER, comm_replan_stage},
             {PHASE_DATA, worker_batch_stage},
             {PHASE_COMPUTE, hier_grad},
             {PHASE_COMM, hier_pack},
             {PHASE_WAIT, hier_wait},
             {PHASE_COMM, hier_reduce},
             {PHASE_OPTIMIZER, hier_update},
             {PHASE_COMM, hier_exchange}},
    .epoch_end = hier_epoch_end,
    .evaluate = comm_evaluate_root,
    .fini = hier_fini,
};
