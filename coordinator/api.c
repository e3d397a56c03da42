/* coordinator/api.c - the coord_* calls of coordinator.h: everything they answer is read
 * from Redis (and the job's files), so a client and the daemon see the same thing. The
 * parse caches behind coord_get are api_cache.c. */
#include "coord_internal.h"
#include "hclass.h"
#include "hosts.h"
#include "jobstore.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admission.h"
#include "api_cache.h"
#include "ckptdir.h"
#include "clock.h"
#include "clog.h"
#include "errmsg.h"
#include "quotas.h"
#include "policy.h"
#include "record_fields.h"
#include "run.h"
#include "schedule.h"
#include "stall.h"
#include "staleness.h"

#define LIST_DEFAULT 50
#define LIST_MAX 1000
#define LIST_SCAN_MAX 100000
#define METRICS_DEFAULT 500
#define METRICS_MAX 10000
#define LOG_DEFAULT (64 * 1024)
#define LOG_MAX (1 << 20)
#define NODES_MAX 4096
#define PROFILES_MAX 1000
#define EVENTS_DEFAULT 100
#define EVENTS_MAX 10000
#define EVENTS_WAIT_MAX_MS 30000

const char *coord_strerror(int code)
{
    switch (code) {
    case COORD_OK: return "ok";
    case COORD_EINVAL: return "invalid request";
    case COORD_ENOTFOUND: return "not found";
    case COORD_ESTATE: return "not possible in this state";
    case COORD_EUNAVAIL: return "Redis unavailable";
    case COORD_EINTERNAL: return "internal error";
    case COORD_ENOFIT: return "does not fit the cluster";
    case COORD_EDATA: return "the data set cannot be used";
    case COORD_ELIMIT: return "a limit is reached";
    case COORD_EDENIED: return "not allowed for this user";
    default: return "unknown error";
    }
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static redisContext *conn_get(coordinator_t *c)
{
    char err[256];
    return jobstore_pool_get(c->pool, err, sizeof err);
}

/* Returns the connection to the pool; a NULL reply seen on it means it is broken. */
static void conn_put(coordinator_t *c, redisContext *rc, int broken) { jobstore_pool_put(c->pool, rc, broken); }


/* A stored string as JSON: a number when it is one, null when empty, else a string. */
static json_t *typed(const char *v)
{
    if (!v || !*v) return json_null();
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (!*end && errno == 0) return json_integer(i);
    double d = strtod(v, &end);
    if (!*end && isfinite(d)) return json_real(d);
    return json_string(v);
}

/* Converts a reply of HGETALL into an object; string_keys stay strings whatever they hold. */
static json_t *hash_object(const redisReply *r, const char *const *string_keys)
{
    json_t *o = json_object();
    if (!o || !r || r->type != REDIS_REPLY_ARRAY) return o;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *k = reply_str(r->element[i]), *v = reply_str(r->element[i + 1]);
        if (!k || !v) continue;
        int keep = 0;
        for (const char *const *s = string_keys; s && *s; s++) keep |= strcmp(*s, k) == 0;
        json_object_set_new(o, k, keep ? json_string(v) : typed(v));
    }
    return o;
}

/* Copies text into a JSON string, replacing bytes that are not valid UTF-8 by '?'. */
static json_t *utf8_string(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)s[i];
        size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
        int ok = len > 0 && i + len <= n && b != 0;
        for (size_t k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
        if (ok && len == 2 && b < 0xC2) ok = 0; /* overlong */
        if (ok && len == 3) {
            unsigned cp = ((b & 0x0Fu) << 12) | (((unsigned char)s[i + 1] & 0x3Fu) << 6) |
                          ((unsigned char)s[i + 2] & 0x3Fu);
            ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
        }
        if (ok && len == 4) {
            unsigned cp = ((b & 0x07u) << 18) | (((unsigned char)s[i + 1] & 0x3Fu) << 12) |
                          (((unsigned char)s[i + 2] & 0x3Fu) << 6) | ((unsigned char)s[i + 3] & 0x3Fu);
            ok = cp >= 0x10000 && cp <= 0x10FFFF;
        }
        if (!ok) {
            out[o++] = '?';
            i++;
            continue;
        }
        memcpy(out + o, s + i, len);
        o += len;
        i += len;
    }
    json_t *j = json_stringn(out, o);
    free(out);
    return j;
}

static int stream_id_valid(const char *s) { return jobstore_stream_id_parse(s, NULL, NULL) == 0; }

/* EXISTS pacer:job:{id}: 1, 0, or JS_EREDIS. */
static int job_exists(redisContext *rc, const char *id)
{
    char key[128];
    snprintf(key, sizeof key, KEY_JOB, id);
    redisReply *r = redisCommand(rc, "EXISTS %s", key);
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        if (r) freeReplyObject(r);
        return JS_EREDIS;
    }
    int e = r->integer > 0;
    freeReplyObject(r);
    return e;
}

/* ---- submit, list, get, cancel ---------------------------------------------------------------- */

static json_t *job_json(const coordinator_t *c, const char *id, json_t *h, json_t *spec);
static void queue_attach(const coordinator_t *c, json_t *o);

int coord_submit(coordinator_t *c, const char *spec_json, char *id, size_t idlen, char *err, size_t errlen)
{
    return coord_submit_as(c, spec_json, NULL, NULL, id, idlen, err, errlen);
}

/* Parses spec_json and submits it; parent (may be NULL) is the job a retry comes from. */
/* coord_submit_spec, recording parent (NULL = none), by a caller (NULL: nobody): what
 * coord_submit_as and the coord_submit_spec* calls share (defined with the admission
 * checks, below). */
static int coord_submit_spec_as(coordinator_t *c, const job_spec_t *s, const char *parent, const coord_caller_t *by,
                                char *id, size_t idlen, json_t **job, char *err, size_t errlen);

int coord_submit_as(coordinator_t *c, const char *spec_json, const char *parent, const coord_caller_t *by, char *id,
                    size_t idlen, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!spec_json || !*spec_json) {
        errmsg(err, errlen, "spec: empty request body");
        return COORD_EINVAL;
    }
    if (strlen(spec_json) > COORD_SPEC_MAX) {
        errmsg(err, errlen, "spec: larger than %d bytes", COORD_SPEC_MAX);
        return COORD_EINVAL;
    }
    job_spec_t *s = malloc(sizeof *s);
    if (!s) return COORD_EINTERNAL;
    char perr[512];
    int code = COORD_EINVAL;
    coord_userdata_sync(c, NULL); /* a user's data set named by dataset.name */
    if (spec_parse(spec_json, s, perr, sizeof perr) != 0) errmsg(err, errlen, "%s", perr);
    else code = coord_submit_spec_as(c, s, parent, by, id, idlen, NULL, err, errlen);
    free(s);
    return code;
}

int coord_submit_spec(coordinator_t *c, const job_spec_t *s, char *id, size_t idlen, json_t **job, char *err,
                      size_t errlen)
{
    return coord_submit_spec_as(c, s, NULL, NULL, id, idlen, job, err, errlen);
}

int coord_submit_spec_by(coordinator_t *c, const job_spec_t *s, const coord_caller_t *by, char *id, size_t idlen,
                         json_t **job, char *err, size_t errlen)
{
    return coord_submit_spec_as(c, s, NULL, by, id, idlen, job, err, errlen);
}

static int coord_submit_spec_as(coordinator_t *c, const job_spec_t *s, const char *parent, const coord_caller_t *by,
                                char *id, size_t idlen, json_t **job, char *err, size_t errlen)
{
    json_t *doc = NULL, *h = NULL;
    redisContext *rc = NULL;
    int rc_code = COORD_EINTERNAL;
    char *norm = NULL;
    if (job) *job = NULL;
    if (err && errlen) err[0] = 0;
    job_new_t j = {
        .spec_json = NULL, /* below, once the data set's place is in the spec */
        .name = s->name,
        .model = s->model,
        .algorithm = s->algorithm.name,
        .workers = s->workers,
        .world = spec_is_async(s) ? s->workers + 1 : s->workers,
        .dynamic_batch = s->algorithm.dynamic_batch,
        .simulated = s->simulate.enabled,
        .parent = parent,
    };
    admission_t adm = {.spec = s, .again = parent != NULL, .world = j.world};
    rc_code = admission_run(c, &adm, err, errlen);
    if (rc_code != COORD_OK) goto out;
    rc_code = COORD_EINTERNAL;
    if (adm.placed) s = adm.placed;
    norm = spec_to_json_doc(s, job ? &doc : NULL);
    if (!norm) goto out;
    j.spec_json = norm;
    rc = conn_get(c);
    if (!rc) {
        rc_code = COORD_EUNAVAIL;
        errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown);
        goto out;
    }
    /* the daemon's limits (quotas.h) are checked where the job is stored */
    rc_code = quotas_submit(c, rc, &j, by, policy_priority(s->priority), s->simulate.enabled ? 0 : j.world, id, idlen,
                            job ? &h : NULL, err, errlen);
    conn_put(c, rc, rc_code == COORD_EUNAVAIL);
    if (rc_code != COORD_OK) {
        if (!err || !err[0]) errmsg(err, errlen, "could not store the job: %s", coord_strerror(rc_code));
        goto out;
    }
    if (job && h) {
        /* The job as coord_get would show it, from what was just written; the spec's
         * document goes into the parse cache, so the first GET does not decode it either. */
        api_cache_spec_put(id, norm, doc);
        *job = job_json(c, id, h, doc);
    }
    {
        /* Valid but known to train badly (spec_warnings): logged, and in the answer. */
        char warn[4][SPEC_WARNING_MAX];
        int nw = spec_warnings(s, warn, 3);
        /* Runs more ranks than slots: said now, and on the job's page (oversub_attach). */
        if (adm.oversub[0]) snprintf(warn[nw++], sizeof warn[0], "%s", adm.oversub);
        json_t *list = job && *job && nw ? json_array() : NULL;
        for (int i = 0; i < nw; i++) {
            clog_printf("job %s: warning: %s", id, warn[i]);
            if (list) json_array_append_new(list, json_string(warn[i]));
        }
        if (list) json_object_set_new(*job, "warnings", list);
    }
out:
    json_decref(h);
    json_decref(doc);
    free(norm);
    free(adm.placed);
    return rc_code;
}

static const char *const SUMMARY_FIELDS[] = {
    "id",      "name",     "state",    "model",  "algorithm", "workers", "submitted",
    "started", "finished", "restarts", "reason", "simulated", "owner",
};
#define NSUMMARY (sizeof SUMMARY_FIELDS / sizeof SUMMARY_FIELDS[0])
static const char *const STRING_FIELDS[] = {"id",     "name",         "state", "model",          "algorithm",
                                            "reason", "spec",         "log",   "checkpoint_dir", "summary_path",
                                            "owner",  "preempted_by", NULL};

/* One page's worth of summaries: HMGETs of ids[0..n) (pipelined), those in state want
 * (any with !filter) counted into *matched and, from offset on, up to limit appended to
 * jobs. Returns COORD_OK, or COORD_EUNAVAIL with *broken when the connection failed. */
static int list_read(redisContext *rc, const char *const *ids, size_t n, int filter, job_state_t want, long offset,
                     long limit, json_t *jobs, long *matched, int *broken)
{
    for (size_t i = 0; i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, KEY_JOB, ids[i] ? ids[i] : "");
        const char *argv[2 + NSUMMARY];
        size_t len[2 + NSUMMARY];
        argv[0] = "HMGET";
        argv[1] = key;
        for (size_t f = 0; f < NSUMMARY; f++) argv[2 + f] = SUMMARY_FIELDS[f];
        for (size_t f = 0; f < 2 + NSUMMARY; f++) len[f] = strlen(argv[f]);
        redisAppendCommandArgv(rc, (int)(2 + NSUMMARY), argv, len);
    }
    for (size_t i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r) {
            *broken = 1;
            return COORD_EUNAVAIL;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == NSUMMARY && reply_str(r->element[2])) {
            job_state_t st;
            int ok = !filter || (job_state_parse(reply_str(r->element[2]), &st) == 0 && st == want);
            if (ok) {
                if (*matched >= offset && (long)json_array_size(jobs) < limit) {
                    json_t *o = json_object();
                    for (size_t f = 0; f < NSUMMARY; f++) {
                        const char *v = reply_str(r->element[f]);
                        int str = f <= 4 || f == 10; /* id..algorithm, reason */
                        if (f == 11)                 /* simulated: a flag ("1"; absent before it existed) */
                            json_object_set_new(o, SUMMARY_FIELDS[f], json_boolean(v && strcmp(v, "1") == 0));
                        else if (f == 12) { /* owner: absent for jobs from before users */
                            if (v) json_object_set_new(o, SUMMARY_FIELDS[f], json_string(v));
                        } else json_object_set_new(o, SUMMARY_FIELDS[f], str ? json_string(v ? v : "") : typed(v));
                    }
                    json_array_append_new(jobs, o);
                }
                (*matched)++;
            }
        }
        freeReplyObject(r);
    }
    return COORD_OK;
}

/* Newest first: ids are j-<n> from one counter. */
static int id_newer_first(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    long nx = strtol(x + 2, NULL, 10), ny = strtol(y + 2, NULL, 10);
    return nx < ny ? 1 : nx > ny ? -1 : strcmp(x, y);
}

/* The jobs that may be queued, running or restarting: pacer:queue and pacer:active
 * (jobstore.c keeps a job in one of them until it is final), newest first, without
 * duplicates, into a new array of borrowed strings of q and a. Returns the count, or -1. */
static long active_ids(redisContext *rc, redisReply **q, redisReply **a, const char ***out)
{
    *out = NULL;
    *q = redisCommand(rc, "LRANGE %s 0 %d", KEY_QUEUE, LIST_SCAN_MAX - 1);
    *a = redisCommand(rc, "SMEMBERS %s", KEY_ACTIVE);
    if (!*q || !*a || (*q)->type != REDIS_REPLY_ARRAY || (*a)->type != REDIS_REPLY_ARRAY) return -1;
    size_t n = 0, cap = (*q)->elements + (*a)->elements;
    const char **ids = malloc((cap ? cap : 1) * sizeof *ids);
    if (!ids) return -1;
    for (size_t i = 0; i < (*q)->elements; i++)
        if (reply_str((*q)->element[i]) && job_id_valid(reply_str((*q)->element[i])))
            ids[n++] = reply_str((*q)->element[i]);
    for (size_t i = 0; i < (*a)->elements; i++)
        if (reply_str((*a)->element[i]) && job_id_valid(reply_str((*a)->element[i])))
            ids[n++] = reply_str((*a)->element[i]);
    qsort(ids, n, sizeof *ids, id_newer_first);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || strcmp(ids[k - 1], ids[i]) != 0) ids[k++] = ids[i];
    *out = ids;
    return (long)k;
}

int coord_list(coordinator_t *c, const char *state, long offset, long limit, json_t **out)
{
    job_state_t want = JOB_QUEUED;
    int filter = state && *state;
    if (filter && job_state_parse(state, &want) != 0) return COORD_EINVAL;
    if (offset < 0) offset = 0;
    if (limit <= 0) limit = LIST_DEFAULT;
    if (limit > LIST_MAX) limit = LIST_MAX;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    json_t *jobs = json_array();
    long matched = 0;
    int broken = 0, code = COORD_OK;
    enum { CHUNK = 200 };
    if (filter && !job_state_terminal(want)) {
        /* Queued, running, restarting: only the queue and the active set, not the
         * history (which retention bounds, but which may hold 10,000 finished jobs). */
        redisReply *q = NULL, *a = NULL;
        const char **ids = NULL;
        long n = active_ids(rc, &q, &a, &ids);
        if (n < 0) {
            broken = !q || !a;
            code = COORD_EUNAVAIL;
        }
        for (long start = 0; code == COORD_OK && start < n; start += CHUNK)
            code = list_read(rc, ids + start, (size_t)(n - start < CHUNK ? n - start : CHUNK), filter, want, offset,
                             limit, jobs, &matched, &broken);
        free(ids);
        if (q) freeReplyObject(q);
        if (a) freeReplyObject(a);
    } else {
        /* Everything, or a final state: the history, newest first, at most
         * LIST_SCAN_MAX ids (retention keeps it below that: --keep-jobs). */
        for (long start = 0; start < LIST_SCAN_MAX; start += CHUNK) {
            redisReply *ids = redisCommand(rc, "ZREVRANGE %s %ld %ld", KEY_JOBS, start, start + CHUNK - 1);
            if (!ids || ids->type != REDIS_REPLY_ARRAY) {
                broken = !ids;
                if (ids) freeReplyObject(ids);
                code = COORD_EUNAVAIL;
                break;
            }
            size_t n = ids->elements;
            const char *idv[CHUNK];
            for (size_t i = 0; i < n && i < CHUNK; i++) idv[i] = reply_str(ids->element[i]);
            code = list_read(rc, idv, n < CHUNK ? n : CHUNK, filter, want, offset, limit, jobs, &matched, &broken);
            freeReplyObject(ids);
            if (code != COORD_OK || n < CHUNK) break;
        }
    }
    conn_put(c, rc, broken);
    if (code != COORD_OK) {
        json_decref(jobs);
        return code;
    }
    for (size_t i = 0; i < json_array_size(jobs); i++) queue_attach(c, json_array_get(jobs, i));
    *out = json_pack("{s:o, s:I, s:I, s:I}", "jobs", jobs, "total", (json_int_t)matched, "offset", (json_int_t)offset,
                     "limit", (json_int_t)limit);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* The checkpoint: STATE_DIR/jobs/{id}/checkpoints/{name}.ckpt, name being the job's
 * name as Redis holds it, used only when it is a valid job name (never a path). */
static int checkpoint_file(const coordinator_t *c, const char *id, const char *name, char *out, size_t len)
{
    char dir[PATH_MAX];
    if (!spec_name_valid(name) || coord_job_path(c, id, "checkpoints", dir, sizeof dir) != 0) return -1;
    int n = snprintf(out, len, "%s/%s.ckpt", dir, name);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

/* A queued job's `queue` object (position, reason, detail, estimated_start), from what
 * the daemon's policy last decided (schedule.c, schedule_tick); nothing in a client, nor for a
 * job the policy has not seen yet (it looks every tick). */
static void queue_attach(const coordinator_t *c, json_t *o)
{
    const char *state = json_string_value(json_object_get(o, "state"));
    const char *id = json_string_value(json_object_get(o, "id"));
    if (!state || strcmp(state, "QUEUED") != 0 || !id) return;
    pthread_mutex_t *m = (pthread_mutex_t *)&c->sched->queue_lock; /* the view, not c, changes */
    pthread_mutex_lock(m);
    json_t *q = c->sched->queue_view ? json_deep_copy(json_object_get(c->sched->queue_view, id)) : NULL;
    pthread_mutex_unlock(m);
    if (q) json_object_set_new(o, "queue", q);
}

/* "8 ranks on 2 slots: oversubscribed 4x" for a job whose world exceeds the cluster's
 * slots (a simulation's ranks are not on them), as `oversubscribed`. */
static void oversub_attach(const coordinator_t *c, json_t *o)
{
    char text[128];
    json_t *w = json_object_get(o, "world");
    if (json_is_true(json_object_get(o, "simulated")) || !json_is_integer(w)) return;
    if (policy_oversubscribed((int)json_integer_value(w), c->hosts->slots_total, text, sizeof text))
        json_object_set_new(o, "oversubscribed", json_string(text));
}

/* A comma-separated list of job ids (a job hash's "retries") as a JSON array of strings. */
static json_t *id_list(const char *csv)
{
    json_t *a = json_array();
    for (const char *p = csv ? csv : ""; a && *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < JOB_ID_MAX) json_array_append_new(a, json_stringn(p, n));
        p += n;
        if (*p == ',') p++;
    }
    return a;
}

/* A job hash (jobstore_get's strings) as the API shows it; spec: the parsed "spec" field
 * when the caller has it, else it comes from the parse cache. The paths it shows (log,
 * checkpoint_dir, checkpoint) and the summary it reads are derived (coord_job_path). */
static json_t *job_json(const coordinator_t *c, const char *id, json_t *h, json_t *spec)
{
    json_t *o = json_object();
    if (!o) return NULL;
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v)
    {
        const char *s = json_string_value(v);
        if (strcmp(key, "spec") == 0) {
            json_t *parsed = spec ? json_incref(spec) : api_cache_spec(id, s);
            json_object_set_new(o, "spec", parsed ? parsed : json_string(s));
        } else if (strcmp(key, "dynamic_batch") == 0 || strcmp(key, "simulated") == 0) {
            json_object_set_new(o, key, json_boolean(s && strcmp(s, "1") == 0));
        } else if (strcmp(key, "pstart") == 0 || strcmp(key, "summary_path") == 0 || strcmp(key, "log") == 0 ||
                   strcmp(key, "checkpoint_dir") == 0 || strcmp(key, "resume_before") == 0) {
            continue; /* internal, or derived below */
        } else if (strcmp(key, "reason") == 0) {
            json_object_set_new(o, key, json_string(s));
        } else if (strcmp(key, "retries") == 0) {
            json_object_set_new(o, key, id_list(s)); /* "j-5,j-9" -> ["j-5", "j-9"] */
        } else if (strcmp(key, "stall") == 0) {
            /* The daemon's object (stall.h) and its sentence, the times counted to now. */
            json_t *st = s && strlen(s) < (1 << 20) ? json_loads(s, 0, NULL) : NULL;
            char text[512];
            stall_text(st, clock_wall_s(), text, sizeof text);
            if (json_is_object(st) && text[0]) {
                json_object_set_new(o, "stall", st);
                json_object_set_new(o, "stall_text", json_string(text));
            } else json_decref(st);
        } else if (strcmp(key, "hosts") == 0 || strcmp(key, "resizes") == 0 || strcmp(key, "interruptions") == 0) {
            /* JSON arrays the daemon wrote (run.c); anything else is left out. */
            json_t *a = s && strlen(s) < (1 << 20) ? json_loads(s, 0, NULL) : NULL;
            if (json_is_array(a)) json_object_set_new(o, key, a);
            else json_decref(a);
        } else if (strcmp(key, "health") == 0 || strcmp(key, "placement") == 0) {
            /* Objects the daemon wrote (run.c: run_health; run_place under --policy hetero or
             * agnostic); "" while unknown or not placed. */
            json_t *a = s && *s && strlen(s) < 4096 ? json_loads(s, 0, NULL) : NULL;
            if (json_is_object(a)) json_object_set_new(o, key, a);
            else json_decref(a);
        } else {
            int str = 0;
            for (const char *const *f = STRING_FIELDS; *f; f++) str |= strcmp(*f, key) == 0;
            if (s && *s) json_object_set_new(o, key, str ? json_string(s) : typed(s));
        }
    }
    /* Shown once the daemon has launched the job (it records them then). */
    const char *name = json_string_value(json_object_get(h, "name"));
    char path[PATH_MAX];
    if (json_object_get(h, "log") && coord_job_path(c, id, "log", path, sizeof path) == 0)
        json_object_set_new(o, "log", json_string(path));
    if (json_object_get(h, "checkpoint_dir") && coord_job_path(c, id, "checkpoints", path, sizeof path) == 0) {
        json_object_set_new(o, "checkpoint_dir", json_string(path));
        if (checkpoint_file(c, id, name, path, sizeof path) == 0)
            json_object_set_new(o, "checkpoint", json_string(path));
    }
    job_state_t st;
    const char *state = json_string_value(json_object_get(h, "state"));
    int final = state && job_state_parse(state, &st) == 0 && job_state_terminal(st);
    json_t *summary = json_object_get(h, "summary_path") && coord_job_path(c, id, "summary.json", path, sizeof path) == 0
                          ? api_cache_summary(path, final)
                          : NULL;
    if (summary && json_is_object(summary)) {
        /* the run's count of stops with notice (drain.h), which the worker cannot know: on
         * a shallow copy, the cached summary being shared */
        json_t *n = json_object_get(o, "interruptions_total"), *copy = json_copy(summary);
        json_decref(summary);
        summary = copy;
        if (summary) json_object_set_new(summary, "interruptions", json_integer(json_integer_value(n)));
    }
    if (summary) json_object_set_new(o, "summary", summary);
    queue_attach(c, o);
    oversub_attach(c, o);
    return o;
}

/* The checkpoints the job keeps (common/ckptdir.h), newest first, and the space they use,
 * from its own directory (coord_job_path) and its name as Redis holds it, used only when
 * it is a valid job name. NULL when the job has no checkpoint directory yet. */
static json_t *checkpoints_json(const coordinator_t *c, const char *id, const char *name)
{
    char dir[PATH_MAX], err[PATH_MAX + 128];
    if (!spec_name_valid(name) || coord_job_path(c, id, "checkpoints", dir, sizeof dir) != 0) return NULL;
    ckpt_entry_t *e = malloc(CKPTDIR_MAX * sizeof *e);
    json_t *o = json_object(), *items = json_array();
    long long total = 0;
    int n = e ? ckptdir_list(dir, name, e, CKPTDIR_MAX, &total, err, sizeof err) : -1;
    if (!e) snprintf(err, sizeof err, "out of memory");
    for (int i = 0; i < n && items; i++) {
        json_t *it = json_pack("{s:s, s:o, s:o, s:o, s:I, s:b, s:b}", "file", e[i].file, "step",
                               e[i].step >= 0 ? json_integer(e[i].step) : json_null(), "epoch",
                               e[i].epoch >= 0 ? json_integer(e[i].epoch) : json_null(), "test_accuracy",
                               e[i].accuracy >= 0 ? json_real(e[i].accuracy) : json_null(), "bytes",
                               (json_int_t)e[i].bytes, "best", e[i].best, "latest", e[i].latest);
        if (!it || json_array_append_new(items, it) != 0) n = -1;
    }
    free(e);
    if (o && items) {
        json_object_set_new(o, "items", items);
        items = NULL;
        json_object_set_new(o, "total_bytes", json_integer(n < 0 ? 0 : total));
        if (n < 0) json_object_set_new(o, "error", json_string(err));
    }
    json_decref(items);
    return o;
}

int coord_get(coordinator_t *c, const char *id, json_t **out)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    json_t *h = NULL;
    int js = jobstore_get(rc, id, &h);
    conn_put(c, rc, js == JS_EREDIS);
    if (js != JS_OK) return coord_js_to_coord(js);
    *out = job_json(c, id, h, NULL);
    /* Listed for one job only (a directory read): job lists leave it out. */
    json_t *ck = *out && json_object_get(h, "checkpoint_dir")
                     ? checkpoints_json(c, id, json_string_value(json_object_get(h, "name")))
                     : NULL;
    if (ck) json_object_set_new(*out, "checkpoints", ck);
    /* The trained model's URLs, each only while its file is there (a missing one is absent) */
    static const char *const FILES[][2] = {{"model.onnx", "model_onnx"}, {"model.safetensors", "model_safetensors"}};
    for (size_t i = 0; *out && i < sizeof FILES / sizeof FILES[0]; i++) {
        char file[PATH_MAX], url[160];
        struct stat st;
        if (coord_job_path(c, id, FILES[i][0], file, sizeof file) != 0 || stat(file, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        snprintf(url, sizeof url, "/api/v1/jobs/%s/%s", id, FILES[i][0]);
        json_object_set_new(*out, FILES[i][1], json_string(url));
    }
    json_decref(h);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

int coord_cancel(coordinator_t *c, const char *id, char *err, size_t errlen)
{
    if (!job_id_valid(id)) {
        errmsg(err, errlen, "no job %s", id ? id : "(null)");
        return COORD_ENOTFOUND;
    }
    redisContext *rc = conn_get(c);
    if (!rc) {
        errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown);
        return COORD_EUNAVAIL;
    }
    job_state_t st = JOB_QUEUED;
    int js = jobstore_cancel(rc, id, &st);
    conn_put(c, rc, js == JS_EREDIS);
    int code = coord_js_to_coord(js);
    if (code == COORD_ENOTFOUND) errmsg(err, errlen, "no job %s", id);
    else if (code == COORD_ESTATE) errmsg(err, errlen, "job %s has already finished (%s)", id, job_state_name(st));
    else if (code != COORD_OK) errmsg(err, errlen, "cancel failed: %s", coord_strerror(code));
    return code;
}

/* ---- nodes, metrics, logs, checkpoint, cluster ------------------------------------------------ */

static int staleness_from_reply(const redisReply *r, staleness_t *s)
{
    memset(s, 0, sizeof *s);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) return 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *k = reply_str(r->element[i]);
        long long v = reply_int(r->element[i + 1], 0);
        if (k) record_staleness_set(s, k, v); /* a field of no name it knows is left alone */
    }
    return 1;
}

int coord_nodes(coordinator_t *c, const char *id, json_t **out)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    char key[160];
    int code = COORD_OK, broken = 0;
    json_t *ranks = NULL, *assignment = NULL;
    staleness_t total;
    memset(&total, 0, sizeof total);
    snprintf(key, sizeof key, KEY_JOB, id);
    redisReply *w = redisCommand(rc, "HMGET %s world state", key);
    if (!w || w->type != REDIS_REPLY_ARRAY || w->elements != 2) {
        broken = !w;
        code = COORD_EUNAVAIL;
        goto out;
    }
    if (!reply_str(w->element[1])) {
        code = COORD_ENOTFOUND;
        goto out;
    }
    long long world = reply_int(w->element[0], 0);
    if (world > NODES_MAX) world = NODES_MAX;
    for (long long r = 0; r < world; r++) {
        snprintf(key, sizeof key, KEY_JOB_NODE, id, (int)r);
        redisAppendCommand(rc, "HGETALL %s", key);
        snprintf(key, sizeof key, KEY_JOB_STALENESS, id, (int)r);
        redisAppendCommand(rc, "HGETALL %s", key);
    }
    snprintf(key, sizeof key, KEY_JOB_ASSIGNMENT, id);
    redisAppendCommand(rc, "HGETALL %s", key);
    ranks = json_array();
    double now = clock_wall_s();
    const char *node_strings[RF_N + 1];
    record_fields_strings(node_strings);
    for (long long r = 0; r < world; r++) {
        redisReply *n = NULL, *s = NULL;
        if (redisGetReply(rc, (void **)&n) != REDIS_OK || !n || redisGetReply(rc, (void **)&s) != REDIS_OK || !s) {
            if (n) freeReplyObject(n);
            broken = 1;
            code = COORD_EUNAVAIL;
            goto out;
        }
        /* The fields are the rank record's (common/record_fields.h). */
        json_t *o = hash_object(n, node_strings);
        json_object_set_new(o, RECORD_FIELDS[RF_RANK].name, json_integer(r));
        double hb = json_number_value(json_object_get(o, RECORD_FIELDS[RF_HEARTBEAT].name));
        if (hb > 0) json_object_set_new(o, RECORD_FIELDS[RF_HEARTBEAT_AGE_S].name, json_real(now - hb));
        /* Rank 0's collapse detector (worker/health.h): an object, checked as the tick
         * checks it, or nothing. */
        const char *health = RECORD_FIELDS[RF_HEALTH].name;
        const char *hs = json_string_value(json_object_get(o, health));
        json_t *hp = hs && strlen(hs) < 4096 ? json_loads(hs, 0, NULL) : NULL, *hc = run_health_clean(hp);
        if (hc) json_object_set_new(o, health, hc);
        else json_object_del(o, health);
        json_decref(hp);
        staleness_t st;
        if (staleness_from_reply(s, &st)) {
            json_object_set_new(o, "staleness", staleness_json(&st));
            /* The job's staleness is rank 0's: the parameter server records every applied
             * update once, and in the synchronous families every rank applies every
             * update with the same tau (the worker's summary uses the same rule). */
            if (r == 0) total = st;
        }
        json_array_append_new(ranks, o);
        freeReplyObject(n);
        freeReplyObject(s);
    }
    redisReply *a = NULL;
    if (redisGetReply(rc, (void **)&a) != REDIS_OK || !a) {
        broken = 1;
        code = COORD_EUNAVAIL;
        goto out;
    }
    if (a->type == REDIS_REPLY_ARRAY && a->elements > 0) {
        static const char *const ASG_STRINGS[] = {"source", NULL};
        assignment = hash_object(a, ASG_STRINGS);
        const char *b = json_string_value(json_object_get(assignment, "batches"));
        json_t *arr = b ? json_loads(b, 0, NULL) : NULL;
        if (arr) json_object_set_new(assignment, "batches", arr);
    }
    freeReplyObject(a);
    *out = json_pack("{s:s, s:I, s:o, s:o, s:o}", "job", id, "world", (json_int_t)world, "ranks", ranks, "staleness",
                     staleness_json(&total), "assignment", assignment ? assignment : json_null());
    ranks = assignment = NULL;
    if (!*out) code = COORD_EINTERNAL;
out:
    if (w) freeReplyObject(w);
    json_decref(ranks);
    json_decref(assignment);
    conn_put(c, rc, broken);
    return code;
}

/* Turns one stream entry [id, [field, value, ...]] into {"id": id, ...json field}. */
static json_t *entry_json(const redisReply *e, const char **id_out)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2) return NULL;
    const char *sid = reply_str(e->element[0]);
    const redisReply *f = e->element[1];
    if (!sid || f->type != REDIS_REPLY_ARRAY) return NULL;
    json_t *o = NULL;
    for (size_t i = 0; i + 1 < f->elements; i += 2)
        if (reply_str(f->element[i]) && strcmp(reply_str(f->element[i]), "json") == 0 && reply_str(f->element[i + 1]))
            o = json_loads(reply_str(f->element[i + 1]), 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    if (id_out) *id_out = sid;
    return o;
}

int coord_metrics(coordinator_t *c, const char *id, const char *since, long limit, json_t **out)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    int from_start = !since || !*since || strcmp(since, "0") == 0 || strcmp(since, "-") == 0;
    if (!from_start && !stream_id_valid(since)) return COORD_EINVAL;
    if (limit <= 0) limit = METRICS_DEFAULT;
    if (limit > METRICS_MAX) limit = METRICS_MAX;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int e = job_exists(rc, id);
    if (e != 1) {
        conn_put(c, rc, e == JS_EREDIS);
        return e == 0 ? COORD_ENOTFOUND : COORD_EUNAVAIL;
    }
    char key[160], start[64];
    snprintf(key, sizeof key, KEY_JOB_METRICS, id);
    if (from_start) snprintf(start, sizeof start, "-");
    else snprintf(start, sizeof start, "(%s", since);
    redisReply *r = redisCommand(rc, "XRANGE %s %s + COUNT %ld", key, start, limit);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        conn_put(c, rc, !r);
        if (r) freeReplyObject(r);
        return COORD_EUNAVAIL;
    }
    json_t *items = json_array();
    char next[64];
    snprintf(next, sizeof next, "%s", from_start ? "0" : since);
    for (size_t i = 0; i < r->elements; i++) {
        const char *sid = NULL;
        json_t *o = entry_json(r->element[i], &sid);
        if (!o) continue;
        json_object_set_new(o, "id", json_string(sid));
        json_array_append_new(items, o);
        snprintf(next, sizeof next, "%s", sid);
    }
    freeReplyObject(r);
    conn_put(c, rc, 0);
    *out = json_pack("{s:s, s:o, s:s}", "job", id, "items", items, "next", next);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* A job hash field, copied; "" when absent. */
static int job_field(coordinator_t *c, const char *id, const char *field, char *out, size_t len)
{
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    char key[128];
    snprintf(key, sizeof key, KEY_JOB, id);
    redisReply *r = redisCommand(rc, "HMGET %s state %s", key, field);
    int code = COORD_OK;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) code = COORD_EUNAVAIL;
    else if (!reply_str(r->element[0])) code = COORD_ENOTFOUND;
    else snprintf(out, len, "%s", reply_str(r->element[1]) ? reply_str(r->element[1]) : "");
    conn_put(c, rc, !r);
    if (r) freeReplyObject(r);
    return code;
}

int coord_logs(coordinator_t *c, const char *id, long offset, long limit, long tail_lines, json_t **out)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    char path[PATH_MAX], state[32];
    int code = job_field(c, id, "state", state, sizeof state); /* the job exists */
    if (code != COORD_OK) return code;
    if (coord_job_path(c, id, "log", path, sizeof path) != 0) path[0] = 0;
    if (offset < 0) offset = 0;
    if (limit <= 0) limit = LOG_DEFAULT;
    if (limit > LOG_MAX) limit = LOG_MAX;
    long size = 0;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = path[0] ? fopen(path, "rb") : NULL;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0) size = 0;
    if (tail_lines > 0) {
        limit = LOG_MAX;
        offset = size > limit ? size - limit : 0;
    }
    if (offset > size) offset = size;
    if (f && size > offset) {
        long want = size - offset < limit ? size - offset : limit;
        buf = malloc((size_t)want + 1);
        if (buf && fseek(f, offset, SEEK_SET) == 0) n = fread(buf, 1, (size_t)want, f);
    }
    if (f) fclose(f);
    long next = offset + (long)n;
    const char *text = buf ? buf : "";
    if (tail_lines > 0 && n > 0) {
        /* Keep the last tail_lines lines (a final newline does not start a line). */
        size_t i = n;
        long lines = 0;
        if (i > 0 && text[i - 1] == '\n') i--;
        while (i > 0) {
            if (text[i - 1] == '\n' && ++lines == tail_lines) break;
            i--;
        }
        offset += (long)i;
        text += i;
        n -= i;
    }
    json_t *t = utf8_string(text, n);
    free(buf);
    *out = json_pack("{s:s, s:I, s:I, s:I, s:o}", "job", id, "offset", (json_int_t)offset, "next_offset",
                     (json_int_t)next, "size", (json_int_t)size, "text", t ? t : json_string(""));
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* Job id's record from Redis (the caller json_decrefs it), or the COORD_* code why not. */
static int job_record(coordinator_t *c, const char *id, json_t **h)
{
    *h = NULL;
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int js = jobstore_get(rc, id, h);
    conn_put(c, rc, js == JS_EREDIS);
    return js == JS_OK ? COORD_OK : coord_js_to_coord(js);
}

static int regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int coord_checkpoint_path(coordinator_t *c, const char *id, char *path, size_t len)
{
    json_t *h;
    int code = job_record(c, id, &h);
    if (code != COORD_OK) return code;
    const char *name = json_string_value(json_object_get(h, "name"));
    code = checkpoint_file(c, id, name, path, len) == 0 && regular_file(path) ? COORD_OK : COORD_ENOTFOUND;
    json_decref(h);
    return code;
}

/* Each host of the daemon's record gets its measured speeds from the profiles (the
 * pre-flight's benchmarks and finished jobs): "speeds": [{model, device, samples_per_s,
 * updated, benchmark_time}] and "devices": [the devices they name]. */
static void host_speeds(json_t *hosts, json_t *profiles)
{
    size_t i, k;
    json_t *h, *p;
    json_array_foreach(hosts, i, h)
    {
        const char *name = json_string_value(json_object_get(h, "name"));
        json_t *speeds = json_array(), *devices = json_array();
        if (!name || !speeds || !devices) {
            json_decref(speeds);
            json_decref(devices);
            continue;
        }
        json_array_foreach(profiles, k, p)
        {
            const char *ph = json_string_value(json_object_get(p, "host"));
            const char *dev = json_string_value(json_object_get(p, "device"));
            if (!ph || strcmp(ph, name) != 0 || !dev) continue;
            json_t *o = json_pack("{s:O?, s:s, s:O?, s:O?}", "model", json_object_get(p, "model"), "device", dev,
                                  "samples_per_s", json_object_get(p, "samples_per_s"), "updated",
                                  json_object_get(p, "updated"));
            json_t *bt = json_object_get(p, "benchmark_time");
            if (o && bt) json_object_set(o, "benchmark_time", bt);
            if (o) json_array_append_new(speeds, o);
            int seen = 0;
            size_t d;
            json_t *x;
            json_array_foreach(devices, d, x) seen |= strcmp(json_string_value(x), dev) == 0;
            if (!seen) json_array_append_new(devices, json_string(dev));
        }
        json_t *b = json_object_get(h, "benchmark");
        const char *bd = json_string_value(json_object_get(b, "device"));
        if (bd && *bd) {
            int seen = 0;
            size_t d;
            json_t *x;
            json_array_foreach(devices, d, x) seen |= strcmp(json_string_value(x), bd) == 0;
            if (!seen) json_array_append_new(devices, json_string(bd));
        }
        json_object_set_new(h, "speeds", speeds);
        json_object_set_new(h, "devices", devices);
    }
}

int coord_health(coordinator_t *c, char *err, size_t errlen)
{
    redisContext *rc = conn_get(c);
    if (!rc) {
        errmsg(err, errlen, "Redis does not answer");
        return COORD_EUNAVAIL;
    }
    redisReply *r = redisCommand(rc, "SET %s %.3f EX 60", KEY_HEALTHZ, clock_wall_s());
    int code = COORD_OK;
    if (!r) {
        errmsg(err, errlen, "Redis does not answer");
        code = COORD_EUNAVAIL;
    } else if (r->type == REDIS_REPLY_ERROR) {
        errmsg(err, errlen, "Redis refuses writes: %.300s", r->str ? r->str : "(no message)");
        code = COORD_ESTATE;
    }
    if (r) freeReplyObject(r);
    conn_put(c, rc, code == COORD_EUNAVAIL);
    return code;
}

int coord_cluster(coordinator_t *c, json_t **out)
{
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int code = COORD_OK, broken = 0;
    json_t *coord = NULL, *profiles = json_array();
    redisAppendCommand(rc, "HGETALL %s", KEY_COORD);
    redisAppendCommand(rc, "LLEN %s", KEY_QUEUE);
    redisAppendCommand(rc, "SCARD %s", KEY_ACTIVE);
    redisAppendCommand(rc, "ZCARD %s", KEY_JOBS);
    redisAppendCommand(rc, "SRANDMEMBER %s %d", KEY_PROFILES, PROFILES_MAX);
    redisReply *r[5] = {0};
    for (int i = 0; i < 5; i++) {
        if (redisGetReply(rc, (void **)&r[i]) != REDIS_OK || !r[i]) {
            broken = 1;
            code = COORD_EUNAVAIL;
            goto out;
        }
    }
    static const char *const COORD_STRINGS[] = {"host", "version", "state_dir", "redis", "worker", "listen", NULL};
    if (r[0]->type == REDIS_REPLY_ARRAY && r[0]->elements > 0) {
        coord = hash_object(r[0], COORD_STRINGS);
        /* Masked where it is written (daemon.c); masked again here, for a record an
         * older coordinator wrote: the API never shows a Redis password. */
        const char *ru = json_string_value(json_object_get(coord, "redis"));
        if (ru) {
            char shown[REDIS_URL_MAX + 16];
            redis_url_redact(ru, shown, sizeof shown);
            json_object_set_new(coord, "redis", json_string(shown));
        }
        const char *h = json_string_value(json_object_get(coord, "hosts"));
        json_t *hosts = h ? json_loads(h, 0, NULL) : NULL;
        if (hosts) json_object_set_new(coord, "hosts", hosts);
        const char *sm = json_string_value(json_object_get(coord, "simulator"));
        json_t *sim = sm ? json_loads(sm, 0, NULL) : NULL;
        if (sim) json_object_set_new(coord, "simulator", sim);
        json_object_set_new(coord, "worker_redis",
                            json_boolean(json_integer_value(json_object_get(coord, "worker_redis")) == 1));
    }
    double hb = coord ? json_number_value(json_object_get(coord, "heartbeat")) : 0;
    if (r[4]->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r[4]->elements; i++)
            if (reply_str(r[4]->element[i])) redisAppendCommand(rc, "HGETALL %s", reply_str(r[4]->element[i]));
        static const char *const PROFILE_STRINGS[] = {"host", "device", "model", NULL};
        for (size_t i = 0; i < r[4]->elements; i++) {
            if (!reply_str(r[4]->element[i])) continue;
            redisReply *p = NULL;
            if (redisGetReply(rc, (void **)&p) != REDIS_OK || !p) {
                broken = 1;
                code = COORD_EUNAVAIL;
                goto out;
            }
            json_t *o = hash_object(p, PROFILE_STRINGS);
            json_object_set_new(o, "key", json_string(reply_str(r[4]->element[i])));
            json_array_append_new(profiles, o);
            freeReplyObject(p);
        }
    }
    host_speeds(json_object_get(coord, "hosts"), profiles);
    *out = json_pack("{s:o, s:b, s:I, s:I, s:I, s:o}", "coordinator", coord ? coord : json_null(), "alive",
                     hb > 0 && clock_wall_s() - hb < 5.0, "queued", (json_int_t)reply_int(r[1], 0), "active",
                     (json_int_t)reply_int(r[2], 0), "jobs", (json_int_t)reply_int(r[3], 0), "profiles", profiles);
    coord = profiles = NULL;
    if (!*out) code = COORD_EINTERNAL;
out:
    for (int i = 0; i < 5; i++)
        if (r[i]) freeReplyObject(r[i]);
    json_decref(coord);
    json_decref(profiles);
    conn_put(c, rc, broken);
    return code;
}

int coord_cluster_classes(coordinator_t *c, json_t **out)
{
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int code = COORD_EUNAVAIL;
    redisReply *r = redisCommand(rc, "HGET %s hosts", KEY_COORD);
    json_t *hosts = r && r->type == REDIS_REPLY_STRING ? json_loads(r->str, 0, NULL) : NULL;
    size_t n = json_array_size(hosts);
    const char **names = calloc(n + 1, sizeof *names);
    int *slots = calloc(n + 1, sizeof *slots), k = 0;
    hclass_cache_t cache = {0};
    if (!r || hclass_refresh(rc, &cache, clock_wall_s()) != 0) goto out;
    code = COORD_EINTERNAL;
    if (!names || !slots) goto out;
    for (size_t i = 0; i < n; i++) {
        json_t *h = json_array_get(hosts, i);
        names[k] = json_string_value(json_object_get(h, "name"));
        slots[k] = (int)json_integer_value(json_object_get(h, "slots"));
        if (names[k] && slots[k] > 0) k++;
    }
    *out = hclass_cluster_json(cache.p, cache.n, names, slots, k);
    code = *out ? COORD_OK : COORD_EINTERNAL;
out:
    conn_put(c, rc, code == COORD_EUNAVAIL);
    if (r) freeReplyObject(r);
    json_decref(hosts);
    free(names);
    free(slots);
    hclass_free(&cache);
    return code;
}

/* ---- events -------------------------------------------------------------------------------------- */

/* The id of the newest entry of a stream, "0-0" when it is empty or missing. */
static int last_id(redisContext *rc, const char *key, char *out, size_t len)
{
    redisReply *r = redisCommand(rc, "XREVRANGE %s + - COUNT 1", key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r) freeReplyObject(r);
        return JS_EREDIS;
    }
    snprintf(out, len, "0-0");
    if (r->elements == 1 && r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 2 &&
        reply_str(r->element[0]->element[0]))
        snprintf(out, len, "%s", reply_str(r->element[0]->element[0]));
    freeReplyObject(r);
    return JS_OK;
}

int coord_events_open(coordinator_t *c, const char *job, coord_cursor_t *cur)
{
    memset(cur, 0, sizeof *cur);
    int for_job = job && *job;
    if (for_job && !job_id_valid(job)) return COORD_ENOTFOUND;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int code = COORD_OK, js = JS_OK;
    if (for_job) {
        int e = job_exists(rc, job);
        if (e != 1) {
            conn_put(c, rc, e == JS_EREDIS);
            return e == 0 ? COORD_ENOTFOUND : COORD_EUNAVAIL;
        }
        snprintf(cur->job, sizeof cur->job, "%s", job);
        char key[160];
        snprintf(key, sizeof key, KEY_JOB_METRICS, job);
        js = last_id(rc, key, cur->metrics_id, sizeof cur->metrics_id);
    }
    if (js == JS_OK) js = last_id(rc, KEY_EVENTS, cur->events_id, sizeof cur->events_id);
    if (js != JS_OK) code = COORD_EUNAVAIL;
    conn_put(c, rc, js == JS_EREDIS);
    return code;
}

int coord_events_wait(coordinator_t *c, coord_cursor_t *cur, int timeout_ms, int max, json_t **out)
{
    if (timeout_ms < 0) timeout_ms = 0;
    if (timeout_ms > EVENTS_WAIT_MAX_MS) timeout_ms = EVENTS_WAIT_MAX_MS;
    if (max <= 0) max = EVENTS_DEFAULT;
    if (max > EVENTS_MAX) max = EVENTS_MAX;
    int for_job = cur->job[0] != 0;
    if (for_job && !job_id_valid(cur->job)) return COORD_EINVAL;
    if (!stream_id_valid(cur->events_id) || (for_job && !stream_id_valid(cur->metrics_id))) return COORD_EINVAL;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    /* The pool's socket timeout would cut a long BLOCK short: widen it for this call. */
    struct timeval tv = {(timeout_ms + 2000) / 1000, ((timeout_ms + 2000) % 1000) * 1000};
    redisSetTimeout(rc, tv);
    char mkey[160], count[16], block[16];
    snprintf(mkey, sizeof mkey, KEY_JOB_METRICS, cur->job);
    snprintf(count, sizeof count, "%d", max);
    snprintf(block, sizeof block, "%d", timeout_ms);
    const char *argv[12];
    int a = 0;
    argv[a++] = "XREAD";
    argv[a++] = "COUNT";
    argv[a++] = count;
    if (timeout_ms > 0) { /* BLOCK 0 would mean forever */
        argv[a++] = "BLOCK";
        argv[a++] = block;
    }
    argv[a++] = "STREAMS";
    argv[a++] = KEY_EVENTS;
    if (for_job) argv[a++] = mkey;
    argv[a++] = cur->events_id;
    if (for_job) argv[a++] = cur->metrics_id;
    size_t len[12];
    for (int i = 0; i < a; i++) len[i] = strlen(argv[i]);
    redisReply *r = redisCommandArgv(rc, a, argv, len);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        conn_put(c, rc, 1); /* its timeout was changed: do not give it back */
        if (r) freeReplyObject(r);
        return COORD_EUNAVAIL;
    }
    json_t *list = json_array();
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t s = 0; s < r->elements; s++) {
            const redisReply *st = r->element[s];
            if (st->type != REDIS_REPLY_ARRAY || st->elements != 2 || !reply_str(st->element[0])) continue;
            int is_events = strcmp(reply_str(st->element[0]), KEY_EVENTS) == 0;
            const redisReply *entries = st->element[1];
            for (size_t i = 0; entries->type == REDIS_REPLY_ARRAY && i < entries->elements; i++) {
                const char *sid = NULL;
                json_t *ev = entry_json(entries->element[i], &sid);
                if (!ev) continue;
                if (is_events) snprintf(cur->events_id, sizeof cur->events_id, "%s", sid);
                else snprintf(cur->metrics_id, sizeof cur->metrics_id, "%s", sid);
                /* The audit trail shares pacer:events but is not for the
                 * streams: it names users and every caller's requests (docs/REDIS.md). */
                const char *type = json_string_value(json_object_get(ev, "type"));
                if (is_events && type && strcmp(type, "audit") == 0) {
                    json_decref(ev);
                    continue;
                }
                if (is_events && for_job) {
                    const char *j = json_string_value(json_object_get(ev, "job"));
                    if (!j || strcmp(j, cur->job) != 0) {
                        json_decref(ev);
                        continue;
                    }
                }
                if (!is_events) json_object_set_new(ev, "type", json_string("metrics"));
                json_array_append_new(list, json_pack("{s:s, s:o}", "id", sid, "event", ev));
            }
        }
    }
    freeReplyObject(r);
    struct timeval back = {2, 0};
    redisSetTimeout(rc, back);
    conn_put(c, rc, 0);
    *out = list;
    return COORD_OK;
}
