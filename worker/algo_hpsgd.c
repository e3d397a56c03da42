/* worker/algo_hpsgd.c - "hpsgd": synchronisation overlapped with training (Zhou et al.,
 * arXiv:2009.02701; ALGORITHMS.md section 8).
 *
 * Each rank keeps a replica w (model->params) it trains locally, a snapshot w_snap of the
 * global model, the sum S of the mean gradients computed since the last round started, and
 * an in-flight buffer R reduced by one MPI_Iallreduce on a private communicator (so its
 * order never mixes with the blocking collectives of re-planning and evaluation).
 *   every step: g = gradient at w;
 *     allreduce still in flight (MPI_Test): S += g; w -= eta * g   (local step)
 *     completed:  A = batch-weighted mean of the R_p;  w = SGD step of w_snap with A
 *                 (momentum and weight decay as in ssgd);  w_snap = w;
 *                 R = S + g;  S = 0;  start the next MPI_Iallreduce on R.
 * The number of local steps per round adapts to how long communication takes; merged
 * gradients are one round stale (recorded as tau = 1 per merge). At an epoch end the
 * round in flight is waited for and the leftover S is merged synchronously, so all ranks
 * hold the same model when rank 0 evaluates. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"

typedef struct {
    MPI_Comm comm;
    MPI_Request req;
    int in_flight;
    float *snap;        /* (nparams) global model at the start of the round */
    float *S;           /* (nparams) sum of mean gradients since the round started */
    float *R;           /* (nparams + 1) weighted round sum, then its reduction */
    double started;     /* when the in-flight allreduce was started */
    double flight_s;    /* total start-to-completion time of all rounds */
    double blocked_s;   /* time spent inside MPI_Test / MPI_Wait */
    long rounds;
} hp_state_t;

static int hp_init(worker_t *w)
{
    size_t n = w->model->nparams;
    hp_state_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->snap = malloc(n * sizeof(float));
    st->S = calloc(n, sizeof(float));
    st->R = malloc((n + 1) * sizeof(float));
    if (!st->snap || !st->S || !st->R) { free(st->snap); free(st->S); free(st->R); free(st); return -1; }
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->comm));
    w->algo_state = st;
    comm_broadcast_model(w, MPI_COMM_WORLD);
    memcpy(st->snap, w->model->params, n * sizeof(float));
    return 0;
}

/* Applies the reduced R to the snapshot: w = w_snap stepped with the mean round gradient. */
static void merge(worker_t *w, hp_state_t *st)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    memcpy(m->params, st->snap, n * sizeof(float));
    memcpy(m->grads, st->R, n * sizeof(float));
    worker_apply_update(w, 1.0f / st->R[n]);
    memcpy(st->snap, m->params, n * sizeof(float));
    staleness_add(&w->staleness, 1);
    st->rounds++;
}

/* R = weight * (S + g), R[n] = weight; S = 0; start the reduction. g = model->grads. */
static void start_round(worker_t *w, hp_state_t *st, int include_grads)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    float wgt = (float)w->batch;
    for (size_t i = 0; i < n; i++) st->R[i] = wgt * (st->S[i] + (include_grads ? m->grads[i] : 0.0f));
    st->R[n] = wgt;
    memset(st->S, 0, n * sizeof(float));
    double t0 = now_s();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, st->R, (int)n + 1, MPI_FLOAT, MPI_SUM, st->comm, &st->req));
    double dt = now_s() - t0;
    st->blocked_s += dt;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    st->started = t0;
    st->in_flight = 1;
}

static int test_done(worker_t *w, hp_state_t *st, int wait)
{
    int done = 0;
    double t0 = now_s();
    if (wait) { MPI_CHECK(MPI_Wait(&st->req, MPI_STATUS_IGNORE)); done = 1; }
    else MPI_CHECK(MPI_Test(&st->req, &done, MPI_STATUS_IGNORE));
    double t1 = now_s();
    st->blocked_s += t1 - t0;
    w->stats.step_comm_s += t1 - t0;
    w->stats.comm_s += t1 - t0;
    if (done) {
        st->in_flight = 0;
        st->flight_s += t1 - st->started;
    }
    return done;
}

static int hp_step(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    model_t *m = w->model;
    comm_replan(w, MPI_COMM_WORLD);
    worker_next_batch(w);
    worker_compute_grad(w, 1.0f);
    if (st->in_flight && !test_done(w, st, 0)) {
        /* Local step on the replica with the plain learning rate. */
        size_t n = m->nparams;
        float lr = w->lr;
        for (size_t i = 0; i < n; i++) {
            st->S[i] += m->grads[i];
            m->params[i] -= lr * m->grads[i];
        }
        return 0;
    }
    if (st->rounds > 0 || st->started > 0) merge(w, st);
    start_round(w, st, 1);
    return 0;
}

static int hp_epoch_end(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    if (st->in_flight) {
        test_done(w, st, 1);
        merge(w, st);
    }
    /* Merge what the replicas computed since then, synchronously, so every rank ends the
     * epoch with the same model. */
    start_round(w, st, 0);
    test_done(w, st, 1);
    merge(w, st);
    st->started = 0;
    st->rounds = 0;
    return 0;
}

static void hp_fini(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    if (!st) return;
    if (st->in_flight) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    if (w->rank == 0 && st->flight_s > 0)
        fprintf(stderr, "hpsgd: allreduce in flight %.3f s, blocked %.3f s, hidden %.1f%%\n",
                st->flight_s, st->blocked_s, 100.0 * (1.0 - st->blocked_s / st->flight_s));
    MPI_Comm_free(&st->comm);
    free(st->snap); free(st->S); free(st->R);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hpsgd = {
    .name = "hpsgd", .init = hp_init, .step = hp_step, .epoch_end = hp_epoch_end,
    .evaluate = comm_evaluate_root, .fini = hp_fini,
};
