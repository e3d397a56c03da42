/* worker/adaptive.h - the worker's side of the gradient noise scale (common/gns.h) and of
 * the goodput planner (common/goodput.h, algorithm.goodput).
 *
 * Every ssgd (and hier-bsp) step measures the noise scale for free: adaptive_pack appends
 * [b, b loss, b |g_i|^2, 1 if b > 0] to the fused gradient buffer (MODEL_GRAD_EXTRA), the
 * step's one allreduce sums them, and adaptive_reduced folds the step's estimate into
 * the average (two passes over the gradient: |b g_i|^2 before the reduction, |g|^2
 * after). The parameter server pairs consecutive pushes instead (adaptive_ps_push).
 *
 * With algorithm.goodput (ssgd), at every re-plan point (comm_replan, every
 * algorithm.replan_steps steps) rank 0 gathers each rank's compute model (a + c b,
 * fitted from its steps' compute and update time), runs goodput_replan with the
 * collective's measured time, and broadcasts in ONE message the plan (a batch per
 * worker, 0 for a node left out), AdaScale's gain r = (B / B0) E(B) and E(B). The gain
 * stays fixed until the next re-plan point, so every rank counts the same progress bit
 * for bit (a per-step gain from each rank's own |g|^2 could differ in the last bit
 * between CPUs and end an epoch on one rank and not on another):
 *   - the learning rate is r x the schedule's rate at progress (AdaScale);
 *   - progress, in steps at the spec's global batch B0, grows by r per step; an epoch
 *     ends when progress reaches the next multiple of (training samples / B0) steps, so
 *     the schedule and `epochs` keep their meaning (the same statistical work as a run at
 *     B0; more samples when B > B0, since r < B / B0);
 *   - a global batch larger than what is left of the epoch order starts another pass
 *     over the training set (the rest, fewer than B samples, is skipped as at epoch ends).
 * A node left out still joins the step's collective with an empty contribution, so every
 * rank holds the same weights and progress whenever it is brought back.
 */
#ifndef PACER_ADAPTIVE_H
#define PACER_ADAPTIVE_H

#include <jansson.h>
#include <mpi.h>

#include "checkpoint.h"
#include "gns.h"
#include "goodput.h"
#include "worker.h"

#define ADAPTIVE_REASON 256

typedef struct adaptive {
    gns_t gns;                /* the smoothed estimate (the same on every ssgd rank) */
    double phi;               /* its noise scale after the last step; NAN: not yet */
    int on;                   /* algorithm.goodput */
    int equal;                /* goodput_model "equal" (AdaptDL's) */
    int b0, max_global;       /* the spec's global batch; the planner's ceiling */
    double gain, efficiency;  /* in force since the last re-plan point (1, 1 at B0) */
    double progress;          /* steps at B0 done: the sum of the gains */
    goodput_fit_t fit;        /* this rank's compute + update time against its batch */
    double comm_s;            /* rank 0: the collective's time, smoothed */
    double batch_sum;         /* global batches of the steps done, for their mean */
    long steps;               /* steps done with the planner */
    goodput_eval_t predicted; /* rank 0: the plan in force's predicted figures */
    double *models;           /* rank 0: (3 nworkers) the gathered a, c, known */
    double *a, *c;            /* rank 0: (nworkers) */
    double *msg;              /* (nworkers + 4) the re-plan's broadcast */
    char *reasons;            /* rank 0: (nworkers x ADAPTIVE_REASON) why each is left out */
    float *pair;              /* parameter server: (nparams) the first push of a pair */
    double pair_sq;           /* its |g|^2 */
    int pair_b;               /* its batch; 0: no push waiting for a partner */
} adaptive_t;

/* After the buffers and the batch plan exist (worker_setup_world). Returns 0, or -1 with
 * err (out of memory). */
int adaptive_setup(worker_t *w, char *err, size_t errlen);
void adaptive_free(worker_t *w);

/* The step of the learning-rate schedule: floor(progress) with the planner, else the
 * global step. */
long adaptive_schedule_step(const worker_t *w);
/* Whether the current epoch has another step: progress below the epoch's end with the
 * planner, else step_in_epoch < steps_per_epoch. */
int adaptive_epoch_running(const worker_t *w);

/* comm_replan with the planner (every rank of comm, at a re-plan point). */
void adaptive_replan(worker_t *w, MPI_Comm comm);
/* After comm_replan: the learning rate x the gain in force (the planner only). */
void adaptive_begin_step(worker_t *w);
/* worker_compute_grad, or for a node left out (batch 0) an empty gradient. */
float adaptive_compute_grad(worker_t *w, float loss_scale);
/* Appends the step's extras (above) to model->grads after the gradient of b x loss. */
void adaptive_pack(worker_t *w, float loss);
/* After the reduction: the step's loss and samples from the extras, the noise-scale
 * estimate (when n >= 2 gradients were reduced); returns 1 / sum(b), the update's scale. */
float adaptive_reduced(worker_t *w);
/* The same where the reduced gradient is spread over the ranks (worker/shard.h): sumsq is
 * its squared norm, summed over their ranges. */
float adaptive_reduced_sumsq(worker_t *w, double sumsq);
/* After the update (update_s: its time): this rank's compute model, rank 0's collective
 * time, the progress. */
void adaptive_step_done(worker_t *w, double update_s);

/* Parameter server: one push (g: the mean gradient of batch samples) into the estimate,
 * in pairs of consecutive pushes. */
void adaptive_ps_push(worker_t *w, const float *g, int batch);

/* Checkpoints (version 3): the global batch in force, the planner's progress, pass, gain
 * and efficiency, and the noise scale's averages. A resumed run continues them; the
 * node compute models and the collective's time are measured again (so its later
 * re-plans may differ from the uninterrupted run's). Resumed by another number of
 * workers, the saved global batch is split evenly when the buffers hold it, else the
 * run goes back to B0 (gain 1) until its next re-plan. */
void adaptive_save(const worker_t *w, ckpt_state_t *st);
void adaptive_restore(worker_t *w, const ckpt_state_t *st);

/* The record's noise-scale and goodput fields (metrics.h). */
void adaptive_fill_record(const worker_t *w, metrics_record_t *r);
/* "noise_scale" (null when not measured), and with the planner the "goodput" object,
 * into the job summary (rank 0). */
void adaptive_summary(const worker_t *w, json_t *root);

#endif
