/* coordinator/run.c - see run.h. The life of a job in the daemon:
 *   submit (api.c) -> pacer:queue -> schedule_tick() (schedule.c): claimed (QUEUED -> RUNNING, one Lua
 *   script) when its world fits the free slots -> run_launch() (run_launch.c): spec rewritten into
 *   STATE_DIR/jobs/{id}/spec.json, the attempt started by the launcher (launcher.h:
 *   mpirun under `sh -c '...; echo $? > exit_code'` in a new session, or a Slurm batch
 *   job) -> run_step() (run_tick.c): every tick, has it ended (launcher_poll), cancel requests,
 *   heartbeats, batch plans, log size -> on exit, supervise_decide() says SUCCEEDED,
 *   FAILED, CANCELLED or RESTARTING (relaunched with --resume after a backoff).
 *
 * Elastic restarts (run_elastic.c): an attempt that fails on a multi-host launcher has its
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
#include "jobstore.h"
#include "netprobe.h"

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
int workers_of(const coord_run_t *r, int world) { return spec_is_async(r->spec) ? world - 1 : world; }

/* The most ranks r may run as (spec_worlds). */
int run_max_world(const coord_run_t *r)
{
    int full, least, most;
    spec_worlds(r->spec, &full, &least, &most);
    return most;
}

/* The hosts r's attempt may use (copies); 0, or -1 when out of memory. */
int run_set_hosts(coord_run_t *r, const char *const *names, int n)
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

json_t *run_hosts_json(const coord_run_t *r)
{
    json_t *a = json_array();
    for (int i = 0; a && i < r->nhosts; i++) json_array_append_new(a, json_string(r->hosts[i]));
    return a;
}

coord_run_t *run_new(coordinator_t *c, const char *id)
{
    if (c->runs->n == c->runs->cap) {
        int cap = c->runs->cap ? 2 * c->runs->cap : 16;
        coord_run_t **n = realloc(c->runs->list, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        c->runs->list = n;
        c->runs->cap = cap;
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
    c->runs->list[c->runs->n++] = r;
    return r;
}

int run_slots_used(const coordinator_t *c)
{
    int used = 0;
    for (int i = 0; i < c->runs->n; i++)
        if (c->runs->list[i]->phase != PH_DONE && !c->runs->list[i]->simulated) used += c->runs->list[i]->world;
    return used;
}

int run_sims_used(const coordinator_t *c)
{
    int used = 0;
    for (int i = 0; i < c->runs->n; i++) used += c->runs->list[i]->phase != PH_DONE && c->runs->list[i]->simulated;
    return used;
}

int run_holds(const coordinator_t *c, const coord_run_t *r, int host)
{
    if (r->phase == PH_DONE || r->simulated) return 0;
    char *const *names = r->nplace > 0 ? r->place : r->nhosts > 0 ? r->hosts : NULL;
    int nn = r->nplace > 0 ? r->nplace : r->nhosts, left = r->world;
    for (int i = 0; i < c->hosts->n && left > 0; i++) {
        int listed = !names;
        for (int k = 0; names && k < nn && !listed; k++) listed = strcmp(names[k], c->hosts->list[i].name) == 0;
        if (!listed) continue;
        int take = left < c->hosts->list[i].slots ? left : c->hosts->list[i].slots;
        if (i == host) return take;
        left -= take;
    }
    return 0;
}

/* Which launcher runs r: the sim launcher for a simulated job (NULL when this daemon has
 * none: the scheduler's claim (run_claimed) and run_adopt fail such a job before anything is launched). */
void run_bind(coordinator_t *c, coord_run_t *r)
{
    r->simulated = r->spec->simulate.enabled;
    r->launcher = r->simulated ? c->sim_launcher : c->launcher;
}

/* A simulated job on a daemon that cannot simulate: the reason names the field. */
void fail_unsimulated(coordinator_t *c, coord_run_t *r, double now)
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
    if (!c->conn->rc) {
        r->dirty = 1;
        return;
    }
    char restarts[16], attempts[16], pid[16], pstart[32], ec[16], world[16], started[32], finished[32];
    char lr_scale[32], resume_before[24], world_cap[16], ninterruptions[16];
    char log[RUN_JPATH], ckdir[RUN_JPATH], summary[RUN_JPATH];
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
                            jobstore_update(c->conn->rc, r->id, changed ? job_state_name(r->state) : NULL, r->reason,
                                            kv, nkv),
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
    if (r->phase == PH_DONE && c->conn->rc) {
        /* A simulated job's nodes are simulated hosts: folding them into the persistent
         * profiles would invent hosts (and speeds) the cluster does not have. */
        if (c->worker_caps.redis && !r->simulated) {
            int n = dynbatch_fold_profiles(c->conn->rc, r->id, r->spec, r->world);
            if (n == JS_EREDIS) tickconn_broken(c, "profiles");
        }
        if (c->conn->rc) tickconn_check(c, jobstore_expire_job_keys(c->conn->rc, r->id, r->world), "expire");
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
void run_health(coordinator_t *c, coord_run_t *r, json_t *in, double now)
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
        if (c->conn->rc) tickconn_check(c, jobstore_event(c->conn->rc, ev), "health event");
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
    char path[RUN_JPATH];
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
void clear_stall(coord_run_t *r)
{
    if (r->stall) r->dirty = 1;
    json_decref(r->stall);
    r->stall = NULL;
    r->stall_sig[0] = 0;
    r->stall_seen = 0;
}

/* The job's processes have ended (or must be treated so): decide what comes next.
 * code: the exit status or signal, or for SV_STALE the stale rank. */
void finish_attempt(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code, double now)
{
    char log[RUN_JPATH], line[512] = "";
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
int move_aside(coordinator_t *c, const coord_run_t *r, const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return 0;
    char aside[RUN_JPATH + 64];
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

/* The checkpoint file's identity (mtime in ns, inode, size; zeros when absent): the
 * worker renames a new one over it, so any change means a checkpoint was written. */
void ckpt_ident(coordinator_t *c, const coord_run_t *r, long long out[3])
{
    char dir[RUN_JPATH], path[RUN_JPATH + SPEC_NAME_MAX + 8];
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

void run_poll(coordinator_t *c, coord_run_t *r, double now, launch_status_t *st)
{
    char ecp[RUN_JPATH], log[RUN_JPATH];
    coord_job_path(c, r->id, "exit_code", ecp, sizeof ecp);
    coord_job_path(c, r->id, "log", log, sizeof log);
    launcher_poll(r->launcher, &r->h, ecp, log, now, st);
}

void run_kill(coordinator_t *c, coord_run_t *r, kill_reason_t why, double now)
{
    r->kill_reason = why;
    r->phase = PH_KILLING;
    r->kill_deadline = now + c->cfg.kill_grace_s;
    /* A drain gives the ranks until its deadline to reach their step boundary, however
     * long a step takes (a step longer than --kill-grace would lose everything since the
     * last checkpoint), and no longer than that, whatever --kill-grace says. */
    const host_t *dh = why == KILL_DRAIN ? hosts_find(c->hosts, r->drain_host) : NULL;
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
