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
#include "train.h"

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
    /* What overlap costs and saves (the summary line at the end). On one host Open MPI
     * moves and sums the data inside whatever MPI call the rank is in, so the time
     * inside MPI is work, not only waiting: */
    double mpi_s;       /* time inside every MPI call of the rounds (start, the tests
                           between layers and in the step, waits) */
    double wait_s;      /* of which inside MPI_Wait: blocked, nothing else to do */
    /* --comm-baseline with --hpsgd-round-steps (every rank starts the same rounds at the
     * same steps): a blocking MPI_Allreduce of the same size per round, on a copy of the
     * round buffer just written (same cache state), after an untimed barrier. */
    MPI_Comm bcomm;
    float *base;        /* (nparams + 2) */
    double base_s;
    long base_rounds;
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
        double t0 = now_s();
        MPI_Test(&st->req, &done, MPI_STATUS_IGNORE);
        st->mpi_s += now_s() - t0;
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
    if (w->opts && w->opts->comm_baseline) {
        /* Only with a fixed round schedule do all ranks start the same rounds in the same
         * order, which the blocking baseline collective needs. */
        if (w->opts->hpsgd_round_steps <= 0) {
            if (w->rank == 0) fprintf(stderr, "hpsgd: --comm-baseline needs --hpsgd-round-steps; no baseline\n");
        } else if ((st->base = malloc((n + 2) * sizeof(float))) != NULL) {
            MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->bcomm));
        }
    }
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
    if (st->base && R == st->R) {
        MPI_CHECK(MPI_Barrier(st->bcomm));
        memcpy(st->base, R, (n + 2) * sizeof(float));
        double b0 = now_s();
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, st->base, (int)n + 2, MPI_FLOAT, MPI_SUM, st->bcomm));
        st->base_s += now_s() - b0;
        st->base_rounds++;
    }
    double t0 = now_s();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, R, (int)n + 2, MPI_FLOAT, MPI_SUM, st->comm, req));
    double dt = now_s() - t0;
    st->mpi_s += dt;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
    st->in_flight = 1;
}

static int test_done(worker_t *w, hp_state_t *st, MPI_Request *req, int wait)
{
    int done = 0;
    double t0 = now_s();
    if (req == &st->req && st->done_early) done = 1; /* the request is already freed */
    else if (wait) { MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE)); done = 1; }
    else MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (req == &st->req) st->done_early = 0;
    double t1 = now_s();
    st->mpi_s += t1 - t0;
    if (wait) st->wait_s += t1 - t0;
    w->stats.step_comm_s += t1 - t0;
    w->stats.comm_s += t1 - t0;
    if (done) st->in_flight = 0;
    return done;
}

static int hp_step(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    model_t *m = w->model;
    comm_replan(w, MPI_COMM_WORLD);
    worker_next_batch(w);
    worker_compute_grad(w, 1.0f);
    /* Test hook (--hpsgd-round-steps N): the round merges after exactly N local steps,
     * waiting for it if need be, so the schedule does not depend on MPI_Test timing. */
    int fixed = w->opts ? w->opts->hpsgd_round_steps : 0;
    int done = !st->in_flight || (fixed > 0 ? st->local_steps + 1 >= fixed && test_done(w, st, &st->req, 1)
                                            : test_done(w, st, &st->req, 0));
    if (!done) {
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
    double t0 = now_s();
    MPI_CHECK(MPI_Allreduce(&st->nstarted, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    w->stats.idle_s += now_s() - t0;
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
    if (st->in_flight && !st->done_early) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    w->model->progress = NULL;
    if (w->rank == 0 && st->rounds > 0) {
        fprintf(stderr, "hpsgd: %ld merges in %ld steps; in MPI %.3f s (%.0f us per merge), of which waiting in "
                "MPI_Wait %.3f s", st->merges, w->stats.steps, st->mpi_s, 1e6 * st->mpi_s / (double)st->rounds,
                st->wait_s);
        if (st->base_rounds > 0)
            fprintf(stderr, "; a blocking allreduce of the same %ld rounds: %.3f s (%.0f us per round), so overlap "
                    "saves %.1f%% of it", st->base_rounds, st->base_s, 1e6 * st->base_s / (double)st->base_rounds,
                    100.0 * (1.0 - (st->mpi_s / (double)st->rounds) / (st->base_s / (double)st->base_rounds)));
        fprintf(stderr, "\n");
    }
    MPI_Comm_free(&st->comm);
    if (st->base) MPI_Comm_free(&st->bcomm);
    free(st->snap); free(st->S); free(st->R); free(st->R2); free(st->base);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hpsgd = {
    .name = "hpsgd", .init = hp_init, .step = hp_step, .epoch_end = hp_epoch_end,
    .evaluate = comm_evaluate_root, .fini = hp_fini,
};
