/* coordinator/coord_internal.h - the coordinator object, shared by coordinator.c (the
 * daemon: start, stop, the supervision tick) and api.c (the coord_* calls). Not for the
 * HTTP layer: it uses coordinator.h only. */
#ifndef PACER_COORD_INTERNAL_H
#define PACER_COORD_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>

#include "coordinator.h"
#include "embedded.h"
#include "jobstore.h"
#include "launcher.h"
#include "redis_report.h"
#include "spec.h"

typedef enum {
    PH_ACTIVE,      /* the job runs (spawned or adopted) */
    PH_KILLING,     /* SIGTERM sent; SIGKILL at kill_deadline */
    PH_BACKOFF,     /* RESTARTING: waiting for next_launch */
    PH_DONE,        /* final state decided; removed once Redis has it */
} run_phase_t;

typedef enum { KILL_NONE, KILL_CANCEL, KILL_STALE } kill_reason_t;

/* One job the daemon runs (tick thread only). */
typedef struct {
    char id[JOB_ID_MAX];
    job_spec_t *spec;         /* as submitted (normalised) */
    int world;
    run_phase_t phase;
    launch_handle_t h;        /* the attempt's processes (launcher.h); zero between attempts */
    double launched_at;       /* heartbeat grace starts here */
    int restarts, attempts;
    double next_launch;
    kill_reason_t kill_reason;
    int stale_rank;
    double stale_s;
    double kill_deadline;
    int sigkilled;
    job_state_t state;        /* the state Redis should show */
    job_state_t saved_state;  /* the state Redis was last told (events on change) */
    char reason[768];
    int exit_code;            /* -1 = unknown */
    double started, finished;
    int dirty;                /* Redis does not show this run's latest fields yet */
    int cancel_requested;
    double last_plan, last_log_check;
    int first_launch;         /* no launch yet: the initial batch plan is due */
    int redis_reported;       /* the worker's Redis sink was seen (a node hash exists) */
} coord_run_t;

struct coordinator {
    int daemon;
    coord_config_t cfg;       /* string members point into the buffers below */
    char listen[256];
    char state_dir[PATH_MAX];
    char hostfile[PATH_MAX];
    char worker[PATH_MAX];
    char mpirun[PATH_MAX];
    char redis_server[PATH_MAX];
    char redis_url[REDIS_URL_MAX];         /* what the coordinator connects to */
    char worker_redis_url[REDIS_URL_MAX];  /* what the workers get */
    redis_url_t url;
    jobstore_pool_t *pool;                 /* API connections */

    /* daemon only */
    int embedded_on;
    embedded_t emb;
    launcher_t *launcher;                  /* starts, follows, stops attempts (--launcher) */
    int nhosts, slots_total;               /* the launcher's hosts and their slots */
    char hostname[256];
    int worker_has_redis;                  /* the worker understands --redis/--job */
    double started_at;
    char lock_value[320];

    pthread_t tick_thread;
    int tick_running;
    pthread_mutex_t lock;                  /* stopping + cond */
    pthread_cond_t cond;
    int stopping;

    /* tick thread only */
    redisContext *rc;
    double rc_next_try, rc_backoff, redis_up_since;
    int rc_down_logged;
    int have_lock, lock_conflict_logged;
    int adopted;
    double last_second;
    coord_run_t **runs;
    int nruns, capruns;
};

int coord_js_to_coord(int js);   /* JS_* -> COORD_* */

#endif
