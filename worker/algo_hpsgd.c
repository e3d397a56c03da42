/* worker/algo_hpsgd.c - "hpsgd": synchronisation overlapped with training (Zhou et al.,
 * arXiv:2009.02701; ALGORITHMS.md section 8).
 *
 * Each rank keeps a replica w (model->params) it trains locally, the global model G (the
 * same on every rank), the point B where its current window of local steps began, and an
 * in-flight buffer R reduced by one MPI_Iallreduce on a private communicator (so its
 * order never mixes with the blocking collectives of re-planning and evaluation).
 *   every step: g = gradient at w;  w = ssgd's update of w with g (momentum, nesterov,
 *               weight decay and clipping as in ssgd; the momentum buffer is the rank's);
 *     allreduce still in flight (MPI_Test): nothing more (the window grows);
 *     completed:  G += A, the batch-weighted mean of the windows the reduction summed;
 *                 d = w - B (this rank's window, not merged yet);  R = d;
 *                 w = G + d;  B = w;  start the next MPI_Iallreduce on R.
 * See merge() for why this is the merge, and how it differs from ALGORITHMS.md's. The
 * number of local steps per round adapts to how long communication takes; merged windows
 * are one round stale (recorded as tau = 1 per merge).
 *
 * Ranks see a round complete at different steps, so at an epoch end one rank may have
 * started one round more than another (never more: a round completes on a rank only once
 * every rank has started it). The epoch end therefore first agrees on the largest count
 * (a blocking allreduce on MPI_COMM_WORLD, not on the round communicator), lets a rank
 * that is one behind start a catch-up round with its window, waits for everything in
 * flight, and finally merges everyone's last window in one synchronous round, so all
 * ranks hold the same model (w = G) when rank 0 evaluates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

typedef struct {
    MPI_Comm comm;
    MPI_Request req, req2;
    int in_flight;
    long nstarted;      /* rounds started on the round communicator this epoch */
    int local_steps;    /* local steps in the current window */
    int done_early;     /* the round in flight completed in a between-layer test */
    float *snap;        /* (nparams) G, the global model */
    float *S;           /* (nparams) B, where the current window began */
    float *R;           /* (nparams + 2) weighted window displacement, then its reduction */
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
    st->comm = MPI_COMM_NULL;
    if (w->use_mpi) MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->comm));
    w->algo_state = st;
    w->model->progress = hp_progress;
    w->model->progress_ctx = w;
    comm_broadcast_model(w, MPI_COMM_WORLD);
    memcpy(st->snap, w->model->params, n * sizeof(float));
    memcpy(st->S, w->model->params, n * sizeof(float));
    return 0;
}

/* Merges a reduced round: G += the batch-weighted mean of the ranks' window
 * displacements.
 *
 * Why (docs/ARCHITECTURE.md, "Merge in hpsgd"). In steady state ssgd moves the model
 * eta d / (1 - mu) per step, d the mean gradient with weight decay. Here every local step
 * is ssgd's own update (momentum, per-step weight decay) on the rank's gradient, so in
 * steady state a replica moves eta d_p / (1 - mu) per step, and G, which advances by the
 * batch-weighted mean of the ranks' displacements, moves eta d / (1 - mu) per step: the
 * steady-state step of ssgd. With mu = 0 a window's displacement is -eta times its sum
 * of gradients, so the merge is ALGORITHMS.md's w_snap - eta A. Where this differs from
 * ALGORITHMS.md (and the paper's code), which drops the replica's drift at a merge
 * (w = w_snap - eta A): the replica keeps the part of its progress that G does not hold
 * yet, its own current window (w = G + d), as CoCoD-SGD (Shen et al., IJCAI 2019) does.
 * Dropping it evaluates every gradient at a point one round behind, even on one rank,
 * and momentum 0.9 on one-round-stale gradients diverged on LeNet-5 (measured: 0.10 test
 * accuracy; the earlier remedy, momentum mu^k on the k-step gradient sum, converged but
 * moved eta k d / (1 - mu^k) per round, half of ssgd's at mu = 0.9 and k = 2: 0.82 against
 * ssgd's 0.89). Kept, one rank is exactly ssgd (G + d is the replica's own trajectory), and
 * with N ranks only the other ranks' windows arrive a round late. */
static void merge(worker_t *w, hp_state_t *st, const float *R)
{
    size_t n = w->model->nparams;
    float inv = R[n] > 0 ? 1.0f / R[n] : 0.0f;
    for (size_t i = 0; i < n; i++) st->snap[i] += inv * R[i];
    if (R[n + 1] > 0) staleness_add(&w->staleness, 1);
    st->rounds++;
    st->merges++;
    phase_mark(&w->phases, PHASE_OPTIMIZER);   /* the merge is a model update */
    phase_event(&w->phases, STEP_EV_MERGE);
}

/* R = weight * d with d = w - B (this rank's window), R[n] = weight, R[n+1] = weight *
 * steps; the replica becomes G + d (G as merged so far) and the next window starts
 * there; then the reduction starts. */
static void start_round(worker_t *w, hp_state_t *st, float *R, MPI_Request *req)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    float wgt = (float)w->batch;
    phase_mark(&w->phases, PHASE_OTHER);
    /* A GPU rank's local steps ran on the device (worker_apply_local_update); its window is
     * read and its replica rewritten on the host, which the next step uploads (worker.h). */
    worker_model_to_host(w);
    float *p = m->params, *B = st->S, *G = st->snap;
    for (size_t i = 0; i < n; i++) {
        const float d = p[i] - B[i];
        R[i] = wgt * d;
        p[i] = G[i] + d;
        B[i] = p[i];
    }
    R[n] = wgt;
    R[n + 1] = wgt * (float)st->local_steps;
    st->local_steps = 0;
    st->nstarted++;
    phase_mark(&w->phases, PHASE_OPTIMIZER);   /* the replica moves to G + d */
    double t0 = clock_mono_s();
    if (!w->use_mpi) {
        /* One process (workers: 1): the reduction of one rank is R, complete at once;
         * test_done finds it done as a round that completed between layers. */
        st->started = t0;
        st->in_flight = 1;
        st->done_early = 1;
        return;
    }
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, R, (int)n + 2, MPI_FLOAT, MPI_SUM, st->comm, req));
    phase_mark(&w->phases, PHASE_COMM);
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
    phase_mark(&w->phases, PHASE_OTHER);
    double t0 = clock_mono_s();
    if (req == &st->req && st->done_early) done = 1; /* the request is already freed */
    else if (wait) { MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE)); done = 1; }
    else MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (req == &st->req) st->done_early = 0;
    phase_mark(&w->phases, PHASE_COMM);
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
    comm_replan(w, MPI_COMM_WORLD);
    worker_next_batch(w);
    worker_compute_grad(w, 1.0f);
    worker_apply_local_update(w);   /* the local step: ssgd's update on this rank's gradient */
    st->local_steps++;
    if (st->in_flight && !test_done(w, st, &st->req, 0)) return 0;
    if (st->nstarted > 0) merge(w, st, st->R);
    start_round(w, st, st->R, &st->req);
    return 0;
}

static int hp_epoch_end(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    long most = st->nstarted;
    double t0 = clock_mono_s();
    if (w->use_mpi) MPI_CHECK(MPI_Allreduce(&st->nstarted, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    w->stats.idle_s += clock_mono_s() - t0;
    int behind = st->nstarted < most;
    if (behind) start_round(w, st, st->R2, &st->req2);
    if (st->in_flight) {
        test_done(w, st, &st->req, 1);
        merge(w, st, st->R);
    }
    if (behind) {
        test_done(w, st, &st->req2, 1);
        merge(w, st, st->R2);
    }
    /* Everyone has now started and merged the same rounds; merge every rank's last window
     * in one synchronous round, after which every replica is G. */
    start_round(w, st, st->R, &st->req);
    test_done(w, st, &st->req, 1);
    merge(w, st, st->R);
    memcpy(w->model->params, st->snap, w->model->nparams * sizeof(float));
    memcpy(st->S, st->snap, w->model->nparams * sizeof(float));
    st->nstarted = 0;
    return 0;
}

static void hp_fini(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    if (!st) return;
    if (st->in_flight && !st->done_early) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    w->model->progress = NULL;
    if (w->rank == 0 && st->flight_s > 0)
        fprintf(stderr, "hpsgd: %ld merges in %ld steps; allreduce in flight %.3f s, blocked %.3f s, hidden %.1f%%\n", st->merges, w->stats.steps,
                st->flight_s, st->blocked_s, 100.0 * (1.0 - st->blocked_s / st->flight_s));
    if (st->comm != MPI_COMM_NULL) MPI_Comm_free(&st->comm);
    free(st->snap); free(st->S); free(st->R); free(st->R2);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hpsgd = {
    .name = "hpsgd", .init = hp_init, .step = hp_step, .epoch_end = hp_epoch_end,
    .evaluate = comm_evaluate_root, .fini = hp_fini,
};
