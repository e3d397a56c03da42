/* coordinator/experiment.h - experiments: a hyperparameter search run as jobs
 * (docs/EXPERIMENTS.md). An experiment is a base job spec and a search (common/search.h); each of
 * its trials is a job of the spec with the trial's parameters set, submitted as the
 * experiment's owner (the same owner, priority, queue and limit rules as any job). The
 * daemon's tick drives every running experiment from Redis alone (KEY_EXPERIMENT: the
 * search, the trials' parameters and each trial's state; docs/REDIS.md): it reads each
 * live trial's evaluations from its job's coarse metrics stream, applies ASHA's rule at
 * each rung (a trial that stops is cancelled at once, freeing its slots), submits the next
 * trials up to max_concurrent, and marks the experiment finished. So a coordinator that
 * restarts picks each running experiment up where the last one left it.
 *
 * Errors are COORD_* codes with err naming the field, as coordinator.h's calls.
 */
#ifndef PACER_EXPERIMENT_H
#define PACER_EXPERIMENT_H

#include <stddef.h>

#include <jansson.h>

#include "coordinator.h"

struct redisContext; /* hiredis's */

#define EXPERIMENT_ID_MAX 32      /* "e-<n>" */
#define EXPERIMENTS_ACTIVE_MAX 64 /* experiments running at once (429 past it) */

/* 1 when id looks like an experiment id ("e-" and 1 to 18 digits). */
int experiment_id_valid(const char *id);

/* POST /api/v1/experiments: body {"name", "spec": JOB_SPEC, "search": {...}}. Checks the
 * spec and the search, and every trial's spec (a searched key the spec table does not know
 * is refused with the spec's own message), submits the first trial as by (its refusal is
 * the answer: 403, 422, 429), and stores the experiment. *out (may be NULL) receives it as
 * coord_experiment_get shows it. */
int coord_experiment_submit(coordinator_t *c, const json_t *body, const coord_caller_t *by, char *id, size_t idlen,
                            json_t **out, char *err, size_t errlen);

/* {"experiments": [summary], "total", "offset", "limit"}, newest first; a summary has id,
 * name, owner, state, method, metric, trials, submitted, finished and best. limit <= 0:
 * 50; at most 1000. */
int coord_experiment_list(coordinator_t *c, long offset, long limit, json_t **out);

/* {"id", "name", "owner", "state", "reason", "submitted", "finished", "spec", "search",
 * "rungs", "trials": [{"trial", "job", "params", "state", "rung", "epochs_trained",
 * "metric", "rung_metrics"}], "best": {"trial", "job", "params", "metric"} or null,
 * "counts"}. COORD_ENOTFOUND for an unknown id; COORD_EINTERNAL with err naming the field
 * when what Redis holds for it is damaged. */
int coord_experiment_get(coordinator_t *c, const char *id, json_t **out, char *err, size_t errlen);

/* Cancels a running experiment: no trial starts any more and every trial's job is
 * cancelled. COORD_ESTATE when it has already finished. */
int coord_experiment_cancel(coordinator_t *c, const char *id, char *err, size_t errlen);

/* The experiment's owner ("" when none) and whether it exists, as coord_job_owner. */
int coord_experiment_owner(coordinator_t *c, const char *id, char *owner, size_t len, int *exists);

/* The daemon's tick (daemon.c): one step of every running experiment, on the tick's
 * connection. */
void experiment_tick(coordinator_t *c, double now);

/* One step of experiment id on rc (experiment_tick's for each; the tests call it alone):
 * reads each live trial's job state and then its new records; a trial takes its job's end
 * only once its records are read to the stream's end, and checks its epochs against the
 * job's summary.json then (a worker that ended while Redis was down could not send its
 * last records). JS_OK, or JS_EREDIS when rc broke. */
int experiment_step(coordinator_t *c, struct redisContext *rc, const char *id, double now);

#endif
