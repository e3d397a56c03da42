/* worker/loop.h - the training loop's policies and records (loop.c): what ends an epoch
 * and a step (evaluation, the target, checkpoints, the collapse detector, the time budget),
 * the schedule's step counts, the metrics records, checkpoints and the ONNX export, the
 * health as the summary shows it. */
#ifndef PACER_LOOP_H
#define PACER_LOOP_H

#include <stddef.h>

#include <jansson.h>

#include "st_gpt2.h"
#include "worker.h"

/* The learning-rate schedule's step counts (total, warm-up, decay period) for per_epoch
 * steps (or parameter-server updates) per epoch. */
void worker_schedule_steps(worker_t *w, long per_epoch);

/* Epoch end after evaluation: record, progress line, counters, early stop, and (rank 0,
 * checkpoint.keep_best) a checkpoint that carries the accuracy just measured. Returns 0, or
 * -1 with err when that checkpoint cannot be written. */
int worker_epoch_done(worker_t *w, char *err, size_t errlen);

/* Emits this rank's metrics record for the step just done (no-op without a reporter). */
void worker_report_step(worker_t *w);

/* A record of kind (epoch end, evaluation, final) with this rank's state (loop.c): see
 * loop.c for which ranks carry an evaluation. */
void worker_report_epoch(worker_t *w, metrics_kind_t kind, int with_eval);

/* The collapse detector (health.h) at rank 0 fed a step's training loss (loop.c feeds it
 * the evaluations' test accuracy itself). On a collapse it says so (stderr, the Redis node
 * hash) and, with on_collapse fail or restart, sets collapse_stop. A no-op on the other
 * ranks. */
void worker_health_loss(worker_t *w, long step, float loss);

/* Every HEALTH_AGREE_STEPS steps, or now with now (an epoch end, where the ranks meet
 * anyway), and always in one process: stop (STOP_COLLAPSE) when rank 0 has set
 * collapse_stop; one broadcast of an int among the ranks. */
#define HEALTH_AGREE_STEPS 10
void worker_health_agree(worker_t *w, int now);

/* A run resumed from a checkpoint written after its last epoch end (an elastic relaunch
 * as the job was finishing) has nothing left to train: this evaluates the restored
 * weights as an epoch end would (every rank of a synchronous job; the PS alone), so the
 * summary reports them instead of zeros, and marks the run (nothing_left): the last
 * epoch's running loss is not in the checkpoint, so train_loss_running is null, which
 * does not count as a divergence. */
void worker_finish_resumed(worker_t *w);

/* ---- end-of-step policies: one home for the synchronous loop (train_loop) and the
 * parameter server's (worker/ps.c serve) ---- */

/* Whether a checkpoint is due after the step (update) just counted: checkpoint.every_steps
 * on rank 0. The caller saves it where its data position is exact (the PS: before its
 * replies hand out new ranges). */
int worker_checkpoint_due(const worker_t *w);
/* Whether the run's last checkpoint is due when the loop has ended: checkpoints on, rank
 * 0, not already written at this step, and no stop that must leave none (the test hook's
 * interruption, a collapse whose weights a restart must not find the latest). */
int worker_final_checkpoint_due(const worker_t *w);

/* What the loop does after the policies: go on, stop at once (the test hook: as if
 * killed, nothing evaluated), or evaluate the weights as they are at an epoch end and
 * stop (target reached between epoch ends, a collapse, the time budget). w->stop says
 * why. */
typedef enum { STEP_GO_ON, STEP_HALT, STEP_FINISH } step_verdict_t;

/* How the calling loop counts: the synchronous loop's ranks agree on each stop (w->agree)
 * and w->loop_s is its training time; the PS decides alone (its workers are not in its
 * collectives) and counts wall time since started less aside_s (evaluations and
 * checkpoints), to which an evaluation here adds its time. */
typedef struct {
    int may_evaluate; /* eval_every_steps may evaluate here (not in the step that ends an
                         epoch; the PS: only after an update was applied) */
    int alone;        /* decide without the other ranks */
    double started;   /* with aside_s: when training began (clock_mono_s) */
    double *aside_s;  /* NULL: w->loop_s is the training time */
} step_end_t;

/* After each step (each push the PS handles), in this order: stop_after_steps (test
 * hook), eval_every_steps (reaching the target stops), collapse (on_collapse fail or
 * restart), the time budget. The first that stops decides. */
step_verdict_t worker_step_end(worker_t *w, const step_end_t *c);

/* DIR/NAME.ckpt: where this run's latest checkpoint is. */
void worker_checkpoint_path(const worker_t *w, char *out, size_t len);

/* Writes DIR/NAME.ckpt, then links it under its retained name and prunes the older ones
 * (checkpoint.keep_last, keep_best; a failure there is one line on stderr: the checkpoint
 * is written). */
int worker_save_checkpoint(worker_t *w, char *err, size_t errlen);

/* The model as ONNX at path, written whole or not at all: the graph of the spec's ONNX
 * file (an uploaded one's bytes by its sha256, worker/modelfetch.h) with these weights,
 * or a built-in's graph from its layer list (model/onnx_export.h). The caller has the
 * weights on the host (worker_model_to_host). 0, or -1 with err set. */
int worker_export_onnx(const worker_t *w, const char *path, char *err, size_t errlen);
/* The same weights as safetensors (model/st_export.h): the shapes of that graph's
 * initializers, the tensors' names, or as o says (common/st_gpt2.h: Hugging Face GPT-2's
 * names and layout, BF16; NULL: neither). 0, or -1 with err set. */
int worker_export_safetensors(const worker_t *w, const char *path, const st_out_t *o, char *err, size_t errlen);

/* The health as the summary and the coordinator see it: {"state": "ok"} or {"state":
 * "collapsed", "since_step", "at_step", "reason"}; JSON null where nothing was judged
 * (a rank other than 0, a simulation that skips the computation). New reference. */
json_t *worker_health_json(const worker_t *w);

#endif
