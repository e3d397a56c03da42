/* coordinator/experiment.c - see experiment.h. The experiment's hash holds what it was
 * given (spec, search, every trial's params, fixed at submission) and, per trial, one field
 * "trial:<i>" that only the tick writes after the submission (its job, state, epochs, last
 * metric, the metrics at the rungs it reached, and how far its job's coarse metrics stream
 * has been read; under PBT also its values now, its exploits and its previous job). The
 * API writes the state only through a script that changes a RUNNING experiment, so a
 * cancel and the tick's end of an experiment cannot overwrite each other.
 *
 * PBT's exploit (pbt_exploit): the trial's job is cancelled, the better trial's newest
 * checkpoint is hard-linked as STATE_DIR/jobs/{the cancelled job}/exploit.ckpt (a snapshot:
 * the donor's worker replaces NAME.ckpt by renaming, never in place), and the trial goes
 * on as a new job of its perturbed values whose hash's "adopt_from" names the cancelled
 * job: its launch passes that file as pacer-worker --adopt-checkpoint (run_launch.c), which the
 * worker takes while the new job has no checkpoint of its own. A new job, not the old one
 * relaunched: a job's spec never changes, and the trial's values are in it. */
#include "experiment.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "clog.h"
#include "coord_internal.h"
#include "errmsg.h"
#include "jobstore.h"
#include "jsonbody.h"
#include "run.h"
#include "search.h"
#include "tickconn.h"

#define EXP_NAME_MAX 56 /* a trial's job is "<name>-t<i>", a valid job name */
#define EXP_LIST_DEFAULT 50
#define EXP_LIST_MAX 1000
#define EXP_PAGE 256         /* stream entries read per page */
#define EXP_PAGES_PER_TICK 8 /* pages per trial and tick: the rest waits for the next */
#define EXP_STATE_MAX 16
#define EXP_REASON_MAX 512
#define EXP_SUMMARY_MAX (1 << 22) /* a job's summary.json is a few KiB: one far larger is not read */

/* One trial as the tick keeps it (the "trial:<i>" field). */
typedef struct {
    char job[JOB_ID_MAX];      /* "" while PENDING */
    char state[EXP_STATE_MAX]; /* PENDING, a job state, or STOPPED (by ASHA) */
    int epochs;                /* epochs trained: the latest epoch record's */
    double metric;             /* the latest evaluation; NAN = none yet */
    int nrec;                  /* rungs reached */
    double rec[SEARCH_RUNGS_MAX];
    char cursor[48];  /* the coarse stream's last id read */
    char reason[256]; /* why it failed to start, or "" */
    /* pbt */
    json_t *params;        /* the values now (NULL: as given at submission) */
    json_t *exploits;      /* [{"epoch", "from", "from_job", "job", "metric", "from_metric", "params"}] or NULL */
    char prev[JOB_ID_MAX]; /* the job its last exploit ended: the next job adopts its exploit.ckpt */
} trial_t;

typedef struct {
    char id[EXPERIMENT_ID_MAX], name[SPEC_NAME_MAX], owner[USER_OWNER_MAX + 1];
    char state[EXP_STATE_MAX], reason[EXP_REASON_MAX];
    user_role_t role;
    double submitted, finished;
    json_t *spec, *params, *search_doc;
    search_t search;
    int nrungs, rungs[SEARCH_RUNGS_MAX];
    trial_t *trials; /* search.trials of them */
    unsigned char *dirty;
} exp_t;

static const char *const FINAL[] = {"SUCCEEDED", "FAILED", "CANCELLED", "STOPPED", NULL};

static int state_final(const char *s)
{
    for (const char *const *f = FINAL; *f; f++)
        if (strcmp(*f, s) == 0) return 1;
    return 0;
}

int experiment_id_valid(const char *id)
{
    if (!id || id[0] != 'e' || id[1] != '-' || !id[2]) return 0;
    size_t n = 0;
    for (const char *p = id + 2; *p; p++, n++)
        if (*p < '0' || *p > '9' || n >= 18) return 0;
    return 1;
}

static redisContext *borrow(coordinator_t *c, char *err, size_t errlen)
{
    char perr[256];
    redisContext *rc = jobstore_pool_get(c->pool, perr, sizeof perr);
    if (!rc) errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown);
    return rc;
}

static void exp_free(exp_t *e)
{
    json_decref(e->spec);
    json_decref(e->params);
    json_decref(e->search_doc);
    search_free(&e->search);
    for (int i = 0; e->trials && i < e->search.trials; i++) {
        json_decref(e->trials[i].params);
        json_decref(e->trials[i].exploits);
    }
    free(e->trials);
    free(e->dirty);
    memset(e, 0, sizeof *e);
}

/* ---- a trial's field ------------------------------------------------------------------------------------------ */

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static char *trial_text(const trial_t *t)
{
    json_t *rungs = json_array();
    for (int k = 0; rungs && k < t->nrec; k++) json_array_append_new(rungs, num_or_null(t->rec[k]));
    json_t *o = json_pack("{s:o, s:s, s:i, s:o, s:o, s:s, s:s}", "job", t->job[0] ? json_string(t->job) : json_null(),
                          "state", t->state, "epochs", t->epochs, "metric", num_or_null(t->metric), "rungs", rungs,
                          "cursor", t->cursor, "reason", t->reason);
    if (o && t->params) json_object_set(o, "params", t->params);
    if (o && t->exploits) json_object_set(o, "exploits", t->exploits);
    if (o && t->prev[0]) json_object_set_new(o, "prev", json_string(t->prev));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

/* A fresh PENDING trial; t holds no PBT parts (they are not released here). */
static void trial_pending(trial_t *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->state, sizeof t->state, "PENDING");
    snprintf(t->cursor, sizeof t->cursor, "0");
    t->metric = NAN;
}

/* A stored trial's PBT parts, bounded: the values an object of at most SEARCH_KEYS_MAX
 * fields, at most SEARCH_RUNGS_MAX exploits (one per point at most), prev a job id. */
static int trial_parse_pbt(const json_t *o, trial_t *t)
{
    const json_t *params = json_object_get(o, "params"), *ex = json_object_get(o, "exploits");
    const json_t *prev = json_object_get(o, "prev");
    if (params && (!json_is_object(params) || json_object_size(params) > SEARCH_KEYS_MAX)) return -1;
    if (ex && (!json_is_array(ex) || json_array_size(ex) > SEARCH_RUNGS_MAX)) return -1;
    for (size_t k = 0; ex && k < json_array_size(ex); k++)
        if (!json_is_object(json_array_get(ex, k))) return -1;
    if (prev && (!json_string_value(prev) || !job_id_valid(json_string_value(prev)))) return -1;
    t->params = params ? json_deep_copy(params) : NULL;
    t->exploits = ex ? json_deep_copy(ex) : NULL;
    if (prev) snprintf(t->prev, sizeof t->prev, "%s", json_string_value(prev));
    return 0;
}

/* A stored trial, each part checked: Redis is outside input. Returns 0, or -1 (damaged). */
static int trial_parse(const char *text, trial_t *t)
{
    trial_pending(t);
    json_t *o = json_loads(text, 0, NULL);
    const char *job = json_string_value(json_object_get(o, "job"));
    const char *state = json_string_value(json_object_get(o, "state"));
    const char *cursor = json_string_value(json_object_get(o, "cursor"));
    const char *reason = json_string_value(json_object_get(o, "reason"));
    json_t *rungs = json_object_get(o, "rungs"), *m = json_object_get(o, "metric");
    json_t *ep = json_object_get(o, "epochs");
    job_state_t js;
    int ok = json_is_object(o) && state &&
             (strcmp(state, "PENDING") == 0 || strcmp(state, "STOPPED") == 0 || job_state_parse(state, &js) == 0);
    ok = ok && (!job || job_id_valid(job)) && (!cursor || jobstore_stream_id_parse(cursor, NULL, NULL) == 0);
    ok = ok && json_array_size(rungs) <= SEARCH_RUNGS_MAX && json_is_integer(ep) && json_integer_value(ep) >= 0 &&
         json_integer_value(ep) <= SEARCH_EPOCHS_MAX;
    ok = ok && trial_parse_pbt(o, t) == 0;
    if (ok) {
        snprintf(t->job, sizeof t->job, "%s", job ? job : "");
        snprintf(t->state, sizeof t->state, "%s", state);
        if (cursor) snprintf(t->cursor, sizeof t->cursor, "%s", cursor);
        if (reason) snprintf(t->reason, sizeof t->reason, "%s", reason);
        t->epochs = (int)json_integer_value(ep);
        t->metric = json_is_number(m) ? json_number_value(m) : NAN;
        t->nrec = (int)json_array_size(rungs);
        for (int k = 0; k < t->nrec; k++) {
            json_t *v = json_array_get(rungs, (size_t)k);
            t->rec[k] = json_is_number(v) ? json_number_value(v) : NAN;
        }
    }
    json_decref(o);
    return ok ? 0 : -1;
}

/* ---- loading ------------------------------------------------------------------------------------------------- */

static const char *field(const redisReply *r, const char *name)
{
    for (size_t i = 0; r && i + 1 < r->elements; i += 2) {
        const char *k = reply_str(r->element[i]);
        if (k && strcmp(k, name) == 0) return reply_str(r->element[i + 1]);
    }
    return NULL;
}

/* The given parts: spec, search, params. */
static int exp_given(exp_t *e, const redisReply *r, char *err, size_t errlen)
{
    const char *spec = field(r, "spec"), *search = field(r, "search"), *params = field(r, "params");
    e->spec = spec ? json_loads(spec, 0, NULL) : NULL;
    e->search_doc = search ? json_loads(search, 0, NULL) : NULL;
    e->params = params ? json_loads(params, 0, NULL) : NULL;
    json_t *ep = json_object_get(e->spec, "epochs");
    if (!json_is_object(e->spec) || !json_is_array(e->params) || !json_is_integer(ep))
        return errmsg(err, errlen, "experiment %s: its stored spec or params are damaged", e->id);
    if (search_parse(e->search_doc, (int)json_integer_value(ep), &e->search, err, errlen) != 0) return -1;
    if (json_array_size(e->params) != (size_t)e->search.trials)
        return errmsg(err, errlen, "experiment %s: %zu params stored for %d trials", e->id, json_array_size(e->params),
                      e->search.trials);
    e->nrungs = search_rungs(&e->search, e->rungs, SEARCH_RUNGS_MAX);
    return 0;
}

/* HGETALL of the experiment into e; JS_ENOTFOUND, JS_EREDIS, or -100 damaged (err says). */
static int exp_load(redisContext *rc, const char *id, exp_t *e, char *err, size_t errlen)
{
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", id);
    redisReply *r = redisCommand(rc, "HGETALL " KEY_EXPERIMENT, id);
    if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY) {
        if (r) freeReplyObject(r);
        return JS_EREDIS;
    }
    int code = r->elements == 0 ? JS_ENOTFOUND : 0;
    const char *name = field(r, "name"), *owner = field(r, "owner"), *state = field(r, "state");
    const char *reason = field(r, "reason"), *role = field(r, "role");
    if (code == 0 && (!name || !state)) code = errmsg(err, errlen, "experiment %s: damaged (no name or state)", id);
    if (code == 0) {
        snprintf(e->name, sizeof e->name, "%s", name);
        snprintf(e->owner, sizeof e->owner, "%s", owner ? owner : "");
        snprintf(e->state, sizeof e->state, "%s", state);
        snprintf(e->reason, sizeof e->reason, "%s", reason ? reason : "");
        if (!role || users_role_parse(role, &e->role) != 0) e->role = USER_MEMBER;
        const char *sub = field(r, "submitted"), *fin = field(r, "finished");
        e->submitted = sub ? strtod(sub, NULL) : 0;
        e->finished = fin ? strtod(fin, NULL) : 0;
        code = exp_given(e, r, err, errlen);
    }
    if (code == 0) {
        int n = e->search.trials;
        e->trials = calloc((size_t)n, sizeof *e->trials);
        e->dirty = calloc((size_t)n, 1);
        if (!e->trials || !e->dirty) code = errmsg(err, errlen, "out of memory");
        for (int i = 0; code == 0 && i < n; i++) {
            char f[32];
            snprintf(f, sizeof f, "trial:%d", i);
            const char *t = field(r, f);
            if (!t) trial_pending(&e->trials[i]);
            else if (trial_parse(t, &e->trials[i]) != 0)
                code = errmsg(err, errlen, "experiment %s: %s is damaged", id, f);
        }
    }
    freeReplyObject(r);
    if (code == -1) code = -100;
    return code;
}

/* ---- the answer ---------------------------------------------------------------------------------------------- */

/* Trial i's values now: a PBT trial's last exploit's, else those given at submission. */
static json_t *trial_params(const exp_t *e, int i)
{
    return e->trials[i].params ? e->trials[i].params : json_array_get(e->params, (size_t)i);
}

/* How far a trial got, for "best": rungs reached, one more when it trained every epoch. */
static int trial_level(const exp_t *e, const trial_t *t) { return t->nrec + (t->epochs >= e->search.epochs); }

static int better(const exp_t *e, double a, double b) { return e->search.mode_max ? a > b : a < b; }

static json_t *best_json(const exp_t *e)
{
    int best = -1;
    for (int i = 0; i < e->search.trials; i++) {
        const trial_t *t = &e->trials[i];
        if (!isfinite(t->metric)) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        int la = trial_level(e, t), lb = trial_level(e, &e->trials[best]);
        if (la > lb || (la == lb && better(e, t->metric, e->trials[best].metric))) best = i;
    }
    if (best < 0) return json_null();
    const trial_t *t = &e->trials[best];
    return json_pack("{s:i, s:o, s:O, s:f, s:i}", "trial", best, "job", t->job[0] ? json_string(t->job) : json_null(),
                     "params", trial_params(e, best), "metric", t->metric, "epochs_trained", t->epochs);
}

static json_t *trials_json(const exp_t *e, json_t *counts)
{
    json_t *a = json_array();
    for (int i = 0; a && i < e->search.trials; i++) {
        const trial_t *t = &e->trials[i];
        json_t *rm = json_array();
        for (int k = 0; rm && k < t->nrec; k++) json_array_append_new(rm, num_or_null(t->rec[k]));
        json_t *o = json_pack("{s:i, s:o, s:O, s:s, s:i, s:i, s:o, s:o}", "trial", i, "job",
                              t->job[0] ? json_string(t->job) : json_null(), "params", trial_params(e, i), "state",
                              t->state, "rung", t->nrec, "epochs_trained", t->epochs, "metric", num_or_null(t->metric),
                              "rung_metrics", rm);
        if (o && t->reason[0]) json_object_set_new(o, "reason", json_string(t->reason));
        if (o && e->search.method == SEARCH_PBT)
            json_object_set_new(o, "exploits", t->exploits ? json_deep_copy(t->exploits) : json_array());
        json_array_append_new(a, o);
        json_t *n = json_object_get(counts, t->state);
        json_object_set_new(counts, t->state, json_integer(n ? json_integer_value(n) + 1 : 1));
    }
    return a;
}

static json_t *exp_json(const exp_t *e, int full)
{
    json_t *counts = json_object(), *rungs = json_array();
    for (int k = 0; rungs && k < e->nrungs; k++) json_array_append_new(rungs, json_integer(e->rungs[k]));
    json_t *trials = trials_json(e, counts);
    json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:i, s:f, s:o, s:o, s:o}", "id", e->id, "name", e->name,
                          "owner", e->owner[0] ? json_string(e->owner) : json_null(), "state", e->state, "method",
                          json_string_value(json_object_get(e->search_doc, "method")), "metric", e->search.metric,
                          "trials_total", e->search.trials, "submitted", e->submitted, "finished",
                          e->finished > 0 ? json_real(e->finished) : json_null(), "best", best_json(e), "counts",
                          counts);
    if (!o) {
        json_decref(trials);
        json_decref(rungs);
        return NULL;
    }
    if (e->reason[0]) json_object_set_new(o, "reason", json_string(e->reason));
    if (full) {
        json_object_set(o, "spec", e->spec);
        json_object_set(o, "search", e->search_doc);
        json_object_set_new(o, "rungs", rungs);
        json_object_set_new(o, "trials", trials);
    } else {
        json_decref(rungs);
        json_decref(trials);
    }
    return o;
}

static int load_code(int js) { return js == -100 ? COORD_EINTERNAL : coord_js_to_coord(js); }

int coord_experiment_get(coordinator_t *c, const char *id, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (!experiment_id_valid(id)) return errmsg_code(err, errlen, COORD_ENOTFOUND, "no experiment %.64s", id ? id : "");
    redisContext *rc = borrow(c, err, errlen);
    if (!rc) return COORD_EUNAVAIL;
    exp_t e;
    char lerr[256] = "";
    int js = exp_load(rc, id, &e, lerr, sizeof lerr);
    jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
    if (js == -100) {
        clog_printf("%s", lerr);
        errmsg(err, errlen, "%s", lerr);
    }
    if (js == JS_ENOTFOUND) errmsg(err, errlen, "no experiment %s", id);
    if (js == 0) *out = exp_json(&e, 1);
    exp_free(&e);
    if (js != 0) return load_code(js);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

int coord_experiment_list(coordinator_t *c, long offset, long limit, json_t **out)
{
    *out = NULL;
    if (limit <= 0) limit = EXP_LIST_DEFAULT;
    if (limit > EXP_LIST_MAX) limit = EXP_LIST_MAX;
    if (offset < 0) return COORD_EINVAL;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *n = redisCommand(rc, "ZCARD %s", KEY_EXPERIMENTS);
    redisReply *ids = redisCommand(rc, "ZREVRANGE %s %ld %ld", KEY_EXPERIMENTS, offset, offset + limit - 1);
    int broken = !reply_ok(n) || !reply_ok(ids) || ids->type != REDIS_REPLY_ARRAY;
    json_t *list = json_array();
    for (size_t i = 0; !broken && list && i < ids->elements; i++) {
        const char *id = reply_str(ids->element[i]);
        exp_t e;
        char err[256];
        int js = id && experiment_id_valid(id) ? exp_load(rc, id, &e, err, sizeof err) : JS_ENOTFOUND;
        if (js == JS_EREDIS) broken = 1;
        if (js == 0) json_array_append_new(list, exp_json(&e, 0));
        if (js == 0 || js == -100) exp_free(&e);
    }
    if (!broken && list)
        *out = json_pack("{s:o, s:I, s:i, s:i}", "experiments", list, "total", (json_int_t)reply_int(n, 0), "offset",
                         (int)offset, "limit", (int)limit);
    else json_decref(list);
    if (n) freeReplyObject(n);
    if (ids) freeReplyObject(ids);
    jobstore_pool_put(c->pool, rc, broken);
    return broken ? COORD_EUNAVAIL : *out ? COORD_OK : COORD_EINTERNAL;
}

int coord_experiment_owner(coordinator_t *c, const char *id, char *owner, size_t len, int *exists)
{
    owner[0] = 0;
    *exists = 0;
    if (!experiment_id_valid(id)) return COORD_OK;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *r = redisCommand(rc, "HMGET " KEY_EXPERIMENT " id owner", id);
    int ok = reply_ok(r) && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
    if (ok) {
        *exists = r->element[0]->type == REDIS_REPLY_STRING;
        const char *o = reply_str(r->element[1]);
        if (o && strlen(o) < len) snprintf(owner, len, "%s", o);
        else if (o) snprintf(owner, len, "#unknown");
    }
    if (r) freeReplyObject(r);
    jobstore_pool_put(c->pool, rc, !ok);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}

/* ---- state changes ------------------------------------------------------------------------------------------- */

/* Sets a RUNNING experiment's state, reason and finished time, in one script, and with
 * leave takes it out of the active set (a cancelled one stays until the tick has seen its
 * trials end): 1 done, 0 it was not RUNNING (*was: its state), or a JS_*. */
static int exp_end(redisContext *rc, const char *id, const char *state, const char *reason, double now, int leave,
                   char *was, size_t waslen)
{
    static const char *script = "local s = redis.call('HGET', KEYS[1], 'state')\n"
                                "if not s then return {-1, ''} end\n"
                                "if s ~= 'RUNNING' then return {0, s} end\n"
                                "redis.call('HSET', KEYS[1], 'state', ARGV[1], 'reason', ARGV[2], 'finished', ARGV[3])\n"
                                "if ARGV[5] == '1' then redis.call('SREM', KEYS[2], ARGV[4]) end\n"
                                "return {1, ARGV[1]}";
    char key[96], when[32];
    snprintf(key, sizeof key, KEY_EXPERIMENT, id);
    snprintf(when, sizeof when, "%.3f", now);
    redisReply *r = redisCommand(rc, "EVAL %s 2 %s %s %s %s %s %s %s", script, key, KEY_EXPERIMENTS_ACTIVE, state,
                                 reason, when, id, leave ? "1" : "0");
    if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        if (r) freeReplyObject(r);
        return JS_EREDIS;
    }
    long long k = reply_int(r->element[0], -1);
    if (was && reply_str(r->element[1])) snprintf(was, waslen, "%s", reply_str(r->element[1]));
    freeReplyObject(r);
    return k < 0 ? JS_ENOTFOUND : (int)k;
}

static void exp_event(redisContext *rc, const exp_t *e, int trial, const char *action, json_t *extra, double now)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:f}", "type", "experiment", "experiment", e->id, "action", action, "time",
                           now);
    if (ev && trial >= 0) {
        json_object_set_new(ev, "trial", json_integer(trial));
        if (e->trials[trial].job[0]) json_object_set_new(ev, "job", json_string(e->trials[trial].job));
    }
    if (ev && extra) json_object_update(ev, extra);
    json_decref(extra);
    if (ev) jobstore_event(rc, ev);
    json_decref(ev);
}

/* Cancels the trials' jobs that may still run; ESTATE (finished meanwhile) is no error. */
static void cancel_trial_jobs(coordinator_t *c, const exp_t *e)
{
    for (int i = 0; i < e->search.trials; i++) {
        const trial_t *t = &e->trials[i];
        if (!t->job[0] || state_final(t->state)) continue;
        char err[256];
        int code = coord_cancel(c, t->job, err, sizeof err);
        if (code != COORD_OK && code != COORD_ESTATE && code != COORD_ENOTFOUND)
            clog_printf("experiment %s: cancel of %s: %s", e->id, t->job, err);
    }
}

int coord_experiment_cancel(coordinator_t *c, const char *id, char *err, size_t errlen)
{
    if (!experiment_id_valid(id)) {
        errmsg(err, errlen, "no experiment %s", id ? id : "(null)");
        return COORD_ENOTFOUND;
    }
    redisContext *rc = borrow(c, err, errlen);
    if (!rc) return COORD_EUNAVAIL;
    char was[32] = "";
    int k = exp_end(rc, id, "CANCELLED", "cancelled", clock_wall_s(), 0, was, sizeof was);
    if (k != 1) {
        jobstore_pool_put(c->pool, rc, k == JS_EREDIS);
        if (k == 0) return errmsg_code(err, errlen, COORD_ESTATE, "experiment %s has already finished (%s)", id, was);
        if (k == JS_ENOTFOUND) return errmsg_code(err, errlen, COORD_ENOTFOUND, "no experiment %s", id);
        return errmsg_code(err, errlen, COORD_EUNAVAIL, "cancel failed: %s", coord_strerror(COORD_EUNAVAIL));
    }
    exp_t e;
    char lerr[256];
    int js = exp_load(rc, id, &e, lerr, sizeof lerr);
    if (js == 0) exp_event(rc, &e, -1, "cancelled", NULL, clock_wall_s());
    jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
    /* the tick cancels them too (a trial it started meanwhile), and records their ends */
    if (js == 0) cancel_trial_jobs(c, &e);
    else clog_printf("experiment %s: cancelled, but its trials could not be read: %s", id, lerr);
    exp_free(&e);
    clog_printf("experiment %s cancelled", id);
    return COORD_OK;
}

/* ---- submission ---------------------------------------------------------------------------------------------- */

/* Trial i's spec as text: the base spec with the trial's name and params set. */
static char *trial_spec_text(const json_t *spec, const char *name, const json_t *params, int i, char *err, size_t errlen)
{
    json_t *doc = json_deep_copy(spec);
    char job_name[SPEC_NAME_MAX];
    snprintf(job_name, sizeof job_name, "%s-t%d", name, i);
    if (!doc || json_object_set_new(doc, "name", json_string(job_name)) != 0) {
        json_decref(doc);
        errmsg(err, errlen, "out of memory");
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        if (search_apply(doc, key, json_deep_copy(v)) != 0) {
            json_decref(doc);
            errmsg(err, errlen, "search.space.%s: the spec has no object on this path to set it in", key);
            return NULL;
        }
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text) errmsg(err, errlen, "out of memory");
    return text;
}

/* Every trial's spec passes the spec's own checks, with the spec's own message. */
static int trials_valid(const json_t *spec, const char *name, const json_t *params, char *err, size_t errlen)
{
    job_spec_t *s = malloc(sizeof *s);
    if (!s) return errmsg(err, errlen, "out of memory");
    int bad = 0;
    for (size_t i = 0; !bad && i < json_array_size(params); i++) {
        json_t *p = json_array_get(params, i);
        char *text = trial_spec_text(spec, name, p, (int)i, err, errlen);
        char perr[512];
        if (!text) bad = 1;
        else if (spec_parse(text, s, perr, sizeof perr) != 0) {
            char *shown = json_dumps(p, JSON_COMPACT);
            errmsg(err, errlen, "%s (trial %zu of the search: %.200s)", perr, i, shown ? shown : "?");
            free(shown);
            bad = 1;
        }
        free(text);
    }
    free(s);
    return bad ? -1 : 0;
}

/* Submits trial i as the experiment's owner and records it in e (dirty). */
static int trial_submit(coordinator_t *c, exp_t *e, int i, const coord_caller_t *by, char *err, size_t errlen)
{
    char *text = trial_spec_text(e->spec, e->name, trial_params(e, i), i, err, errlen);
    if (!text) return COORD_EINTERNAL;
    char job[COORD_ID_MAX];
    int code = coord_submit_as(c, text, NULL, by, job, sizeof job, err, errlen);
    free(text);
    if (code != COORD_OK) return code;
    trial_t *t = &e->trials[i];
    snprintf(t->job, sizeof t->job, "%s", job);
    snprintf(t->state, sizeof t->state, "QUEUED");
    t->reason[0] = 0;
    e->dirty[i] = 2; /* a new job: its hash gets the experiment's id (exp_save) */
    return COORD_OK;
}

/* HSET of the trials marked dirty (1), and of new trials' jobs (2) also the job hash's
 * "experiment" and "trial". */
static int exp_save(redisContext *rc, exp_t *e)
{
    int n = 0;
    for (int i = 0; i < e->search.trials; i++) {
        if (!e->dirty[i]) continue;
        char *text = trial_text(&e->trials[i]);
        if (!text) continue;
        char f[32];
        snprintf(f, sizeof f, "trial:%d", i);
        redisReply *r = redisCommand(rc, "HSET " KEY_EXPERIMENT " %s %s", e->id, f, text);
        free(text);
        int ok = reply_ok(r);
        if (r) freeReplyObject(r);
        if (!ok) return JS_EREDIS;
        if (e->dirty[i] == 2 && e->trials[i].job[0]) {
            r = redisCommand(rc, "HSET " KEY_JOB " experiment %s trial %d", e->trials[i].job, e->id, i);
            if (r) freeReplyObject(r);
        }
        /* before the job's first launch (the same tick): it starts from the exploit's file */
        if (e->dirty[i] == 2 && e->trials[i].job[0] && e->trials[i].prev[0]) {
            r = redisCommand(rc, "HSET " KEY_JOB " adopt_from %s", e->trials[i].job, e->trials[i].prev);
            if (r) freeReplyObject(r);
        }
        e->dirty[i] = 0;
        n++;
    }
    return n;
}

/* The body's parts: name, spec (parsed into *doc and checked), search. */
static int body_parts(const json_t *body, exp_t *e, char *err, size_t errlen)
{
    if (!json_is_object(body)) return errmsg(err, errlen, "experiment: the body must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "name") && strcmp(key, "spec") && strcmp(key, "search"))
            return errmsg(err, errlen, "%s: unknown field (an experiment has name, spec and search)", key);
    }
    const json_t *spec = json_object_get(body, "spec"), *name = json_object_get(body, "name");
    if (!json_is_object(spec)) return errmsg(err, errlen, "spec: missing, or not an object (a job spec)");
    char *text = json_dumps(spec, JSON_COMPACT);
    job_spec_t *s = malloc(sizeof *s);
    int bad = !text || !s ? errmsg(err, errlen, "out of memory") : spec_parse(text, s, err, errlen);
    free(text);
    if (!bad) {
        const char *n = name ? json_string_value(name) : s->name;
        if (!n || !spec_name_valid(n) || strlen(n) > EXP_NAME_MAX)
            bad = errmsg(err, errlen, "name: must be 1 to %d letters, digits, '.', '_' or '-'", EXP_NAME_MAX);
        else snprintf(e->name, sizeof e->name, "%s", n);
    }
    int epochs = s ? s->epochs : 0;
    free(s);
    if (bad) return -1;
    e->spec = json_deep_copy(spec);
    json_object_set_new(e->spec, "epochs", json_integer(epochs)); /* the default, made explicit */
    if (search_parse(json_object_get(body, "search"), epochs, &e->search, err, errlen) != 0) return -1;
    e->search_doc = search_to_json(&e->search);
    e->params = search_trial_params(&e->search);
    e->nrungs = search_rungs(&e->search, e->rungs, SEARCH_RUNGS_MAX);
    e->trials = calloc((size_t)e->search.trials, sizeof *e->trials);
    e->dirty = calloc((size_t)e->search.trials, 1);
    if (!e->spec || !e->search_doc || !e->params || !e->trials || !e->dirty)
        return errmsg(err, errlen, "out of memory");
    for (int i = 0; i < e->search.trials; i++) trial_pending(&e->trials[i]);
    return trials_valid(e->spec, e->name, e->params, err, errlen);
}

/* The experiment's hash, its place in the lists and its first trial, in one transaction. */
static int exp_store(redisContext *rc, exp_t *e)
{
    char *spec = json_dumps(e->spec, JSON_COMPACT), *search = json_dumps(e->search_doc, JSON_COMPACT);
    char *params = json_dumps(e->params, JSON_COMPACT), *t0 = trial_text(&e->trials[0]);
    int rc_code = JS_ENOMEM;
    if (spec && search && params && t0) {
        char key[96], when[32];
        snprintf(key, sizeof key, KEY_EXPERIMENT, e->id);
        snprintf(when, sizeof when, "%.3f", e->submitted);
        redisAppendCommand(rc, "MULTI");
        redisAppendCommand(rc,
                           "HSET %s id %s name %s owner %s role %s state RUNNING submitted %s spec %s search %s "
                           "params %s trial:0 %s",
                           key, e->id, e->name, e->owner, users_role_name(e->role), when, spec, search, params, t0);
        redisAppendCommand(rc, "ZADD %s %s %s", KEY_EXPERIMENTS, when, e->id);
        redisAppendCommand(rc, "SADD %s %s", KEY_EXPERIMENTS_ACTIVE, e->id);
        redisAppendCommand(rc, "EXEC");
        rc_code = JS_OK;
        for (int i = 0; i < 5; i++) {
            redisReply *r = NULL;
            if (redisGetReply(rc, (void **)&r) != REDIS_OK || !reply_ok(r)) rc_code = JS_EREDIS;
            if (r) freeReplyObject(r);
            if (rc_code == JS_EREDIS && !r) break;
        }
    }
    free(spec);
    free(search);
    free(params);
    free(t0);
    return rc_code;
}

/* SCARD of the active set against EXPERIMENTS_ACTIVE_MAX, and INCR of the id counter. */
static int exp_new_id(coordinator_t *c, redisContext *rc, exp_t *e, char *err, size_t errlen)
{
    redisReply *n = redisCommand(rc, "SCARD %s", KEY_EXPERIMENTS_ACTIVE);
    long long active = reply_int(n, -1);
    if (n) freeReplyObject(n);
    if (active < 0) return errmsg_code(err, errlen, COORD_EUNAVAIL, "Redis at %s is unreachable", c->redis_url_shown);
    if (active >= EXPERIMENTS_ACTIVE_MAX)
        return errmsg_code(err, errlen, COORD_ELIMIT, "%lld experiments are running, the most at once (%d)", active,
                           EXPERIMENTS_ACTIVE_MAX);
    redisReply *r = redisCommand(rc, "INCR %s", KEY_EXPERIMENT_SEQ);
    long long seq = reply_int(r, -1);
    if (r) freeReplyObject(r);
    if (seq < 0) return errmsg_code(err, errlen, COORD_EUNAVAIL, "Redis at %s is unreachable", c->redis_url_shown);
    snprintf(e->id, sizeof e->id, "e-%lld", seq);
    return COORD_OK;
}

int coord_experiment_submit(coordinator_t *c, const json_t *body, const coord_caller_t *by, char *id, size_t idlen,
                            json_t **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (err && errlen) err[0] = 0;
    exp_t e;
    memset(&e, 0, sizeof e);
    coord_userdata_sync(c, NULL); /* a user's data set named by dataset.name */
    if (body_parts(body, &e, err, errlen) != 0) {
        exp_free(&e);
        return COORD_EINVAL;
    }
    snprintf(e.owner, sizeof e.owner, "%s", by && by->user ? by->user : "");
    e.role = by && by->user ? by->role : USER_ADMIN;
    snprintf(e.state, sizeof e.state, "RUNNING");
    e.submitted = clock_wall_s();
    redisContext *rc = borrow(c, err, errlen);
    int code = rc ? exp_new_id(c, rc, &e, err, errlen) : COORD_EUNAVAIL;
    if (rc) jobstore_pool_put(c->pool, rc, code == COORD_EUNAVAIL);
    /* the first trial is submitted by the caller's request: its refusal (a priority above
     * theirs, their queue full, a spec the cluster cannot run) is the answer */
    if (code == COORD_OK) code = trial_submit(c, &e, 0, by, err, errlen);
    if (code == COORD_OK && !(rc = borrow(c, err, errlen))) code = COORD_EUNAVAIL;
    if (code == COORD_OK) {
        int js = exp_store(rc, &e);
        if (js == JS_OK) {
            e.dirty[0] = 2;
            exp_save(rc, &e); /* the first job's "experiment" */
            exp_event(rc, &e, 0, "submitted", NULL, e.submitted);
        }
        jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
        code = coord_js_to_coord(js);
        if (code != COORD_OK) {
            coord_cancel(c, e.trials[0].job, NULL, 0); /* no experiment to drive it */
            errmsg(err, errlen, "could not store the experiment: %s", coord_strerror(code));
        }
    }
    if (code == COORD_OK) {
        snprintf(id, idlen, "%s", e.id);
        clog_printf("experiment %s submitted: %s search of %d trials, first trial %s", e.id,
                    json_string_value(json_object_get(e.search_doc, "method")), e.search.trials, e.trials[0].job);
        if (out) *out = exp_json(&e, 1);
    }
    exp_free(&e);
    return code;
}

/* ---- the tick: one step of a running experiment ------------------------------------------------------------- */

typedef struct {
    int trial, rung;
    double value;
    unsigned long long ms, seq; /* the record's stream id: arrivals are judged in this order */
} arrival_t;

typedef struct {
    arrival_t *a;
    int n, cap;
} arrivals_t;

static void arrival_add(arrivals_t *as, arrival_t a)
{
    if (as->n == as->cap) {
        int cap = as->cap ? 2 * as->cap : 16;
        arrival_t *p = realloc(as->a, sizeof *p * (size_t)cap);
        if (!p) return;
        as->a = p;
        as->cap = cap;
    }
    as->a[as->n++] = a;
}

static int arrival_order(const void *x, const void *y)
{
    const arrival_t *a = x, *b = y;
    if (a->ms != b->ms) return a->ms < b->ms ? -1 : 1;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return a->trial - b->trial;
}

/* One record of a trial's coarse stream: its epoch and, from rank 0, the metric. */
static void record_read(const exp_t *e, int i, trial_t *t, const char *sid, const char *text, int *next_rung,
                        arrivals_t *as)
{
    json_t *o = json_loads(text, 0, NULL);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *rank = json_object_get(o, "rank"), *ep = json_object_get(o, "epoch");
    json_t *m = json_object_get(o, e->search.metric);
    int epoch_rec = kind && (strcmp(kind, "epoch") == 0 || strcmp(kind, "final") == 0);
    if (epoch_rec && json_is_integer(ep) && json_integer_value(ep) > t->epochs &&
        json_integer_value(ep) <= SEARCH_EPOCHS_MAX && kind[0] == 'e')
        t->epochs = (int)json_integer_value(ep);
    if (epoch_rec && json_is_number(m) && (!rank || json_integer_value(rank) == 0)) {
        t->metric = json_number_value(m);
        int k = *next_rung;
        /* a PBT trial that continued from a trial further on passes the points it skipped:
         * its evaluation at a point is the one at exactly that epoch */
        while (e->search.method == SEARCH_PBT && k < e->nrungs && json_is_integer(ep) &&
               json_integer_value(ep) > e->rungs[k])
            k++;
        if (k < e->nrungs && json_is_integer(ep) && json_integer_value(ep) >= e->rungs[k]) {
            arrival_t a = {.trial = i, .rung = k, .value = t->metric};
            jobstore_stream_id_parse(sid, &a.ms, &a.seq);
            arrival_add(as, a);
            *next_rung = k + 1;
        }
    }
    json_decref(o);
}

/* Reads trial i's job: its state (into *js, -1 when the job is gone), then its records
 * since the cursor, at most EXP_PAGES_PER_TICK pages; *whole: 1 when they were read to
 * the stream's end, so that a job whose state said it had ended has no record left
 * unread. JS_EREDIS when the connection broke. */
static int trial_poll(redisContext *rc, exp_t *e, int i, int *js, int *whole, arrivals_t *as)
{
    trial_t *t = &e->trials[i];
    redisReply *r = redisCommand(rc, "HGET " KEY_JOB " state", t->job);
    if (!reply_ok(r)) {
        if (r) freeReplyObject(r);
        return JS_EREDIS;
    }
    job_state_t st;
    *js = reply_str(r) && job_state_parse(reply_str(r), &st) == 0 ? (int)st : -1;
    freeReplyObject(r);
    int next_rung = t->nrec;
    *whole = 0;
    for (int page = 0; page < EXP_PAGES_PER_TICK; page++) {
        r = redisCommand(rc, "XRANGE " KEY_JOB_METRICS_COARSE " (%s + COUNT %d", t->job, t->cursor, EXP_PAGE);
        if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY) {
            if (r) freeReplyObject(r);
            return JS_EREDIS;
        }
        size_t n = r->elements;
        for (size_t k = 0; k < n; k++) {
            redisReply *en = r->element[k];
            if (en->type != REDIS_REPLY_ARRAY || en->elements != 2) continue;
            const char *sid = reply_str(en->element[0]);
            redisReply *f = en->element[1];
            if (!sid || jobstore_stream_id_parse(sid, NULL, NULL) != 0 || strlen(sid) >= sizeof t->cursor) continue;
            if (f->type == REDIS_REPLY_ARRAY && f->elements == 2 && reply_str(f->element[1]))
                record_read(e, i, t, sid, reply_str(f->element[1]), &next_rung, as);
            snprintf(t->cursor, sizeof t->cursor, "%s", sid);
            e->dirty[i] = 1;
        }
        freeReplyObject(r);
        if (n < EXP_PAGE) {
            *whole = 1;
            break;
        }
    }
    return JS_OK;
}

/* Why summary (trial i's job's summary.json, at path) cannot say how many epochs the job
 * trained, into why; 0 when it can (*epochs). What a worker wrote is outside input: the
 * size is bounded before it is read, the count before it is used. */
static int summary_epochs(const char *path, json_t **summary, int *epochs, char *why, size_t len)
{
    struct stat st;
    json_error_t je;
    *summary = NULL;
    if (stat(path, &st) != 0) return errmsg(why, len, "%s", strerror(errno));
    if (st.st_size >= EXP_SUMMARY_MAX)
        return errmsg(why, len, "%lld bytes, more than a summary's %d", (long long)st.st_size, EXP_SUMMARY_MAX);
    if (!(*summary = json_load_file(path, 0, &je))) return errmsg(why, len, "not JSON (%s)", jsonbody_text(&je));
    json_t *ep = json_object_get(*summary, "epochs_trained");
    if (!ep) return errmsg(why, len, "no epochs_trained (written by an older pacer-worker)");
    if (!json_is_integer(ep) || json_integer_value(ep) < 0 || json_integer_value(ep) > SEARCH_EPOCHS_MAX)
        return errmsg(why, len, "epochs_trained is not an integer from 0 to %d", SEARCH_EPOCHS_MAX);
    *epochs = (int)json_integer_value(ep);
    return 0;
}

/* Trial i's job has ended: the trial never keeps fewer epochs than the job trained without
 * saying so. Its epoch records come through Redis, which a worker that ends while Redis is
 * unreachable (an embedded Redis stops and starts again with its coordinator) cannot
 * reach: the worker gives them up (its log counts them). Its summary.json, which rank 0
 * writes last, has the epochs it trained and its last evaluation; when the records fell
 * short of them, the trial takes them from there, and its reason says so. */
static void trial_check_summary(coordinator_t *c, exp_t *e, int i)
{
    trial_t *t = &e->trials[i];
    char path[PATH_MAX], why[200] = "";
    json_t *sum = NULL;
    int n = 0;
    if (coord_job_path(c, t->job, "summary.json", path, sizeof path) != 0) errmsg(why, sizeof why, "path too long");
    else summary_epochs(path, &sum, &n, why, sizeof why);
    if (why[0]) {
        /* nothing to check the records against: said where they are short of the spec */
        if (strcmp(t->state, "SUCCEEDED") == 0 && t->epochs < e->search.epochs) {
            snprintf(t->reason, sizeof t->reason,
                     "its job %s succeeded after %d of %d epochs by its records, which its summary.json could not "
                     "confirm: %s",
                     t->job, t->epochs, e->search.epochs, why);
            clog_printf("experiment %s: trial %d: %s", e->id, i, t->reason);
            e->dirty[i] = 1;
        }
        json_decref(sum);
        return;
    }
    if (n > t->epochs) {
        /* the records' "loss" is the epoch's mean batch loss: the summary's train_loss_running */
        const char *key = strcmp(e->search.metric, "loss") == 0 ? "train_loss_running" : e->search.metric;
        json_t *m = json_object_get(sum, key);
        int have = json_is_number(m) && isfinite(json_number_value(m));
        if (have) t->metric = json_number_value(m);
        snprintf(t->reason, sizeof t->reason,
                 "its job %s's records of epochs %d to %d never reached Redis (it ended while Redis was unreachable): "
                 "epochs_trained%s from its summary.json",
                 t->job, t->epochs + 1, n, have ? " and metric are" : " is (the metric is the last record's)");
        t->epochs = n;
        clog_printf("experiment %s: trial %d: %s", e->id, i, t->reason);
        e->dirty[i] = 1;
    }
    json_decref(sum);
}

/* PBT's exploit of trial i from trial d at rung k (see the file's comment). Returns 0, or
 * -1 when d has no checkpoint to give yet (i then goes on as it is). */
static int pbt_exploit(coordinator_t *c, redisContext *rc, exp_t *e, int i, int d, int k, double now)
{
    trial_t *t = &e->trials[i];
    const trial_t *src = &e->trials[d];
    char dir[PATH_MAX], from[PATH_MAX + SPEC_NAME_MAX + 32], to[PATH_MAX];
    if (!src->job[0] || coord_job_path(c, src->job, "checkpoints", dir, sizeof dir) != 0 ||
        coord_job_path(c, t->job, "exploit.ckpt", to, sizeof to) != 0)
        return -1;
    snprintf(from, sizeof from, "%s/%s-t%d.ckpt", dir, e->name, d);
    unlink(to); /* one exploit per job: a file here is from an exploit that did not go through */
    if (link(from, to) != 0) {
        clog_printf("experiment %s: trial %d (%s) would continue from trial %d, but %s: %s; it goes on as it is", e->id,
                    i, t->job, d, from, strerror(errno));
        return -1;
    }
    json_t *np = search_pbt_explore(&e->search, trial_params(e, d), i, k);
    json_t *entry = json_pack("{s:i, s:i, s:s, s:s, s:o, s:o, s:O}", "epoch", e->rungs[k], "from", d, "from_job",
                              src->job, "job", t->job, "metric", num_or_null(t->rec[k]), "from_metric",
                              num_or_null(src->nrec > k ? src->rec[k] : NAN), "params", np);
    if (!np || !entry || (!t->exploits && !(t->exploits = json_array()))) {
        json_decref(np);
        json_decref(entry);
        unlink(to);
        return -1;
    }
    char *shown = json_dumps(np, JSON_COMPACT);
    clog_printf("experiment %s: trial %d (%s) exploits trial %d (%s) at epoch %d: %s %.6g against %.6g; goes on "
                "from its checkpoint with %s",
                e->id, i, t->job, d, src->job, e->rungs[k], e->search.metric, t->rec[k],
                src->nrec > k ? src->rec[k] : NAN, shown ? shown : "?");
    free(shown);
    exp_event(rc, e, i, "exploited", json_deep_copy(entry), now);
    json_array_append_new(t->exploits, entry);
    json_decref(t->params);
    t->params = np;
    snprintf(t->prev, sizeof t->prev, "%s", t->job);
    t->job[0] = 0;
    snprintf(t->state, sizeof t->state, "PENDING");
    snprintf(t->cursor, sizeof t->cursor, "0");
    e->dirty[i] = 1;
    /* recorded before the old job is cancelled: a coordinator that stops in between then
     * finds the trial pending (and the old job still running, to end on its own), never
     * a trial whose cancelled job looks like its end */
    exp_save(rc, e);
    char err[256];
    int code = coord_cancel(c, t->prev, err, sizeof err);
    if (code != COORD_OK && code != COORD_ESTATE) clog_printf("experiment %s: stopping %s: %s", e->id, t->prev, err);
    return 0;
}

/* PBT's decision for one arrival at a perturbation point, against the values the other
 * trials recorded there; a trial whose job has ended (js terminal) has nothing to go on. */
static void pbt_judge(coordinator_t *c, redisContext *rc, exp_t *e, const arrival_t *a, int js, double now)
{
    trial_t *t = &e->trials[a->trial];
    if (state_final(t->state) || !t->job[0] || t->nrec > a->rung) return;
    double *vals = malloc(sizeof *vals * (size_t)e->search.trials);
    int *who = malloc(sizeof *who * (size_t)e->search.trials);
    int n = 0, d = -1;
    for (int j = 0; vals && who && j < e->search.trials; j++)
        if (j != a->trial && e->trials[j].nrec > a->rung && isfinite(e->trials[j].rec[a->rung])) {
            vals[n] = e->trials[j].rec[a->rung];
            who[n++] = j;
        }
    while (t->nrec < a->rung) t->rec[t->nrec++] = NAN; /* points it skipped */
    t->rec[t->nrec++] = a->value;
    e->dirty[a->trial] = 1;
    if (vals && who && !(js >= 0 && job_state_terminal((job_state_t)js)))
        d = search_pbt_exploit(&e->search, vals, who, n, a->trial, a->value, a->rung);
    free(vals);
    free(who);
    if (d >= 0) pbt_exploit(c, rc, e, a->trial, d, a->rung, now);
}

/* ASHA's decision for one arrival, against the values recorded at its rung before it. */
static void arrival_judge(coordinator_t *c, redisContext *rc, exp_t *e, const arrival_t *a, double now)
{
    trial_t *t = &e->trials[a->trial];
    if (strcmp(t->state, "STOPPED") == 0 || t->nrec != a->rung) return;
    double *rec = malloc(sizeof *rec * (size_t)e->search.trials);
    if (!rec) return;
    int n = 0;
    for (int j = 0; j < e->search.trials; j++)
        if (j != a->trial && e->trials[j].nrec > a->rung) rec[n++] = e->trials[j].rec[a->rung];
    int go = search_asha_continue(rec, n, a->value, e->search.reduction_factor, e->search.mode_max);
    double cutoff = NAN;
    if (search_cutoff(rec, n, e->search.reduction_factor, e->search.mode_max, &cutoff) == 0 && !e->search.mode_max)
        cutoff = -cutoff;
    free(rec);
    t->rec[t->nrec++] = a->value;
    e->dirty[a->trial] = 1;
    json_t *extra = json_pack("{s:i, s:i, s:f, s:o, s:i}", "rung", a->rung, "epochs", e->rungs[a->rung], "metric",
                              a->value, "cutoff", num_or_null(cutoff), "compared", n);
    if (!go) {
        char err[256];
        int code = coord_cancel(c, t->job, err, sizeof err);
        if (code != COORD_OK && code != COORD_ESTATE) clog_printf("experiment %s: stopping %s: %s", e->id, t->job, err);
        snprintf(t->state, sizeof t->state, "STOPPED");
    }
    clog_printf("experiment %s: trial %d (%s) %s at rung %d (%d epochs): %s %.6g, cutoff %.6g of %d", e->id, a->trial,
                t->job, go ? "promoted" : "stopped", a->rung, e->rungs[a->rung], e->search.metric, a->value, cutoff, n);
    exp_event(rc, e, a->trial, go ? "promoted" : "stopped", extra, now);
}

/* Reads every live trial, judges the rung arrivals in the order their records came, and
 * records the ends of trials whose jobs ended. */
static int trials_advance(coordinator_t *c, redisContext *rc, exp_t *e, double now)
{
    arrivals_t as = {0};
    int n = e->search.trials;
    int *js = malloc(sizeof *js * (size_t)n), *whole = calloc((size_t)n, sizeof *whole);
    if (!js || !whole) {
        free(js);
        free(whole);
        return JS_ENOMEM;
    }
    int code = JS_OK;
    for (int i = 0; i < n && code == JS_OK; i++) {
        js[i] = -2; /* not read */
        trial_t *t = &e->trials[i];
        if (t->job[0] && !state_final(t->state)) code = trial_poll(rc, e, i, &js[i], &whole[i], &as);
    }
    if (code == JS_OK) {
        if (as.n > 0) qsort(as.a, (size_t)as.n, sizeof *as.a, arrival_order); /* as.a is NULL when none came */
        for (int k = 0; k < as.n; k++) {
            if (e->search.method == SEARCH_PBT) pbt_judge(c, rc, e, &as.a[k], js[as.a[k].trial], now);
            else arrival_judge(c, rc, e, &as.a[k], now);
        }
        for (int i = 0; i < n; i++) {
            trial_t *t = &e->trials[i];
            if (js[i] == -2 || state_final(t->state) || !t->job[0]) continue; /* !job: exploited just now */
            int ended = js[i] >= 0 && job_state_terminal((job_state_t)js[i]);
            /* records left to read (more than a tick's pages): the end waits for them */
            if (ended && !whole[i]) continue;
            const char *now_state = js[i] < 0 ? "FAILED" : job_state_name((job_state_t)js[i]);
            if (strcmp(now_state, t->state) == 0) continue;
            snprintf(t->state, sizeof t->state, "%s", now_state);
            if (js[i] < 0) snprintf(t->reason, sizeof t->reason, "its job %s is gone", t->job);
            if (ended) trial_check_summary(c, e, i);
            e->dirty[i] = 1;
        }
    }
    free(as.a);
    free(js);
    free(whole);
    return code;
}

/* Each running trial's worth to --policy hetero's placement (coord_run_t.worth): rf^(rungs
 * it passed), so that the trials ASHA promoted, the likeliest to train to the end, are the
 * ones the policy moves onto the fastest hosts while new trials fill the slow ones. Set on
 * every tick (a restarted coordinator's adopted runs get theirs at its first); said in the
 * log when it changes. */
static void trials_worth(coordinator_t *c, const exp_t *e)
{
    if (e->search.method != SEARCH_ASHA) return;
    for (int i = 0; i < e->search.trials; i++) {
        const trial_t *t = &e->trials[i];
        if (!t->job[0] || state_final(t->state)) continue;
        for (int k = 0; k < c->runs->n; k++) {
            coord_run_t *r = c->runs->list[k];
            if (strcmp(r->id, t->job) != 0) continue;
            double w = pow(e->search.reduction_factor, t->nrec);
            if (w != r->worth && (r->worth > 0 || t->nrec > 0))
                clog_printf("experiment %s: trial %d (%s) passed %d rung(s): worth %g to the placement", e->id, i,
                            t->job, t->nrec, w);
            r->worth = w;
            break;
        }
    }
}

/* Submits pending trial i: 1 started, 0 failed (recorded), -1 waits (waiting says why). */
static int trial_start(coordinator_t *c, redisContext *rc, exp_t *e, int i, const coord_caller_t *by, char *waiting,
                       size_t wlen)
{
    trial_t *t = &e->trials[i];
    char err[512] = "";
    int code = trial_submit(c, e, i, by, err, sizeof err);
    if (code == COORD_ELIMIT || code == COORD_EUNAVAIL) {
        snprintf(waiting, wlen, "trial %d waits: %s", i, err);
        return -1;
    }
    if (code != COORD_OK) {
        snprintf(t->state, sizeof t->state, "FAILED");
        snprintf(t->reason, sizeof t->reason, "%s", err);
        e->dirty[i] = 1;
        clog_printf("experiment %s: trial %d could not start: %s", e->id, i, err);
        return 0;
    }
    if (t->prev[0]) clog_printf("experiment %s: trial %d goes on as %s, from %s's exploit", e->id, i, t->job, t->prev);
    else clog_printf("experiment %s: trial %d started as %s", e->id, i, t->job);
    /* recorded at once: a coordinator that stops before the tick's save would else
     * submit the trial again */
    exp_save(rc, e);
    return 1;
}

/* Starts pending trials while fewer than max_concurrent are live, each recorded as soon
 * as its job is stored: first the PBT trials that go on after an exploit (their slot was
 * theirs), then new ones. A refusal for a limit (the owner's queue is full) waits; any
 * other fails that trial. */
static void trials_start(coordinator_t *c, redisContext *rc, exp_t *e, char *waiting, size_t wlen)
{
    int live = 0;
    for (int i = 0; i < e->search.trials; i++) live += e->trials[i].job[0] && !state_final(e->trials[i].state);
    coord_caller_t by = {e->owner[0] ? e->owner : NULL, e->role};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < e->search.trials && live < e->search.max_concurrent; i++) {
            int goes_on = e->trials[i].prev[0] != 0;
            if (goes_on != (pass == 0) || strcmp(e->trials[i].state, "PENDING") != 0) continue;
            int code = trial_start(c, rc, e, i, by.user ? &by : NULL, waiting, wlen);
            if (code < 0) return;
            live += code;
        }
    }
}

/* SUCCEEDED once every trial has ended and one of them trained (a metric), else FAILED. */
static void exp_maybe_end(redisContext *rc, exp_t *e, double now)
{
    int measured = 0;
    for (int i = 0; i < e->search.trials; i++) {
        if (!state_final(e->trials[i].state)) return;
        measured |= isfinite(e->trials[i].metric) && strcmp(e->trials[i].state, "FAILED") != 0;
    }
    const char *state = measured ? "SUCCEEDED" : "FAILED";
    const char *reason = measured ? "every trial ended" : "no trial produced an evaluation";
    if (exp_end(rc, e->id, state, reason, now, 1, NULL, 0) == 1) {
        snprintf(e->state, sizeof e->state, "%s", state);
        json_t *best = best_json(e);
        exp_event(rc, e, -1, "finished", json_pack("{s:s, s:o}", "state", state, "best", best), now);
        clog_printf("experiment %s %s", e->id, state);
    }
}

int experiment_step(coordinator_t *c, redisContext *rc, const char *id, double now)
{
    exp_t e;
    char err[512] = "";
    int js = exp_load(rc, id, &e, err, sizeof err);
    if (js == JS_ENOTFOUND || js == -100) {
        /* nothing to drive: out of the active set, said once */
        if (js == -100) clog_printf("experiment %s: %s; no longer driven", id, err);
        redisReply *r = redisCommand(rc, "SREM %s %s", KEY_EXPERIMENTS_ACTIVE, id);
        if (r) freeReplyObject(r);
    }
    if (js != 0) {
        exp_free(&e);
        return js == JS_EREDIS ? js : JS_OK;
    }
    int running = strcmp(e.state, "RUNNING") == 0;
    if (!running) cancel_trial_jobs(c, &e); /* cancelled: a trial started meanwhile stops too */
    js = trials_advance(c, rc, &e, now);
    if (js == JS_OK) trials_worth(c, &e);
    char waiting[EXP_REASON_MAX] = "";
    if (js == JS_OK && running) trials_start(c, rc, &e, waiting, sizeof waiting);
    if (js == JS_OK && exp_save(rc, &e) >= 0 && running) {
        if (strcmp(waiting, e.reason) != 0) {
            redisReply *r = redisCommand(rc, "HSET " KEY_EXPERIMENT " reason %s", id, waiting);
            if (r) freeReplyObject(r);
            if (waiting[0]) clog_printf("experiment %s: %s", id, waiting);
        }
        exp_maybe_end(rc, &e, now);
    }
    if (js == JS_OK && !running) {
        int live = 0;
        for (int i = 0; i < e.search.trials; i++) {
            trial_t *t = &e.trials[i];
            if (!t->job[0] && !state_final(t->state)) {
                snprintf(t->state, sizeof t->state, "CANCELLED");
                e.dirty[i] = 1;
            }
            live += !state_final(t->state);
        }
        exp_save(rc, &e);
        if (!live) {
            redisReply *r = redisCommand(rc, "SREM %s %s", KEY_EXPERIMENTS_ACTIVE, id);
            if (r) freeReplyObject(r);
        }
    }
    exp_free(&e);
    return js == JS_EREDIS ? js : JS_OK;
}

void experiment_tick(coordinator_t *c, double now)
{
    if (!c->conn->rc) return;
    redisReply *r = redisCommand(c->conn->rc, "SMEMBERS %s", KEY_EXPERIMENTS_ACTIVE);
    if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY) {
        if (r) freeReplyObject(r);
        tickconn_broken(c, "experiments");
        return;
    }
    for (size_t i = 0; i < r->elements && i < 4 * EXPERIMENTS_ACTIVE_MAX; i++) {
        const char *id = reply_str(r->element[i]);
        if (id && experiment_id_valid(id) && experiment_step(c, c->conn->rc, id, now) == JS_EREDIS) {
            freeReplyObject(r);
            tickconn_broken(c, "experiments");
            return;
        }
    }
    freeReplyObject(r);
}
