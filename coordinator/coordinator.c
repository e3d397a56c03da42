/* coordinator/coordinator.c - the daemon: start and stop, and the supervision tick.
 *
 * The life of a job here:
 *   submit (api.c) -> pacer:queue -> schedule(): claimed (QUEUED -> RUNNING, one Lua
 *   script) when its world fits the free slots -> launch(): spec rewritten into
 *   STATE_DIR/jobs/{id}/spec.json, the attempt started by the launcher (launcher.h:
 *   mpirun under `sh -c '...; echo $? > exit_code'` in a new session, or a Slurm batch
 *   job) -> step(): every tick, has it ended (launcher_poll), cancel requests,
 *   heartbeats, batch plans, log size -> on exit, supervise_decide() says SUCCEEDED,
 *   FAILED, CANCELLED or RESTARTING (relaunched with --resume after a backoff).
 *
 * The tick runs on one thread with its own Redis context. Processes are supervised
 * whether or not Redis is reachable; what Redis should show is kept in the run and
 * written when it can be (run->dirty), and a Redis read that fails counts as "unknown",
 * never as a stale heartbeat.
 */
#include "coord_internal.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clog.h"
#include "dynbatch.h"
#include "hostname.h"
#include "launch.h"
#include "launcher.h"
#include "supervise.h"
#include "version.h"

#define RC_BACKOFF_MIN_S 0.25
#define RC_BACKOFF_MAX_S 2.0
#define RC_TIMEOUT_S 1.0
#define LOCK_TTL_MS 15000
#define SCHEDULE_PER_TICK 16
#define PLAN_PERIOD_S 1.0
#define JPATH (PATH_MAX + 128)   /* STATE_DIR/jobs/{id}/{leaf} always fits */

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
    cfg->tick_s = 0.2;
    cfg->default_checkpoint_steps = 50;
}

/* ---- paths ------------------------------------------------------------------------------ */

/* STATE_DIR/jobs/{id}[/leaf]. Returns 0, or -1 when it did not fit (the state dir is
 * checked at start to leave room, so callers may ignore it). */
static int job_path(const coordinator_t *c, const char *id, const char *leaf, char *out, size_t len)
{
    int n = leaf ? snprintf(out, len, "%s/jobs/%s/%s", c->state_dir, id, leaf)
                 : snprintf(out, len, "%s/jobs/%s", c->state_dir, id);
    return n >= 0 && (size_t)n < len ? 0 : -1;
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

/* ---- Redis connection of the tick --------------------------------------------------------- */

static void rc_broken(coordinator_t *c, const char *what)
{
    if (!c->rc) return;
    clog_printf("redis: connection lost (%s: %s); processes stay supervised, retrying", what,
         c->rc->errstr[0] ? c->rc->errstr : "error reply");
    redisFree(c->rc);
    c->rc = NULL;
    c->rc_backoff = RC_BACKOFF_MIN_S;
    c->rc_next_try = clog_now() + c->rc_backoff;
    c->rc_down_logged = 1;
}

/* Maps a JS code from a call on c->rc: a broken connection is dropped. */
static int rc_check(coordinator_t *c, int js, const char *what)
{
    if (js == JS_EREDIS) rc_broken(c, what);
    return js;
}

static void ensure_rc(coordinator_t *c, double now)
{
    if (c->rc || now < c->rc_next_try) return;
    char err[256];
    c->rc = redis_url_connect(&c->url, RC_TIMEOUT_S, err, sizeof err);
    if (!c->rc) {
        if (!c->rc_down_logged) clog_printf("redis: cannot connect to %s (%s); retrying", c->redis_url, err);
        c->rc_down_logged = 1;
        c->rc_backoff = c->rc_backoff < RC_BACKOFF_MIN_S ? RC_BACKOFF_MIN_S : c->rc_backoff * 2;
        if (c->rc_backoff > RC_BACKOFF_MAX_S) c->rc_backoff = RC_BACKOFF_MAX_S;
        c->rc_next_try = now + c->rc_backoff;
        return;
    }
    if (c->rc_down_logged) clog_printf("redis: connected to %s", c->redis_url);
    c->rc_down_logged = 0;
    c->rc_backoff = 0;
    c->redis_up_since = now;
}

/* ---- the coordinator lock -------------------------------------------------------------------- */

/* KEYS: lock. ARGV: mine, ttl ms, takeover-from ("" = none).
 * Takes or refreshes the lock when it is free, ours, or held by takeover-from. */
static const char LOCK_LUA[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v == false or v == ARGV[1] or (ARGV[3] ~= '' and v == ARGV[3]) then\n"
    "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "  return {1, ARGV[1]}\n"
    "end\n"
    "return {0, v}\n";

static const char UNLOCK_LUA[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
    "return 0\n";

/* Returns 1 held, 0 held by another live coordinator (holder in who), JS_EREDIS. */
static int lock_try(coordinator_t *c, redisContext *rc, char *who, size_t wholen)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", LOCK_TTL_MS);
    const char *takeover = "";
    char holder[320] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = redisCommand(rc, "EVAL %s 1 %s %s %s %s", LOCK_LUA, KEY_LOCK, c->lock_value, ttl, takeover);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r) freeReplyObject(r);
            return JS_EREDIS;
        }
        int got = reply_int(r->element[0], 0) == 1;
        snprintf(holder, sizeof holder, "%s", reply_str(r->element[1]) ? reply_str(r->element[1]) : "");
        freeReplyObject(r);
        if (got) return 1;
        /* Held: by a coordinator of this host that is gone (killed -9)? Then take over. */
        char host[256];
        int pid = 0;
        unsigned long long start = 0;
        if (sscanf(holder, "%255s %d %llu", host, &pid, &start) == 3 && strcmp(host, c->hostname) == 0 &&
            !proc_alive(pid, start) && attempt == 0) {
            takeover = holder;
            continue;
        }
        break;
    }
    snprintf(who, wholen, "%s", holder);
    return 0;
}

/* ---- runs ------------------------------------------------------------------------------------- */

static void run_free(coord_run_t *r)
{
    if (!r) return;
    free(r->spec);
    free(r);
}

static coord_run_t *run_new(coordinator_t *c, const char *id)
{
    if (c->nruns == c->capruns) {
        int cap = c->capruns ? 2 * c->capruns : 16;
        coord_run_t **n = realloc(c->runs, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        c->runs = n;
        c->capruns = cap;
    }
    coord_run_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->spec = malloc(sizeof *r->spec);
    if (!r->spec) {
        free(r);
        return NULL;
    }
    snprintf(r->id, sizeof r->id, "%s", id);
    r->exit_code = -1;
    r->saved_state = r->state = JOB_RUNNING;
    c->runs[c->nruns++] = r;
    return r;
}

static int slots_used(const coordinator_t *c)
{
    int used = 0;
    for (int i = 0; i < c->nruns; i++)
        if (c->runs[i]->phase != PH_DONE) used += c->runs[i]->world;
    return used;
}

/* Writes what Redis should show about r. On success, a finished job's profiles are
 * folded and its bulky keys get their TTL. */
static void persist(coordinator_t *c, coord_run_t *r)
{
    if (!c->rc) {
        r->dirty = 1;
        return;
    }
    char restarts[16], attempts[16], pid[16], pstart[32], ec[16], world[16], started[32], finished[32];
    char log[JPATH], ckdir[JPATH], summary[JPATH];
    snprintf(restarts, sizeof restarts, "%d", r->restarts);
    snprintf(attempts, sizeof attempts, "%d", r->attempts);
    snprintf(pid, sizeof pid, "%d", (int)r->h.pid);
    snprintf(pstart, sizeof pstart, "%llu", r->h.pstart);
    if (r->exit_code >= 0) snprintf(ec, sizeof ec, "%d", r->exit_code);
    else ec[0] = 0;
    snprintf(world, sizeof world, "%d", r->world);
    snprintf(started, sizeof started, "%.3f", r->started);
    if (r->finished > 0) snprintf(finished, sizeof finished, "%.3f", r->finished);
    else finished[0] = 0;
    job_path(c, r->id, "log", log, sizeof log);
    job_path(c, r->id, "checkpoints", ckdir, sizeof ckdir);
    job_path(c, r->id, "summary.json", summary, sizeof summary);
    const char *kv[] = {
        "restarts", restarts, "attempts", attempts, "pid", pid, "pstart", pstart, "exit_code", ec,
        "world", world, "started", started, "finished", finished, "log", log, "checkpoint_dir", ckdir,
        "summary_path", summary, "reason", r->reason,
    };
    int changed = r->state != r->saved_state;
    /* With a state change jobstore_update writes state + reason itself (and the event). */
    int nkv = (int)(sizeof kv / sizeof kv[0]) / 2 - (changed ? 1 : 0);
    int rc = rc_check(c, jobstore_update(c->rc, r->id, changed ? job_state_name(r->state) : NULL, r->reason, kv, nkv),
                      "job update");
    if (rc != JS_OK) {
        r->dirty = 1;
        return;
    }
    r->dirty = 0;
    r->saved_state = r->state;
    if (r->phase == PH_DONE && c->rc) {
        if (c->worker_has_redis) {
            int n = dynbatch_fold_profiles(c->rc, r->id, r->spec, r->world);
            if (n == JS_EREDIS) rc_broken(c, "profiles");
        }
        if (c->rc) rc_check(c, jobstore_expire_job_keys(c->rc, r->id, r->world), "expire");
    }
}

static void set_state(coordinator_t *c, coord_run_t *r, job_state_t s, const char *reason)
{
    r->state = s;
    if (reason != r->reason) snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
    r->dirty = 1;
    persist(c, r);
}

/* The job's processes have ended (or must be treated so): decide what comes next. */
static void finish_attempt(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, double now)
{
    char log[JPATH], line[512] = "";
    job_path(c, r->id, "log", log, sizeof log);
    log_last_line(log, line, sizeof line);
    /* [launcher] Stragglers must not outlive the attempt; a child is reaped. */
    launcher_reap(c->launcher, &r->h);
    sv_in_t in = {
        .outcome = oc, .code = oc == SV_STALE ? r->stale_rank : code, .stale_s = r->stale_s,
        .restarts = r->restarts, .max_restarts = c->cfg.max_restarts,
        .backoff_base_s = c->cfg.restart_backoff_s, .last_line = line,
    };
    sv_out_t out;
    supervise_decide(&in, &out);
    r->exit_code = oc == SV_EXITED ? code : -1;
    r->restarts = out.restarts;
    r->kill_reason = KILL_NONE;
    if (out.state == JOB_RESTARTING) {
        r->phase = PH_BACKOFF;
        r->next_launch = now + out.delay_s;
    } else {
        r->phase = PH_DONE;
        r->finished = now;
    }
    clog_printf("job %s: %s%s%s", r->id, job_state_name(out.state), out.reason[0] ? ": " : "", out.reason);
    set_state(c, r, out.state, out.reason);
}

static void launch(coordinator_t *c, coord_run_t *r, double now)
{
    char dir[JPATH], ckdir[JPATH], specp[JPATH], summary[JPATH];
    char log[JPATH], ecp[JPATH], pidp[JPATH];
    char err[512] = "";
    job_spec_t *sp = NULL;
    char *text = NULL;
    job_path(c, r->id, NULL, dir, sizeof dir);
    job_path(c, r->id, "checkpoints", ckdir, sizeof ckdir);
    job_path(c, r->id, "spec.json", specp, sizeof specp);
    job_path(c, r->id, "summary.json", summary, sizeof summary);
    job_path(c, r->id, "log", log, sizeof log);
    job_path(c, r->id, "exit_code", ecp, sizeof ecp);
    job_path(c, r->id, "pid", pidp, sizeof pidp);

    if (mkdir_p(ckdir, 0755) != 0) {
        snprintf(err, sizeof err, "%.300s: %s", ckdir, strerror(errno));
        goto fail;
    }
    /* The worker checkpoints where the coordinator can find it, often enough to resume. */
    sp = malloc(sizeof *sp);
    if (!sp) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    *sp = *r->spec;
    if (strlen(ckdir) >= sizeof sp->checkpoint.dir) {
        snprintf(err, sizeof err, "checkpoint.dir: %.300s is longer than %zu bytes", ckdir,
                 sizeof sp->checkpoint.dir - 1);
        goto fail;
    }
    memcpy(sp->checkpoint.dir, ckdir, strlen(ckdir) + 1);
    if (sp->checkpoint.every_steps <= 0) sp->checkpoint.every_steps = c->cfg.default_checkpoint_steps;
    text = spec_to_json(sp);
    if (!text || write_file_atomic(specp, text, strlen(text)) != 0) {
        snprintf(err, sizeof err, "%.300s: cannot write the spec: %s", specp, text ? strerror(errno) : "out of memory");
        goto fail;
    }
    /* A stale exit status from the previous attempt must not be read as this one's. */
    unlink(ecp);

    if (r->first_launch && r->spec->algorithm.dynamic_batch && c->worker_has_redis && c->rc) {
        /* [launcher] Only where placement is known before the start (not under Slurm). */
        const char **hosts = calloc((size_t)r->world, sizeof *hosts);
        if (hosts && launcher_rank_hosts(c->launcher, r->world, hosts) == 0) {
            int k = dynbatch_initial(c->rc, r->id, r->spec, hosts);
            if (k == JS_EREDIS) rc_broken(c, "initial plan");
            else if (k == 1) clog_printf("job %s: initial batch plan from stored profiles", r->id);
        }
        free(hosts);
    }
    r->first_launch = 0;

    /* [launcher] The worker's command; the launcher wraps it (mpirun, sbatch). */
    const char *argv[32];
    int a = 0;
    argv[a++] = c->worker;
    argv[a++] = "--spec";
    argv[a++] = specp;
    argv[a++] = "--summary";
    argv[a++] = summary;
    argv[a++] = "--resume";
    if (c->worker_has_redis) {
        argv[a++] = "--redis";
        argv[a++] = c->worker_redis_url;
        argv[a++] = "--job";
        argv[a++] = r->id;
    }
    argv[a] = NULL;
    launch_req_t req = {
        .id = r->id, .attempt = r->attempts + 1, .world = r->world, .argv = argv, .dir = dir,
        .log_path = log, .exit_code_path = ecp, .handle_path = pidp,
    };
    if (launcher_start(c->launcher, &req, &r->h, err, sizeof err) != 0) goto fail;
    char what[64];
    r->attempts++;
    r->launched_at = now;
    r->phase = PH_ACTIVE;
    r->kill_reason = KILL_NONE;
    r->sigkilled = 0;
    if (r->started <= 0) r->started = now;
    clog_printf("job %s: attempt %d started (%s, %d rank%s)", r->id, r->attempts,
                launcher_describe(&r->h, what, sizeof what), r->world, r->world == 1 ? "" : "s");
    free(sp);
    free(text);
    set_state(c, r, JOB_RUNNING, r->state == JOB_RESTARTING ? r->reason : "");
    return;
fail:
    free(sp);
    free(text);
    FILE *lf = fopen(log, "a");
    if (lf) {
        fprintf(lf, "pacer-coordinator: cannot start the job: %s\n", err);
        fclose(lf);
    }
    clog_printf("job %s: cannot start: %s", r->id, err);
    memset(&r->h, 0, sizeof r->h);
    r->attempts++;
    finish_attempt(c, r, SV_LOST, 0, now);
}

/* [launcher] Has the attempt ended? While the resource manager still queues it, no
 * heartbeat is due: the grace period starts when it runs. */
static int poll_ended(coordinator_t *c, coord_run_t *r, double now, sv_outcome_t *oc, int *code)
{
    char ecp[JPATH], log[JPATH];
    job_path(c, r->id, "exit_code", ecp, sizeof ecp);
    job_path(c, r->id, "log", log, sizeof log);
    launch_status_t st;
    launcher_poll(c->launcher, &r->h, ecp, log, now, &st);
    if (st.pending) r->launched_at = now;
    if (!st.ended) return 0;
    if (st.lost_hosts[0]) clog_printf("job %s: lost host%s %s", r->id, strchr(st.lost_hosts, ' ') ? "s" : "",
                                      st.lost_hosts);
    *oc = st.outcome;
    *code = st.code;
    return 1;
}

static void start_kill(coordinator_t *c, coord_run_t *r, kill_reason_t why, double now)
{
    r->kill_reason = why;
    r->phase = PH_KILLING;
    r->kill_deadline = now + c->cfg.kill_grace_s;
    r->sigkilled = 0;
    launcher_stop(c->launcher, &r->h, 0);   /* [launcher] */
    char what[64];
    launcher_describe(&r->h, what, sizeof what);
    if (why == KILL_CANCEL)
        clog_printf("job %s: cancelling (stopping %s)", r->id, what);
    else
        clog_printf("job %s: no heartbeat from rank %d for %.0f s; stopping %s", r->id, r->stale_rank, r->stale_s,
                    what);
}

/* Reads cancel_requested and (when check_beats) the ranks' heartbeats. A failed read
 * changes nothing: unknown is not stale. */
static void read_flags(coordinator_t *c, coord_run_t *r, int check_beats, double now)
{
    if (!c->rc) return;
    char key[160];
    job_key(key, sizeof key, r->id, NULL);
    redisAppendCommand(c->rc, "HGET %s cancel_requested", key);
    int nb = check_beats ? r->world : 0;
    for (int k = 0; k < nb; k++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "node:%d", k);
        job_key(key, sizeof key, r->id, suffix);
        redisAppendCommand(c->rc, "HGET %s heartbeat", key);
    }
    int stale = -1;
    double stale_age = 0;
    double baseline = r->launched_at > c->redis_up_since ? r->launched_at : c->redis_up_since;
    for (int k = 0; k < nb + 1; k++) {
        redisReply *rep = NULL;
        if (redisGetReply(c->rc, (void **)&rep) != REDIS_OK || !rep) {
            rc_broken(c, "heartbeats");
            return;
        }
        if (k == 0) {
            if (reply_str(rep) && reply_str(rep)[0]) r->cancel_requested = 1;
        } else {
            double hb = reply_double(rep, 0);
            if (hb > 0) r->redis_reported = 1;
            double t = hb > baseline ? hb : baseline;
            if (now - t > c->cfg.heartbeat_timeout_s && stale < 0) {
                stale = k - 1;
                stale_age = now - t;
            }
        }
        freeReplyObject(rep);
    }
    if (stale >= 0) {
        r->stale_rank = stale;
        r->stale_s = stale_age;
    } else {
        r->stale_rank = -1;
    }
}

static void step(coordinator_t *c, coord_run_t *r, double now)
{
    sv_outcome_t oc;
    int code = 0;
    switch (r->phase) {
    case PH_ACTIVE:
        if (poll_ended(c, r, now, &oc, &code)) {
            finish_attempt(c, r, oc, code, now);
            break;
        }
        r->stale_rank = -1;
        read_flags(c, r, c->worker_has_redis, now);
        if (r->cancel_requested) {
            start_kill(c, r, KILL_CANCEL, now);
        } else if (r->stale_rank >= 0) {
            start_kill(c, r, KILL_STALE, now);
        } else if (r->spec->algorithm.dynamic_batch && c->worker_has_redis && c->rc &&
                   now - r->last_plan >= PLAN_PERIOD_S) {
            r->last_plan = now;
            int k = dynbatch_replan(c->rc, r->id, r->spec);
            if (k == JS_EREDIS) rc_broken(c, "batch plan");
        }
        if (now - r->last_log_check >= 1.0) {
            char log[JPATH];
            r->last_log_check = now;
            job_path(c, r->id, "log", log, sizeof log);
            if (log_bound(log, LAUNCH_LOG_MAX) == 1) clog_printf("job %s: log rotated into log.1", r->id);
        }
        break;
    case PH_KILLING:
        if (poll_ended(c, r, now, &oc, &code)) {
            finish_attempt(c, r, r->kill_reason == KILL_CANCEL ? SV_CANCELLED : SV_STALE, code, now);
        } else if (now >= r->kill_deadline && !r->sigkilled) {
            clog_printf("job %s: still running %.0f s after SIGTERM; SIGKILL", r->id, c->cfg.kill_grace_s);
            launcher_stop(c->launcher, &r->h, 1);   /* [launcher] */
            r->sigkilled = 1;
        }
        break;
    case PH_BACKOFF:
        read_flags(c, r, 0, now);
        if (r->cancel_requested) {
            finish_attempt(c, r, SV_CANCELLED, 0, now);
        } else if (now >= r->next_launch) {
            launch(c, r, now);
        }
        break;
    case PH_DONE:
        break;
    }
    if (r->dirty) persist(c, r);
}

/* Claims queued jobs while their worlds fit: FIFO, no backfilling (a big job at the head
 * waits for slots rather than be overtaken forever). A job larger than the whole cluster
 * runs alone, oversubscribed. */
static void schedule(coordinator_t *c, double now)
{
    int used = slots_used(c);
    for (int k = 0; k < SCHEDULE_PER_TICK && c->rc; k++) {
        char id[JOB_ID_MAX];
        if (rc_check(c, jobstore_queue_head(c->rc, id, sizeof id), "queue") != JS_OK || !id[0]) return;
        json_t *h = NULL;
        int rc = rc_check(c, jobstore_get(c->rc, id, &h), "job read");
        if (rc == JS_EREDIS) return;
        job_spec_t *spec = malloc(sizeof *spec);
        char err[512] = "";
        int bad = 1;
        if (!spec) {
            json_decref(h);
            return;
        }
        if (rc == JS_OK) {
            const char *text = json_string_value(json_object_get(h, "spec"));
            bad = !text || spec_parse(text, spec, err, sizeof err) != 0;
            if (!text) snprintf(err, sizeof err, "spec: missing from the job record");
        }
        json_decref(h);
        int world = bad ? 0 : (spec_is_async(spec) ? spec->workers + 1 : spec->workers);
        if (!bad && used > 0 && used + world > c->slots_total) {
            free(spec);
            return;
        }
        int claimed = rc_check(c, jobstore_claim(c->rc, id, now), "claim");
        if (claimed != 1) {
            free(spec);
            if (claimed < 0) return;
            continue;   /* cancelled or gone meanwhile: it left the queue, look again */
        }
        coord_run_t *r = run_new(c, id);
        if (!r) {
            free(spec);
            clog_printf("job %s: out of memory", id);
            return;
        }
        *r->spec = *spec;
        free(spec);
        r->world = world;
        r->started = now;
        r->first_launch = 1;
        r->stale_rank = -1;
        if (bad) {
            r->phase = PH_DONE;
            r->finished = now;
            clog_printf("job %s: FAILED: %s", id, err);
            set_state(c, r, JOB_FAILED, err);
            continue;
        }
        clog_printf("job %s: claimed (%s, %d rank%s, slots %d/%d)", id, r->spec->name, world, world == 1 ? "" : "s",
             used + world, c->slots_total);
        launch(c, r, now);
        used += world;
    }
}

/* A field of a job hash read with jobstore_get, "" when absent. */
static const char *hstr(json_t *h, const char *key)
{
    const char *v = json_string_value(json_object_get(h, key));
    return v ? v : "";
}

/* After a (re)start: every job Redis says is RUNNING or RESTARTING becomes a run again:
 * adopted when its process lives, finished when it left an exit status, resumed when
 * it died without one. */
static void adopt(coordinator_t *c, double now)
{
    redisReply *m = redisCommand(c->rc, "SMEMBERS %s", KEY_ACTIVE);
    if (!m || m->type != REDIS_REPLY_ARRAY) {
        if (m) freeReplyObject(m);
        rc_broken(c, "adopt");
        return;
    }
    for (size_t i = 0; i < m->elements && c->rc; i++) {   /* a broken connection ends the pass */
        const char *id = reply_str(m->element[i]);
        if (!id || !job_id_valid(id)) continue;
        int known = 0;
        for (int k = 0; k < c->nruns; k++) known |= strcmp(c->runs[k]->id, id) == 0;
        if (known) continue;
        json_t *h = NULL;
        int rc = rc_check(c, jobstore_get(c->rc, id, &h), "adopt");
        if (rc == JS_EREDIS) break;
        job_state_t st = JOB_QUEUED;
        const char *sts = rc == JS_OK ? json_string_value(json_object_get(h, "state")) : NULL;
        if (!sts || job_state_parse(sts, &st) != 0 || (st != JOB_RUNNING && st != JOB_RESTARTING)) {
            redisReply *x = redisCommand(c->rc, "SREM %s %s", KEY_ACTIVE, id);
            if (x) freeReplyObject(x);
            json_decref(h);
            continue;
        }
        coord_run_t *r = run_new(c, id);
        if (!r) {
            json_decref(h);
            break;
        }
        char err[512] = "";
        const char *text = json_string_value(json_object_get(h, "spec"));
        int bad = !text || spec_parse(text, r->spec, err, sizeof err) != 0;
        r->world = bad ? 0 : spec_is_async(r->spec) ? r->spec->workers + 1 : r->spec->workers;
        r->restarts = atoi(hstr(h, "restarts"));
        r->attempts = atoi(hstr(h, "attempts"));
        r->started = atof(hstr(h, "started"));
        snprintf(r->reason, sizeof r->reason, "%s", hstr(h, "reason"));
        r->state = r->saved_state = st;
        r->stale_rank = -1;
        r->launched_at = now;
        json_decref(h);
        if (bad) {
            r->phase = PH_DONE;
            r->finished = now;
            set_state(c, r, JOB_FAILED, err[0] ? err : "spec: missing from the job record");
            continue;
        }
        if (st == JOB_RESTARTING) {
            r->phase = PH_BACKOFF;
            r->next_launch = now;
            clog_printf("job %s: was RESTARTING; launching it again", id);
            continue;
        }
        /* [launcher] The handle file is newer than Redis (written right after the start). */
        char pidp[JPATH], what[256];
        job_path(c, id, "pid", pidp, sizeof pidp);
        r->phase = PH_ACTIVE;
        if (launcher_adopt(c->launcher, pidp, &r->h, what, sizeof what))
            clog_printf("job %s: adopted (%s); following it", id, launcher_describe(&r->h, what, sizeof what));
        else
            clog_printf("job %s: %s; finding out how it ended", id, what);
    }
    freeReplyObject(m);
    if (c->rc) c->adopted = 1;
}

static void publish_info(coordinator_t *c, double now)
{
    json_t *hosts = json_array();
    const launch_host_t *lh;
    int nh = launcher_hosts(c->launcher, &lh);   /* [launcher] */
    for (int i = 0; hosts && i < nh; i++)
        json_array_append_new(hosts, json_pack("{s:s, s:i}", "name", lh[i].name, "slots", lh[i].slots));
    char *htext = hosts ? json_dumps(hosts, JSON_COMPACT) : NULL;
    json_decref(hosts);
    int running = 0;
    for (int i = 0; i < c->nruns; i++) running += c->runs[i]->phase != PH_DONE;
    char pid[16], started[32], hb[32], slots[16], used[16], nrun[16];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(started, sizeof started, "%.3f", c->started_at);
    snprintf(hb, sizeof hb, "%.3f", now);
    snprintf(slots, sizeof slots, "%d", c->slots_total);
    snprintf(used, sizeof used, "%d", slots_used(c));
    snprintf(nrun, sizeof nrun, "%d", running);
    const char *argv[] = {
        "HSET", KEY_COORD, "pid", pid, "host", c->hostname, "started", started, "heartbeat", hb,
        "version", PACER_VERSION, "state_dir", c->state_dir, "redis", c->redis_url, "worker", c->worker,
        "worker_redis", c->worker_has_redis ? "1" : "0", "hosts", htext ? htext : "[]", "slots", slots,
        "slots_used", used, "running", nrun, "listen", c->listen,
    };
    size_t len[sizeof argv / sizeof argv[0]];
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++) len[i] = strlen(argv[i]);
    redisReply *r = redisCommandArgv(c->rc, (int)(sizeof argv / sizeof argv[0]), argv, len);
    free(htext);
    if (!r) rc_broken(c, "coordinator info");
    else freeReplyObject(r);
}

static void tick(coordinator_t *c)
{
    double now = clog_now();
    if (c->embedded_on) embedded_check(&c->emb);
    ensure_rc(c, now);
    int second = now - c->last_second >= 1.0;
    if (second) c->last_second = now;
    if (c->rc && (!c->have_lock || second)) {
        char who[320];
        int k = lock_try(c, c->rc, who, sizeof who);
        if (k == JS_EREDIS) {
            rc_broken(c, "lock");
        } else if (k == 1) {
            if (!c->have_lock) clog_printf("holding %s", KEY_LOCK);
            c->have_lock = 1;
            c->lock_conflict_logged = 0;
        } else {
            if (c->have_lock || !c->lock_conflict_logged)
                clog_printf("another coordinator (%s) holds %s; not scheduling", who, KEY_LOCK);
            c->have_lock = 0;
            c->lock_conflict_logged = 1;
        }
    }
    if (c->rc && c->have_lock && !c->adopted) adopt(c, now);
    for (int i = 0; i < c->nruns; i++) step(c, c->runs[i], now);
    for (int i = 0; i < c->nruns;) {
        coord_run_t *r = c->runs[i];
        if (r->phase == PH_DONE && !r->dirty) {
            run_free(r);
            c->runs[i] = c->runs[--c->nruns];
        } else {
            i++;
        }
    }
    if (c->rc && c->have_lock && c->adopted) schedule(c, now);
    if (c->rc && second) publish_info(c, now);
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
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)(c->cfg.tick_s * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
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

static coordinator_t *alloc_coordinator(void)
{
    coordinator_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    return c;
}

static void free_coordinator(coordinator_t *c)
{
    for (int i = 0; i < c->nruns; i++) run_free(c->runs[i]);
    free(c->runs);
    launcher_close(c->launcher);
    if (c->rc) redisFree(c->rc);
    jobstore_pool_free(c->pool);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
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
    else if (strlen(c->state_dir) + 19 > sizeof c->redis_url) c->redis_url[0] = 0;   /* parse says why */
    else {
        memcpy(c->redis_url, "unix://", 7);
        memcpy(c->redis_url + 7, c->state_dir, strlen(c->state_dir));
        memcpy(c->redis_url + 7 + strlen(c->state_dir), "/redis.sock", 12);
    }
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

int coordinator_start(const coord_config_t *cfg, coordinator_t **out, char *err, size_t errlen)
{
    coordinator_t *c = alloc_coordinator();
    int rc = COORD_EINVAL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return COORD_EINTERNAL;
    }
    c->daemon = 1;
    c->cfg = *cfg;
    c->started_at = clog_now();
    copy_str(c->listen, sizeof c->listen, cfg->listen, "127.0.0.1:8080");
    copy_str(c->mpirun, sizeof c->mpirun, cfg->mpirun, "mpirun");
    copy_str(c->redis_server, sizeof c->redis_server, cfg->redis_server, "redis-server");
    if (c->cfg.max_restarts < 0) c->cfg.max_restarts = 0;
    if (c->cfg.tick_s <= 0) c->cfg.tick_s = 0.2;
    if (c->cfg.heartbeat_timeout_s <= 0) c->cfg.heartbeat_timeout_s = 60;
    if (c->cfg.kill_grace_s < 0) c->cfg.kill_grace_s = 0;
    if (c->cfg.default_checkpoint_steps <= 0) c->cfg.default_checkpoint_steps = 50;
    if (absolute(cfg->state_dir && *cfg->state_dir ? cfg->state_dir : "./var", c->state_dir, sizeof c->state_dir)) {
        snprintf(err, errlen, "state dir: path too long");
        goto fail;
    }
    /* Job paths (STATE_DIR/jobs/{id}/checkpoints) must fit a spec's checkpoint.dir. */
    if (strlen(c->state_dir) > SPEC_PATH_MAX - 64) {
        snprintf(err, errlen, "state dir %.200s...: longer than %d bytes", c->state_dir, SPEC_PATH_MAX - 64);
        goto fail;
    }
    char jobs[PATH_MAX + 8];
    snprintf(jobs, sizeof jobs, "%s/jobs", c->state_dir);
    if (mkdir_p(jobs, 0755) != 0) {
        snprintf(err, errlen, "state dir %s: %s", jobs, strerror(errno));
        goto fail;
    }
    host_name(c->hostname, sizeof c->hostname);

    /* [launcher] local, hostfile or slurm: where ranks can run, and how they start. */
    if (cfg->hostfile && *cfg->hostfile && absolute(cfg->hostfile, c->hostfile, sizeof c->hostfile) != 0) {
        snprintf(err, errlen, "--hostfile: path too long");
        goto fail;
    }
    launcher_config_t lcfg = {
        .kind = cfg->launcher, .hostname = c->hostname, .mpirun = c->mpirun, .hostfile = c->hostfile,
        .slurm_mpi = cfg->slurm_mpi, .slurm_partition = cfg->slurm_partition, .slurm_args = cfg->slurm_args,
    };
    if (launcher_open(&lcfg, &c->launcher, err, errlen) != 0) goto fail;
    {
        const launch_host_t *lh;
        c->nhosts = launcher_hosts(c->launcher, &lh);
        c->slots_total = launcher_slots(c->launcher);
    }

    if (cfg->worker && *cfg->worker) {
        if (absolute(cfg->worker, c->worker, sizeof c->worker) != 0) {
            snprintf(err, errlen, "--worker: path too long");
            goto fail;
        }
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            snprintf(err, errlen, "cannot find this executable (/proc/self/exe); pass --worker");
            goto fail;
        }
        self[n] = 0;
        snprintf(c->worker, sizeof c->worker, "%s/pacer-worker", dirname(self));
    }
    if (access(c->worker, X_OK) != 0) {
        snprintf(err, errlen, "worker %s: %s (build it with make, or pass --worker PATH)", c->worker, strerror(errno));
        goto fail;
    }
    {
        /* Only a worker that knows --redis/--job gets them (an older one would reject the
         * unknown option and every job would fail with exit 2). */
        enum { HELP_MAX = 1 << 16 };
        char *help = malloc(HELP_MAX);
        const char *argv[] = { c->worker, "--help", NULL };
        if (help) launch_capture(argv, help, HELP_MAX, 10.0);
        c->worker_has_redis = help && strstr(help, "--redis") != NULL;
        free(help);
        if (!c->worker_has_redis)
            clog_printf("worker %s has no --redis option: jobs run without metrics, heartbeats and batch plans",
                 c->worker);
    }

    if (!cfg->redis_url || !*cfg->redis_url) {
        if (embedded_start(&c->emb, c->state_dir, c->redis_server, 10.0, err, errlen) != 0) goto fail;
        c->embedded_on = 1;
        snprintf(c->redis_url, sizeof c->redis_url, "%s", c->emb.url);
    } else {
        copy_str(c->redis_url, sizeof c->redis_url, cfg->redis_url, "");
    }
    if (redis_url_parse(c->redis_url, &c->url, err, errlen) != 0) goto fail;
    copy_str(c->worker_redis_url, sizeof c->worker_redis_url, cfg->worker_redis_url, c->redis_url);
    if (!(c->pool = jobstore_pool_new(&c->url))) {
        snprintf(err, errlen, "out of memory");
        rc = COORD_EINTERNAL;
        goto fail;
    }
    unsigned long long me = 0;
    proc_stat(getpid(), &me, NULL);
    /* host, pid and start time identify the holder (a dead one on this host can be taken
     * over at once); the nonce tells two coordinators of one process apart. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(c->lock_value, sizeof c->lock_value, "%s %d %llu %lx", c->hostname, (int)getpid(), me,
             (unsigned long)ts.tv_nsec ^ (unsigned long)(uintptr_t)c);

    /* A second daemon on the same Redis would launch every job twice: refuse early when
     * the answer is known now; otherwise the tick keeps checking. */
    ensure_rc(c, clog_now());
    if (c->rc) {
        char who[320];
        int k = lock_try(c, c->rc, who, sizeof who);
        if (k == 0) {
            snprintf(err, errlen, "another coordinator (%s) is running on this Redis (%s holds the lock)", who,
                     KEY_LOCK);
            goto fail;
        }
        if (k == 1) {
            c->have_lock = 1;
            clog_printf("holding %s", KEY_LOCK);
        } else {
            rc_broken(c, "lock");
        }
    }
    clog_printf("pacer-coordinator %s: state %s, redis %s%s, worker %s, %s launcher: %d slot%s on %d host%s",
         PACER_VERSION, c->state_dir, c->redis_url, c->embedded_on ? " (embedded)" : "", c->worker,
         launcher_name(c->launcher), c->slots_total, c->slots_total == 1 ? "" : "s", c->nhosts,
         c->nhosts == 1 ? "" : "s");
    if (pthread_create(&c->tick_thread, NULL, tick_main, c) != 0) {
        snprintf(err, errlen, "cannot start the tick thread");
        rc = COORD_EINTERNAL;
        goto fail;
    }
    c->tick_running = 1;
    *out = c;
    return COORD_OK;
fail:
    /* Only a server this call started is stopped: an adopted one may be serving a
     * coordinator that is still alive. */
    if (c->embedded_on && c->emb.is_child) embedded_stop(&c->emb, 10.0);
    free_coordinator(c);
    return rc;
}

void coordinator_stop(coordinator_t *c)
{
    if (!c) return;
    if (c->daemon) {
        pthread_mutex_lock(&c->lock);
        c->stopping = 1;
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
        if (c->tick_running) pthread_join(c->tick_thread, NULL);
        /* The tick thread is gone: this thread owns c->rc and the runs now. */
        double now = clog_now();
        ensure_rc(c, now);
        if (c->cfg.stop_jobs_on_exit) {
            int n = 0;
            for (int i = 0; i < c->nruns; i++) {
                coord_run_t *r = c->runs[i];
                if (r->phase == PH_ACTIVE || r->phase == PH_KILLING) {
                    launcher_stop(c->launcher, &r->h, 0);   /* [launcher] */
                    n++;
                }
            }
            if (n) clog_printf("stopping %d job%s (--stop-jobs-on-exit)", n, n == 1 ? "" : "s");
            double deadline = now + c->cfg.kill_grace_s;
            for (;;) {
                int alive = 0;
                for (int i = 0; i < c->nruns; i++) {
                    coord_run_t *r = c->runs[i];
                    if (r->phase != PH_ACTIVE && r->phase != PH_KILLING) continue;
                    char ecp[JPATH], log[JPATH];
                    job_path(c, r->id, "exit_code", ecp, sizeof ecp);
                    job_path(c, r->id, "log", log, sizeof log);
                    launch_status_t st;
                    launcher_poll(c->launcher, &r->h, ecp, log, clog_now(), &st);   /* [launcher] */
                    if (!st.ended) alive++;
                }
                if (!alive) break;
                if (clog_now() > deadline) {
                    for (int i = 0; i < c->nruns; i++)
                        if (c->runs[i]->phase == PH_ACTIVE || c->runs[i]->phase == PH_KILLING)
                            launcher_stop(c->launcher, &c->runs[i]->h, 1);   /* [launcher] */
                    break;
                }
                struct timespec ts = { 0, 50000000L };
                nanosleep(&ts, NULL);
            }
            for (int i = 0; i < c->nruns; i++) {
                coord_run_t *r = c->runs[i];
                if (r->phase != PH_ACTIVE && r->phase != PH_KILLING) continue;
                launcher_reap(c->launcher, &r->h);   /* [launcher] */
                r->phase = PH_BACKOFF;
                /* RESTARTING without a restart counted: the next coordinator resumes it. */
                set_state(c, r, JOB_RESTARTING, "stopped with the coordinator (--stop-jobs-on-exit)");
            }
        }
        for (int i = 0; i < c->nruns; i++)
            if (c->runs[i]->dirty) persist(c, c->runs[i]);
        for (int i = 0; i < c->nruns; i++)
            if (c->runs[i]->dirty)
                clog_printf("job %s: could not record its state in Redis before exiting", c->runs[i]->id);
        if (c->rc && c->have_lock) {
            redisReply *r = redisCommand(c->rc, "EVAL %s 1 %s %s", UNLOCK_LUA, KEY_LOCK, c->lock_value);
            if (r) freeReplyObject(r);
            r = redisCommand(c->rc, "HSET %s heartbeat 0 stopped %.3f", KEY_COORD, clog_now());
            if (r) freeReplyObject(r);
        }
        if (c->rc) {
            redisFree(c->rc);
            c->rc = NULL;
        }
        if (c->embedded_on) embedded_stop(&c->emb, 10.0);
        clog_printf("stopped");
    }
    free_coordinator(c);
}

const char *coordinator_listen(const coordinator_t *c)
{
    return c->listen;
}
