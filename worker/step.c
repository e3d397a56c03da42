/* worker/step.c - the step primitives every algorithm shares: the epoch's order and the
 * batches, the gradient computation with emulated slowdown, the SGD update, the weights
 * between device and host, evaluation, gradient compression's set-up, re-planning the
 * batches and the rank's JSON record. The bottom of worker/'s training room: the
 * algorithms (algo_*.c), adaptive.c, comm.c, emulate.c and the loops call these, and these
 * call none of them: not the loops (train.c's train_loop, ps.c's server) nor what the
 * loops share (loop.c: records, checkpoints, epoch ends, the end-of-step policies).
 * Declared in step.h. */
#include "step.h"

#include <math.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "blas_core.h"
#include "cpu_isa.h"
#include "matmul.h"
#include "clock.h"
#include "compress.h"
#include "dcache.h"
#include "init_weights.h"
#include "passert.h"
#include "planner.h"
#include "sim.h"

/* A device failure mid-job is not recoverable here; the launcher restarts from a checkpoint. */
static void gpu_fail(const worker_t *w, const char *what)
{
    PACER_PANIC("pacer-worker: rank %d: CUDA: %s: %s", w->rank, what, cuda_model_error(w->gpu));
}

void worker_epoch_order(worker_t *w)
{
    /* The permutation depends only on (seed, epoch, pass), so every rank computes the same
     * one and a resumed run recomputes it instead of storing it. */
    rng_t r;
    uint64_t key = (uint64_t)w->spec->seed * 1000003u + (uint64_t)w->epoch;
    if (w->pass > 0) key ^= (uint64_t)w->pass * 0x9e3779b97f4a7c15ull;
    rng_seed(&r, key);
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
    const int gathered = b >= 0 && b <= w->max_batch && offset >= 0 && offset <= (long)w->train.n - b &&
                         data_batch_gather_aug(&w->train, w->perm + offset, b, w->x, x_floats(w), w->y,
                                               w->spec->dataset.augment ? &w->augment : NULL, &w->aug_rng) == 0;
    PACER_ASSERT(gathered,
                 "pacer-worker: rank %d: batch of %d at position %ld does not fit "
                 "(buffer %d, %d samples): refusing to gather it",
                 w->rank, b, offset, w->max_batch, w->train.n);
    w->batch = b;
    /* A new batch size (a re-plan) gets its convolution algorithms here, before the timed
     * step; a size seen before reuses its choice. */
    if (w->gpu && cuda_model_prepare_batch(w->gpu, b) != 0) gpu_fail(w, "preparing the batch size");
}

void worker_next_batch(worker_t *w)
{
    if (w->cursor + w->global_batch > w->train.n) {
        /* Only the goodput planner's global batch can outgrow what is left of the epoch
         * order (otherwise the loop ends the epoch first): the rest is skipped, as the
         * remainder is at an epoch end, and another pass over the training set begins. */
        w->pass++;
        worker_epoch_order(w);
        w->cursor = 0;
    }
    long offset = w->cursor;
    for (int i = 0; i < w->worker_index; i++) offset += w->batch_of[i];
    /* Every rank takes its share of the same global positions; the loop guarantees
     * cursor + global_batch <= n, so the shares never run off the epoch. */
    worker_gather(w, offset, w->batch_of[w->worker_index]);
}

int worker_batch_stage(worker_t *w, algo_step_t *s)
{
    worker_next_batch(w);
    return 0;
}

/* The cost of the step that began at wall t0 and thread CPU time c0 and took wall:
 * thread CPU time on a CPU rank with one BLAS thread (capped by wall), else wall; the
 * synchronised batch norms' waits for the other ranks (bn_sync_s, which MPI's polling
 * spends as CPU time too) left out: not this rank's own work. */
static double step_cost(const worker_t *w, double wall, double c0)
{
    double u = wall - w->bn_sync_s;
    if (!w->gpu && w->spec->threads == 1) {
        double c = clock_thread_cpu_s() - c0 - w->bn_sync_s;
        if (c > 0 && c < u) u = c;
    }
    return u;
}

double worker_undisturbed_s(const worker_t *w, int b)
{
    return b > 0 && b <= w->max_batch && w->undisturbed_s[b] > 0 ? w->undisturbed_s[b] : 0.0;
}

void worker_calibrate(worker_t *w)
{
    model_t *m = w->model;
    int b = w->batch_of[w->worker_index];
    if (w->gpu || b > w->train.n || b > w->max_batch) return;
    /* Batch-norm running statistics move in a training-mode forward, and so does the
     * dropout step (model.h): keep them, so that training sees neither. */
    const uint64_t dropout_step = m->dropout_step;
    float *keep = m->nbuffers ? malloc(m->nbuffers * sizeof(float)) : NULL;
    if (m->nbuffers && !keep) return;
    if (keep) memcpy(keep, m->buffers, m->nbuffers * sizeof(float));
    for (int i = 0; i < b; i++) w->eval_idx[i] = i;
    w->bn_sync_s = 0.0; /* its own batch norms, never synchronised (worker_compute_grad) */
    if (data_batch_gather(&w->train, w->eval_idx, b, w->x, x_floats(w), w->y, 0, NULL) == 0) {
        double *best = &w->undisturbed_s[b];
        for (int k = 0; k < 5; k++) {
            double t0 = clock_mono_s(), c0 = clock_thread_cpu_s();
            model_forward(m, w->x, w->y, b, 1);
            model_backward(m, w->x, w->y, b, 1.0f);
            double u = step_cost(w, clock_mono_s() - t0, c0);
            if (!(*best > 0) || u < *best) *best = u;
        }
    }
    if (keep) memcpy(m->buffers, keep, m->nbuffers * sizeof(float));
    free(keep);
    m->dropout_step = dropout_step;
}

float worker_compute_grad(worker_t *w, float loss_scale)
{
    w->bn_sync_s = 0.0;
    double t0 = clock_mono_s(), c0 = clock_thread_cpu_s();
    float loss;
    if (w->gpu) {
        /* The host params go up unless the device optimizer holds newer ones (worker.h);
         * x, y, params and grads are page-locked, so every copy is DMA; the gradient comes
         * back into model->grads with the step's one wait, during which an algorithm's
         * progress callback (hpsgd) drives MPI. That wait synchronises the stream, so the
         * wall time below includes the device's work (and the device update the previous
         * step queued before it). */
        model_t *m = w->model;
        cuda_model_set_progress(w->gpu, m->progress, m->progress_ctx);
        if (!w->gpu_ahead && cuda_model_upload_params(w->gpu, m->params) != 0) gpu_fail(w, "uploading the weights");
        if (cuda_model_train_step(w->gpu, w->x, w->y, w->batch, loss_scale, m->grads, &loss) != 0)
            gpu_fail(w, "training step");
        /* The device counted a training forward (its dropout masks): the host mirrors the
         * count, which the checkpoint and the pushes to a parameter server read. */
        m->dropout_step++;
    } else if (sim_skip_compute(w)) {
        /* A simulated timing what-if: sim_charge_train below charges the step. */
        memset(w->model->grads, 0, w->model->nparams * sizeof *w->model->grads);
        loss = NAN; /* not computed: no loss, rather than a loss of 0 */
    } else {
        /* sync_batchnorm: this step's batch norms take every rank's statistics (the other
         * training forwards, worker_calibrate's timings, stay each rank's own) */
        w->model->bn_sync = w->bn_sync_on ? &w->bn_sync : NULL;
        loss = model_forward(w->model, w->x, w->y, w->batch, 1);
        model_backward(w->model, w->x, w->y, w->batch, loss_scale);
        w->model->bn_sync = NULL;
    }
    worker_zero_frozen_grads(w);   /* a GPU rank: the device computed the frozen tensors' too */
    sim_charge_train(w, w->batch); /* deterministic simulation: the cost model's time */
    double wall = clock_mono_s() - t0;
    /* Emulated heterogeneity: slowdown f makes this step take f times the rank's own
     * undisturbed step u, by sleeping until f * u has passed since the step began
     * (sleeping, not spinning, leaves the core to the other ranks). The undisturbed step
     * is estimated so that core contention cannot move it:
     *  - a step's own cost is its thread CPU time on a CPU rank with one BLAS thread
     *    (time the scheduler gave the core to someone else does not count), capped by
     *    its wall time; with several CPU threads, or on a GPU (where a waiting host
     *    thread uses little CPU), its wall time;
     *  - contention only ever adds to that cost (cache refills after a context switch,
     *    a virtual CPU's stolen time), so u is the smallest cost this rank has measured
     *    for a batch of this size (undisturbed_s, one entry per size up to max_batch).
     * worker_calibrate seeds it before training, so that even the first steps (caches and
     * page tables still cold) are not emulated from an inflated cost, and emulate_check
     * lowers the seed to the host's smallest for that batch size (cores of unequal speed).
     * When contention makes the real step longer than f * u there is nothing to wait:
     * the emulation is then not faithful, which the start-up check predicts (emulate.c).
     * In a simulation (sim.h) every clock here reads simulated time, which no other rank
     * disturbs: the wait is (f - 1) x the step's simulated compute, in simulated time. */
    if (w->slowdown > 1.0) {
        phase_enter(&w->phases, PHASE_EMULATED); /* inside the compute stage (algo_step) */
        double u = step_cost(w, wall, c0);
        double *best = &w->undisturbed_s[w->batch];
        if (*best > 0 && *best < u) u = *best;
        *best = u;
        double extra = w->slowdown * u - wall;
        if (extra > 0) {
            double t1 = clock_mono_s();
            clock_sleep_s(extra);
            w->stats.emulated_s += clock_mono_s() - t1;
        } else {
            w->stats.emulated_late++; /* measured, so the summary can say the profile slipped */
        }
        phase_leave(&w->phases);
        wall = clock_mono_s() - t0;
    }
    /* Compute time, and the node speed built on it, are wall clock: what the step took,
     * the device's work and the emulated wait included (planner_speed), on CPU and GPU
     * ranks alike. */
    w->stats.step_compute_s = wall;
    w->stats.compute_s += wall;
    w->stats.step_comm_s = 0;
    w->stats.step_idle_s = 0;
    w->stats.ewma_sps = planner_speed(w->stats.ewma_sps, w->batch, wall - w->bn_sync_s);
    w->stats.samples += w->batch;
    w->stats.last_loss = loss;
    return loss;
}

/* This step's optimizer settings (optim_step_t): the spec's rule, groups and
 * hyper-parameters at this step's learning rate and momentum. An AdamW step counts here:
 * every call is one update applied. */
void worker_optim_step(worker_t *w, float grad_scale, optim_step_t *o)
{
    const job_spec_t *s = w->spec;
    memset(o, 0, sizeof *o);
    o->adamw = spec_is_adamw(s);
    o->groups = spec_no_decay(s);
    o->h.lr = w->lr;
    o->h.weight_decay = (float)s->optimizer.weight_decay;
    o->momentum = w->momentum;
    o->nesterov = s->optimizer.nesterov;
    o->grad_scale = grad_scale;
    o->clip_norm = (float)s->optimizer.clip_norm;
    if (o->adamw) {
        spec_adamw_betas(s, &o->h.beta1, &o->h.beta2);
        o->h.eps = s->optimizer.eps;
        o->h.weight_decay = s->optimizer.weight_decay;
        o->step = ++w->opt_step;
    }
}

/* The update on the device: g (host, nparams floats) is uploaded first, unless NULL (the
 * device's own gradient). Same rule as the host path below (cuda_clip_scale computes the
 * clipping coefficient the same way), so a GPU rank and a CPU rank update alike. */
static void apply_on_device(worker_t *w, const float *g, float grad_scale)
{
    if (g && cuda_model_upload_grads(w->gpu, g) != 0) gpu_fail(w, "uploading the gradient");
    optim_step_t o;
    worker_optim_step(w, grad_scale, &o);
    if (cuda_model_optimize(w->gpu, &o) != 0) gpu_fail(w, "optimizer step");
    w->gpu_ahead = 1;
    /* The kernels are queued, not waited for: the device runs them before the next
     * step's forward pass, whose synchronisation books them as compute. A wait here
     * would stall every step to move time between two buckets. */
}

void worker_apply_local_update(worker_t *w)
{
    if (w->gpu) apply_on_device(w, NULL, 1.0f);
    else worker_apply_gradient(w, w->model->grads, 1.0f);
}

void worker_apply_gradient(worker_t *w, const float *g, float grad_scale)
{
    if (w->gpu) {
        apply_on_device(w, g, grad_scale);
        return;
    }
    optim_step_t o;
    worker_optim_step(w, grad_scale, &o);
    model_apply_optimizer(w->model, g, &o);
    sim_charge_update(w);
}

void worker_apply_update(worker_t *w, float grad_scale) { worker_apply_gradient(w, w->model->grads, grad_scale); }

double worker_slowdown_base(const worker_t *w)
{
    const job_spec_t *s = w->spec;
    return w->worker_index >= 0 && w->worker_index < s->emulate.nslowdown ? s->emulate.slowdown[w->worker_index] : 1.0;
}

/* The emulated slowdown of this worker at the current step: the spec's static factor,
 * overridden by the last schedule entry for this worker whose step has been reached. */
double worker_slowdown_now(const worker_t *w)
{
    const job_spec_t *s = w->spec;
    if (w->worker_index < 0) return 1.0;
    double f = worker_slowdown_base(w);
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

void worker_model_to_host(worker_t *w)
{
    if (!w->gpu) return;
    model_t *m = w->model;
    if (w->gpu_ahead) {
        if (cuda_model_download_params(w->gpu, m) != 0) gpu_fail(w, "downloading the weights"); /* and buffers */
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

/* Mean loss and accuracy of the current weights on the first n samples of d, in
 * evaluation mode, in batches of the preallocated buffers. A language model's: the mean
 * over every position of every window (nats per token) and next-token accuracy. */
static void evaluate_on(worker_t *w, const dataset_t *d, int n, float *loss, float *accuracy)
{
    model_t *m = w->model;
    double loss_sum = 0;
    long correct = 0;
    if (w->gpu && !w->gpu_ahead && cuda_model_upload_params(w->gpu, m->params) != 0)
        gpu_fail(w, "uploading the weights");
    for (int first = 0; first < n; first += w->max_batch) {
        int b = n - first < w->max_batch ? n - first : w->max_batch;
        if (sim_skip_compute(w)) { /* a simulated timing what-if: charged, not computed */
            sim_charge_eval(w, b);
            continue;
        }
        for (int i = 0; i < b; i++) w->eval_idx[i] = first + i;
        /* worker_setup checked the test set's shape against the model */
        const int gathered = data_batch_gather(d, w->eval_idx, b, w->x, x_floats(w), w->y, 0, NULL) == 0;
        PACER_ASSERT(gathered, "pacer-worker: rank %d: %s does not fit the model: refusing to evaluate", w->rank,
                     d->source);
        if (w->gpu) {
            float l = cuda_model_forward(w->gpu, w->x, w->y, b, 0);
            const float *logits = l < 0 ? NULL : cuda_model_logits_host(w->gpu, b);
            if (!logits) gpu_fail(w, "evaluation");
            loss_sum += (double)l * b;
            correct += count_correct(b * m->positions, m->num_classes, logits, w->y);
            continue;
        }
        loss_sum += (double)model_forward(m, w->x, w->y, b, 0) * b;
        sim_charge_eval(w, b);
        correct += count_correct(b * m->positions, m->num_classes, model_logits(m), w->y);
    }
    /* Nothing evaluated (no samples, or a simulation that skips the compute): not
     * measured, so NaN, never 0. */
    int measured = n > 0 && !sim_skip_compute(w);
    *loss = measured ? (float)(loss_sum / n) : NAN;
    *accuracy = measured ? (float)((double)correct / ((double)n * m->positions)) : NAN;
}

void worker_evaluate(worker_t *w, float *loss, float *accuracy) { evaluate_on(w, &w->test, w->test.n, loss, accuracy); }

float worker_final_train_loss(worker_t *w)
{
    float loss, acc;
    int n = w->train.n < TRAIN_LOSS_SAMPLES ? w->train.n : TRAIN_LOSS_SAMPLES;
    evaluate_on(w, &w->train, n, &loss, &acc);
    return loss;
}

int worker_compress_setup(worker_t *w, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    /* ssgd always (kind none measures its payload the same way); local-sgd and hier-bsp
     * (their averages, algo_local_sgd.c) and hpsgd (its rounds, algo_hpsgd.c) only when
     * compressing: their plain path stays. */
    const char *a = s->algorithm.name;
    const int local = strcmp(a, "local-sgd") == 0 || strcmp(a, "hier-bsp") == 0 || strcmp(a, "hpsgd") == 0;
    if (w->compress || !(strcmp(a, "ssgd") == 0 || (local && strcmp(s->algorithm.compression.kind, "none") != 0)))
        return 0;
    const int n = w->use_mpi ? w->nworkers : 1;
    if (compress_create(w->model, s->algorithm.compression.kind, s->algorithm.compression.rank,
                        s->algorithm.compression.warmup_steps, s->seed, n, w->use_mpi, &w->compress, err, errlen) != 0)
        return -1;
    compress_set_phases(w->compress, &w->phases); /* compression's compute: its own phase */
    compress_set_auto(w->compress, s->algorithm.compression.min_gain, s->algorithm.compression.probe_steps);
    if (w->rank == 0 && s->checkpoint.every_steps > 0 && compress_keep_all(w->compress, n) != 0) {
        snprintf(err, errlen, "algorithm.compression: out of memory for %d ranks' error feedback", n);
        return -1;
    }
    return 0;
}

void worker_compress_gather(worker_t *w)
{
    const job_spec_t *s = w->spec;
    size_t ne;
    compress_error(w->compress, &ne);
    if (ne == 0 || s->checkpoint.every_steps <= 0) return;
    /* The step counts once this step is done: the loop's checkpoint sites (every_steps,
     * keep_best's epoch end, the run's end) write after exactly these. */
    const long next = w->global_step + 1;
    if (next % s->checkpoint.every_steps != 0 && w->step_in_epoch + 1 < w->steps_per_epoch && next < w->total_steps)
        return;
    compress_gather_errors(w->compress, w->use_mpi, MPI_COMM_WORLD, next);
    phase_mark(&w->phases, PHASE_COMM);
}

int worker_replan(worker_t *w, const double *speeds)
{
    int n = w->nworkers;
    /* Once the coordinator has assigned a plan it owns planning (it sees every rank's
     * profile and the persistent ones); until then, and without a coordinator, the ranks
     * plan for themselves with the same planner. */
    if (w->assignment_hook && w->assignment_hook(w, w->plan_next) == 1) {
        char why[160];
        if (planner_check(w->plan_next, n, w->global_batch, w->min_batch, w->max_batch, why, sizeof why) != 0) {
            /* The plan in force stays; a new assignment gets another chance. */
            fprintf(stderr, "batch plan from the coordinator refused: %s\n", why);
            return 0;
        }
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
    if (planner_replan(speeds, w->batch_of, n, w->global_batch, w->min_batch, w->max_batch, w->plan_next) != 1)
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

/* ---- the rank's own figures (worker_rank_json) ---------------------------------------- */

static json_t *rank_json_base(const worker_t *w, json_t *st);

/* A rank's peak memory; NaN (null: not measured) in a simulation, where one process holds
 * every rank. */
static double peak_rss_mb(void)
{
    if (sim_active()) return NAN;
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
    /* Which OpenBLAS kernels a CPU rank ran on: a figure from it is a figure of them. */
    if (d && strcmp(w->record.device, "cpu") == 0) {
        json_object_set_new(d, "blas", json_string(blas_core()));
        if (blas_core_replaced())
            json_object_set_new(d, "blas_reason",
                                json_pack("{s:s, s:s}", "openblas_took", blas_core_replaced(), "chosen_by",
                                          "cpu flags"));
        /* and which convolution kernels: at fp32 the direct ones follow OpenBLAS's ISA */
        json_object_set_new(d, "conv", json_string(conv2d_kernel()));
        /* and the matrix products' (kernels/cpu/matmul.h): at bf16, which unit, and why
         * not the next one up (a CPU without bf16 units runs the portable path) */
        json_object_set_new(d, "gemm", json_string(mm_kernel()));
        if (mm_precision() == MM_BF16 && cpu_isa_why()[0])
            json_object_set_new(d, "gemm_reason", json_string(cpu_isa_why()));
    }
    return d;
}

/* json_finite_or_null V - V as a JSON number, or null when it is NaN or infinite. */
json_t *worker_json_finite(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* A rate over a time: null when no time was measured (a run that trained nothing), not 0. */
json_t *worker_json_rate(double n, double s) { return s > 0 ? json_real(n / s) : json_null(); }

/* {"step_s": the timed steps' wall time, "steps": how many, "data": s, "compute": s, ...}:
 * the time breakdown's totals (phase.h); the phases add up to step_s. */
static json_t *phases_json(const step_phases_t *p)
{
    json_t *o = json_pack("{s:f, s:I}", "step_s", p->total_wall, "steps", (json_int_t)p->steps);
    for (int i = 0; o && i < PHASE_N; i++) json_object_set_new(o, PHASE_NAMES[i], json_real(p->total[i]));
    return o;
}

json_t *worker_rank_json(const worker_t *w)
{
    json_t *st = staleness_json(&w->staleness.s);
    json_t *r = rank_json_base(w, st);
    if (r) json_object_set_new(r, "phases", phases_json(&w->phases));
    /* This rank's share of the decoded cache's pages, measured now (/proc/self/smaps):
     * ranks of one host map the same file, and Pss below Rss shows the pages shared. */
    dcache_usage_t u;
    if (r && w->data.cache_path[0] && !sim_active() && dcache_usage(w->data.cache_path, &u) == 0)
        json_object_set_new(r, "data_cache",
                            json_pack("{s:i, s:I, s:I, s:o}", "mappings", u.mappings, "rss_kb", (json_int_t)u.rss_kb,
                                      "pss_kb", (json_int_t)u.pss_kb, "inode",
                                      u.mappings ? json_integer((json_int_t)u.inode) : json_null()));
    return r;
}

static json_t *rank_json_base(const worker_t *w, json_t *st)
{
    if (w->role == ROLE_PS)
        /* The parameter server computes no samples: it reports the updates it applied
         * (counting the workers' samples here too would count every sample twice). */
        return json_pack("{s:i, s:s, s:s, s:o, s:I, s:o, s:f, s:f, s:o, s:o}", "rank", w->rank, "role", "ps", "host",
                         w->record.host, "device", device_json(w), "updates", (json_int_t)w->ps_updates, "updates_per_s",
                         worker_json_rate((double)w->ps_updates, w->loop_s), "busy_fraction", w->ps_busy_fraction,
                         "idle_s", w->stats.idle_s, "peak_rss_mb", worker_json_finite(peak_rss_mb()), "staleness", st);
    /* The emulation's base for the final batch size (worker_compute_grad); null where
     * none was measured for it: a rank that never emulated, or only at other sizes. */
    const int bf = w->batch_of[w->worker_index];
    const double u = worker_undisturbed_s(w, bf);
    return json_pack("{s:i, s:s, s:s, s:o, s:f, s:f, s:f, s:f, s:I, s:I, s:i, s:o, s:o, s:f, s:o, s:o, s:o, s:o}",
                     "rank", w->rank, "role", "worker", "host", w->record.host, "device", device_json(w), "compute_s",
                     w->stats.compute_s, "comm_s", w->stats.comm_s, "idle_s", w->stats.idle_s, "emulated_s",
                     w->stats.emulated_s, "samples", (json_int_t)w->stats.samples, "steps", (json_int_t)w->stats.steps,
                     "batch_final", bf, "samples_per_s", worker_json_rate((double)w->stats.samples, w->stats.compute_s),
                     "peak_rss_mb", worker_json_finite(peak_rss_mb()), "slowdown", w->slowdown, "staleness", st,
                     "undisturbed_step_s", u > 0 ? json_real(u) : json_null(), "undisturbed_host_s",
                     w->undisturbed_host_s > 0 ? json_real(w->undisturbed_host_s) : json_null(), "emulation_late_steps",
                     w->slowdown > 1.0 ? json_integer((json_int_t)w->stats.emulated_late) : json_null());
}
