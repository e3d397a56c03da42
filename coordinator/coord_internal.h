/* coordinator/coord_internal.h - the coordinator object, shared by the daemon's files
 * (coordinator.c: start, stop and the tick; run.c: a job's run; lock.c; tickconn.c) and
 * the API's (api.c: the coord_* calls). Not for the HTTP layer: it uses coordinator.h only. */
#ifndef PACER_COORD_INTERNAL_H
#define PACER_COORD_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "coordinator.h"
#include "embedded.h"
#include "hclass.h"
#include "hostmem.h"
#include "hosts.h"
#include "jobstore.h"
#include "launcher.h"
#include "preflight.h"
#include "redis_url.h"
#include "run.h"
#include "schedule.h"
#include "spec.h"
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
    /* The data roots (dataroots.h): resolved (realpath); appended to, never changed, so
     * read them with coord_data_roots_get. roots_missing: the defaults not there yet,
     * under roots_lock. */
    char data_roots[COORD_DATA_ROOTS_MAX][PATH_MAX];
    atomic_int ndata_roots;
    char roots_missing[2][PATH_MAX];
    int nroots_missing;
    pthread_mutex_t roots_lock;
    jobstore_pool_t *pool; /* API connections */

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
    char lock_value[320];

    pthread_t tick_thread;
    int tick_running;
    pthread_mutex_t lock; /* stopping, cond, the reload request */
    pthread_cond_t cond;
    int stopping;
    /* Reloads of the host list (SIGHUP, POST /api/v1/cluster/reload): a caller bumps
     * reload_asked and waits on reload_cond until the tick has done that many. */
    long reload_asked, reload_done;
    pthread_cond_t reload_cond;
    char reload_err[512]; /* the last reload's error ("" = it worked) */
    /* Drains and their ends through the API (drain.c): the caller bumps drain_asked once
     * KEY_DRAIN holds the change and waits on drain_cond until the tick has read KEY_DRAIN
     * that many times over, so that no placement after the answer misses it. */
    long drain_asked, drain_done;
    pthread_cond_t drain_cond;
    json_t *reload_result; /* and what it found (owned; replaced each time) */
    /* Benchmarks asked for through the API (coord_cluster_benchmark): the request, under
     * lock, until the tick takes it (bench_done reaches bench_asked), then its answer. */
    long bench_asked, bench_done;
    pthread_cond_t bench_cond;
    char bench_model[SPEC_NAME_MAX], bench_dataset[SPEC_NAME_MAX];
    char *bench_hosts; /* blank-separated names ("" = all not down); owned */
    int bench_code;    /* COORD_* */
    char bench_err[512];
    json_t *bench_result;

    /* The queue as the policy last saw it (schedule.c; coordinator/policy.h):
     * queued job id -> its `queue` object ({"position", "reason", "detail",
     * "estimated_start"}), replaced whole by the tick, read by the API (job_json); NULL in
     * a client (coordinator_open), whose jobs show no queue object. */
    pthread_mutex_t queue_lock;
    json_t *queue_view; /* owned; under queue_lock */
    /* Admission (quotas.c): one submission through the API at a time is counted against
     * the queue's limits and stored, so that requests in parallel cannot pass a limit
     * together. */
    pthread_mutex_t admit_lock;
    /* Bumped by a user's removal (users.c): the tick then reads its runs' and queued jobs'
     * owners again (schedule.c), so that a removed user's jobs count to nobody's limits. */
    atomic_long owners_gen;

    /* tick thread only */
    sched_queued_t *qdemand; /* what the queued jobs ask for, parsed once per job (schedule.c) */
    hclass_cache_t hcache;   /* the profiles --policy hetero|agnostic classes hosts by (hclass.h) */
    double hplan_at;         /* when the tick last planned with classes (schedule.c) */
    double drain_read_at;    /* when the tick last read the drains (drain.c, drain_hosts_tick) */
    double rm_drain_read_at; /* and the resource manager's own (drain.c, rm_drain_read) */
    int nqdemand;
    long owners_seen; /* the owners_gen the tick's runs and qdemand were read at */
    redisContext *rc;
    double rc_next_try, rc_backoff, redis_up_since;
    int rc_down_logged;
    int have_lock, lock_conflict_logged;
    int adopted;
    double last_second;
    coord_run_t **runs;
    int nruns, capruns;
    host_t *hosts; /* the cluster's hosts and their states (hosts.h) */
    int nhosts;
    /* Called by hosts_set_state after a change (coordinator.c's coord_publish_info, set at
     * start): a callback, so that hosts.c, below the tick, never calls up into it. */
    void (*host_changed)(struct coordinator *c, double now);
    /* Called by coord_user_remove after a removal (webhook.c's webhooks_user_removed, set
     * when the daemon starts its webhooks): a callback, so that the users' store never
     * calls up into the webhooks that read it. NULL on a client handle. */
    void (*user_removed)(struct coordinator *c, const char *name);
    int slots_total, slots_usable; /* all their slots; those of up and slow hosts */
    int slots_max;                 /* the most slots one host has (memory admission) */
    double host_memory;            /* bytes per host for admission; 0 = unknown (set at start) */
    char host_memory_from[24];     /* where the figure came from: "MemTotal", "--host-memory-mb" */
    hostmem_entry_t *host_mem_of;  /* --host-memory-mb-of's figures (set at start) */
    int nhost_mem_of;
    /* The hosts as memory admission sees them (hostmem.h): written by the tick after the
     * host list changed (coordinator.c), copied by a submission; under lock. */
    hostmem_host_t *admit_hosts;
    int nadmit_hosts;
    preflight_mode_t preflight_mode;
    preflight_t pf;    /* the benchmark round (preflight.c) */
    long netprobe_seq; /* network probes started (their directories' numbers) */
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
 * whose ids it made, may ignore it). Inline: run.c, drain.c, api.c and coordinator.c all
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
