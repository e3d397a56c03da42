/* coordinator/supervise.h - what happens to a job after its processes ended: the
 * whole restart policy as one pure function, so it is unit-tested without processes.
 *
 *   exit 0                       -> SUCCEEDED
 *   exit 2 (worker: bad input)   -> FAILED at once (a restart would fail the same way)
 *   exit 3 (worker: training     -> on_collapse "restart": RESTARTING like any failure
 *     collapsed, worker/health.h)   (backoff, a restart used; the caller resumes from the
 *                                   last checkpoint before the collapse with the learning
 *                                   rate halved), FAILED once max_restarts are used;
 *                                   otherwise ("fail") FAILED at once
 *   cancelled by request         -> CANCELLED
 *   any other exit, a lost process (no exit code after a coordinator restart) or a
 *   stale heartbeat              -> RESTARTING after backoff_base x 2^restarts seconds,
 *                                   until max_restarts restarts were used; then FAILED
 */
#ifndef PACER_SUPERVISE_H
#define PACER_SUPERVISE_H

#include <stddef.h>

#include "jobstore.h"

typedef enum {
    SV_EXITED,    /* the wrapper reported mpirun's exit status in code */
    SV_SIGNALLED, /* mpirun (or the wrapper) was killed by signal code */
    SV_LOST,      /* gone without an exit status */
    SV_STALE,     /* killed by the coordinator: heartbeat older than stale_s (rank in code) */
    SV_CANCELLED, /* killed by the coordinator on request */
} sv_outcome_t;

typedef struct {
    sv_outcome_t outcome;
    int code;
    double stale_s;
    int restarts; /* restarts used so far */
    int max_restarts;
    double backoff_base_s;   /* first restart delay; doubles each time */
    const char *last_line;   /* the log's last meaningful line, or NULL */
    const char *on_collapse; /* the spec's on_collapse; NULL: "continue" */
    const char *collapse;    /* exit 3: why (the summary's health.reason), or NULL */
} sv_in_t;

typedef struct {
    job_state_t state;    /* SUCCEEDED, FAILED, CANCELLED or RESTARTING */
    int restarts;         /* restarts used after this decision */
    double delay_s;       /* RESTARTING: wait this long before launching again */
    char reason[768];     /* "" for SUCCEEDED */
    int collapse_restart; /* RESTARTING after a collapse: halve the rate, resume before it */
} sv_out_t;

void supervise_decide(const sv_in_t *in, sv_out_t *out);

#endif
