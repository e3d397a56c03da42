/* worker/adaptive.c - see adaptive.h. */
#include "adaptive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_mpi.h"
#include "planner.h"
#include "sigterm.h"
#include "step.h"

int adaptive_setup(worker_t *w, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    int n = w->nworkers;
    adaptive_t *ad = calloc(1, sizeof *ad);
    if (!ad) goto oom;
    w->adapt = ad;
    gns_reset(&ad->gns);
    ad->phi = NAN;
    ad->on = s->algorithm.goodput;
    ad->equal = strcmp(s->algorithm.goodput_model, "equal") == 0;
    ad->b0 = w->global_batch;
    ad->max_global = planner_max_global(s, w->train.n);
    ad->gain = ad->efficiency = 1.0;
    ad->predicted.step_s = NAN;
    if (ad->on) {
        ad->msg = calloc((size_t)n + 4, sizeof *ad->msg);
        if (!ad->msg) goto oom;
        if (w->rank == 0) {
            ad->models = calloc(3 * (size_t)n, sizeof *ad->models);
            ad->a = calloc((size_t)n, sizeof *ad->a);
            ad->c = calloc((size_t)n, sizeof *ad->c);
            ad->reasons = calloc((size_t)n, ADAPTIVE_REASON);
            if (!ad->models || !ad->a || !ad->c || !ad->reasons) goto oom;
        }
    }
    if (w->role == ROLE_PS && !(ad->pair = malloc(w->model->nparams * sizeof(float)))) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void adaptive_free(worker_t *w)
{
    adaptive_t *ad = w->adapt;
    if (!ad) return;
    free(ad->msg);
    free(ad->models);
    free(ad->a);
    free(ad->c);
    free(ad->reasons);
    free(ad->pair);
    free(ad);
    w->adapt = NULL;
}

long adaptive_schedule_step(const worker_t *w)
{
    return w->adapt && w->adapt->on ? (long)floor(w->adapt->progress) : w->global_step;
}

int adaptive_epoch_running(const worker_t *w)
{
    if (!w->adapt || !w->adapt->on) return w->step_in_epoch < w->steps_per_epoch;
    /* A progress within a millionth of a step of the end counts as the end (the gains
     * are rounded sums). */
    return w->adapt->progress < (double)(w->epoch + 1) * (double)w->steps_per_epoch - 1e-6;
}

/* ---- re-planning (rank 0 plans, everyone follows) ------------------------------------- */

/* Fills ad->msg: [plan version, gain, efficiency, noise scale, batch of each worker]. */
static void plan_at_root(worker_t *w)
{
    adaptive_t *ad = w->adapt;
    const job_spec_t *s = w->spec;
    int n = w->nworkers, known = 1;
    for (int i = 0; i < n; i++) {
        ad->a[i] = ad->models[3 * i];
        ad->c[i] = ad->models[3 * i + 1];
        if (ad->models[3 * i + 2] != 1) known = 0;
    }
    double phi = gns_noise_scale(&ad->gns);
    goodput_in_t in = {.n = n,
                       .a = ad->a,
                       .c = ad->c,
                       .fixed_s = ad->comm_s > 0 ? ad->comm_s : 0,
                       .phi = phi,
                       .b0 = ad->b0,
                       .max_global = ad->max_global,
                       .min_b = w->min_batch,
                       .max_b = w->max_batch,
                       .pinned = 0,
                       .equal = ad->equal};
    goodput_eval_t ev;
    int rc = known ? goodput_replan(&in, w->batch_of, w->plan_next, &ev) : -1;
    if (rc == 1) {
        memcpy(w->batch_of, w->plan_next, (size_t)n * sizeof(int));
        w->plan_version++;
        /* A re-plan is rare (every replan_steps, and only when the plan changes), so the
         * lines here cost nothing per step. */
        char noise[32] = "not measured yet";
        if (isfinite(phi)) snprintf(noise, sizeof noise, "%.0f", phi);
        fprintf(stderr,
                "goodput plan %ld: global batch %d (noise scale %s, efficiency %.3f, lr x %.3f, %d of %d nodes, "
                "predicted %.0f samples/s at B0):",
                w->plan_version, ev.global, noise, ev.efficiency, ev.gain, ev.active, n, ev.goodput);
        worker_print_plan(w);
        for (int i = 0; i < n; i++) {
            char *why = ad->reasons + (size_t)i * ADAPTIVE_REASON;
            why[0] = 0;
            if (w->batch_of[i] == 0 && goodput_reason(&in, w->batch_of, i, why, ADAPTIVE_REASON) == 0)
                fprintf(stderr, "goodput plan %ld: worker %d left out: %s\n", w->plan_version, i, why);
        }
    } else if (rc < 0 && known) {
        static int warned;
        if (!warned++)
            fprintf(stderr, "goodput: the planner refused its input (bounds %d..%d per worker, global %d..%d)\n",
                    w->min_batch, w->max_batch, ad->b0, ad->max_global);
    }
    if (rc >= 0) {
        ad->predicted = ev;
        ad->gain = ev.gain;
        ad->efficiency = ev.efficiency;
    }
    ad->msg[0] = (double)w->plan_version;
    ad->msg[1] = ad->gain;
    ad->msg[2] = ad->efficiency;
    ad->msg[3] = phi;
    for (int i = 0; i < n; i++) ad->msg[4 + i] = w->batch_of[i];
    (void)s;
}

void adaptive_replan(worker_t *w, MPI_Comm comm)
{
    adaptive_t *ad = w->adapt;
    int n = w->nworkers;
    double mine[3] = {0, 0, 0};
    if (goodput_fit_get(&ad->fit, &mine[0], &mine[1]) == 0) mine[2] = 1;
    long before = w->plan_version;
    phase_enter(&w->phases, PHASE_COMM);
    MPI_CHECK(MPI_Gather(mine, 3, MPI_DOUBLE, ad->models, 3, MPI_DOUBLE, 0, comm));
    phase_leave(&w->phases);
    if (w->rank == 0) plan_at_root(w); /* the planner: the stage's own time (other) */
    phase_enter(&w->phases, PHASE_COMM);
    MPI_CHECK(MPI_Bcast(ad->msg, n + 4, MPI_DOUBLE, 0, comm));
    phase_leave(&w->phases);
    w->plan_version = (long)ad->msg[0];
    ad->gain = ad->msg[1];
    ad->efficiency = ad->msg[2];
    long global = 0;
    for (int i = 0; i < n; i++) {
        w->batch_of[i] = (int)ad->msg[4 + i];
        global += w->batch_of[i];
    }
    w->global_batch = (int)global;
    if (w->plan_version != before) phase_event(&w->phases, STEP_EV_PLAN);
}

void adaptive_begin_step(worker_t *w)
{
    if (w->adapt->on) w->lr *= (float)w->adapt->gain;
}

/* ---- the step -------------------------------------------------------------------------- */

float adaptive_compute_grad(worker_t *w, float loss_scale)
{
    if (w->batch > 0) return worker_compute_grad(w, loss_scale);
    /* Left out: an empty contribution to the collective, nothing timed as compute. The
     * dropout step moves on all the same, so that every rank's stays the global step
     * (rank 0's is what the checkpoint keeps for all: checkpoint.h). */
    w->model->dropout_step++;
    memset(w->model->grads, 0, w->model->nparams * sizeof *w->model->grads);
    w->stats.step_compute_s = 0;
    w->stats.step_comm_s = 0;
    w->stats.step_idle_s = 0;
    return 0;
}

void adaptive_pack(worker_t *w, float loss)
{
    model_t *m = w->model;
    float b = (float)w->batch;
    m->grads[m->nparams] = b;
    m->grads[m->nparams + 1] = b * loss;
    /* The buffer holds b g_i (the backward pass of b x the mean loss): b |g_i|^2 is its
     * squared norm over b. */
    m->grads[m->nparams + 2] = b > 0 ? (float)(sum_squares(m->nparams, m->grads) / b) : 0.0f;
    if (w->notice_in_extras) { /* the notice rides along: no collective of its own (sigterm.h) */
        w->notice_sent = sigterm_heard();
        m->grads[m->nparams + 3] = sigterm_slot_pack(b > 0, w->notice_sent != 0, w->nworkers);
    } else m->grads[m->nparams + 3] = b > 0 ? 1.0f : 0.0f;
}

float adaptive_reduced(worker_t *w)
{
    const model_t *m = w->model;
    return adaptive_reduced_sumsq(w, sum_squares(m->nparams, m->grads));
}

float adaptive_reduced_sumsq(worker_t *w, double sumsq)
{
    adaptive_t *ad = w->adapt;
    model_t *m = w->model;
    const float *x = m->grads + m->nparams;
    float total = x[0];
    w->step_loss = x[1] / total;
    w->step_samples = (int)total;
    int n;
    if (w->notice_in_extras) {
        n = sigterm_slot_unpack(x[3], w->nworkers, &w->notice_heard);
        w->notice_carried = 1;
    } else n = (int)lrintf(x[3]);
    double t = sumsq / ((double)total * total);
    gns_sample_t e;
    if (n >= 2 && gns_sample(x[2], t, total, n, &e) == 0) {
        gns_update(&ad->gns, &e, total / ad->b0);
        ad->phi = gns_noise_scale(&ad->gns);
    }
    return 1.0f / total;
}

void adaptive_step_done(worker_t *w, double update_s)
{
    adaptive_t *ad = w->adapt;
    if (!ad->on) return;
    if (w->batch > 0) goodput_fit_add(&ad->fit, w->batch, w->stats.step_compute_s + update_s);
    double c = w->stats.step_comm_s;
    if (w->rank == 0 && c > 0)
        ad->comm_s = ad->comm_s > 0 ? (1 - PLANNER_SPEED_WEIGHT) * ad->comm_s + PLANNER_SPEED_WEIGHT * c : c;
    ad->progress += ad->gain;
    ad->batch_sum += w->global_batch;
    ad->steps++;
}

/* ---- the parameter server --------------------------------------------------------------- */

void adaptive_ps_push(worker_t *w, const float *g, int batch)
{
    adaptive_t *ad = w->adapt;
    size_t np = w->model->nparams;
    if (!ad || !ad->pair || batch <= 0) return;
    if (ad->pair_b == 0) {
        /* The first of a pair: kept until the next push. */
        memcpy(ad->pair, g, np * sizeof *g);
        ad->pair_sq = sum_squares(np, g);
        ad->pair_b = batch;
        return;
    }
    /* The second: |g_2|^2, and |g|^2 of the pair's batch-weighted mean in the same pass. */
    double b1 = ad->pair_b, b2 = batch, B = b1 + b2, sq = 0, tot = 0;
    for (size_t k = 0; k < np; k++) {
        double v = (b1 * ad->pair[k] + b2 * g[k]) / B;
        sq += (double)g[k] * g[k];
        tot += v * v;
    }
    gns_sample_t e;
    if (gns_sample(b1 * ad->pair_sq + b2 * sq, tot, B, 2, &e) == 0) {
        gns_update(&ad->gns, &e, B / ad->b0);
        ad->phi = gns_noise_scale(&ad->gns);
    }
    ad->pair_b = 0;
}

/* ---- checkpoints ---------------------------------------------------------------------- */

void adaptive_save(const worker_t *w, ckpt_state_t *st)
{
    const adaptive_t *ad = w->adapt;
    st->global_batch = w->global_batch;
    st->pass = w->pass;
    st->progress = ad->on ? ad->progress : 0;
    st->gain = ad->gain;
    st->efficiency = ad->efficiency;
    st->gns_g2 = ad->gns.g2;
    st->gns_trace = ad->gns.trace;
    st->gns_weight = ad->gns.weight;
    st->gns_samples = ad->gns.samples;
}

void adaptive_restore(worker_t *w, const ckpt_state_t *st)
{
    adaptive_t *ad = w->adapt;
    ad->gns.g2 = st->gns_g2;
    ad->gns.trace = st->gns_trace;
    ad->gns.weight = st->gns_weight;
    ad->gns.samples = st->gns_samples;
    ad->phi = gns_noise_scale(&ad->gns);
    if (!ad->on) return;
    ad->progress = st->progress;
    ad->gain = st->gain;
    ad->efficiency = st->efficiency;
    w->global_batch = st->global_batch;
    if (st->nworkers == w->nworkers) return;
    if ((long)w->nworkers * w->max_batch < st->global_batch) {
        w->global_batch = ad->b0;
        ad->gain = ad->efficiency = 1.0;
    }
    planner_even(w->global_batch, w->nworkers, w->batch_of);
}

/* ---- reporting ------------------------------------------------------------------------- */

void adaptive_fill_record(const worker_t *w, metrics_record_t *r)
{
    const adaptive_t *ad = w->adapt;
    r->noise_scale = ad ? gns_reported(ad->phi) : NAN;
    r->global_batch = w->role == ROLE_PS ? 0 : w->global_batch;
    r->efficiency = r->lr_scale = r->goodput = r->progress = NAN;
    r->left_out = 0;
    r->planned = ad && ad->on;
    if (!r->planned) return;
    r->efficiency = ad->efficiency;
    r->lr_scale = ad->gain;
    r->progress = ad->progress;
    r->left_out = w->batch_of[w->worker_index] == 0;
    /* Goodput as measured: the step's samples, counted at their efficiency, per second. */
    if (r->step_s > 0) r->goodput = w->global_batch * ad->efficiency / r->step_s;
}

/* json_real, or null for a figure that is not finite (not measured). */
static json_t *number_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

void adaptive_summary(const worker_t *w, json_t *root)
{
    const adaptive_t *ad = w->adapt;
    json_object_set_new(root, "noise_scale", number_or_null(ad ? gns_reported(ad->phi) : NAN));
    if (ad && gns_beyond(ad->phi)) json_object_set_new(root, "noise_scale_beyond", json_real(GNS_PHI_MAX));
    if (!ad || !ad->on) return;
    json_t *left = json_array();
    for (int i = 0; left && i < w->nworkers; i++) {
        if (w->batch_of[i] != 0) continue;
        const char *why = ad->reasons ? ad->reasons + (size_t)i * ADAPTIVE_REASON : "";
        json_array_append_new(left, json_pack("{s:i, s:i, s:s}", "worker", i, "rank", i, "reason", why));
    }
    json_t *g = json_pack("{s:s, s:o, s:i, s:o, s:i, s:i, s:f, s:f, s:f, s:o, s:o}", "model",
                          ad->equal ? "equal" : "nodes", "noise_scale", number_or_null(gns_reported(ad->phi)),
                          "global_batch_final", w->global_batch, "global_batch_mean",
                          number_or_null(ad->steps ? ad->batch_sum / (double)ad->steps : NAN), "base_batch", ad->b0,
                          "max_global_batch", ad->max_global, "efficiency", ad->efficiency, "lr_scale", ad->gain,
                          "progress_steps", ad->progress, "predicted_step_s", number_or_null(ad->predicted.step_s),
                          "nodes_left_out", left ? left : json_array());
    if (g) json_object_set_new(root, "goodput", g);
}
