/* worker/step.h - one training step of a rank and the machinery the algorithms share
 * (step.c): the batch, the emulated slowdown, the forward and backward, the SGD update,
 * the re-plan's bookkeeping, evaluation, who owns the model on a GPU rank, gradient
 * compression's set-up, and the rank's summary entry. */
#ifndef PACER_STEP_H
#define PACER_STEP_H

#include <stddef.h>

#include <jansson.h>

#include "worker.h"

void worker_next_batch(worker_t *w);
/* worker_next_batch as a step's data stage (algo_ops_t.step). Returns 0. */
int worker_batch_stage(worker_t *w, algo_step_t *s);
/* Gathers b samples from position offset of the epoch order into x/y. */
void worker_gather(worker_t *w, long offset, int b);
/* Computes the epoch's sample order (seed, epoch) into perm. */
void worker_epoch_order(worker_t *w);
/* The emulated slowdown in force at the current step (spec factor or schedule). */
double worker_slowdown_now(const worker_t *w);
/* emulate.slowdown's entry for this worker; 1 without one (no list, the parameter server,
 * or a rank past the spec's workers in a job grown to max_workers). */
double worker_slowdown_base(const worker_t *w);
/* Re-plans batch_of from per-worker speeds (or takes the coordinator's assignment);
 * returns 1 when the plan changed. Pure bookkeeping: the caller distributes it. */
int worker_replan(worker_t *w, const double *speeds);
void worker_print_plan(const worker_t *w);

/* Emulation only: five untimed forward/backward passes of this rank's batch before
 * training, to seed the undisturbed step cost (weights and batch-norm statistics are left
 * as they were; a no-op on a GPU rank); emulate_check then gives every rank of the host
 * with the same batch size the smallest seed among them. */
void worker_calibrate(worker_t *w);
/* The undisturbed step cost (undisturbed_s) for batch size b, or 0 where none was measured
 * for it (or b is out of range). */
double worker_undisturbed_s(const worker_t *w, int b);
/* Forward + backward of the gathered batch into model->grads; returns the mean loss.
 * With an emulated slowdown f it then sleeps until the step has taken f times the
 * rank's undisturbed step (see step.c). Times the step in wall-clock seconds. */
float worker_compute_grad(worker_t *w, float loss_scale);
/* SGD with the spec's momentum, nesterov and weight decay at the current learning rate,
 * over the whole fused buffer, on the gradient grad_scale * model->grads (clipped to
 * optimizer.clip_norm first). grad_scale lets ssgd apply 1/sum(b) without another pass. */
void worker_apply_update(worker_t *w, float grad_scale);
/* The same update from another gradient buffer of nparams floats. */
void worker_apply_gradient(worker_t *w, const float *g, float grad_scale);
/* This step's optimizer settings (the spec's rule, groups and hyper-parameters at this
 * step's learning rate); counts an AdamW step: call it once per update applied (the
 * sharded update, worker/shard.c, applies them to a rank's range). */
void worker_optim_step(worker_t *w, float grad_scale, optim_step_t *o);

/* Evaluates model on the test set in batches; fills loss and accuracy (NaN when nothing
 * was evaluated: an empty set, a simulation that skips the compute). A GPU rank
 * evaluates on its device, with the device's weights and batch-norm statistics. */
void worker_evaluate(worker_t *w, float *loss, float *accuracy);
/* The summary's train_loss: the loss of the current weights on the first
 * min(TRAIN_LOSS_SAMPLES, train.n) samples of the training set in file order, without
 * augmentation, in evaluation mode; the same samples for every algorithm and run, so
 * runs compare (the running mean over an epoch mixes weights of different ages). */
#define TRAIN_LOSS_SAMPLES 10000
float worker_final_train_loss(worker_t *w);

/* GPU ranks (w->gpu != NULL): who owns the model when. On a CPU rank the host owns all of it
 * and these calls do nothing.
 *   params, momentum  the host copy (model->params, ->momentum) is the truth unless
 *                     w->gpu_ahead: the device optimizer (worker_apply_gradient and
 *                     worker_apply_local_update run cuda_model_sgd) has moved them since.
 *                     An algorithm that writes model->params on the host (an average, a
 *                     broadcast, a parameter-server reply, hpsgd's replica at a merge) has
 *                     nothing more to do: worker_compute_grad uploads the host params
 *                     whenever !gpu_ahead, and so does a device evaluation.
 *   grads             worker_compute_grad leaves the rank's gradient in model->grads (and
 *                     on the device); what an algorithm hands to the update is uploaded.
 *   buffers           the batch-norm running statistics: every training forward updates
 *                     the device's copy, which is therefore the truth while training.
 * So: call worker_model_to_host before anything reads the model on the host (a checkpoint,
 * an average, a broadcast from this rank), and worker_buffers_to_device after anything wrote
 * model->buffers on the host (an average, a broadcast to this rank, a restore). */
void worker_model_to_host(worker_t *w);
void worker_buffers_to_device(worker_t *w);
/* worker_apply_update(w, 1) of the gradient this rank has just computed, unchanged (sgd,
 * local-sgd's and hpsgd's local steps): a GPU rank uses the device's own copy of it, without an upload. */
void worker_apply_local_update(worker_t *w);

/* ssgd's gradient compression (worker/compress.h): creates w->compress once MPI is up
 * (before a resume, which restores its state; algo_ssgd's init calls it too), with room
 * at rank 0 for every rank's error feedback when checkpoints are on; local-sgd and
 * hier-bsp too when compressing (their averages, algo_local_sgd.c). Other algorithms:
 * nothing. Returns 0, or -1 with err. */
int worker_compress_setup(worker_t *w, char *err, size_t errlen);
/* Called by every rank at the end of ssgd's (local-sgd's, hier-bsp's) step: when a checkpoint may be written after
 * it (every_steps, the epoch's end, the run's end), rank 0 gathers the ranks' error
 * feedback for it (one MPI_Gather); otherwise nothing. */
void worker_compress_gather(worker_t *w);

/* JSON for a measured figure: v, or null where it is not finite (unmeasured is missing,
 * not 0); n / s, or null without a positive s. The rank's record (worker_rank_json,
 * step.c) and the job's summary (train.c) write their figures with them. */
json_t *worker_json_finite(double v);
json_t *worker_json_rate(double n, double s);

/* This rank's per_rank summary entry (new reference). */
json_t *worker_rank_json(const worker_t *w);

#endif
