/* coordinator/daemon.c - the daemon's start and stop, and the tick that drives it:
 * every tick_s on its own thread, the lock (lock.c), adoption, one step of every run (run.c) and
 * the schedule (schedule.c), and once a second the daemon's own hash (pacer:coordinator). The
 * tick's Redis connection is tickconn.c. coordinator_open() makes a client instead: the
 * same object without the daemon parts, for the coord_* calls of api.c.
 *
 * The top of coordinator/: it makes the object and every part's state, so it includes every
 * part's header, and no part includes anything of it. It has no header of its own: its
 * calls (coordinator_start, coordinator_open, ...) are declared in coordinator.h, the public
 * API that this file and eight others implement, which sits below them all.
 */
#include "coord_internal.h"
#include "embedded.h"
#include "hclass.h"
#include "hostmem.h"
#include "hosts.h"
#include "jobstore.h"
#include "preflight.h"
#include "quotas.h"
#include "run.h"
#include "schedule.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "dataroots.h"
#include "drain.h"
#include "errmsg.h"
#include "experiment.h"
#include "fs.h"
#include "hostname.h"
#include "launch.h"
#include "launcher.h"
#include "lock.h"
#include "memest.h"
#include "modelstore.h"
#include "run_adopt.h"
#include "run_tick.h"
#include "simjob.h"
#include "tickconn.h"
#include "webhook.h"
#include "version.h"
#include "wcaps.h"

void coord_config_defaults(coord_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen = "127.0.0.1:8080";
    cfg->state_dir = "./var";
    cfg->mpirun = "mpirun";
    cfg->redis_server = "redis-server";
    cfg->max_restarts = 3;
    cfg->heartbeat_timeout_s = 60;
    cfg->restart_backoff_s = 1;
    cfg->kill_grace_s = 5;
    cfg->slurm_drain_deadline_s = 300;
    cfg->tick_s = 0.2;
    cfg->fair_half_life_s = 3600;
    cfg->preempt_min_run_s = 60;
    /* the scheduler simulator's defaults (sim/sched_sim.c) */
    cfg->hetero_min_run_s = 600;
    cfg->hetero_resize_cost_s = 30;
    cfg->hetero_hysteresis = 0.05;
    cfg->hetero_grow_overhead = 0.2;
    cfg->default_checkpoint_steps = 50;
    cfg->sim_slots = 1;
    cfg->oversubscribe = COORD_OVERSUBSCRIBE_DEFAULT;
    cfg->keep_jobs = COORD_KEEP_JOBS_DEFAULT;
    cfg->host_probe_s = 5;
    cfg->preflight_steps = 8;
    cfg->preflight_timeout_s = 120;
    cfg->max_queued = COORD_MAX_QUEUED_DEFAULT;
    /* a member may own an eighth of the catalog's uploads: eight of them cannot fill it */
    cfg->member = (user_limits_t){COORD_MEMBER_MAX_QUEUED_DEFAULT, 0, CATALOG_ADDED_MAX / 8, USER_PRIO_NORMAL};
}

static int absolute(const char *in, char *out, size_t len)
{
    if (in[0] == '/') {
        if (snprintf(out, len, "%s", in) >= (int)len) return -1;
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return -1;
        const char *rel = strncmp(in, "./", 2) == 0 ? in + 2 : in;
        if (snprintf(out, len, "%s/%s", cwd, rel) >= (int)len) return -1;
    }
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') out[--n] = 0;
    return 0;
}

/* ---- the tick ------------------------------------------------------------------------------ */

/* The hosts as pacer:coordinator and a reload's answer show them: hosts_json with, on each,
 * the jobs whose ranks fill its slots (run_holds). */
static json_t *cluster_hosts_json(coordinator_t *c)
{
    json_t *arr = hosts_json(c->hosts);
    for (int i = 0; arr && i < c->hosts->n; i++) {
        json_t *jobs = json_array();
        for (int k = 0; jobs && k < c->runs->n; k++)
            if (run_holds(c, c->runs->list[k], i) > 0) json_array_append_new(jobs, json_string(c->runs->list[k]->id));
        json_object_set_new(json_array_get(arr, (size_t)i), "jobs", jobs ? jobs : json_array());
    }
    return arr;
}

/* Writes the daemon's own hash (pacer:coordinator: hosts, slots, heartbeat) now, on the
 * tick's connection. The tick does it once a second; hosts_set_state does it at once
 * (c->hosts->changed), so that a job resized for a host's state never shows before the
 * state. */
static void coord_publish_info(coordinator_t *c, double now)
{
    json_t *hosts = cluster_hosts_json(c);
    char *htext = hosts ? json_dumps(hosts, JSON_COMPACT) : NULL;
    json_decref(hosts);
    /* What a client needs to offer simulation (the dashboard's form): whether it runs,
     * and the platform files a job may name. */
    json_t *sim = json_pack("{s:b, s:s, s:i, s:s, s:o}", "available", c->sim_launcher != NULL, "reason",
                            c->sim_launcher ? "" : c->sim_why, "slots", c->sim_slots, "platforms_dir", c->sim_platforms,
                            "platforms", simjob_platforms(c->sim_platforms));
    char *stext = sim ? json_dumps(sim, JSON_COMPACT) : NULL;
    json_decref(sim);
    int running = 0;
    for (int i = 0; i < c->runs->n; i++) running += c->runs->list[i]->phase != PH_DONE;
    char pid[16], started[32], hb[32], slots[16], usable[16], used[16], nrun[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(started, sizeof started, "%.3f", c->started_at);
    snprintf(hb, sizeof hb, "%.3f", now);
    snprintf(slots, sizeof slots, "%d", c->hosts->slots_total);
    snprintf(usable, sizeof usable, "%d", c->hosts->slots_usable);
    snprintf(used, sizeof used, "%d", run_slots_used(c));
    snprintf(nrun, sizeof nrun, "%d", running);
    const char *argv[] = {
        "HSET",         KEY_COORD,
        "pid",          pid,
        "host",         c->hostname,
        "started",      started,
        "heartbeat",    hb,
        "version",      PACER_VERSION,
        "state_dir",    c->state_dir,
        "redis",        c->redis_url_shown,
        "worker",       c->worker,
        "worker_redis", c->worker_caps.redis ? "1" : "0",
        "hosts",        htext ? htext : "[]",
        "slots",        slots,
        "slots_usable", usable,
        "slots_used",   used,
        "launcher",     launcher_name(c->launcher),
        "running",      nrun,
        "listen",       c->listen,
        "simulator",    stext ? stext : "{}",
    };
    size_t len[sizeof argv / sizeof argv[0]];
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++) len[i] = strlen(argv[i]);
    redisReply *r = redisCommandArgv(c->conn->rc, (int)(sizeof argv / sizeof argv[0]), argv, len);
    free(htext);
    free(stext);
    if (!r) tickconn_broken(c, "coordinator info");
    else freeReplyObject(r);
}

/* Job history retention (--keep-jobs, --keep-jobs-age): at most PRUNE_PER_TICK of the oldest final jobs a
 * second, so a history far over the limit (a lowered --keep-jobs) shrinks without one
 * long stall of the tick; their directories go with them. */
#define PRUNE_PER_TICK 100
static void prune(coordinator_t *c)
{
    char ids[PRUNE_PER_TICK][JOB_ID_MAX];
    int n = 0;
    double before = c->cfg.keep_jobs_age_s > 0 ? clock_wall_s() - c->cfg.keep_jobs_age_s : 0;
    if (tickconn_check(c, jobstore_prune(c->conn->rc, c->cfg.keep_jobs, before, PRUNE_PER_TICK, ids, &n), "prune") !=
        JS_OK)
        return;
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX];
        if (coord_job_path(c, ids[i], NULL, dir, sizeof dir) == 0 && fs_remove_tree(dir) != 0)
            clog_printf("job %s: %s: cannot remove: %s", ids[i], dir, strerror(errno));
    }
    if (n)
        clog_printf("retention: deleted %d finished job%s beyond --keep-jobs %ld or older than --keep-jobs-age "
                    "%.0f s (oldest %s)",
                    n, n == 1 ? "" : "s", c->cfg.keep_jobs, c->cfg.keep_jobs_age_s, ids[0]);
}

/* The host table memory admission reads (hostmem.h), after the host list changed: each
 * host's --host-memory-mb-of figure, else c->hosts->memory's. A figure for a host no longer
 * listed (after a reload) is not used. Tick thread (and the start). */
static void admission_hosts(coordinator_t *c)
{
    hostmem_host_t *t = calloc((size_t)(c->hosts->n > 0 ? c->hosts->n : 1), sizeof *t);
    if (!t) {
        clog_printf("memory admission keeps its old host table: out of memory");
        return;
    }
    for (int i = 0; i < c->hosts->n; i++) {
        snprintf(t[i].name, sizeof t[i].name, "%s", c->hosts->list[i].name);
        t[i].slots = c->hosts->list[i].slots;
        t[i].bytes = c->hosts->memory > 0 ? c->hosts->memory : 0;
        snprintf(t[i].from, sizeof t[i].from, "%s", c->hosts->memory_from);
        for (int k = 0; k < c->hosts->nmem_of; k++)
            if (strcmp(c->hosts->mem_of[k].name, t[i].name) == 0) {
                t[i].bytes = c->hosts->mem_of[k].bytes;
                snprintf(t[i].from, sizeof t[i].from, "--host-memory-mb-of");
            }
    }
    pthread_mutex_lock(&c->lock);
    free(c->hosts->admit);
    c->hosts->admit = t;
    c->hosts->nadmit = c->hosts->n;
    pthread_mutex_unlock(&c->lock);
}

/* A reload asked for by coord_cluster_reload (SIGHUP, the API): the launcher learns its
 * hosts again and the host table follows. */
static void reload_hosts(coordinator_t *c, double now)
{
    pthread_mutex_lock(&c->lock);
    long asked = c->hosts->reload_asked;
    pthread_mutex_unlock(&c->lock);
    if (asked == c->hosts->reload_done) return;
    char err[512] = "", added[4096] = "", removed[4096] = "";
    json_t *result = NULL;
    if (launcher_reload(c->launcher, err, sizeof err) == 0) {
        if (hosts_sync(c, now, added, sizeof added, removed, sizeof removed) != 0) {
            snprintf(err, sizeof err, "out of memory");
        } else {
            admission_hosts(c);
            clog_printf("host list reloaded (%s launcher): %d host%s, %d slot%s; added [%s], removed [%s]",
                        launcher_name(c->launcher), c->hosts->n, c->hosts->n == 1 ? "" : "s", c->hosts->slots_total,
                        c->hosts->slots_total == 1 ? "" : "s", added, removed);
            json_t *a = json_array(), *r = json_array();
            for (char *save = NULL, *t = strtok_r(added, " ", &save); a && t; t = strtok_r(NULL, " ", &save))
                json_array_append_new(a, json_string(t));
            for (char *save = NULL, *t = strtok_r(removed, " ", &save); r && t; t = strtok_r(NULL, " ", &save))
                json_array_append_new(r, json_string(t));
            result = json_pack("{s:o, s:i, s:i, s:o, s:o}", "hosts", cluster_hosts_json(c), "slots",
                               c->hosts->slots_total, "slots_usable", c->hosts->slots_usable, "added",
                               a ? a : json_array(), "removed", r ? r : json_array());
        }
    }
    if (err[0])
        clog_printf("host list not reloaded: %s (the %d known host%s stay)", err, c->hosts->n,
                    c->hosts->n == 1 ? "" : "s");
    if (c->conn->rc) coord_publish_info(c, now);
    pthread_mutex_lock(&c->lock);
    c->hosts->reload_done = asked;
    snprintf(c->hosts->reload_err, sizeof c->hosts->reload_err, "%s", err);
    json_decref(c->hosts->reload_result);
    c->hosts->reload_result = result;
    pthread_cond_broadcast(&c->hosts->reload_cond);
    pthread_mutex_unlock(&c->lock);
}

int coord_cluster_reload(coordinator_t *c, json_t **out, char *err, size_t errlen)
{
    if (!c->daemon) {
        snprintf(err, errlen, "only the coordinator daemon keeps a host list: ask its API, or send it SIGHUP");
        return COORD_ESTATE;
    }
    pthread_mutex_lock(&c->lock);
    long mine = ++c->hosts->reload_asked;
    pthread_cond_signal(&c->cond);
    struct timespec ts;
    clock_wall_deadline(30.0, &ts);
    int code = COORD_OK;
    while (c->hosts->reload_done < mine && !c->stopping)
        if (pthread_cond_timedwait(&c->hosts->reload_cond, &c->lock, &ts) != 0) break;
    if (c->hosts->reload_done < mine) {
        snprintf(err, errlen, "the coordinator did not reload its host list within 30 s");
        code = COORD_EUNAVAIL;
    } else if (c->hosts->reload_err[0]) {
        snprintf(err, errlen, "%s", c->hosts->reload_err);
        code = COORD_EINVAL;
    } else {
        *out = c->hosts->reload_result ? json_deep_copy(c->hosts->reload_result) : NULL;
        if (!*out) code = COORD_EINTERNAL;
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}

static void tick(coordinator_t *c)
{
    double now = clock_wall_s();
    if (c->embedded_on) embedded_check(&c->emb);
    tickconn_ensure(c, now);
    reload_hosts(c, now);
    drain_hosts_tick(c, now);
    hosts_tick(c, now);
    preflight_tick(c, now);
    int second = now - c->last_second >= 1.0;
    if (second) c->last_second = now;
    if (c->conn->rc && (!c->dlock->held || second)) {
        char who[320];
        int k = coord_lock_try(c, c->conn->rc, who, sizeof who);
        if (k == JS_EREDIS) {
            tickconn_broken(c, "lock");
        } else if (k == 1) {
            if (!c->dlock->held) clog_printf("holding %s", KEY_LOCK);
            c->dlock->held = 1;
            c->dlock->conflict_logged = 0;
        } else {
            if (c->dlock->held || !c->dlock->conflict_logged)
                clog_printf("another coordinator (%s) holds %s; not scheduling", who, KEY_LOCK);
            c->dlock->held = 0;
            c->dlock->conflict_logged = 1;
        }
    }
    if (c->conn->rc && c->dlock->held && !c->adopted) run_adopt(c, now);
    for (int i = 0; i < c->runs->n; i++) run_step(c, c->runs->list[i], now);
    for (int i = 0; i < c->runs->n;) {
        coord_run_t *r = c->runs->list[i];
        if (r->phase == PH_DONE && !r->dirty) {
            run_free(r);
            c->runs->list[i] = c->runs->list[--c->runs->n];
        } else {
            i++;
        }
    }
    /* experiments first: a trial that ASHA stops frees its slots, and a new one queues, before the schedule */
    if (c->conn->rc && c->dlock->held && c->adopted) experiment_tick(c, now);
    if (c->conn->rc && c->dlock->held && c->adopted) schedule_tick(c, now);
    if (c->conn->rc && second) coord_publish_info(c, now);
    if (c->conn->rc && c->dlock->held && second && (c->cfg.keep_jobs > 0 || c->cfg.keep_jobs_age_s > 0)) prune(c);
}

static void *tick_main(void *arg)
{
    coordinator_t *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->lock);
        tick(c);
        pthread_mutex_lock(&c->lock);
        if (c->stopping) break;
        struct timespec ts;
        clock_wall_deadline(c->cfg.tick_s, &ts);
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static void copy_str(char *dst, size_t len, const char *src, const char *dflt)
{
    snprintf(dst, len, "%s", src && *src ? src : dflt);
}

/* The object and its parts' states in one allocation: the object holds a pointer to each
 * state (coord_internal.h needs none of the parts' headers for it), set here to the members
 * beside it. */
typedef struct {
    coordinator_t c; /* first: free_coordinator frees the whole through it */
    dataroots_t roots;
    coord_users_t users;
    sched_state_t sched;
    hosts_state_t hosts;
    drain_state_t drain;
    preflight_state_t preflight;
    tickconn_t conn;
    coord_lock_t dlock;
    coord_runs_t runs;
} coord_whole_t;

static coordinator_t *alloc_coordinator(void)
{
    coord_whole_t *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    coordinator_t *c = &w->c;
    c->roots = &w->roots;
    c->users = &w->users;
    c->sched = &w->sched;
    c->hosts = &w->hosts;
    c->drain = &w->drain;
    c->preflight = &w->preflight;
    c->conn = &w->conn;
    c->dlock = &w->dlock;
    c->runs = &w->runs;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->sched->queue_lock, NULL);
    pthread_mutex_init(&c->users->admit_lock, NULL);
    pthread_mutex_init(&c->roots->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    pthread_cond_init(&c->hosts->reload_cond, NULL);
    pthread_cond_init(&c->drain->cond, NULL);
    pthread_cond_init(&c->preflight->bench_cond, NULL);
    return c;
}

static void free_coordinator(coordinator_t *c)
{
    for (int i = 0; i < c->runs->n; i++) run_free(c->runs->list[i]);
    free(c->runs->list);
    free(c->sched->qdemand);
    hclass_free(&c->sched->hcache);
    json_decref(c->sched->queue_view);
    hosts_free(c);
    json_decref(c->hosts->reload_result);
    json_decref(c->preflight->bench_result);
    free(c->preflight->bench_hosts);
    free(c->hosts->mem_of);
    free(c->hosts->admit);
    launcher_close(c->launcher);
    launcher_close(c->sim_launcher);
    if (c->conn->rc) redisFree(c->conn->rc);
    jobstore_pool_free(c->pool);
    pthread_cond_destroy(&c->cond);
    pthread_cond_destroy(&c->hosts->reload_cond);
    pthread_cond_destroy(&c->drain->cond);
    pthread_cond_destroy(&c->preflight->bench_cond);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->sched->queue_lock);
    pthread_mutex_destroy(&c->users->admit_lock);
    pthread_mutex_destroy(&c->roots->lock);
    free((coord_whole_t *)c);
}

int coordinator_open(const char *redis_url, const char *state_dir, coordinator_t **out, char *err, size_t errlen)
{
    coordinator_t *c = alloc_coordinator();
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return COORD_EINTERNAL;
    }
    if (absolute(state_dir && *state_dir ? state_dir : "./var", c->state_dir, sizeof c->state_dir) != 0) {
        snprintf(err, errlen, "state dir: path too long");
        free_coordinator(c);
        return COORD_EINVAL;
    }
    if (redis_url && *redis_url) copy_str(c->redis_url, sizeof c->redis_url, redis_url, "");
    else if (strlen(c->state_dir) + 19 > sizeof c->redis_url) c->redis_url[0] = 0; /* parse says why */
    else {
        memcpy(c->redis_url, "unix://", 7);
        memcpy(c->redis_url + 7, c->state_dir, strlen(c->state_dir));
        memcpy(c->redis_url + 7 + strlen(c->state_dir), "/redis.sock", 12);
    }
    redis_url_redact(c->redis_url, c->redis_url_shown, sizeof c->redis_url_shown);
    if (redis_url_parse(c->redis_url, &c->url, err, errlen) != 0 || !(c->pool = jobstore_pool_new(&c->url))) {
        if (!c->pool && !err[0]) snprintf(err, errlen, "out of memory");
        free_coordinator(c);
        return COORD_EINVAL;
    }
    coord_config_defaults(&c->cfg);
    copy_str(c->listen, sizeof c->listen, NULL, c->cfg.listen);
    *out = c;
    return COORD_OK;
}

/* The sim launcher for jobs with simulate.enabled, beside the real one. A machine without
 * pacer-sim (or SimGrid) still runs real jobs: simulated ones then fail, saying why. Only
 * a bad option is an error. */
static int open_simulator(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->worker);
    dirname(dir); /* the worker's directory: build/ */
    if (cfg->sim && *cfg->sim) {
        if (absolute(cfg->sim, c->sim, sizeof c->sim) != 0) {
            snprintf(err, errlen, "--sim: path too long");
            return -1;
        }
    } else if (snprintf(c->sim, sizeof c->sim, "%s/pacer-sim", dir) >= (int)sizeof c->sim) {
        snprintf(err, errlen, "pacer-sim: path too long (pass --sim)");
        return -1;
    }
    c->sim_platforms[0] = 0;
    if (cfg->sim_platforms && *cfg->sim_platforms) {
        if (!realpath(cfg->sim_platforms, c->sim_platforms)) {
            snprintf(err, errlen, "--sim-platforms %.300s: %s", cfg->sim_platforms, strerror(errno));
            return -1;
        }
    } else {
        char guess[PATH_MAX + 32];
        snprintf(guess, sizeof guess, "%s/../sim/platforms", dir);
        if (!realpath(guess, c->sim_platforms) && !realpath("sim/platforms", c->sim_platforms)) c->sim_platforms[0] = 0;
    }
    c->sim_slots = cfg->sim_slots > 0 ? cfg->sim_slots : 1;
    launcher_config_t scfg = {.kind = "sim", .hostname = c->hostname, .sim = c->sim, .sim_slots = c->sim_slots};
    char why[400];
    if (launcher_open(&scfg, &c->sim_launcher, why, sizeof why) != 0) {
        c->sim_launcher = NULL;
        snprintf(c->sim_why, sizeof c->sim_why, "%s", why);
        clog_printf("simulated jobs (simulate.enabled) will fail: %s", c->sim_why);
    } else {
        clog_printf("simulated jobs: %s, %d at a time, platform files from %s", c->sim, c->sim_slots,
                    c->sim_platforms[0] ? c->sim_platforms : "(none: generated platforms only)");
    }
    return 0;
}

/* The workers' Redis password leaves the URL they get on their command line (which ps
 * shows every user, and the job log's header line repeats) for STATE_DIR/redis.password,
 * mode 0600, which they read with --redis-password-file. The state dir is on every host
 * under hostfile and slurm (docs/ARCHITECTURE.md), so remote ranks find it too. */
static int worker_password(coordinator_t *c, char *err, size_t errlen)
{
    redis_url_t wu;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/redis.password", c->state_dir);
    if (redis_url_parse(c->worker_redis_url, &wu, err, errlen) != 0) return -1;
    int rc = 0;
    if (!wu.password[0]) {
        unlink(path); /* a password of an earlier configuration is not left lying around */
    } else if (c->worker_caps.redis && !c->worker_caps.password_file) {
        snprintf(err, errlen,
                 "worker %s has no --redis-password-file option: the Redis password would be on its "
                 "command line; rebuild it",
                 c->worker);
        rc = -1;
    } else if (fs_atomic_write_fixed(path, wu.password, strlen(wu.password), 0600) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    } else {
        snprintf(c->worker_password_file, sizeof c->worker_password_file, "%s", path);
        char bare[REDIS_URL_MAX];
        redis_url_strip_password(c->worker_redis_url, bare, sizeof bare);
        memcpy(c->worker_redis_url, bare, sizeof bare);
    }
    memset(&wu, 0, sizeof wu);
    return rc;
}

static void log_swept(const char *path, long long bytes, void *ctx)
{
    (void)ctx;
    clog_printf("data cache: removed %s (%lld bytes), the temporary file of a build whose worker died", path, bytes);
}

/* A worker killed while it built a data cache (a heartbeat timeout, the OOM killer) leaves
 * its temporary file, as large as the data set: remove those of dead processes
 * at start (fs_atomic_sweep; a live one may be a hand-run worker's build under way). The
 * workers sweep their own cache file's before each build (worker/dsload.c). */
static void sweep_data_cache(const char *dir)
{
    if (fs_atomic_sweep(dir, NULL, log_swept, NULL) < 0)
        clog_printf("data cache %s: cannot list it for stale temporary files: %s", dir, strerror(errno));
}

/* ---- start: the phases coordinator_start runs in order -----------------------------------
 * Each takes the half-built coordinator and the caller's configuration and returns COORD_OK
 * or the error code with err set; coordinator_start's one cleanup undoes what they did. */

/* The configuration's defaults and bounds (c->cfg), and --preflight. */
static int start_settings(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    if (!(c->cfg.host_probe_s > 0)) c->cfg.host_probe_s = 5;
    int pm = preflight_mode_parse(cfg->preflight);
    if (pm < 0) {
        snprintf(err, errlen, "--preflight %.64s: must be auto, always or off", cfg->preflight);
        return COORD_EINVAL;
    }
    c->preflight->mode = (preflight_mode_t)pm;
    if (c->cfg.preflight_steps < 1 || c->cfg.preflight_steps > PREFLIGHT_STEPS_MAX) c->cfg.preflight_steps = 8;
    if (!(c->cfg.preflight_timeout_s > 0)) c->cfg.preflight_timeout_s = 120;
    c->started_at = clock_wall_s();
    copy_str(c->listen, sizeof c->listen, cfg->listen, "127.0.0.1:8080");
    copy_str(c->mpirun, sizeof c->mpirun, cfg->mpirun, "mpirun");
    copy_str(c->redis_server, sizeof c->redis_server, cfg->redis_server, "redis-server");
    if (c->cfg.max_restarts < 0) c->cfg.max_restarts = 0;
    if (c->cfg.tick_s <= 0) c->cfg.tick_s = 0.2;
    if (c->cfg.heartbeat_timeout_s <= 0) c->cfg.heartbeat_timeout_s = 60;
    if (c->cfg.kill_grace_s < 0) c->cfg.kill_grace_s = 0;
    if (c->cfg.default_checkpoint_steps <= 0) c->cfg.default_checkpoint_steps = 50;
    if (!(c->cfg.oversubscribe >= 1)) c->cfg.oversubscribe = COORD_OVERSUBSCRIBE_DEFAULT;
    /* the tick reads at most COORD_QUEUE_MAX queued jobs: the limit is never above it */
    if (c->cfg.max_queued <= 0 || c->cfg.max_queued > COORD_QUEUE_MAX) c->cfg.max_queued = COORD_QUEUE_MAX;
    user_limits_t *m = &c->cfg.member;
    long *counts[] = {&m->max_queued, &m->max_slots, &m->max_models};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (*counts[i] < 0 || *counts[i] > USER_LIMIT_MAX) *counts[i] = 0;
    if (m->max_priority < USER_PRIO_LOW || m->max_priority > USER_PRIO_HIGH) m->max_priority = USER_PRIO_NORMAL;
    c->cfg.data_roots = NULL; /* copied by start_dirs, resolved */
    return COORD_OK;
}

/* The state directory, the data roots, the data cache (swept) and STATE_DIR/jobs. */
static int start_dirs(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    if (absolute(cfg->state_dir && *cfg->state_dir ? cfg->state_dir : "./var", c->state_dir, sizeof c->state_dir)) {
        snprintf(err, errlen, "state dir: path too long");
        return COORD_EINVAL;
    }
    /* Job paths (STATE_DIR/jobs/{id}/checkpoints) must fit a spec's checkpoint.dir. */
    if (strlen(c->state_dir) > SPEC_PATH_MAX - 64) {
        snprintf(err, errlen, "state dir %.200s...: longer than %d bytes", c->state_dir, SPEC_PATH_MAX - 64);
        return COORD_EINVAL;
    }
    if (coord_data_roots_start(c, cfg, err, errlen) != 0) return COORD_EINVAL;
    /* Workers create it where they run (each host has its own cache); the path must fit a
     * spec's dataset.cache_dir. */
    if (cfg->data_cache_dir && *cfg->data_cache_dir) {
        if (absolute(cfg->data_cache_dir, c->data_cache, sizeof c->data_cache) ||
            strlen(c->data_cache) >= SPEC_PATH_MAX) {
            snprintf(err, errlen, "--data-cache-dir: path too long");
            return COORD_EINVAL;
        }
    } else {
        snprintf(c->data_cache, sizeof c->data_cache, "%.*s/data-cache", SPEC_PATH_MAX - 16, c->state_dir);
    }
    sweep_data_cache(c->data_cache);
    char jobs[PATH_MAX + 8];
    snprintf(jobs, sizeof jobs, "%s/jobs", c->state_dir);
    if (fs_mkdir_p(jobs, 0755) != 0) {
        snprintf(err, errlen, "state dir %s: %s", jobs, strerror(errno));
        return COORD_EINVAL;
    }
    return COORD_OK;
}

/* --host-memory-mb-of: parsed, and every host it names one of the launcher's (a name
 * mistyped would leave that host unchecked). 0, or -1 with err. */
static int host_memory_of(coordinator_t *c, const char *text, char *err, size_t errlen)
{
    if (!text || !*text) return 0;
    c->hosts->mem_of = calloc(LAUNCH_MAX_HOSTS, sizeof *c->hosts->mem_of);
    if (!c->hosts->mem_of) return errmsg(err, errlen, "out of memory");
    if (hostmem_parse(text, c->hosts->mem_of, LAUNCH_MAX_HOSTS, &c->hosts->nmem_of, err, errlen) != 0) return -1;
    for (int k = 0; k < c->hosts->nmem_of; k++)
        if (!hosts_find(c->hosts, c->hosts->mem_of[k].name))
            return errmsg(err, errlen, "--host-memory-mb-of: %.200s is not one of the %s launcher's %d host%s",
                          c->hosts->mem_of[k].name, launcher_name(c->launcher), c->hosts->n,
                          c->hosts->n == 1 ? "" : "s");
    return 0;
}

/* local, hostfile or slurm: where ranks can run, and how they start. */
static int start_launcher(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    host_name(c->hostname, sizeof c->hostname);
    if (cfg->hostfile && *cfg->hostfile && absolute(cfg->hostfile, c->hostfile, sizeof c->hostfile) != 0) {
        snprintf(err, errlen, "--hostfile: path too long");
        return COORD_EINVAL;
    }
    if (cfg->launcher && strcmp(cfg->launcher, "sim") == 0) {
        snprintf(err, errlen,
                 "--launcher sim: the simulator runs the jobs that ask for it (simulate.enabled) "
                 "beside any launcher; choose local, hostfile or slurm");
        return COORD_EINVAL;
    }
    launcher_config_t lcfg = {
        .kind = cfg->launcher,
        .hostname = c->hostname,
        .mpirun = c->mpirun,
        .hostfile = c->hostfile,
        .slurm_mpi = cfg->slurm_mpi,
        .slurm_partition = cfg->slurm_partition,
        .slurm_args = cfg->slurm_args,
    };
    if (launcher_open(&lcfg, &c->launcher, err, errlen) != 0) return COORD_EINVAL;
    c->hosts->changed = coord_publish_info;
    if (hosts_sync(c, clock_wall_s(), NULL, 0, NULL, 0) != 0) {
        snprintf(err, errlen, "out of memory");
        return COORD_EINTERNAL;
    }
    /* before the Redis lock is taken: a refusal here leaves nothing held */
    if (host_memory_of(c, cfg->host_memory_of, err, errlen) != 0) return COORD_EINVAL;
    return COORD_OK;
}

/* Which options the worker knows (its --capabilities, or an older worker's --help:
 * coordinator/wcaps.h): only a worker that knows an option gets it (an older one would
 * reject the unknown option and every job would fail with exit 2). */
static void probe_worker_options(coordinator_t *c)
{
    wcaps_probe(c->worker, &c->worker_caps);
    if (!c->worker_caps.redis)
        clog_printf("worker %s has no --redis option: jobs run without metrics, heartbeats and batch plans", c->worker);
}

/* The worker executable (--worker, else pacer-worker beside this one), the simulator, and
 * the worker's options. */
static int start_worker(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->worker && *cfg->worker) {
        if (absolute(cfg->worker, c->worker, sizeof c->worker) != 0) {
            snprintf(err, errlen, "--worker: path too long");
            return COORD_EINVAL;
        }
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            snprintf(err, errlen, "cannot find this executable (/proc/self/exe); pass --worker");
            return COORD_EINVAL;
        }
        self[n] = 0;
        snprintf(c->worker, sizeof c->worker, "%s/pacer-worker", dirname(self));
    }
    if (access(c->worker, X_OK) != 0) {
        snprintf(err, errlen, "worker %s: %s (build it with make, or pass --worker PATH)", c->worker, strerror(errno));
        return COORD_EINVAL;
    }
    if (open_simulator(c, cfg, err, errlen) != 0) return COORD_EINVAL;
    probe_worker_options(c);
    return COORD_OK;
}

/* Redis: the embedded server (none given) or --redis, the workers' URL and password, the
 * connection pool. */
static int start_redis(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    if (!cfg->redis_url || !*cfg->redis_url) {
        if (embedded_start(&c->emb, c->state_dir, c->redis_server, 10.0, err, errlen) != 0) return COORD_EINVAL;
        c->embedded_on = 1;
        snprintf(c->redis_url, sizeof c->redis_url, "%s", c->emb.url);
    } else {
        copy_str(c->redis_url, sizeof c->redis_url, cfg->redis_url, "");
    }
    if (redis_url_parse(c->redis_url, &c->url, err, errlen) != 0) return COORD_EINVAL;
    redis_url_redact(c->redis_url, c->redis_url_shown, sizeof c->redis_url_shown);
    copy_str(c->worker_redis_url, sizeof c->worker_redis_url, cfg->worker_redis_url, c->redis_url);
    if (worker_password(c, err, errlen) != 0) return COORD_EINVAL;
    if (!(c->pool = jobstore_pool_new(&c->url))) {
        snprintf(err, errlen, "out of memory");
        return COORD_EINTERNAL;
    }
    coord_lock_init(c);
    return COORD_OK;
}

/* A second daemon on the same Redis would launch every job twice: refuse early when the
 * answer is known now; otherwise the tick keeps checking. */
static int start_lock(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    tickconn_ensure(c, clock_wall_s());
    if (!c->conn->rc) return COORD_OK;
    char who[320];
    int k = coord_lock_try(c, c->conn->rc, who, sizeof who);
    if (k == 0) {
        snprintf(err, errlen, "another coordinator (%s) is running on this Redis (%s holds the lock)", who, KEY_LOCK);
        return COORD_EINVAL;
    }
    if (k == 1) {
        c->dlock->held = 1;
        clog_printf("holding %s", KEY_LOCK);
    } else {
        tickconn_broken(c, "lock");
    }
    return COORD_OK;
}

/* Memory admission (api.c): --host-memory-mb, else this machine's MemTotal when the ranks
 * run here; a hostfile's or Slurm's hosts have no known figure without it; and
 * --host-memory-mb-of's for the hosts it names. Then the uploaded models back in the
 * catalog (before adoption re-reads running jobs' specs), and the start-up line. */
static int start_catalog(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    (void)err;
    (void)errlen;
    if (c->cfg.host_memory_mb > 0) {
        c->hosts->memory = c->cfg.host_memory_mb * 1024.0 * 1024.0;
        snprintf(c->hosts->memory_from, sizeof c->hosts->memory_from, "--host-memory-mb");
    } else if (launcher_kind(c->launcher) == LAUNCHER_LOCAL && (c->hosts->memory = memest_meminfo("MemTotal")) > 0) {
        snprintf(c->hosts->memory_from, sizeof c->hosts->memory_from, "MemTotal");
    } else {
        c->hosts->memory = 0;
    }
    admission_hosts(c);
    modelstore_start(c);
    char memtxt[32], each[1024] = "";
    for (int k = 0, used = 0; k < c->hosts->nmem_of && used < (int)sizeof each; k++) {
        char m[32];
        used += snprintf(each + used, sizeof each - (size_t)used, "%s%s %s", k ? ", " : "; ", c->hosts->mem_of[k].name,
                         memest_fmt(c->hosts->mem_of[k].bytes, m, sizeof m));
    }
    clog_printf("pacer-coordinator %s: state %s, redis %s%s, worker %s, %s launcher: %d slot%s on %d host%s, "
                "memory per host %s%s",
                PACER_VERSION, c->state_dir, c->redis_url_shown, c->embedded_on ? " (embedded)" : "", c->worker,
                launcher_name(c->launcher), c->hosts->slots_total, c->hosts->slots_total == 1 ? "" : "s", c->hosts->n,
                c->hosts->n == 1 ? "" : "s",
                c->hosts->memory > 0 ? memest_fmt(c->hosts->memory, memtxt, sizeof memtxt) : "unknown (not checked)",
                each);
    return COORD_OK;
}

/* The supervision tick, last: from here on the coordinator runs. */
static int start_tick(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    /* webhooks first: a subscriptions file it cannot read stops the start */
    c->users->removed = webhooks_user_removed; /* a no-op while c->webhooks is NULL */
    if (!(c->webhooks = webhooks_start(c, c->state_dir, cfg->webhook_hosts, err, errlen))) return COORD_EINVAL;
    if (pthread_create(&c->tick_thread, NULL, tick_main, c) != 0) {
        webhooks_stop(c->webhooks);
        c->webhooks = NULL;
        snprintf(err, errlen, "cannot start the tick thread");
        return COORD_EINTERNAL;
    }
    c->tick_running = 1;
    return COORD_OK;
}

typedef int (*start_phase_fn)(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen);

static const start_phase_fn START_PHASES[] = {
    start_settings, start_dirs, start_launcher, start_worker, start_redis, start_lock, start_catalog, start_tick,
};

int coordinator_start(const coord_config_t *cfg, coordinator_t **out, char *err, size_t errlen)
{
    coordinator_t *c = alloc_coordinator();
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return COORD_EINTERNAL;
    }
    c->daemon = 1;
    c->cfg = *cfg;
    for (size_t i = 0; i < sizeof START_PHASES / sizeof START_PHASES[0]; i++) {
        int rc = START_PHASES[i](c, cfg, err, errlen);
        if (rc == COORD_OK) continue;
        /* Only a server this call started is stopped: an adopted one may be serving a
         * coordinator that is still alive. */
        if (c->embedded_on && c->emb.is_child) embedded_stop(&c->emb, 10.0);
        free_coordinator(c);
        return rc;
    }
    *out = c;
    return COORD_OK;
}

void coordinator_stop(coordinator_t *c)
{
    if (!c) return;
    if (c->daemon) {
        pthread_mutex_lock(&c->lock);
        c->stopping = 1;
        pthread_cond_signal(&c->cond);
        pthread_cond_broadcast(&c->hosts->reload_cond);
        pthread_cond_broadcast(&c->drain->cond);
        pthread_cond_broadcast(&c->preflight->bench_cond);
        pthread_mutex_unlock(&c->lock);
        if (c->tick_running) pthread_join(c->tick_thread, NULL);
        webhooks_stop(c->webhooks); /* before the connections it reads events on go */
        c->webhooks = NULL;
        /* The tick thread is gone: this thread owns c->conn->rc and the runs now. */
        double now = clock_wall_s();
        tickconn_ensure(c, now);
        if (c->cfg.stop_jobs_on_exit) {
            int n = 0;
            for (int i = 0; i < c->runs->n; i++) {
                coord_run_t *r = c->runs->list[i];
                if (r->phase == PH_ACTIVE || r->phase == PH_KILLING) {
                    launcher_stop(r->launcher, &r->h, 0);
                    n++;
                }
            }
            if (n) clog_printf("stopping %d job%s (--stop-jobs-on-exit)", n, n == 1 ? "" : "s");
            double deadline = now + c->cfg.kill_grace_s;
            for (;;) {
                int alive = 0;
                for (int i = 0; i < c->runs->n; i++) {
                    coord_run_t *r = c->runs->list[i];
                    if (r->phase != PH_ACTIVE && r->phase != PH_KILLING) continue;
                    launch_status_t st;
                    run_poll(c, r, clock_wall_s(), &st);
                    if (!st.ended) alive++;
                }
                if (!alive) break;
                if (clock_wall_s() > deadline) {
                    for (int i = 0; i < c->runs->n; i++)
                        if (c->runs->list[i]->phase == PH_ACTIVE || c->runs->list[i]->phase == PH_KILLING)
                            launcher_stop(c->runs->list[i]->launcher, &c->runs->list[i]->h, 1);
                    break;
                }
                clock_sleep_s(0.05);
            }
            for (int i = 0; i < c->runs->n; i++) {
                coord_run_t *r = c->runs->list[i];
                if (r->phase != PH_ACTIVE && r->phase != PH_KILLING) continue;
                launcher_reap(r->launcher, &r->h);
                r->phase = PH_BACKOFF;
                /* RESTARTING without a restart counted: the next coordinator resumes it. */
                run_set_state(c, r, JOB_RESTARTING, "stopped with the coordinator (--stop-jobs-on-exit)");
            }
        }
        preflight_stop(c); /* a benchmark round's processes do not outlive the daemon */
        for (int i = 0; i < c->runs->n; i++) run_stop_probes(c, c->runs->list[i]); /* nor a network probe's */
        for (int i = 0; i < c->runs->n; i++)
            if (c->runs->list[i]->dirty) run_persist(c, c->runs->list[i]);
        for (int i = 0; i < c->runs->n; i++)
            if (c->runs->list[i]->dirty)
                clog_printf("job %s: could not record its state in Redis before exiting", c->runs->list[i]->id);
        if (c->conn->rc && c->dlock->held) {
            coord_lock_release(c);
            redisReply *r = redisCommand(c->conn->rc, "HSET %s heartbeat 0 stopped %.3f", KEY_COORD, clock_wall_s());
            if (r) freeReplyObject(r);
        }
        if (c->conn->rc) {
            redisFree(c->conn->rc);
            c->conn->rc = NULL;
        }
        if (c->embedded_on) embedded_stop(&c->emb, 10.0);
        clog_printf("stopped");
    }
    free_coordinator(c);
}

const char *coordinator_listen(const coordinator_t *c) { return c->listen; }
