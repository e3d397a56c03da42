/* http/sse.c - see sse.h.
 *
 * Ownership: a stream has two references, its MHD response (dropped in the response's
 * free callback, when MHD is done with the connection's reply) and its thread (dropped
 * when the thread ends). The last one unlinks it from the server's list and frees it.
 *
 * Suspend/resume protocol (s->lock guards the flags): the reader callback, finding the
 * buffer empty and the stream not done, sets suspended and calls MHD_suspend_connection
 * after releasing the lock; the thread, after appending, clears suspended and calls
 * MHD_resume_connection, also outside the lock. A resume that overtakes the suspend is
 * fine: libmicrohttpd then cancels the suspend. Neither call is made under our lock, so
 * no lock order with MHD's own mutexes exists. A suspended connection cannot be closed
 * by MHD, so the thread's conn pointer is valid whenever it resumes.
 */
#include "sse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "clog.h"
#include "jobstore.h"
#include "query.h"
#include "respond.h"

struct sse_stream {
    http_server_t *srv;
    struct MHD_Connection *conn;
    pthread_mutex_t lock; /* the fields up to cur */
    int refs;
    int suspended; /* the reader suspended the connection; the thread must resume it */
    int done;      /* no more data: the reader ends the stream once buf is drained */
    int closed;    /* MHD is done with the response: the thread stops */
    char *buf;
    size_t len, off, cap;

    coord_cursor_t cur; /* thread only */
    int for_job;
    int terminal; /* the job reached a final state: drain, then end */
    double last_write;
    char client[64]; /* the peer's address: streams per client are capped */
    /* Opened with a user's token (not the daemon's, not an anonymous reader's): who, and
     * the stored hash of the token they presented, re-checked while the stream lasts
     * (stream_token_check). token_hash "" = nothing to re-check. */
    char user[USER_NAME_MAX + 1];
    char token_hash[SHA256_HEX_LEN + 1];
    double token_checked;      /* monotonic: the last check */
    sse_stream_t *prev, *next; /* srv->streams, under srv->lock */
};

/* ---- pure helpers ---------------------------------------------------------------------------- */

int sse_stream_id_cmp(const char *a, const char *b)
{
    unsigned long long am = 0, as = 0, bm = 0, bs = 0;
    int ea = jobstore_stream_id_parse(a, &am, &as), eb = jobstore_stream_id_parse(b, &bm, &bs);
    if (ea || eb) return ea && eb ? 0 : (ea ? -1 : 1);
    if (am != bm) return am < bm ? -1 : 1;
    if (as != bs) return as < bs ? -1 : 1;
    return 0;
}

int sse_id_parse(const char *s, char *events_id, size_t elen, char *metrics_id, size_t mlen)
{
    if (!s || !elen || !mlen) return -1;
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    if (n == 0 || n >= elen) return -1;
    memcpy(events_id, s, n);
    events_id[n] = 0;
    metrics_id[0] = 0;
    if (jobstore_stream_id_parse(events_id, NULL, NULL) != 0) return -1;
    if (comma) {
        size_t m = strlen(comma + 1);
        if (m == 0 || m >= mlen) return -1;
        memcpy(metrics_id, comma + 1, m + 1);
        if (jobstore_stream_id_parse(metrics_id, NULL, NULL) != 0) return -1;
    }
    return 0;
}

long sse_frame(char *buf, size_t len, const char *type, const char *id, const char *data)
{
    size_t o = 0;
    int k;
#define PUT(...)                                                   \
    do {                                                           \
        k = snprintf(buf + o, len > o ? len - o : 0, __VA_ARGS__); \
        if (k < 0 || o + (size_t)k >= len) return -1;              \
        o += (size_t)k;                                            \
    } while (0)
    if (type) PUT("event: %s\n", type);
    if (id) PUT("id: %s\n", id);
    const char *line = data ? data : "";
    for (;;) {
        size_t n = strcspn(line, "\r\n");
        PUT("data: %.*s\n", (int)n, line);
        line += n;
        if (!*line) break;
        line += (line[0] == '\r' && line[1] == '\n') ? 2 : 1;
    }
    PUT("\n");
#undef PUT
    return (long)o;
}

/* ---- the stream object ----------------------------------------------------------------------- */

static void stream_release(sse_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    int left = --s->refs;
    pthread_mutex_unlock(&s->lock);
    if (left > 0) return;
    http_server_t *srv = s->srv;
    pthread_mutex_lock(&srv->lock);
    if (s->prev) s->prev->next = s->next;
    else srv->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    srv->sse_open--;
    pthread_cond_broadcast(&srv->cond);
    pthread_mutex_unlock(&srv->lock);
    pthread_mutex_destroy(&s->lock);
    free(s->buf);
    free(s);
}

/* Appends text (may be NULL) and/or ends the stream, then wakes the connection. Returns
 * -1 when the client is too far behind (the stream is then ended). */
static int stream_push(sse_stream_t *s, const char *text, size_t n, int end)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (n > 0 && !s->done && !s->closed) {
        if (s->off > 0 && s->off == s->len) s->off = s->len = 0;
        if (s->len + n > SSE_BUFFER_MAX) {
            end = 1;
            rc = -1;
        } else {
            if (s->len + n > s->cap) {
                size_t cap = s->cap ? s->cap : 8192;
                while (cap < s->len + n) cap *= 2;
                char *b = realloc(s->buf, cap);
                if (!b) {
                    end = 1;
                    rc = -1;
                } else {
                    s->buf = b;
                    s->cap = cap;
                }
            }
            if (rc == 0) {
                memcpy(s->buf + s->len, text, n);
                s->len += n;
            }
        }
    }
    if (end) s->done = 1;
    int wake = s->suspended && !s->closed && (s->len > s->off || s->done);
    if (wake) s->suspended = 0;
    struct MHD_Connection *conn = s->conn;
    pthread_mutex_unlock(&s->lock);
    if (wake) MHD_resume_connection(conn);
    return rc;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    sse_stream_t *s = cls;
    pthread_mutex_lock(&s->lock);
    if (s->off < s->len) {
        size_t n = s->len - s->off < max ? s->len - s->off : max;
        memcpy(out, s->buf + s->off, n);
        s->off += n;
        if (s->off == s->len) s->off = s->len = 0;
        pthread_mutex_unlock(&s->lock);
        return (ssize_t)n;
    }
    if (s->done) {
        pthread_mutex_unlock(&s->lock);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    s->suspended = 1;
    pthread_mutex_unlock(&s->lock);
    MHD_suspend_connection(s->conn);
    return 0;
}

/* MHD is done with the response: the connection finished, failed or was dropped. */
static void stream_response_free(void *cls)
{
    sse_stream_t *s = cls;
    pthread_mutex_lock(&s->lock);
    s->closed = 1;
    s->suspended = 0;
    pthread_mutex_unlock(&s->lock);
    stream_release(s);
}

static int stream_should_stop(sse_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    int stop = s->closed || s->done;
    pthread_mutex_unlock(&s->lock);
    if (stop) return 1;
    pthread_mutex_lock(&s->srv->lock);
    stop = s->srv->stopping;
    pthread_mutex_unlock(&s->srv->lock);
    return stop;
}

static int is_final_state(const char *st)
{
    return st && (strcmp(st, "SUCCEEDED") == 0 || strcmp(st, "FAILED") == 0 || strcmp(st, "CANCELLED") == 0);
}

static void format_id(const sse_stream_t *s, const char *events_id, const char *metrics_id, char *out, size_t len)
{
    if (s->for_job) snprintf(out, len, "%s,%s", events_id, metrics_id);
    else snprintf(out, len, "%s", events_id);
}

/* Appends one frame to a growing text. */
static int text_add(char **text, size_t *len, size_t *cap, const char *type, const char *id, const char *data)
{
    size_t need = strlen(data) + (type ? strlen(type) : 0) + (id ? strlen(id) : 0) + 64;
    /* Newlines in data add a "data: " prefix each; compact JSON has none, but be exact. */
    for (const char *p = data; *p; p++)
        if (*p == '\n' || *p == '\r') need += 8;
    if (*len + need > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + need) c *= 2;
        char *t = realloc(*text, c);
        if (!t) return -1;
        *text = t;
        *cap = c;
    }
    long n = sse_frame(*text + *len, *cap - *len, type, id, data);
    if (n < 0) return -1;
    *len += (size_t)n;
    return 0;
}

static int item_cmp(const void *a, const void *b)
{
    json_t *const *x = a, *const *y = b;
    return sse_stream_id_cmp(json_string_value(json_object_get(*x, "id")), json_string_value(json_object_get(*y, "id")));
}

/* Turns one coord_events_wait batch into frames, oldest first across both streams. pos_*
 * is the position before the batch and is advanced per frame. */
static int batch_frames(sse_stream_t *s, json_t *list, char *pos_ev, char *pos_m, size_t poslen, char **text,
                        size_t *len, size_t *cap)
{
    size_t n = json_array_size(list);
    if (n == 0) return 0;
    json_t **items = malloc(n * sizeof *items);
    if (!items) return -1;
    for (size_t i = 0; i < n; i++) items[i] = json_array_get(list, i);
    qsort(items, n, sizeof *items, item_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *sid = json_string_value(json_object_get(items[i], "id"));
        json_t *ev = json_object_get(items[i], "event");
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!sid || !json_is_object(ev) || !type) continue;
        if (strcmp(type, "metrics") == 0) snprintf(pos_m, poslen, "%s", sid);
        else snprintf(pos_ev, poslen, "%s", sid);
        if (s->for_job && strcmp(type, "state") == 0 && is_final_state(json_string_value(json_object_get(ev, "state"))))
            s->terminal = 1;
        json_object_set_new(ev, "id", json_string(sid));
        char *data = json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(15));
        char id[128];
        format_id(s, pos_ev, pos_m, id, sizeof id);
        /* The type goes into the frame's event: line only if it is a safe token. */
        int safe = strspn(type, "abcdefghijklmnopqrstuvwxyz_") == strlen(type) && strlen(type) < 32;
        rc = data ? text_add(text, len, cap, safe ? type : "message", id, data) : -1;
        free(data);
    }
    free(items);
    return rc;
}

/* Whether the token the stream was opened with still stands: its user exists, the stored
 * hash is the one it matched (a renewal replaces it, a removal and a new add too) and it
 * has not expired. 0 when it stands; 1 when it does not, with the final frame (event:
 * error, a JSON naming why) in *text; -1 when Redis cannot say now. */
static int stream_token_check(sse_stream_t *s, char **text, size_t *len)
{
    s->token_checked = clock_mono_s();
    user_record_t rec;
    int code = coord_user_get(s->srv->coord, s->user, &rec);
    if (code == COORD_EUNAVAIL) return -1;
    const char *reason = NULL, *detail = NULL;
    if (code != COORD_OK) {
        reason = "user-removed";
        detail = "was removed";
    } else if (!auth_equal(rec.hash, strlen(rec.hash), s->token_hash, strlen(s->token_hash))) {
        reason = "token-replaced";
        detail = "got a new token (the one this stream was opened with no longer works)";
    } else if (rec.expires > 0 && clock_wall_s() >= rec.expires) {
        reason = "token-expired";
        detail = "has a token that expired";
    } else {
        return 0;
    }
    char why[256];
    snprintf(why, sizeof why, "the user %s %s: this stream ends; open it again with a valid token", s->user, detail);
    json_t *ev = json_pack("{s:s, s:s, s:s}", "type", "error", "reason", reason, "detail", why);
    char *data = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    size_t cap = 0;
    *text = NULL;
    *len = 0;
    if (!data || text_add(text, len, &cap, "error", NULL, data) != 0) {
        free(*text);
        *text = NULL;
        *len = 0;
    }
    free(data);
    clog_printf("http: event stream of %s (%s) ended: %s", s->user, s->client, reason);
    return 1;
}

/* A stream opened with a user's token re-checks it every SSE_TOKEN_RECHECK_S, and before
 * it sends any events: a removed user, a replaced or expired token, must not go on
 * receiving what a new request with it would be refused. Returns 1 (with the final frame
 * in text) when the stream must end. Redis unreachable: a batch is not sent unchecked (the
 * stream ends; the client resumes it with Last-Event-ID), an idle stream waits. */
static int stream_token_revoked(sse_stream_t *s, int batch, char **text, size_t *len)
{
    if (!s->token_hash[0] || (!batch && clock_mono_s() - s->token_checked < SSE_TOKEN_RECHECK_S)) return 0;
    int rc = stream_token_check(s, text, len);
    if (rc >= 0 || !batch) return rc > 0;
    *text = strdup(": the token cannot be checked now (Redis unreachable); reconnect with Last-Event-ID\n\n");
    *len = *text ? strlen(*text) : 0;
    return 1;
}

static void *stream_thread(void *arg)
{
    sse_stream_t *s = arg;
    http_server_t *srv = s->srv;
    int unavailable = 0;
    while (!stream_should_stop(s)) {
        json_t *list = NULL;
        char pos_ev[sizeof s->cur.events_id], pos_m[sizeof s->cur.metrics_id];
        snprintf(pos_ev, sizeof pos_ev, "%s", s->cur.events_id);
        snprintf(pos_m, sizeof pos_m, "%s", s->cur.metrics_id);
        int code = coord_events_wait(srv->coord, &s->cur, s->terminal ? 0 : SSE_WAIT_MS, SSE_BATCH, &list);
        char *text = NULL;
        size_t len = 0, cap = 0;
        int end = 0;
        if (code == COORD_EUNAVAIL) {
            /* Redis is down or restarting: keep the stream, say so once, retry. */
            if (!unavailable++) {
                text = strdup(": redis unavailable, retrying\n\n");
                len = text ? strlen(text) : 0;
            }
            clock_sleep_s(SSE_WAIT_MS / 2 / 1000.0);
        } else if (code != COORD_OK) {
            end = 1;
        } else if (stream_token_revoked(s, json_array_size(list) > 0, &text, &len)) {
            end = 1;
        } else {
            unavailable = 0;
            int was_terminal = s->terminal;
            if (batch_frames(s, list, pos_ev, pos_m, sizeof pos_ev, &text, &len, &cap) != 0) end = 1;
            /* After the final state, drain what is already there, then end. */
            if (was_terminal && json_array_size(list) == 0) end = 1;
        }
        json_decref(list);
        double now = clock_mono_s();
        if (len == 0 && !end && now - s->last_write >= SSE_HEARTBEAT_S) {
            free(text);
            text = strdup(": keep-alive\n\n");
            len = text ? strlen(text) : 0;
        }
        if (len > 0) s->last_write = now;
        int rc = stream_push(s, text, len, end);
        free(text);
        if (end || rc != 0) break;
    }
    stream_push(s, NULL, 0, 1);
    pthread_mutex_lock(&srv->lock);
    srv->sse_threads--;
    pthread_cond_broadcast(&srv->cond);
    pthread_mutex_unlock(&srv->lock);
    stream_release(s);
    return NULL;
}

/* ---- opening ----------------------------------------------------------------------------------- */

static enum MHD_Result problem(http_req_t *rq, json_t *p)
{
    problem_set_instance(p, rq->path);
    return respond_problem(rq->conn, p, NULL, 0);
}

/* The opening frames: retry, and for a job its state now. */
static int opening_frames(sse_stream_t *s, const char *job, json_t *snapshot)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    static const char RETRY[] = "retry: 2000\n\n";
    text = malloc(sizeof RETRY);
    if (!text) return -1;
    memcpy(text, RETRY, sizeof RETRY);
    len = cap = sizeof RETRY - 1;
    if (snapshot) {
        const char *st = json_string_value(json_object_get(snapshot, "state"));
        json_t *ev = json_pack("{s:s, s:s, s:s, s:O?, s:f, s:O?, s:b}", "type", "state", "job", job, "state",
                               st ? st : "", "reason", json_object_get(snapshot, "reason"), "time", clock_wall_s(),
                               "restarts", json_object_get(snapshot, "restarts"), "snapshot", 1);
        char *data = ev ? json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
        char id[128];
        format_id(s, s->cur.events_id, s->cur.metrics_id, id, sizeof id);
        rc = data ? text_add(&text, &len, &cap, "state", id, data) : -1;
        free(data);
        json_decref(ev);
        if (is_final_state(st)) s->terminal = 1;
    }
    if (rc == 0) rc = stream_push(s, text, len, 0);
    free(text);
    return rc;
}

enum MHD_Result sse_open(http_req_t *rq, const char *job)
{
    http_server_t *srv = rq->srv;
    int is_head = strcmp(rq->method, "HEAD") == 0;
    sse_stream_t *s = calloc(1, sizeof *s);
    if (!s) return problem(rq, problem_new(500, "internal", NULL, "out of memory", NULL, NULL));
    pthread_mutex_init(&s->lock, NULL);
    s->srv = srv;
    s->conn = rq->conn;
    s->refs = 1; /* the response's (or, until there is one, this function's) */
    snprintf(s->client, sizeof s->client, "%s", rq->client);
    if (rq->token_hash[0]) {
        snprintf(s->user, sizeof s->user, "%s", rq->user);
        memcpy(s->token_hash, rq->token_hash, sizeof s->token_hash);
        s->token_checked = clock_mono_s();
    }
    /* Counted and listed at once, so that a client opening many streams at the same
     * moment cannot pass its cap: the whole server's (503) and its own (429). */
    pthread_mutex_lock(&srv->lock);
    int mine = 0;
    for (sse_stream_t *t = srv->streams; t; t = t->next) mine += strcmp(t->client, s->client) == 0;
    int refuse = srv->stopping || srv->sse_open >= srv->sse_max ? 503 : mine >= srv->sse_per_client ? 429 : 0;
    int open_now = srv->sse_open;
    if (!refuse) {
        srv->sse_open++;
        s->next = srv->streams;
        if (s->next) s->next->prev = s;
        srv->streams = s;
    }
    pthread_mutex_unlock(&srv->lock);
    if (refuse) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        char detail[160];
        if (refuse == 429)
            snprintf(detail, sizeof detail,
                     "this client has %d event streams open, the limit per client "
                     "(--sse-per-client)",
                     mine);
        else snprintf(detail, sizeof detail, "%d event streams are open, the limit (--sse-max)", open_now);
        return problem(rq, problem_new(refuse, "too-many-streams", "Too many event streams", detail, NULL, NULL));
    }

    json_t *snapshot = NULL;
    char err[256] = "";
    int code = coord_events_open(srv->coord, job, &s->cur);
    if (code == COORD_OK && *job) code = coord_get(srv->coord, job, &snapshot);
    if (code == COORD_OK) {
        /* Last-Event-ID: continue from where the client's previous stream stopped. */
        const char *last = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Last-Event-ID");
        char ev[sizeof s->cur.events_id], m[sizeof s->cur.metrics_id];
        if (last && *last) {
            if (sse_id_parse(last, ev, sizeof ev, m, sizeof m) != 0 || (*job && !m[0])) {
                snprintf(err, sizeof err, "Last-Event-ID: not an id of this stream");
                code = COORD_EINVAL;
            } else {
                snprintf(s->cur.events_id, sizeof s->cur.events_id, "%s", ev);
                if (*job) snprintf(s->cur.metrics_id, sizeof s->cur.metrics_id, "%s", m);
            }
        }
    }
    if (code != COORD_OK) {
        json_decref(snapshot);
        stream_release(s); /* unlisted and uncounted */
        json_t *p = code == COORD_EINVAL
                        ? problem_new(400, "invalid-parameter", NULL, err, "parameter", "Last-Event-ID")
                        : problem_from_coord(code, err);
        return problem(rq, p);
    }
    s->for_job = *job != 0;
    s->last_write = clock_mono_s();

    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s,
                                                               stream_response_free);
    if (!r) {
        json_decref(snapshot);
        stream_release(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    respond_common_headers(r);

    if (!is_head && opening_frames(s, job, snapshot) == 0) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        pthread_t t;
        pthread_mutex_lock(&s->lock);
        s->refs++; /* the thread's */
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_lock(&srv->lock);
        srv->sse_threads++;
        pthread_mutex_unlock(&srv->lock);
        if (pthread_create(&t, &attr, stream_thread, s) != 0) {
            clog_printf("http: cannot start an event stream thread: %s", strerror(errno));
            pthread_mutex_lock(&srv->lock);
            srv->sse_threads--;
            pthread_mutex_unlock(&srv->lock);
            stream_push(s, NULL, 0, 1);
            pthread_mutex_lock(&s->lock);
            s->refs--;
            pthread_mutex_unlock(&s->lock);
        }
        pthread_attr_destroy(&attr);
    } else {
        stream_push(s, NULL, 0, 1); /* HEAD, or out of memory: headers only */
    }
    json_decref(snapshot);
    enum MHD_Result ret = MHD_queue_response(rq->conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

void sse_shutdown(http_server_t *srv)
{
    pthread_mutex_lock(&srv->lock);
    srv->stopping = 1;
    /* End every stream: its reader returns end-of-stream once resumed. Pushing takes the
     * stream's lock, never srv->lock, so collect under srv->lock first. */
    int n = 0;
    for (sse_stream_t *s = srv->streams; s; s = s->next) n++;
    sse_stream_t **all = n ? calloc((size_t)n, sizeof *all) : NULL;
    int k = 0;
    for (sse_stream_t *s = srv->streams; s && all; s = s->next) {
        pthread_mutex_lock(&s->lock);
        s->refs++; /* keep it alive while we push below */
        pthread_mutex_unlock(&s->lock);
        all[k++] = s;
    }
    pthread_mutex_unlock(&srv->lock);
    for (int i = 0; i < k; i++) {
        stream_push(all[i], NULL, 0, 1);
        stream_release(all[i]);
    }
    free(all);
    /* The threads notice within one wait (coord_events_wait returns within SSE_WAIT_MS
     * plus its socket timeout): wait for all of them, since no coord_* call may run once
     * the coordinator stops. The connections then finish once MHD has sent their last
     * chunk; a client that does not read is cut off by MHD_stop_daemon. */
    pthread_mutex_lock(&srv->lock);
    while (srv->sse_threads > 0) pthread_cond_wait(&srv->cond, &srv->lock);
    struct timespec deadline;
    clock_wall_deadline(2.0, &deadline);
    while (srv->sse_open > 0)
        if (pthread_cond_timedwait(&srv->cond, &srv->lock, &deadline) == ETIMEDOUT) break;
    int left = srv->sse_open;
    pthread_mutex_unlock(&srv->lock);
    if (left > 0) clog_printf("http: %d event streams still sending at shutdown; closing them", left);
}
