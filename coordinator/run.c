/* coordinator/run.c - see run.h. The life of a job in the daemon:
 *   submit (api.c) -> pacer:queue -> schedule_tick() (schedule.c): claimed (QUEUED -> RUNNING, one Lua
 *   script) when its world fits the free slots -> launch(): spec rewritten into
 *   STATE_DIR/jobs/{id}/spec.json, the attempt started by the launcher (launcher.h:
 *   mpirun under `sh -c '...; echo $? > exit_code'` in a new session, or a Slurm batch
 *   job) -> run_step(): every tick, has it ended (launcher_poll), cancel requests,
 *   heartbeats, batch plans, log size -> on exit, supervise_decide() says SUCCEEDED,
 *   FAILED, CANCELLED or RESTARTING (relaunched with --resume after a backoff).
 *
 * Elastic restarts: an attempt that fails on a multi-host launcher has its
 * hosts probed first (PH_PROBING, hosts.h); when one is gone the job is relaunched at
 * once, without using a restart, on the hosts that remain, with the world that fits them
 * (hosts_elastic_world) and the same global batch, from its last checkpoint. While a job
 * runs on fewer ranks than its spec asks and hosts come back, it is stopped with notice
 * (its ranks checkpoint at their next step; the simulator: right after its next
 * checkpoint) (KILL_RESIZE, grow_check) and relaunched on more. Each change of world is a
 * resize: logged, an event {"type": "resize"}, and the job's "resizes" field.
 *
 * A host cut off from the job's network answers the remote shell, so after
 * the remote-shell probes found no host down, the attempt's hosts get a network probe
 * (netprobe.h: MPI messages between them, launched as a job is); a host it finds failing
 * is left out as a lost one is, and comes back when a later probe passes (hosts.c).
 * Attempts are stopped when their ranks wait and none trains (stall.h, KILL_STALL), not
 * only when a heartbeat is stale; each such stop names the host that went silent, and a
 * host silent in SV_SILENT_LIMIT attempts in a row is left out of the job's later ones
 * (supervise_note_silent), probes or not.
 *
 * The tick runs on one thread with its own Redis context. Processes are supervised
 * whether or not Redis is reachable; what Redis should show is kept in the run and
 * written when it can be (run->dirty), and a Redis read that fails counts as "unknown",
 * never as a stale heartbeat.
 */
#include "run.h"

#include "coord_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "ckptdir.h"
#include "clog.h"
#include "dataroots.h"
#include "drain.h"
#include "dynbatch.h"
#include "fs.h"
#include "hosts.h"
#include "launch.h"
#include "launcher.h"
#include "modelstore.h"
#include "notice.h"
#include "policy.h"
#include "record_fields.h"
#include "simjob.h"
#include "stall.h"
#include "supervise.h"
#include "tickconn.h"

#define PLAN_PERIOD_S 1.0
#define JPATH (PATH_MAX + 128) /* STATE_DIR/jobs/{id}/{leaf} always fits */

static void run_clear_hosts(coord_run_t *r)
{
    for (int i = 0; i < r->nhosts; i++) free(r->hosts[i]);
    free(r->hosts);
    r->hosts = NULL;
    r->nhosts = 0;
}

static void run_clear_benched(coord_run_t *r)
{
    for (int i = 0; i < r->nbenched; i++) free(r->benched[i]);
    free(r->benched);
    r->benched = NULL;
    r->nbenched = 0;
}

void run_free(coord_run_t *r)
{
    if (!r) return;
    if (r->draining) launcher_drain_cancel(r->launcher, &r->drain);
    run_clear_hosts(r);
    run_clear_benched(r);
    for (int i = 0; i < r->nplace; i++) free(r->place[i]);
    free(r->place);
    json_decref(r->placement);
    json_decref(r->stall);
    json_decref(r->resize_log);
    json_decref(r->interruptions);
    free(r->spec);
    free(r);
}

/* Workers of an attempt of `world` processes. */
static int workers_of(const coord_run_t *r, int world) { return spec_is_async(r->spec) ? world - 1 : world; }

/* The most ranks r may run as (spec_worlds). */
int run_max_world(const coord_run_t *r)
{
    int full, least, most;
    spec_worlds(r->spec, &full, &least, &most);
    return most;
}

/* The hosts r's attempt may use (copies); 0, or -1 when out of memory. */
static int run_set_hosts(coord_run_t *r, const char *const *names, int n)
{
    char **h = calloc((size_t)(n > 0 ? n : 1), sizeof *h);
    if (!h) return -1;
    for (int i = 0; i < n; i++)
        if (!(h[i] = strdup(names[i]))) {
            while (i--) free(h[i]);
            free(h);
            return -1;
        }
    run_clear_hosts(r);
    r->hosts = h;
    r->nhosts = n;
    return 0;
}

static json_t *run_hosts_json(const coord_run_t *r)
{
    json_t *a = json_array();
    for (int i = 0; a && i < r->nhosts; i++) json_array_append_new(a, json_string(r->hosts[i]));
    return a;
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
    r->lr_scale = 1.0;
    r->saved_state = r->state = JOB_RUNNING;
    r->resize_log = json_array();
    r->interruptions = json_array();
    c->runs[c->nruns++] = r;
    return r;
}

int run_slots_used(const coordinator_t *c)
{
    int used = 0;
    for (int i = 0; i < c->nruns; i++)
        if (c->runs[i]->phase != PH_DONE && !c->runs[i]->simulated) used += c->runs[i]->world;
    return used;
}

int run_sims_used(const coordinator_t *c)
{
    int used = 0;
    for (int i = 0; i < c->nruns; i++) used += c->runs[i]->phase != PH_DONE && c->runs[i]->simulated;
    return used;
}

int run_holds(const coordinator_t *c, const coord_run_t *r, int host)
{
    if (r->phase == PH_DONE || r->simulated) return 0;
    char *const *names = r->nplace > 0 ? r->place : r->nhosts > 0 ? r->hosts : NULL;
    int nn = r->nplace > 0 ? r->nplace : r->nhosts, left = r->world;
    for (int i = 0; i < c->nhosts && left > 0; i++) {
        int listed = !names;
        for (int k = 0; names && k < nn && !listed; k++) listed = strcmp(names[k], c->hosts[i].name) == 0;
        if (!listed) continue;
        int take = left < c->hosts[i].slots ? left : c->hosts[i].slots;
        if (i == host) return take;
        left -= take;
    }
    return 0;
}

/* Which launcher runs r: the sim launcher for a simulated job (NULL when this daemon has
 * none: the scheduler's claim (run_claimed) and run_adopt fail such a job before anything is launched). */
static void run_bind(coordinator_t *c, coord_run_t *r)
{
    r->simulated = r->spec->simulate.enabled;
    r->launcher = r->simulated ? c->sim_launcher : c->launcher;
}

/* A simulated job on a daemon that cannot simulate: the reason names the field. */
static void fail_unsimulated(coordinator_t *c, coord_run_t *r, double now)
{
    char why[768];
    snprintf(why, sizeof why, "simulate.enabled: this coordinator cannot run simulations: %.600s", c->sim_why);
    r->phase = PH_DONE;
    r->finished = now;
    clog_printf("job %s: FAILED: %s", r->id, why);
    run_set_state(c, r, JOB_FAILED, why);
}

/* Writes what Redis should show about r. On success, a finished job's profiles are
 * folded and its bulky keys get their TTL. */
void run_persist(coordinator_t *c, coord_run_t *r)
{
    if (!c->rc) {
        r->dirty = 1;
        return;
    }
    char restarts[16], attempts[16], pid[16], pstart[32], ec[16], world[16], started[32], finished[32];
    char lr_scale[32], resume_before[24], world_cap[16], ninterruptions[16];
    char log[JPATH], ckdir[JPATH], summary[JPATH];
    snprintf(restarts, sizeof restarts, "%d", r->restarts);
    snprintf(attempts, sizeof attempts, "%d", r->attempts);
    snprintf(pid, sizeof pid, "%d", (int)r->h.pid);
    snprintf(pstart, sizeof pstart, "%llu", r->h.pstart);
    if (r->exit_code >= 0) snprintf(ec, sizeof ec, "%d", r->exit_code);
    else ec[0] = 0;
    snprintf(world, sizeof world, "%d", r->world);
    if (r->world_cap > 0) snprintf(world_cap, sizeof world_cap, "%d", r->world_cap);
    else world_cap[0] = 0;
    snprintf(lr_scale, sizeof lr_scale, "%.17g", r->lr_scale);
    if (r->resume_before > 0) snprintf(resume_before, sizeof resume_before, "%ld", r->resume_before);
    else resume_before[0] = 0;
    snprintf(started, sizeof started, "%.3f", r->started);
    if (r->finished > 0) snprintf(finished, sizeof finished, "%.3f", r->finished);
    else finished[0] = 0;
    coord_job_path(c, r->id, "log", log, sizeof log);
    coord_job_path(c, r->id, "checkpoints", ckdir, sizeof ckdir);
    coord_job_path(c, r->id, "summary.json", summary, sizeof summary);
    json_t *hj = run_hosts_json(r);
    char *hosts = hj ? json_dumps(hj, JSON_COMPACT) : NULL,
         *resizes = r->resize_log ? json_dumps(r->resize_log, JSON_COMPACT) : NULL,
         *stall = r->stall ? json_dumps(r->stall, JSON_COMPACT) : NULL,
         *placement = r->placement ? json_dumps(r->placement, JSON_COMPACT) : NULL,
         *interruptions = r->interruptions ? json_dumps(r->interruptions, JSON_COMPACT) : NULL;
    snprintf(ninterruptions, sizeof ninterruptions, "%d", r->interruptions_total);
    json_decref(hj);
    const char *kv[] = {
        "restarts",
        restarts,
        "attempts",
        attempts,
        "pid",
        pid,
        "pstart",
        pstart,
        "exit_code",
        ec,
        "world",
        world,
        "world_cap",
        world_cap,
        "started",
        started,
        "finished",
        finished,
        "log",
        log,
        "checkpoint_dir",
        ckdir,
        "summary_path",
        summary,
        "hosts",
        hosts ? hosts : "[]",
        "resizes",
        resizes ? resizes : "[]",
        "health",
        r->health,
        "lr_scale",
        lr_scale,
        "resume_before",
        resume_before,
        "stall",
        stall ? stall : "",
        "placement",
        placement ? placement : "",
        "interruptions",
        interruptions ? interruptions : "[]",
        "interruptions_total",
        ninterruptions,
        "reason",
        r->reason,
    };
    int changed = r->state != r->saved_state;
    /* With a state change jobstore_update writes state + reason itself (and the event). */
    int nkv = (int)(sizeof kv / sizeof kv[0]) / 2 - (changed ? 1 : 0);
    int rc = tickconn_check(c,
                            jobstore_update(c->rc, r->id, changed ? job_state_name(r->state) : NULL, r->reason, kv, nkv),
                            "job update");
    free(hosts);
    free(resizes);
    free(stall);
    free(placement);
    free(interruptions);
    if (rc != JS_OK) {
        r->dirty = 1;
        return;
    }
    r->dirty = 0;
    r->saved_state = r->state;
    if (r->phase == PH_DONE && c->rc) {
        /* A simulated job's nodes are simulated hosts: folding them into the persistent
         * profiles would invent hosts (and speeds) the cluster does not have. */
        if (c->worker_caps.redis && !r->simulated) {
            int n = dynbatch_fold_profiles(c->rc, r->id, r->spec, r->world);
            if (n == JS_EREDIS) tickconn_broken(c, "profiles");
        }
        if (c->rc) tickconn_check(c, jobstore_expire_job_keys(c->rc, r->id, r->world), "expire");
    }
}

void run_set_state(coordinator_t *c, coord_run_t *r, job_state_t s, const char *reason)
{
    r->state = s;
    if (reason != r->reason) snprintf(r->reason, sizeof r->reason, "%s", reason ? reason : "");
    r->dirty = 1;
    run_persist(c, r);
}

/* ---- collapse (worker/health.h) ----------------------------------------------------------- */

json_t *run_health_clean(json_t *in)
{
    const char *st = json_string_value(json_object_get(in, "state"));
    if (!st) return NULL;
    if (strcmp(st, "ok") == 0) return json_pack("{s:s}", "state", "ok");
    if (strcmp(st, "collapsed") != 0) return NULL;
    json_t *since = json_object_get(in, "since_step"), *at = json_object_get(in, "at_step");
    const char *why = json_string_value(json_object_get(in, "reason"));
    if (!json_is_integer(since) || json_integer_value(since) < 0 || !why) return NULL;
    char line[400];
    size_t n = 0;
    for (const char *p = why; *p && n + 1 < sizeof line; p++) line[n++] = (unsigned char)*p < 0x20 ? '?' : *p;
    line[n] = 0;
    json_t *o = json_pack("{s:s, s:I, s:s}", "state", "collapsed", "since_step", json_integer_value(since), "reason",
                          line);
    if (o && json_is_integer(at) && json_integer_value(at) >= 0) json_object_set(o, "at_step", at);
    return o;
}

/* The current attempt's health (in: borrowed, from rank 0's node hash or the summary):
 * kept for the job's record, and a collapse announced once per attempt, in the log and as
 * an event {"type": "health", "job", "state", "since_step", "at_step", "reason",
 * "attempt", "time"}. Anything that is not a health object is ignored. */
static void run_health(coordinator_t *c, coord_run_t *r, json_t *in, double now)
{
    json_t *h = run_health_clean(in);
    char *text = h ? json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text && strlen(text) < sizeof r->health && strcmp(text, r->health) != 0) {
        snprintf(r->health, sizeof r->health, "%s", text);
        r->dirty = 1;
    }
    if (h && !r->collapse_announced && strcmp(json_string_value(json_object_get(h, "state")), "collapsed") == 0) {
        r->collapse_announced = 1;
        r->collapse_since = (long)json_integer_value(json_object_get(h, "since_step"));
        snprintf(r->collapse_why, sizeof r->collapse_why, "%s", json_string_value(json_object_get(h, "reason")));
        clog_printf("job %s: training collapsed (since step %ld): %s", r->id, r->collapse_since, r->collapse_why);
        json_t *ev = json_deep_copy(h);
        json_object_set_new(ev, "type", json_string("health"));
        json_object_set_new(ev, "job", json_string(r->id));
        json_object_set_new(ev, "attempt", json_integer(r->attempts));
        json_object_set_new(ev, "time", json_real(now));
        if (c->rc) tickconn_check(c, jobstore_event(c->rc, ev), "health event");
        json_decref(ev);
    }
    free(text);
    json_decref(h);
}

/* The health in the summary an attempt that exited 0 or 3 wrote (the coordinator may
 * have missed it in the node hash: the attempt stopped right after, or ran without
 * Redis). */
static void run_health_from_summary(coordinator_t *c, coord_run_t *r, double now)
{
    char path[JPATH];
    struct stat st;
    coord_job_path(c, r->id, "summary.json", path, sizeof path);
    /* The worker's file: a summary is a few KiB; anything far larger is not read. */
    json_t *sum = stat(path, &st) == 0 && st.st_size < (1 << 22) ? json_load_file(path, 0, NULL) : NULL;
    json_t *h = json_object_get(sum, "health");
    if (json_is_object(h)) run_health(c, r, h, now);
    json_decref(sum);
}

void run_stop_probes(coordinator_t *c, coord_run_t *r)
{
    if (r->np_state == 1) netprobe_stop(c, &r->np);
    r->np_state = 0;
}

/* What the job shows about waiting ranks: nothing once its attempt is over. */
static void clear_stall(coord_run_t *r)
{
    if (r->stall) r->dirty = 1;
    json_decref(r->stall);
    r->stall = NULL;
    r->stall_sig[0] = 0;
    r->stall_seen = 0;
}

/* The job's processes have ended (or must be treated so): decide what comes next.
 * code: the exit status or signal, or for SV_STALE the stale rank. */
static void finish_attempt(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, double now)
{
    char log[JPATH], line[512] = "";
    coord_job_path(c, r->id, "log", log, sizeof log);
    log_last_line(log, line, sizeof line);
    /* Stragglers must not outlive the attempt; a child is reaped (launcher_reap). */
    if (r->launcher) launcher_reap(r->launcher, &r->h);
    if (oc == SV_EXITED && (code == 0 || code == 3)) run_health_from_summary(c, r, now);
    run_stop_probes(c, r);
    clear_stall(r);
    sv_in_t in = {
        .outcome = oc,
        .code = code,
        .stale_s = r->stale_s,
        .host = r->stale_host,
        .stall = r->stall_text,
        .restarts = r->restarts,
        .max_restarts = c->cfg.max_restarts,
        .backoff_base_s = c->cfg.restart_backoff_s,
        .last_line = line,
        .on_collapse = r->spec->on_collapse,
        .collapse = r->collapse_announced ? r->collapse_why : NULL,
    };
    sv_out_t out;
    supervise_decide(&in, &out);
    if (out.collapse_restart) {
        /* The next attempt resumes from the last checkpoint at or before the step the
         * run last improved (worker --resume-before), with half the learning rate; with
         * no word of when (no summary), from the start. */
        r->lr_scale *= 0.5;
        r->resume_before = (r->collapse_announced ? r->collapse_since : 0) + 1;
        clog_printf("job %s: after the collapse: learning rate x%g of the spec's, resuming before step %ld", r->id,
                    r->lr_scale, r->resume_before);
    }
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
    run_set_state(c, r, out.state, out.reason);
}

/* A job just claimed has never run, so whatever STATE_DIR/jobs/{id} already holds is an
 * earlier job's that had the same id: Redis lost its data (no AOF, a flushed database)
 * and ids began again at j-1. Its checkpoint must never be resumed (the worker's spec
 * fingerprint refuses it too) and its log never shown as this job's: the directory is
 * moved aside, to jobs/{id}.old-{unix time}[-k], and kept for whoever wants it. */
static int move_aside(coordinator_t *c, const coord_run_t *r, const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return 0;
    char aside[JPATH + 64];
    long t = (long)clock_wall_s();
    for (int k = 0; k < 100; k++) {
        if (k == 0) snprintf(aside, sizeof aside, "%s.old-%ld", dir, t);
        else snprintf(aside, sizeof aside, "%s.old-%ld-%d", dir, t, k);
        if (lstat(aside, &st) == 0) continue;
        if (fs_rename(dir, aside) != 0) break;
        clog_printf("job %s: %s held an earlier job's files with this id (did Redis lose its data?); moved to %s",
                    r->id, dir, aside);
        return 0;
    }
    snprintf(err, errlen, "%.300s holds an earlier job's files and cannot be moved aside: %s", dir, strerror(errno));
    return -1;
}


/* ---- elastic restarts --------------------------------------------------------------- */

/* Names of the cluster's hosts that are not usable, with their state ("pw3 down"). */
static void unusable_hosts(coordinator_t *c, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < c->nhosts && used < len; i++) {
        const host_t *h = &c->hosts[i];
        if (h->state != HOST_DOWN && h->state != HOST_FAILING) continue;
        int k = snprintf(out + used, len - used, "%s%s %s", used ? ", " : "", h->name, host_state_name(h->state));
        if (k < 0) break;
        used += (size_t)k;
    }
}

/* A change of r's world, from -> to (r->hosts are the new attempt's): the job's record,
 * an event, the log. */
static void record_resize(coordinator_t *c, coord_run_t *r, int from, int to, const char *reason, double now)
{
    json_t *e = json_pack("{s:i, s:i, s:s, s:o, s:f}", "from", from, "to", to, "reason", reason, "hosts",
                          run_hosts_json(r), "time", now);
    if (!e) return;
    /* a shrink for a preemption names the job it made room for (shrink_for) */
    if (r->shrinking) json_object_set_new(e, "preempted_by", json_string(r->preempted_by));
    r->resizes++;
    if (r->resize_log) {
        json_array_append(r->resize_log, e);
        while (json_array_size(r->resize_log) > RUN_RESIZES_KEPT) json_array_remove(r->resize_log, 0);
    }
    clog_printf("job %s: resize %d -> %d rank%s: %s", r->id, from, to, to == 1 ? "" : "s", reason);
    if (c->rc) {
        json_t *ev = json_deep_copy(e);
        json_object_set_new(ev, "type", json_string("resize"));
        json_object_set_new(ev, "job", json_string(r->id));
        tickconn_check(c, jobstore_event(c->rc, ev), "resize event");
        json_decref(ev);
    }
    json_decref(e);
    r->dirty = 1;
}

/* Node and staleness hashes of ranks [to, from) belong to no rank any more. */
static void drop_rank_keys(coordinator_t *c, coord_run_t *r, int from, int to)
{
    for (int k = to; c->rc && k < from; k++) {
        char a[160], b[160];
        snprintf(a, sizeof a, KEY_JOB_NODE, r->id, k);
        snprintf(b, sizeof b, KEY_JOB_STALENESS, r->id, k);
        redisReply *x = redisCommand(c->rc, "DEL %s %s", a, b);
        if (!x) tickconn_broken(c, "resize");
        else freeReplyObject(x);
    }
}

/* The checkpoint file's identity (mtime in ns, inode, size; zeros when absent): the
 * worker renames a new one over it, so any change means a checkpoint was written. */
static void ckpt_ident(coordinator_t *c, const coord_run_t *r, long long out[3])
{
    char dir[JPATH], path[JPATH + SPEC_NAME_MAX + 8];
    struct stat st;
    coord_job_path(c, r->id, "checkpoints", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s.ckpt", dir, r->spec->name);
    out[0] = out[1] = out[2] = 0;
    if (stat(path, &st) != 0) return;
    out[0] = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    out[1] = (long long)st.st_ino;
    out[2] = (long long)st.st_size;
}

int run_has_checkpoint(coordinator_t *c, const coord_run_t *r)
{
    long long id[3];
    ckpt_ident(c, r, id);
    return id[0] || id[1] || id[2];
}

/* Whether an attempt that ended so may have lost a host: only failures, and only where
 * hosts other than this machine run ranks (not a simulation: its hosts are simulated). */
static int should_probe(const coordinator_t *c, const coord_run_t *r, sv_outcome_t oc, int code)
{
    if (r->simulated || launcher_kind(c->launcher) == LAUNCHER_LOCAL) return 0;
    switch (oc) {
    case SV_EXITED: return code != 0 && code != 2;
    case SV_SIGNALLED:
    case SV_LOST:
    case SV_UNFINISHED:
    case SV_STALE:
    case SV_STALLED: return 1;
    case SV_CANCELLED: return 0;
    }
    return 0;
}

/* Whether the network probe can run here: a launcher that reaches other hosts through
 * mpirun's own channels (hostfile), a worker that has --netprobe. Slurm's nodes keep
 * their slurmd probes: a probe there is a batch job that may wait in the queue. */
static int netprobe_applies(const coordinator_t *c)
{
    return c->worker_caps.netprobe && launcher_kind(c->launcher) == LAUNCHER_HOSTFILE;
}

static int benched(const coord_run_t *r, const char *host)
{
    for (int i = 0; i < r->nbenched; i++)
        if (strcmp(r->benched[i], host) == 0) return 1;
    return 0;
}

/* The hosts r may use now (names: room for c->nhosts): the usable ones less those it
 * leaves out for going silent, unless that leaves none (then every usable one: its own
 * rule never keeps a job from running; *kept_all says so). Returns the count, their
 * slots in *slots. */
static int run_usable(coordinator_t *c, const coord_run_t *r, const char **names, int *slots, int *kept_all)
{
    int n = hosts_usable(c, names, c->nhosts, slots), k = 0, s = 0;
    for (int i = 0; i < n; i++) {
        if (benched(r, names[i])) continue;
        const host_t *h = hosts_find(c, names[i]);
        s += h ? h->slots : 0;
        names[k++] = names[i];
    }
    if (kept_all) *kept_all = k == 0 && n > 0;
    if (k == 0) return hosts_usable(c, names, c->nhosts, slots);
    *slots = s;
    return k;
}

/* How an attempt ended, for the silent-host rule (supervise_note_silent): host went
 * silent in it ("" or NULL: none did). A host silent twice in a row joins r->benched. */
static void note_silent(coord_run_t *r, const char *host)
{
    if (!supervise_note_silent(&r->silent, host) || benched(r, host)) return;
    char **b = realloc(r->benched, sizeof *b * (size_t)(r->nbenched + 1));
    char *h = strdup(host);
    if (!b || !h) {
        free(h);
        if (b) r->benched = b;
        return;
    }
    r->benched = b;
    r->benched[r->nbenched++] = h;
    clog_printf("job %s: %s went silent in %d attempts in a row: its later attempts leave it out", r->id, host,
                r->silent.times);
}

/* The attempt failed: its processes are reaped and its hosts probed before the restart
 * policy decides (run_step's PH_PROBING). lost: hosts the launcher already knows are gone
 * (Slurm's NODE_FAIL), blank-separated. */
static void begin_probing(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *lost, double now)
{
    launcher_reap(r->launcher, &r->h);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", lost ? lost : "");
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        host_t *h = hosts_find(c, t);
        if (h) hosts_set_state(c, h, HOST_DOWN, "Slurm: the node failed under a job (NODE_FAIL)", now);
    }
    for (int i = 0; i < r->nhosts; i++) hosts_probe(c, r->hosts[i], now);
    r->probe_oc = oc;
    r->probe_code = code;
    r->probe_deadline = now + LAUNCH_PROBE_TIMEOUT_S + 2;
    r->phase = PH_PROBING;
    r->kill_reason = KILL_NONE;
    run_stop_probes(c, r);
    clear_stall(r);
    char what[48];
    if (oc == SV_STALLED) snprintf(what, sizeof what, "stalled");
    else
        snprintf(what, sizeof what, "%s %d",
                 oc == SV_EXITED       ? "exit"
                 : oc == SV_SIGNALLED  ? "signal"
                 : oc == SV_STALE      ? "stale rank"
                 : oc == SV_UNFINISHED ? "no summary, exit"
                                       : "lost",
                 code);
    clog_printf("job %s: attempt %d ended (%s); probing its host%s", r->id, r->attempts, what,
                r->nhosts == 1 ? "" : "s");
}

/* Relaunch at once on the hosts usable now, without using a restart. */
static void relaunch_soon(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *reason, double now)
{
    launcher_reap(r->launcher, &r->h);
    run_stop_probes(c, r);
    clear_stall(r);
    r->exit_code = oc == SV_EXITED ? code : -1;
    r->kill_reason = KILL_NONE;
    r->phase = PH_BACKOFF;
    r->next_launch = now;
    if (reason != r->resize_reason) snprintf(r->resize_reason, sizeof r->resize_reason, "%s", reason);
    char why[sizeof r->reason];
    snprintf(why, sizeof why, "%s: relaunching on the hosts there are", reason);
    clog_printf("job %s: RESTARTING: %s", r->id, why);
    run_set_state(c, r, JOB_RESTARTING, why);
}

/* PH_PROBING: once the probes of the attempt's hosts answered, a lost host means an
 * elastic relaunch; none means the attempt failed on its own (the restart policy). */
/* The network probe of the attempt's hosts, once the remote-shell probes found none
 * down: 1 while it runs, 0 when it is over (its failing hosts marked) or not wanted. */
static int probe_network(coordinator_t *c, coord_run_t *r, double now)
{
    if (r->np_state == 2) return 0;
    if (r->np_state == 0) {
        r->np_state = 2;
        if (!netprobe_applies(c) || r->nhosts < 1) return 0;
        for (int i = 0; i < r->nhosts; i++) {
            host_t *h = hosts_find(c, r->hosts[i]);
            if (!h || h->state == HOST_DOWN || h->state == HOST_FAILING) return 0; /* explained */
        }
        char err[256];
        if (netprobe_start(c, &r->np, (const char *const *)r->hosts, r->nhosts, now, err, sizeof err) != 0) {
            clog_printf("job %s: no network probe: %s", r->id, err);
            return 0;
        }
        r->np_state = 1;
        clog_printf("job %s: probing the job's network between its host%s", r->id, r->nhosts == 1 ? "" : "s");
        return 1;
    }
    if (!netprobe_poll(c, &r->np, now)) return 1;
    int bad = 0;
    for (int i = 0; i < r->np.n; i++) {
        const netprobe_host_t *p = &r->np.hosts[i];
        host_t *h = hosts_find(c, p->host);
        if (!h || !p->failing) continue;
        bad++;
        if (h->state != HOST_DOWN) {
            hosts_set_state(c, h, HOST_FAILING, p->why, now);
            h->net_failing = 1;
            h->next_probe = now + c->cfg.host_probe_s;
        }
    }
    if (!bad) clog_printf("job %s: the job's network carries messages between its hosts", r->id);
    netprobe_stop(c, &r->np);
    r->np_state = 2;
    return 0;
}

static void after_probing(coordinator_t *c, coord_run_t *r, double now)
{
    int waiting = 0;
    for (int i = 0; i < r->nhosts; i++) waiting |= hosts_probing(c, r->hosts[i]);
    if (waiting && now < r->probe_deadline) return;
    if (probe_network(c, r, now)) return;
    char lost[1024] = "", why[256] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < r->nhosts; i++) {
        host_t *h = hosts_find(c, r->hosts[i]);
        if (h && h->state != HOST_DOWN && h->state != HOST_FAILING) continue;
        int k = snprintf(lost + used, sizeof lost - used, "%s%s", used ? ", " : "", r->hosts[i]);
        if (k > 0 && (size_t)k < sizeof lost - used) used += (size_t)k;
        if (!n++) snprintf(why, sizeof why, "%s", h ? h->reason : "no longer in the host list");
    }
    if (!n) {
        /* Every host passed, but one keeps going silent: it is left out all the same,
         * without spending a restart on another attempt there. */
        const char **names = calloc((size_t)c->nhosts + 1, sizeof *names);
        int slots = 0, kept_all = 1;
        if (names) run_usable(c, r, names, &slots, &kept_all);
        free(names);
        for (int i = 0; !kept_all && i < r->nhosts; i++) {
            if (!benched(r, r->hosts[i])) continue;
            char reason[sizeof r->resize_reason];
            snprintf(reason, sizeof reason, "left out %.100s: it went silent in %d attempts in a row", r->hosts[i],
                     r->silent.times);
            relaunch_soon(c, r, r->probe_oc, r->probe_code, reason, now);
            return;
        }
        finish_attempt(c, r, r->probe_oc, r->probe_code, now);
        return;
    }
    char reason[sizeof r->resize_reason];
    /* bounded parts: the reason is one line of a few hundred bytes; a long list is cut */
    snprintf(reason, sizeof reason, "lost host%s %.90s (%.200s)", n == 1 ? "" : "s", lost, why);
    relaunch_soon(c, r, r->probe_oc, r->probe_code, reason, now);
}

/* A placed job (--policy hetero|agnostic, set_place): the usable hosts in names[0..n)
 * narrowed to those of its placement, with their slots into *usable_slots and all its
 * placed hosts' slots into *all_slots (the cluster its world is fitted to). Returns the
 * new count; 0 when none of them is usable (then nothing is changed). */
static int placed_only(coordinator_t *c, const coord_run_t *r, const char **names, int n, int *usable_slots,
                       int *all_slots)
{
    int k = 0, slots = 0, all = 0;
    for (int i = 0; i < r->nplace; i++) {
        const host_t *h = hosts_find(c, r->place[i]);
        all += h ? h->slots : 1;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < r->nplace; j++)
            if (strcmp(names[i], r->place[j]) == 0) {
                const host_t *h = hosts_find(c, names[i]);
                slots += h ? h->slots : 1;
                names[k++] = names[i];
                break;
            }
    if (k == 0) return 0;
    *usable_slots = slots;
    *all_slots = all;
    return k;
}

/* PH_ACTIVE, once a second: a job on fewer ranks than its spec asks grows when more
 * slots are usable again. Where the launcher has a notice (launcher_has_notice), with one,
 * once the slots are still usable a check later: its ranks checkpoint at their next step
 * and nothing is lost, however far off its next periodic checkpoint is (a job whose
 * period outlasts its run would otherwise never grow back). Elsewhere (the simulator),
 * right after its next checkpoint: a plain stop loses the work since. */
static void grow_check(coordinator_t *c, coord_run_t *r, double now)
{
    if (now - r->last_grow_check < 1.0) return;
    r->last_grow_check = now;
    int slots = c->slots_usable, total = c->slots_total, placed = 0;
    if (r->nbenched || r->nplace > 0) {
        const char **names = calloc((size_t)c->nhosts + 1, sizeof *names);
        if (!names) return;
        int n = run_usable(c, r, names, &slots, NULL);
        /* a placed job grows back only onto its own hosts (launch uses no other) */
        if (r->nplace > 0 && !(placed = placed_only(c, r, names, n, &slots, &total))) slots = 0;
        free(names);
    }
    /* Over the slots other jobs leave it (a job shrunk for another grows back once that
     * one has ended); alone, over all of them, as oversubscribed as it was. */
    int others = r->simulated || placed ? 0 : run_slots_used(c) - r->world;
    if (others > 0) slots -= others;
    int w = r->world < r->full_world && slots > 0 ? hosts_elastic_world(r->full_world, r->min_world, total, slots) : 0;
    /* a placed job's cap is the class-aware policy's (hplan_apply): it lifts it, not this */
    if (placed && r->world_cap > 0 && w > r->world_cap) w = r->world_cap;
    if (w <= r->world) {
        if (r->grow_armed)
            clog_printf("job %s: no longer grows (the slots are gone again, or other jobs hold them)", r->id);
        r->grow_armed = 0;
        return;
    }
    long long id[3];
    ckpt_ident(c, r, id);
    /* The notice only once this attempt has trained past where the last one was seen
     * (a training rank's reported step): a rank acts on a notice during its start-up
     * only at its first step anyway, and a relaunch stopped before it has done anything
     * pays its start-up again. Without the ranks' reports, the checkpoint decides. */
    int notice = launcher_has_notice(r->launcher) && c->worker_caps.redis;
    if (notice && r->progress_step <= r->launch_progress) {
        if (!r->grow_armed)
            clog_printf("job %s: %d usable slot%s now: grows from %d to %d ranks once this attempt has trained", r->id,
                        slots, slots == 1 ? "" : "s", r->world, w);
        r->grow_armed = 1;
        memcpy(r->grow_ckpt, id, sizeof r->grow_ckpt);
        return;
    }
    if (!r->grow_armed) {
        r->grow_armed = 1;
        memcpy(r->grow_ckpt, id, sizeof r->grow_ckpt);
        clog_printf("job %s: %d usable slot%s now: grows from %d to %d ranks at its next %s", r->id, slots,
                    slots == 1 ? "" : "s", r->world, w,
                    notice ? "step (a notice: its ranks checkpoint there)" : "checkpoint");
        return;
    }
    if (!notice && memcmp(id, r->grow_ckpt, sizeof id) == 0) return;
    /* Which hosts it gains, for the reason. */
    char back[512] = "";
    size_t used = 0;
    for (int i = 0; i < c->nhosts; i++) {
        const host_t *h = &c->hosts[i];
        if ((h->state != HOST_UP && h->state != HOST_SLOW) || benched(r, h->name)) continue;
        int had = 0;
        for (int k = 0; k < r->nhosts; k++) had |= strcmp(r->hosts[k], h->name) == 0;
        if (had) continue;
        int k = snprintf(back + used, sizeof back - used, "%s%s", used ? ", " : "", h->name);
        if (k > 0 && (size_t)k < sizeof back - used) used += (size_t)k;
    }
    snprintf(r->resize_reason, sizeof r->resize_reason, "grow at the checkpoint: %.250s%s",
             back[0]        ? back
             : r->world_cap ? "the slots it gave up are free again"
                            : "more slots",
             back[0]        ? (strchr(back, ',') ? " are usable again" : " is usable again")
             : r->world_cap ? ""
                            : " are usable");
    r->grow_armed = 0;
    r->world_cap = w < r->full_world ? w : 0;
    r->stop_notice = notice;
    run_kill(c, r, KILL_RESIZE, now);
}

/* ---- launch: one attempt as named phases over one state, with one cleanup ------------- */

/* The worker's argv: a bounded table, each option added with an explicit check (a full
 * table is an error that names it, never a write past the end). */
#define LAUNCH_ARGV_MAX (32 + 2 * COORD_DATA_ROOTS_MAX)
typedef struct {
    const char *v[LAUNCH_ARGV_MAX + 1]; /* NULL-terminated */
    int n, full;
} launch_argv_t;

/* Appends opt and, unless NULL, its value. */
static void argv_add(launch_argv_t *av, const char *opt, const char *value)
{
    int need = value ? 2 : 1;
    if (av->n + need > LAUNCH_ARGV_MAX) {
        av->full = 1;
        return;
    }
    av->v[av->n++] = opt;
    if (value) av->v[av->n++] = value;
    av->v[av->n] = NULL;
}

/* One attempt's launch: the paths, the rewritten spec, the hosts and world, the argv and
 * the buffers its option values live in; launch_free releases what it owns. */
typedef struct {
    char dir[JPATH], ckdir[JPATH], specp[JPATH], summary[JPATH];
    char log[JPATH], ecp[JPATH], pidp[JPATH], onnx[JPATH], st[JPATH], adopt[JPATH];
    char err[512];
    long long fence;
    job_spec_t *sp;
    char *text;
    const char **names, **rank_host;
    int world, nn, placed;
    int reordered; /* names are not in the launcher's order (shard_host_order) */
    launch_argv_t argv;
    char before[24], scale[32], wtext[16], ftext[24], models_dir[PATH_MAX + 16];
} launch_t;

static void launch_free(launch_t *L)
{
    free(L->sp);
    free(L->text);
    free(L->names);
    free(L->rank_host);
}

/* What a launch phase returns. */
enum { LAUNCH_GO_ON = 0, LAUNCH_FAIL = -1, LAUNCH_WAIT = 1 /* no host: backing off */ };

static int launch_paths(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    coord_job_path(c, r->id, NULL, L->dir, sizeof L->dir);
    coord_job_path(c, r->id, "checkpoints", L->ckdir, sizeof L->ckdir);
    coord_job_path(c, r->id, "spec.json", L->specp, sizeof L->specp);
    coord_job_path(c, r->id, "summary.json", L->summary, sizeof L->summary);
    coord_job_path(c, r->id, "log", L->log, sizeof L->log);
    coord_job_path(c, r->id, "exit_code", L->ecp, sizeof L->ecp);
    coord_job_path(c, r->id, "pid", L->pidp, sizeof L->pidp);
    if (r->first_launch && !r->requeued && move_aside(c, r, L->dir, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    if (fs_mkdir_p(L->ckdir, 0755) != 0) {
        snprintf(L->err, sizeof L->err, "%.300s: %s", L->ckdir, strerror(errno));
        return LAUNCH_FAIL;
    }
    /* The checkpoint fence generation this attempt runs under (raised past it when it is
     * over: attempt_drained). */
    if (c->worker_caps.fence && !r->simulated &&
        ckptdir_fence_read(L->ckdir, r->spec->name, &L->fence, L->err, sizeof L->err) != 0)
        return LAUNCH_FAIL;
    return LAUNCH_GO_ON;
}

/* The spec the worker reads: checkpoints where the coordinator can find them, often
 * enough to resume. */
static int launch_spec(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    job_spec_t *sp = L->sp = malloc(sizeof *sp);
    if (!sp) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    *sp = *r->spec;
    if (strlen(L->ckdir) >= sizeof sp->checkpoint.dir) {
        snprintf(L->err, sizeof L->err, "checkpoint.dir: %.300s is longer than %zu bytes", L->ckdir,
                 sizeof sp->checkpoint.dir - 1);
        return LAUNCH_FAIL;
    }
    memcpy(sp->checkpoint.dir, L->ckdir, strlen(L->ckdir) + 1);
    if (sp->checkpoint.every_steps <= 0) sp->checkpoint.every_steps = c->cfg.default_checkpoint_steps;
    /* pacer-sim reads platform files on this machine: only from the platform directory,
     * checked again here (the submission was checked against the configuration of the
     * coordinator that took it), and given by real path. */
    if (r->simulated && simjob_resolve(c->sim_platforms, sp, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    L->text = spec_to_json(sp);
    if (!L->text || fs_atomic_write_fixed(L->specp, L->text, strlen(L->text), 0644) != 0) {
        snprintf(L->err, sizeof L->err, "%.300s: cannot write the spec: %s", L->specp,
                 L->text ? strerror(errno) : "out of memory");
        return LAUNCH_FAIL;
    }
    /* A stale exit status, or summary, from the previous attempt must not be read as this
     * one's (attempt_over takes an exit 0 with no summary for a run that did not finish). */
    unlink(L->ecp);
    unlink(L->summary);
    return LAUNCH_GO_ON;
}

/* A sharded job with a list of weights on the hostfile launcher: its hosts in the order
 * that puts the large shares on the hosts with the memory for them (hostmem_order, the
 * order memory admission counted on: api.c), written into the attempt's hostfile, which
 * Open MPI fills slot by slot from rank 0. The launcher's order when that holds or a
 * host's memory is not known. */
static void shard_host_order(coordinator_t *c, coord_run_t *r, launch_t *L)
{
    const int n = L->nn;
    if (launcher_kind(c->launcher) != LAUNCHER_HOSTFILE || r->spec->algorithm.shard.stage <= 0 || n < 2) return;
    hostmem_host_t *h = calloc((size_t)n, sizeof *h);
    int *order = calloc((size_t)n, sizeof *order);
    const char **was = calloc((size_t)n, sizeof *was);
    if (h && order && was) {
        pthread_mutex_lock(&c->lock);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < c->nadmit_hosts; k++)
                if (strcmp(c->admit_hosts[k].name, L->names[i]) == 0) h[i] = c->admit_hosts[k];
        pthread_mutex_unlock(&c->lock);
        if (hostmem_order(r->spec, L->world, h, n, order) == 2) {
            char text[512] = "";
            memcpy(was, L->names, (size_t)n * sizeof *was);
            for (int i = 0; i < n; i++) {
                L->names[i] = was[order[i]];
                size_t used = strlen(text);
                snprintf(text + used, sizeof text - used, "%s%s", i ? " " : "", L->names[i]);
            }
            L->reordered = 1;
            clog_printf("job %s: hosts in the order %s, so that its larger shards are on the hosts with the memory "
                        "for them",
                        r->id, text);
        }
    }
    free(h);
    free(order);
    free(was);
}

/* The hosts this attempt may use, and the world that fits them (elastic). A simulation
 * runs on simulated hosts, all inside one process here: the host table (the real
 * launcher's hosts) does not apply to it, and it runs the spec's world. */
static int launch_place(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    L->world = r->full_world;
    if (r->simulated) return LAUNCH_GO_ON;
    L->names = calloc((size_t)c->nhosts + 1, sizeof *L->names);
    if (!L->names) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    int usable_slots = 0, kept_all = 0;
    L->nn = run_usable(c, r, L->names, &usable_slots, &kept_all);
    if (kept_all) clog_printf("job %s: no usable host but those it left out for going silent: using them again", r->id);
    if (L->nn == 0) {
        /* Nowhere to run: wait for a host to come back (the probes run meanwhile). */
        r->phase = PH_BACKOFF;
        r->next_launch = now + c->cfg.host_probe_s;
        r->hplan = 0; /* it holds nothing while it waits: the policy's change is over */
        if (r->state != JOB_RESTARTING || !strstr(r->reason, "waiting for a host")) {
            char down[512];
            unusable_hosts(c, down, sizeof down);
            char why[sizeof r->reason];
            snprintf(why, sizeof why, "waiting for a host: none is usable (%s)", down);
            clog_printf("job %s: %s", r->id, why);
            run_set_state(c, r, JOB_RESTARTING, why);
        }
        return LAUNCH_WAIT;
    }
    int all_slots = c->slots_total;
    int placed_n = r->nplace > 0 ? placed_only(c, r, L->names, L->nn, &usable_slots, &all_slots) : 0;
    if (placed_n > 0) L->nn = placed_n;
    else if (r->nplace > 0) clog_printf("job %s: none of the hosts it was placed on is usable: any usable host", r->id);
    L->world = hosts_elastic_world(r->full_world, r->min_world, all_slots, usable_slots);
    if (r->world_cap > 0 && L->world > r->world_cap) L->world = r->world_cap;
    /* grown past its ask: one rank per lent slot that is still usable, at most the grow */
    if (r->world_grow > r->full_world && usable_slots > r->full_world)
        L->world = usable_slots < r->world_grow ? usable_slots : r->world_grow;
    shard_host_order(c, r, L);
    if (run_set_hosts(r, L->names, L->nn) != 0) {
        snprintf(L->err, sizeof L->err, "out of memory");
        return LAUNCH_FAIL;
    }
    L->rank_host = calloc((size_t)L->world, sizeof *L->rank_host);
    L->placed = L->rank_host &&
                launcher_rank_hosts(c->launcher, L->world, L->nn == c->nhosts && !L->reordered ? NULL : L->names, L->nn,
                                    L->rank_host) == 0;
    return LAUNCH_GO_ON;
}

/* A world other than the last attempt's is a resize (recorded, with its reason); then
 * dynamic batches: re-planned for the new world, or the first plan from stored profiles. */
static int launch_world(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    int world = L->world;
    int from = r->first_launch ? r->full_world : r->world;
    if (world != from || r->hplan) {
        char reason[sizeof r->resize_reason + 600], down[512];
        unusable_hosts(c, down, sizeof down);
        if (r->resize_reason[0]) snprintf(reason, sizeof reason, "%s", r->resize_reason);
        else snprintf(reason, sizeof reason, "%s", world < from ? "fewer slots are usable" : "more slots are usable");
        if (down[0] && world < r->full_world)
            snprintf(reason + strlen(reason), sizeof reason - strlen(reason), "; not usable: %s", down);
        r->world = world;
        record_resize(c, r, from, world, reason, now);
        if (world < from) drop_rank_keys(c, r, from, world);
        if (!r->first_launch && r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->rc) {
            int k = dynbatch_resize(c->rc, r->id, r->spec, workers_of(r, world), L->placed ? L->rank_host : NULL);
            if (k == JS_EREDIS) tickconn_broken(c, "resize plan");
        }
    }
    r->world = world;
    r->resize_reason[0] = 0;
    r->grow_armed = 0;
    r->launch_progress = r->progress_step;
    r->shrinking = 0;
    r->hplan = 0;

    /* Only where placement is known before the start (not under Slurm). Simulated ranks
     * (never placed) plan their own batches: the coordinator's plans arrive in real time,
     * which would make a deterministic simulation depend on this machine's load. */
    if (r->first_launch && r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->rc && L->placed) {
        int k = dynbatch_initial(c->rc, r->id, r->spec, workers_of(r, world), L->rank_host);
        if (k == JS_EREDIS) tickconn_broken(c, "initial plan");
        else if (k == 1) clog_printf("job %s: initial batch plan from stored profiles", r->id);
    }
    r->first_launch = 0;
    return LAUNCH_GO_ON;
}

/* A PBT trial's job that continues from a better trial (coordinator/experiment.c): its
 * hash's "adopt_from" names the trial's previous job, whose exploit.ckpt the experiment
 * linked from that trial's checkpoint; the worker takes it while the job has no
 * checkpoint of its own. The path is derived from the id, never read from Redis. */
static void launch_adopt(coordinator_t *c, coord_run_t *r, launch_t *L)
{
    if (!c->worker_caps.adopt || r->simulated || !c->rc) return;
    redisReply *x = redisCommand(c->rc, "HGET " KEY_JOB " adopt_from", r->id);
    const char *from = x ? reply_str(x) : NULL;
    struct stat st;
    if (from && job_id_valid(from) && coord_job_path(c, from, "exploit.ckpt", L->adopt, sizeof L->adopt) == 0 &&
        stat(L->adopt, &st) == 0)
        argv_add(&L->argv, "--adopt-checkpoint", L->adopt);
    if (x) freeReplyObject(x);
    else tickconn_broken(c, "adopt");
}

/* The worker's command; the launcher wraps it (mpirun, sbatch). */
static int launch_argv(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    (void)now;
    launch_argv_t *av = &L->argv;
    argv_add(av, c->worker, NULL);
    argv_add(av, "--spec", L->specp);
    argv_add(av, "--summary", L->summary);
    /* After a collapse: the checkpoint from before it (the worker saves it again as the
     * latest), and the halved learning rate from then on (run.h). */
    if (r->resume_before > 0 && c->worker_caps.collapse) {
        snprintf(L->before, sizeof L->before, "%ld", r->resume_before);
        argv_add(av, "--resume-before", L->before);
    } else {
        argv_add(av, "--resume", NULL);
    }
    launch_adopt(c, r, L);
    if (r->lr_scale < 1.0 && c->worker_caps.collapse) {
        snprintf(L->scale, sizeof L->scale, "%.17g", r->lr_scale);
        argv_add(av, "--lr-scale", L->scale);
    }
    if (c->worker_caps.world) {
        /* A rank that finds itself in another world (alone, when the launch did not
         * connect the ranks) stops instead of training on its own; fewer ranks than the
         * spec asks (an elastic restart) share its global batch. */
        snprintf(L->wtext, sizeof L->wtext, "%d", r->world);
        argv_add(av, "--world", L->wtext);
    }
    if (c->worker_caps.fence && !r->simulated) {
        snprintf(L->ftext, sizeof L->ftext, "%lld", L->fence);
        argv_add(av, "--fence", L->ftext);
    }
    /* An uploaded model: the worker reads its bytes from the state directory's models/
     * when it can, else from Redis (worker/modelfetch.h). */
    if (r->spec->model_sha256[0]) {
        modelstore_dir(c, L->models_dir, sizeof L->models_dir);
        argv_add(av, "--models-dir", L->models_dir);
    }
    if (c->worker_caps.data_cache && c->data_cache[0]) argv_add(av, "--data-cache", c->data_cache);
    /* The roots the spec's dataset.path was checked against: the worker reads nothing
     * that leaves them (a link swapped in after the check: common/dataroot.h). */
    const char *roots[COORD_DATA_ROOTS_MAX];
    int nroots = c->worker_caps.data_root ? coord_data_roots_get(c, roots) : 0;
    for (int i = 0; i < nroots; i++) argv_add(av, "--data-root", roots[i]);
    /* The trained model as ONNX beside the checkpoints, for GET /api/v1/jobs/{id}/model.onnx;
     * a simulation's ranks learn nothing worth exporting. */
    if (c->worker_caps.model_onnx && !r->simulated &&
        coord_job_path(c, r->id, "model.onnx", L->onnx, sizeof L->onnx) == 0)
        argv_add(av, "--model-onnx", L->onnx);
    /* and as safetensors, for GET /api/v1/jobs/{id}/model.safetensors */
    if (c->worker_caps.model_st && !r->simulated &&
        coord_job_path(c, r->id, "model.safetensors", L->st, sizeof L->st) == 0)
        argv_add(av, "--model-safetensors", L->st);
    if (c->worker_caps.redis) {
        argv_add(av, "--redis", c->worker_redis_url);
        argv_add(av, "--job", r->id);
        if (c->worker_password_file[0]) argv_add(av, "--redis-password-file", c->worker_password_file);
    }
    if (av->full) {
        snprintf(L->err, sizeof L->err, "the worker's command has more than %d arguments", LAUNCH_ARGV_MAX);
        return LAUNCH_FAIL;
    }
    return LAUNCH_GO_ON;
}

/* The launcher starts the attempt; the run's per-attempt state starts afresh. */
static int launch_start(coordinator_t *c, coord_run_t *r, launch_t *L, double now)
{
    launch_req_t req = {
        .id = r->id,
        .attempt = r->attempts + 1,
        .world = r->world,
        .argv = L->argv.v,
        .dir = L->dir,
        .log_path = L->log,
        .exit_code_path = L->ecp,
        .handle_path = L->pidp,
        /* All hosts usable: the launcher's own list (the hostfile as given), unless the
         * hosts were reordered for a sharded job's shares (shard_host_order). */
        .hosts = L->names && (L->nn != c->nhosts || L->reordered) ? L->names : NULL,
        .nhosts = L->nn,
    };
    if (launcher_start(r->launcher, &req, &r->h, L->err, sizeof L->err) != 0) return LAUNCH_FAIL;
    char what[64];
    r->attempts++;
    /* A new attempt: its health is unknown until its rank 0 reports (the previous
     * attempt's verdict leaves the node hash, so it is not taken for this one's). */
    r->resume_before = 0;
    r->health[0] = r->last_health_seen[0] = 0;
    r->collapse_announced = 0;
    if (c->rc) {
        char nkey[160];
        snprintf(nkey, sizeof nkey, KEY_JOB_NODE, r->id, 0);
        redisReply *x = redisCommand(c->rc, "HDEL %s %s", nkey, NODE_HEALTH);
        if (!x) tickconn_broken(c, "health");
        else freeReplyObject(x);
    }
    r->launched_at = now;
    r->phase = PH_ACTIVE;
    r->kill_reason = KILL_NONE;
    r->sigkilled = 0;
    r->fence = L->fence;
    /* What the last attempt's stop named belongs to it. */
    r->stale_rank = -1;
    r->stale_host[0] = r->stall_text[0] = r->silent_host[0] = 0;
    clear_stall(r);
    if (r->started <= 0) r->started = now;
    clog_printf("job %s: attempt %d started (%s, %d rank%s)", r->id, r->attempts,
                launcher_describe(&r->h, what, sizeof what), r->world, r->world == 1 ? "" : "s");
    run_set_state(c, r, JOB_RUNNING, r->state == JOB_RESTARTING ? r->reason : "");
    return LAUNCH_GO_ON;
}

/* A phase that fails: the job's log and the coordinator's say why, and the attempt ends
 * lost (finish_attempt decides whether it is tried again). */
static void launch_failed(coordinator_t *c, coord_run_t *r, const launch_t *L, double now)
{
    FILE *lf = fopen(L->log, "a");
    if (lf) {
        fprintf(lf, "pacer-coordinator: cannot start the job: %s\n", L->err);
        fclose(lf);
    }
    clog_printf("job %s: cannot start: %s", r->id, L->err);
    memset(&r->h, 0, sizeof r->h);
    r->attempts++;
    finish_attempt(c, r, SV_LOST, 0, now);
}

static const struct {
    const char *name;
    int (*fn)(coordinator_t *c, coord_run_t *r, launch_t *L, double now);
} LAUNCH_PHASES[] = {
    {"paths", launch_paths}, {"spec", launch_spec}, {"place", launch_place},
    {"world", launch_world}, {"argv", launch_argv}, {"start", launch_start},
};

static void launch(coordinator_t *c, coord_run_t *r, double now)
{
    launch_t L = {.fence = 0}; /* on the stack, as its paths were before */
    int rc = LAUNCH_GO_ON;
    for (size_t i = 0; rc == LAUNCH_GO_ON && i < sizeof LAUNCH_PHASES / sizeof LAUNCH_PHASES[0]; i++)
        rc = LAUNCH_PHASES[i].fn(c, r, &L, now);
    /* the one cleanup, whichever phase ended it */
    launch_free(&L);
    if (rc == LAUNCH_FAIL) launch_failed(c, r, &L, now);
}

/* The first launch, after the pre-flight benchmark of the hosts when one is due
 * (preflight.h): the job waits in PH_PREFLIGHT while a round runs, so that its first
 * batch plan and its hosts' states come from the measured speeds. */
void run_first_launch(coordinator_t *c, coord_run_t *r, double now)
{
    if (r->first_launch && !r->simulated && !r->preflight_done) {
        int k = preflight_for_job(c, r->spec, r->id, now);
        if (k == 1) r->preflight_done = 1;
        if (k != 0) {
            if (r->phase != PH_PREFLIGHT) {
                r->phase = PH_PREFLIGHT;
                clog_printf("job %s: waiting for the pre-flight benchmark of the hosts", r->id);
                run_set_state(c, r, JOB_RUNNING, "pre-flight: benchmarking the hosts");
            }
            return;
        }
    }
    launch(c, r, now);
}

void run_poll(coordinator_t *c, coord_run_t *r, double now, launch_status_t *st)
{
    char ecp[JPATH], log[JPATH];
    coord_job_path(c, r->id, "exit_code", ecp, sizeof ecp);
    coord_job_path(c, r->id, "log", log, sizeof log);
    launcher_poll(r->launcher, &r->h, ecp, log, now, st);
}

/* Has the attempt ended? While the resource manager still queues it, no heartbeat is
 * due: the grace period starts when it runs. */
static int poll_ended(coordinator_t *c, coord_run_t *r, double now, sv_outcome_t *oc, int *code, char *lost,
                      size_t lostlen)
{
    launch_status_t st;
    run_poll(c, r, now, &st);
    if (st.pending) r->launched_at = now;
    if (!st.ended) return 0;
    if (st.lost_hosts[0])
        clog_printf("job %s: lost host%s %s", r->id, strchr(st.lost_hosts, ' ') ? "s" : "", st.lost_hosts);
    snprintf(lost, lostlen, "%s", st.lost_hosts);
    *oc = st.outcome;
    *code = st.code;
    return 1;
}

void run_kill(coordinator_t *c, coord_run_t *r, kill_reason_t why, double now)
{
    r->kill_reason = why;
    r->phase = PH_KILLING;
    r->kill_deadline = now + c->cfg.kill_grace_s;
    /* A drain gives the ranks until its deadline to reach their step boundary, however
     * long a step takes (a step longer than --kill-grace would lose everything since the
     * last checkpoint), and no longer than that, whatever --kill-grace says. */
    const host_t *dh = why == KILL_DRAIN ? hosts_find(c, r->drain_host) : NULL;
    if (dh && dh->drain_deadline > 0) r->kill_deadline = dh->drain_deadline > now + 1 ? dh->drain_deadline : now + 1;
    /* A grow's notice (grow_check) and a preemption's wait for the ranks' step boundary
     * as long as a step may take, not --kill-grace alone: SIGKILLed, they would lose the
     * work since their last periodic checkpoint. */
    int notice = why == KILL_DRAIN || why == KILL_PREEMPT || r->stop_notice;
    if (why != KILL_DRAIN && notice && c->cfg.kill_grace_s < RUN_NOTICE_STOP_S)
        r->kill_deadline = now + RUN_NOTICE_STOP_S;
    r->stop_notice = 0;
    r->sigkilled = 0;
    /* A drain's, a grow's and a preemption's stop (requeue or shrink) is a notice
     * (launcher_notice: forwarded to every rank and nothing torn down), bounded by the
     * deadline above; the others are mpirun's SIGTERM. */
    if (notice) launcher_notice(r->launcher, &r->h);
    else launcher_stop(r->launcher, &r->h, 0);
    char what[64];
    launcher_describe(&r->h, what, sizeof what);
    if (why == KILL_CANCEL) clog_printf("job %s: cancelling (stopping %s)", r->id, what);
    else if (why == KILL_RESIZE)
        clog_printf("job %s: stopping %s%s to resize: %s", r->id, what, notice ? " with notice" : "", r->resize_reason);
    else if (why == KILL_DRAIN)
        clog_printf("job %s: host %s drains: stopping %s with notice, to resume elsewhere", r->id, r->drain_host, what);
    else if (why == KILL_STALL) clog_printf("job %s: stalled: %s; stopping %s", r->id, r->stall_text, what);
    else if (why == KILL_PREEMPT)
        clog_printf("job %s: preempted by %s, of a higher priority: stopping %s, to be requeued", r->id,
                    r->preempted_by, what);
    else
        clog_printf("job %s: no heartbeat from rank %d%s%s%s for %.0f s; stopping %s", r->id, r->stale_rank,
                    r->stale_host[0] ? " (" : "", r->stale_host, r->stale_host[0] ? ")" : "", r->stale_s, what);
}

/* A preempted attempt has stopped: the job goes back to the queue's front (jobstore_requeue)
 * and this run ends without writing its state (the queue owns the job again). The next
 * claim resumes it from its checkpoint (launch passes --resume; its directory is kept). A
 * cancel that came first wins: the job is then finished as cancelled. */
/* Before a requeue: the stopped attempt's processes reaped, its probes and stall let go. */
static void requeue_detach(coordinator_t *c, coord_run_t *r)
{
    if (r->launcher) launcher_reap(r->launcher, &r->h);
    run_stop_probes(c, r);
    clear_stall(r);
    r->kill_reason = KILL_NONE;
}

/* After a requeue's Redis call (rc: jobstore_requeue's): 1 ends this run (the queue owns
 * the job again); a cancel that came meanwhile, or Redis gone, is a plain stop, which a
 * later relaunch resumes. */
static void requeue_settle(coordinator_t *c, coord_run_t *r, int rc, const char *why, double now)
{
    if (rc == 1) {
        clog_printf("job %s: QUEUED: %s", r->id, why);
        r->phase = PH_DONE;
        r->finished = now;
        r->dirty = 0;
        return;
    }
    finish_attempt(c, r, r->cancel_requested || rc == 0 ? SV_CANCELLED : SV_STALE, 0, now);
}

static void requeue(coordinator_t *c, coord_run_t *r, double now)
{
    requeue_detach(c, r);
    char why[128];
    snprintf(why, sizeof why, "preempted by %s at %.3f, of a higher priority: requeued to resume from its checkpoint",
             r->preempted_by, now);
    int rc = c->rc ? tickconn_check(c, jobstore_requeue(c->rc, r->id, r->preempted_by, why, now), "requeue") : JS_EREDIS;
    requeue_settle(c, r, rc, why, now);
}

/* A drain's stop is over (the ranks checkpointed on notice): the interruption, then a
 * relaunch on the hosts still usable, or, with fewer free usable slots than the job needs
 * (a rigid job's world, an elastic one's minimum: drain_wait_slots), back to the queue's
 * front with a reason naming the drain, to resume from that checkpoint when the scheduler
 * finds the slots (schedule.c holds it while fewer are usable). */
static void drained_over(coordinator_t *c, coord_run_t *r, double now)
{
    char reason[sizeof r->resize_reason];
    snprintf(reason, sizeof reason, "host %.200s drains", r->drain_host);
    drain_interruption(c, r, "drain", r->drain_host, now);
    if (r->sigkilled) /* killed at the drain's deadline, before its step boundary */
        json_object_set_new(json_array_get(r->interruptions, json_array_size(r->interruptions) - 1), "deadline_passed",
                            json_true());
    int need = drain_wait_slots(c, r, run_slots_used(c));
    if (need <= 0 || !c->rc) {
        relaunch_soon(c, r, SV_EXITED, NOTICE_EXIT_STATUS, reason, now);
        return;
    }
    requeue_detach(c, r);
    run_persist(c, r); /* its interruption, before the queue owns the job again */
    char why[sizeof r->reason];
    drain_queue_reason(c, r, need, why, sizeof why);
    int rc = tickconn_check(c, jobstore_requeue_drained(c->rc, r->id, r->drain_host, need, why, now), "requeue");
    requeue_settle(c, r, rc, why, now);
}

/* The ranks' waiting reports and heartbeats (ranks[0..n), read this tick): what the job
 * shows, when it counts as stalled, and at a stall its silent ranks' one host. */
static void take_stall(coord_run_t *r, const stall_rank_t *ranks, int n, double now)
{
    stall_verdict_t v;
    char sig[sizeof r->stall_sig];
    stall_assess(ranks, n, now, &v);
    stall_signature(ranks, n, now, sig, sizeof sig);
    if (!v.waiting) sig[0] = 0;
    if (strcmp(sig, r->stall_sig) != 0) {
        /* Written when which ranks wait or are silent changes, not as the seconds pass:
         * the object holds times, and the API words it (stall_text) when asked. */
        json_decref(r->stall);
        r->stall = v.waiting ? stall_json(ranks, n, now, now) : NULL;
        snprintf(r->stall_sig, sizeof r->stall_sig, "%s", sig);
        r->dirty = 1;
        if (r->stall) {
            char text[sizeof r->stall_text];
            stall_text(r->stall, now, text, sizeof text);
            clog_printf("job %s: %s", r->id, text);
        }
    }
    if (!v.stalled) {
        r->stall_seen = 0;
        return;
    }
    if (r->stall_seen <= 0) r->stall_seen = now;
    stall_text(r->stall, now, r->stall_text, sizeof r->stall_text);
    /* The host to blame: the one every silent rank is on (none when they are on several,
     * or none is silent: everyone waits, so the network probe must tell). */
    r->silent_host[0] = 0;
    int several = 0;
    for (int i = 0; i < n; i++) {
        if (ranks[i].waiting[0] || now - ranks[i].heartbeat <= STALL_SILENT_S) continue;
        if (!ranks[i].host[0] || (r->silent_host[0] && strcmp(r->silent_host, ranks[i].host) != 0)) several = 1;
        else snprintf(r->silent_host, sizeof r->silent_host, "%s", ranks[i].host);
    }
    if (several) r->silent_host[0] = 0;
}

/* A string field of an HMGET reply, "" when absent. */
static const char *elem_str(const redisReply *rep, size_t i)
{
    const char *s = rep->type == REDIS_REPLY_ARRAY && i < rep->elements ? reply_str(rep->element[i]) : NULL;
    return s ? s : "";
}

/* Reads cancel_requested and (when check_beats) each rank's heartbeat, host and waiting
 * report: a stale heartbeat sets r->stale_rank (and its host), the reports r's stall
 * (take_stall). A failed read changes nothing: unknown is neither stale nor stalled. */
static void read_flags(coordinator_t *c, coord_run_t *r, int check_beats, double now)
{
    if (!c->rc) return;
    char key[160];
    snprintf(key, sizeof key, KEY_JOB, r->id);
    redisAppendCommand(c->rc, "HGET %s cancel_requested", key);
    int nb = check_beats ? r->world : 0;
    stall_rank_t *ranks = nb ? calloc((size_t)nb, sizeof *ranks) : NULL;
    if (nb && !ranks) nb = 0;
    for (int k = 0; k < nb; k++) {
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, k);
        redisAppendCommand(c->rc, "HMGET %s %s %s %s %s %s", key, RECORD_FIELDS[RF_HEARTBEAT].name,
                           RECORD_FIELDS[RF_HOST].name, NODE_WAITING, NODE_WAITING_PEER, NODE_WAITING_SINCE);
    }
    /* Rank 0 judges whether the run still learns (worker/health.h). */
    if (nb) {
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, 0);
        redisAppendCommand(c->rc, "HGET %s %s", key, NODE_HEALTH);
        /* The progress of a training rank (a parameter server counts updates, not
         * steps): when the job should end (the scheduler's estimates, schedule.c). */
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, spec_is_async(r->spec) && nb > 1 ? 1 : 0);
        redisAppendCommand(c->rc, "HMGET %s %s %s", key, RECORD_FIELDS[RF_STEP].name,
                           RECORD_FIELDS[RF_TOTAL_STEPS].name);
    }
    int stale = -1;
    double stale_age = 0;
    double baseline = r->launched_at > c->redis_up_since ? r->launched_at : c->redis_up_since;
    for (int k = 0; k < nb + 1 + 2 * (nb > 0); k++) {
        redisReply *rep = NULL;
        if (redisGetReply(c->rc, (void **)&rep) != REDIS_OK || !rep) {
            tickconn_broken(c, "heartbeats");
            free(ranks);
            return;
        }
        if (k == 0) {
            if (reply_str(rep) && reply_str(rep)[0]) r->cancel_requested = 1;
        } else if (k == nb + 2) {
            long long step = atoll(elem_str(rep, 0)), total = atoll(elem_str(rep, 1));
            if (step > 0 && total > 0) {
                r->progress_step = step < total ? step : total;
                r->progress_total = total;
            }
        } else if (k == nb + 1) {
            /* Only a change is parsed: the worker rewrites the same text every round. */
            const char *hs = reply_str(rep);
            if (hs && rep->len < 4096 && strcmp(hs, r->last_health_seen) != 0) {
                snprintf(r->last_health_seen, sizeof r->last_health_seen, "%s", hs);
                json_t *h = json_loadb(hs, rep->len, 0, NULL);
                run_health(c, r, h, now);
                json_decref(h);
            }
        } else {
            stall_rank_t *sr = &ranks[k - 1];
            double hb = atof(elem_str(rep, 0));
            if (hb > 0) r->redis_reported = 1;
            double t = hb > baseline ? hb : baseline;
            sr->rank = k - 1;
            sr->heartbeat = t;
            snprintf(sr->host, sizeof sr->host, "%s", elem_str(rep, 1));
            /* A report is only what the worker writes: a name, a rank or nothing, a time. */
            const char *op = elem_str(rep, 2), *peer = elem_str(rep, 3);
            double since = atof(elem_str(rep, 4));
            /* A report older than the attempt is a killed rank's (its successor deletes
             * it at its first report). */
            if (op[0] && strlen(op) < sizeof sr->waiting && since >= r->launched_at) {
                snprintf(sr->waiting, sizeof sr->waiting, "%s", op);
                sr->waiting_since = since;
                sr->peer = peer[0] ? atoi(peer) : -1;
                if (sr->peer >= r->world) sr->peer = -1;
            }
            if (now - t > c->cfg.heartbeat_timeout_s && (stale < 0 || now - t > stale_age)) {
                stale = k - 1;
                stale_age = now - t;
            }
        }
        freeReplyObject(rep);
    }
    /* Only a read of the heartbeats says anything about them: the probing phase reads
     * the cancel flag alone, and the stale rank it found must survive until the reason
     * names it. */
    if (check_beats) {
        r->stale_rank = stale;
        if (stale >= 0) {
            r->stale_s = stale_age;
            snprintf(r->stale_host, sizeof r->stale_host, "%s", ranks[stale].host);
        }
        if (nb) take_stall(r, ranks, nb, now);
    }
    free(ranks);
}

/* ---- the end of an attempt ------------------------------------------------------------
 * mpirun has ended, but its ranks on other hosts may not have yet (the remote daemons tear
 * them down a moment later, and a rank may still write a checkpoint). Nothing follows an
 * attempt (its slots freed, a requeue, a relaunch, a restart, a final state) until its
 * ranks are gone (launcher_drain_start/poll: waited for, killed through the remote shell
 * after the kill grace) and the checkpoint fence is past its generation, so that a rank
 * the coordinator could not see go never replaces the checkpoint the next attempt reads
 * (common/ckptdir.h). Meanwhile the run stays in PH_KILLING, its slots held. */
static int attempt_drained(coordinator_t *c, coord_run_t *r, double now);
static void attempt_over(coordinator_t *c, coord_run_t *r, double now);

static double drain_grace(const coordinator_t *c) { return c->cfg.kill_grace_s < 1 ? 1 : c->cfg.kill_grace_s; }

static void begin_drain(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, const char *lost, double now)
{
    char specp[JPATH];
    coord_job_path(c, r->id, "spec.json", specp, sizeof specp);
    r->end_oc = oc;
    r->end_code = code;
    snprintf(r->end_lost, sizeof r->end_lost, "%s", lost ? lost : "");
    r->phase = PH_KILLING;
    r->draining = 1;
    r->fence_deadline = 0;
    /* The attempt's own hosts (every rank's command line names its spec). */
    launcher_drain_start(r->launcher, &r->h, r->id, (const char *const *)r->hosts, r->nhosts, specp, drain_grace(c),
                         now, &r->drain);
    if (attempt_drained(c, r, now)) attempt_over(c, r, now);
}

/* 1 once no rank of the attempt is left (or none can be waited for) and the fence is up. */
static int attempt_drained(coordinator_t *c, coord_run_t *r, double now)
{
    if (!launcher_drain_poll(r->launcher, &r->h, &r->drain, now)) return 0;
    if (!c->worker_caps.fence || r->simulated) return 1;
    char ckdir[JPATH], err[512];
    coord_job_path(c, r->id, "checkpoints", ckdir, sizeof ckdir);
    if (r->fence_deadline <= 0) r->fence_deadline = now + drain_grace(c);
    /* A publication under way holds the lock for a rename: the next tick tries again. */
    int k = ckptdir_fence_raise(ckdir, r->spec->name, r->fence, err, sizeof err);
    if (k == 1 && now < r->fence_deadline) return 0;
    if (k != 0)
        clog_printf("job %s: the checkpoint fence stays at %lld: %s", r->id, r->fence,
                    k == 1 ? "a rank of the ended attempt holds its lock" : err);
    return 1;
}

/* The exit_status of the summary rank 0 wrote as its last act (worker/main.c
 * phase_report; launch_spec removes the previous attempt's): -1 when there is none. */
static int summary_exit_status(coordinator_t *c, const coord_run_t *r)
{
    char path[JPATH];
    struct stat st;
    coord_job_path(c, r->id, "summary.json", path, sizeof path);
    if (stat(path, &st) != 0) return -1;
    /* The worker's file: a summary is a few KiB; anything far larger is not read. */
    json_t *sum = st.st_size < (1 << 22) ? json_load_file(path, 0, NULL) : NULL;
    json_t *v = json_object_get(sum, "exit_status");
    /* unreadable, or without the field: a summary, but no verdict to go by */
    int k = json_is_integer(v) && json_integer_value(v) >= 0 ? (int)json_integer_value(v) : 1;
    json_decref(sum);
    return k;
}

/* An exit status of 0 is a finished run only with the summary: mpirun has been seen to
 * exit 0 after losing a node's daemon mid-run, and a job must not then be SUCCEEDED with
 * its training unfinished. The other way round, a summary whose ranks all agreed on 0 is
 * a finished run however mpirun ended: a SIGTERM to mpirun that came after the last step
 * (a batch script's notice, a user's kill) makes it exit 1 with nothing left to do. */
static sv_outcome_t exit_checked(coordinator_t *c, const coord_run_t *r, sv_outcome_t oc, int *code)
{
    if (oc == SV_EXITED && *code == 0) {
        if (summary_exit_status(c, r) >= 0) return oc;
        clog_printf("job %s: attempt %d exited 0 but its summary.json is missing: taken as unfinished", r->id,
                    r->attempts);
        return SV_UNFINISHED;
    }
    if ((oc == SV_EXITED && *code != NOTICE_EXIT_STATUS) || oc == SV_SIGNALLED) {
        if (summary_exit_status(c, r) != 0) return oc;
        clog_printf("job %s: attempt %d: mpirun %s %d after every rank finished (the summary's exit_status is 0): "
                    "taken as finished",
                    r->id, r->attempts, oc == SV_EXITED ? "exited" : "was killed by signal", *code);
        *code = 0;
        return SV_EXITED;
    }
    return oc;
}

/* The attempt is over everywhere: what its end (and why it was stopped) calls for. */
static void attempt_over(coordinator_t *c, coord_run_t *r, double now)
{
    int code = r->end_code;
    sv_outcome_t oc = exit_checked(c, r, r->end_oc, &code);
    const char *lost = r->end_lost;
    kill_reason_t why = r->kill_reason;
    r->draining = 0;
    /* Stopped on notice from outside (SIGTERM to its ranks or to mpirun): an interruption,
     * whatever comes next (a relaunch here or, a host gone, elsewhere) */
    if (why == KILL_NONE && drain_noticed(c, r, oc, code)) {
        drain_interruption(c, r, "notice", NULL, now);
        oc = SV_EXITED;
        code = NOTICE_EXIT_STATUS;
    } else if (why != KILL_DRAIN) { /* a drain's stop reads its note below */
        drain_forget_note(c, r);
    }
    if (why == KILL_NONE) { /* it ended on its own */
        note_silent(r, NULL);
        if (should_probe(c, r, oc, code)) begin_probing(c, r, oc, code, lost, now);
        else finish_attempt(c, r, oc, code, now);
        return;
    }
    /* The stops for silence name the host that went silent; any other end of an attempt
     * breaks the row (supervise_note_silent). */
    note_silent(r, why == KILL_STALE ? r->stale_host : why == KILL_STALL ? r->silent_host : NULL);
    if (why == KILL_CANCEL) finish_attempt(c, r, SV_CANCELLED, code, now);
    else if (why == KILL_PREEMPT && oc == SV_EXITED && code == 0)
        finish_attempt(c, r, oc, code, now); /* it finished before the stop reached it */
    else if (why == KILL_PREEMPT) requeue(c, r, now);
    else if (why == KILL_RESIZE && oc == SV_EXITED && code == 0)
        finish_attempt(c, r, oc, code, now); /* it finished before the stop reached it */
    else if (why == KILL_RESIZE) relaunch_soon(c, r, oc, code, r->resize_reason, now);
    else if (why == KILL_DRAIN && oc == SV_EXITED && code == 0)
        finish_attempt(c, r, oc, code, now); /* it finished before the stop reached it */
    else if (why == KILL_DRAIN) drained_over(c, r, now);
    else {
        sv_outcome_t sv = why == KILL_STALL ? SV_STALLED : SV_STALE;
        if (should_probe(c, r, sv, r->stale_rank)) begin_probing(c, r, sv, r->stale_rank, lost, now);
        else finish_attempt(c, r, sv, r->stale_rank, now);
    }
}

void run_step(coordinator_t *c, coord_run_t *r, double now)
{
    sv_outcome_t oc;
    int code = 0;
    char lost[512];
    switch (r->phase) {
    case PH_ACTIVE:
        if (poll_ended(c, r, now, &oc, &code, lost, sizeof lost)) {
            begin_drain(c, r, oc, code, lost, now);
            break;
        }
        read_flags(c, r, c->worker_caps.redis, now);
        if (r->cancel_requested) {
            run_kill(c, r, KILL_CANCEL, now);
        } else if (r->stale_rank >= 0) {
            run_kill(c, r, KILL_STALE, now);
        } else if (r->stall_seen > 0 && now - r->stall_seen >= STALL_CONFIRM_S) {
            run_kill(c, r, KILL_STALL, now);
        } else if (drain_host_of(c, r)) {
            snprintf(r->drain_host, sizeof r->drain_host, "%s", drain_host_of(c, r));
            run_kill(c, r, KILL_DRAIN, now);
        } else if (r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->rc && !r->simulated &&
                   now - r->last_plan >= PLAN_PERIOD_S) {
            r->last_plan = now;
            int k = dynbatch_replan(c->rc, r->id, r->spec, workers_of(r, r->world));
            if (k == JS_EREDIS) tickconn_broken(c, "batch plan");
        }
        if (r->phase == PH_ACTIVE) grow_check(c, r, now);
        if (now - r->last_log_check >= 1.0) {
            char log[JPATH];
            r->last_log_check = now;
            coord_job_path(c, r->id, "log", log, sizeof log);
            if (log_bound(log, LAUNCH_LOG_MAX) == 1) clog_printf("job %s: log rotated into log.1", r->id);
        }
        break;
    case PH_KILLING:
        if (r->draining) {
            if (attempt_drained(c, r, now)) attempt_over(c, r, now);
        } else if (poll_ended(c, r, now, &oc, &code, lost, sizeof lost)) {
            begin_drain(c, r, oc, code, lost, now);
        } else if (now >= r->kill_deadline && !r->sigkilled) {
            if (r->kill_reason == KILL_DRAIN)
                clog_printf("job %s: the drain of %s is past its deadline and the job still runs: SIGKILL (it "
                            "resumes from its last checkpoint)",
                            r->id, r->drain_host);
            else clog_printf("job %s: still running %.0f s after SIGTERM; SIGKILL", r->id, c->cfg.kill_grace_s);
            launcher_stop(r->launcher, &r->h, 1);
            r->sigkilled = 1;
        }
        break;
    case PH_PROBING:
        read_flags(c, r, 0, now);
        if (r->cancel_requested) finish_attempt(c, r, SV_CANCELLED, 0, now);
        else after_probing(c, r, now);
        break;
    case PH_PREFLIGHT:
        read_flags(c, r, 0, now);
        if (r->cancel_requested) finish_attempt(c, r, SV_CANCELLED, 0, now);
        else if (!preflight_busy(c)) run_first_launch(c, r, now);
        break;
    case PH_BACKOFF:
        read_flags(c, r, 0, now);
        if (r->cancel_requested) {
            finish_attempt(c, r, SV_CANCELLED, 0, now);
        } else if (now >= r->next_launch) {
            launch(c, r, now);
        }
        break;
    case PH_DONE: break;
    }
    if (r->dirty) run_persist(c, r);
}

static const char *hstr(json_t *h, const char *key);

/* A requeued job's interruptions so far (its record's), which its next attempts extend:
 * without them each claim would start the list over. */
static void adopt_history(coordinator_t *c, coord_run_t *r)
{
    json_t *h = NULL;
    if (!c->rc || tickconn_check(c, jobstore_get(c->rc, r->id, &h), "job read") != JS_OK) return;
    drain_adopt_interruptions(r, hstr(h, "interruptions"), hstr(h, "interruptions_total"));
    json_decref(h);
}

int run_claimed(coordinator_t *c, const run_claim_t *k, const job_spec_t *spec, double now, coord_run_t **out)
{
    *out = NULL;
    coord_run_t *r = run_new(c, k->id);
    if (!r) {
        clog_printf("job %s: out of memory", k->id);
        return -1;
    }
    *r->spec = *spec;
    r->world = r->full_world = k->world;
    r->min_world = k->min_world ? k->min_world : 1;
    snprintf(r->owner, sizeof r->owner, "%s", k->owner);
    r->requeued = k->requeued;
    if (k->requeued) adopt_history(c, r);
    r->started = now;
    r->first_launch = 1;
    r->stale_rank = -1;
    run_bind(c, r);
    if (!k->bad && !r->launcher) {
        fail_unsimulated(c, r, now);
        return 0;
    }
    if (k->bad) {
        r->phase = PH_DONE;
        r->finished = now;
        clog_printf("job %s: FAILED: %s", k->id, k->err);
        run_set_state(c, r, JOB_FAILED, k->err);
        return 0;
    }
    *out = r;
    return 0;
}

/* A field of a job hash read with jobstore_get, "" when absent. */
static const char *hstr(json_t *h, const char *key)
{
    const char *v = json_string_value(json_object_get(h, key));
    return v ? v : "";
}

/* The "hosts" and "resizes" fields of an adopted job (JSON written by run_persist;
 * anything else is ignored: the next launch chooses hosts again). */
static void adopt_hosts_and_resizes(coord_run_t *r, const char *hosts, const char *resizes)
{
    json_t *h = json_loads(hosts, 0, NULL);
    size_t n = json_is_array(h) ? json_array_size(h) : 0;
    if (n > 0 && n <= LAUNCH_MAX_HOSTS) {
        const char **names = calloc(n, sizeof *names);
        size_t k = 0;
        for (size_t i = 0; names && i < n; i++) {
            const char *v = json_string_value(json_array_get(h, i));
            if (v && strlen(v) < 256) names[k++] = v;
        }
        if (names && k == n) run_set_hosts(r, names, (int)k);
        free(names);
    }
    json_decref(h);
    json_t *l = json_loads(resizes, 0, NULL);
    if (json_is_array(l) && json_array_size(l) <= RUN_RESIZES_KEPT) {
        json_decref(r->resize_log);
        r->resize_log = l;
        r->resizes = (int)json_array_size(l);
    } else {
        json_decref(l);
    }
}

/* The "placement" field of an adopted job (JSON written by run_persist from set_place):
 * its hosts become r->place again, so a job the policy placed grows only where the policy
 * puts it (grow_check, launch) after a restart as before it. Anything else (not an object
 * of host lists, too many hosts or names too long) leaves it unplaced: its attempts then
 * use any usable host, as a job started without a class-aware policy. */
static void adopt_placement(coord_run_t *r, const char *text)
{
    json_t *p = text[0] ? json_loads(text, 0, NULL) : NULL, *by = json_object_get(p, "hosts_by_class"), *list;
    const char *cls;
    size_t n = 0;
    int ok = json_is_object(by) && json_is_string(json_object_get(p, "reason"));
    json_object_foreach(by, cls, list)
    {
        ok &= json_is_array(list);
        n += json_array_size(list);
    }
    char **names = ok && n > 0 && n <= LAUNCH_MAX_HOSTS ? calloc(n, sizeof *names) : NULL;
    int k = 0;
    json_object_foreach(names ? by : NULL, cls, list)
    {
        for (size_t i = 0; i < json_array_size(list); i++) {
            const char *v = json_string_value(json_array_get(list, i));
            if (v && strlen(v) < 256 && (names[k] = strdup(v))) k++;
        }
    }
    if (!names || (size_t)k != n) {
        for (int i = 0; names && i < k; i++) free(names[i]);
        free(names);
        json_decref(p);
        return;
    }
    r->place = names;
    r->nplace = k;
    r->placement = p;
}

/* After a (re)start: every job Redis says is RUNNING or RESTARTING becomes a run again:
 * adopted when its process lives, finished when it left an exit status, resumed when
 * it died without one. */
void run_adopt(coordinator_t *c, double now)
{
    redisReply *m = redisCommand(c->rc, "SMEMBERS %s", KEY_ACTIVE);
    if (!m || m->type != REDIS_REPLY_ARRAY) {
        if (m) freeReplyObject(m);
        tickconn_broken(c, "adopt");
        return;
    }
    for (size_t i = 0; i < m->elements && c->rc; i++) { /* a broken connection ends the pass */
        const char *id = reply_str(m->element[i]);
        if (!id || !job_id_valid(id)) continue;
        int known = 0;
        for (int k = 0; k < c->nruns; k++) known |= strcmp(c->runs[k]->id, id) == 0;
        if (known) continue;
        json_t *h = NULL;
        int rc = tickconn_check(c, jobstore_get(c->rc, id, &h), "adopt");
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
        int most = 0;
        r->min_world = 1;
        if (!bad) spec_worlds(r->spec, &r->full_world, &r->min_world, &most);
        /* The attempt's own world and hosts (an elastic one runs on fewer). */
        int w = atoi(hstr(h, "world"));
        r->world = !bad && w >= r->min_world && w <= most ? w : r->full_world;
        r->world_grow = r->world > r->full_world ? r->world : 0;
        adopt_hosts_and_resizes(r, hstr(h, "hosts"), hstr(h, "resizes"));
        drain_adopt_interruptions(r, hstr(h, "interruptions"), hstr(h, "interruptions_total"));
        /* Below its ask by the policy's decision (a start short, a shrink): the cap stays
         * until the policy lifts it, and a placed job keeps its hosts. */
        int cap = atoi(hstr(h, "world_cap"));
        r->world_cap = !bad && cap >= r->min_world && cap < r->full_world ? cap : 0;
        adopt_placement(r, hstr(h, "placement"));
        r->restarts = atoi(hstr(h, "restarts"));
        /* After collapse restarts: the rate's factor in (0, 1], and the step a pending
         * relaunch resumes before (anything else: 1 and none). */
        double scale = atof(hstr(h, "lr_scale"));
        r->lr_scale = scale > 0 && scale <= 1 ? scale : 1.0;
        long before = atol(hstr(h, "resume_before"));
        r->resume_before = before > 0 ? before : 0;
        snprintf(r->health, sizeof r->health, "%s",
                 strlen(hstr(h, "health")) < sizeof r->health ? hstr(h, "health") : "");
        {
            /* A collapse this attempt already announced is not announced again. */
            json_t *hj = json_loads(r->health, 0, NULL), *hc = run_health_clean(hj);
            const char *why = json_string_value(json_object_get(hc, "reason"));
            if (why) {
                r->collapse_announced = 1;
                r->collapse_since = (long)json_integer_value(json_object_get(hc, "since_step"));
                snprintf(r->collapse_why, sizeof r->collapse_why, "%s", why);
            }
            json_decref(hc);
            json_decref(hj);
        }
        r->attempts = atoi(hstr(h, "attempts"));
        if (users_name_check(hstr(h, "owner"), NULL, 0) == 0)
            snprintf(r->owner, sizeof r->owner, "%s", hstr(h, "owner"));
        r->started = atof(hstr(h, "started"));
        snprintf(r->reason, sizeof r->reason, "%s", hstr(h, "reason"));
        r->state = r->saved_state = st;
        r->stale_rank = -1;
        r->launched_at = now;
        json_decref(h);
        if (bad) {
            r->phase = PH_DONE;
            r->finished = now;
            run_set_state(c, r, JOB_FAILED, err[0] ? err : "spec: missing from the job record");
            continue;
        }
        run_bind(c, r);
        if (!r->launcher) {
            fail_unsimulated(c, r, now);
            continue;
        }
        /* An attempt runs under the fence generation of its launch, which only its end
         * raises: the one there is now. */
        char ckdir[JPATH], ferr[512];
        if (c->worker_caps.fence && !r->simulated && coord_job_path(c, r->id, "checkpoints", ckdir, sizeof ckdir) == 0 &&
            ckptdir_fence_read(ckdir, r->spec->name, &r->fence, ferr, sizeof ferr) != 0)
            clog_printf("job %s: %s", id, ferr);
        if (st == JOB_RESTARTING) {
            r->phase = PH_BACKOFF;
            r->next_launch = now;
            clog_printf("job %s: was RESTARTING; launching it again", id);
            continue;
        }
        if (r->attempts == 0) {
            /* Claimed, never launched: it was waiting for the pre-flight benchmark. Its
             * first launch is still to come (not a restart). */
            r->phase = PH_PREFLIGHT;
            r->first_launch = 1;
            clog_printf("job %s: was waiting for its first launch; launching it", id);
            continue;
        }
        /* The handle file is newer than Redis (written right after the start). */
        char pidp[JPATH], what[256];
        coord_job_path(c, id, "pid", pidp, sizeof pidp);
        r->phase = PH_ACTIVE;
        if (launcher_adopt(r->launcher, pidp, &r->h, what, sizeof what))
            clog_printf("job %s: adopted (%s); following it", id, launcher_describe(&r->h, what, sizeof what));
        else clog_printf("job %s: %s; finding out how it ended", id, what);
    }
    freeReplyObject(m);
    if (c->rc) c->adopted = 1;
}
