/* worker/ps.h - the parameter-server machinery the asynchronous algorithms share
 * (ALGORITHMS.md sections 2 to 6). Rank 0 is the parameter server (PS), ranks 1..N are
 * workers (world = workers + 1).
 *
 * The PS holds the master weights, the optimizer state, the version t (updates applied),
 * each worker's read version and, for DC and DDC, each worker's backup weights. It is
 * also the data scheduler: each reply hands the worker its next range of the epoch's
 * sample order (the same permutation on every rank), so an epoch is one pass over the
 * training set by all workers together whatever their speeds; a worker that asks when the
 * epoch has no samples left is parked until every in-flight gradient is applied, then the
 * PS evaluates and starts the next epoch.
 *
 * Messages are one fused buffer each (a header, then the floats), never one per layer:
 *   worker -> PS  push:  ps_push_t + gradient (mean over the worker's batch; the trainable
 *                        tensors' only, no frozen one's) + the
 *                        worker's batch-norm running statistics (model_t.buffers, which
 *                        the PS adopts: it runs no training forward of its own)
 *   PS -> worker  reply: ps_reply_t + weights (after the worker's update, or the current
 *                        ones for a gradient n-softsync is still aggregating)
 * The PS receives with MPI_Irecv / MPI_Waitany (or, with the round-robin test hook, from
 * each worker in turn, which fixes every staleness value in advance).
 */
#ifndef PACER_PS_H
#define PACER_PS_H

#include <stdint.h>

#include "worker.h"

typedef struct {
    int64_t t_read;        /* version the gradient was computed at */
    int32_t batch;         /* samples it is over */
    float loss;            /* its mean loss */
    double samples_per_s;  /* the worker's EWMA compute speed (for dynamic batching) */
    uint64_t dropout_step; /* the worker's dropout step after this gradient (for the
                              checkpoint: worker_t.dropout_of) */
} ps_push_t;

typedef struct {
    int64_t version; /* t of the weights that follow */
    int64_t tau;     /* staleness of this worker's last applied gradient; -1 = none */
    int64_t epoch;   /* epoch of the assigned range */
    int64_t offset;  /* first position of the range in the epoch order */
    int32_t batch;   /* samples in the range (this worker's current batch size) */
    int32_t stop;    /* 1: training is over, no weights follow */
    int64_t plan_version;
    /* bf16 pushes with checkpoints (ps.c, save_error): > 0, the version of the checkpoint
     * the parameter server wrote since its last reply to this worker, whose error
     * feedback the worker is to write beside it: its error before its last push
     * (ef_prev 1: that push came after the checkpoint) or as it is (0). */
    int64_t ef_version;
    int32_t ef_prev;
    int32_t ef_pad;
} ps_reply_t;

struct ps;

/* An asynchronous algorithm is an update rule over the PS state. apply() receives one
 * push (g: nparams floats, the worker's mean gradient; scale: b_i / mean(b) with dynamic
 * batching, else 1; tau: its staleness) and returns the number of updates it applied to
 * the weights now: 1 normally, 0 when it keeps the gradient for later (n-softsync), or -1
 * when it drops it (tau > tau_max). */
typedef struct {
    const char *name;
    int (*init)(struct ps *ps);
    int (*apply)(struct ps *ps, int m, float *g, float scale, int64_t tau);
    /* Applies gradients held back by apply (a partial n-softsync aggregate) when no other
     * push can come; returns the updates applied (0 or 1). NULL: nothing is ever held. */
    int (*flush)(struct ps *ps);
    void (*fini)(struct ps *ps);
    int needs_backup; /* keep w_bak[m] = the weights worker m last read */
} ps_rule_t;

typedef struct ps {
    worker_t *w;
    const ps_rule_t *rule;
    int n;          /* workers */
    size_t np;      /* parameters */
    int64_t t;      /* version: updates applied */
    float *scratch; /* (np) compensated gradient */
    float **w_bak;  /* (n)(np) per-worker backups, when needs_backup */
    void *rule_state;
    int64_t dropped;  /* gradients dropped by tau_max */
    int group;        /* gradients per update (n-softsync's c), set by init; 1 default */
    int hold_replies; /* set by init: a worker whose gradient the rule holds gets its
                            reply when the aggregate is applied (hard sync, n-softsync with
                            n = 1); 0: it gets the current weights at once */
} ps_t;

/* The one entry point of every asynchronous algorithm: runs the PS loop on rank 0 and the
 * worker loop on the other ranks, for the whole job. */
int ps_run(worker_t *w, const ps_rule_t *rule);

/* The staleness-scaled learning rate n-softsync uses: alpha0 / max(tau, 1). */
float ps_softsync_alpha(float alpha0, int64_t tau);

/* optimizer.async_momentum "compensated" (docs/JOB_SPEC.md, "Asynchronous momentum"):
 * the explicit momentum that, with the implicit momentum of a mean staleness tau, makes a
 * total of mu. Mitliagkas, Zhang, Hadjis and Re, "Asynchrony begets momentum" (Allerton
 * 2016): with staleness geometric of mean tau, an asynchronous update is on average
 * momentum SGD with mu_implicit = tau / (1 + tau) (1 - 1/N for N equal workers,
 * tau = N - 1). Explicit momentum mu_e on top gives the expected update
 *   d[t+1] = (mu_e + mu_i) d[t] - mu_e mu_i d[t-1] - eta (1 - mu_i) g[t],
 * which for slowly varying d (d[t-1] ~ d[t]) is momentum SGD with
 *   1 - mu_total = (1 - mu_e)(1 - mu_i).
 * Holding mu_total at the user's mu: mu_e = 1 - (1 - mu) / (1 - mu_i)
 * = 1 - (1 - mu)(1 + tau), clamped at 0 (reached at tau >= mu / (1 - mu): 9 for 0.9, 1 for
 * 0.5). tau = 0 gives mu itself. */
float ps_compensated_momentum(double mu, double tau);
/* The weight of one update's staleness in the parameter server's smoothed staleness (the
 * compensated momentum's tau): span ~20 updates, as DDC-ASGD's tau_avg. */
#define PS_TAU_EWMA 0.05
/* The smoothed staleness after an update of staleness tau: what the parameter server
 * feeds ps_compensated_momentum (one multiply-add). */
double ps_tau_smooth(double tau_avg, int64_t tau);

#endif
