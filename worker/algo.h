/* worker/algo.h - the table of training algorithms built into this worker (algo.c): each
 * is one file with an algo_ops_t (worker.h) and one row of the table; and the loop that
 * runs one step's stages, each in its phase of the step timer (phase.h). */
#ifndef PACER_ALGO_H
#define PACER_ALGO_H

#include "worker.h"

/* The algorithm of that name (the spec's algorithm.name), or NULL. */
const algo_ops_t *algo_find(const char *name);

/* One training step of w->algo inside the step timer's phase_begin/phase_end: its stages
 * in order, each booked to its phase (phase_switch; a stage that returns ALGO_SKIP hands
 * its moment to the next), STEP_EV_MERGE flagged after a stage that returns ALGO_MERGED,
 * the stages after one that returns ALGO_END left out; after the last, the phase in
 * force is PHASE_OTHER again. Returns 0 or a stage's negative error. */
int algo_step(worker_t *w);

#endif
