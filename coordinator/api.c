/* coordinator/api.c - the coord_* calls of coordinator.h: everything they answer is read
 * from Redis (and the job's files), so a client and the daemon see the same thing. */
#include "coord_internal.h"

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

#include "clog.h"
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
#define SUMMARY_MAX (1 << 20)

const char *coord_strerror(int code)
{
    switch (code) {
    case COORD_OK: return "ok";
    case COORD_EINVAL: return "invalid request";
    case COORD_ENOTFOUND: return "not found";
    case COORD_ESTATE: return "not possible in this state";
    case COORD_EUNAVAIL: return "Redis unavailable";
    case COORD_EINTERNAL: return "internal error";
    default: return "unknown error";
    }
}

int coord_js_to_coord(int js)
{
    switch (js) {
    case JS_OK: return COORD_OK;
    case JS_ENOTFOUND: return COORD_ENOTFOUND;
    case JS_ESTATE: return COORD_ESTATE;
    case JS_ENOMEM: return COORD_EINTERNAL;
    default: return COORD_EUNAVAIL;
    }
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static redisContext *conn_get(coordinator_t *c)
{
    char err[256];
    return jobstore_pool_get(c->pool, err, sizeof err);
}

/* Returns the connection to the pool; a NULL reply seen on it means it is broken. */
static void conn_put(coordinator_t *c, redisContext *rc, int broken)
{
    jobstore_pool_put(c->pool, rc, broken);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) CLOG_PRINTF(3, 4);
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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
        if (ok && len == 2 && b < 0xC2) ok = 0;   /* overlong */
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

static int stream_id_valid(const char *s)
{
    if (!s || !isdigit((unsigned char)*s)) return 0;
    while (isdigit((unsigned char)*s)) s++;
    if (!*s) return 1;
    if (*s++ != '-' || !isdigit((unsigned char)*s)) return 0;
    while (isdigit((unsigned char)*s)) s++;
    return *s == 0 && strlen(s) < 40;
}

/* EXISTS pacer:job:{id}: 1, 0, or JS_EREDIS. */
static int job_exists(redisContext *rc, const char *id)
{
    char key[128];
    job_key(key, sizeof key, id, NULL);
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

int coord_submit(coordinator_t *c, const char *spec_json, char *id, size_t idlen, char *err, size_t errlen)
{
    job_spec_t *s = NULL;
    char *norm = NULL;
    redisContext *rc = NULL;
    int rc_code = COORD_EINVAL;
    if (err && errlen) err[0] = 0;
    if (!spec_json || !*spec_json) {
        set_err(err, errlen, "spec: empty request body");
        goto out;
    }
    if (strlen(spec_json) > COORD_SPEC_MAX) {
        set_err(err, errlen, "spec: larger than %d bytes", COORD_SPEC_MAX);
        goto out;
    }
    s = malloc(sizeof *s);
    if (!s) {
        rc_code = COORD_EINTERNAL;
        goto out;
    }
    char perr[512];
    if (spec_parse(spec_json, s, perr, sizeof perr) != 0) {
        set_err(err, errlen, "%s", perr);
        goto out;
    }
    norm = spec_to_json(s);
    if (!norm) {
        rc_code = COORD_EINTERNAL;
        goto out;
    }
    job_new_t j = {
        .spec_json = norm, .name = s->name, .model = s->model, .algorithm = s->algorithm.name,
        .workers = s->workers, .world = spec_is_async(s) ? s->workers + 1 : s->workers,
        .dynamic_batch = s->algorithm.dynamic_batch,
    };
    rc = conn_get(c);
    if (!rc) {
        rc_code = COORD_EUNAVAIL;
        set_err(err, errlen, "Redis at %s is unreachable", c->redis_url);
        goto out;
    }
    int js = jobstore_submit(rc, &j, id, idlen);
    conn_put(c, rc, js == JS_EREDIS);
    rc_code = coord_js_to_coord(js);
    if (rc_code != COORD_OK) set_err(err, errlen, "could not store the job: %s", coord_strerror(rc_code));
out:
    free(s);
    free(norm);
    return rc_code;
}

static const char *const SUMMARY_FIELDS[] = {
    "id", "name", "state", "model", "algorithm", "workers", "submitted", "started", "finished", "restarts", "reason",
};
#define NSUMMARY (sizeof SUMMARY_FIELDS / sizeof SUMMARY_FIELDS[0])
static const char *const STRING_FIELDS[] = { "id", "name", "state", "model", "algorithm", "reason", "spec",
                                             "log", "checkpoint_dir", "summary_path", NULL };

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
    for (long start = 0; start < LIST_SCAN_MAX; start += CHUNK) {
        redisReply *ids = redisCommand(rc, "ZREVRANGE %s %ld %ld", KEY_JOBS, start, start + CHUNK - 1);
        if (!ids || ids->type != REDIS_REPLY_ARRAY) {
            broken = !ids;
            if (ids) freeReplyObject(ids);
            code = COORD_EUNAVAIL;
            break;
        }
        size_t n = ids->elements;
        for (size_t i = 0; i < n; i++) {
            char key[128];
            job_key(key, sizeof key, reply_str(ids->element[i]) ? reply_str(ids->element[i]) : "", NULL);
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
                broken = 1;
                code = COORD_EUNAVAIL;
                break;
            }
            if (r->type == REDIS_REPLY_ARRAY && r->elements == NSUMMARY && reply_str(r->element[2])) {
                job_state_t st;
                int ok = !filter || (job_state_parse(reply_str(r->element[2]), &st) == 0 && st == want);
                if (ok) {
                    if (matched >= offset && (long)json_array_size(jobs) < limit) {
                        json_t *o = json_object();
                        for (size_t f = 0; f < NSUMMARY; f++) {
                            const char *v = reply_str(r->element[f]);
                            int str = f <= 4 || f == 10;   /* id..algorithm, reason */
                            json_object_set_new(o, SUMMARY_FIELDS[f], str ? json_string(v ? v : "") : typed(v));
                        }
                        json_array_append_new(jobs, o);
                    }
                    matched++;
                }
            }
            freeReplyObject(r);
        }
        freeReplyObject(ids);
        if (code != COORD_OK || n < CHUNK) break;
    }
    conn_put(c, rc, broken);
    if (code != COORD_OK) {
        json_decref(jobs);
        return code;
    }
    *out = json_pack("{s:o, s:I, s:I, s:I}", "jobs", jobs, "total", (json_int_t)matched, "offset",
                     (json_int_t)offset, "limit", (json_int_t)limit);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* Reads a small JSON file (the worker's summary) with one read where it can, and parses
 * it; NULL when it is missing, larger than SUMMARY_MAX or not JSON. *st is the identity
 * of the file that was read. (json_load_file reads through stdio a byte at a time: half
 * again the time of parsing the same bytes from memory.) */
static json_t *load_json_file(const char *path, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    json_t *j = NULL;
    char *buf = NULL;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size > SUMMARY_MAX) goto out;
    /* One byte more than fstat said, so one read() normally sees the whole file and its
     * end; a file that grows meanwhile (a running job rewriting it) is read to its end. */
    size_t cap = (size_t)st->st_size + 1, n = 0;
    if (!(buf = malloc(cap))) goto out;
    for (;;) {
        if (n == cap) {
            if (cap > SUMMARY_MAX) goto out;
            char *bigger = realloc(buf, 2 * cap);
            if (!bigger) goto out;
            buf = bigger;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) goto out;
        if (k == 0) break;
        n += (size_t)k;
    }
    if (n <= SUMMARY_MAX) j = json_loadb(buf, n, 0, NULL);
out:
    free(buf);
    close(fd);
    return j;
}

/* ---- parse caches for coord_get (GET /api/v1/jobs/{id}, the API's hottest call): the
 * job's spec and the worker's summary were parsed on every call, a third or more of its
 * CPU time (most of it with a big job's summary).
 * Parsed objects are shared by reference (jansson allows concurrent reads of a value
 * that nobody modifies), so coord_get's callers must not modify "spec" or "summary".
 * Both tables are direct-mapped by a hash of their key (a collision replaces the older
 * entry) and process-wide: keys are job ids checked against the spec text, and absolute
 * paths, so the coordinators of one process (tests) can share them. ---- */

#define SPEC_CACHE_SLOTS 32
#define SPEC_CACHE_TEXT_MAX (64 * 1024)       /* larger specs are parsed per call */
#define SUMMARY_CACHE_SLOTS 32
#define SUMMARY_CACHE_FILE_MAX (256 * 1024)   /* larger summaries are parsed per call */

/* A spec never changes after submit; an entry is used only when the text in Redis is
 * exactly the one it was parsed from, so it cannot go stale (not even for an id reused
 * after a Redis reset). */
typedef struct {
    char id[JOB_ID_MAX];
    char *text;
    json_t *spec;
} spec_entry_t;

/* A finished job's summary file no longer changes (its processes are gone before the
 * final state is written). An entry is used only while the job is final in Redis and the
 * file is the same one (device, inode, size, mtime, ctime): a job that runs again (its id
 * reused after a Redis reset) is not final while it runs, drops its entry when seen so,
 * and the summary it writes next is another version of the file. */
typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    json_t *summary;
} summary_entry_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static spec_entry_t spec_cache[SPEC_CACHE_SLOTS];
static summary_entry_t summary_cache[SUMMARY_CACHE_SLOTS];

static unsigned str_hash(const char *s)
{
    unsigned h = 5381;
    for (; *s; s++) h = h * 33u + (unsigned char)*s;
    return h;
}

/* The job's parsed spec (a new reference, shared), or NULL when text is not JSON. */
static json_t *spec_get(const char *id, const char *text)
{
    if (!text) return NULL;
    spec_entry_t *e = &spec_cache[str_hash(id) % SPEC_CACHE_SLOTS];
    json_t *j = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->text && strcmp(e->id, id) == 0 && strcmp(e->text, text) == 0) j = json_incref(e->spec);
    pthread_mutex_unlock(&cache_lock);
    if (j) return j;
    size_t len = strlen(text);
    if (!(j = json_loadb(text, len, 0, NULL)) || len > SPEC_CACHE_TEXT_MAX || strlen(id) >= sizeof e->id) return j;
    char *copy = malloc(len + 1);
    if (!copy) return j;
    memcpy(copy, text, len + 1);
    pthread_mutex_lock(&cache_lock);
    char *old_text = e->text;
    json_t *old = e->spec;
    snprintf(e->id, sizeof e->id, "%s", id);
    e->text = copy;
    e->spec = json_incref(j);
    pthread_mutex_unlock(&cache_lock);
    free(old_text);   /* outside the lock: a big old entry takes a while to free */
    json_decref(old);
    return j;
}

static int same_file(const summary_entry_t *e, const struct stat *st)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* Empties the entry of path, if it has one. */
static void summary_forget(const char *path)
{
    summary_entry_t *e = &summary_cache[str_hash(path) % SUMMARY_CACHE_SLOTS];
    char *old_path = NULL;
    json_t *old = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->path && strcmp(e->path, path) == 0) {
        old_path = e->path;
        old = e->summary;
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&cache_lock);
    free(old_path);
    json_decref(old);
}

/* The job's summary (a new reference, shared when final) or NULL. final: the job is
 * SUCCEEDED, FAILED or CANCELLED in Redis. */
static json_t *summary_get(const char *path, int final)
{
    struct stat st;
    if (!path || !*path) return NULL;
    if (!final) {
        summary_forget(path);
        return load_json_file(path, &st);
    }
    if (stat(path, &st) != 0) {
        summary_forget(path);
        return NULL;
    }
    summary_entry_t *e = &summary_cache[str_hash(path) % SUMMARY_CACHE_SLOTS];
    json_t *j = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->path && strcmp(e->path, path) == 0 && same_file(e, &st)) j = json_incref(e->summary);
    pthread_mutex_unlock(&cache_lock);
    if (j) return j;
    if (!(j = load_json_file(path, &st)) || st.st_size > SUMMARY_CACHE_FILE_MAX) return j;
    char *key = strdup(path);
    if (!key) return j;
    pthread_mutex_lock(&cache_lock);
    char *old_path = e->path;
    json_t *old = e->summary;
    e->path = key;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime = st.st_mtim;
    e->ctime = st.st_ctim;
    e->summary = json_incref(j);
    pthread_mutex_unlock(&cache_lock);
    free(old_path);
    json_decref(old);
    return j;
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
    json_t *o = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v) {
        const char *s = json_string_value(v);
        if (strcmp(key, "spec") == 0) {
            json_t *spec = spec_get(id, s);
            json_object_set_new(o, "spec", spec ? spec : json_string(s));
        } else if (strcmp(key, "dynamic_batch") == 0) {
            json_object_set_new(o, key, json_boolean(s && strcmp(s, "1") == 0));
        } else if (strcmp(key, "pstart") == 0 || strcmp(key, "summary_path") == 0) {
            continue;   /* internal */
        } else if (strcmp(key, "reason") == 0) {
            json_object_set_new(o, key, json_string(s));
        } else {
            int str = 0;
            for (const char *const *f = STRING_FIELDS; *f; f++) str |= strcmp(*f, key) == 0;
            if (s && *s) json_object_set_new(o, key, str ? json_string(s) : typed(s));
        }
    }
    const char *ckdir = json_string_value(json_object_get(h, "checkpoint_dir"));
    const char *name = json_string_value(json_object_get(h, "name"));
    if (ckdir && *ckdir && name) {
        char path[PATH_MAX + 128];
        snprintf(path, sizeof path, "%s/%s.ckpt", ckdir, name);
        json_object_set_new(o, "checkpoint", json_string(path));
    }
    job_state_t st;
    const char *state = json_string_value(json_object_get(h, "state"));
    int final = state && job_state_parse(state, &st) == 0 && job_state_terminal(st);
    json_t *summary = summary_get(json_string_value(json_object_get(h, "summary_path")), final);
    if (summary) json_object_set_new(o, "summary", summary);
    json_decref(h);
    *out = o;
    return COORD_OK;
}

int coord_cancel(coordinator_t *c, const char *id, char *err, size_t errlen)
{
    if (!job_id_valid(id)) {
        set_err(err, errlen, "no job %s", id ? id : "(null)");
        return COORD_ENOTFOUND;
    }
    redisContext *rc = conn_get(c);
    if (!rc) {
        set_err(err, errlen, "Redis at %s is unreachable", c->redis_url);
        return COORD_EUNAVAIL;
    }
    job_state_t st = JOB_QUEUED;
    int js = jobstore_cancel(rc, id, &st);
    conn_put(c, rc, js == JS_EREDIS);
    int code = coord_js_to_coord(js);
    if (code == COORD_ENOTFOUND) set_err(err, errlen, "no job %s", id);
    else if (code == COORD_ESTATE) set_err(err, errlen, "job %s has already finished (%s)", id, job_state_name(st));
    else if (code != COORD_OK) set_err(err, errlen, "cancel failed: %s", coord_strerror(code));
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
        if (!k) continue;
        if (strcmp(k, "count") == 0) s->count = v;
        else if (strcmp(k, "sum") == 0) s->sum = v;
        else if (strcmp(k, "sumsq") == 0) s->sumsq = v;
        else if (strcmp(k, "max") == 0) s->max = v;
        else if (strcmp(k, "p50") == 0) s->p50 = v;
        else if (strcmp(k, "p95") == 0) s->p95 = v;
        else if (strcmp(k, "overflow") == 0) s->overflow = v;
        else if (k[0] == 'h' && k[1] >= '0' && k[1] < '0' + STALENESS_BUCKETS && !k[2]) s->hist[k[1] - '0'] = v;
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
    job_key(key, sizeof key, id, NULL);
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
        char suffix[48];
        snprintf(suffix, sizeof suffix, "node:%lld", r);
        job_key(key, sizeof key, id, suffix);
        redisAppendCommand(rc, "HGETALL %s", key);
        snprintf(suffix, sizeof suffix, "staleness:%lld", r);
        job_key(key, sizeof key, id, suffix);
        redisAppendCommand(rc, "HGETALL %s", key);
    }
    job_key(key, sizeof key, id, "assignment");
    redisAppendCommand(rc, "HGETALL %s", key);
    ranks = json_array();
    double now = clog_now();
    static const char *const NODE_STRINGS[] = { "host", "device", "role", NULL };
    for (long long r = 0; r < world; r++) {
        redisReply *n = NULL, *s = NULL;
        if (redisGetReply(rc, (void **)&n) != REDIS_OK || !n || redisGetReply(rc, (void **)&s) != REDIS_OK || !s) {
            if (n) freeReplyObject(n);
            broken = 1;
            code = COORD_EUNAVAIL;
            goto out;
        }
        json_t *o = hash_object(n, NODE_STRINGS);
        json_object_set_new(o, "rank", json_integer(r));
        double hb = json_number_value(json_object_get(o, "heartbeat"));
        if (hb > 0) json_object_set_new(o, "heartbeat_age_s", json_real(now - hb));
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
        static const char *const ASG_STRINGS[] = { "source", NULL };
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
    job_key(key, sizeof key, id, "metrics");
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
    job_key(key, sizeof key, id, NULL);
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
    char path[PATH_MAX];
    int code = job_field(c, id, "log", path, sizeof path);
    if (code != COORD_OK) return code;
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

int coord_checkpoint_path(coordinator_t *c, const char *id, char *path, size_t len)
{
    if (!job_id_valid(id)) return COORD_ENOTFOUND;
    json_t *h = NULL;
    redisContext *rc = conn_get(c);
    if (!rc) return COORD_EUNAVAIL;
    int js = jobstore_get(rc, id, &h);
    conn_put(c, rc, js == JS_EREDIS);
    if (js != JS_OK) return coord_js_to_coord(js);
    const char *dir = json_string_value(json_object_get(h, "checkpoint_dir"));
    const char *name = json_string_value(json_object_get(h, "name"));
    int code = COORD_ENOTFOUND;
    struct stat st;
    if (dir && *dir && name) {
        int k = snprintf(path, len, "%s/%s.ckpt", dir, name);
        if (k < 0 || (size_t)k >= len) code = COORD_EINVAL;
        else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) code = COORD_OK;
    }
    json_decref(h);
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
    redisReply *r[5] = { 0 };
    for (int i = 0; i < 5; i++) {
        if (redisGetReply(rc, (void **)&r[i]) != REDIS_OK || !r[i]) {
            broken = 1;
            code = COORD_EUNAVAIL;
            goto out;
        }
    }
    static const char *const COORD_STRINGS[] = { "host", "version", "state_dir", "redis", "worker", "listen", NULL };
    if (r[0]->type == REDIS_REPLY_ARRAY && r[0]->elements > 0) {
        coord = hash_object(r[0], COORD_STRINGS);
        const char *h = json_string_value(json_object_get(coord, "hosts"));
        json_t *hosts = h ? json_loads(h, 0, NULL) : NULL;
        if (hosts) json_object_set_new(coord, "hosts", hosts);
        json_object_set_new(coord, "worker_redis",
                            json_boolean(json_integer_value(json_object_get(coord, "worker_redis")) == 1));
    }
    double hb = coord ? json_number_value(json_object_get(coord, "heartbeat")) : 0;
    if (r[4]->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r[4]->elements; i++)
            if (reply_str(r[4]->element[i])) redisAppendCommand(rc, "HGETALL %s", reply_str(r[4]->element[i]));
        static const char *const PROFILE_STRINGS[] = { "host", "device", "model", NULL };
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
    *out = json_pack("{s:o, s:b, s:I, s:I, s:I, s:o}", "coordinator", coord ? coord : json_null(), "alive",
                     hb > 0 && clog_now() - hb < 5.0, "queued", (json_int_t)reply_int(r[1], 0), "active",
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
        job_key(key, sizeof key, job, "metrics");
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
    struct timeval tv = { (timeout_ms + 2000) / 1000, ((timeout_ms + 2000) % 1000) * 1000 };
    redisSetTimeout(rc, tv);
    char mkey[160], count[16], block[16];
    job_key(mkey, sizeof mkey, cur->job, "metrics");
    snprintf(count, sizeof count, "%d", max);
    snprintf(block, sizeof block, "%d", timeout_ms);
    const char *argv[12];
    int a = 0;
    argv[a++] = "XREAD";
    argv[a++] = "COUNT";
    argv[a++] = count;
    if (timeout_ms > 0) {   /* BLOCK 0 would mean forever */
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
        conn_put(c, rc, 1);   /* its timeout was changed: do not give it back */
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
    struct timeval back = { 2, 0 };
    redisSetTimeout(rc, back);
    conn_put(c, rc, 0);
    *out = list;
    return COORD_OK;
}
