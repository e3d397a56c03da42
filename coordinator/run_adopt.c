/* coordinator/run_adopt.c - see run_adopt.h. */
#include "run_adopt.h"

#include "coord_internal.h"
#include "jobstore.h"
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "ckptdir.h"
#include "drain.h"
#include "launcher.h"
#include "modelstore.h"
#include "policy.h"
#include "record_fields.h"
#include "stall.h"
#include "supervise.h"
#include "tickconn.h"

static const char *hstr(json_t *h, const char *key);

/* A requeued job's interruptions so far (its record's), which its next attempts extend:
 * without them each claim would start the list over. */
static void adopt_history(coordinator_t *c, coord_run_t *r)
{
    json_t *h = NULL;
    if (!c->conn->rc || tickconn_check(c, jobstore_get(c->conn->rc, r->id, &h), "job read") != JS_OK) return;
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
    redisReply *m = redisCommand(c->conn->rc, "SMEMBERS %s", KEY_ACTIVE);
    if (!m || m->type != REDIS_REPLY_ARRAY) {
        if (m) freeReplyObject(m);
        tickconn_broken(c, "adopt");
        return;
    }
    for (size_t i = 0; i < m->elements && c->conn->rc; i++) { /* a broken connection ends the pass */
        const char *id = reply_str(m->element[i]);
        if (!id || !job_id_valid(id)) continue;
        int known = 0;
        for (int k = 0; k < c->runs->n; k++) known |= strcmp(c->runs->list[k]->id, id) == 0;
        if (known) continue;
        json_t *h = NULL;
        int rc = tickconn_check(c, jobstore_get(c->conn->rc, id, &h), "adopt");
        if (rc == JS_EREDIS) break;
        job_state_t st = JOB_QUEUED;
        const char *sts = rc == JS_OK ? json_string_value(json_object_get(h, "state")) : NULL;
        if (!sts || job_state_parse(sts, &st) != 0 || (st != JOB_RUNNING && st != JOB_RESTARTING)) {
            redisReply *x = redisCommand(c->conn->rc, "SREM %s %s", KEY_ACTIVE, id);
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
        char ckdir[RUN_JPATH], ferr[512];
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
        char pidp[RUN_JPATH], what[256];
        coord_job_path(c, id, "pid", pidp, sizeof pidp);
        r->phase = PH_ACTIVE;
        if (launcher_adopt(r->launcher, pidp, &r->h, what, sizeof what))
            clog_printf("job %s: adopted (%s); following it", id, launcher_describe(&r->h, what, sizeof what));
        else clog_printf("job %s: %s; finding out how it ended", id, what);
    }
    freeReplyObject(m);
    if (c->conn->rc) c->adopted = 1;
}
