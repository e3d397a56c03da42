/* coordinator/jobtrace.h - GET /api/v1/jobs/{id}/trace: a job's recent steps as
 * Chrome trace event JSON (Perfetto, chrome://tracing), built from the metrics records
 * the ranks report (docs/REDIS.md, the job's stream).
 *
 * The window: the newest min(steps x (world + 1) + 8 x world, TRACE_ENTRIES_MAX) stream
 * entries, of which each rank's last `steps` step records are kept. One track per rank
 * (pid 1, tid = rank, named "rank R (host, role)"). A step record carries its end
 * ("time"), its wall time (step_s) and its phases' seconds (common/phases.h), not their
 * order, so a step becomes one "X" slice per non-zero phase laid end to end in the order
 * a synchronous step runs them (data, compute, emulated, wait, comm, optimizer, other)
 * over [time - step_s, time]; a step that would start before the previous one on its
 * track ended starts at that end instead, so slices never overlap. The exact order of
 * every phase is in the worker's own --trace file (worker/trace.h). Instant events ("i"):
 * "batch plan" and "merge" at the end of a step whose record flags them, "restart" where
 * a rank's step count goes back (a restart from a checkpoint). Timestamps: microseconds
 * since the window's earliest step start.
 */
#ifndef PACER_COORD_TRACE_H
#define PACER_COORD_TRACE_H

#include <jansson.h>

#include "coordinator.h"

#define TRACE_STEPS_DEFAULT 100
#define TRACE_STEPS_MAX 1000
#define TRACE_ENTRIES_MAX 20000
#define TRACE_RANKS_MAX 4096

/* Pure: the trace of the newest `steps` step records of each rank among records (an
 * array of record objects, oldest first, as the stream holds them); records without a
 * breakdown (older workers), non-step records and malformed ones are skipped. New
 * reference; NULL when out of memory. */
json_t *trace_from_records(json_t *records, long steps, const char *job);

/* The job's trace: COORD_OK with *out, COORD_ENOTFOUND (unknown job), COORD_EUNAVAIL. */
int coord_trace(coordinator_t *c, const char *id, long steps, json_t **out);

#endif
