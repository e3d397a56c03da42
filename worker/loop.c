/* worker/loop.c - what the training loops share above the step primitives (step.c): the
 * metrics records, collapse detection, checkpoints, the epoch end and the end-of-step
 * policies. The synchronous loop (train.c's train_loop) and the parameter server's
 * (ps.c's serve) both call these; these call neither loop, nor the algorithms, so the
 * parameter server's rules link without train.c. Declared in loop.h. */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "adaptive.h"
#include "backend_cuda.h"
#include "blas_core.h"
#include "conv_direct.h"
#include "checkpoint.h"
#include "ckptdir.h"
#include "fs.h"
#include "clock.h"
#include "compress.h"
#include "dcache.h"
#include "emulate.h"
#include "evalsample.h"
#include "hash.h"
#include "hostname.h"
#include "init_weights.h"
#include "lora.h"
#include "memest.h"
#include "modelfetch.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "st_export.h"
#include "passert.h"
#include "planner.h"
#include "shard.h"
#include "sigterm.h"
#include "sim.h"
#include "step.h"

/* The checkpoint keeps compress.h's probe sums as they are. */
_Static_assert(CKPT_PROBE_N == COMPRESS_PROBE_N, "checkpoint.h's probe sums are compress.h's");

/* Fills the reusable record with this rank's state after a step. */
static metrics_record_t *fill_record(worker_t *w, metrics_kind_t kind)
{
    metrics_record_t *r = &w->record; /* preallocated; host filled once at set-up */
    r->kind = kind;
    r->time = clock_wall_s();
    r->step = w->global_step;
    r->epoch = w->epoch + 1;
    /* The parameter server computes no batch and no samples: it has no batch size or speed
     * (absent and null, not 0; its loss is that of the push it applied last). */
    r->batch = w->role == ROLE_PS ? -1 : w->batch;
    r->loss = w->stats.last_loss;
    r->compute_s = w->stats.step_compute_s;
    r->comm_s = w->stats.step_comm_s;
    r->idle_s = w->stats.step_idle_s;
    r->baseline_comm_s = w->stats.step_baseline_s;
    r->samples_per_s = w->role == ROLE_PS ? NAN : w->stats.ewma_sps;
    r->samples = w->stats.samples;
    r->slowdown = w->slowdown;
    r->staleness = w->staleness.s;
    r->plan_version = w->plan_version;
    memcpy(r->phase_s, w->phases.s, sizeof r->phase_s);
    r->step_s = w->phases.wall;
    r->events = w->phases.events;
    /* Bytes handed to MPI since the last step record, where the algorithm measures them
     * (its comm_steps count; one process measures nothing: absent). */
    r->eval_sample[0] = '\0';
    r->comm_measured = kind == METRICS_STEP && w->stats.comm_steps > 0;
    r->comm_bytes = w->stats.comm_bytes - w->comm_bytes_reported;
    if (kind == METRICS_STEP) w->comm_bytes_reported = w->stats.comm_bytes;
    r->compression_ratio = 0;
    if (compress_kind(w->compress) != COMPRESS_NONE && compress_step_bytes(w->compress) > 0)
        r->compression_ratio = compress_active(w->compress, w->global_step - 1)
                                   ? (double)compress_plain_bytes(w->compress) / (double)compress_step_bytes(w->compress)
                                   : 1.0;
    r->test_loss = NAN;
    r->test_accuracy = NAN;
    r->train_s = NAN;
    adaptive_fill_record(w, r);
    return r;
}

void worker_report_step(worker_t *w)
{
    if (w->metrics) metrics_push(w->metrics, fill_record(w, METRICS_STEP));
}

/* The detector at rank 0 has just declared a collapse: one line on stderr (once a run,
 * like a re-plan's), the Redis node hash, and with on_collapse fail or restart the
 * request to stop. */
static void health_collapsed(worker_t *w)
{
    const job_spec_t *s = w->spec;
    const health_t *h = &w->health;
    char why[320], json[512];
    health_reason(h, why, sizeof why);
    const char *what = strcmp(s->on_collapse, "fail") == 0 ? "stopping: the job fails"
                       : strcmp(s->on_collapse, "restart") == 0
                           ? "stopping: to be restarted from the last checkpoint at or before that step with the "
                             "learning rate halved"
                           : "going on";
    fprintf(stderr, "collapse: training collapsed at step %ld (since step %ld): %s; on_collapse %s: %s\n", h->at_step,
            h->since_step, why, s->on_collapse, what);
    if (w->report_health && health_to_json(h, json, sizeof json) > 0) w->report_health(w, json);
    if (strcmp(s->on_collapse, "continue") != 0) w->collapse_stop = 1;
}

void worker_health_loss(worker_t *w, long step, float loss)
{
    if (w->rank == 0 && w->health.state == HEALTH_OK && health_step(&w->health, step, loss)) health_collapsed(w);
}

/* The collapse detector fed an evaluation's test accuracy (worker_health_loss's twin). */
static void worker_health_eval(worker_t *w)
{
    /* NaN: nothing was evaluated (worker_evaluate); a missing figure is not judged. */
    if (isnan(w->test_accuracy)) return;
    if (w->rank == 0 && w->health.state == HEALTH_OK && health_eval(&w->health, w->global_step, w->test_accuracy))
        health_collapsed(w);
}

/* agree: w->agree, or NULL where this rank decides alone (the parameter server). */
static void health_agree(worker_t *w, int now, int (*agree)(worker_t *, int))
{
    if (strcmp(w->spec->on_collapse, "continue") == 0) return;
    int stop = w->collapse_stop;
    if (agree) {
        if (!now && w->global_step % HEALTH_AGREE_STEPS != 0) return;
        stop = agree(w, stop);
    }
    if (stop) w->stop = STOP_COLLAPSE;
}

void worker_health_agree(worker_t *w, int now) { health_agree(w, now, w->agree); }

json_t *worker_health_json(const worker_t *w)
{
    const health_t *h = &w->health;
    if (h->state == HEALTH_UNKNOWN) return json_null();
    if (h->state != HEALTH_COLLAPSED) return json_pack("{s:s}", "state", health_state_name(h->state));
    char why[320];
    health_reason(h, why, sizeof why);
    return json_pack("{s:s, s:I, s:I, s:s}", "state", "collapsed", "since_step", (json_int_t)h->since_step, "at_step",
                     (json_int_t)h->at_step, "reason", why);
}

/* eval_sample: the prompt continued by the weights just evaluated, into r (host weights:
 * a GPU rank's are brought back first, as for a checkpoint). A failure is said once per
 * sample and leaves the record without one: training goes on. */
static void sample_text(worker_t *w, metrics_record_t *r)
{
    if (!w->eval_sample) return;
    char err[512];
    worker_model_to_host(w);
    if (w->lora_sample) model_lora_merge(w->model, w->lora_sample); /* generation reads merged weights */
    if (evalsample_run(w->eval_sample, r->eval_sample, sizeof r->eval_sample, err, sizeof err) != 0)
        fprintf(stderr, "pacer-worker: rank 0: eval_sample: %s\n", err);
}

/* Epoch-end and final records carry the epoch's mean training loss, and with_eval (the
 * record of an evaluation just made) the evaluation, on the rank that made it only; an
 * evaluation between epoch ends (METRICS_EVAL, eval_every_steps) the evaluation only.
 * That rank is rank 0 in every algorithm: the parameter server of the asynchronous
 * family; in the synchronous ones the root, which evaluates and broadcasts the result
 * (comm_evaluate_root), so that every rank can stop at a target accuracy; sgd has one
 * rank. The other ranks know the result without having measured it, and a record of
 * theirs that carried it would make one evaluation look like several (the
 * history had one point per rank and epoch, and a parameter server's workers, which never
 * evaluate, reported 0). Each evaluation is reported once: in its epoch's record, or in
 * the final record of a run resumed after its last epoch end (worker_finish_resumed),
 * which evaluates without an epoch end; any other final record repeats nothing. */
void worker_report_epoch(worker_t *w, metrics_kind_t kind, int with_eval)
{
    if (!w->metrics) return;
    metrics_record_t *r = fill_record(w, kind);
    r->epoch = kind == METRICS_FINAL ? w->epoch : w->epoch + 1;
    if (with_eval && w->rank == 0) {
        r->test_loss = w->test_loss;
        r->test_accuracy = w->test_accuracy;
        sample_text(w, r);
    }
    r->loss = kind == METRICS_EVAL ? NAN : w->train_loss_running;
    /* Training time so far: time to any accuracy can be read from the records of one run
     * (evaluations are not training time). The parameter server keeps loop_s current
     * before it evaluates; at the final record it is the whole training time. */
    r->train_s = w->loop_s;
    metrics_push(w->metrics, r);
}

/* After an evaluation (test_accuracy just measured, the same on every rank): 1 when it
 * reaches target_accuracy, and the first time also time_to_target_s = loop_s (the
 * caller keeps loop_s current). */
static int worker_target_reached(worker_t *w)
{
    const job_spec_t *s = w->spec;
    if (!(s->target_accuracy > 0) || !(w->test_accuracy >= s->target_accuracy)) return 0;
    if (isnan(w->time_to_target_s)) w->time_to_target_s = w->loop_s;
    return 1;
}

/* After an evaluation between epoch ends (eval_every_steps): its record, and the stop
 * when it reaches the target. */
static void worker_evaluated_between(worker_t *w)
{
    w->eval_step = w->global_step;
    worker_health_eval(w);
    worker_report_epoch(w, METRICS_EVAL, 1);
    if (worker_target_reached(w)) {
        if (w->rank == 0)
            fprintf(stderr, "target accuracy %.4f reached at step %ld (test accuracy %.4f)\n", w->spec->target_accuracy,
                    w->global_step, w->test_accuracy);
        w->stop = STOP_TARGET;
    }
}

void worker_finish_resumed(worker_t *w)
{
    if (w->rank == 0)
        fprintf(stderr,
                "resumed after the last epoch (step %ld): nothing left to train; evaluating the restored weights\n",
                w->global_step);
    w->nothing_left = 1;
    w->train_loss_running = NAN;
    if (w->algo->evaluate) w->algo->evaluate(w);
    else worker_evaluate(w, &w->test_loss, &w->test_accuracy);
    w->eval_step = w->global_step;
}

/* epochs x per_epoch as a step count. The spec bounds epochs (100000) and per_epoch is
 * at most the training set's size (an int), so the product fits a long many times
 * over; the clamp keeps the conversion defined whatever those bounds become. */
static long epochs_to_steps(double epochs, long per_epoch)
{
    double x = epochs * (double)per_epoch;
    if (!(x > 0)) return 0;
    if (x > 1e15) return (long)1e15;
    return lround(x);
}

void worker_schedule_steps(worker_t *w, long per_epoch)
{
    const job_spec_t *s = w->spec;
    w->total_steps = per_epoch * s->epochs;
    w->sched.warmup_steps = epochs_to_steps(s->optimizer.lr_schedule.warmup_epochs, per_epoch);
    w->sched.step_size = epochs_to_steps(s->optimizer.lr_schedule.step_epochs, per_epoch);
    if (w->sched.step_size < 1) w->sched.step_size = 1;
}

static void fill_ckpt(const worker_t *w, ckpt_state_t *st)
{
    memset(st, 0, sizeof *st);
    st->global_step = w->global_step;
    st->epoch = w->epoch;
    st->step_in_epoch = w->step_in_epoch;
    st->cursor = w->cursor;
    st->seed = w->spec->seed;
    st->aug_rng = w->aug_rng;
    st->epoch_loss_sum = w->epoch_loss_sum;
    st->epoch_loss_samples = w->epoch_loss_samples;
    st->ps_version = w->role == ROLE_PS ? w->global_step : 0;
    st->nworkers = w->nworkers;
    for (int i = 0; i < w->nworkers && i < CKPT_MAX_WORKERS; i++) st->batch_of[i] = w->batch_of[i];
    /* Each worker's dropout step: the parameter server has them from the pushes; the
     * ranks of a synchronous algorithm step together, so rank 0's is every rank's. */
    for (int i = 0; i < w->nworkers && i < CKPT_MAX_WORKERS; i++)
        st->dropout_step[i] = w->role == ROLE_PS ? w->dropout_of[i] : w->model->dropout_step;
    st->spec_hash = spec_hash(w->spec);
    st->opt_step = w->opt_step;
    adaptive_save(w, st);
    /* PowerSGD: Q, and every rank's error when rank 0 gathered them after this very step
     * (worker_compress_gather); else none, and a resume starts them at zero. */
    size_t nq, ne;
    long at;
    float *q = compress_q(w->compress, &nq);
    compress_error(w->compress, &ne);
    const float *all = compress_all_errors(w->compress, &at);
    st->compress_verdict = (int32_t)compress_verdict(w->compress, st->compress_probe);
    if (nq > 0) {
        st->compress_q = q;
        st->compress_q_floats = nq;
        st->compress_err_floats = ne;
        if (all && at == w->global_step) {
            st->compress_err = all;
            st->compress_ranks = w->nworkers;
        } else if (w->rank == 0) {
            fprintf(stderr,
                    "checkpoint at step %ld: without PowerSGD's error feedback (gathered at step %ld): a resume "
                    "from it starts the errors at zero\n",
                    w->global_step, at);
        }
    }
}

void worker_checkpoint_path(const worker_t *w, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.ckpt", w->spec->checkpoint.dir, w->spec->name);
}

/* The ONNX bytes the model was imported from (an uploaded model's from the spec's loader, a
 * file's read into *own, which the caller frees), or NULL for a built-in model. 0, or -1. */
static int source_bytes(const job_spec_t *s, const uint8_t **src, size_t *len, uint8_t **own, char *err, size_t errlen)
{
    *src = *own = NULL;
    *len = 0;
    if (s->model_sha256[0]) return modelfetch_bytes(s->model_onnx, s->model_sha256, src, len, err, errlen);
    if (s->model_onnx[0] && onnx_read_file(s->model_onnx, own, len, err, errlen) != 0) return -1;
    *src = *own;
    return 0;
}

int worker_export_onnx(const worker_t *w, const char *path, char *err, size_t errlen)
{
    const uint8_t *src;
    uint8_t *own;
    size_t len;
    model_t *m;
    if (worker_export_model(w, 1, &m, err, errlen) != 0) return -1;
    int rc = source_bytes(w->spec, &src, &len, &own, err, errlen);
    if (rc == 0)
        rc = src ? onnx_export_to_file(src, len, m, path, err, errlen) : onnx_export_file(NULL, m, path, err, errlen);
    free(own);
    if (m != w->model) model_free(m);
    return rc;
}

int worker_export_safetensors(const worker_t *w, const char *path, const st_out_t *o, char *err, size_t errlen)
{
    const uint8_t *src;
    uint8_t *own;
    size_t len;
    model_t *m;
    /* lora.export separate: the base weights, and the adapters apart */
    const int merge = strcmp(w->spec->lora.export_, "separate") != 0;
    if (worker_export_model(w, merge, &m, err, errlen) != 0) return -1;
    int rc = source_bytes(w->spec, &src, &len, &own, err, errlen);
    if (rc == 0 && m != w->model && !merge) rc = worker_export_separate(w, m, src, len, path, err, errlen);
    else if (rc == 0) rc = st_export_to_file(src, len, m, o, path, err, errlen);
    free(own);
    if (m != w->model) model_free(m);
    return rc;
}

int worker_save_checkpoint(worker_t *w, char *err, size_t errlen)
{
    char path[1100], why[1400];
    worker_model_to_host(w);
    ckpt_state_t st;
    worker_checkpoint_path(w, path, sizeof path);
    fill_ckpt(w, &st);
    shard_before_checkpoint(w); /* algorithm.shard: is every rank's state this step's? */
    /* The records of these weights (the epoch's evaluation) reach Redis before the
     * checkpoint appears: the coordinator stops an attempt for an elastic resize as soon
     * as it sees a new checkpoint, and a record still queued then would be lost. (No
     * wait while Redis is unreachable: those records wait for the reconnection.) */
    if (w->metrics && metrics_flush(w->metrics, METRICS_FLUSH_CKPT_S) != 0)
        fprintf(stderr, "pacer-worker: metrics not all delivered within %.1f s before the checkpoint\n",
                METRICS_FLUSH_CKPT_S);
    /* With a fence, the checkpoint is written under a name of this attempt's and renamed
     * over NAME.ckpt under the fence's lock, unless the coordinator has ended the attempt
     * meanwhile (a rank it could not see go: common/ckptdir.h). */
    char own[1200];
    int fence_fd = -1;
    const job_spec_t *s = w->spec;
    if (w->fence >= 0 && ckptdir_fence_own(own, sizeof own, s->checkpoint.dir, s->name, w->fence) != 0) {
        snprintf(err, errlen, "%s: path too long", s->checkpoint.dir);
        return -1;
    }
    if (checkpoint_save(w->fence >= 0 ? own : path, w->model, &st, err, errlen) != 0) return -1;
    if (w->fence >= 0) {
        if (ckptdir_fence_enter(s->checkpoint.dir, s->name, w->fence, &fence_fd, err, errlen) != 0 ||
            fs_rename(own, path) != 0) {
            if (fence_fd >= 0) snprintf(err, errlen, "%s: rename from %s failed: %s", path, own, strerror(errno));
            unlink(own);
            ckptdir_fence_leave(fence_fd);
            return -1;
        }
    }
    w->ckpt_step = w->global_step;
    /* The same weights as ONNX for the coordinator to serve; a failure costs the download,
     * not the training. */
    if (w->model_onnx_out && worker_export_onnx(w, w->model_onnx_out, why, sizeof why) != 0)
        fprintf(stderr, "pacer-worker: --model-onnx: %s\n", why);
    if (w->model_st_out && worker_export_safetensors(w, w->model_st_out, NULL, why, sizeof why) != 0)
        fprintf(stderr, "pacer-worker: --model-safetensors: %s\n", why);
    /* The accuracy belongs to these weights only when they were evaluated at this step. */
    double acc = w->eval_step == w->global_step && isfinite(w->test_accuracy) ? w->test_accuracy : -1.0;
    if (acc > 1.0) acc = 1.0;
    /* The last checkpoint from before a collapse that may be declared later stays too
     * (health.h): on_collapse "restart" resumes from it. */
    long long good = w->health.state == HEALTH_UNKNOWN ? -1 : health_good_step(&w->health, w->global_step);
    if (ckptdir_retain(s->checkpoint.dir, s->name, w->global_step, w->epoch, acc, s->checkpoint.keep_last,
                       s->checkpoint.keep_best, good, why, sizeof why) != 0)
        fprintf(stderr, "pacer-worker: checkpoint %s written, but not retained as configured: %s\n", path, why);
    ckptdir_fence_leave(fence_fd);
    return 0;
}

/* min_gain's verdict, once, at the first epoch end after the probe (not in the step,
 * which formats nothing): what the summary's compression.auto says. */
static void log_verdict(worker_t *w)
{
    double v[COMPRESS_PROBE_N];
    const compress_verdict_t verdict = compress_verdict(w->compress, v);
    if (w->rank != 0 || w->verdict_told || verdict == COMPRESS_UNDECIDED) return;
    w->verdict_told = 1;
    const double gain = compress_probe_gain(v);
    if (isnan(gain)) fprintf(stderr, "compression: powersgd kept: the probe timed nothing (a resume past it)\n");
    else
        fprintf(stderr,
                "compression: powersgd %s: the probe's compressed all-reduce saves %.1f%% of a plain step (%.4f s "
                "against %.4f s, the step %.4f s), min_gain %.1f%%\n",
                verdict == COMPRESS_KEEP ? "kept" : "off, plain from here on", 100 * gain,
                v[PROBE_COMP_S] / v[PROBE_COMP_N], v[PROBE_PLAIN_S] / v[PROBE_PLAIN_N],
                v[PROBE_STEP_S] / v[PROBE_STEP_N], 100 * w->spec->algorithm.compression.min_gain);
}

int worker_epoch_done(worker_t *w, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    w->eval_step = w->global_step; /* every caller has just evaluated */
    worker_health_eval(w);
    worker_report_epoch(w, METRICS_EPOCH, 1);
    if (w->rank == 0 && w->train.tok)
        fprintf(stderr,
                "epoch %ld/%d done: train_loss_running %.4f test_loss %.4f test_perplexity %.2f "
                "next_token_accuracy %.4f\n",
                w->epoch + 1, s->epochs, w->train_loss_running, w->test_loss, exp(w->test_loss), w->test_accuracy);
    else if (w->rank == 0)
        fprintf(stderr, "epoch %ld/%d done: train_loss_running %.4f test_loss %.4f test_accuracy %.4f\n", w->epoch + 1,
                s->epochs, w->train_loss_running, w->test_loss, w->test_accuracy);
    log_verdict(w);
    w->epoch++;
    w->step_in_epoch = 0;
    w->cursor = 0;
    w->epoch_loss_sum = 0;
    w->epoch_loss_samples = 0;
    w->pass = 0;
    if (worker_target_reached(w)) {
        if (w->rank == 0) fprintf(stderr, "target accuracy %.4f reached\n", s->target_accuracy);
        w->stop = STOP_TARGET;
    }
    /* keep_best needs checkpoints whose accuracy is known: these weights, just evaluated
     * (not collapsed ones that stop the run: a restart must not find them the latest). */
    if (s->checkpoint.keep_best && s->checkpoint.every_steps > 0 && w->rank == 0 && w->stop != STOP_COLLAPSE)
        return worker_save_checkpoint(w, err, errlen);
    return 0;
}

int worker_checkpoint_due(const worker_t *w)
{
    long every = w->spec->checkpoint.every_steps;
    return every > 0 && w->rank == 0 && w->global_step % every == 0;
}

int worker_final_checkpoint_due(const worker_t *w)
{
    /* A notice always leaves a checkpoint: the run resumes from it, whatever every_steps. */
    if (w->stop == STOP_NOTICE) return w->rank == 0 && w->ckpt_step != w->global_step;
    return w->spec->checkpoint.every_steps > 0 && w->rank == 0 && w->stop != STOP_TEST_HOOK &&
           w->stop != STOP_COLLAPSE && w->ckpt_step != w->global_step;
}

/* A notice to stop (sigterm.h), at this step boundary. ssgd's all-reduce of the step
 * carried every rank's notice (notice_carried: sigterm_slot_pack), so agreeing costs no
 * collective of its own on the steps nobody heard one. Elsewhere (hier_bsp's all-reduce
 * spans a group, not the world; local SGD and hpsgd reduce only at their sync points, and
 * stopping there could be many steps after the notice; the parameter server's workers
 * reduce nothing) one all-reduce of an int a step agrees on it. The rank that heard it is
 * the largest rank + 1 of an all-reduce's flags: in ssgd's case one more all-reduce, only
 * on the step every rank stops after. Alone (one process, the parameter server) the
 * rank's own flag decides. */
static int notice_agreed(worker_t *w, int alone)
{
    int carried = w->notice_carried;
    int sig = carried ? w->notice_sent : sigterm_heard();
    w->notice_carried = 0;
    if (carried && !w->notice_heard) return 0;
    int flag = sig ? w->rank + 1 : 0;
    if (!alone && w->notice_agree) flag = w->notice_agree(w, flag);
    if (!flag) return 0;
    w->notice_signal = sig ? sig : 15; /* another rank heard it: SIGTERM is the one handled */
    w->notice_rank = flag - 1;
    w->notice_step = w->global_step;
    w->stop = STOP_NOTICE;
    shard_gather_for_notice(w); /* the checkpoint holds every rank's optimizer state */
    if (w->rank == 0)
        fprintf(stderr, "notice: signal %d heard by rank %d: every rank stops after step %ld and checkpoints\n",
                w->notice_signal, w->notice_rank, w->global_step);
    return 1;
}

/* eval_every_steps: an evaluation between epoch ends, outside the training time (the
 * PS keeps loop_s current first, for time_to_target_s, and books the evaluation aside). */
static void evaluate_between(worker_t *w, const step_end_t *c)
{
    double te = clock_mono_s();
    if (c->aside_s) w->loop_s = te - c->started - *c->aside_s;
    if (w->algo->evaluate) w->algo->evaluate(w);
    else worker_evaluate(w, &w->test_loss, &w->test_accuracy);
    worker_evaluated_between(w);
    if (c->aside_s) *c->aside_s += clock_mono_s() - te;
}

step_verdict_t worker_step_end(worker_t *w, const step_end_t *c)
{
    const job_spec_t *s = w->spec;
    const train_opts_t *o = w->opts;
    int (*agree)(worker_t *, int) = c->alone ? NULL : w->agree;
    if (o->stop_after_steps > 0 && w->global_step >= o->stop_after_steps) {
        w->stop = STOP_TEST_HOOK; /* test hook: simulate an interruption */
        return STEP_HALT;
    }
    if (notice_agreed(w, c->alone)) return STEP_HALT;
    if (c->may_evaluate && s->eval_every_steps > 0 && w->global_step % s->eval_every_steps == 0) {
        evaluate_between(w, c);
        if (w->stop) return STEP_FINISH; /* the target was reached */
    }
    /* A collapse that on_collapse stops for: the epoch end evaluates the weights as they
     * are, then the loop ends without a checkpoint. */
    health_agree(w, 0, agree);
    if (w->stop) return STEP_FINISH;
    if (o->time_budget_s > 0) {
        /* Seconds of training (evaluations and, at the PS, checkpoints left out); in the
         * synchronous loop rank 0's decides, so every rank stops after the same step. */
        double trained = c->aside_s ? clock_mono_s() - c->started - *c->aside_s : w->loop_s;
        int over = trained >= o->time_budget_s;
        if (agree) over = agree(w, over);
        if (over) {
            w->stop = STOP_BUDGET;
            return STEP_FINISH;
        }
    }
    return STEP_GO_ON;
}
