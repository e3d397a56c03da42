/* coordinator/run_tick.c - see run_tick.h. */
#include "run_tick.h"

#include "coord_internal.h"
#include "jobstore.h"
#include "preflight.h"
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clog.h"
#include "ckptdir.h"
#include "drain.h"
#include "dynbatch.h"
#include "hosts.h"
#include "launch.h"
#include "launcher.h"
#include "modelstore.h"
#include "notice.h"
#include "policy.h"
#include "record_fields.h"
#include "stall.h"
#include "supervise.h"
#include "tickconn.h"
#include "run_elastic.h"
#include "run_launch.h"

#define PLAN_PERIOD_S 1.0

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
    int rc = c->conn->rc ? tickconn_check(c, jobstore_requeue(c->conn->rc, r->id, r->preempted_by, why, now), "requeue")
                         : JS_EREDIS;
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
    int need = drain_wait_slots(c->hosts, r, run_slots_used(c));
    if (need <= 0 || !c->conn->rc) {
        relaunch_soon(c, r, SV_EXITED, NOTICE_EXIT_STATUS, reason, now);
        return;
    }
    requeue_detach(c, r);
    run_persist(c, r); /* its interruption, before the queue owns the job again */
    char why[sizeof r->reason];
    drain_queue_reason(c->hosts, r, need, why, sizeof why);
    int rc = tickconn_check(c, jobstore_requeue_drained(c->conn->rc, r->id, r->drain_host, need, why, now), "requeue");
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
    if (!c->conn->rc) return;
    char key[160];
    snprintf(key, sizeof key, KEY_JOB, r->id);
    redisAppendCommand(c->conn->rc, "HGET %s cancel_requested", key);
    int nb = check_beats ? r->world : 0;
    stall_rank_t *ranks = nb ? calloc((size_t)nb, sizeof *ranks) : NULL;
    if (nb && !ranks) nb = 0;
    for (int k = 0; k < nb; k++) {
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, k);
        redisAppendCommand(c->conn->rc, "HMGET %s %s %s %s %s %s", key, RECORD_FIELDS[RF_HEARTBEAT].name,
                           RECORD_FIELDS[RF_HOST].name, NODE_WAITING, NODE_WAITING_PEER, NODE_WAITING_SINCE);
    }
    /* Rank 0 judges whether the run still learns (worker/health.h). */
    if (nb) {
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, 0);
        redisAppendCommand(c->conn->rc, "HGET %s %s", key, NODE_HEALTH);
        /* The progress of a training rank (a parameter server counts updates, not
         * steps): when the job should end (the scheduler's estimates, schedule.c). */
        snprintf(key, sizeof key, KEY_JOB_NODE, r->id, spec_is_async(r->spec) && nb > 1 ? 1 : 0);
        redisAppendCommand(c->conn->rc, "HMGET %s %s %s", key, RECORD_FIELDS[RF_STEP].name,
                           RECORD_FIELDS[RF_TOTAL_STEPS].name);
    }
    int stale = -1;
    double stale_age = 0;
    double baseline = r->launched_at > c->conn->up_since ? r->launched_at : c->conn->up_since;
    for (int k = 0; k < nb + 1 + 2 * (nb > 0); k++) {
        redisReply *rep = NULL;
        if (redisGetReply(c->conn->rc, (void **)&rep) != REDIS_OK || !rep) {
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
    char specp[RUN_JPATH];
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
    char ckdir[RUN_JPATH], err[512];
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
    char path[RUN_JPATH];
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
        } else if (drain_host_of(c->hosts, r)) {
            snprintf(r->drain_host, sizeof r->drain_host, "%s", drain_host_of(c->hosts, r));
            run_kill(c, r, KILL_DRAIN, now);
        } else if (r->spec->algorithm.dynamic_batch && c->worker_caps.redis && c->conn->rc && !r->simulated &&
                   now - r->last_plan >= PLAN_PERIOD_S) {
            r->last_plan = now;
            int k = dynbatch_replan(c->conn->rc, r->id, r->spec, workers_of(r, r->world));
            if (k == JS_EREDIS) tickconn_broken(c, "batch plan");
        }
        if (r->phase == PH_ACTIVE) grow_check(c, r, now);
        if (now - r->last_log_check >= 1.0) {
            char log[RUN_JPATH];
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
            run_launch(c, r, now);
        }
        break;
    case PH_DONE: break;
    }
    if (r->dirty) run_persist(c, r);
}
