/* coordinator/jobstore.c - see jobstore.h. */
#include "jobstore.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "clog.h"

static const char *const STATE_NAMES[JOB_NSTATES] = {
    [JOB_QUEUED] = "QUEUED", [JOB_RUNNING] = "RUNNING",     [JOB_SUCCEEDED] = "SUCCEEDED",
    [JOB_FAILED] = "FAILED", [JOB_CANCELLED] = "CANCELLED", [JOB_RESTARTING] = "RESTARTING",
};

const char *job_state_name(job_state_t s) { return (unsigned)s < JOB_NSTATES ? STATE_NAMES[s] : "UNKNOWN"; }

int job_state_parse(const char *name, job_state_t *out)
{
    for (int i = 0; i < JOB_NSTATES; i++)
        if (name && strcasecmp(name, STATE_NAMES[i]) == 0) {
            *out = (job_state_t)i;
            return 0;
        }
    return -1;
}

int job_state_terminal(job_state_t s) { return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED; }

int job_id_valid(const char *id)
{
    if (!id || strncmp(id, "j-", 2) != 0 || !id[2] || strlen(id) >= JOB_ID_MAX) return 0;
    for (const char *p = id + 2; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return 1;
}

int reply_ok(const redisReply *r) { return r && r->type != REDIS_REPLY_ERROR; }

const char *reply_str(const redisReply *r)
{
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) return r->str;
    return NULL;
}

long long reply_int(const redisReply *r, long long dflt)
{
    if (!r) return dflt;
    if (r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r->type == REDIS_REPLY_STRING && r->len > 0) {
        char *end;
        long long v = strtoll(r->str, &end, 10);
        return *end ? dflt : v;
    }
    return dflt;
}

double reply_double(const redisReply *r, double dflt)
{
    if (!r) return dflt;
    if (r->type == REDIS_REPLY_INTEGER) return (double)r->integer;
    if (r->type == REDIS_REPLY_STRING && r->len > 0) {
        char *end;
        double v = strtod(r->str, &end);
        return *end ? dflt : v;
    }
    return dflt;
}

/* Digits up to the first non-digit into *v; -1 when there are none, more than 20, or
 * the value passes 2^64 - 1. */
static const char *stream_id_part(const char *s, unsigned long long *v)
{
    unsigned long long x = 0;
    int n = 0;
    for (; *s >= '0' && *s <= '9'; s++, n++) {
        unsigned d = (unsigned)(*s - '0');
        if (n >= 20 || x > (ULLONG_MAX - d) / 10) return NULL;
        x = x * 10 + d;
    }
    if (n == 0) return NULL;
    *v = x;
    return s;
}

int jobstore_stream_id_parse(const char *s, unsigned long long *ms, unsigned long long *seq)
{
    unsigned long long a = 0, b = 0;
    if (!s || !(s = stream_id_part(s, &a))) return -1;
    if (*s == '-' && !(s = stream_id_part(s + 1, &b))) return -1;
    if (*s) return -1;
    if (ms) *ms = a;
    if (seq) *seq = b;
    return 0;
}

/* ---- pool -------------------------------------------------------------------------------- */

#define POOL_IDLE_MAX 8
#define POOL_TIMEOUT_S 2.0

struct jobstore_pool {
    redis_url_t url;
    pthread_mutex_t lock;
    redisContext *idle[POOL_IDLE_MAX];
    int nidle;
};

jobstore_pool_t *jobstore_pool_new(const redis_url_t *url)
{
    jobstore_pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->url = *url;
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

void jobstore_pool_free(jobstore_pool_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->nidle; i++) redisFree(p->idle[i]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

redisContext *jobstore_pool_get(jobstore_pool_t *p, char *err, size_t errlen)
{
    redisContext *c = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->nidle > 0) c = p->idle[--p->nidle];
    pthread_mutex_unlock(&p->lock);
    if (c) return c;
    return redis_url_connect(&p->url, POOL_TIMEOUT_S, err, errlen);
}

void jobstore_pool_put(jobstore_pool_t *p, redisContext *c, int broken)
{
    if (!c) return;
    if (!broken && !c->err) {
        pthread_mutex_lock(&p->lock);
        if (p->nidle < POOL_IDLE_MAX) {
            p->idle[p->nidle++] = c;
            c = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    if (c) redisFree(c);
}

/* ---- jobs ---------------------------------------------------------------------------------- */

/* Maps a reply to a JS code and frees it. */
static int done(redisReply *r)
{
    int rc = !r ? JS_EREDIS : r->type == REDIS_REPLY_ERROR ? JS_EREDIS : JS_OK;
    if (r && r->type == REDIS_REPLY_ERROR) clog_printf("redis error: %s", r->str);
    if (r) freeReplyObject(r);
    return rc;
}

static char *event_text(const char *id, const char *type, const char *state, const char *reason, double t)
{
    json_t *ev = json_pack("{s:s, s:s, s:f}", "type", type, "job", id, "time", t);
    if (!ev) return NULL;
    if (state) json_object_set_new(ev, "state", json_string(state));
    if (reason && *reason) json_object_set_new(ev, "reason", json_string(reason));
    char *s = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    return s;
}

int jobstore_event(redisContext *c, json_t *ev)
{
    char *s = json_dumps(ev, JSON_COMPACT);
    if (!s) return JS_ENOMEM;
    redisReply *r = redisCommand(c, "XADD %s MAXLEN ~ %d * json %s", KEY_EVENTS, EVENTS_MAXLEN, s);
    free(s);
    return done(r);
}

/* Sends MULTI, the queued commands already appended by the caller (ncmd of them), EXEC,
 * and reads every reply. */
static int exec_pipeline(redisContext *c, int ncmd)
{
    int rc = JS_OK;
    for (int i = 0; i < ncmd + 2; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) return JS_EREDIS;
        if (r->type == REDIS_REPLY_ERROR) {
            clog_printf("redis error: %s", r->str);
            rc = JS_EREDIS;
        }
        if (i == ncmd + 1 && r->type != REDIS_REPLY_ARRAY) rc = JS_EREDIS; /* EXEC aborted */
        freeReplyObject(r);
    }
    return rc;
}

/* KEYS: the parent's hash. ARGV: the retry's id, JOB_RETRIES_MAX. Appends the id to the
 * parent's "retries", dropping the oldest beyond the limit; nothing when the parent is gone
 * (a hash with only "retries" would look like a job). */
static const char RETRIES_LUA[] = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
                                  "local v = redis.call('HGET', KEYS[1], 'retries')\n"
                                  "if not v or v == '' then v = ARGV[1] else v = v .. ',' .. ARGV[1] end\n"
                                  "local _, commas = string.gsub(v, ',', ',')\n"
                                  "while commas + 1 > tonumber(ARGV[2]) do\n"
                                  "  v = string.sub(v, string.find(v, ',', 1, true) + 1)\n"
                                  "  commas = commas - 1\n"
                                  "end\n"
                                  "redis.call('HSET', KEYS[1], 'retries', v)\n"
                                  "return commas + 1\n";

int jobstore_submit(redisContext *c, const job_new_t *j, char *id, size_t idlen, json_t **hash)
{
    if (hash) *hash = NULL;
    redisReply *r = redisCommand(c, "INCR %s", KEY_SEQ);
    if (!r || r->type != REDIS_REPLY_INTEGER) return done(r);
    snprintf(id, idlen, "j-%lld", r->integer);
    freeReplyObject(r);

    double now = clock_wall_s();
    char key[128], pkey[128], t[32], workers[16], world[16], dyn[4], sim[4], why[64], max[16];
    snprintf(key, sizeof key, KEY_JOB, id);
    snprintf(t, sizeof t, "%.3f", now);
    snprintf(workers, sizeof workers, "%d", j->workers);
    snprintf(world, sizeof world, "%d", j->world);
    snprintf(dyn, sizeof dyn, "%d", j->dynamic_batch ? 1 : 0);
    snprintf(sim, sizeof sim, "%d", j->simulated ? 1 : 0);
    snprintf(why, sizeof why, "%s%s", j->parent ? "retry of " : "submitted", j->parent ? j->parent : "");
    char *ev = event_text(id, "state", "QUEUED", why, now);
    if (!ev) return JS_ENOMEM;
    const char *argv[] = {
        "HSET",
        key,
        "id",
        id,
        "name",
        j->name,
        "model",
        j->model,
        "algorithm",
        j->algorithm,
        "workers",
        workers,
        "world",
        world,
        "dynamic_batch",
        dyn,
        "simulated",
        sim,
        "state",
        "QUEUED",
        "spec",
        j->spec_json,
        "submitted",
        t,
        "restarts",
        "0",
        "attempts",
        "0",
        "reason",
        "",
        "owner", /* the last two pairs are left out when there is none */
        j->owner ? j->owner : "",
        "parent",
        j->parent ? j->parent : "",
    };
    int argc = (int)(sizeof argv / sizeof argv[0]) - 4;
    if (j->owner) argc += 2;
    if (j->parent) {
        argv[argc++] = "parent";
        argv[argc++] = j->parent;
    }
    size_t len[sizeof argv / sizeof argv[0]];
    for (int i = 0; i < argc; i++) len[i] = strlen(argv[i]);
    char ukey[128];
    snprintf(ukey, sizeof ukey, KEY_USER_QUEUED, j->owner ? j->owner : "");
    redisAppendCommand(c, "MULTI");
    redisAppendCommandArgv(c, argc, argv, len);
    redisAppendCommand(c, "ZADD %s %s %s", KEY_JOBS, t, id);
    redisAppendCommand(c, "RPUSH %s %s", KEY_QUEUE, id);
    redisAppendCommand(c, "XADD %s MAXLEN ~ %d * json %s", KEY_EVENTS, EVENTS_MAXLEN, ev);
    if (j->owner && j->counted) redisAppendCommand(c, "SADD %s %s", ukey, id);
    if (j->parent) {
        snprintf(pkey, sizeof pkey, KEY_JOB, j->parent);
        snprintf(max, sizeof max, "%d", JOB_RETRIES_MAX);
        redisAppendCommand(c, "EVAL %s 1 %s %s %s", RETRIES_LUA, pkey, id, max);
    }
    redisAppendCommand(c, "EXEC");
    free(ev);
    int rc = exec_pipeline(c, 4 + (j->owner && j->counted) + (j->parent != NULL));
    if (rc == JS_OK && hash) {
        /* What HGETALL would return now, without asking (field order included). */
        json_t *h = json_object();
        for (int i = 2; h && i + 1 < argc; i += 2)
            if (json_object_set_new(h, argv[i], json_string(argv[i + 1])) != 0) {
                json_decref(h);
                h = NULL;
            }
        *hash = h;
    }
    return rc;
}

int jobstore_get(redisContext *c, const char *id, json_t **out)
{
    char key[128];
    snprintf(key, sizeof key, KEY_JOB, id);
    redisReply *r = redisCommand(c, "HGETALL %s", key);
    if (!r || r->type != REDIS_REPLY_ARRAY) return done(r);
    if (r->elements == 0) {
        freeReplyObject(r);
        return JS_ENOTFOUND;
    }
    json_t *o = json_object();
    for (size_t i = 0; o && i + 1 < r->elements; i += 2) {
        const char *k = reply_str(r->element[i]), *v = reply_str(r->element[i + 1]);
        if (k && v) json_object_set_new(o, k, json_string(v));
    }
    freeReplyObject(r);
    if (!o) return JS_ENOMEM;
    *out = o;
    return JS_OK;
}

/* KEYS: job hash, queue, events. ARGV: id, now, event json.
 * Returns {code, state}: code 1 cancelled now, 2 requested (running), 0 finished, -1 none. */
static const char CANCEL_LUA[] = "local st = redis.call('HGET', KEYS[1], 'state')\n"
                                 "if not st then return {-1, ''} end\n"
                                 "if st == 'QUEUED' then\n"
                                 "  redis.call('HSET', KEYS[1], 'state', 'CANCELLED', 'finished', ARGV[2],\n"
                                 "             'reason', 'cancelled before it started')\n"
                                 "  redis.call('LREM', KEYS[2], 0, ARGV[1])\n"
                                 "  redis.call('XADD', KEYS[3], 'MAXLEN', '~', '10000', '*', 'json', ARGV[3])\n"
                                 "  return {1, st}\n"
                                 "end\n"
                                 "if st == 'RUNNING' or st == 'RESTARTING' then\n"
                                 "  redis.call('HSET', KEYS[1], 'cancel_requested', ARGV[2])\n"
                                 "  return {2, st}\n"
                                 "end\n"
                                 "return {0, st}\n";

int jobstore_cancel(redisContext *c, const char *id, job_state_t *state_out)
{
    char key[128], t[32];
    double now = clock_wall_s();
    snprintf(key, sizeof key, KEY_JOB, id);
    snprintf(t, sizeof t, "%.3f", now);
    char *ev = event_text(id, "state", "CANCELLED", "cancelled before it started", now);
    if (!ev) return JS_ENOMEM;
    redisReply *r = redisCommand(c, "EVAL %s 3 %s %s %s %s %s %s", CANCEL_LUA, key, KEY_QUEUE, KEY_EVENTS, id, t, ev);
    free(ev);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return done(r);
    long long code = reply_int(r->element[0], -1);
    const char *st = reply_str(r->element[1]);
    job_state_t s = JOB_QUEUED;
    if (st) job_state_parse(st, &s);
    freeReplyObject(r);
    if (state_out) *state_out = s;
    if (code < 0) return JS_ENOTFOUND;
    if (code == 0) return JS_ESTATE;
    return JS_OK;
}

int jobstore_queue_ids(redisContext *c, char (*ids)[JOB_ID_MAX], int max, int *n)
{
    *n = 0;
    redisReply *r = redisCommand(c, "LRANGE %s 0 %d", KEY_QUEUE, max - 1);
    if (!r || r->type != REDIS_REPLY_ARRAY) return done(r);
    for (size_t i = 0; i < r->elements && *n < max; i++) {
        const char *s = reply_str(r->element[i]);
        if (s && job_id_valid(s)) snprintf(ids[(*n)++], JOB_ID_MAX, "%s", s);
    }
    freeReplyObject(r);
    return JS_OK;
}

/* KEYS: queue, job hash, active, events. ARGV: id, now, event json. */
static const char CLAIM_LUA[] = "if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end\n"
                                "if redis.call('HGET', KEYS[2], 'state') ~= 'QUEUED' then return 0 end\n"
                                "redis.call('HSET', KEYS[2], 'state', 'RUNNING', 'started', ARGV[2])\n"
                                "redis.call('SADD', KEYS[3], ARGV[1])\n"
                                "redis.call('XADD', KEYS[4], 'MAXLEN', '~', '10000', '*', 'json', ARGV[3])\n"
                                "return 1\n";

int jobstore_claim(redisContext *c, const char *id, double now)
{
    char key[128], t[32];
    snprintf(key, sizeof key, KEY_JOB, id);
    snprintf(t, sizeof t, "%.3f", now);
    char *ev = event_text(id, "state", "RUNNING", "started", now);
    if (!ev) return JS_ENOMEM;
    redisReply *r = redisCommand(c, "EVAL %s 4 %s %s %s %s %s %s %s", CLAIM_LUA, KEY_QUEUE, key, KEY_ACTIVE, KEY_EVENTS,
                                 id, t, ev);
    free(ev);
    if (!r || r->type != REDIS_REPLY_INTEGER) return done(r);
    int claimed = r->integer == 1;
    freeReplyObject(r);
    return claimed;
}

/* ARGV: id, reason, preempted_by ("" none), t, event, drained_from ("" none), drain_need.
 * A drain's fields are written or removed each time, so a later requeue for a preemption
 * never waits for a drain that is over. */
static const char REQUEUE_LUA[] =
    "local s = redis.call('HGET', KEYS[2], 'state')\n"
    "if s ~= 'RUNNING' and s ~= 'RESTARTING' then return 0 end\n"
    "redis.call('HSET', KEYS[2], 'state', 'QUEUED', 'reason', ARGV[2])\n"
    "if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], 'preempted_by', ARGV[3], 'preempted_at', ARGV[4]) end\n"
    "if ARGV[6] ~= '' then redis.call('HSET', KEYS[2], 'drained_from', ARGV[6], 'drain_need', ARGV[7])\n"
    "else redis.call('HDEL', KEYS[2], 'drained_from', 'drain_need') end\n"
    "redis.call('SREM', KEYS[3], ARGV[1])\n"
    "redis.call('LPUSH', KEYS[1], ARGV[1])\n"
    "redis.call('XADD', KEYS[4], 'MAXLEN', '~', '10000', '*', 'json', ARGV[5])\n"
    "return 1\n";

static int requeue_eval(redisContext *c, const char *id, const char *by, const char *reason, const char *host, int need,
                        double now)
{
    char key[128], t[32], n[16];
    snprintf(key, sizeof key, KEY_JOB, id);
    snprintf(t, sizeof t, "%.3f", now);
    snprintf(n, sizeof n, "%d", need);
    char *ev = event_text(id, "state", "QUEUED", reason, now);
    if (!ev) return JS_ENOMEM;
    redisReply *r = redisCommand(c, "EVAL %s 4 %s %s %s %s %s %s %s %s %s %s %s", REQUEUE_LUA, KEY_QUEUE, key,
                                 KEY_ACTIVE, KEY_EVENTS, id, reason, by, t, ev, host, n);
    free(ev);
    if (!r || r->type != REDIS_REPLY_INTEGER) return done(r);
    int requeued = r->integer == 1;
    freeReplyObject(r);
    return requeued;
}

int jobstore_requeue(redisContext *c, const char *id, const char *by, const char *reason, double now)
{
    return requeue_eval(c, id, by, reason, "", 0, now);
}

int jobstore_requeue_drained(redisContext *c, const char *id, const char *host, int need, const char *reason, double now)
{
    return requeue_eval(c, id, "", reason, host, need, now);
}

int jobstore_update(redisContext *c, const char *id, const char *state, const char *reason, const char *const *kv,
                    int nkv)
{
    char key[128];
    snprintf(key, sizeof key, KEY_JOB, id);
    int argc = 2 + 2 * nkv + (state ? 4 : 0);
    const char **argv = calloc((size_t)argc, sizeof *argv);
    size_t *len = calloc((size_t)argc, sizeof *len);
    char *ev = NULL;
    int rc = JS_ENOMEM, ncmd = 0;
    if (!argv || !len) goto out;
    int a = 0;
    argv[a++] = "HSET";
    argv[a++] = key;
    for (int i = 0; i < 2 * nkv; i++) argv[a++] = kv[i];
    if (state) {
        argv[a++] = "state";
        argv[a++] = state;
        argv[a++] = "reason";
        argv[a++] = reason ? reason : "";
        ev = event_text(id, "state", state, reason, clock_wall_s());
        if (!ev) goto out;
    }
    if (a == 2) { /* nothing to write */
        rc = JS_OK;
        goto out;
    }
    for (int i = 0; i < a; i++) len[i] = strlen(argv[i]);
    redisAppendCommand(c, "MULTI");
    redisAppendCommandArgv(c, a, argv, len);
    ncmd++;
    if (state) {
        job_state_t s = JOB_QUEUED;
        job_state_parse(state, &s);
        if (job_state_terminal(s)) redisAppendCommand(c, "SREM %s %s", KEY_ACTIVE, id);
        else redisAppendCommand(c, "SADD %s %s", KEY_ACTIVE, id);
        redisAppendCommand(c, "XADD %s MAXLEN ~ %d * json %s", KEY_EVENTS, EVENTS_MAXLEN, ev);
        ncmd += 2;
    }
    redisAppendCommand(c, "EXEC");
    rc = exec_pipeline(c, ncmd);
out:
    free(ev);
    free(argv);
    free(len);
    return rc;
}

/* KEYS: pacer:jobs, the job hash. ARGV: id. Deletes a final job; 1 when it did. */
/* KEYS: pacer:jobs, the job hash; ARGV: the id, a cutoff (0 = none): with a cutoff only
 * a job that finished before it goes (one without a finished time: by its submission). */
static const char PRUNE_LUA[] = "local st = redis.call('HGET', KEYS[2], 'state')\n"
                                "if st == 'QUEUED' or st == 'RUNNING' or st == 'RESTARTING' then return 0 end\n"
                                "local cut = tonumber(ARGV[2]) or 0\n"
                                "if cut > 0 then\n"
                                "  local t = tonumber(redis.call('HGET', KEYS[2], 'finished') or '')\n"
                                "  if not t then t = tonumber(redis.call('HGET', KEYS[2], 'submitted') or '') end\n"
                                "  if t and t >= cut then return 0 end\n"
                                "end\n"
                                "redis.call('DEL', KEYS[2])\n"
                                "redis.call('ZREM', KEYS[1], ARGV[1])\n"
                                "return 1\n";

/* Runs PRUNE_LUA on each id of r (an array reply), appending the deleted ones. */
static int prune_ids(redisContext *c, const redisReply *r, long long at_most, double cut, int max,
                     char (*ids)[JOB_ID_MAX], int *n)
{
    char cuts[32];
    snprintf(cuts, sizeof cuts, "%.3f", cut > 0 ? cut : 0);
    for (size_t i = 0; i < r->elements && (long long)i < at_most && *n < max; i++) {
        const char *id = reply_str(r->element[i]);
        if (!id || !job_id_valid(id)) continue; /* not ours to interpret */
        char key[160];
        snprintf(key, sizeof key, KEY_JOB, id);
        redisReply *d = redisCommand(c, "EVAL %s 2 %s %s %s %s", PRUNE_LUA, KEY_JOBS, key, id, cuts);
        if (!reply_ok(d)) return done(d);
        if (reply_int(d, 0) == 1) snprintf(ids[(*n)++], JOB_ID_MAX, "%s", id);
        freeReplyObject(d);
    }
    return JS_OK;
}

int jobstore_prune(redisContext *c, long keep, double before, int max, char (*ids)[JOB_ID_MAX], int *n)
{
    *n = 0;
    if (max <= 0) return JS_OK;
    int rc = JS_OK;
    if (keep > 0) {
        redisReply *r = redisCommand(c, "ZCARD %s", KEY_JOBS);
        if (!reply_ok(r)) return done(r);
        long long card = reply_int(r, 0);
        freeReplyObject(r);
        if (card > keep) {
            long long excess = card - keep < max ? card - keep : max;
            r = redisCommand(c, "ZRANGE %s 0 %lld", KEY_JOBS, excess - 1);
            if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY) return done(r);
            rc = prune_ids(c, r, excess, 0, max, ids, n);
            freeReplyObject(r);
            if (rc != JS_OK) return rc;
        }
    }
    /* By age: a job submitted after the cutoff cannot have finished before it, so the
     * candidates are the oldest by submission (the score), at most what is left of max. */
    if (before > 0 && *n < max) {
        redisReply *r = redisCommand(c, "ZRANGEBYSCORE %s -inf (%.3f LIMIT 0 %d", KEY_JOBS, before, max - *n);
        if (!reply_ok(r) || r->type != REDIS_REPLY_ARRAY) return done(r);
        rc = prune_ids(c, r, max, before, max, ids, n);
        freeReplyObject(r);
    }
    return rc;
}

int jobstore_expire_job_keys(redisContext *c, const char *id, int world)
{
    char key[160];
    int n = 0;
    snprintf(key, sizeof key, KEY_JOB_METRICS, id);
    redisAppendCommand(c, "EXPIRE %s %d", key, JOB_KEYS_TTL_S);
    n++;
    snprintf(key, sizeof key, KEY_JOB_METRICS_COARSE, id);
    redisAppendCommand(c, "EXPIRE %s %d", key, JOB_KEYS_TTL_S);
    n++;
    snprintf(key, sizeof key, KEY_JOB_ASSIGNMENT, id);
    redisAppendCommand(c, "EXPIRE %s %d", key, JOB_KEYS_TTL_S);
    n++;
    for (int r = 0; r < world; r++) {
        snprintf(key, sizeof key, KEY_JOB_NODE, id, r);
        redisAppendCommand(c, "EXPIRE %s %d", key, JOB_KEYS_TTL_S);
        snprintf(key, sizeof key, KEY_JOB_STALENESS, id, r);
        redisAppendCommand(c, "EXPIRE %s %d", key, JOB_KEYS_TTL_S);
        n += 2;
    }
    int rc = JS_OK;
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) return JS_EREDIS;
        if (r->type == REDIS_REPLY_ERROR) rc = JS_EREDIS;
        freeReplyObject(r);
    }
    return rc;
}
