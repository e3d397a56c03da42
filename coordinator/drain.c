/* coordinator/drain.c - see drain.h. */
#include "drain.h"

#include "coord_internal.h"
#include "jsonbody.h"
#include "run.h"
#include "supervise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "jobstore.h"
#include "hosts.h"
#include "launcher.h"
#include "redis_keys.h"
#include "notice.h"
#include "tickconn.h"

#define JPATH_DRAIN (PATH_MAX + 160)

/* The worker's note of r's latest stop on notice, removed once read: 1 with n, else 0. */
static int drain_take_note(coordinator_t *c, const coord_run_t *r, notice_t *n)
{
    char dir[JPATH_DRAIN], path[JPATH_DRAIN + SPEC_NAME_MAX + 16], err[600];
    if (coord_job_path(c, r->id, "checkpoints", dir, sizeof dir) != 0 ||
        notice_path(path, sizeof path, dir, r->spec->name) != 0)
        return 0;
    int k = notice_read(path, n, err, sizeof err);
    if (k < 0) clog_printf("job %s: the worker's notice note is not usable: %s", r->id, err);
    else if (k == 0) clog_printf("job %s: stopped on notice, but the worker left no note at %s", r->id, path);
    unlink(path);
    return k == 1;
}

void drain_interruption(coordinator_t *c, coord_run_t *r, const char *why, const char *host, double now)
{
    notice_t n;
    int have = drain_take_note(c, r, &n);
    if (host && have) snprintf(n.host, sizeof n.host, "%s", host);
    long long lost = have && n.checkpoint_step >= 0 && n.at_step > n.checkpoint_step ? n.at_step - n.checkpoint_step : 0;
    json_t *e = json_pack("{s:s, s:o, s:o, s:o, s:o, s:f}", "reason", why, "host",
                          host                ? json_string(host)
                          : have && n.host[0] ? json_string(n.host)
                                              : json_null(),
                          "at_step", have ? json_integer(n.at_step) : json_null(), "checkpoint_step",
                          have && n.checkpoint_step >= 0 ? json_integer(n.checkpoint_step) : json_null(), "lost_steps",
                          have ? json_integer(lost) : json_null(), "at", now);
    if (!e) return;
    if (have) json_object_set_new(e, "rank", json_integer(n.rank));
    r->interruptions_total++;
    if (r->interruptions) {
        json_array_append(r->interruptions, e);
        while (json_array_size(r->interruptions) > RUN_INTERRUPTIONS_KEPT) json_array_remove(r->interruptions, 0);
    }
    if (have)
        clog_printf("job %s: interrupted (%s) on rank %d (%s) after step %lld; checkpoint of step %lld, %lld step%s lost",
                    r->id, why, n.rank, n.host[0] ? n.host : "host unknown", n.at_step, n.checkpoint_step, lost,
                    lost == 1 ? "" : "s");
    else clog_printf("job %s: interrupted (%s)", r->id, why);
    if (c->conn->rc) {
        json_t *ev = json_deep_copy(e);
        json_object_set_new(ev, "type", json_string("interruption"));
        json_object_set_new(ev, "job", json_string(r->id));
        if (r->owner[0]) json_object_set_new(ev, "owner", json_string(r->owner));
        tickconn_check(c, jobstore_event(c->conn->rc, ev), "interruption event");
        json_decref(ev);
    }
    json_decref(e);
    r->dirty = 1;
}

/* Whether r's ended attempt left a note (its ranks stopped on notice), and the note's path. */
static int drain_note_path(coordinator_t *c, const coord_run_t *r, char *path, size_t len)
{
    char dir[JPATH_DRAIN];
    return coord_job_path(c, r->id, "checkpoints", dir, sizeof dir) == 0 &&
           notice_path(path, len, dir, r->spec->name) == 0;
}

int drain_noticed(coordinator_t *c, coord_run_t *r, sv_outcome_t oc, int code)
{
    char path[JPATH_DRAIN + SPEC_NAME_MAX + 16];
    if (oc == SV_EXITED && code == NOTICE_EXIT_STATUS) return 1;
    if (oc == SV_EXITED && code == 0) return 0;
    return drain_note_path(c, r, path, sizeof path) && access(path, F_OK) == 0;
}

void drain_forget_note(coordinator_t *c, const coord_run_t *r)
{
    char path[JPATH_DRAIN + SPEC_NAME_MAX + 16];
    if (drain_note_path(c, r, path, sizeof path)) unlink(path);
}

void drain_adopt_interruptions(coord_run_t *r, const char *text, const char *total)
{
    json_t *l = text && *text ? json_loads(text, 0, NULL) : NULL;
    if (json_is_array(l) && json_array_size(l) <= RUN_INTERRUPTIONS_KEPT) {
        json_decref(r->interruptions);
        r->interruptions = l;
    } else {
        json_decref(l);
    }
    long t = total && *total ? strtol(total, NULL, 10) : 0;
    r->interruptions_total = t > 0 && t < 1000000000L ? (int)t : (int)json_array_size(r->interruptions);
}

/* One field of KEY_DRAIN into h (a value that is not the JSON coord_host_drain writes is
 * logged once and taken as a drain without a deadline: a drain is never lost silently). */
static void drain_take(coordinator_t *c, host_t *h, const char *text, double now)
{
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    double deadline = json_number_value(json_object_get(o, "deadline"));
    const char *reason = json_string_value(json_object_get(o, "reason"));
    if (!json_is_object(o) && !h->drained)
        clog_printf("host %s: drain record in %s is not usable: %s", h->name, KEY_DRAIN, jsonbody_text(&e));
    int changed = !h->drained;
    h->drained = 1;
    h->drain_deadline = deadline;
    snprintf(h->drain_reason, sizeof h->drain_reason, "%s", reason ? reason : "");
    json_decref(o);
    if (changed) {
        hosts_recount(c->hosts);
        clog_printf("host %s: draining (%s), deadline in %.0f s", h->name,
                    h->drain_reason[0] ? h->drain_reason : "no reason given", deadline > now ? deadline - now : 0.0);
        if (c->hosts->changed) c->hosts->changed(c, now);
    }
}

/* A drain of the resource manager's (rm_drain_read) on h, which no admin's drain
 * overrides: the same as an admin's with --slurm-drain-deadline from when it was seen. */
static void drain_take_rm(coordinator_t *c, host_t *h, double now)
{
    char reason[sizeof h->drain_reason];
    snprintf(reason, sizeof reason, "Slurm drains it%s%s", h->rm_drain_reason[0] ? ": " : "", h->rm_drain_reason);
    double deadline = h->rm_drain_since + c->cfg.slurm_drain_deadline_s;
    int changed = !h->drained || strcmp(reason, h->drain_reason) != 0 || deadline != h->drain_deadline;
    if (!changed) return;
    int was = h->drained;
    h->drained = 1;
    h->drain_deadline = deadline;
    snprintf(h->drain_reason, sizeof h->drain_reason, "%s", reason);
    if (was) return;
    hosts_recount(c->hosts);
    clog_printf("host %s: draining (%s), deadline in %.0f s", h->name, reason, deadline > now ? deadline - now : 0.0);
    if (c->hosts->changed) c->hosts->changed(c, now);
}

/* Every DRAIN_RM_PERIOD_S under a launcher whose resource manager drains nodes itself
 * (Slurm: `scontrol update nodename=N state=drain`, which signals no job there): which
 * hosts it drains, into host_t's rm_ fields. No answer keeps what was known. */
#define DRAIN_RM_PERIOD_S 2.0
static void rm_drain_read(coordinator_t *c, double now)
{
    if (!c->launcher || !launcher_has_rm_drains(c->launcher)) return;
    if (now - c->drain->rm_read_at < DRAIN_RM_PERIOD_S && now >= c->drain->rm_read_at) return;
    c->drain->rm_read_at = now;
    launch_rm_drain_t *d = calloc(LAUNCH_RM_DRAINS_MAX, sizeof *d);
    int n = d ? launcher_rm_drains(c->launcher, d, LAUNCH_RM_DRAINS_MAX) : -1;
    for (int i = 0; n >= 0 && i < c->hosts->n; i++) {
        host_t *h = &c->hosts->list[i];
        const launch_rm_drain_t *x = NULL;
        for (int k = 0; k < n && !x; k++)
            if (strcmp(d[k].name, h->name) == 0) x = &d[k];
        if (x && !h->rm_drained) h->rm_drain_since = now;
        h->rm_drained = x != NULL;
        snprintf(h->rm_drain_reason, sizeof h->rm_drain_reason, "%s", x ? x->reason : "");
    }
    free(d);
}

void drain_hosts_tick(coordinator_t *c, double now)
{
    /* once a second, and at once for a drain the API stored (coord_host_drain waits for
     * it); a clock that went back reads at once */
    pthread_mutex_lock(&c->lock);
    const long asked = c->drain->asked;
    pthread_mutex_unlock(&c->lock);
    const int forced = asked != c->drain->done;
    if (!c->conn->rc || (!forced && now - c->drain->read_at < 1.0 && now >= c->drain->read_at)) return;
    c->drain->read_at = now;
    rm_drain_read(c, now);
    redisReply *rep = redisCommand(c->conn->rc, "HGETALL %s", KEY_DRAIN);
    if (!rep) {
        tickconn_broken(c, "drain");
        return;
    }
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        return;
    }
    for (int i = 0; i < c->hosts->n; i++) {
        host_t *h = &c->hosts->list[i];
        const char *text = NULL;
        for (size_t k = 0; k + 1 < rep->elements; k += 2)
            if (rep->element[k]->str && rep->element[k + 1]->str && strcmp(rep->element[k]->str, h->name) == 0)
                text = rep->element[k + 1]->str;
        if (text) {
            drain_take(c, h, text, now);
        } else if (h->rm_drained) {
            drain_take_rm(c, h, now);
        } else if (h->drained) {
            h->drained = 0;
            h->drain_reason[0] = 0;
            hosts_recount(c->hosts);
            clog_printf("host %s: drain ended; usable again", h->name);
            if (c->hosts->changed) c->hosts->changed(c, now);
        }
    }
    freeReplyObject(rep);
    if (forced) {
        pthread_mutex_lock(&c->lock);
        c->drain->done = asked;
        pthread_cond_broadcast(&c->drain->cond);
        pthread_mutex_unlock(&c->lock);
    }
}

const char *drain_host_of(const hosts_state_t *hs, const coord_run_t *r)
{
    for (int i = 0; i < r->nhosts; i++) {
        const host_t *h = hosts_find(hs, r->hosts[i]);
        if (h && h->drained) return h->name;
    }
    return NULL;
}

int drain_wait_slots(const hosts_state_t *hs, const coord_run_t *r, int slots_used)
{
    if (r->simulated) return 0;
    /* an oversubscribed job needs the slots it had, not one per rank */
    int need = r->min_world < hs->slots_total ? r->min_world : hs->slots_total;
    int others = slots_used - (r->phase != PH_DONE ? r->world : 0);
    return hs->slots_usable - others < need ? need : 0;
}

void drain_hosts_text(const hosts_state_t *hs, char *out, size_t len)
{
    size_t n = 0;
    if (len) out[0] = 0;
    for (int i = 0; i < hs->n && n < len; i++) {
        const host_t *h = &hs->list[i];
        if (!h->drained) continue;
        int k = snprintf(out + n, len - n, "%s%s%s%s%s", n ? ", " : "", h->name, h->drain_reason[0] ? " (" : "",
                         h->drain_reason, h->drain_reason[0] ? ")" : "");
        if (k < 0) break;
        n += (size_t)k;
    }
}

void drain_queue_reason(const hosts_state_t *hs, const coord_run_t *r, int need, char *out, size_t len)
{
    json_t *last = json_array_get(r->interruptions, json_array_size(r->interruptions) - 1);
    json_t *ck = json_object_get(last, "checkpoint_step");
    char from[48] = "its last checkpoint";
    if (json_is_integer(ck))
        snprintf(from, sizeof from, "its checkpoint of step %lld", (long long)json_integer_value(ck));
    const host_t *h = hosts_find(hs, r->drain_host);
    snprintf(out, len, "host %.200s drains%s%.200s%s: waits queued for %d free slot%s (%d usable), to resume from %s",
             r->drain_host, h && h->drain_reason[0] ? " (" : "", h ? h->drain_reason : "",
             h && h->drain_reason[0] ? ")" : "", need, need == 1 ? "" : "s", hs->slots_usable, from);
}

/* ---- the API's side (the HTTP threads, with a pooled connection) ----------------------- */

#define DRAIN_DEADLINE_MAX_S (7 * 86400.0)
#define DRAIN_REASON_MAX 200

/* Whether the daemon's published host list (KEY_COORD's "hosts") names name: 1, 0, or
 * -1 when Redis does not answer. */
static int drain_host_known(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "HGET %s hosts", KEY_COORD);
    if (!r) return -1;
    json_t *hosts = r->type == REDIS_REPLY_STRING ? json_loads(r->str, 0, NULL) : NULL;
    freeReplyObject(r);
    int found = 0;
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) found |= json_is_string(json_object_get(h, "name")) &&
                                             strcmp(json_string_value(json_object_get(h, "name")), name) == 0;
    json_decref(hosts);
    return found;
}

static redisContext *drain_conn(coordinator_t *c, const char *name, char *err, size_t errlen, int *code)
{
    char perr[256];
    redisContext *rc = jobstore_pool_get(c->pool, perr, sizeof perr);
    if (!rc) {
        snprintf(err, errlen, "Redis does not answer: %s", perr);
        *code = COORD_EUNAVAIL;
        return NULL;
    }
    int k = drain_host_known(rc, name);
    if (k == 1) return rc;
    jobstore_pool_put(c->pool, rc, k < 0);
    if (k < 0) snprintf(err, errlen, "Redis does not answer");
    else snprintf(err, errlen, "no host named '%.200s' in the cluster", name);
    *code = k < 0 ? COORD_EUNAVAIL : COORD_ENOTFOUND;
    return NULL;
}

/* After KEY_DRAIN changed: waits until the tick has read it (at its next tick), so that the
 * caller's answer comes after the host table holds the change and no job placed later is
 * placed without it. COORD_OK, or COORD_EUNAVAIL with err when the tick did not within
 * DRAIN_TAKE_S (the change is stored all the same: the tick takes it when it runs again).
 * A client handle has no tick: nothing to wait for. */
#define DRAIN_TAKE_S 10.0
static int drain_taken(coordinator_t *c, char *err, size_t errlen)
{
    if (!c->daemon) return COORD_OK;
    pthread_mutex_lock(&c->lock);
    const long mine = ++c->drain->asked;
    pthread_cond_signal(&c->cond);
    struct timespec ts;
    clock_wall_deadline(DRAIN_TAKE_S, &ts);
    while (c->drain->done < mine && !c->stopping)
        if (pthread_cond_timedwait(&c->drain->cond, &c->lock, &ts) != 0) break;
    const int taken = c->drain->done >= mine;
    pthread_mutex_unlock(&c->lock);
    if (taken) return COORD_OK;
    snprintf(err, errlen,
             "the change is stored, but the coordinator's tick did not take it within %.0f s (it does when it runs "
             "again; Redis may be unreachable from it)",
             DRAIN_TAKE_S);
    return COORD_EUNAVAIL;
}

int coord_host_drain(coordinator_t *c, const char *name, double deadline_s, const char *reason, json_t **out, char *err,
                     size_t errlen)
{
    if (!(deadline_s > 0 && deadline_s <= DRAIN_DEADLINE_MAX_S)) {
        snprintf(err, errlen, "deadline_s: must be a number of seconds > 0 and at most %.0f (a week)",
                 DRAIN_DEADLINE_MAX_S);
        return COORD_EINVAL;
    }
    if (reason && strlen(reason) > DRAIN_REASON_MAX) {
        snprintf(err, errlen, "reason: at most %d bytes", DRAIN_REASON_MAX);
        return COORD_EINVAL;
    }
    int code = COORD_OK;
    redisContext *rc = drain_conn(c, name, err, errlen, &code);
    if (!rc) return code;
    double now = clock_wall_s();
    json_t *d = json_pack("{s:s, s:f, s:s, s:f}", "host", name, "deadline", now + deadline_s, "reason",
                          reason ? reason : "", "since", now);
    char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
    redisReply *r = text ? redisCommand(rc, "HSET %s %s %s", KEY_DRAIN, name, text) : NULL;
    free(text);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "Redis did not store the drain%s%.200s", r && r->str ? ": " : "",
                 r && r->str ? r->str : "");
        code = COORD_EUNAVAIL;
        json_decref(d);
    } else {
        *out = d;
    }
    if (r) freeReplyObject(r);
    jobstore_pool_put(c->pool, rc, !r);
    if (code == COORD_OK && (code = drain_taken(c, err, errlen)) != COORD_OK) {
        json_decref(*out);
        *out = NULL;
    }
    return code;
}

int coord_host_undrain(coordinator_t *c, const char *name, char *err, size_t errlen)
{
    int code = COORD_OK;
    redisContext *rc = drain_conn(c, name, err, errlen, &code);
    if (!rc) return code;
    redisReply *r = redisCommand(rc, "HDEL %s %s", KEY_DRAIN, name);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "Redis did not remove the drain");
        code = COORD_EUNAVAIL;
    }
    if (r) freeReplyObject(r);
    jobstore_pool_put(c->pool, rc, !r);
    return code == COORD_OK ? drain_taken(c, err, errlen) : code;
}
