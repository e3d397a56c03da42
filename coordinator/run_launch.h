/* coordinator/run_launch.h - one attempt of a job's run launched (run_launch.c), as named
 * phases over one state with one cleanup: its paths, the spec the worker reads, the hosts
 * and world, the worker's argv, the start through the launcher (launcher.h). Tick thread
 * only. */
#ifndef PACER_RUN_LAUNCH_H
#define PACER_RUN_LAUNCH_H

#include "run.h"

/* Launches r's next attempt; a failure ends the attempt (finish_attempt) with its reason. */
void run_launch(coordinator_t *c, coord_run_t *r, double now);
/* The first launch of a claimed run, after the pre-flight benchmark of the hosts when one
 * is due (preflight.h): the job waits in PH_PREFLIGHT while a round runs. */
void run_first_launch(coordinator_t *c, coord_run_t *r, double now);

#endif
