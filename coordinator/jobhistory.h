/* coordinator/jobhistory.h - GET /api/v1/jobs/{id}/history: a job's metric
 * history, downsampled so that a long job's charts stay light, built from the metrics
 * records its ranks report (docs/REDIS.md): the job's full stream holds the newest
 * ~20000 records; what it has trimmed comes from the coarse stream, which keeps the whole
 * run thinned (every record of a rank's first 512 steps, then 256 per doubling of the
 * step count: worker/redis_report.h), so the history always starts at the run's start.
 *
 * Downsampling: the records' time range [from, to] is cut into (points - 2) / 2 equal
 * buckets; per series (one metric of one rank), each bucket keeps its minimum and its
 * maximum (min/max decimation: spikes and dips survive, unlike a mean or every k-th
 * point), in time order, and the series' first and last points are kept as they are, so
 * a series spans the whole run and has at most `points` points. With many ranks the bound per
 * series shrinks so that ranks x points stays under HISTORY_CELLS_MAX per metric. Worker-
 * only metrics (samples_per_s, staleness_mean, staleness_p95, batch) leave the parameter
 * server's rank out. "job_loss" is the job's training loss as one series: per bucket of
 * `points` buckets, the mean loss of the worker step records in it, with the job's
 * samples so far (the sum of each worker's latest cumulative count) and the epoch, so that
 * the compare view can put jobs side by side against time, samples or epochs. "accuracy"
 * lists the test evaluations (epoch and final records), each with its eval_sample text
 * when the record has one (the spec's eval_sample: worker/evalsample.h).
 *
 * Bounded work: the streams are read in pages of HISTORY_PAGE entries, at most
 * HISTORY_COARSE_MAX of the coarse stream (its records older than the full stream's
 * first) and HISTORY_ENTRIES_MAX of the full one, each up to its newest entry when the
 * request began ("next": the full stream's last id, what a live view appends after).
 */
#ifndef PACER_COORD_HISTORY_H
#define PACER_COORD_HISTORY_H

#include <jansson.h>

#include "coordinator.h"

#define HISTORY_POINTS_DEFAULT 1000
#define HISTORY_POINTS_MIN 10
#define HISTORY_POINTS_MAX 5000
#define HISTORY_PAGE 2000
#define HISTORY_ENTRIES_MAX 25000 /* of the full stream */
#define HISTORY_COARSE_MAX 32000  /* of the coarse stream */
#define HISTORY_RANKS_MAX 1024
#define HISTORY_CELLS_MAX 200000
#define HISTORY_ACC_MAX 5000
#define HISTORY_SAMPLE_MAX 4096 /* bytes of an evaluation's eval_sample kept (a longer one: none) */

typedef struct history history_t;

/* Pure. A downsampler for records with times in [from, to], at most `points` points per
 * series (clamped to HISTORY_POINTS_MIN..MAX), ranks 0..nranks-1 (clamped to 1..
 * HISTORY_RANKS_MAX; records of other ranks are skipped). NULL when out of memory. */
history_t *history_new(long points, double from, double to, int nranks);
/* Folds one metrics record (a worker/metrics.h JSON object) in; malformed ones and those
 * without a finite time are skipped. Records may come slightly out of time order. */
void history_add(history_t *h, json_t *rec);
/* The answer's body without "job" and "next" (see docs/openapi.json HistoryPage). New
 * reference; NULL when out of memory. */
json_t *history_json(const history_t *h);
void history_free(history_t *h);

/* The job's history: COORD_OK with *out, COORD_ENOTFOUND (unknown job), COORD_EUNAVAIL. */
int coord_history(coordinator_t *c, const char *id, long points, json_t **out);

#endif
