/* worker/metrics.h - the per-rank metrics record and the path it leaves a training process.
 *
 * One struct, one serialiser: the same record becomes a JSON line in the --metrics file,
 * an entry of the job's Redis stream, an SSE event and a dashboard point.
 *
 * The training step never formats or does I/O: it copies a record into a bounded ring
 * (metrics_push, lock + memcpy, no allocation). A reporter thread drains the ring every
 * ~100 ms, serialises and hands each record to the sinks (file, Redis). When the ring is
 * full the oldest-unsent record is kept and the new one is dropped and counted: training
 * never waits for a slow disk or an unreachable Redis.
 *
 * A figure a rank did not measure is null (NaN here) or absent in the JSON, never 0 or
 * the last value: see the members below.
 */
#ifndef PACER_METRICS_H
#define PACER_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "phases.h"
#include "staleness.h"

/* Bytes of an evaluation's text sample with its NUL: a record stays one bounded line
 * (metrics.c's LINE holds it escaped). */
#define METRICS_SAMPLE_MAX 512

/* METRICS_EVAL: an evaluation between epoch ends (eval_every_steps). */
typedef enum { METRICS_STEP = 0, METRICS_EPOCH = 1, METRICS_FINAL = 2, METRICS_EVAL = 3 } metrics_kind_t;

typedef struct {
    metrics_kind_t kind;
    double time; /* unix seconds */
    int rank;
    int role; /* 0 worker, 1 parameter server */
    char host[64];
    char device[8];                   /* "cpu" | "cuda" */
    int64_t step;                     /* this rank's step count (global step for sync algorithms) */
    int64_t epoch;                    /* 1-based epoch the step belongs to */
    int batch;                        /* samples in this step; -1 (no "batch"): the PS's */
    float loss;                       /* this step's mean training loss (NaN when none) */
    double compute_s, comm_s, idle_s; /* this step */
    double baseline_comm_s;           /* --comm-baseline: a raw allreduce of the same size, this step */
    double samples_per_s;             /* EWMA of samples per second of compute; NaN: the PS's */
    int64_t samples;                  /* cumulative samples computed by this rank */
    double slowdown;                  /* emulated factor in force (1 = none) */
    staleness_t staleness;            /* cumulative, this rank's applied updates */
    /* The evaluation this record reports: on the rank that made it (rank 0, loop.c's
     * worker_report_epoch), in the epoch record of the epoch it ends (or the final record of a run
     * resumed after its last epoch end); NaN in every other record. */
    float test_loss, test_accuracy;
    int64_t plan_version; /* batch assignment version in force */
    /* METRICS_STEP: where the step's wall time went (common/phases.h); the phases add
     * up to step_s. compute_s/comm_s/idle_s above keep their older meanings (compute_s
     * includes the emulated wait; a PS worker's comm_s is its whole wait for the reply). */
    double phase_s[PHASE_N];
    double step_s;   /* the step's wall time */
    unsigned events; /* STEP_EV_* that happened in the step */
    /* The gradient noise scale (common/gns.h), NAN until measured (null), and the global
     * batch of the step (0: none, the parameter server: null). With algorithm.goodput
     * the plan in force: efficiency E(B), the learning rate's scale (AdaScale's gain),
     * goodput as measured (global batch x E / step_s), progress in steps at the spec's
     * batch, and whether this rank is left out (planned 0: absent). */
    double noise_scale;
    int global_batch;
    double train_s; /* evaluations (epoch, eval, final): training seconds so far (loop_s) */
    int planned;    /* 1: algorithm.goodput, the fields below are set */
    double efficiency, lr_scale, goodput, progress;
    int left_out;
    /* METRICS_STEP, where measured (comm_measured 1: ssgd, local-sgd, hier-bsp on MPI;
     * 0: absent, not 0): the payload this rank handed to MPI in the step (count x element
     * size; 0 in a local-sgd step without an average is a measurement), and with
     * algorithm.compression the ratio of a plain collective's payload to a compressed
     * one's (1 in PowerSGD's warm-up steps; 0: no compression, absent). */
    int comm_measured;
    double comm_bytes, compression_ratio;
    /* The spec's eval_sample continued by the weights this record's evaluation measured
     * (worker/evalsample.h): valid UTF-8, on rank 0's evaluation records only; "" (absent)
     * everywhere else. */
    char eval_sample[METRICS_SAMPLE_MAX];
} metrics_record_t;

/* Serialises r as one JSON object without a newline into buf; returns the length, or -1
 * when it does not fit. NaN fields become null. */
int metrics_to_json(const metrics_record_t *r, const char *job, char *buf, size_t len);

/* A sink receives serialised records on the reporter thread. write returns 0, or -1 when
 * the destination is unreachable (the reporter then keeps the batch and retries later). */
typedef struct metrics_sink {
    int (*write)(struct metrics_sink *s, const metrics_record_t *recs, const char *const *json, int n);
    void (*close)(struct metrics_sink *s);
    /* Optional: how many records the sink has accepted but not yet delivered (0: all at
     * their destination); it may also wake the sink's own thread. NULL: writes are
     * delivered when write returns (the file sink). */
    int (*pending)(struct metrics_sink *s);
    void *ctx;
} metrics_sink_t;

#define METRICS_RING 4096
#define METRICS_MAX_SINKS 4

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int running, stopping;
    metrics_record_t ring[METRICS_RING];
    uint64_t head, tail; /* tail: next to send; head: next free; head - tail <= RING */
    uint64_t dropped;    /* records dropped because the ring was full */
    uint64_t sent;
    metrics_sink_t *sinks[METRICS_MAX_SINKS];
    int nsinks;
    char job[64];
    double period_s;
} metrics_reporter_t;

/* Waits, at most timeout_s, until every record pushed before the call has reached every
 * sink's destination (the Redis stream, the file); 0 when it has, -1 at the deadline.
 * For checkpoint time, never a training step: the coordinator may stop a job as soon
 * as its new checkpoint appears (an elastic resize), so rank 0 flushes first and the
 * epoch records of the weights it saved are in Redis before the checkpoint is. */
int metrics_flush(metrics_reporter_t *m, double timeout_s);
#define METRICS_FLUSH_CKPT_S 1.0

/* Starts the reporter thread (period ~0.1 s). Sinks are owned by the reporter. */
int metrics_start(metrics_reporter_t *m, const char *job, metrics_sink_t *const *sinks, int nsinks);
/* Hot path: copy into the ring; never blocks on I/O. */
void metrics_push(metrics_reporter_t *m, const metrics_record_t *r);
/* Flushes what is queued (bounded wait of timeout_s), stops the thread, closes sinks. */
void metrics_stop(metrics_reporter_t *m, double timeout_s);

/* A sink that appends JSON lines to a file (fflush per batch). NULL on error. */
metrics_sink_t *metrics_file_sink(const char *path, char *err, size_t errlen);

#endif
