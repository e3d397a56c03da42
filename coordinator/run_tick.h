/* coordinator/run_tick.h - one tick of a job's run (run_tick.c): has its attempt ended,
 * cancel requests, heartbeats and stalls, batch plans, log size, the drain of an ended
 * attempt's ranks and what follows it (a relaunch, a requeue, a restart, a final state).
 * Tick thread only. */
#ifndef PACER_RUN_TICK_H
#define PACER_RUN_TICK_H

#include "run.h"

/* One tick of r: see run.c. */
void run_step(coordinator_t *c, coord_run_t *r, double now);

#endif
