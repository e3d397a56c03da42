/* worker/train.c - the machinery every algorithm shares (batches, gradient computation
 * with emulated slowdown, the SGD update, evaluation) and the training loop around
 * algo->step. The loop owns progress lines, checkpoints, epoch ends and the summary. */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "backend_cuda.h"
#include "checkpoint.h"
#include "clock.h"
#include "hostname.h"
#include "planner.h"

/* ---- shared machinery ------------------------------------------------------------------ */

/* A device failure mid-job is not recoverable here; the launcher restarts from a checkpoint. */
static void gpu_fail(const worker_t *w, const char *what)
{
    fprintf(stderr, "pacer-worker: rank %d: CUDA: %s: %s\n", w->rank, what, cuda_model_error(w->gpu));
    abort();
}

void worker_epoch_order(worker_t *w)
{
    /* The permutation depends only on (seed, epoch), so every rank computes the same one
     * and a resumed run recomputes it instead of storing it. */
    rng_t r;
    rng_seed(&r, (uint64_t)w->spec->seed * 1000003u + (uint64_t)w->epoch);
    for (int i = 0; i < w->train.n; i++) w->perm[i] = i;
    rng_shuffle(&r, w->perm, w->train.n);
}

/* Floats the batch buffer x holds: max_batch samples of the model's input shape. */
static size_t x_floats(const worker_t *w)
{
    const model_t *m = w->model;
    return (size_t)w->max_batch * (size_t)m->C * (size_t)m->H * (size_t)m->W;
}

void worker_gather(worker_t *w, long offset, int b)
{
    /* Sizes come from the plan in force (spec, --batch-plan, a checkpoint or the
     * coordinator), each validated where it enters; this is the last line: a batch that
     * would run past the epoch order or the buffers stops the rank instead of writing
     * past them. Never reached with validated input. */
    if (b < 0 || b > w->max_batch || offset < 0 || offset > (long)w->train.n - b ||
        data_batch_gather(&w->train, w->perm + offset, b, w->x, x_floats(w), w->y,
                          w->spec->dataset.augment, &w->aug_rng) != 0) {
        fprintf(stderr, "pacer-worker: rank %d: batch of %d at position %ld does not fit "
                "(buffer %d, %d samples): refusing to gather it\n", w->rank, b, offset, w->max_batch,
                w->train.n);
        abort();
    }
    w->batch = b;
    /* A new batch size (a re-plan) gets its convolution algorithms here, before the timed
     * step; a size seen before reuses its choice. */
    if (w->gpu && cuda_model_prepare_batch(w->gpu, b) != 0) gpu_fail(w, "preparing the batch size");
}

void worker_next_batch(worker_t *w)
{
    long offset = w->cursor;
    for (int i = 0; i < w->worker_index; i++) offset += w->batch_of[i];
    /* Every rank takes its share of the same global positions; the loop guarantees
     * cursor + global_batch <= n, so the shares never run off the epoch. */
    worker_gather(w, offset, w->batch_of[w->worker_index]);
}

float worker_compute_grad(worker_t *w, float loss_scale)
{
    double t0 = clock_mono_s(), c0 = clock_cpu_s();
    float loss;
    if (w->gpu) {
        /* The host params go up unless the device optimizer holds newer ones (worker.h);
         * x, y, params and grads are page-locked, so every copy is DMA; the gradient comes
         * back into model->grads with the step's one wait, during which an algorithm's
         * progress callback (hpsgd) drives MPI. */
        model_t *m = w->model;
        cuda_model_set_progress(w->gpu, m->progress, m->progress_ctx);
        if (!w->gpu_ahead && cuda_model_upload_params(w->gpu, m->params) != 0) gpu_fail(w, "uploading the weights");
        if (cuda_model_train_step(w->gpu, w->x, w->y, w->batch, loss_scale, m->grads, &loss) != 0)
            gpu_fail(w, "training step");
    } else {
        loss = model_forward(w->model, w->x, w->y, w->batch, 1);
        model_backward(w->model, w->x, w->y, w->batch, loss_scale);
    }
    /* Compute time as a dedicated machine would see it: the smaller of wall time and
     * process CPU time. On an oversubscribed test machine (4 ranks on 2 cores) wall time
     * also counts the time the scheduler gave our core to another rank, which would make
     * measured speeds (and the emulated slowdowns built on them) depend on scheduling
     * luck; with several BLAS threads CPU time exceeds wall time and wall time is used. */
    double dt = clock_mono_s() - t0, dc = clock_cpu_s() - c0;
    if (!w->gpu && dc > 0 && dc < dt) dt = dc;  /* the GPU computes while the CPU waits */
    /* Emulated heterogeneity: a rank with factor f behaves like a machine f times slower
     * by waiting (f - 1) x its measured compute time. The wait counts as compute (it is
     * what a slower machine would spend computing) and is also kept apart in emulated_s,
     * so metrics show both. Sleeping, not spinning, leaves the core to the other ranks of
     * an oversubscribed test machine. */
    double extra = (w->slowdown - 1.0) * dt;
    clock_sleep_s(extra);
    dt += extra;
    w->stats.emulated_s += extra;
    w->stats.step_compute_s = dt;
    w->stats.compute_s += dt;
    w->stats.step_comm_s = 0;
    w->stats.step_idle_s = 0;
    if (dt > 0) {
        double sps = (double)w->batch / dt;
        w->stats.ewma_sps = w->stats.ewma_sps > 0 ? 0.7 * w->stats.ewma_sps + 0.3 * sps : sps;
    }
    w->stats.samples += w->batch;
    w->stats.last_loss = loss;
    return loss;
}

/* The update on the device: g (host, nparams floats) is uploaded first, unless NULL (the
 * device's own gradient). Same rule as the host path below (cuda_clip_scale computes the
 * clipping coefficient the same way), so a GPU rank and a CPU rank update alike. */
static void apply_on_device(worker_t *w, const float *g, float grad_scale)
{
    const job_spec_t *s = w->spec;
    if (g && cuda_model_upload_grads(w->gpu, g) != 0) gpu_fail(w, "uploading the gradient");
    if (cuda_model_sgd(w->gpu, w->lr, (float)s->optimizer.momentum, s->optimizer.nesterov,
                       (float)s->optimizer.weight_decay, grad_scale, (float)s->optimizer.clip_norm) != 0)
        gpu_fail(w, "optimizer step");
    w->gpu_ahead = 1;
}

void worker_apply_local_update(worker_t *w)
{
    if (w->gpu) apply_on_device(w, NULL, 1.0f);
    else worker_apply_gradient(w, w->model->grads, 1.0f);
}

void worker_apply_gradient(worker_t *w, const float *g, float grad_scale)
{
    const job_spec_t *s = w->spec;
    model_t *m = w->model;
    if (w->gpu) {
        apply_on_device(w, g, grad_scale);
        return;
    }
    if (s->optimizer.clip_norm > 0) {
        /* Clip the gradient the update will use, grad_scale * g, to clip_norm. */
        float norm = grad_scale * (float)sqrt(sum_squares(m->nparams, g));
        if (norm > (float)s->optimizer.clip_norm) grad_scale *= (float)s->optimizer.clip_norm / norm;
    }
    sgd_update(m->nparams, m->params, g, m->momentum, w->lr, (float)s->optimizer.momentum,
               s->optimizer.nesterov, (float)s->optimizer.weight_decay, grad_scale);
}

void worker_apply_update(worker_t *w, float grad_scale)
{
    worker_apply_gradient(w, w->model->grads, grad_scale);
}

/* The emulated slowdown of this worker at the current step: the spec's static factor,
 * overridden by the last schedule entry for this worker whose step has been reached. */
double worker_slowdown_now(const worker_t *w)
{
    const job_spec_t *s = w->spec;
    if (w->worker_index < 0) return 1.0;
    double f = s->emulate.nslowdown ? s->emulate.slowdown[w->worker_index] : 1.0;
    long best = -1;
    for (int i = 0; i < s->emulate.nschedule; i++) {
        const spec_slowdown_change_t *c = &s->emulate.schedule[i];
        if (c->rank == w->worker_index && c->step <= w->global_step && c->step >= best) {
            best = c->step;
            f = c->slowdown;
        }
    }
    return f;
}

static void hostname_once(char *out, size_t len)
{
    host_name(out, len);
}

/* Fills the reusable record with this rank's state after a step. */
static metrics_record_t *fill_record(worker_t *w, metrics_kind_t kind)
{
    metrics_record_t *r = &w->record;   /* preallocated; host filled once at set-up */
    r->kind = kind;
    r->time = clock_wall_s();
    r->step = w->global_step;
    r->epoch = w->epoch + 1;
    r->batch = w->batch;
    r->loss = w->stats.last_loss;
    r->compute_s = w->stats.step_compute_s;
    r->comm_s = w->stats.step_comm_s;
    r->idle_s = w->stats.step_idle_s;
    r->baseline_comm_s = w->stats.step_baseline_s;
    r->samples_per_s = w->stats.ewma_sps;
    r->samples = w->stats.samples;
    r->slowdown = w->slowdown;
    r->staleness = w->staleness;
    r->plan_version = w->plan_version;
    r->test_loss = NAN;
    r->test_accuracy = NAN;
    return r;
}

void worker_report_step(worker_t *w)
{
    if (w->metrics) metrics_push(w->metrics, fill_record(w, METRICS_STEP));
}

/* Epoch-end and final records carry the evaluation and the epoch's mean training loss. */
static void report_epoch(worker_t *w, metrics_kind_t kind)
{
    if (!w->metrics) return;
    metrics_record_t *r = fill_record(w, kind);
    r->epoch = kind == METRICS_EPOCH ? w->epoch + 1 : w->epoch;
    r->test_loss = w->test_loss;
    r->test_accuracy = w->test_accuracy;
    r->loss = w->train_loss;
    metrics_push(w->metrics, r);
}

void worker_model_to_host(worker_t *w)
{
    if (!w->gpu) return;
    model_t *m = w->model;
    if (w->gpu_ahead) {
        if (cuda_model_download_params(w->gpu, m) != 0) gpu_fail(w, "downloading the weights");   /* and buffers */
        w->gpu_ahead = 0;
    } else if (cuda_model_download_buffers(w->gpu, m->buffers) != 0) {
        gpu_fail(w, "downloading the batch-norm statistics");
    }
}

void worker_buffers_to_device(worker_t *w)
{
    if (w->gpu && cuda_model_upload_buffers(w->gpu, w->model->buffers) != 0)
        gpu_fail(w, "uploading the batch-norm statistics");
}

void worker_evaluate(worker_t *w, float *loss, float *accuracy)
{
    model_t *m = w->model;
    const dataset_t *d = &w->test;
    double loss_sum = 0;
    long correct = 0;
    if (w->gpu && !w->gpu_ahead && cuda_model_upload_params(w->gpu, m->params) != 0)
        gpu_fail(w, "uploading the weights");
    for (int first = 0; first < d->n; first += w->max_batch) {
        int b = d->n - first < w->max_batch ? d->n - first : w->max_batch;
        for (int i = 0; i < b; i++) w->eval_idx[i] = first + i;
        if (data_batch_gather(d, w->eval_idx, b, w->x, x_floats(w), w->y, 0, NULL) != 0) {
            /* worker_setup checked the test set's shape against the model */
            fprintf(stderr, "pacer-worker: rank %d: %s does not fit the model: refusing to evaluate\n",
                    w->rank, d->source);
            abort();
        }
        if (w->gpu) {
            float l = cuda_model_forward(w->gpu, w->x, w->y, b, 0);
            const float *logits = l < 0 ? NULL : cuda_model_logits_host(w->gpu, b);
            if (!logits) gpu_fail(w, "evaluation");
            loss_sum += (double)l * b;
            correct += count_correct(b, m->num_classes, logits, w->y);
            continue;
        }
        loss_sum += (double)model_forward(m, w->x, w->y, b, 0) * b;
        correct += count_correct(b, m->num_classes, model_logits(m), w->y);
    }
    *loss = d->n ? (float)(loss_sum / d->n) : 0.0f;
    *accuracy = d->n ? (float)correct / (float)d->n : 0.0f;
}

/* device "cpu": the reference path. "cuda": GPU local_rank % device_count; a rank that
 * cannot use it fails with the reason, before training. "auto": the GPU when the probe
 * passes, else the CPU, after saying why on stderr and in the summary (per_rank[].device,
 * and the job's "device"). Ranks choose independently, so one job may mix GPU and CPU
 * ranks (the node profiles show each rank's device, and dynamic batching balances them).
 * The CUDA backend (model/backend_cuda.h) is a library loaded here, never for "cpu":
 * "cuda" loads it first (a library that cannot be loaded is the error); "auto" first asks
 * the driver, so a machine without a GPU maps no CUDA library. The probe tells "no driver",
 * "no device", "driver too old" and "no kernel image for this GPU" apart, and runs a
 * kernel on the device, so none of them surfaces as a failure in the first step. */
static int select_device(worker_t *w, char *err, size_t errlen)
{
    const char *dev = w->spec->device;
    snprintf(w->record.device, sizeof w->record.device, "cpu");
    w->device_reason[0] = '\0';
    if (strcmp(dev, "cpu") == 0) return 0;
    if (w->role == ROLE_PS) {
        snprintf(w->device_reason, sizeof w->device_reason, "the parameter server computes on the CPU");
        return 0;
    }
    const int want_cuda = strcmp(dev, "cuda") == 0;
    char why[sizeof w->device_reason];
    cuda_probe_t p;
    if (want_cuda && cuda_backend_load(why, sizeof why) != 0) goto fallback;
    if (cuda_probe(-1, &p) != CUDA_PROBE_OK) {
        snprintf(why, sizeof why, "%s", p.reason);
        goto fallback;
    }
    w->gpu = cuda_model_create(w->model, p.device, why, sizeof why);
    if (w->gpu && cuda_model_upload(w->gpu, w->model) != 0) snprintf(why, sizeof why, "%s", cuda_model_error(w->gpu));
    else if (w->gpu) {
        snprintf(w->record.device, sizeof w->record.device, "cuda");
        fprintf(stderr, "rank %d: training on GPU %d (%s)\n", w->rank, p.device, p.name);
        return 0;
    }
    cuda_model_free(w->gpu);
    w->gpu = NULL;
fallback:
    if (want_cuda) {
        snprintf(err, errlen, "device: cuda: %s", why);
        return -1;
    }
    snprintf(w->device_reason, sizeof w->device_reason, "%s", why);
    fprintf(stderr, "device auto: rank %d: %s; training on the CPU\n", w->rank, why);
    return 0;
}

/* Page-locks the host buffers every step copies to or from the device (the batch, params,
 * grads), so those copies are DMA from where the worker keeps them. Each is its own pages
 * (page_alloc, model_create's fused buffers). A buffer the driver will not lock stays
 * pageable: slower copies, same results. */
static void pin_host_buffers(worker_t *w)
{
    model_t *m = w->model;
    size_t img = (size_t)m->C * m->H * m->W;
    struct { void *p; size_t bytes; } bufs[] = {
        { w->x, (size_t)w->max_batch * img * sizeof(float) },
        { w->y, (size_t)w->max_batch * sizeof(int32_t) },
        { m->params, m->nparams * sizeof(float) },
        { m->grads, (m->nparams + MODEL_GRAD_EXTRA) * sizeof(float) },
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (cuda_model_host_register(w->gpu, bufs[i].p, bufs[i].bytes) != 0)
            fprintf(stderr, "rank %d: %s; copies through it stay pageable\n", w->rank, cuda_model_error(w->gpu));
}

/* Whole pages of zeroes: a buffer that may be page-locked must not share a page with one
 * that is locked separately. */
static void *page_alloc(size_t bytes)
{
    const size_t page = 4096;
    size_t n = (bytes + page - 1) / page * page;
    void *p = aligned_alloc(page, n ? n : page);
    if (p) memset(p, 0, n ? n : page);
    return p;
}

/* ---- set-up ------------------------------------------------------------------------------ */

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

void worker_even_plan(int global, int n, int *out)
{
    for (int i = 0; i < n; i++) out[i] = global / n + (i < global % n ? 1 : 0);
}

int worker_setup(worker_t *w, const job_spec_t *spec, int rank, int world, char *err, size_t errlen)
{
    return worker_setup_world(w, spec, rank, world, spec->workers, err, errlen);
}

int worker_setup_world(worker_t *w, const job_spec_t *spec, int rank, int world, int nworkers, char *err,
                       size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (nworkers < 1 || nworkers > spec->workers) {
        snprintf(err, errlen, "%d workers: must be 1 to the spec's %d", nworkers, spec->workers);
        return -1;
    }
    w->spec = spec;
    w->rank = rank;
    w->world = world;
    w->algo = algo_find(spec->algorithm.name);
    if (!w->algo) {
        snprintf(err, errlen, "algorithm.name: '%s' is not built into this worker", spec->algorithm.name);
        return -1;
    }
    int async = spec_is_async(spec);
    w->nworkers = nworkers;
    w->role = (async && rank == 0) ? ROLE_PS : ROLE_WORKER;
    w->worker_index = async ? rank - 1 : rank;
    w->global_batch = spec->workers * spec->batch_size;
    /* Buffers hold the largest batch a plan may assign; evaluation uses them too. */
    w->max_batch = spec->algorithm.max_batch > 0 ? spec->algorithm.max_batch : spec->batch_size;
    if (spec->algorithm.dynamic_batch && spec->algorithm.max_batch <= 0)
        w->max_batch = w->global_batch;
    if (w->max_batch < spec->batch_size) w->max_batch = spec->batch_size;
    if (w->max_batch > 4096 && w->max_batch > spec->batch_size) w->max_batch = spec->batch_size * 4;
    /* Fewer workers than the spec asks share its global batch: each holds its share. */
    int share = (w->global_batch + nworkers - 1) / nworkers;
    if (w->max_batch < share) w->max_batch = share;

    const char *ds = spec->dataset.name;
    const char *dir = spec->dataset.path[0] ? spec->dataset.path : NULL;
    int rc = dataset_load(ds, dir, 1, &w->train, err, errlen);
    if (rc == 0) rc = dataset_load(ds, dir, 0, &w->test, err, errlen);
    if (rc != 0) return rc;
    if (spec->dataset.train_subset > 0) dataset_truncate(&w->train, spec->dataset.train_subset);
    if (spec->dataset.test_subset > 0) dataset_truncate(&w->test, spec->dataset.test_subset);

    if (model_create(spec->model, w->max_batch, &w->model, err, errlen) != 0) return -1;
    model_t *m = w->model;
    /* Both sets, once: every later copy into x/y relies on the shape matching the model
     * (the spec's model/dataset pairing says nothing about what the files hold). */
    rc = dataset_check_shape(&w->train, m->C, m->H, m->W, m->num_classes, m->name, err, errlen);
    if (rc == 0) rc = dataset_check_shape(&w->test, m->C, m->H, m->W, m->num_classes, m->name, err, errlen);
    if (rc != 0) return rc;
    model_init_params(m, spec->seed);
    if (select_device(w, err, errlen) != 0) return -1;

    size_t img = (size_t)m->C * m->H * m->W;
    w->x = page_alloc((size_t)w->max_batch * img * sizeof(float));
    w->y = page_alloc((size_t)w->max_batch * sizeof *w->y);
    w->eval_idx = calloc((size_t)w->max_batch, sizeof *w->eval_idx);
    w->perm = calloc((size_t)w->train.n, sizeof *w->perm);
    w->batch_of = calloc((size_t)w->nworkers, sizeof *w->batch_of);
    w->plan_next = calloc((size_t)w->nworkers, sizeof *w->plan_next);
    w->plan_speeds = calloc((size_t)w->nworkers, sizeof *w->plan_speeds);
    if (!w->x || !w->y || !w->eval_idx || !w->perm || !w->batch_of || !w->plan_next || !w->plan_speeds) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (w->gpu) pin_host_buffers(w);
    worker_even_plan(w->global_batch, w->nworkers, w->batch_of);

    w->steps_per_epoch = w->train.n / w->global_batch;
    if (w->steps_per_epoch < 1) {
        snprintf(err, errlen, "batch_size: global batch %d (workers x batch_size) exceeds the %d training samples",
                 w->global_batch, w->train.n);
        return -1;
    }
    const char *kind = spec->optimizer.lr_schedule.kind;
    w->sched.kind = strcmp(kind, "step") == 0 ? LR_STEP : strcmp(kind, "cosine") == 0 ? LR_COSINE : LR_CONSTANT;
    worker_schedule_steps(w, w->steps_per_epoch);
    w->sched.gamma = (float)spec->optimizer.lr_schedule.gamma;
    w->sched.min_lr = (float)spec->optimizer.lr_schedule.min_lr;
    rng_seed(&w->aug_rng, (uint64_t)spec->seed * 7919u + (uint64_t)rank + 1);
    w->slowdown = worker_slowdown_now(w);
    w->record.rank = rank;
    w->record.role = w->role;
    hostname_once(w->record.host, sizeof w->record.host);
    return 0;
}

void worker_teardown(worker_t *w)
{
    if (w->algo && w->algo->fini) w->algo->fini(w);
    cuda_model_free(w->gpu);
    model_free(w->model);
    dataset_free(&w->train);
    dataset_free(&w->test);
    free(w->x); free(w->y); free(w->eval_idx); free(w->perm); free(w->batch_of);
    free(w->plan_next); free(w->plan_speeds);
    memset(w, 0, sizeof *w);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

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
    st->nworkers = w->nworkers;
    for (int i = 0; i < w->nworkers && i < CKPT_MAX_WORKERS; i++) st->batch_of[i] = w->batch_of[i];
    st->spec_hash = spec_hash(w->spec);
}

void worker_checkpoint_path(const worker_t *w, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.ckpt", w->spec->checkpoint.dir, w->spec->name);
}

int worker_save_checkpoint(worker_t *w, char *err, size_t errlen)
{
    char path[1100];
    worker_model_to_host(w);
    ckpt_state_t st;
    worker_checkpoint_path(w, path, sizeof path);
    fill_ckpt(w, &st);
    return checkpoint_save(path, w->model, &st, err, errlen);
}

int worker_resume(worker_t *w, const char *path, char *err, size_t errlen)
{
    /* Everything the checkpoint's fields are checked against before any is used: the
     * batch sizes index the buffers, the cursor the epoch order. */
    ckpt_expect_t want = {
        .spec_hash = spec_hash(w->spec),
        .seed = (uint64_t)w->spec->seed,
        .nworkers = w->nworkers,
        .spec_workers = w->spec->workers,
        .epochs = w->spec->epochs,
        .steps_per_epoch = w->steps_per_epoch,
        .train_n = w->train.n,
        .global_batch = w->global_batch,
        .max_batch = w->max_batch,
        .async = spec_is_async(w->spec),
    };
    ckpt_state_t st;
    if (checkpoint_load(path, w->model, &want, &st, err, errlen) != 0) return -1;
    w->global_step = st.global_step;
    w->epoch = st.epoch;
    w->step_in_epoch = st.step_in_epoch;
    w->cursor = st.cursor;
    w->aug_rng = st.aug_rng;
    w->epoch_loss_sum = st.epoch_loss_sum;
    w->epoch_loss_samples = st.epoch_loss_samples;
    if (w->gpu && cuda_model_upload(w->gpu, w->model) != 0) {
        snprintf(err, errlen, "CUDA: %s", cuda_model_error(w->gpu));
        return -1;
    }
    w->gpu_ahead = 0;
    if (st.nworkers == w->nworkers) {
        for (int i = 0; i < w->nworkers; i++) w->batch_of[i] = st.batch_of[i];
    } else {
        /* Written by another world (an elastic restart): the same global batch over this
         * run's workers; a planner (dynamic batching, the coordinator's "resize"
         * assignment) refines it at its next re-plan. Set-up already split it evenly. */
        if (w->rank == 0) {
            fprintf(stderr, "checkpoint %s was written by %d workers; resuming with %d: the global batch %d is "
                    "re-planned:", path, (int)st.nworkers, w->nworkers, w->global_batch);
            worker_print_plan(w);
        }
    }
    return 0;
}

int worker_apply_batch_plan(worker_t *w, const char *plan, char *err, size_t errlen)
{
    int n = 0, sum = 0;
    const char *p = plan;
    while (*p) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1 || b > w->max_batch || n >= w->nworkers) {
            snprintf(err, errlen, "--batch-plan: '%s' must be %d batches in [1, %d] (algorithm.max_batch)",
                     plan, w->nworkers, w->max_batch);
            return -1;
        }
        w->batch_of[n++] = (int)b;
        sum += (int)b;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') { n = -1; break; }
    }
    if (n != w->nworkers || sum != w->global_batch) {
        snprintf(err, errlen, "--batch-plan: '%s' must be %d batches summing to workers x batch_size = %d",
                 plan, w->nworkers, w->global_batch);
        worker_even_plan(w->global_batch, w->nworkers, w->batch_of);
        return -1;
    }
    return 0;
}

int worker_replan(worker_t *w, const double *speeds)
{
    const job_spec_t *s = w->spec;
    int n = w->nworkers;
    /* Once the coordinator has assigned a plan it owns planning (it sees every rank's
     * profile and the persistent ones); until then, and without a coordinator, the ranks
     * plan for themselves with the same planner. */
    if (w->assignment_hook && w->assignment_hook(w, w->plan_next) == 1) {
        memcpy(w->batch_of, w->plan_next, (size_t)n * sizeof(int));
        w->plan_version++;
        w->coordinator_plans = 1;
        /* A re-plan is rare (every replan_steps), so one line here costs nothing. */
        fprintf(stderr, "batch plan %ld from the coordinator:", w->plan_version);
        worker_print_plan(w);
        return 1;
    }
    if (w->coordinator_plans) return 0;
    for (int i = 0; i < n; i++)
        if (!(speeds[i] > 0)) return 0;
    int min_b = s->algorithm.min_batch > 0 ? s->algorithm.min_batch : 1;
    if (planner_assign(speeds, w->batch_of, n, w->global_batch, min_b, w->max_batch, 0.05,
                       w->plan_next) != 1)
        return 0;
    memcpy(w->batch_of, w->plan_next, (size_t)n * sizeof(int));
    w->plan_version++;
    fprintf(stderr, "batch plan %ld:", w->plan_version);
    worker_print_plan(w);
    return 1;
}

void worker_print_plan(const worker_t *w)
{
    for (int i = 0; i < w->nworkers; i++) fprintf(stderr, " %d", w->batch_of[i]);
    fprintf(stderr, "\n");
}

void worker_epoch_done(worker_t *w)
{
    const job_spec_t *s = w->spec;
    report_epoch(w, METRICS_EPOCH);
    if (w->rank == 0)
        fprintf(stderr, "epoch %ld/%d done: train_loss %.4f test_loss %.4f test_accuracy %.4f\n",
                w->epoch + 1, s->epochs, w->train_loss, w->test_loss, w->test_accuracy);
    w->epoch++;
    w->step_in_epoch = 0;
    w->cursor = 0;
    w->epoch_loss_sum = 0;
    w->epoch_loss_samples = 0;
    if (s->target_accuracy > 0 && w->test_accuracy >= s->target_accuracy) {
        if (w->rank == 0) fprintf(stderr, "target accuracy %.4f reached\n", s->target_accuracy);
        w->stop = 1;
    }
}

/* ---- the loop ---------------------------------------------------------------------------- */

int worker_train(worker_t *w, const train_opts_t *o, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    int rc = 0;
    int printer = (w->rank == 0);
    w->opts = o;
    if (w->algo->init && (rc = w->algo->init(w)) != 0) {
        snprintf(err, errlen, "algorithm %s failed to start", w->algo->name);
        return rc;
    }
    w->loop_s = 0;
    double t_start = clock_mono_s();
    if (w->algo->run) {
        /* Algorithms with their own loop (the parameter server family). */
        rc = w->algo->run(w);
        w->wall_s = clock_mono_s() - t_start;
        if (rc != 0) {
            snprintf(err, errlen, "algorithm %s failed", w->algo->name);
            return rc;
        }
        report_epoch(w, METRICS_FINAL);
        return 0;
    }
    while (w->epoch < s->epochs && !w->stop) {
        worker_epoch_order(w);
        double t_log = clock_mono_s();
        long samples_log = w->stats.samples;
        while (w->step_in_epoch < w->steps_per_epoch && !w->stop) {
            double t0 = clock_mono_s();
            w->lr = lr_at(&w->sched, (float)s->optimizer.lr, w->global_step, w->total_steps);
            w->slowdown = worker_slowdown_now(w);
            w->step_loss = NAN;
            if ((rc = w->algo->step(w)) != 0) {
                snprintf(err, errlen, "algorithm %s: step %ld failed", w->algo->name, w->global_step);
                return rc;
            }
            /* Algorithms that know the global loss (ssgd) report it in step_loss over
             * step_samples; otherwise the rank's own batch loss is used. */
            if (isnan(w->step_loss)) { w->step_loss = w->stats.last_loss; w->step_samples = w->batch; }
            w->epoch_loss_sum += (double)w->step_loss * w->step_samples;
            w->epoch_loss_samples += w->step_samples;
            w->cursor += w->global_batch;
            w->step_in_epoch++;
            w->global_step++;
            w->stats.steps++;
            w->loop_s += clock_mono_s() - t0;
            worker_report_step(w);

            if (printer && s->log_every > 0 && w->global_step % s->log_every == 0) {
                double t = clock_mono_s();
                fprintf(stderr, "epoch %ld/%d step %ld/%ld loss %.4f lr %.5f samples/s %.0f\n",
                        w->epoch + 1, s->epochs, w->step_in_epoch, w->steps_per_epoch,
                        w->step_loss, w->lr,
                        (double)(w->stats.samples - samples_log) * w->nworkers / (t - t_log));
                t_log = t;
                samples_log = w->stats.samples;
            }
            if (s->checkpoint.every_steps > 0 && w->global_step % s->checkpoint.every_steps == 0 &&
                w->rank == 0) {
                if (worker_save_checkpoint(w, err, errlen) != 0) return -1;
            }
            if (o->stop_after_steps > 0 && w->global_step >= o->stop_after_steps) {
                w->stop = 2; /* test hook: simulate an interruption */
                break;
            }
            if (o->time_budget_s > 0) {
                /* Rank 0's clock decides, so every rank stops after the same step. */
                int over = clock_mono_s() - t_start >= o->time_budget_s;
                if (w->agree) over = w->agree(w, over);
                if (over) w->stop = 3;
            }
        }
        if (w->stop == 2) break;
        if (w->algo->epoch_end && (rc = w->algo->epoch_end(w)) != 0) {
            snprintf(err, errlen, "algorithm %s: epoch end failed", w->algo->name);
            return rc;
        }
        w->train_loss = w->epoch_loss_samples ? (float)(w->epoch_loss_sum / (double)w->epoch_loss_samples) : 0;
        if (w->algo->evaluate) w->algo->evaluate(w);
        else worker_evaluate(w, &w->test_loss, &w->test_accuracy);
        worker_epoch_done(w);
        if (w->stop == 3 && w->rank == 0)
            fprintf(stderr, "time budget of %.1f s used: stopped in epoch %ld\n", o->time_budget_s, w->epoch);
    }
    w->wall_s = clock_mono_s() - t_start;
    report_epoch(w, METRICS_FINAL);
    if (s->checkpoint.every_steps > 0 && w->rank == 0 && w->stop != 2)
        if (worker_save_checkpoint(w, err, errlen) != 0) return -1;
    return 0;
}

/* ---- summary ---------------------------------------------------------------------------- */

json_t *staleness_json(const staleness_t *s)
{
    json_t *hist = json_array();
    for (int b = 0; b < STALENESS_BUCKETS; b++) json_array_append_new(hist, json_integer(s->hist[b]));
    return json_pack("{s:I, s:f, s:I, s:I, s:I, s:o}",
                     "count", (json_int_t)s->count,
                     "mean", staleness_mean(s),
                     "p50", (json_int_t)staleness_quantile(s, 0.5),
                     "p95", (json_int_t)staleness_quantile(s, 0.95),
                     "max", (json_int_t)s->max,
                     "hist", hist);
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* {"requested": spec device, "used": "cpu" | "cuda", "reason": why not the GPU (only when a
 * rank that may use one computes on the CPU)}. */
static json_t *device_json(const worker_t *w)
{
    json_t *d = json_pack("{s:s, s:s}", "requested", w->spec->device, "used", w->record.device);
    if (d && w->device_reason[0]) json_object_set_new(d, "reason", json_string(w->device_reason));
    return d;
}

json_t *worker_rank_json(const worker_t *w)
{
    json_t *st = staleness_json(&w->staleness);
    return json_pack("{s:i, s:s, s:o, s:f, s:f, s:f, s:f, s:I, s:I, s:i, s:f, s:f, s:f, s:o}",
                     "rank", w->rank,
                     "role", w->role == ROLE_PS ? "ps" : "worker",
                     "device", device_json(w),
                     "compute_s", w->stats.compute_s,
                     "comm_s", w->stats.comm_s,
                     "idle_s", w->stats.idle_s,
                     "emulated_s", w->stats.emulated_s,
                     "samples", (json_int_t)w->stats.samples,
                     "steps", (json_int_t)w->stats.steps,
                     "batch_final", w->role == ROLE_PS ? 0 : w->batch_of[w->worker_index],
                     "samples_per_s", w->stats.compute_s > 0 ? (double)w->stats.samples / w->stats.compute_s : 0.0,
                     "peak_rss_mb", peak_rss_mb(),
                     "slowdown", w->slowdown,
                     "staleness", st);
}

/* The job's device: {"requested", "used": "cuda" when every computing rank used a GPU,
 * "cpu" when none did, else "mixed"; "gpu_ranks"; "reason": the first fallback's reason}. */
static json_t *job_device_json(const job_spec_t *s, json_t *per_rank)
{
    size_t i;
    json_t *r;
    int gpu = 0, cpu = 0;
    const char *reason = NULL;
    json_array_foreach(per_rank, i, r) {
        const char *role = json_string_value(json_object_get(r, "role"));
        if (!role || strcmp(role, "worker") != 0) continue;
        json_t *d = json_object_get(r, "device");
        const char *used = json_string_value(json_object_get(d, "used"));
        if (used && strcmp(used, "cuda") == 0) gpu++;
        else cpu++;
        if (!reason) reason = json_string_value(json_object_get(d, "reason"));
    }
    json_t *out = json_pack("{s:s, s:s, s:i}", "requested", s->device,
                            "used", gpu && cpu ? "mixed" : gpu ? "cuda" : "cpu", "gpu_ranks", gpu);
    if (out && reason) json_object_set_new(out, "reason", json_string(reason));
    return out;
}

int worker_write_summary(const worker_t *w, const char *path, json_t *per_rank, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    long train_samples = 0;
    size_t i;
    json_t *r;
    json_array_foreach(per_rank, i, r) train_samples += (long)json_integer_value(json_object_get(r, "samples"));
    double peak = 0;
    json_array_foreach(per_rank, i, r) {
        double p = json_real_value(json_object_get(r, "peak_rss_mb"));
        if (p > peak) peak = p;
    }
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:O}",
                             "name", s->name,
                             "model", s->model,
                             "dataset", s->dataset.name,
                             "algorithm", s->algorithm.name,
                             "workers", s->workers,
                             "epochs", s->epochs,
                             "steps", (json_int_t)w->global_step,
                             "train_loss", (double)w->train_loss,
                             "test_loss", (double)w->test_loss,
                             "test_accuracy", (double)w->test_accuracy,
                             "wall_s", w->wall_s,
                             "train_s", w->loop_s,
                             "train_samples_per_s", w->loop_s > 0 ? (double)train_samples / w->loop_s : 0.0,
                             "peak_rss_mb", peak,
                             "per_rank", per_rank);
    if (!root) {
        snprintf(err, errlen, "summary: out of memory");
        return -1;
    }
    /* The job's staleness: at the parameter server it is the exact record of every applied
     * update; for the synchronous family the ranks' records merged. */
    staleness_t total = w->staleness;
    if (w->role != ROLE_PS) {
        memset(&total, 0, sizeof total);
        json_array_foreach(per_rank, i, r) {
            json_t *st = json_object_get(r, "staleness"), *h = json_object_get(st, "hist");
            staleness_t one = { 0 };
            one.count = json_integer_value(json_object_get(st, "count"));
            one.max = json_integer_value(json_object_get(st, "max"));
            for (int b = 0; b < STALENESS_BUCKETS; b++) {
                one.hist[b] = json_integer_value(json_array_get(h, (size_t)b));
                one.sum += one.hist[b] * staleness_bucket_low(b);
            }
            staleness_merge(&total, &one);
        }
    }
    json_object_set_new(root, "staleness", staleness_json(&total));
    json_object_set_new(root, "device", job_device_json(s, per_rank));
    if (w->role == ROLE_PS)
        json_object_set_new(root, "parameter_server",
                            json_pack("{s:I, s:f, s:f, s:I}", "updates", (json_int_t)w->ps_updates,
                                      "updates_per_s", w->loop_s > 0 ? (double)w->ps_updates / w->loop_s : 0.0,
                                      "busy_fraction", w->ps_busy_fraction,
                                      "dropped", (json_int_t)w->ps_dropped));
    /* temp file + rename: the coordinator may read the summary while it is written */
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int rc = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (rc != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write summary: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
