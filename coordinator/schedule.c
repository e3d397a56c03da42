/* coordinator/schedule.c - see schedule.h. The policy (policy.h, policy_classes.c) decides
 * from a snapshot and touches nothing; this file builds the snapshot from Redis and the
 * runs, and carries its decisions out through run.h (claims, stops, shrinks, placements).
 * The scheduler calls down into a run (run.c, run_adopt.c, run_launch.c); they never call up into it. */
#include "schedule.h"

#include "coord_internal.h"
#include "launcher.h"
#include "run.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "drain.h"
#include "hclass.h"
#include "hosts.h"
#include "jobstore.h"
#include "policy.h"
#include "quotas.h"
#include "run_adopt.h"
#include "run_launch.h"
#include "tickconn.h"
#include "users.h"

/* Jobs claimed and launched in one tick at most: the rest wait for the next one, so that
 * a long queue cannot hold the tick (and the supervision of running jobs) for long. */
#define SCHEDULE_PER_TICK 16
/* Queued jobs the policy decides on at a time: every queued job is read (up to
 * COORD_QUEUE_MAX, the most --max-queued allows), and the view is chosen from them fairly
 * (queue_view_pick: by priority, then each user's earliest first), so that nobody's many
 * jobs hide anyone else's; the policy's cost grows with its square. */
#define QUEUE_VIEW_MAX 256

/* A queued job's record: its spec parsed into spec, and what it asks for into q (bad when
 * the record or its spec cannot be read, with err saying why). Returns JS_OK, or JS_EREDIS
 * when Redis did not answer. */
static int read_queued(coordinator_t *c, const char *id, sched_queued_t *q, job_spec_t *spec, char *err, size_t errlen)
{
    json_t *h = NULL;
    int rc = tickconn_check(c, jobstore_get(c->conn->rc, id, &h), "job read");
    if (rc == JS_EREDIS) return rc;
    memset(q, 0, sizeof *q);
    snprintf(q->id, sizeof q->id, "%s", id);
    q->bad = 1;
    err[0] = 0;
    if (rc == JS_OK) {
        const char *text = json_string_value(json_object_get(h, "spec"));
        const char *owner = json_string_value(json_object_get(h, "owner"));
        const char *pre = json_string_value(json_object_get(h, "preempted_by"));
        const char *drained = json_string_value(json_object_get(h, "drained_from"));
        const char *need = json_string_value(json_object_get(h, "drain_need"));
        q->requeued = (pre && *pre) || (drained && *drained);
        /* bounded: a need above any cluster's slots would hold it for good */
        long dn = drained && *drained && need ? strtol(need, NULL, 10) : 0;
        q->drain_need = dn > 0 && dn <= 1000000 ? (int)dn : 0;
        if (owner && users_name_check(owner, NULL, 0) == 0) snprintf(q->owner, sizeof q->owner, "%s", owner);
        q->bad = !text || spec_parse(text, spec, err, errlen) != 0;
        if (!text) snprintf(err, errlen, "spec: missing from the job record");
        /* its submission (a number, or the hash's string): hetero's response ratio */
        json_t *sub = json_object_get(h, "submitted");
        q->submitted = json_is_string(sub) ? strtod(json_string_value(sub), NULL) : json_number_value(sub);
    }
    json_decref(h);
    if (!q->bad) {
        spec_worlds(spec, &q->world, &q->min_world, &q->max_world);
        q->simulated = spec->simulate.enabled;
        q->priority = policy_priority(spec->priority);
        snprintf(q->model, sizeof q->model, "%s", spec->model);
        q->work = hclass_job_work(spec);
    }
    return JS_OK;
}

/* When r should end: from its measured progress (steps done of the total since it was
 * claimed, at the rate so far); -1 while nothing is measured. */
static double run_finish_estimate(const coord_run_t *r, double now)
{
    if (r->progress_step <= 0 || r->progress_total <= 0 || !(now > r->started)) return -1;
    return now + (now - r->started) * (double)(r->progress_total - r->progress_step) / (double)r->progress_step;
}

/* The queue object of a waiting job (the API's `queue`, docs/openapi.json). */
static json_t *queue_json(const policy_decision_t *d)
{
    return json_pack("{s:i, s:s, s:s, s:o}", "position", d->position, "reason", policy_reason_name(d->reason), "detail",
                     d->detail, "estimated_start",
                     d->estimated_start >= 0 ? json_real(d->estimated_start) : json_null());
}

/* The class-aware policies' snapshot (--policy hetero|agnostic; hclass.h): the usable hosts
 * by class, each job type's (model's) speed per class, the running jobs' state (slots per
 * class, elastic bounds, when their slots last changed: hplan_state), and each host's free
 * slots, from which set_place takes the started and changed jobs' hosts. */
typedef struct {
    policy_hetero_t h;
    policy_class_t classes[POLICY_CLASSES_MAX];
    char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
    const char **hosts; /* c->hosts->list' names, in the launcher's order */
    int *slots, *usable, *host_class, *free;
    const char **types; /* the models of the jobs in the snapshot */
    int ntypes;
    double *speed; /* [type * nclasses + class] */
    policy_hjob_t *hrun, *hq;
} hsnap_t;

static void hsnap_free(hsnap_t *s)
{
    free(s->hosts);
    free(s->slots);
    free(s->usable);
    free(s->host_class);
    free(s->free);
    free(s->types);
    free(s->speed);
    free(s->hrun);
    free(s->hq);
    memset(s, 0, sizeof *s);
}

/* model's row in s->types (added when new; room for every job of the snapshot). */
static int hsnap_type(hsnap_t *s, const char *model)
{
    for (int t = 0; t < s->ntypes; t++)
        if (strcmp(s->types[t], model) == 0) return t;
    s->types[s->ntypes] = model;
    return s->ntypes++;
}

/* A running job's slots per class, and the hosts' free slots less them: its ranks fill its
 * hosts (its placement, else the hosts of its attempt, else all) in the launcher's order, a
 * host's slots at a time (Open MPI's by-slot mapping); ranks beyond the slots (an
 * oversubscribed job) hold no more. */
static void hsnap_hold(coordinator_t *c, hsnap_t *s, const coord_run_t *r, int *alloc)
{
    for (int i = 0; i < c->hosts->n; i++) {
        int take = run_holds(c, r, i);
        s->free[i] -= take;
        if (s->host_class[i] >= 0) alloc[s->host_class[i]] += take;
    }
}

/* Whether the policy may change r's hosts (hplan_apply): an attempt that trains, on the
 * launcher's hosts, with a checkpoint to resume from (nothing may be lost beyond the last
 * one), and no other stop or change under way. */
static int hplan_may_change(coordinator_t *c, const coord_run_t *r)
{
    if (r->simulated || r->phase != PH_ACTIVE || r->kill_reason != KILL_NONE || r->hplan) return 0;
    return run_has_checkpoint(c, r);
}

/* A running job's state for the policy (j->alloc filled): one that may change has its
 * spec's bounds (spec_worlds, policy_hjob_bounds) and last changed when its attempt
 * started; a rigid one, or one that may not change, is pinned at what it holds (a rigid one
 * is never resized; one that may not change: never old enough). */
static void hplan_state(coordinator_t *c, const coord_run_t *r, int nc, policy_hjob_t *j)
{
    int held = 0;
    for (int k = 0; k < nc; k++) held += j->alloc[k];
    j->min_slots = j->want = held;
    j->changed = HUGE_VAL;
    if (!hplan_may_change(c, r)) return;
    j->changed = r->launched_at;
    policy_hjob_bounds(j, r->full_world, r->min_world, run_max_world(r), c->hosts->slots_usable, held);
}

/* Builds s (zeroed by the caller) for the runs rr[0..nrun) and the queued jobs qd[0..n).
 * Returns 0, or -1 when out of memory or no host is usable (then the tick decides
 * without classes). The profiles come from the cache (one refresh every HCLASS_REFRESH_S). */
static int hsnap_build(coordinator_t *c, double now, coord_run_t *const *rr, int nrun, const sched_queued_t *qd, int n,
                       hsnap_t *s)
{
    int nh = c->hosts->n, nj = nrun + n;
    if (hclass_refresh(c->conn->rc, &c->sched->hcache, now) != 0) tickconn_broken(c, "profiles");
    s->hosts = calloc((size_t)nh + 1, sizeof *s->hosts);
    s->slots = calloc((size_t)nh + 1, sizeof *s->slots);
    s->usable = calloc((size_t)nh + 1, sizeof *s->usable);
    s->host_class = calloc((size_t)nh + 1, sizeof *s->host_class);
    s->free = calloc((size_t)nh + 1, sizeof *s->free);
    s->types = calloc((size_t)nj + 1, sizeof *s->types);
    s->hrun = calloc((size_t)nrun + 1, sizeof *s->hrun);
    s->hq = calloc((size_t)n + 1, sizeof *s->hq);
    if (!s->hosts || !s->slots || !s->usable || !s->host_class || !s->free || !s->types || !s->hrun || !s->hq)
        return -1;
    for (int i = 0; i < nh; i++) {
        const host_t *h = &c->hosts->list[i];
        s->hosts[i] = h->name;
        s->slots[i] = s->free[i] = h->slots;
        s->usable[i] = h->state == HOST_UP || h->state == HOST_SLOW;
    }
    const hclass_profile_t *p = c->sched->hcache.p;
    int np = c->sched->hcache.n;
    int nc = hclass_group(p, np, s->hosts, s->slots, s->usable, nh, s->host_class, s->classes, s->names);
    if (nc <= 0) return -1;
    for (int i = 0; i < nrun; i++) {
        policy_hjob_t *j = &s->hrun[i];
        j->type = hsnap_type(s, rr[i]->spec->model);
        if (!rr[i]->simulated) hsnap_hold(c, s, rr[i], j->alloc);
        hplan_state(c, rr[i], nc, j);
        /* the work left by its progress (steps done of its total) */
        const coord_run_t *r = rr[i];
        double done = r->progress_total > 0 ? (double)r->progress_step / (double)r->progress_total : 0;
        j->work = hclass_job_work(r->spec) * (done < 1 ? 1 - done : 0);
        j->worth = r->worth;
    }
    for (int i = 0; i < n; i++) {
        policy_hjob_t *j = &s->hq[i];
        j->type = hsnap_type(s, qd[i].model);
        /* an oversubscribed job asks for every usable slot (its ranks share them); an elastic
         * one may start on fewer (policy_hjob_bounds), as a trace's elastic job in the simulator */
        j->want = j->min_slots = qd[i].world < c->hosts->slots_usable ? qd[i].world : c->hosts->slots_usable;
        policy_hjob_bounds(j, qd[i].world, qd[i].min_world, qd[i].max_world, c->hosts->slots_usable,
                           c->hosts->slots_usable);
        j->work = qd[i].work;
        j->submitted = qd[i].submitted;
    }
    s->speed = calloc((size_t)(s->ntypes * nc) + 1, sizeof *s->speed);
    if (!s->speed) return -1;
    for (int t = 0; t < s->ntypes; t++)
        for (int k = 0; k < nc; k++)
            s->speed[t * nc + k] = hclass_speed(p, np, s->hosts, s->host_class, nh, s->types[t], k);
    s->h = (policy_hetero_t){.classes = s->classes,
                             .nclasses = nc,
                             .ntypes = s->ntypes,
                             .speed = s->speed,
                             .running = s->hrun,
                             .queued = s->hq,
                             .min_run_s = c->cfg.hetero_min_run_s,
                             .resize_cost_s = c->cfg.hetero_resize_cost_s,
                             .hysteresis = c->cfg.hetero_hysteresis,
                             .grow_overhead = c->cfg.hetero_grow_overhead};
    return 0;
}

/* A job's hosts for the slots per class alloc (--policy hetero|agnostic: a started job's
 * decision, or a running job's change, own: the slots it holds per host, NULL when it holds
 * none): hclass_pick_hosts over s->free, which keeps count for the jobs placed after it,
 * into r->place, with the placement the API shows (hosts by class, reason). Returns 0, or
 * -1 when nothing was placed (no free slots where the plan saw them, or out of memory:
 * r keeps what it had). */
static int set_place(coordinator_t *c, hsnap_t *s, coord_run_t *r, const int *alloc, const int *own, const char *reason)
{
    int nh = c->hosts->n, k = 0;
    int *take = calloc((size_t)nh + 1, sizeof *take);
    char **names = calloc((size_t)nh + 1, sizeof *names);
    json_t *by = json_object();
    int n = take ? hclass_pick_hosts(s->host_class, own, s->free, nh, alloc, s->h.nclasses, take) : -1;
    for (int cls = 0; n > 0 && names && by && cls < s->h.nclasses; cls++) {
        json_t *list = json_array();
        for (int i = 0; i < nh; i++) {
            if (s->host_class[i] != cls || take[i] <= 0) continue;
            names[k] = strdup(s->hosts[i]);
            if (names[k]) json_array_append_new(list, json_string(names[k++]));
        }
        if (json_array_size(list) > 0) json_object_set_new(by, s->names[cls], list);
        else json_decref(list);
    }
    json_t *placement = n > 0 && k == n ? json_pack("{s:o, s:s}", "hosts_by_class", by, "reason", reason) : NULL;
    if (!placement) {
        for (int i = 0; names && i < k; i++) free(names[i]);
        free(names);
        free(take);
        if (n <= 0 || k != n) json_decref(by);
        return -1;
    }
    /* the slots it gives up are free for the jobs placed after it; those it takes are not */
    for (int i = 0; i < nh; i++) s->free[i] += (own ? own[i] : 0) - take[i];
    free(take);
    for (int i = 0; i < r->nplace; i++) free(r->place[i]);
    free(r->place);
    json_decref(r->placement);
    r->place = names;
    r->nplace = k;
    r->placement = placement;
    r->dirty = 1;
    return 0;
}

/* The policy's change of a running job's slots (rz, the state it was planned from j):
 * its new hosts (set_place: those it keeps first), the world cap its relaunch runs under,
 * and a stop to relaunch from its checkpoint there (the elastic resize path: KILL_RESIZE,
 * relaunch_soon, launch), its reason the policy's ("shrunk from 3 x1 to 2 x1 slots to admit
 * j-5 (hetero)"). Returns 1 when applied, 0 when not (a keep; its hosts are not free). */
static int hplan_apply(coordinator_t *c, hsnap_t *s, coord_run_t *r, const policy_hjob_t *j, const policy_resize_t *rz,
                       double now)
{
    int cap = 0;
    hclass_change_t k = hclass_change(j->alloc, rz->alloc, s->h.nclasses, r->full_world, &cap);
    int *own = calloc((size_t)c->hosts->n + 1, sizeof *own);
    for (int i = 0; own && i < c->hosts->n; i++) own[i] = run_holds(c, r, i);
    int ok = k != HCLASS_KEEP && own && set_place(c, s, r, rz->alloc, own, rz->reason) == 0;
    free(own);
    if (!ok) return 0;
    r->world_cap = cap;
    r->world_grow = hclass_grown_world(rz->alloc, s->h.nclasses, r->full_world);
    r->hplan = 1;
    snprintf(r->resize_reason, sizeof r->resize_reason, "%s", rz->reason);
    clog_printf("job %s: %s: %s; relaunching from its checkpoint", r->id, hclass_change_name(k), rz->reason);
    run_kill(c, r, KILL_RESIZE, now);
    return 1;
}

/* Claims the queued job q (its decision d: start) and launches it. Returns 0, or -1 when
 * this tick should claim nothing more (Redis, memory, the queue changed). hs and hj, q's
 * state in it (--policy hetero|agnostic; else NULL): an elastic job the policy starts on
 * fewer slots than it asks (policy_hjob_bounds' want) launches on that many ranks, under
 * the cap a shrink's relaunch runs under (hclass_change; the policy's grow lifts it,
 * hplan_apply), its start recorded as a resize from the ask with the placement's reason. */
static int claim_and_launch(coordinator_t *c, const sched_queued_t *q, const policy_decision_t *d, hsnap_t *hs,
                            const policy_hjob_t *hj, double now)
{
    job_spec_t *spec = malloc(sizeof *spec);
    char err[512] = "";
    sched_queued_t fresh;
    if (!spec) return -1;
    /* The whole spec again: the cache keeps only the demand. */
    if (read_queued(c, q->id, &fresh, spec, err, sizeof err) != JS_OK) {
        free(spec);
        return -1;
    }
    int bad = fresh.bad;
    int claimed = tickconn_check(c, jobstore_claim(c->conn->rc, q->id, now), "claim");
    if (claimed != 1) {
        free(spec);
        return -1; /* cancelled or gone meanwhile, or Redis: the next tick looks again */
    }
    run_claim_t k = {q->id, fresh.world, fresh.min_world, fresh.owner, fresh.requeued, bad, err};
    coord_run_t *r = NULL;
    int rc = run_claimed(c, &k, spec, now, &r);
    free(spec);
    if (rc != 0) return -1;
    if (!r) return 0; /* failed at once: its spec, or a simulation this daemon cannot run */
    char why[sizeof d->placement + 64];
    snprintf(why, sizeof why, "%s", d->placement);
    int below = hs && hj && !r->simulated && d->world < hj->want;
    if (below) snprintf(why, sizeof why, "started on %d of the %d slots it asks: %s", d->world, hj->want, d->placement);
    if (hs && !r->simulated && set_place(c, hs, r, d->alloc, NULL, why) == 0) {
        clog_printf("job %s: %s", r->id, why);
        if (below) {
            static const int none[POLICY_CLASSES_MAX];
            hclass_change(none, d->alloc, hs->h.nclasses, r->full_world, &r->world_cap);
            r->world = d->world;
            /* recorded as its first attempt's resize from the ask, as a start on lost hosts */
            snprintf(r->resize_reason, sizeof r->resize_reason, "%s", why);
        }
    }
    if (r->simulated)
        clog_printf("job %s: claimed (%s, %d simulated rank%s, simulations %d/%d)", q->id, r->spec->name, r->world,
                    r->world == 1 ? "" : "s", run_sims_used(c), c->sim_slots);
    else
        clog_printf("job %s: claimed (%s, %d rank%s, slots %d/%d%s)", q->id, r->spec->name, r->world,
                    r->world == 1 ? "" : "s", run_slots_used(c) - r->world + d->world, c->hosts->slots_usable,
                    d->backfilled ? "; backfilled ahead of the queue's head" : "");
    run_first_launch(c, r, now);
    return 0;
}

/* Longest interval a tick counts as used: a daemon that was stopped (or a tick that
 * stalled) charges no user for time it did not watch. The decay still covers all of it. */
#define FAIR_TICK_MAX_S 5.0

/* Fair share (--policy fair): brings each user's usage in KEY_FAIRSHARE up to now (the
 * decay since FAIRSHARE_AT, plus the slots their runs hold over that interval: runs of
 * jobs without an owner count to nobody; simulations hold no slots), writes it back, and
 * gives each queued job its owner's share, usage / weight (weights: user name -> weight,
 * from their records; 1 when it has none, as admin). Redis failing leaves every share 0:
 * arrival order within a class. */
static void fair_share(coordinator_t *c, double now, policy_queued_t *pq, int n, const json_t *weights)
{
    redisReply *u = redisCommand(c->conn->rc, "HGETALL %s", KEY_FAIRSHARE);
    if (!u) {
        tickconn_broken(c, "fair share");
        return;
    }
    json_t *usage = json_object();
    double at = now;
    for (size_t i = 0; usage && u->type == REDIS_REPLY_ARRAY && i + 1 < u->elements; i += 2) {
        const redisReply *k = u->element[i], *v = u->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        double x = atof(v->str);
        if (strcmp(k->str, FAIRSHARE_AT) == 0) at = x;
        else if (users_name_check(k->str, NULL, 0) == 0 && x > 0 && isfinite(x))
            json_object_set_new(usage, k->str, json_real(x));
    }
    freeReplyObject(u);
    double dt = now > at ? now - at : 0, used_dt = dt < FAIR_TICK_MAX_S ? dt : FAIR_TICK_MAX_S;
    const char *name;
    json_t *v;
    json_object_foreach(usage, name, v)
        json_real_set(v, policy_usage_decay(json_real_value(v), dt, c->cfg.fair_half_life_s, 0));
    for (int i = 0; usage && i < c->runs->n; i++) {
        const coord_run_t *r = c->runs->list[i];
        if (r->phase == PH_DONE || r->simulated || !r->owner[0]) continue;
        double was = json_real_value(json_object_get(usage, r->owner));
        json_object_set_new(usage, r->owner, json_real(was + policy_usage_decay(0, used_dt, 0, r->world)));
    }
    /* Written back whole: one HSET of every user and the time, one HDEL of those decayed
     * to nothing (below a slot-millisecond), so the hash stays as small as its users. */
    size_t nu = usage ? json_object_size(usage) : 0;
    const char **argv = calloc(2 * nu + 4, sizeof *argv);
    char(*num)[32] = calloc(nu + 1, sizeof *num);
    if (argv && num) {
        int argc = 0, k = 1, ndel = 0;
        argv[argc++] = "HSET";
        argv[argc++] = KEY_FAIRSHARE;
        argv[argc++] = FAIRSHARE_AT;
        snprintf(num[0], sizeof num[0], "%.3f", now);
        argv[argc++] = num[0];
        json_object_foreach(usage, name, v)
        {
            if (json_real_value(v) < 1e-3) {
                ndel++;
                continue;
            }
            snprintf(num[k], sizeof num[k], "%.3f", json_real_value(v));
            argv[argc++] = name;
            argv[argc++] = num[k++];
        }
        redisReply *w = redisCommandArgv(c->conn->rc, argc, argv, NULL);
        if (!w) tickconn_broken(c, "fair share");
        freeReplyObject(w);
        argc = 0;
        argv[argc++] = "HDEL";
        argv[argc++] = KEY_FAIRSHARE;
        json_object_foreach(usage, name, v) if (json_real_value(v) < 1e-3) argv[argc++] = name;
        if (ndel && c->conn->rc) {
            w = redisCommandArgv(c->conn->rc, argc, argv, NULL);
            if (!w) tickconn_broken(c, "fair share");
            freeReplyObject(w);
        }
    }
    free(argv);
    free(num);
    for (int i = 0; i < n; i++)
        if (pq[i].owner) {
            const json_t *w = json_object_get(json_object_get(weights, pq[i].owner), "weight");
            pq[i].share = policy_share(json_real_value(json_object_get(usage, pq[i].owner)), json_real_value(w));
        }
    json_decref(usage);
}

/* What the users' records say for the queued jobs' owners, while someone waits: one read
 * of KEY_USERS into {name: {"weight", "max_slots"}} (a new object; empty when Redis fails,
 * NULL when out of memory), max_slots the effective one (common/users.h: the record's
 * own, else the role's default; 0 no limit). maxs[i] is pq[i]'s owner's; an owner without a
 * record (the daemon's own admin) has none. */
static json_t *owners_read(coordinator_t *c, const policy_queued_t *pq, int n, int *maxs)
{
    json_t *users = json_object();
    redisReply *ur = n > 0 && c->conn->rc ? redisCommand(c->conn->rc, "HGETALL %s", KEY_USERS) : NULL;
    if (n > 0 && c->conn->rc && !ur) tickconn_broken(c, "users");
    for (size_t i = 0; ur && users && ur->type == REDIS_REPLY_ARRAY && i + 1 < ur->elements; i += 2) {
        const redisReply *k = ur->element[i], *x = ur->element[i + 1];
        user_record_t rec;
        user_limits_t lim;
        if (k->type != REDIS_REPLY_STRING || x->type != REDIS_REPLY_STRING ||
            users_record_parse(k->str, x->str, x->len, &rec, NULL, 0) != 0)
            continue;
        users_limits_effective(&rec, rec.role, &c->cfg.member, &lim);
        json_object_set_new(users, k->str,
                            json_pack("{s:f, s:I}", "weight", rec.weight, "max_slots", (json_int_t)lim.max_slots));
    }
    freeReplyObject(ur);
    for (int i = 0; i < n; i++) {
        json_int_t m = pq[i].owner
                           ? json_integer_value(json_object_get(json_object_get(users, pq[i].owner), "max_slots"))
                           : 0;
        maxs[i] = pq[i].owner && m > 0 && m <= INT_MAX ? (int)m : 0;
    }
    return users;
}

/* After a user's removal (owners_gen, users.c): their runs' and queued jobs' owners are
 * read again, so that what passed to "NAME#removed-N" counts to nobody (no fair share, no
 * limit of a later account of the name). The queued jobs' cache is dropped: the tick reads
 * their records again. */
static void owners_refresh(coordinator_t *c)
{
    long gen = atomic_load(&c->users->owners_gen);
    if (gen == c->sched->owners_seen) return;
    free(c->sched->qdemand);
    c->sched->qdemand = NULL;
    c->sched->nqdemand = 0;
    for (int i = 0; i < c->runs->n && c->conn->rc; i++) {
        coord_run_t *r = c->runs->list[i];
        char key[128];
        snprintf(key, sizeof key, KEY_JOB, r->id);
        redisReply *rep = redisCommand(c->conn->rc, "HGET %s owner", key);
        if (!rep) {
            tickconn_broken(c, "job owner");
            return; /* the next tick tries again */
        }
        int named = rep->type == REDIS_REPLY_STRING && users_name_check(rep->str, NULL, 0) == 0;
        snprintf(r->owner, sizeof r->owner, "%s", named ? rep->str : "");
        freeReplyObject(rep);
    }
    if (c->conn->rc) c->sched->owners_seen = gen;
}

/* --policy hetero|agnostic: how often the tick plans while no job waits (then only a grow
 * back or a move can change anything, none due before the minimum run time). */
#define HPLAN_IDLE_S 5.0

/* The queue (at most COORD_QUEUE_MAX jobs, in order) with what each job asks for, from
 * the cache where it has them (c->sched->qdemand holds the last tick's queue in order: looked up
 * from where the last hit was), else read (read_queued). *out: malloc'd, *n of them.
 * JS_OK, or JS_EREDIS (nothing allocated). */
static int queue_read(coordinator_t *c, job_spec_t *spec, sched_queued_t **out, int *n)
{
    *out = NULL;
    *n = 0;
    redisReply *len = redisCommand(c->conn->rc, "LLEN %s", KEY_QUEUE);
    if (!len || len->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(len);
        tickconn_broken(c, "queue");
        return JS_EREDIS;
    }
    int cap = len->integer < COORD_QUEUE_MAX ? (int)(len->integer > 0 ? len->integer : 0) : COORD_QUEUE_MAX;
    freeReplyObject(len);
    char(*ids)[JOB_ID_MAX] = malloc(((size_t)cap + 1) * sizeof *ids);
    sched_queued_t *qd = calloc((size_t)cap + 1, sizeof *qd);
    int got = 0, rc = !ids || !qd ? JS_ENOMEM
                      : cap > 0   ? tickconn_check(c, jobstore_queue_ids(c->conn->rc, ids, cap, &got), "queue")
                                  : JS_OK;
    for (int i = 0, j = 0; rc == JS_OK && i < got; i++) {
        int hit = -1;
        for (int k = 0; k < c->sched->nqdemand && hit < 0; k++) {
            int at = (j + k) % c->sched->nqdemand;
            if (strcmp(c->sched->qdemand[at].id, ids[i]) == 0) hit = at;
        }
        if (hit >= 0) {
            qd[i] = c->sched->qdemand[hit];
            j = hit + 1;
            continue;
        }
        char err[512];
        rc = read_queued(c, ids[i], &qd[i], spec, err, sizeof err);
    }
    free(ids);
    if (rc != JS_OK) {
        free(qd);
        return JS_EREDIS;
    }
    *out = qd;
    *n = got;
    return JS_OK;
}

/* One queued job's place in the view's order (queue_view_pick). */
typedef struct {
    int idx, prio, rank;
} pick_t;

static int pick_cmp(const void *a, const void *b)
{
    const pick_t *x = a, *y = b;
    if (x->prio != y->prio) return x->prio > y->prio ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The queued jobs qd[0..n) the policy decides on, fair by construction: ordered by priority
 * (highest first), then by each owner's count of jobs ahead of it (its owner's jobs of a
 * higher priority, and of its own before it in the queue; jobs without an owner count as one
 * owner's), then by arrival; the first QUEUE_VIEW_MAX of that order into view in queue order
 * (their count returned), the others into beyond in that order (*nbeyond): however many
 * jobs one user queues, every other user's first ones are in the view, and every job of a
 * higher priority before any of a lower. -1 when out of memory. */
static int queue_view_pick(const sched_queued_t *qd, int n, int *view, int *beyond, int *nbeyond)
{
    *nbeyond = 0;
    pick_t *p = malloc(((size_t)n + 1) * sizeof *p);
    int *cnt = calloc(((size_t)n + 1) * 3, sizeof *cnt), *seen = calloc(((size_t)n + 1) * 3, sizeof *seen);
    json_t *owners = json_object();
    int nv = -1, no = 0;
    for (int i = 0; p && cnt && seen && owners && i < n; i++) {
        json_t *k = json_object_get(owners, qd[i].owner);
        if (!k) json_object_set_new(owners, qd[i].owner, k = json_integer(no++));
        p[i] = (pick_t){i, qd[i].priority - POLICY_PRIO_LOW, (int)json_integer_value(k)};
        cnt[p[i].rank * 3 + p[i].prio]++;
    }
    if (p && cnt && seen && owners && json_object_size(owners) == (size_t)no) {
        for (int i = 0; i < n; i++) {
            int o = p[i].rank, r = seen[o * 3 + p[i].prio]++;
            for (int q = p[i].prio + 1; q < 3; q++) r += cnt[o * 3 + q];
            p[i].rank = r;
        }
        qsort(p, (size_t)n, sizeof *p, pick_cmp);
        nv = n < QUEUE_VIEW_MAX ? n : QUEUE_VIEW_MAX;
        for (int i = 0; i < nv; i++) view[i] = p[i].idx;
        qsort(view, (size_t)nv, sizeof *view, int_cmp);
        for (int i = nv; i < n; i++) beyond[(*nbeyond)++] = p[i].idx;
    }
    free(p);
    free(cnt);
    free(seen);
    json_decref(owners);
    return nv;
}

/* The API's queue objects (c->sched->queue_view): the waiting jobs of the view, qv[i] with dec[i],
 * and after them the jobs beyond it, in the view's order, each saying so. */
static void queue_publish(coordinator_t *c, const sched_queued_t *qv, const policy_decision_t *dec, int nv,
                          const sched_queued_t *qd, const int *beyond, int nbeyond)
{
    json_t *view = json_object();
    int waiting = 0;
    for (int i = 0; view && i < nv; i++)
        if (!dec[i].start) {
            json_object_set_new(view, qv[i].id, queue_json(&dec[i]));
            waiting++;
        }
    for (int k = 0; view && k < nbeyond; k++) {
        policy_decision_t d = {.position = waiting + k + 1, .reason = POLICY_REASON_VIEW, .estimated_start = -1};
        snprintf(d.detail, sizeof d.detail,
                 "waits behind the %d queued jobs the scheduler considers at a time, chosen by priority, then each "
                 "user's earliest jobs first: %d come before it",
                 QUEUE_VIEW_MAX, QUEUE_VIEW_MAX + k);
        json_object_set_new(view, qd[beyond[k]].id, queue_json(&d));
    }
    pthread_mutex_lock(&c->sched->queue_lock);
    json_decref(c->sched->queue_view);
    c->sched->queue_view = view;
    pthread_mutex_unlock(&c->sched->queue_lock);
}

/* The runs not done as the policy sees them, into run[] (and rr[] the runs, minw[] their
 * min_world: who may shrink, rowner[] whose slots they hold); *preempting: a stop or shrink
 * for a preemption is under way, *resizing: a change of --policy hetero|agnostic is.
 * Returns their count. */
static int runs_snapshot(coordinator_t *c, double now, policy_running_t *run, coord_run_t **rr, int *minw,
                         const char **rowner, int *preempting, int *resizing)
{
    int nrun = 0;
    for (int i = 0; i < c->runs->n; i++) {
        coord_run_t *r = c->runs->list[i];
        if (r->phase == PH_DONE) continue;
        if (r->phase == PH_KILLING && r->kill_reason == KILL_PREEMPT) *preempting = 1;
        /* a shrink for a preemption, until its smaller attempt holds only what it keeps */
        if (r->world_cap > 0 && r->world > r->world_cap) *preempting = 1;
        /* hetero and agnostic: a change of the policy's in flight (its slots are not free yet) */
        if (r->hplan) *resizing = 1;
        /* only an attempt that trains may be preempted: its start counts for the minimum run */
        rr[nrun] = r;
        run[nrun] = (policy_running_t){r->id,
                                       r->simulated ? 0 : r->world,
                                       r->simulated,
                                       run_finish_estimate(r, now),
                                       policy_priority(r->spec->priority),
                                       r->phase == PH_ACTIVE ? r->started : 0};
        rowner[nrun] = r->owner[0] ? r->owner : NULL;
        minw[nrun++] = r->simulated ? 0 : r->min_world;
    }
    return nrun;
}

/* An elastic victim of a preemption that frees enough by shrinking: stopped now and
 * relaunched at once from its checkpoint on keep ranks (the resize path: KILL_RESIZE,
 * relaunch_soon, launch under r->world_cap), instead of requeued; the resize's reason
 * names the job it made room for. It grows back when slots are free (grow_check). */
static void shrink_for(coordinator_t *c, coord_run_t *r, int keep, double now)
{
    r->world_cap = keep;
    r->shrinking = 1;
    snprintf(r->resize_reason, sizeof r->resize_reason,
             "preempted by %s, of a higher priority: shrunk from %d to %d rank%s, which frees enough, "
             "to resume from its checkpoint",
             r->preempted_by, r->world, keep, keep == 1 ? "" : "s");
    r->stop_notice = launcher_has_notice(r->launcher); /* its ranks checkpoint at their next step */
    run_kill(c, r, KILL_RESIZE, now);
}

/* Stops or shrinks the running jobs (rr, min_world minw) policy_preempt_elastic names for
 * the first waiting job of the view qv (decisions dec of state st). */
static void preempt(coordinator_t *c, const policy_state_t *st, const policy_decision_t *dec, coord_run_t **rr,
                    const int *minw, const sched_queued_t *qv, double now)
{
    int victims[8], keep[8], who = -1;
    int nv = policy_preempt_elastic((policy_kind_t)c->cfg.policy, st, dec, minw, victims, keep, 8, &who);
    for (int v = 0; v < nv; v++) {
        coord_run_t *r = rr[victims[v]];
        snprintf(r->preempted_by, sizeof r->preempted_by, "%s", qv[who].id);
        if (keep[v] > 0) shrink_for(c, r, keep[v], now);
        else run_kill(c, r, KILL_PREEMPT, now);
    }
}

/* The jobs a change in flight holds back (--policy hetero|agnostic) wait for its slots, and
 * say so: first in line, in the policy's order (the others after them); when the relaunch
 * ends is not known. Returns the jobs started now: none. */
static int hold_for_resize(policy_decision_t *dec, int n)
{
    int held = 0, k = 0;
    for (int i = 0; i < n; i++) held += dec[i].start != 0;
    for (int i = 0; i < n; i++) {
        if (!dec[i].start) {
            if (dec[i].position > 0) dec[i].position += held;
            continue;
        }
        dec[i] = (policy_decision_t){.position = ++k, .reason = POLICY_REASON_SLOTS, .estimated_start = -1};
        snprintf(dec[i].detail, sizeof dec[i].detail,
                 "waits for the slots a running job gives up: it is being resized from its checkpoint");
    }
    return 0;
}

/* The jobs a drain requeued (drain.h) wait while fewer slots are usable than they need,
 * whatever the policy decided (it would start a rigid job oversubscribed on what is left),
 * and say so; those it started go first in line. Returns how many starts it took back. */
static int hold_for_drain(const coordinator_t *c, const sched_queued_t *qv, policy_decision_t *dec, int n)
{
    int held = 0;
    char hosts[400];
    drain_hosts_text(c->hosts, hosts, sizeof hosts);
    for (int i = 0; i < n; i++) {
        if (qv[i].simulated || qv[i].drain_need <= c->hosts->slots_usable) continue;
        if (dec[i].start) { dec[i] = (policy_decision_t){.position = ++held, .estimated_start = -1}; }
        dec[i].reason = POLICY_REASON_DRAIN;
        snprintf(dec[i].detail, sizeof dec[i].detail,
                 "stopped by a host's drain: waits for %d usable slot%s (%d now) to resume from its checkpoint; "
                 "draining: %.100s",
                 qv[i].drain_need, qv[i].drain_need == 1 ? "" : "s", c->hosts->slots_usable,
                 hosts[0] ? hosts : "none now");
    }
    for (int i = 0; held && i < n; i++)
        if (!dec[i].start && dec[i].reason != POLICY_REASON_DRAIN && dec[i].position > 0) dec[i].position += held;
    return held;
}

/* Asks the policy (policy.h, --policy) which queued jobs start, from a snapshot: the
 * queue's jobs with what they ask for (read once per job and cached; queue_read), the
 * QUEUE_VIEW_MAX of them queue_view_pick chooses, each owner's max_slots,
 * the slots, and the runs with their measured progress. Claims and launches the jobs it
 * starts (at most SCHEDULE_PER_TICK a tick), and publishes the others' positions, reasons
 * and estimated starts for the API (c->sched->queue_view). */
void schedule_tick(coordinator_t *c, double now)
{
    owners_refresh(c);
    sched_queued_t *qd = NULL, *qv = NULL;
    policy_running_t *run = calloc((size_t)c->runs->n + 1, sizeof *run);
    coord_run_t **rr = calloc((size_t)c->runs->n + 1, sizeof *rr);
    int *minw = calloc((size_t)c->runs->n + 1, sizeof *minw);             /* their min_world: who may shrink */
    const char **rowner = calloc((size_t)c->runs->n + 1, sizeof *rowner); /* whose slots they hold */
    policy_decision_t *dec = NULL;
    policy_queued_t *pq = NULL;
    int *maxs = NULL;
    int *view = NULL, *beyond = NULL;
    job_spec_t *spec = malloc(sizeof *spec);
    hsnap_t hs = {0};
    int n = 0, nall = 0, nbeyond = 0;
    if (!run || !rr || !minw || !rowner || !spec || !c->conn->rc || queue_read(c, spec, &qd, &nall) != JS_OK) goto out;
    view = malloc(((size_t)nall + 1) * sizeof *view);
    beyond = malloc(((size_t)nall + 1) * sizeof *beyond);
    n = view && beyond ? queue_view_pick(qd, nall, view, beyond, &nbeyond) : -1;
    qv = n >= 0 ? calloc((size_t)n + 1, sizeof *qv) : NULL;
    dec = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *dec);
    pq = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *pq);
    maxs = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *maxs);
    if (!qv || !dec || !pq || !maxs) goto out;
    for (int i = 0; i < n; i++) {
        qv[i] = qd[view[i]];
        pq[i] = (policy_queued_t){qv[i].id,
                                  qv[i].world,
                                  qv[i].min_world,
                                  qv[i].simulated,
                                  qv[i].bad,
                                  qv[i].priority,
                                  qv[i].owner[0] ? qv[i].owner : NULL,
                                  0};
    }
    /* hetero and agnostic place whole slots: an oversubscribed job asks for all of them */
    for (int i = 0; i < n && (c->cfg.policy == POLICY_HETERO || c->cfg.policy == POLICY_AGNOSTIC); i++)
        if (!pq[i].simulated && c->hosts->slots_usable > 0 && pq[i].world > c->hosts->slots_usable)
            pq[i].world = c->hosts->slots_usable;
    free(c->sched->qdemand);
    c->sched->qdemand = qd; /* the whole queue: the next tick's cache */
    c->sched->nqdemand = nall;
    qd = NULL;
    int preempting = 0, resizing = 0;
    int nrun = runs_snapshot(c, now, run, rr, minw, rowner, &preempting, &resizing);
    policy_state_t st = {
        .now = now,
        .slots_total = c->hosts->slots_total,
        .slots_usable = c->hosts->slots_usable,
        .sim_slots = c->sim_launcher ? c->sim_slots : 0,
        .running = run,
        .nrunning = nrun,
        .queued = pq,
        .nqueued = n,
        .preempt_min_run_s = c->cfg.preempt_min_run_s,
        .running_owner = rowner,
        .queued_max_slots = maxs,
    };
    json_t *users = owners_read(c, pq, n, maxs); /* each owner's max_slots, and their weights */
    if (c->cfg.policy != POLICY_FIFO) fair_share(c, now, pq, n, users);
    json_decref(users);
    /* hetero and agnostic: fair's admission, then places on host classes (policy_plan) */
    int classy = c->cfg.policy == POLICY_HETERO || c->cfg.policy == POLICY_AGNOSTIC, started = -1;
    /* (each tick while jobs wait; with none waiting, every HPLAN_IDLE_S while jobs run: a grow
     * back or a move onto the hosts another job left; else nothing to place or change, and no
     * profiles read). The plan's changes of running jobs are applied one plan at a time:
     * while one is in flight (resizing), or in the tick that applies one, no job is started
     * (the slots it frees are not free until its stop is over). */
    int applied = 0;
    int replan = nrun > 0 && (now - c->sched->hplan_at >= HPLAN_IDLE_S || now < c->sched->hplan_at);
    if (classy && (n > 0 || replan) && hsnap_build(c, now, rr, nrun, qv, n, &hs) == 0) {
        c->sched->hplan_at = now;
        st.hetero = &hs.h;
        policy_resize_t *rz = calloc((size_t)nrun + 1, sizeof *rz);
        int nrz = 0;
        if (rz) started = policy_plan((policy_kind_t)c->cfg.policy, &st, dec, rz, &nrz);
        /* shrinks first: the slots they give up are free for the grows and moves after them */
        for (int pass = 0; started >= 0 && !resizing && pass < 2; pass++)
            for (int i = 0; i < nrz; i++) {
                int x = rz[i].running, cap;
                hclass_change_t k = hclass_change(hs.hrun[x].alloc, rz[i].alloc, hs.h.nclasses, 0, &cap);
                if ((k == HCLASS_SHRINK) == (pass == 0))
                    applied += hplan_apply(c, &hs, rr[x], &hs.hrun[x], &rz[i], now);
            }
        free(rz);
    }
    if (started < 0) {
        st.hetero = NULL;
        started = policy_decide((policy_kind_t)c->cfg.policy, &st, dec);
    }
    /* Preemption: one at a time (the slots of jobs being stopped are not free yet). */
    if (!preempting) preempt(c, &st, dec, rr, minw, qv, now);
    started -= hold_for_drain(c, qv, dec, n);
    if (classy && (resizing || applied)) started = hold_for_resize(dec, n);
    queue_publish(c, qv, dec, n, c->sched->qdemand, beyond, nbeyond);
    /* The jobs started, in the policy's decisions (fair's backfilled ones anywhere). */
    for (int i = 0, claims = 0; i < n && claims < started && claims < SCHEDULE_PER_TICK; i++) {
        if (!dec[i].start) continue;
        claims++;
        if (claim_and_launch(c, &qv[i], &dec[i], st.hetero ? &hs : NULL, st.hetero ? &hs.hq[i] : NULL, now) != 0) break;
    }
out:
    hsnap_free(&hs);
    free(rr);
    free(minw);
    free(rowner);
    free(maxs);
    free(view);
    free(beyond);
    free(qd);
    free(qv);
    free(run);
    free(dec);
    free(pq);
    free(spec);
}
