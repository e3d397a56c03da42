/* coordinator/supervise.h - what happens to a job after its processes ended: the
 * whole restart policy as pure functions, so it is unit-tested without processes.
 *
 *   exit 0                       -> SUCCEEDED
 *   exit 2 (worker: bad input)   -> FAILED at once (a restart would fail the same way)
 *   exit 3 (worker: training     -> on_collapse "restart": RESTARTING like any failure
 *     collapsed, worker/health.h)   (backoff, a restart used; the caller resumes from the
 *                                   last checkpoint before the collapse with the learning
 *                                   rate halved), FAILED once max_restarts are used;
 *                                   otherwise ("fail") FAILED at once
 *   exit 75 (NOTICE_EXIT_STATUS, -> RESTARTING at once, no restart used: its ranks agreed on
 *     common/notice.h: stopped     a step, checkpointed there and left; the next attempt
 *     on notice, SIGTERM)            resumes from that checkpoint ("interrupted with notice")
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
    SV_EXITED,     /* the wrapper reported mpirun's exit status in code */
    SV_SIGNALLED,  /* mpirun (or the wrapper) was killed by signal code */
    SV_LOST,       /* gone without an exit status */
    SV_STALE,      /* killed by the coordinator: heartbeat older than stale_s (rank in code) */
    SV_CANCELLED,  /* killed by the coordinator on request */
    SV_STALLED,    /* killed by the coordinator: its ranks waited and none trained (stall.h) */
    SV_UNFINISHED, /* mpirun exited 0 but rank 0 wrote no summary: the run did not reach its end
                    * (seen: Open MPI's mpirun exiting 0 after losing a node's daemon) */
} sv_outcome_t;

typedef struct {
    sv_outcome_t outcome;
    int code;
    double stale_s;
    const char *host;  /* SV_STALE: the stale rank's host, or NULL when unknown */
    const char *stall; /* SV_STALLED: what the ranks did ("ranks 0, 1 waiting in ...") */
    int restarts;      /* restarts used so far */
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
    int notice;           /* RESTARTING after a stop on notice (exit 75): an interruption */
} sv_out_t;

void supervise_decide(const sv_in_t *in, sv_out_t *out);

/* Restarts are not spent blindly on one host that keeps going silent. The host that went
 * silent in each attempt the coordinator stopped (a stale heartbeat's rank, a stall's
 * silent ranks when they are on one host), in a row: */
#define SV_SILENT_LIMIT 2
typedef struct {
    char host[256]; /* the silent host of the last attempts ("" = none) */
    int times;      /* in how many attempts in a row */
} sv_silent_t;

/* Records how an attempt ended: host is the host that went silent in it, NULL or "" when
 * none did (any other ending breaks the row). Returns 1 when host has now been the
 * silent one in SV_SILENT_LIMIT attempts in a row: the next attempts leave it out, even
 * if every probe finds it well. */
int supervise_note_silent(sv_silent_t *s, const char *host);

#endif
