/* coordinator/coord_internal.h - the coordinator object: its configuration, and a pointer
 * to the state of each of its parts (c->hosts->slots_total), each state declared in the
 * part's own header (hosts.h, drain.h, preflight.h, schedule.h, quotas.h for the users,
 * dataroots.h, tickconn.h, lock.h, run.h) and allocated with the object (daemon.c).
 * Only the pointers live here, so this header includes none of the parts' headers: a
 * part's .c includes it and the headers of the parts it uses, and coordinator/'s modules
 * form no circle (tests/integration/code_shape.sh). Not for the HTTP layer: it uses
 * coordinator.h only. */
#ifndef PACER_COORD_INTERNAL_H
#define PACER_COORD_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "coordinator.h"
#include "embedded.h"
#include "jobstore.h"
#include "launcher.h"
#include "redis_url.h"
#include "wcaps.h"

struct coordinator {
    int daemon;
    /* the daemon's webhooks (webhook.h); NULL on a client handle */
    struct webhooks *webhooks;
    coord_config_t cfg; /* string members point into the buffers below */
    char listen[256];
    char state_dir[PATH_MAX];
    char hostfile[PATH_MAX];
    char worker[PATH_MAX];
    char sim[PATH_MAX];           /* pacer-sim */
    char sim_platforms[PATH_MAX]; /* real path; "" = none (simjob.h) */
    char mpirun[PATH_MAX];
    char redis_server[PATH_MAX];
    char redis_url[REDIS_URL_MAX];            /* what the coordinator connects to */
    char worker_redis_url[REDIS_URL_MAX];     /* what the workers get, without a password */
    char redis_url_shown[REDIS_URL_MAX + 16]; /* redis_url with its password masked: for
                                              logs, messages and pacer:coordinator */
    char worker_password_file[PATH_MAX + 32]; /* STATE_DIR/redis.password (0600) when the
                                              workers' URL has a password, else "" */
    redis_url_t url;
    struct dataroots *roots;   /* the data roots (dataroots.h) */
    jobstore_pool_t *pool;     /* API connections */
    struct coord_users *users; /* admission's lock, removals (quotas.h) */
    struct sched_state *sched; /* the queue as the policy saw it; the tick's cache (schedule.h) */

    /* daemon only */
    int embedded_on;
    embedded_t emb;
    launcher_t *launcher;     /* starts, follows, stops attempts (--launcher) */
    launcher_t *sim_launcher; /* simulated jobs (launch_sim.c); NULL: they fail */
    char sim_why[512];        /* why there is no sim launcher */
    int sim_slots;            /* its slots: simulations at a time */
    char hostname[256];
    wcaps_t worker_caps;       /* the options the worker binary takes (coordinator/wcaps.h) */
    char data_cache[PATH_MAX]; /* what it gets: --data-cache-dir, or STATE_DIR/data-cache */
    double started_at;

    pthread_t tick_thread;
    int tick_running;
    pthread_mutex_t lock; /* stopping, cond, and the requests of hosts, drain, preflight */
    pthread_cond_t cond;
    int stopping;
    struct hosts_state *hosts;         /* the cluster's hosts, slots, memory, reloads (hosts.h) */
    struct drain_state *drain;         /* drains asked through the API (drain.h) */
    struct preflight_state *preflight; /* the benchmark round and benchmarks asked (preflight.h) */

    /* tick thread only */
    struct tickconn *conn;    /* the tick's Redis connection (tickconn.h) */
    struct coord_lock *dlock; /* the daemon's lock (lock.h) */
    int adopted;
    double last_second;
    struct coord_runs *runs; /* the jobs it runs (run.h) */
};

/* JS_* -> COORD_*: inline, so that quotas.c, users.c and lifecycle.c, below the API, need
 * nothing of api.c for it. */
static inline int coord_js_to_coord(int js)
{
    switch (js) {
    case JS_OK: return COORD_OK;
    case JS_ENOTFOUND: return COORD_ENOTFOUND;
    case JS_ESTATE: return COORD_ESTATE;
    case JS_ENOMEM: return COORD_EINTERNAL;
    default: return COORD_EUNAVAIL;
    }
}

/* STATE_DIR/jobs/{id}[/leaf]: the one place a job's file paths come from, for the daemon
 * and the API alike. The API derives what it opens and shows from it, never from a path
 * stored in Redis. Returns 0, or -1 when id is not a job id ("j-" and digits) or the path
 * does not fit (the state dir is checked at start to leave room, so the daemon's callers,
 * whose ids it made, may ignore it). Inline: run.c, drain.c, api.c and daemon.c all
 * need it, and none of them should call another for it. */
static inline int coord_job_path(const coordinator_t *c, const char *id, const char *leaf, char *out, size_t len)
{
    int n = leaf ? snprintf(out, len, "%s/jobs/%s/%s", c->state_dir, id, leaf)
                 : snprintf(out, len, "%s/jobs/%s", c->state_dir, id);
    return n >= 0 && (size_t)n < len && job_id_valid(id) ? 0 : -1;
}

/* coord_submit, recording parent (NULL = none) as the job this one retries (lifecycle.c),
 * by a caller (NULL: nobody; coord_submit_spec_by). */
int coord_submit_as(coordinator_t *c, const char *spec_json, const char *parent, const coord_caller_t *by, char *id,
                    size_t idlen, char *err, size_t errlen);
/* After writing user as the owner in field of hash key (a job's "owner", a model's in
 * KEY_MODEL_OWNERS): when user was removed in between (a request checked before the
 * removal, stored after it), the owner becomes "NAME#removed", never the next account of
 * the name (users.c). The daemon's own "admin" has no record and is left alone. */
void coord_owner_confirm(redisContext *rc, const char *key, const char *field, const char *user);

#endif
