/* coordinator/run_adopt.h - a job becoming a run (run_adopt.c): one the scheduler just
 * claimed (run_claimed), or, after the daemon's (re)start, one Redis says is RUNNING or
 * RESTARTING (run_adopt: its hosts, resizes, placement and processes taken up again).
 * Tick thread only. */
#ifndef PACER_RUN_ADOPT_H
#define PACER_RUN_ADOPT_H

#include "run.h"

/* The claimed job k becomes a run with a copy of spec. Returns 0 with *out the run to
 * place and launch (run_first_launch), or with *out NULL when it has failed at once (a
 * spec that could not be read, a simulation this daemon cannot run; its state written);
 * -1 when out of memory (logged). */
int run_claimed(coordinator_t *c, const run_claim_t *k, const job_spec_t *spec, double now, coord_run_t **out);
/* After a (re)start: jobs Redis says are RUNNING or RESTARTING become runs again. */
void run_adopt(coordinator_t *c, double now);

#endif
