/* worker/ps.c - see ps.h. */
#include "ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"
#include "checkpoint.h"
#include "comm_mpi.h"
#include "compress.h"
#include "loop.h"
#include "step.h"

#define TAG_PUSH 101
#define TAG_REPLY 102

float ps_softsync_alpha(float alpha0, int64_t tau) { return alpha0 / (float)(tau > 1 ? tau : 1); }

double ps_tau_smooth(double tau_avg, int64_t tau) { return (1 - PS_TAU_EWMA) * tau_avg + PS_TAU_EWMA * (double)tau; }

float ps_compensated_momentum(double mu, double tau)
{
    if (!(tau > 0)) return (float)mu;
    double e = 1.0 - (1.0 - mu) * (1.0 + tau);
    return (float)(e > 0 ? e : 0);
}

/* ---- the parameter server ------------------------------------------------------------- */

typedef struct {
    ps_t ps;
    MPI_Request *reqs;   /* (n) receive of each worker's next push */
    unsigned char **in;  /* (n) push buffers: header + gradient */
    unsigned char **out; /* (n) reply buffers: header + weights */
    MPI_Request *sreqs;  /* (n) the reply in flight to each worker */
    int *parked;         /* (n) waiting for the next epoch */
    int *pending;        /* (n) gradient held by the rule; reply when applied */
    int64_t *t_read;     /* (n) version each worker last read */
    int64_t *last_tau;   /* (n) staleness of each worker's last applied gradient */
    double *speed;       /* (n) reported samples/s */
    long cursor;         /* next position of the epoch order to hand out */
    double busy_s;       /* time spent handling pushes */
    double aside_s;      /* evaluation and checkpoints: not training time */
    int64_t pushes;
    int compensate;  /* optimizer.async_momentum "compensated" */
    double tau_avg;  /* smoothed staleness of the applied updates (PS_TAU_EWMA) */
    int round_robin; /* test hook: take pushes in worker order */
    int bf16;        /* algorithm.compression bf16: pushes carry bf16 words (push_bytes) */
    size_t ng;       /* the gradient floats a push carries (push_floats) */
    float *grad;     /* (np + nb) a bf16 or packed push unpacked, with its statistics (a
                        frozen tensor's gradient 0); NULL: whole fp32 pushes, read in place */
    /* bf16 with checkpoints: each worker's error feedback due for the checkpoint of
     * version ef_due[m] (0: none), before its last push or not (ef_prev; see reply) */
    int64_t *ef_due;
    int32_t *ef_prev;
    long ckpt_seen; /* the checkpoint (worker_t.ckpt_step) the flags were set for */
    double started; /* when serving began */
    int next_rr;    /* round_robin: the worker whose push is taken next */
    /* log_every's lines: updates per second since the last line */
    double t_log;
    int64_t t_log_updates;
} server_t;

/* A push carries the gradient (its trainable floats, push_floats) and then the worker's batch-norm running
 * statistics (nb floats, model_t.buffers): the parameter server never runs a training
 * forward, so its statistics are the latest push's, as DDP's broadcast_buffers makes one
 * rank's the job's. Without them its evaluation, checkpoints and exported model would keep
 * the initial statistics. */
/* With algorithm.compression bf16 (worker/compress.h, compress_bf16_feedback) the
 * gradient travels as bfloat16 words, rounded with the worker's error feedback, and
 * the statistics after it stay fp32 (few floats, and not a gradient to feed back). Both
 * ends size the message from the spec and the model (push_floats). */
static size_t push_bytes(size_t np, size_t nb, int bf16)
{
    return compress_push_bytes(sizeof(ps_push_t), np, nb, bf16);
}
static int push_bf16(const worker_t *w) { return strcmp(w->spec->algorithm.compression.kind, "bf16") == 0; }

/* Frozen tensors (model.h's no_update) are in no push: the gradient a push carries is the
 * trainable tensors', in the optimizer's runs (model_decay_run) one after the other, and
 * the parameter server reads a frozen tensor's as 0 (which no rule applies anyway). */
static size_t push_floats(const model_t *m)
{
    size_t off, cnt, k = 0;
    int ti = 0, nd;
    while (model_decay_run(m, 0, &ti, &off, &cnt, &nd)) k += cnt;
    return k;
}

/* A worker's gradient g into a push's payload: the runs' floats, or their bf16 words with
 * the error feedback err (nparams floats, a frozen tensor's never touched). */
static void pack_push(const model_t *m, const float *g, float *err, unsigned char *to)
{
    size_t off, cnt, k = 0;
    int ti = 0, nd;
    for (; model_decay_run(m, 0, &ti, &off, &cnt, &nd); k += cnt) {
        if (err) compress_bf16_feedback(g + off, err + off, (uint16_t *)to + k, cnt);
        else memcpy((float *)to + k, g + off, cnt * sizeof(float));
    }
}

/* The parameter server's side: a payload into g (nparams floats; a frozen tensor's left as
 * it is, 0), bf16 words widened. */
static void unpack_push(const model_t *m, const unsigned char *from, int bf16, float *g)
{
    size_t off, cnt, k = 0;
    int ti = 0, nd;
    for (; model_decay_run(m, 0, &ti, &off, &cnt, &nd); k += cnt) {
        if (bf16) compress_bf16_widen((const uint16_t *)from + k, g + off, cnt);
        else memcpy(g + off, (const float *)from + k, cnt * sizeof(float));
    }
}
/* A reply carries the trainable weights (push_floats, in the runs' order): a frozen tensor
 * is the same on every rank from the start and never changes, so it is never sent. */
static size_t reply_bytes(size_t ng) { return sizeof(ps_reply_t) + ng * sizeof(float); }

static void post_recv(server_t *s, int m)
{
    MPI_CHECK(MPI_Irecv(s->in[m], (int)push_bytes(s->ng, s->ps.w->model->nbuffers, s->bf16), MPI_BYTE, m + 1, TAG_PUSH,
                        MPI_COMM_WORLD, &s->reqs[m]));
}

/* Sends worker m its reply: weights and the next range of the epoch, or parks it when the
 * epoch has no range left. With stop, only the header goes. */
static void reply(server_t *s, int m, int stop)
{
    worker_t *w = s->ps.w;
    phase_mark(&w->phases, PHASE_OTHER);
    ps_reply_t h = {0};
    if (s->ef_due && w->ckpt_step != s->ckpt_seen) {
        /* The first reply since a checkpoint: every worker's error is due for it. A worker
         * waiting for a reply (this one, a held or parked one) has not pushed since its
         * last push, which the checkpoint holds: its error as it is. Any other pushes once
         * more before its next reply: its error before that push. */
        s->ckpt_seen = w->ckpt_step;
        for (int k = 0; k < s->ps.n; k++) {
            s->ef_due[k] = w->ckpt_step;
            s->ef_prev[k] = k != m && !s->pending[k] && !s->parked[k];
        }
    }
    h.version = s->ps.t;
    h.tau = s->last_tau[m];
    h.epoch = w->epoch;
    h.stop = stop;
    h.plan_version = w->plan_version;
    if (!stop) {
        int b = w->batch_of[m];
        if (s->cursor + b > w->train.n) {
            s->parked[m] = 1;
            return;
        }
        h.offset = s->cursor;
        h.batch = b;
        s->cursor += b;
        s->t_read[m] = s->ps.t;
        if (s->ps.w_bak) memcpy(s->ps.w_bak[m], w->model->params, s->ps.np * sizeof(float));
        post_recv(s, m);
    }
    /* Nonblocking: a worker that is not scheduled right now (several ranks per core)
     * must not hold the PS in a rendezvous send. Its previous reply has long completed
     * (it has pushed since), so the wait below returns at once. */
    MPI_CHECK(MPI_Wait(&s->sreqs[m], MPI_STATUS_IGNORE));
    if (s->ef_due && s->ef_due[m] > 0) {
        /* due since a checkpoint (above); a parked worker gets it with its next reply */
        h.ef_version = s->ef_due[m];
        h.ef_prev = s->ef_prev[m];
        s->ef_due[m] = 0;
    }
    unsigned char *out = s->out[m];
    memcpy(out, &h, sizeof h);
    size_t bytes = sizeof h;
    if (!stop) {
        pack_push(w->model, w->model->params, NULL, out + sizeof h);
        bytes = reply_bytes(s->ng);
    }
    MPI_CHECK(MPI_Isend(out, (int)bytes, MPI_BYTE, m + 1, TAG_REPLY, MPI_COMM_WORLD, &s->sreqs[m]));
    s->last_tau[m] = -1; /* delivered: a later reply (a stop) must not count it again */
    phase_mark(&w->phases, PHASE_COMM);
}

static int all_parked(const server_t *s)
{
    for (int m = 0; m < s->ps.n; m++)
        if (!s->parked[m]) return 0;
    return 1;
}

/* Whether no worker can push: each is parked for the next epoch or waits for an
 * aggregate (n-softsync) that only the parked ones could complete. */
static int nobody_pushing(const server_t *s)
{
    for (int m = 0; m < s->ps.n; m++)
        if (!s->parked[m] && !s->pending[m]) return 0;
    return 1;
}

/* Dynamic batching at the PS: every replan_steps updates per worker, from the speeds the
 * workers report with their pushes (or the coordinator's assignment). */
static void maybe_replan(server_t *s)
{
    worker_t *w = s->ps.w;
    const job_spec_t *sp = w->spec;
    if (!sp->algorithm.dynamic_batch || sp->algorithm.replan_steps <= 0) return;
    if (s->ps.t == 0 || s->ps.t % ((int64_t)sp->algorithm.replan_steps * s->ps.n) != 0) return;
    worker_replan(w, s->speed);
}

/* Ends training: waits for the push of every worker still computing, then tells each
 * worker to stop (no worker is left blocked on a reply). */
static void stop_all(server_t *s)
{
    for (int m = 0; m < s->ps.n; m++) {
        if (!s->parked[m] && !s->pending[m] && s->reqs[m] != MPI_REQUEST_NULL) {
            waitmark_enter(&s->ps.w->wait, WAIT_PUSHES, m + 1);
            MPI_CHECK(MPI_Wait(&s->reqs[m], MPI_STATUS_IGNORE));
            waitmark_leave(&s->ps.w->wait);
        }
        reply(s, m, 1);
    }
}

/* Applies what the rule holds (a partial n-softsync aggregate) and replies to the workers
 * that waited for it. */
static void flush_held(server_t *s)
{
    worker_t *w = s->ps.w;
    int applied = s->ps.rule->flush ? s->ps.rule->flush(&s->ps) : 0;
    s->ps.t += applied;
    w->global_step = s->ps.t;
    w->step_in_epoch += applied;
    for (int k = 0; k < s->ps.n; k++)
        if (s->pending[k]) {
            s->pending[k] = 0;
            reply(s, k, 0);
        }
}

static void epoch_end(server_t *s)
{
    worker_t *w = s->ps.w;
    flush_held(s); /* the evaluation sees every gradient of the epoch */
    double t0 = clock_mono_s();
    w->loop_s = t0 - s->started - s->aside_s; /* for time_to_target_s */
    w->train_loss_running = w->epoch_loss_samples ? (float)(w->epoch_loss_sum / (double)w->epoch_loss_samples) : NAN;
    worker_evaluate(w, &w->test_loss, &w->test_accuracy);
    char err[1400];
    if (worker_epoch_done(w, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
    s->cursor = 0;
    s->aside_s += clock_mono_s() - t0;
}

/* Every worker is parked at the end of the epoch: the epoch ends, then either everyone
 * is told to stop (returns 1) or the next epoch starts with a reply to every worker. */
static int next_epoch(server_t *s)
{
    worker_t *w = s->ps.w;
    epoch_end(s);
    if (w->collapse_stop) w->stop = STOP_COLLAPSE; /* the evaluation found the run collapsed */
    if (w->stop || w->epoch >= w->spec->epochs) {
        stop_all(s);
        return 1;
    }
    for (int k = 0; k < s->ps.n; k++) {
        s->parked[k] = 0;
        reply(s, k, 0);
    }
    return 0;
}

/* ---- serve's phases: one push, from the wait to the end-of-step policies ---------------- */

/* No worker can push (nobody_pushing): an aggregate held across the epoch end is applied
 * without a record (its partial step is not booked: the evaluation would land in it), so
 * its workers get their replies (and are parked or served); with every worker parked the
 * epoch ends. 1 when serving is over. */
static int drain_epoch(server_t *s)
{
    phase_abort(&s->ps.w->phases);
    flush_held(s);
    return all_parked(s) && next_epoch(s);
}

/* Waits for the next push: worker m's, or -1 (no receive posted: cannot happen). The PS's
 * step begins here: from the wait for a push to the update it applies (n-softsync: the
 * pushes of one aggregate make one step), replies included. */
static int wait_push(server_t *s)
{
    worker_t *w = s->ps.w;
    const int n = s->ps.n;
    int m;
    if (!w->phases.active) phase_begin(&w->phases, s->ps.t + 1);
    phase_mark(&w->phases, PHASE_OTHER);
    if (s->round_robin) {
        /* Test hook: worker order, skipping parked workers. */
        while (s->parked[s->next_rr] || s->pending[s->next_rr]) s->next_rr = (s->next_rr + 1) % n;
        m = s->next_rr;
        s->next_rr = (s->next_rr + 1) % n;
        waitmark_enter(&w->wait, WAIT_PUSHES, m + 1);
        comm_wait(w, &s->reqs[m]);
        waitmark_leave(&w->wait);
    } else {
        double t0 = clock_mono_s();
        waitmark_enter(&w->wait, WAIT_PUSHES, -1);
        m = comm_wait_any(w, n, s->reqs);
        waitmark_leave(&w->wait);
        w->stats.idle_s += clock_mono_s() - t0;
        if (m == MPI_UNDEFINED) return -1;
    }
    phase_mark(&w->phases, PHASE_WAIT);
    return m;
}

/* Reads worker m's push: its header into *h; returns its gradient (a bf16 push widened
 * into s->grad), followed by the worker's batch-norm statistics, which become the PS's.
 * Counts its bytes, feeds the noise scale (before a rule changes g), keeps the worker's
 * speed and dropout step. */
static float *take_push(server_t *s, int m, ps_push_t *h)
{
    worker_t *w = s->ps.w;
    memcpy(h, s->in[m], sizeof *h);
    float *g = (float *)(s->in[m] + sizeof *h);
    const size_t nb = w->model->nbuffers;
    if (s->grad) {
        const unsigned char *payload = s->in[m] + sizeof *h;
        unpack_push(w->model, payload, s->bf16, s->grad);
        memcpy(s->grad + s->ps.np, payload + s->ng * (s->bf16 ? sizeof(uint16_t) : sizeof(float)), nb * sizeof(float));
        g = s->grad;
        if (s->bf16) phase_mark(&w->phases, PHASE_COMPRESS);
    }
    /* Bytes per push, as the workers count them (the summary's comm_bytes_per_step). */
    w->stats.comm_bytes += (double)push_bytes(s->ng, nb, s->bf16);
    w->stats.comm_steps++;
    adaptive_ps_push(w, g, h->batch);
    s->speed[m] = h->samples_per_s > 0 ? h->samples_per_s : s->speed[m];
    w->dropout_of[m] = h->dropout_step;
    if (nb) {
        memcpy(w->model->buffers, g + s->ps.np, nb * sizeof(float));
        worker_buffers_to_device(w);
    }
    return g;
}

/* Hands worker m's gradient to the rule at the learning rate (and compensated momentum)
 * of now, then books its loss, staleness and whether its reply waits. Returns what the
 * rule applied: updates (> 0), 0 (held for an aggregate), < 0 (dropped as too stale). */
static int apply_push(server_t *s, int m, const ps_push_t *h, float *g)
{
    worker_t *w = s->ps.w;
    const job_spec_t *sp = w->spec;
    const int64_t tau = s->ps.t - h->t_read;
    float scale = 1.0f;
    if (sp->algorithm.dynamic_batch) scale = (float)h->batch / (float)sp->batch_size;
    w->lr = lr_at(&w->sched, (float)(sp->optimizer.lr * w->lr_scale), s->ps.t, w->total_steps);
    if (s->compensate && !(sp->algorithm.tau_max > 0 && tau > sp->algorithm.tau_max)) {
        /* The staleness this update brings, smoothed, sets the explicit momentum
         * that keeps the total at the user's (ps_compensated_momentum): two
         * multiplications and a comparison. */
        s->tau_avg = ps_tau_smooth(s->tau_avg, tau);
        w->momentum = ps_compensated_momentum(sp->optimizer.momentum, s->tau_avg);
    }
    phase_mark(&w->phases, PHASE_OTHER);
    int applied = s->ps.rule->apply(&s->ps, m, g, scale, tau);
    phase_mark(&w->phases, PHASE_OPTIMIZER); /* the rule (and its compensation) */
    s->pushes++;
    w->stats.samples += h->batch;
    w->epoch_loss_sum += (double)h->loss * h->batch;
    w->epoch_loss_samples += h->batch;
    w->stats.last_loss = h->loss;
    w->step_loss = h->loss;
    /* The collapse detector sees every push's loss (health.h). */
    worker_health_loss(w, s->ps.t + (applied > 0 ? applied : 0), h->loss);
    if (applied >= 0) {
        staleness_add(&w->staleness, tau);
        s->last_tau[m] = tau;
    } else {
        s->ps.dropped++;
    }
    /* Held for an aggregate: without hold_replies the worker gets the current weights
     * now and never waits for its own aggregate. */
    s->pending[m] = applied != 0 || s->ps.hold_replies;
    if (applied == 0 && !s->ps.hold_replies) reply(s, m, 0);
    return applied;
}

/* After the rule applied (applied > 0) or dropped (< 0) a gradient: the version advances,
 * the batches are re-planned, a checkpoint is written when due, everyone whose gradient is
 * in gets the new weights, and an applied update ends its step (record, log line). */
static void after_update(server_t *s, int applied, const ps_push_t *h)
{
    worker_t *w = s->ps.w;
    const job_spec_t *sp = w->spec;
    s->ps.t += applied > 0 ? applied : 0;
    w->global_step = s->ps.t;
    w->step_in_epoch += applied > 0 ? applied : 0;
    w->stats.steps = s->ps.t;
    long plan_before = w->plan_version;
    maybe_replan(s);
    /* The checkpoint comes before the replies hand out new ranges, so its cursor
     * is where the applied gradients' data ends (exact for hard-sync n-softsync,
     * where no other range is in flight; asgd loses the in-flight ranges). */
    if (applied > 0 && worker_checkpoint_due(w)) {
        char err[512];
        double tc = clock_mono_s();
        w->cursor = s->cursor;
        if (worker_save_checkpoint(w, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
        s->aside_s += clock_mono_s() - tc;
    }
    if (w->plan_version != plan_before) phase_event(&w->phases, STEP_EV_PLAN);
    /* Everyone whose gradient is now applied (n-softsync: the whole group) gets
     * the new weights, in worker order. */
    for (int k = 0; k < s->ps.n; k++)
        if (s->pending[k]) {
            s->pending[k] = 0;
            reply(s, k, 0);
        }
    if (applied <= 0) return;
    phase_end(&w->phases);
    worker_report_step(w);
    if (sp->log_every > 0 && s->ps.t % sp->log_every == 0) {
        double tn = clock_mono_s();
        fprintf(stderr, "epoch %ld/%d update %lld loss %.4f lr %.5f updates/s %.0f mean staleness %.2f\n", w->epoch + 1,
                sp->epochs, (long long)s->ps.t, h->loss, w->lr, (double)(s->ps.t - s->t_log_updates) / (tn - s->t_log),
                staleness_mean(&w->staleness.s));
        s->t_log = tn;
        s->t_log_updates = s->ps.t;
    }
}

/* The end-of-step policies (train.h), decided here alone; a stop that evaluates ends the
 * epoch as it is, then everyone is told to stop. With every worker parked the epoch ends.
 * 1 when serving is over. */
static int end_step(server_t *s, int applied, const train_opts_t *o)
{
    worker_t *w = s->ps.w;
    step_end_t end = {.may_evaluate = applied > 0, .alone = 1, .started = s->started, .aside_s = &s->aside_s};
    step_verdict_t v = worker_step_end(w, &end);
    if (v != STEP_GO_ON) {
        stop_reason_t why = w->stop; /* the epoch end may find the target too */
        if (v == STEP_FINISH) epoch_end(s);
        if (why == STOP_COLLAPSE && w->rank == 0)
            fprintf(stderr, "collapse: stopped at update %lld\n", (long long)s->ps.t);
        if (why == STOP_BUDGET && w->rank == 0) fprintf(stderr, "time budget of %.1f s used\n", o->time_budget_s);
        stop_all(s);
        return 1;
    }
    if (all_parked(s)) {
        phase_abort(&w->phases); /* a dropped gradient's partial step, if any */
        return next_epoch(s);
    }
    return 0;
}

/* The parameter server's loop: a list of the phases above, one push at a time. 0 when
 * training ended (every worker told to stop), -1 on an MPI state that cannot happen. */
static int serve(server_t *s, const train_opts_t *o)
{
    worker_t *w = s->ps.w;
    s->t_log = clock_mono_s();
    s->t_log_updates = s->ps.t;
    s->started = clock_mono_s();
    if (w->epoch >= w->spec->epochs) {
        /* Resumed after the last epoch end: every worker is told to stop at once (without
         * this check they were handed another epoch). */
        worker_finish_resumed(w);
        stop_all(s);
        return 0;
    }
    for (int m = 0; m < s->ps.n; m++) reply(s, m, 0);
    for (;;) {
        if (nobody_pushing(s)) {
            if (drain_epoch(s)) return 0;
            continue;
        }
        const int m = wait_push(s);
        if (m < 0) return -1;
        const double t0 = clock_mono_s();
        ps_push_t h;
        float *g = take_push(s, m, &h);
        const int applied = apply_push(s, m, &h, g);
        if (applied != 0) after_update(s, applied, &h);
        s->busy_s += clock_mono_s() - t0;
        if (end_step(s, applied, o)) return 0;
    }
}

static int run_server(worker_t *w, const ps_rule_t *rule, const train_opts_t *o)
{
    int n = w->nworkers, rc = -1;
    size_t np = w->model->nparams;
    server_t s;
    memset(&s, 0, sizeof s);
    s.ps.w = w;
    s.ps.rule = rule;
    s.ps.n = n;
    s.ps.np = np;
    s.ps.t = w->global_step; /* a resumed PS continues its version count */
    s.cursor = w->cursor;
    s.round_robin = o->ps_round_robin;
    s.bf16 = push_bf16(w);
    s.ng = push_floats(w->model);
    s.reqs = calloc((size_t)n, sizeof *s.reqs);
    s.in = calloc((size_t)n, sizeof *s.in);
    s.out = calloc((size_t)n, sizeof *s.out);
    s.sreqs = calloc((size_t)n, sizeof *s.sreqs);
    s.parked = calloc((size_t)n, sizeof *s.parked);
    s.pending = calloc((size_t)n, sizeof *s.pending);
    s.t_read = calloc((size_t)n, sizeof *s.t_read);
    s.last_tau = calloc((size_t)n, sizeof *s.last_tau);
    s.speed = calloc((size_t)n, sizeof *s.speed);
    s.ps.scratch = malloc(np * sizeof(float));
    const int unpack = s.bf16 || s.ng < np;
    if (unpack) s.grad = calloc(np + w->model->nbuffers, sizeof(float));
    s.ckpt_seen = w->ckpt_step;
    if (s.bf16 && w->spec->checkpoint.every_steps > 0 &&
        (!(s.ef_due = calloc((size_t)n, sizeof *s.ef_due)) || !(s.ef_prev = calloc((size_t)n, sizeof *s.ef_prev))))
        goto out;
    if (!s.reqs || !s.in || !s.out || !s.sreqs || !s.parked || !s.pending || !s.t_read || !s.last_tau || !s.speed ||
        !s.ps.scratch || (unpack && !s.grad))
        goto out;
    for (int m = 0; m < n; m++) {
        s.reqs[m] = MPI_REQUEST_NULL;
        s.sreqs[m] = MPI_REQUEST_NULL;
        s.last_tau[m] = -1;
        if (!(s.in[m] = malloc(push_bytes(s.ng, w->model->nbuffers, s.bf16))) || !(s.out[m] = malloc(reply_bytes(s.ng))))
            goto out;
    }
    if (rule->needs_backup) {
        if (!(s.ps.w_bak = calloc((size_t)n, sizeof *s.ps.w_bak))) goto out;
        for (int m = 0; m < n; m++)
            if (!(s.ps.w_bak[m] = malloc(np * sizeof(float)))) goto out;
    }
    s.ps.group = 1;
    if (rule->init && rule->init(&s.ps) != 0) goto out;
    /* Before the first update is measured, the staleness of n equal workers: each push
     * finds the other n - 1 applied (in aggregates of group); none when replies wait for
     * the aggregate (hard sync). */
    s.compensate = strcmp(w->spec->optimizer.async_momentum, "compensated") == 0;
    s.tau_avg = s.ps.hold_replies ? 0.0 : (double)(n - 1) / s.ps.group;
    if (s.compensate) w->momentum = ps_compensated_momentum(w->spec->optimizer.momentum, s.tau_avg);
    {
        /* The schedule runs over PS updates: about n / batch_size pushes per epoch, c of
         * which make one update (n-softsync). */
        long per_epoch = (long)w->train.n / w->spec->batch_size / s.ps.group;
        if (per_epoch < 1) per_epoch = 1;
        worker_schedule_steps(w, per_epoch);
    }

    double t0 = clock_mono_s();
    rc = serve(&s, o);
    double wall = clock_mono_s() - t0;
    w->loop_s = wall - s.aside_s; /* training time, as the synchronous loop counts it */
    w->ps_updates = s.ps.t;
    w->ps_busy_fraction = wall > 0 ? s.busy_s / wall : 0;
    w->ps_dropped = s.ps.dropped;
    w->ps_tau_avg = s.tau_avg;
    if (w->rank == 0)
        fprintf(stderr, "parameter server: %lld updates from %lld pushes in %.2f s (%.0f pushes/s), busy %.1f%%%s\n",
                (long long)s.ps.t, (long long)s.pushes, wall, wall > 0 ? (double)s.pushes / wall : 0.0,
                100.0 * w->ps_busy_fraction, s.ps.dropped ? " (some gradients dropped by tau_max)" : "");
    if (rule->fini) rule->fini(&s.ps);
out:
    if (rc != 0 && w->rank == 0)
        fprintf(stderr, "parameter server: %s\n",
                s.reqs && s.ps.scratch && (!unpack || s.grad) ? "no worker can make progress" : "out of memory");
    for (int m = 0; s.in && m < n; m++) free(s.in[m]);
    for (int m = 0; s.ps.w_bak && m < n; m++) free(s.ps.w_bak[m]);
    free(s.ps.w_bak);
    for (int m = 0; s.sreqs && m < n; m++)
        if (s.sreqs[m] != MPI_REQUEST_NULL) MPI_Wait(&s.sreqs[m], MPI_STATUS_IGNORE);
    for (int m = 0; s.out && m < n; m++) free(s.out[m]);
    free(s.reqs);
    free(s.in);
    free(s.out);
    free(s.sreqs);
    free(s.parked);
    free(s.pending);
    free(s.t_read);
    free(s.last_tau);
    free(s.speed);
    free(s.ps.scratch);
    free(s.grad);
    free(s.ef_due);
    free(s.ef_prev);
    return rc;
}

/* ---- a worker --------------------------------------------------------------------------- */

/* bf16 with checkpoints: this worker's error feedback beside the checkpoint (checkpoint.h,
 * CKPT.ef<index>), written when a reply names the checkpoint; outside the step's timing,
 * as the parameter server's checkpoint is. A failure is said and costs the resume its
 * errors, not the training. */
static void error_path(const worker_t *w, char *path, size_t len)
{
    char ckpt[1100];
    worker_checkpoint_path(w, ckpt, sizeof ckpt);
    checkpoint_ef_path(ckpt, w->worker_index, path, len);
}

static void save_error(worker_t *w, const ps_reply_t *h, const float *err, const float *prev)
{
    char path[1200], msg[1400];
    error_path(w, path, sizeof path);
    if (checkpoint_ef_save(path, h->ef_version, w->nworkers, w->worker_index, h->ef_prev ? prev : err,
                           w->model->nparams, msg, sizeof msg) != 0)
        fprintf(stderr, "pacer-worker: rank %d: %s\n", w->rank, msg);
}

/* A resumed worker takes back the error feedback it wrote for the checkpoint it resumes
 * from (version w->global_step); another version, another number of workers (an elastic
 * restart), the unchecked first format or no file: the errors start at zero, with a line
 * that says why. A damaged file (its size, its CRC, a float not finite or out of bounds:
 * checkpoint.h) is refused: -1, said, and the worker trains on nothing. */
static int restore_error(worker_t *w, float *err)
{
    char path[1200], msg[1400];
    error_path(w, path, sizeof path);
    const size_t np = w->model->nparams;
    const int rc = checkpoint_ef_load(path, w->global_step, w->nworkers, w->worker_index, err, np, msg, sizeof msg);
    if (rc == CKPT_EF_OTHER) {
        fprintf(stderr, "pacer-worker: rank %d: bf16 error feedback starts at zero: %s\n", w->rank, msg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr,
                "pacer-worker: rank %d: refusing to resume on a damaged error-feedback file: %s (move it away to "
                "start this worker's errors at zero)\n",
                w->rank, msg);
        return -1;
    }
    double sum = 0;
    for (size_t i = 0; i < np; i++) sum += fabs((double)err[i]);
    fprintf(stderr, "pacer-worker: rank %d: bf16 error feedback of version %ld restored from %s (sum |e| %.9g)\n",
            w->rank, w->global_step, path, sum);
    return 0;
}

static int run_worker(worker_t *w)
{
    size_t np = w->model->nparams;
    size_t nb = w->model->nbuffers;
    const int bf16 = push_bf16(w);
    const size_t ng = push_floats(w->model);
    const size_t gbytes = ng * (bf16 ? sizeof(uint16_t) : sizeof(float)), pbytes = push_bytes(ng, nb, bf16);
    unsigned char *in = malloc(reply_bytes(ng)), *out = malloc(pbytes);
    /* bf16: what this worker's pushes have not sent of its gradients yet (compress.h),
     * and with checkpoints the same before the last push (save_error). */
    const int keep = bf16 && w->spec->checkpoint.every_steps > 0;
    float *err = bf16 ? calloc(np, sizeof(float)) : NULL, *prev = keep ? calloc(np, sizeof(float)) : NULL;
    int rc = -1;
    long perm_epoch = -1;
    if (!in || !out || (bf16 && !err) || (keep && !prev)) goto done;
    if (bf16 && w->global_step > 0 && restore_error(w, err) != 0) goto done;
    for (;;) {
        /* A worker's step (the breakdown): copy in the weights, gather, compute, push,
         * then wait for the PS (until its reply starts arriving) and receive the reply
         * (its transfer is the pull); it is reported once the reply tells its staleness. */
        double t0 = clock_mono_s();
        MPI_Request req;
        phase_mark(&w->phases, PHASE_OTHER);
        waitmark_enter(&w->wait, WAIT_REPLY, 0);
        comm_probe(w, 0, TAG_REPLY, MPI_COMM_WORLD);
        phase_mark(&w->phases, PHASE_WAIT);
        MPI_CHECK(MPI_Irecv(in, (int)reply_bytes(ng), MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD, &req));
        comm_wait(w, &req);
        waitmark_leave(&w->wait);
        phase_mark(&w->phases, PHASE_COMM);
        double waited = clock_mono_s() - t0;
        ps_reply_t h;
        memcpy(&h, in, sizeof h);
        /* The wait for the reply is communication (the PS serialises every push). */
        w->stats.comm_s += waited;
        w->stats.step_comm_s = waited;
        if (h.tau >= 0 && w->stats.steps > 0) staleness_add(&w->staleness, h.tau);
        if (w->stats.steps > 0) {
            phase_end(&w->phases);
            worker_report_step(w);
        }
        if (h.ef_version > 0 && keep) save_error(w, &h, err, prev);
        if (h.stop) {
            /* The epochs the PS ended: what this worker's final record reports (the last
             * reply that started an epoch said one less). */
            w->epoch = h.epoch;
            break;
        }
        phase_begin(&w->phases, h.version);
        unpack_push(w->model, in + sizeof h, 0, w->model->params);
        phase_mark(&w->phases, PHASE_COMM); /* the pull, into the model */
        w->global_step = h.version;
        w->plan_version = h.plan_version;
        if (h.epoch != perm_epoch) {
            w->epoch = h.epoch;
            worker_epoch_order(w);
            perm_epoch = h.epoch;
        }
        if (h.batch < 1 || h.batch > w->max_batch || h.offset < 0 || h.offset + h.batch > w->train.n) {
            /* The PS only hands out plans within the bounds; never gather past x/y. */
            fprintf(stderr,
                    "pacer-worker: rank %d: the parameter server sent batch %d at %lld, outside [1, %d] "
                    "or the epoch\n",
                    w->rank, h.batch, (long long)h.offset, w->max_batch);
            goto done;
        }
        w->batch_of[w->worker_index] = h.batch;
        w->slowdown = worker_slowdown_now(w);
        phase_switch(&w->phases, PHASE_DATA);
        worker_gather(w, h.offset, h.batch);
        phase_switch(&w->phases, PHASE_COMPUTE);
        float loss = worker_compute_grad(w, 1.0f);
        phase_switch(&w->phases, PHASE_OTHER);
        ps_push_t p = {.t_read = h.version,
                       .batch = h.batch,
                       .loss = loss,
                       .samples_per_s = w->stats.ewma_sps,
                       .dropout_step = w->model->dropout_step};
        memcpy(out, &p, sizeof p);
        if (prev) memcpy(prev, err, np * sizeof(float));
        pack_push(w->model, w->model->grads, err, out + sizeof p);
        if (bf16) phase_mark(&w->phases, PHASE_COMPRESS);
        if (nb) {
            worker_model_to_host(w); /* a GPU rank's statistics (its weights came from the PS) */
            memcpy(out + sizeof p + gbytes, w->model->buffers, nb * sizeof(float));
        }
        t0 = clock_mono_s();
        waitmark_enter(&w->wait, WAIT_PUSH, 0);
        MPI_CHECK(MPI_Isend(out, (int)pbytes, MPI_BYTE, 0, TAG_PUSH, MPI_COMM_WORLD, &req));
        w->stats.comm_bytes += (double)pbytes;
        w->stats.comm_steps++;
        comm_wait(w, &req);
        waitmark_leave(&w->wait);
        phase_mark(&w->phases, PHASE_COMM); /* the push, packing included */
        w->stats.comm_s += clock_mono_s() - t0;
        w->stats.steps++;
    }
    rc = 0;
done:
    free(in);
    free(out);
    free(err);
    free(prev);
    return rc;
}

int ps_run(worker_t *w, const ps_rule_t *rule)
{
    /* The push plan (compress.h): the summary's compression object and the step records'
     * compression_ratio, on the parameter server and the workers alike; worker_free frees it. */
    char err[256];
    if (!w->compress && push_bf16(w) &&
        compress_create_push(w->model, w->spec->algorithm.compression.kind, sizeof(ps_push_t), &w->compress, err,
                             sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: rank %d: %s\n", w->rank, err);
        return -1;
    }
    if (w->role == ROLE_PS) return run_server(w, rule, w->opts);
    return run_worker(w);
}
