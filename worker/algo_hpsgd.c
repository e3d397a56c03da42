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
 * gradients are one round stale (recorded as tau = 1 per merge).
 *
 * Ranks see a round complete at different steps, so at an epoch end one rank may have
 * started one round more than another (never more: a round completes on a rank only once
 * every rank has started it). The epoch end therefore first agrees on the largest count
 * (a blocking allreduce on MPI_COMM_WORLD, not on the round communicator), lets a rank
 * that is one behind start a catch-up round with its S, waits for everything in flight,
 * and finally merges everyone's leftover S in one synchronous round, so all ranks hold
 * the same model when rank 0 evaluates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

typedef struct {
    MPI_Comm comm;
    MPI_Request req, req2;
    int in_flight;
    long nstarted;      /* rounds started on the round communicator this epoch */
    int local_steps;    /* gradients summed into S since the last round started */
    int done_early;     /* the round in flight completed in a between-layer test */
    float *snap;        /* (nparams) global model at the start of the round */
    float *S;           /* (nparams) sum of mean gradients since the round started */
    float *R;           /* (nparams + 2) weighted round sum, then its reduction */
    float *R2;          /* (nparams + 2) the epoch end's catch-up round */
    double started;     /* when the in-flight allreduce was started */
    double flight_s;    /* total start-to-completion time of all rounds */
    double blocked_s;   /* time spent inside MPI_Test / MPI_Wait */
    long rounds;
    long merges;        /* over the job */
} hp_state_t;

/* Between layers: one MPI_Test on the round in flight so it advances during compute. */
static void hp_progress(void *ctx)
{
    worker_t *w = ctx;
    hp_state_t *st = w->algo_state;
    if (st->in_flight && !st->done_early) {
        int done = 0;
        MPI_Test(&st->req, &done, MPI_STATUS_IGNORE);
        if (done) st->done_early = 1;
    }
}

static int hp_init(worker_t *w)
{
    size_t n = w->model->nparams;
    hp_state_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->snap = malloc(n * sizeof(float));
    st->S = calloc(n, sizeof(float));
    st->R = malloc((n + 2) * sizeof(float));
    st->R2 = malloc((n + 2) * sizeof(float));
    if (!st->snap || !st->S || !st->R || !st->R2) {
        free(st->snap); free(st->S); free(st->R); free(st->R2); free(st);
        return -1;
    }
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->comm));
    w->algo_state = st;
    w->model->progress = hp_progress;
    w->model->progress_ctx = w;
    comm_broadcast_model(w, MPI_COMM_WORLD);
    memcpy(st->snap, w->model->params, n * sizeof(float));
    return 0;
}

/* Applies a reduced round R to the snapshot: w = w_snap stepped with the mean round
 * gradient, and the result becomes the new snapshot. */
static void merge(worker_t *w, hp_state_t *st, const float *R)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    memcpy(m->params, st->snap, n * sizeof(float));
    /* model->grads still holds this step's gradient, which the next round needs. */
    /* A = R / R[n] sums the gradients of k steps (k = R[n+1] / R[n], the batch-weighted
     * mean of the ranks' step counts). The merge is w = w_snap - eta * u with
     * u = mu^k * u + A (plus weight decay): with mu = 0 exactly ALGORITHMS.md's
     * w_snap - eta * A, with k = 1 exactly an ssgd step; the momentum's trust decays with
     * the round's length as DDC-ASGD's does with delay, because full momentum on a k-step,
     * one-round-stale sum overshoots (measured: divergence on LeNet-5 at k ~ 3). */
    const job_spec_t *s = w->spec;
    float k = R[n + 1] / R[n];
    if (k < 1) k = 1;
    float mu = powf((float)s->optimizer.momentum, k);
    sgd_update(n, m->params, R, m->momentum, w->lr, mu, s->optimizer.nesterov,
               (float)s->optimizer.weight_decay, 1.0f / R[n]);
    memcpy(st->snap, m->params, n * sizeof(float));
    staleness_add(&w->staleness, 1);
    st->rounds++;
    st->merges++;
}

/* R = weight * (S + g), R[n] = weight, R[n+1] = weight * steps; S = 0; start the
 * reduction. g = model->grads. */
static void start_round(worker_t *w, hp_state_t *st, float *R, MPI_Request *req, int include_grads)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    float wgt = (float)w->batch;
    for (size_t i = 0; i < n; i++) R[i] = wgt * (st->S[i] + (include_grads ? m->grads[i] : 0.0f));
    R[n] = wgt;
    R[n + 1] = wgt * (float)(st->local_steps + include_grads);
    st->local_steps = 0;
    memset(st->S, 0, n * sizeof(float));
    st->nstarted++;
    double t0 = clock_mono_s();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, R, (int)n + 2, MPI_FLOAT, MPI_SUM, st->comm, req));
    double dt = clock_mono_s() - t0;
    st->blocked_s += dt;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    st->started = t0;
    st->in_flight = 1;
}

static int test_done(worker_t *w, hp_state_t *st, MPI_Request *req, int wait)
{
    int done = 0;
    double t0 = clock_mono_s();
    if (req == &st->req && st->done_early) done = 1; /* the request is already freed */
    else if (wait) { MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE)); done = 1; }
    else MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (req == &st->req) st->done_early = 0;
    double t1 = clock_mono_s();
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
    if (st->in_flight && !test_done(w, st, &st->req, 0)) {
        /* Local step on the replica with the plain learning rate. */
        size_t n = m->nparams;
        float lr = w->lr;
        for (size_t i = 0; i < n; i++) {
            st->S[i] += m->grads[i];
            m->params[i] -= lr * m->grads[i];
        }
        st->local_steps++;
        return 0;
    }
    if (st->nstarted > 0) merge(w, st, st->R);
    start_round(w, st, st->R, &st->req, 1);
    return 0;
}

static int hp_epoch_end(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    long most = 0;
    double t0 = clock_mono_s();
    MPI_CHECK(MPI_Allreduce(&st->nstarted, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    w->stats.idle_s += clock_mono_s() - t0;
    int behind = st->nstarted < most;
    if (behind) start_round(w, st, st->R2, &st->req2, 0);
    if (st->in_flight) {
        test_done(w, st, &st->req, 1);
        merge(w, st, st->R);
    }
    if (behind) {
        test_done(w, st, &st->req2, 1);
        merge(w, st, st->R2);
    }
    /* Everyone has now started and merged the same rounds; merge the leftover S of every
     * rank in one last synchronous round. */
    start_round(w, st, st->R, &st->req, 0);
    test_done(w, st, &st->req, 1);
    merge(w, st, st->R);
    st->nstarted = 0;
    return 0;
}

static void hp_fini(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    if (!st) return;
    /* Stopped mid-epoch by --stop-after-steps (every rank after the same step): the
     * ranks may have started different numbers of rounds, so a plain wait on this rank's
     * round can wait for peers that never start it. The epoch end's catch-up matches them
     * (after the checkpoint, so what a resume sees is unchanged). */
    if (w->stop == 2 && w->use_mpi) hp_epoch_end(w);
    else if (st->in_flight && !st->done_early) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    w->model->progress = NULL;
    if (w->rank == 0 && st->flight_s > 0)
        fprintf(stderr, "hpsgd: %ld merges in %ld steps; allreduce in flight %.3f s, blocked %.3f s, hidden %.1f%%\n", st->merges, w->stats.steps,
                st->flight_s, st->blocked_s, 100.0 * (1.0 - st->blocked_s / st->flight_s));
    MPI_Comm_free(&st->comm);
    free(st->snap); free(st->S); free(st->R); free(st->R2);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hpsgd = {
    .name = "hpsgd", .init = hp_init, .step = hp_step, .epoch_end = hp_epoch_end,
    .evaluate = comm_evaluate_root, .fini = hp_fini,
};
