/* sim/sched_exp.h - an experiment (docs/EXPERIMENTS.md) as pacer-sched-sim's input: the
 * trials of one search, released max_concurrent at a time, each a job of the cluster file's
 * type that runs segment by segment up to ASHA's rungs or PBT's perturbation points
 * (common/search.c, the daemon's own rules), where ASHA stops it or lets it go on and PBT
 * lets it go on or moves it onto a better trial's weights with perturbed values. Its metric
 * is synthetic (a learning curve per trial, sched_exp.c), so what the simulator measures is
 * the search's cost on the cluster: when its last trial ends, under each policy. Outside
 * input: the file is bounded and checked as the trace is, a refusal naming the file and the
 * field. */
#ifndef PACER_SCHED_EXP_H
#define PACER_SCHED_EXP_H

#include <stddef.h>

#include <jansson.h>

#include "sched_input.h"
#include "search.h"

#define SCHED_EXP_EPOCHS_MAX 10000

typedef struct {
    search_t search;
    json_t *params; /* every trial's parameters (search_trial_params) */
    int type, workers;
    double epoch_samples;
    int rungs[SEARCH_RUNGS_MAX], nrungs;
    int n;        /* trials */
    int released; /* trials whose job has arrived */
    int *at;      /* per trial: the epoch its running segment ends at */
    int *pos;     /* the epoch its weights are at: where its running segment began */
    int *trained; /* epochs it trained itself (PBT: not those it took over from another) */
    int *rung;    /* rungs (PBT: points) it passed */
    int *stopped; /* stopped at a rung */
    double *metric;
    double *quality;  /* its learning curve's level (sched_exp.c); PBT's explore changes it */
    double *recorded; /* [rung * n + k]: the values recorded at a rung, in arrival order */
    int *recorder;    /* [rung * n + k]: the trial that recorded it */
    int nrec[SEARCH_RUNGS_MAX];
    /* pbt */
    json_t *params_now; /* every trial's values now (explored ones after an exploit) */
    int *exploits;      /* per trial: how many times it took over a better trial's weights */
    int *requeue;       /* its last segment ended in an exploit: its job is a new one (sched_exp_requeue) */
} sched_exp_t;

/* Parses the experiment file's text: {"type", "workers" (default 1), "epoch_samples",
 * "epochs", "search": an experiment's search object}. Writes the trials' jobs into *jobs
 * (malloc'ed; ids t0..tN-1, user "experiment"): the first max_concurrent arrive at 0, the
 * others when a trial ends (sched_exp_reached). Returns 0, or -1 with err "FILE: field: ...".
 * Free e with sched_exp_free (also after a failure). */
int sched_exp_parse(const char *text, size_t len, const char *file, const sched_cluster_t *c, sched_exp_t *e,
                    sched_job_t **jobs, int *njobs, char *err, size_t errlen);
void sched_exp_free(sched_exp_t *e);

/* Samples of trial i's first segment (to its first rung, or every epoch). */
double sched_exp_first(const sched_exp_t *e, int i);
/* Trial i finished its segment at time t: its metric at that epoch, ASHA's decision at a
 * rung, PBT's at a point (an exploit puts it at the better trial's epoch, which may be the
 * last). Returns the samples of its next segment (> 0: it goes on), or 0 when it ended
 * (stopped, or every epoch trained); then the next trial's job arrives at t (jobs[]). */
double sched_exp_reached(sched_exp_t *e, sched_job_t *jobs, int i, double t);
/* 1 when trial i's last segment ended in a PBT exploit (the flag is cleared): as the
 * daemon cancels the trial's job and submits a new one, the simulator queues it again. */
int sched_exp_requeue(sched_exp_t *e, int i);
/* What trial i is worth to the policy (policy_hjob_t.worth): under ASHA rf^(rungs it
 * passed), else 1 (the daemon sets worths for ASHA's trials only). */
double sched_exp_worth(const sched_exp_t *e, int i);
/* Trial i's work left were it to train every epoch: remaining in its segment, and after. */
double sched_exp_work_left(const sched_exp_t *e, int i, double remaining);
/* The search's outcome: trials stopped and trained to the end, epochs trained, and the
 * best trial's final metric and parameters (PBT: its values now), the mean final metric
 * of the trials trained to the end, and PBT's exploits. */
json_t *sched_exp_summary(const sched_exp_t *e);

#endif
