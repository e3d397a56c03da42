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
 * ranks hold the same model (w = G) when rank 0 evaluates.
 *
 * With algorithm.compression (worker/compress.h) a round sends R through the compressor
 * as local-sgd sends its average's delta: R is the rank's weighted window with its
 * weight and steps exact in the extras, and the rank's error feedback keeps what PowerSGD
 * dropped for the next round. The round's collectives stay non-blocking and chained on
 * the round communicator: the first messages (PowerSGD's P and the uncompressed rest, or
 * bf16's words and extras) start as MPI_Iallreduce; once they complete (seen between
 * layers, or at a step's end) P is orthogonalised, Q computed and Q's MPI_Iallreduce
 * started right there; once that completes the step unpacks R and merges as before. Every rank
 * starts the same collectives in the same order (P_k, Q_k, P_k+1, ...), which MPI
 * requires of non-blocking collectives; a round completes on a rank only once every rank
 * has started its Q, so a rank is still at most one round ahead, and at the epoch end a
 * rank that is behind first finishes its round in flight (its Q is already started
 * everywhere) and then starts its catch-up round from the same buffers. Warm-up steps
 * are refused with hpsgd (common/spec.c): ranks start a round at different global steps,
 * so a step count cannot tell them all alike whether it is compressed.
 *
 * Frozen tensors (model.h's no_update) are in no round: their window is 0 (no update
 * moves them), so a plain round packs the trainable floats of R to its front (the
 * optimizer's runs, model_decay_run) and sends them and the 2 extras; the merge reads the
 * packed window, and G's, B's and the replica's frozen floats stay their initial values
 * bit for bit. A compressed round leaves them out through the compressor's plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo_local_sgd.h"
#include "comm.h"
#include "comm_mpi.h"
#include "compress.h"
#include "sim.h"
#include "step.h"

typedef struct {
    MPI_Comm comm;
    MPI_Request req, req2;
    int in_flight;
    long nstarted;   /* rounds started on the round communicator this epoch */
    int local_steps; /* local steps in the current window */
    int done_early;  /* the round in flight completed in a between-layer test */
    float *snap;     /* (nparams) G, the global model */
    float *S;        /* (nparams) B, where the current window began */
    float *R;        /* (nparams + MODEL_GRAD_EXTRA) weighted window displacement, its weight
                        and weighted steps (the rest 0), then its reduction; compressed:
                        compress's grads */
    float *R2;       /* (nparams + 2) the epoch end's catch-up round */
    /* What overlap costs and saves (the summary line at the end). On one host Open MPI
     * moves and sums the data inside whatever MPI call the rank is in, so the time
     * inside MPI is work, not only waiting: */
    double mpi_s;  /* time inside every MPI call of the rounds (start, the tests
                           between layers and in the step, waits) */
    double wait_s; /* of which inside MPI_Wait: blocked, nothing else to do */
    /* --comm-baseline with --hpsgd-round-steps (every rank starts the same rounds at the
     * same steps): a blocking MPI_Allreduce of the same size per round, on a copy of the
     * round buffer just written (same cache state), after an untimed barrier. */
    MPI_Comm bcomm;
    float *base; /* (nparams + 2) */
    double base_s;
    long base_rounds;
    long rounds;
    long merges;  /* over the job */
    size_t nsend; /* the window floats a round sends before its 2 extras: the trainable
                     ones packed (plain, some frozen), else nparams (R as compress's grads) */
    /* The compressed round in flight (w->compress; see the top): its stage, that stage's
     * requests, and (done_early) whether the between-layer test saw them complete. */
    enum { STAGE_FIRST = 1, STAGE_Q, STAGE_REDUCED /* all summed, not unpacked yet */ } stage;
    MPI_Request creq[2];
    int ncreq;
    compress_msg_t msgs[2]; /* the first stage's messages, from encode_round to start_reduction */
    int nmsgs;
} hp_state_t;

static void start_q_between_layers(worker_t *w, hp_state_t *st);

/* Between layers: one MPI_Test on the round in flight so it advances during compute; a
 * compressed round whose first stage completed starts its Q stage here, so that a round
 * can complete within one step as an uncompressed one does. */
static void hp_progress(void *ctx)
{
    worker_t *w = ctx;
    hp_state_t *st = w->algo_state;
    if (st->in_flight && !st->done_early && !(w->compress && st->stage == STAGE_REDUCED)) {
        int done = 0;
        double t0 = clock_mono_s();
        if (w->compress) MPI_Testall(st->ncreq, st->creq, &done, MPI_STATUSES_IGNORE);
        else MPI_Test(&st->req, &done, MPI_STATUS_IGNORE);
        st->mpi_s += clock_mono_s() - t0;
        if (done) st->done_early = 1;
        if (done && w->compress && st->stage == STAGE_FIRST) start_q_between_layers(w, st);
    }
}

static int hp_init(worker_t *w)
{
    size_t n = w->model->nparams;
    hp_state_t *st = calloc(1, sizeof *st);
    if (!st) return -1;
    st->snap = malloc(n * sizeof(float));
    st->S = calloc(n, sizeof(float));
    st->R = calloc(n + MODEL_GRAD_EXTRA, sizeof(float));
    st->R2 = malloc((n + 2) * sizeof(float));
    if (!st->snap || !st->S || !st->R || !st->R2) {
        free(st->snap);
        free(st->S);
        free(st->R);
        free(st->R2);
        free(st);
        return -1;
    }
    st->comm = MPI_COMM_NULL;
    if (w->use_mpi) MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->comm));
    if (w->use_mpi && w->opts && w->opts->comm_baseline) {
        /* Only with a fixed round schedule do all ranks start the same rounds in the same
         * order, which the blocking baseline collective needs. */
        if (w->opts->hpsgd_round_steps <= 0) {
            if (w->rank == 0) fprintf(stderr, "hpsgd: --comm-baseline needs --hpsgd-round-steps; no baseline\n");
        } else if ((st->base = malloc((n + 2) * sizeof(float))) != NULL) {
            MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &st->bcomm));
        }
    }
    w->algo_state = st;
    char err[256];
    if (worker_compress_setup(w, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    /* The summary's plain bytes are a plain round's: the window and its 2 extras. */
    compress_set_plain_extra(w->compress, 2);
    st->nsend = n;
    if (!w->compress && w->any_frozen) {
        size_t off, cnt;
        int ti = 0, nd;
        for (st->nsend = 0; model_decay_run(w->model, 0, &ti, &off, &cnt, &nd);) st->nsend += cnt;
    }
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
    const size_t n = st->nsend;
    float inv = R[n] > 0 ? 1.0f / R[n] : 0.0f;
    if (n == w->model->nparams)
        for (size_t i = 0; i < n; i++) st->snap[i] += inv * R[i];
    else { /* packed (pack_window): the trainable runs one after the other */ size_t off, cnt, k = 0;
        int ti = 0, nd;
        for (; model_decay_run(w->model, 0, &ti, &off, &cnt, &nd); k += cnt)
            for (size_t i = 0; i < cnt; i++) st->snap[off + i] += inv * R[k + i];
    }
    if (R[n + 1] > 0) staleness_add(&w->staleness, 1);
    st->rounds++;
    st->merges++;
}

/* Time inside MPI on the round communicator: the summary line's and the step's. */
static void add_mpi_time(worker_t *w, hp_state_t *st, double dt, int waiting)
{
    st->mpi_s += dt;
    if (waiting) st->wait_s += dt;
    w->stats.step_comm_s += dt;
    w->stats.comm_s += dt;
}

/* Starts one stage's messages of a compressed round as non-blocking all-reduces (the
 * bf16 words under compress's sum operation) and counts their bytes. */
static void start_stage(worker_t *w, hp_state_t *st, const compress_msg_t *msgs, int nmsgs, int stage,
                        int between_layers)
{
    double t0 = clock_mono_s();
    st->ncreq = 0;
    for (int i = 0; i < nmsgs; i++) {
        if (msgs[i].count == 0) continue;
        MPI_Datatype type = msgs[i].bf16 ? MPI_UINT16_T : MPI_FLOAT;
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, msgs[i].buf, msgs[i].count, type,
                                 msgs[i].bf16 ? compress_bf16_op(w->compress) : MPI_SUM, st->comm,
                                 &st->creq[st->ncreq++]));
        w->stats.comm_bytes += (double)compress_msg_bytes(&msgs[i]);
    }
    st->stage = stage;
    st->done_early = 0;
    if (between_layers) { /* inside the compute stage: the summary line's MPI time only */
        st->mpi_s += clock_mono_s() - t0;
        return;
    }
    add_mpi_time(w, st, clock_mono_s() - t0, 0);
}

/* The first stage completed between layers: orthogonalise P, compute Q and start its
 * all-reduce now (the same values as at the step's end, so a fixed schedule's result
 * does not change). Its compute is booked in the step's compute phase, not compress. */
static void start_q_between_layers(worker_t *w, hp_state_t *st)
{
    compress_msg_t msgs[2];
    int nmsgs = compress_middle(w->compress, st->R, st->merges, msgs);
    if (nmsgs > 0) start_stage(w, st, msgs, nmsgs, STAGE_Q, 1);
    else st->stage = STAGE_REDUCED;
}

/* The first stage's messages of a compressed round over st->R (see the top), which
 * start_reduction starts. One process: the sum over one rank is the message itself, so
 * the first two parts run at once and decode_round unpacks. */
static void encode_round(worker_t *w, hp_state_t *st)
{
    const long k = st->merges; /* compress_active's step: warm-up is refused with hpsgd */
    sim_charge_compress(w, k);
    st->nmsgs = compress_begin(w->compress, st->R, k, st->msgs);
    st->in_flight = 1;
    if (!w->use_mpi) {
        compress_middle(w->compress, st->R, k, st->msgs);
        st->stage = STAGE_REDUCED;
    }
}

/* R holds the compressed round's reduction: unpacked, the round is over. */
static void decode_round(worker_t *w, hp_state_t *st)
{
    compress_end(w->compress, st->R, st->merges);
    st->in_flight = 0;
    st->done_early = 0;
}

/* Advances the compressed round in flight: tests (or, with wait, waits for) its stage,
 * and after the first one computes and starts Q's stage. Returns 1 once R holds the
 * round's reduction (decode_round unpacks it); finish 0 (the fixed schedule's steps
 * before its merge, which only start Q early) stops short of waiting for Q. */
static int test_compressed(worker_t *w, hp_state_t *st, int wait, int finish)
{
    const long k = st->merges;
    while (st->stage != STAGE_REDUCED) {
        if (!finish && st->stage == STAGE_Q) return 0;
        int done = st->done_early;
        double t0 = clock_mono_s();
        if (!done && wait) {
            waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
            MPI_CHECK(MPI_Waitall(st->ncreq, st->creq, MPI_STATUSES_IGNORE));
            waitmark_leave(&w->wait);
            done = 1;
        } else if (!done) MPI_CHECK(MPI_Testall(st->ncreq, st->creq, &done, MPI_STATUSES_IGNORE));
        add_mpi_time(w, st, clock_mono_s() - t0, wait && !st->done_early);
        if (!done) return 0;
        st->done_early = 0;
        compress_msg_t msgs[2];
        /* P's orthogonalisation and Q's product between the round's two collectives,
         * inside the comm stage that tests it: compress's own time */
        phase_enter(&w->phases, PHASE_COMPRESS);
        int nmsgs = st->stage == STAGE_FIRST ? compress_middle(w->compress, st->R, k, msgs) : 0;
        phase_leave(&w->phases);
        if (nmsgs > 0) start_stage(w, st, msgs, nmsgs, STAGE_Q, 0);
        else st->stage = STAGE_REDUCED;
    }
    return finish;
}

/* Moves the trainable floats of the window R to its front, in the optimizer's runs
 * (model_decay_run: increasing offsets, so each run moves down or stays), leaving the
 * frozen ones (0) out of the round. */
static void pack_window(const model_t *m, float *R)
{
    size_t off, cnt, k = 0;
    int ti = 0, nd;
    for (; model_decay_run(m, 0, &ti, &off, &cnt, &nd); k += cnt) memmove(R + k, R + off, cnt * sizeof *R);
}

/* R = weight * d with d = w - B (this rank's window), R[n] = weight, R[n+1] = weight *
 * steps; the replica becomes G + d (G as merged so far) and the next window starts
 * there. */
static void new_window(worker_t *w, hp_state_t *st, float *R)
{
    model_t *m = w->model;
    size_t n = m->nparams;
    float wgt = (float)w->batch;
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
    if (st->nsend < n) pack_window(m, R);
    n = st->nsend;
    R[n] = wgt;
    R[n + 1] = wgt * (float)st->local_steps;
    st->local_steps = 0;
    st->nstarted++;
}

/* Starts the reduction of R (new_window's; compressed: encode_round's messages). */
static void start_reduction(worker_t *w, hp_state_t *st, float *R, MPI_Request *req)
{
    const size_t n = st->nsend;
    if (w->compress) {
        if (w->use_mpi) start_stage(w, st, st->msgs, st->nmsgs, STAGE_FIRST, 0);
        return;
    }
    if (!w->use_mpi) {
        /* One process (workers: 1): the reduction of one rank is R, complete at once;
         * test_done finds it done as a round that completed between layers. */
        st->in_flight = 1;
        st->done_early = 1;
        return;
    }
    if (st->base && R == st->R) {
        MPI_CHECK(MPI_Barrier(st->bcomm));
        memcpy(st->base, R, (n + 2) * sizeof(float));
        double b0 = clock_mono_s();
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, st->base, (int)n + 2, MPI_FLOAT, MPI_SUM, st->bcomm));
        st->base_s += clock_mono_s() - b0;
        st->base_rounds++;
    }
    double t0 = clock_mono_s();
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, R, (int)n + 2, MPI_FLOAT, MPI_SUM, st->comm, req));
    w->stats.comm_bytes += (double)(n + 2) * sizeof(float);
    add_mpi_time(w, st, clock_mono_s() - t0, 0);
    st->in_flight = 1;
}

/* A round outside the step's stages (the epoch end's): started, and finished with
 * finish_round. */
static void start_round(worker_t *w, hp_state_t *st, float *R, MPI_Request *req)
{
    new_window(w, st, R);
    if (w->compress) encode_round(w, st);
    start_reduction(w, st, R, req);
}

static int test_done(worker_t *w, hp_state_t *st, MPI_Request *req, int wait)
{
    if (w->compress) return test_compressed(w, st, wait, 1);
    int done = 0;
    double t0 = clock_mono_s();
    if (req == &st->req && st->done_early) done = 1; /* the request is already freed */
    else if (wait) {
        waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
        MPI_CHECK(MPI_Wait(req, MPI_STATUS_IGNORE));
        waitmark_leave(&w->wait);
        done = 1;
    } else MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (req == &st->req) st->done_early = 0;
    add_mpi_time(w, st, clock_mono_s() - t0, wait);
    if (done) st->in_flight = 0;
    return done;
}

/* test_done, and a compressed round's reduction unpacked once it is complete. */
static int finish_round(worker_t *w, hp_state_t *st, MPI_Request *req, int wait)
{
    const int done = test_done(w, st, req, wait);
    if (done && w->compress) decode_round(w, st);
    return done;
}

/* The step's stages (algo_step books each in its phase): re-plan, batch, gradient, the
 * local step, then the round: is it complete (else the step ends, the window grows),
 * its unpacking (compressed), the merge and the next window, the next round's
 * compression and its start. */

static int hp_grad(worker_t *w, algo_step_t *s)
{
    s->loss = worker_compute_grad(w, 1.0f);
    return 0;
}

static int hp_local(worker_t *w, algo_step_t *s)
{
    hp_state_t *st = w->algo_state;
    worker_apply_local_update(w); /* the local step: ssgd's update on this rank's gradient */
    st->local_steps++;
    if (w->use_mpi) w->stats.comm_steps++; /* the summary's bytes per step: the rounds' bytes over steps */
    return 0;
}

static int hp_test(worker_t *w, algo_step_t *s)
{
    hp_state_t *st = w->algo_state;
    if (!st->in_flight) return ALGO_SKIP;
    /* Test hook (--hpsgd-round-steps N): the round merges after exactly N local steps,
     * waiting for it if need be, so the schedule does not depend on MPI_Test timing. */
    int fixed = w->opts ? w->opts->hpsgd_round_steps : 0;
    if (w->compress && fixed > 0 && st->local_steps < fixed) test_compressed(w, st, 0, 0);
    int done = fixed > 0 ? st->local_steps >= fixed && test_done(w, st, &st->req, 1) : test_done(w, st, &st->req, 0);
    return done ? 0 : ALGO_END;
}

/* After hp_test found the compressed round complete; nothing on a step without a round
 * in flight (the first of an epoch). */
static int hp_decode(worker_t *w, algo_step_t *s)
{
    hp_state_t *st = w->algo_state;
    if (!w->compress || !st->in_flight) return ALGO_SKIP;
    decode_round(w, st);
    return 0;
}

static int hp_merge(worker_t *w, algo_step_t *s)
{
    hp_state_t *st = w->algo_state;
    int merged = st->nstarted > 0;
    if (merged) merge(w, st, st->R);
    new_window(w, st, st->R);
    return merged ? ALGO_MERGED : 0;
}

static int hp_encode(worker_t *w, algo_step_t *s)
{
    if (!w->compress) return ALGO_SKIP;
    encode_round(w, w->algo_state);
    return 0;
}

/* One process sends nothing: skipped (the loop's bookkeeping). */
static int hp_start(worker_t *w, algo_step_t *s)
{
    hp_state_t *st = w->algo_state;
    start_reduction(w, st, st->R, &st->req);
    return w->use_mpi ? 0 : ALGO_SKIP;
}

static int hp_epoch_end(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    long most = st->nstarted;
    double t0 = clock_mono_s();
    waitmark_enter(&w->wait, WAIT_ALLREDUCE, -1);
    if (w->use_mpi) MPI_CHECK(MPI_Allreduce(&st->nstarted, &most, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    waitmark_leave(&w->wait);
    w->stats.idle_s += clock_mono_s() - t0;
    int behind = st->nstarted < most;
    if (w->compress) {
        /* One round at a time through the compressor's buffers (see the top). */
        if (st->in_flight) {
            finish_round(w, st, &st->req, 1);
            merge(w, st, st->R);
        }
        if (behind) {
            start_round(w, st, st->R, &st->req);
            finish_round(w, st, &st->req, 1);
            merge(w, st, st->R);
        }
        behind = 0;
    } else if (behind) start_round(w, st, st->R2, &st->req2);
    if (st->in_flight) {
        finish_round(w, st, &st->req, 1);
        merge(w, st, st->R);
    }
    if (behind) {
        finish_round(w, st, &st->req2, 1);
        merge(w, st, st->R2);
    }
    /* Everyone has now started and merged the same rounds; merge every rank's last window
     * in one synchronous round, after which every replica is G. */
    start_round(w, st, st->R, &st->req);
    finish_round(w, st, &st->req, 1);
    merge(w, st, st->R);
    memcpy(w->model->params, st->snap, w->model->nparams * sizeof(float));
    memcpy(st->S, st->snap, w->model->nparams * sizeof(float));
    st->nstarted = 0;
    /* The errors the last round left, for the checkpoint after this epoch end. */
    if (w->compress) local_gather_errors(w);
    return 0;
}

static void hp_fini(worker_t *w)
{
    hp_state_t *st = w->algo_state;
    if (!st) return;
    /* Stopped mid-epoch by --stop-after-steps or a notice (every rank after the same step): the
     * ranks may have started different numbers of rounds, so a plain wait on this rank's
     * round can wait for peers that never start it. The epoch end's catch-up matches them
     * (after the checkpoint, so what a resume sees is unchanged). */
    if ((w->stop == STOP_TEST_HOOK || w->stop == STOP_NOTICE) && w->use_mpi) hp_epoch_end(w);
    else if (st->in_flight && !st->done_early && w->compress && st->stage != STAGE_REDUCED)
        MPI_Waitall(st->ncreq, st->creq, MPI_STATUSES_IGNORE);
    else if (st->in_flight && !st->done_early && !w->compress) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    w->model->progress = NULL;
    if (w->rank == 0 && st->rounds > 0 && w->use_mpi) {
        fprintf(stderr,
                "hpsgd: %ld merges in %ld steps; in MPI %.3f s (%.0f us per merge), of which waiting in "
                "MPI_Wait %.3f s",
                st->merges, w->stats.steps, st->mpi_s, 1e6 * st->mpi_s / (double)st->rounds, st->wait_s);
        if (st->base_rounds > 0)
            fprintf(stderr,
                    "; a blocking allreduce of the same %ld rounds: %.3f s (%.0f us per round), so overlap "
                    "saves %.1f%% of it",
                    st->base_rounds, st->base_s, 1e6 * st->base_s / (double)st->base_rounds,
                    100.0 * (1.0 - (st->mpi_s / (double)st->rounds) / (st->base_s / (double)st->base_rounds)));
        fprintf(stderr, "\n");
    }
    if (st->comm != MPI_COMM_NULL) MPI_Comm_free(&st->comm);
    if (st->base) MPI_Comm_free(&st->bcomm);
    free(st->snap);
    free(st->S);
    free(st->R);
    free(st->R2);
    free(st->base);
    free(st);
    w->algo_state = NULL;
}

const algo_ops_t algo_hpsgd = {
    .name = "hpsgd",
    .init = hp_init,
    .step = {{PHASE_OTHER, comm_replan_stage},
             {PHASE_DATA, worker_batch_stage},
             {PHASE_COMPUTE, hp_grad},
             {PHASE_OPTIMIZER, hp_local},
             {PHASE_COMM, hp_test},
             {PHASE_COMPRESS, hp_decode},
             {PHASE_OPTIMIZER, hp_merge},
             {PHASE_COMPRESS, hp_encode},
             {PHASE_COMM, hp_start}},
    .epoch_end = hp_epoch_end,
    .evaluate = comm_evaluate_root,
    .fini = hp_fini,
};
