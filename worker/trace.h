/* worker/trace.h - the worker's timeline (--trace FILE): a bounded ring of the
 * rank's most recent phase slices and step events, written at the end of the job as
 * Chrome trace event JSON (Perfetto, chrome://tracing).
 *
 * Recording (phase.c calls trace_slice / trace_instant from inside the step) stores into
 * arrays allocated once at start-up: no allocation, no formatting, no I/O, no lock (the
 * ring belongs to the training thread). A slice that continues the previous one's phase
 * extends it; slices under a microsecond are not kept (invisible in a viewer; the
 * metrics record still counts them). When the ring is full the oldest slices are
 * overwritten: the file holds the last TRACE_SLICES slices (some thousands of steps).
 *
 * Writing (after training): every rank formats its ring, rank 0 gathers the texts over
 * MPI_COMM_WORLD and writes one file with one track per rank (pid 1, tid = rank, named
 * "rank R (host)"). Timestamps are microseconds since the earliest kept slice of the job
 * on the wall clock (each rank converts its monotonic marks with its own wall-clock
 * offset, so hosts are aligned as well as their clocks are).
 */
#ifndef PACER_TRACE_H
#define PACER_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "phases.h"

#define TRACE_SLICES 32768
#define TRACE_INSTANTS 1024

typedef struct {
    double t0, dur; /* clock_mono_s start, seconds */
    int64_t step;
    int phase;
} trace_slice_t;

typedef struct {
    double t;
    int64_t step;
    unsigned ev;
} trace_instant_t;

typedef struct trace_ring {
    trace_slice_t *slices; /* (TRACE_SLICES) */
    uint64_t nslices;      /* slices ever kept; the ring holds the last TRACE_SLICES */
    trace_instant_t *inst; /* (TRACE_INSTANTS) */
    uint64_t ninst;
    double wall_minus_mono; /* clock_wall_s() - clock_mono_s() at trace_ring_init */
} trace_ring_t;

/* Allocates the ring (start-up, never in a step). Returns 0 or -1 (out of memory). */
int trace_ring_init(trace_ring_t *r);
void trace_ring_free(trace_ring_t *r);

/* Hot path: see above. */
void trace_slice(trace_ring_t *r, int64_t step, int phase, double t0, double dur);
void trace_instant(trace_ring_t *r, int64_t step, unsigned ev, double t);

/* The wall-clock time of the ring's oldest kept slice or event (+inf when empty). */
double trace_ring_first_wall(const trace_ring_t *r);

/* Formats the ring as comma-separated Chrome trace events (no brackets) for track tid,
 * with times in microseconds since origin_wall; "" when empty. malloc'd; NULL when out
 * of memory. Includes the track's thread_name metadata (label). */
char *trace_ring_events(const trace_ring_t *r, int tid, const char *label, double origin_wall);

/* Writes {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":{...}} to f from the
 * per-rank event texts (comma-separated, as trace_ring_events returns; NULL or "" skipped).
 * Returns 0 or -1 (write error). */
int trace_write_file(FILE *f, const char *job_name, char *const *texts, int n);

#endif
