/* worker/worker.h - one training process: its model, data, position in the epoch, timers,
 * and the plug-in interface every training algorithm implements.
 *
 * Life of a training step (see README "Anatomy of a training step"): the trainer loop
 * runs the algorithm's stages (algo_ops_t.step) through algo_step (algo.c), each in its
 * phase of the step timer (w->phases, phase.h), llm.c's loop in stages:
 *   other      re-planning the batches (its collectives book themselves as comm)
 *   data       worker_next_batch: this rank's share of the global batch, gathered into
 *              preallocated x/y buffers (no allocation)
 *   compute    worker_compute_grad: forward + backward into model->grads; the emulated
 *              slowdown's wait inside it is its own scope (emulated)
 *   comm       the exchange, algorithm-specific (nothing, allreduce, a model average);
 *              the barrier before a collective is its own scope (wait)
 *   optimizer  worker_apply_update: clip + SGD on the fused buffers
 * The algorithm's code holds the maths and no marks; the loop counts steps, prints
 * progress, writes checkpoints and evaluates at epoch ends.
 */
#ifndef PACER_WORKER_H
#define PACER_WORKER_H

#include <stdint.h>

#include "clock.h"
#include "data.h"
#include "dsload.h"
#include "health.h"
#include "metrics.h"
#include "model.h"
#include "phase.h"
#include "spec.h"
#include "waitmark.h"

typedef enum { ROLE_WORKER = 0, ROLE_PS = 1 } worker_role_t;

/* Per-rank accounting that the summary's per_rank entries and the metrics records read. */
typedef struct {
    /* Wall-clock totals over the job; compute_s includes the emulated slowdown's wait,
     * also kept apart in emulated_s. */
    double compute_s, comm_s, idle_s;
    double emulated_s;
    double step_compute_s, step_comm_s, step_idle_s; /* the last step */
    double step_baseline_s;                          /* --comm-baseline: the raw allreduce's time */
    long samples;                                    /* training samples this rank computed */
    long steps;
    /* Steps of an emulated rank (slowdown > 1) already longer than f x u when it came to
     * wait: nothing was waited, so contention, not the emulation, set their length. */
    long emulated_late;
    float last_loss;
    double ewma_sps; /* node speed (planner_speed): samples per wall-clock second of compute, smoothed */
    /* ssgd: the all-reduce payload this rank handed to MPI (count x element size of
     * every collective of the step, compressed or not), summed, and the steps it covers:
     * the summary's comm_bytes_per_step. */
    double comm_bytes;
    long comm_steps;
} worker_stats_t;

struct algo_ops;

/* Why a rank's training loop stops (worker_t.stop); 0 while it runs. The values are the
 * ones the loops compared as bare numbers before they had names. */
typedef enum {
    STOP_NONE = 0,
    STOP_TARGET = 1,    /* target_accuracy reached */
    STOP_TEST_HOOK = 2, /* --stop-after-steps: as if interrupted (no final checkpoint or loss) */
    STOP_BUDGET = 3,    /* the time budget ran out */
    /* collapsed with on_collapse fail or restart (every rank agreed: worker_health_agree) */
    STOP_COLLAPSE = 4,
    /* a notice to stop (SIGTERM, worker/sigterm.h) heard by some rank, agreed by all at a
     * step boundary: checkpointed there, exit status NOTICE_EXIT_STATUS (common/notice.h) */
    STOP_NOTICE = 5,
} stop_reason_t;

typedef struct worker {
    const job_spec_t *spec;
    const char *model_onnx_out;                /* --model-onnx: ONNX of each checkpoint's weights, or NULL */
    const char *model_st_out;                  /* --model-safetensors: the same as safetensors, or NULL */
    struct json_t *init_report;                /* the summary's "init" (worker/init_weights.h), or NULL */
    long long trainable_params, frozen_params; /* the spec's freeze (worker/init_weights.h) */
    int any_frozen;                            /* some tensor takes no update */
    const struct algo_ops *algo;
    void *algo_state; /* owned by the algorithm */
    /* algorithm.compression (compress.h): worker_compress_setup's, or the parameter-server
     * family's push plan (ps_run); freed by worker_free. The checkpoint reads its state
     * (Q, the error feedback). */
    struct compress *compress;
    int verdict_told; /* min_gain's verdict logged (worker_epoch_done, rank 0) */
    int rank, world;  /* MPI rank and size (0, 1 standalone) */
    int nworkers;     /* ranks that compute gradients */
    int worker_index; /* this rank's index among them, -1 for the PS */
    worker_role_t role;
    int use_mpi;
    int polite_wait; /* wait for messages without spinning (emulate.c) */
    struct {
        double *hosts; /* rank 0: (world) x {host demand, cores, host id} */
        int ps_host;   /* host id (lowest world rank) of this rank's host */
        /* This rank's host: its workers' demand (the parameter server's share is only
         * known at the end) and its cores; cores 0 when not checked (a simulated rank). */
        double host_demand, host_cores;
    } emulation; /* emulate.c */

    model_t *model;
    /* rank 0 with the spec's eval_sample (worker/evalsample.h), else NULL */
    struct evalsample *eval_sample;
    /* With the spec's lora and eval_sample: the model without adapters (model/lora.h's
     * model_lora_base, batch 1) whose merged weights the sample reads, else NULL */
    model_t *lora_sample;

    struct cuda_model *gpu;  /* the model's device copy (device cuda/auto), or NULL */
    int gpu_device;          /* its CUDA device index (valid when gpu) */
    int gpu_ahead;           /* the device optimizer moved params and momentum
                                            since the host last had them (see below) */
    char device_reason[800]; /* why a rank that may use a GPU computes on the CPU */
    dataset_t train, test;
    /* What the data set is (the summary's "dataset"): its format, classes, the statistics
     * the gather normalises with, the decoded cache mapped (worker/dsload.h). */
    char data_format[16];
    dsload_info_t data;

    /* Epoch order: the same permutation on every rank (seeded by seed and epoch); each step
     * consumes global_batch samples starting at cursor, rank i taking batch_of[i] of them
     * after the shares of ranks before it. */
    int32_t *perm;
    long cursor;
    int global_batch;
    int *batch_of; /* (nworkers) current per-worker batch sizes */
    /* (nworkers) at the parameter server: each worker's dropout step (model.h) as of its
     * latest push, for the checkpoint (ps.c keeps it; unused by the other ranks). */
    uint64_t *dropout_of;
    int min_batch, max_batch; /* batch bounds (planner_bounds); buffer capacity */
    float *x;                 /* (max_batch, C, H, W) */
    int32_t *y;               /* (max_batch) */
    int32_t *eval_idx;        /* (max_batch) positions for evaluation batches */
    int batch;                /* samples in x/y for this step */
    rng_t aug_rng;
    data_augment_t augment; /* dataset.crop_padding, hflip (when dataset.augment) */

    long epoch; /* 0-based, current */
    long step_in_epoch;
    long steps_per_epoch;
    long global_step; /* steps done since the job began */
    long total_steps;
    float lr; /* this step's learning rate */
    lr_schedule_t sched;
    /* The learning rate's factor over the spec's (--lr-scale: 0.5 per restart after a
     * collapse, the coordinator's on_collapse "restart"); 1 otherwise. */
    double lr_scale;
    /* The checkpoint fence generation this attempt holds (--fence; -1: none): its
     * checkpoints become NAME.ckpt only while NAME.fence says it (common/ckptdir.h). */
    long fence;
    /* The momentum the optimizer applies: optimizer.momentum, or at a parameter server
     * with optimizer.async_momentum "compensated" what is left of it once the measured
     * staleness's own momentum is taken out (ps.c, ps_compensated_momentum). */
    float momentum;
    /* AdamW's step count t (its bias corrections): the updates this rank has applied,
     * kept across resumes (checkpoint.h, opt_step); 0 with SGD. */
    long opt_step;

    double slowdown;           /* emulation factor in force for this rank */
    double *undisturbed_s;     /* (max_batch + 1) the cheapest step measured per
                                            batch size: the emulation's base (step.c) */
    double undisturbed_host_s; /* undisturbed_s of the start-up batch size as the host's
                                            ranks shared it (emulate.c); 0 where none */
    worker_stats_t stats;
    staleness_acc_t staleness; /* updates this rank applied (at the PS: every
                                            applied update); exact counts, ~8 KB */
    float step_loss;           /* the step's loss as the algorithm reports it
                                            (global mean for ssgd); the loop logs it */
    int step_samples;          /* samples that loss is over */

    /* Dynamic batching (comm_replan): scratch of nworkers entries, and the plan version. */
    double *plan_speeds;
    int *plan_next;
    long plan_version;
    /* The gradient noise scale and the goodput planner (adaptive.h), owned by adaptive.c. */
    struct adaptive *adapt;
    /* algorithm.shard: this rank's range of the parameters and its optimizer state
     * (worker/shard.h); NULL: every rank updates the whole buffer. */
    struct shard *shard;
    /* Passes over the training set begun inside this epoch after its first: a global
     * batch the goodput planner grew past what is left of the epoch order starts one. */
    long pass;
    /* Returns 1 and fills out (nworkers) when the coordinator has a newer assignment. */
    int (*assignment_hook)(struct worker *w, int *out);
    void *assignment_ctx;
    int coordinator_plans; /* a coordinator assignment has been applied */
    /* Rank 0's value of flag, on every rank (a broadcast); NULL in one process. */
    int (*agree)(struct worker *w, int flag);
    /* The largest of every rank's flag, on every rank (an all-reduce); NULL in one process.
     * The notice to stop is agreed through it at step boundaries whose own all-reduce did
     * not carry it (worker_step_end), and names the rank that heard one. */
    int (*notice_agree)(struct worker *w, int flag);
    /* STOP_NOTICE: the signal, the (highest) rank that heard it and the step every rank
     * stopped after; notice_rank -1 while none was heard. */
    int notice_signal, notice_rank;
    long notice_step;
    /* The notice in the step's own all-reduce (sigterm_slot_pack; ssgd sets notice_in_extras):
     * notice_sent the signal this rank packed, notice_carried 1 once this step's all-reduce
     * brought notice_heard, the ranks that heard one (worker_step_end reads and clears it). */
    int notice_in_extras, notice_sent, notice_carried, notice_heard;
    /* sync_batchnorm (comm_bn_sync_setup): the batch norms' all-reduce over the job's
     * ranks, handed to the model for each training step only (worker_compute_grad);
     * bn_sync_on 0: each rank normalises by its own batch. bn_sync_s: the seconds the
     * step's batch norms spent in it, waiting for the other ranks' parts: kept out of
     * this rank's own compute cost (its speed, the emulated slowdown's base). */
    bn_sync_t bn_sync;
    int bn_sync_on;
    double bn_sync_s;

    metrics_reporter_t *metrics;   /* NULL: no --metrics / --redis */
    metrics_record_t record;       /* reused for every record this rank emits */
    double comm_bytes_reported;    /* stats.comm_bytes at the last step record (fill_record) */
    step_phases_t phases;          /* the step in progress: where its time goes */
    waitmark_t wait;               /* the blocking MPI call in progress (the Redis sink reads it) */
    struct trace_ring *trace;      /* --trace: the rank's recent slices; NULL: off */
    const struct train_opts *opts; /* the loop's options (test hooks) */
    int64_t ps_updates;            /* parameter server: updates applied, */
    double ps_busy_fraction;       /* the fraction of its time spent handling pushes, */
    int64_t ps_dropped;            /* and gradients dropped by tau_max */
    double ps_tau_avg;             /* and its smoothed staleness at the end (ps.c) */

    /* results */
    double epoch_loss_sum; /* sum of batch-weighted losses this epoch */
    long epoch_loss_samples;
    float train_loss_running; /* mean batch loss over the last epoch, as trained */
    float train_loss;         /* the final weights' loss on the fixed training
                                            subset (worker_final_train_loss; rank 0) */
    /* The latest evaluation (rank 0's, broadcast to the others in the synchronous family);
     * NaN before the first, and with the losses above whatever was not measured. */
    float test_loss, test_accuracy;
    long eval_step; /* global_step when test_accuracy was measured; -1: not yet */
    /* Training seconds (loop_s) at the first evaluation that reached target_accuracy;
     * NAN: not reached (or no target). */
    double time_to_target_s;
    long ckpt_step;     /* global_step of the last checkpoint this rank wrote; -1: none */
    stop_reason_t stop; /* why the loop stops; STOP_NONE while it runs */
    int adopt_any_spec; /* --adopt-checkpoint: the file being resumed may be of another spec */
    int nothing_left;   /* resumed after the last epoch end: nothing trained (worker_finish_resumed) */
    /* Rank 0 (the PS in the asynchronous family): is the run still learning (health.h)?
     * Fed the loss of every step and every evaluation; the other ranks leave it
     * HEALTH_UNKNOWN. collapse_stop: rank 0 has seen a collapse that on_collapse says to
     * stop for; the ranks stop once they agree (worker_health_agree). */
    health_t health;
    int collapse_stop;
    /* The Redis sink's copy of the health (main.c: redis_report_health); NULL: none. */
    void (*report_health)(struct worker *w, const char *json);
    /* The Redis sink's copy of this rank's shard (main.c: redis_report_shard): its
     * range's parameters, the state and gradient bytes it keeps; NULL: none. */
    void (*report_shard)(struct worker *w, long long params, long long state_bytes, long long gradient_bytes);
    double loop_s; /* training time: inside training steps, without
                                            evaluation or checkpoints (the PS: serving,
                                            without them) */
    double wall_s; /* the whole training loop */
} worker_t;

/* The options of a run the loops read (worker_t.opts): test hooks and budgets, from the
 * command line (main.c). */
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

/* What one step's stages hand on to the next (algo_step starts each step with loss NAN,
 * scale 1, sumsq 0). */
typedef struct {
    float loss;   /* the rank's batch loss, from the compute stage */
    float scale;  /* the gradient scale the update applies (ssgd: 1 / sum(b)) */
    double sumsq; /* the reduced gradient's squared norm, where the reduce has it (shard) */
} algo_step_t;

/* A stage returns 0 (done: its time is its phase's), a negative error, or these bits. */
#define ALGO_SKIP 1   /* it did nothing worth booking: its moment joins the next stage's */
#define ALGO_MERGED 2 /* models were merged or averaged (the step's STEP_EV_MERGE) */
#define ALGO_END 4    /* the step ends here: the stages after it do not run */

/* One stage of a training step: algo_step runs it in its phase (phase.h). */
typedef struct {
    phase_t phase;
    int (*run)(worker_t *w, algo_step_t *s);
} algo_stage_t;

#define ALGO_STAGES 10

/* The plug-in interface. Every callback returns 0 or a negative error after printing one
 * line that says what failed. */
typedef struct algo_ops {
    const char *name;
    int (*init)(worker_t *w); /* after weights are initialised or restored */
    /* One training step: its stages in order, up to the first without run. */
    algo_stage_t step[ALGO_STAGES];
    int (*epoch_end)(worker_t *w); /* before evaluation (e.g. finish an overlap) */
    /* Fills w->test_loss/test_accuracy, the same on every rank; NULL: evaluate locally. */
    void (*evaluate)(worker_t *w);
    /* Replaces the step loop entirely (the parameter-server family, which marks its own
     * phases: ps.c); NULL: step loop. */
    int (*run)(worker_t *w);
    void (*fini)(worker_t *w);
} algo_ops_t;

#endif
