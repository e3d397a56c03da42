/* worker/train.h - set-up, the training loop, checkpoints and the summary of one rank. */
#ifndef PACER_TRAIN_H
#define PACER_TRAIN_H

#include <stddef.h>

#include <jansson.h>

#include "worker.h"

typedef struct train_opts {
    long stop_after_steps;     /* test hook: stop (as if killed) after this global step; 0 = off */
    const char *batch_plan;    /* "b0,b1,..." initial per-worker batches (tests); NULL = even */
    int ps_round_robin;        /* test hook: the PS takes pushes in worker order */
    double time_budget_s;      /* stop (evaluating first) once training has run this long */
    int comm_baseline;         /* ssgd: also time a raw allreduce per step (benchmarks) */
    int hpsgd_round_steps;     /* test hook: hpsgd merges each round after exactly this many
                                local steps (0: when MPI_Test finds it done) */
    const char *weight_digest; /* test hook: each rank appends "STEP DIGEST" at the start,
                                  after every step and at every epoch end to this path +
                                  ".rank<N>" */
} train_opts_t;

/* Loads the data, builds and initialises the model, sizes the buffers. rank/world are the
 * MPI position (0, 1 standalone). Returns 0 or a negative code with err set; a data error
 * returns the DATA_* code so main can exit with status 2. */
int worker_setup(worker_t *w, const job_spec_t *spec, int rank, int world, char *err, size_t errlen);
/* worker_setup for a run with nworkers gradient ranks, which may be fewer than the spec's
 * workers (an elastic restart on the hosts that remain, --world): the global batch stays
 * workers x batch_size, split evenly over the nworkers (the first ranks take the
 * remainder), and the batch buffers grow to hold the largest share. */
/* Whether this process and host can hold one rank of spec (common/memest.h's estimate
 * for nworkers gradient ranks): against the address space RLIMIT_AS leaves (the limit
 * less what the process maps already) when a limit is set, and host_ranks x the
 * estimate against MemAvailable. Returns 0, or -1 with err naming the figures. Called
 * before worker_setup_world allocates (worker/main.c). */
int worker_check_memory(const job_spec_t *spec, int nworkers, int host_ranks, char *err, size_t errlen);
int worker_setup_world(worker_t *w, const job_spec_t *spec, int rank, int world, int nworkers, char *err, size_t errlen);
void worker_teardown(worker_t *w);
/* The learning-rate schedule's step counts (total, warm-up, decay period) for per_epoch
 * steps (or parameter-server updates) per epoch. */
void worker_schedule_steps(worker_t *w, long per_epoch);

/* Restores weights, optimizer state and position from a checkpoint. A checkpoint written
 * by another number of workers (an elastic restart) resumes too: the batch plan is made
 * again for this run's workers over the same global batch, with one line on stderr that
 * says so; the parameter server's per-worker state (DC/DDC weight backups, staleness) is
 * not in a checkpoint and starts again at each worker's first pull. */
int worker_resume(worker_t *w, const char *path, char *err, size_t errlen);
/* --resume: the latest checkpoint (DIR/NAME.ckpt), or when it cannot be used (corrupt,
 * truncated) the next older one the job kept (common/ckptdir.h), each refusal one line on
 * stderr. Returns 1 with the path used, 0 when there is none, -1 with err naming the
 * latest's problem when none can be used. */
int worker_resume_latest(worker_t *w, char *path, size_t len, char *err, size_t errlen);
/* --resume-before: the newest checkpoint the job kept (common/ckptdir.h) written before
 * global step before, or when it cannot be used the next older one, each refusal one
 * line on stderr. Returns 1 with the path used, 0 when none could be used (the run starts
 * afresh), -1 with err when the directory cannot be listed. */
int worker_resume_before(worker_t *w, long before, char *path, size_t len, char *err, size_t errlen);
void worker_checkpoint_path(const worker_t *w, char *out, size_t len);
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
/* A record of kind (epoch end, evaluation, final) with this rank's state (loop.c): see
 * loop.c for which ranks carry an evaluation. */
void worker_report_epoch(worker_t *w, metrics_kind_t kind, int with_eval);

/* JSON for a measured figure: v, or null where it is not finite (unmeasured is missing,
 * not 0); n / s, or null without a positive s. The rank's record (worker_rank_json,
 * step.c) and the job's summary (train.c) write their figures with them. */
json_t *worker_json_finite(double v);
json_t *worker_json_rate(double n, double s);

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

/* Writes DIR/NAME.ckpt, then links it under its retained name and prunes the older ones
 * (checkpoint.keep_last, keep_best; a failure there is one line on stderr: the checkpoint
 * is written). */
int worker_save_checkpoint(worker_t *w, char *err, size_t errlen);

/* The model as ONNX at path, written whole or not at all: the graph of the spec's ONNX
 * file (an uploaded one's bytes by its sha256, worker/modelfetch.h) with these weights,
 * or a built-in's graph from its layer list (model/onnx_export.h). The caller has the
 * weights on the host (worker_model_to_host). 0, or -1 with err set. */
int worker_export_onnx(const worker_t *w, const char *path, char *err, size_t errlen);

/* Applies opts->batch_plan to w->batch_of; returns 0 or -1 with err naming the problem. */
int worker_apply_batch_plan(worker_t *w, const char *plan, char *err, size_t errlen);

/* After an evaluation (test_accuracy just measured, the same on every rank): 1 when it
 * reaches target_accuracy, and the first time also time_to_target_s = loop_s (the
 * caller keeps loop_s current). */
int worker_target_reached(worker_t *w);
/* After an evaluation between epoch ends (eval_every_steps): its record, and the stop
 * when it reaches the target. */
void worker_evaluated_between(worker_t *w);
/* Runs epochs until the spec's count, target accuracy, or the test hook. */
int worker_train(worker_t *w, const train_opts_t *o, char *err, size_t errlen);

/* Training samples of a job: the sum over the per_rank entries of role "worker" (each
 * sample is computed by exactly one worker; the PS reports updates, not samples). */
long worker_train_samples(json_t *per_rank);
/* The health as the summary and the coordinator see it: {"state": "ok"} or {"state":
 * "collapsed", "since_step", "at_step", "reason"}; JSON null where nothing was judged
 * (a rank other than 0, a simulation that skips the computation). New reference. */
json_t *worker_health_json(const worker_t *w);
/* This rank's per_rank summary entry (new reference). */
json_t *worker_rank_json(const worker_t *w);
/* Writes the job summary (rank 0) with the per_rank array (borrowed). */
int worker_write_summary(const worker_t *w, const char *path, json_t *per_rank, char *err, size_t errlen);

#endif
