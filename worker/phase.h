/* worker/phase.h - where a training step's time goes: the step's wall time,
 * partitioned into the phases of common/phases.h.
 *
 * The step timer is marks on one clock (clock_mono_s): phase_mark(p, PHASE_X) books the
 * time since the previous mark to X, so the phases tile the step with no gap and no
 * overlap and add up to its wall time by construction. Whoever starts a phase first
 * marks what came before it as PHASE_OTHER (bookkeeping), so no bucket silently absorbs
 * time that is not its own; "other" is then what no mark claims, and the tests check it
 * stays small.
 *
 * Who marks: the loops. A step loop (worker/algo.c's algo_step) runs an algorithm's step
 * as stages, each in its phase (phase_switch between them), so the algorithm's code holds
 * no marks; a shared primitive that does work of another phase inside a stage (the
 * barrier before a collective, a re-plan's collectives, the emulated sleep) opens a
 * scope for it (phase_enter ... phase_leave), which returns the time around it to the
 * stage's phase. phase_mark books an interval outright, for the loops that mark by hand
 * (the parameter server's, worker/ps.c) and the rare split inside a stage.
 *
 * Hot path: a mark is one clock read and a few stores (plus one slice into the
 * preallocated trace ring under --trace); no allocation, no I/O, no formatting. Marks
 * outside a step (evaluation, epoch ends, start-up) do nothing.
 */
#ifndef PACER_PHASE_H
#define PACER_PHASE_H

#include <stdint.h>

#include "phases.h"

struct trace_ring;

#define PHASE_DEPTH 4

typedef struct {
    int active;                 /* between phase_begin and phase_end */
    double begin, mark;         /* clock_mono_s at the step's start and at the last mark */
    double s[PHASE_N];          /* seconds per phase, this step */
    double wall;                /* the step's wall time (phase_end) */
    unsigned events;            /* STEP_EV_* of this step */
    int64_t step;               /* the step number, for the trace */
    phase_t cur;                /* the phase the time since the last mark goes to by default */
    int depth;                  /* open scopes (phase_enter), at most PHASE_DEPTH */
    phase_t outer[PHASE_DEPTH]; /* the enclosing phases of the open scopes */
    struct trace_ring *ring;    /* --trace: where slices go; NULL: none */
    double total[PHASE_N];      /* sums over the steps closed so far (the summary's per_rank) */
    double total_wall;
    long steps;
} step_phases_t;

/* Starts a step: clears the buckets and events; step is its number (for the trace). The
 * phase in force is PHASE_OTHER. */
void phase_begin(step_phases_t *p, int64_t step);
/* Books the time since the last mark to ph (no-op outside a step). */
void phase_mark(step_phases_t *p, phase_t ph);
/* A stage boundary: books the time since the last mark to the phase in force and puts
 * ph in force (no-op outside a step). */
void phase_switch(step_phases_t *p, phase_t ph);
/* Puts ph in force without booking: the time since the last mark joins ph (a stage that
 * did nothing hands its moment to the next). */
void phase_relabel(step_phases_t *p, phase_t ph);
/* A scope inside a stage: phase_enter books the time since the last mark to the phase in
 * force and puts ph in force; phase_leave books the time since to ph and restores the
 * phase in force before it. Scopes nest PHASE_DEPTH deep (a deeper one is booked to the
 * scope around it). No-ops outside a step. */
void phase_enter(step_phases_t *p, phase_t ph);
void phase_leave(step_phases_t *p);
/* Drops the step in progress without booking it (the parameter server, when an epoch
 * ends inside an aggregate that no record will report). */
void phase_abort(step_phases_t *p);
/* Closes the step: the time since the last mark is PHASE_OTHER; sets wall. Scopes still
 * open are closed with it. */
void phase_end(step_phases_t *p);
/* Flags an event (STEP_EV_*) on the step in progress, at now (no-op outside a step). */
void phase_event(step_phases_t *p, unsigned ev);
/* Sum of the buckets (equals wall after phase_end, up to rounding). */
double phase_sum(const step_phases_t *p);

#endif
