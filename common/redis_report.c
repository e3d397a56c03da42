/* common/redis_report.c - see redis_report.h. */
#include "redis_report.h"

#include "log.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define PIPELINE_MAX 512        /* stream entries per round trip */
#define ASSIGN_MAX 4096         /* entries accepted in an assignment */
#define BACKOFF_MIN_S 0.25
#define BACKOFF_MAX_S 2.0
#define CLOSE_FLUSH_S 2.0       /* how long close() keeps trying to send the backlog */
#define CONNECT_TIMEOUT_S 1.0

/* ---- small helpers ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void rlog(int rank, const char *fmt, ...)
{
    char who[48];
    snprintf(who, sizeof who, "rank %d redis", rank);
    va_list ap;
    va_start(ap, fmt);
    log_vline(who, fmt, ap);
    va_end(ap);
}

/* ---- URLs --------------------------------------------------------------------------------- */

static int parse_uint(const char *s, size_t len, long max, long *out)
{
    if (len == 0 || len > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max) return -1;
    *out = v;
    return 0;
}

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->port = 6379;
    if (!url || !*url) {
        snprintf(err, errlen, "redis URL is empty");
        return -1;
    }
    long v;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *p = url + 7;
        const char *q = strchr(p, '?');
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        if (plen == 0 || p[0] != '/') {
            snprintf(err, errlen, "%s: a unix socket URL needs an absolute path (unix:///path/to/socket)", url);
            return -1;
        }
        if (plen >= sizeof out->path) {
            snprintf(err, errlen, "%s: socket path longer than %zu bytes", url, sizeof out->path - 1);
            return -1;
        }
        memcpy(out->path, p, plen);
        out->is_unix = 1;
        if (q) {
            if (strncmp(q, "?db=", 4) != 0 || parse_uint(q + 4, strlen(q + 4), 1 << 20, &v) != 0) {
                snprintf(err, errlen, "%s: the only query understood is ?db=N", url);
                return -1;
            }
            out->db = (int)v;
        }
        return 0;
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(err, errlen, "%s: a Redis URL starts with redis:// or unix://", url);
        return -1;
    }
    const char *p = url + 8;
    const char *end = p + strcspn(p, "/");   /* authority ends at the first '/' */
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t pwlen = (size_t)(at - pw);
        if (pwlen >= sizeof out->password) {
            snprintf(err, errlen, "%s: password too long", url);
            return -1;
        }
        memcpy(out->password, pw, pwlen);
        p = at + 1;
    }
    const char *hend, *portp = NULL;
    if (*p == '[') {                          /* [IPv6]:port */
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb) {
            snprintf(err, errlen, "%s: unterminated '[' in host", url);
            return -1;
        }
        p++;
        hend = rb;
        if (rb + 1 < end) {
            if (rb[1] != ':') {
                snprintf(err, errlen, "%s: expected ':' after ']'", url);
                return -1;
            }
            portp = rb + 2;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        hend = colon ? colon : end;
        if (colon) portp = colon + 1;
    }
    size_t hlen = (size_t)(hend - p);
    if (hlen == 0 || hlen >= sizeof out->host) {
        snprintf(err, errlen, "%s: %s host", url, hlen ? "overlong" : "missing");
        return -1;
    }
    memcpy(out->host, p, hlen);
    if (portp) {
        if (parse_uint(portp, (size_t)(end - portp), 65535, &v) != 0 || v == 0) {
            snprintf(err, errlen, "%s: port must be a number between 1 and 65535", url);
            return -1;
        }
        out->port = (int)v;
    }
    if (*end == '/' && end[1]) {
        if (parse_uint(end + 1, strlen(end + 1), 1 << 20, &v) != 0) {
            snprintf(err, errlen, "%s: the path must be a database number (/0, /1, ...)", url);
            return -1;
        }
        out->db = (int)v;
    }
    return 0;
}

redisContext *redis_url_connect(const redis_url_t *u, double timeout_s, char *err, size_t errlen)
{
    struct timeval tv;
    tv.tv_sec = (time_t)timeout_s;
    tv.tv_usec = (suseconds_t)((timeout_s - (double)tv.tv_sec) * 1e6);
    redisContext *c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
                                 : redisConnectWithTimeout(u->host, u->port, tv);
    redisReply *r = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (c->err) {
        if (u->is_unix) snprintf(err, errlen, "unix:%s: %s", u->path, c->errstr);
        else snprintf(err, errlen, "%s:%d: %s", u->host, u->port, c->errstr);
        goto fail;
    }
    /* Connect timeout alone is not enough: a server that stops answering must not hang
     * the caller either. */
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errlen, "cannot set socket timeouts");
        goto fail;
    }
    if (!u->is_unix) redisEnableKeepAlive(c);
    if (u->password[0]) {
        r = redisCommand(c, "AUTH %s", u->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "AUTH: %s", r ? r->str : c->errstr);
            goto fail;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (u->db) {
        r = redisCommand(c, "SELECT %d", u->db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "SELECT %d: %s", u->db, r ? r->str : c->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    return c;
fail:
    if (r) freeReplyObject(r);
    redisFree(c);
    return NULL;
}

/* ---- the sink ----------------------------------------------------------------------------- */

typedef struct {
    metrics_sink_t base;          /* first member: the reporter holds a metrics_sink_t * */
    redis_url_t url;
    char job[64];
    int rank;
    char host[64];
    char k_stream[160], k_node[160], k_stale[160], k_assign[160];

    pthread_t thread;
    pthread_mutex_t lock;         /* guards everything down to 'sink thread only' */
    pthread_cond_t wake;
    int stopping;
    int beat_now;
    int connected;

    char **ring;                  /* backlog of serialised records, oldest at head */
    size_t head, n;
    uint64_t dropped;

    int have_rec;                 /* node state folded from the records written so far */
    metrics_record_t last;        /* the latest step record */
    double sum_compute, sum_comm, sum_idle;
    double last_time;
    float test_accuracy, test_loss;

    int64_t asg_version;          /* assignment cache; 0 = none seen */
    int asg_n, asg_bad;
    int asg[ASSIGN_MAX];
    int64_t asg_returned;         /* the version redis_report_assignment last handed out */

    /* sink thread only */
    redisContext *c;
    double next_try, backoff;
    int down_logged;
    uint64_t xadd_errors;
} rsink_t;

static void ring_push_back(rsink_t *s, char *line)
{
    if (s->n == REDIS_REPORT_BACKLOG) {       /* full: the oldest goes */
        free(s->ring[s->head]);
        s->head = (s->head + 1) % REDIS_REPORT_BACKLOG;
        s->n--;
        s->dropped++;
    }
    s->ring[(s->head + s->n) % REDIS_REPORT_BACKLOG] = line;
    s->n++;
}

/* Returns line to the front (it is older than everything queued); when full it is the
 * oldest, so it is the one dropped. */
static void ring_push_front(rsink_t *s, char *line)
{
    if (s->n == REDIS_REPORT_BACKLOG) {
        free(line);
        s->dropped++;
        return;
    }
    s->head = (s->head + REDIS_REPORT_BACKLOG - 1) % REDIS_REPORT_BACKLOG;
    s->ring[s->head] = line;
    s->n++;
}

static int sink_write(metrics_sink_t *base, const metrics_record_t *recs, const char *const *json, int n)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n; i++) {
        const metrics_record_t *r = &recs[i];
        if (json[i] && json[i][0]) {
            char *line = strdup(json[i]);
            if (line) ring_push_back(s, line);
            else s->dropped++;
        }
        if (r->kind == METRICS_STEP) {
            s->sum_compute += r->compute_s;
            s->sum_comm += r->comm_s;
            s->sum_idle += r->idle_s;
            s->last = *r;
            s->have_rec = 1;
        } else {
            if (isfinite(r->test_accuracy)) s->test_accuracy = r->test_accuracy;
            if (isfinite(r->test_loss)) s->test_loss = r->test_loss;
            /* Epoch and final records carry the cumulative staleness too. */
            if (s->have_rec) s->last.staleness = r->staleness;
        }
        s->last_time = r->time;
    }
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    /* Always 0: the records are in the sink's own backlog now. A -1 would invite the
     * reporter to hand the same batch over again, and it would be sent twice. */
    return 0;
}

/* Argument vector for one command, formatted into fixed storage. */
#define ARGS_MAX 64
typedef struct {
    int argc;
    const char *argv[ARGS_MAX];
    size_t len[ARGS_MAX];
    char store[ARGS_MAX][64];
} args_t;

static void arg_str(args_t *a, const char *s)
{
    a->argv[a->argc] = s;
    a->len[a->argc] = strlen(s);
    a->argc++;
}

static void arg_fmt(args_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->store[a->argc], sizeof a->store[0], fmt, ap);
    va_end(ap);
    arg_str(a, a->store[a->argc]);
}

static void arg_num(args_t *a, const char *name, double v)
{
    arg_str(a, name);
    if (isfinite(v)) arg_fmt(a, "%.9g", v);
    else arg_str(a, "");
}

/* Unix times need more digits than %.9g keeps. */
static void arg_time(args_t *a, const char *name, double t)
{
    arg_str(a, name);
    arg_fmt(a, "%.3f", t);
}

static void arg_int(args_t *a, const char *name, long long v)
{
    arg_str(a, name);
    arg_fmt(a, "%lld", v);
}

static void append(redisContext *c, args_t *a)
{
    redisAppendCommandArgv(c, a->argc, a->argv, a->len);
}

static void disconnect(rsink_t *s, const char *why)
{
    if (!s->down_logged) {
        rlog(s->rank, "connection lost (%s); buffering up to %d records and retrying",
             why, REDIS_REPORT_BACKLOG);
        s->down_logged = 1;
    }
    redisFree(s->c);
    s->c = NULL;
    s->backoff = BACKOFF_MIN_S;
    s->next_try = now_s() + s->backoff;
    pthread_mutex_lock(&s->lock);
    s->connected = 0;
    pthread_mutex_unlock(&s->lock);
}

static void try_connect(rsink_t *s)
{
    double t = now_s();
    if (t < s->next_try) return;
    char err[256];
    s->c = redis_url_connect(&s->url, CONNECT_TIMEOUT_S, err, sizeof err);
    if (!s->c) {
        if (!s->down_logged) {
            rlog(s->rank, "cannot connect (%s); buffering up to %d records and retrying",
                 err, REDIS_REPORT_BACKLOG);
            s->down_logged = 1;
        }
        s->backoff = s->backoff < BACKOFF_MIN_S ? BACKOFF_MIN_S : s->backoff * 2;
        if (s->backoff > BACKOFF_MAX_S) s->backoff = BACKOFF_MAX_S;
        s->next_try = now_s() + s->backoff;
        return;
    }
    if (s->down_logged) rlog(s->rank, "connected again");
    s->down_logged = 0;
    s->backoff = 0;
    pthread_mutex_lock(&s->lock);
    s->connected = 1;
    pthread_mutex_unlock(&s->lock);
}

/* Parses the HMGET version batches reply into the cache. */
static void take_assignment(rsink_t *s, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) return;
    const redisReply *ver = r->element[0], *bat = r->element[1];
    if (ver->type != REDIS_REPLY_STRING) return;            /* no assignment yet */
    int64_t v = strtoll(ver->str, NULL, 10);
    pthread_mutex_lock(&s->lock);
    int known = (v == s->asg_version);
    pthread_mutex_unlock(&s->lock);
    if (known) return;
    int tmp[ASSIGN_MAX];
    int n = 0, bad = 0;
    json_t *arr = bat->type == REDIS_REPLY_STRING ? json_loads(bat->str, 0, NULL) : NULL;
    if (!arr || !json_is_array(arr) || json_array_size(arr) > ASSIGN_MAX) {
        bad = 1;
    } else {
        for (size_t i = 0; i < json_array_size(arr); i++) {
            json_t *e = json_array_get(arr, i);
            if (!json_is_integer(e) || json_integer_value(e) < 0) { bad = 1; break; }
            tmp[n++] = (int)json_integer_value(e);
        }
    }
    json_decref(arr);
    pthread_mutex_lock(&s->lock);
    s->asg_version = v;
    s->asg_bad = bad;
    s->asg_n = bad ? 0 : n;
    if (!bad) memcpy(s->asg, tmp, sizeof(int) * (size_t)n);
    pthread_mutex_unlock(&s->lock);
}

/* One round trip: the backlog (up to PIPELINE_MAX entries), the node and staleness
 * hashes with the heartbeat, and the assignment read, in a single pipeline. Returns 1
 * when more backlog is waiting. */
static int round_trip(rsink_t *s)
{
    if (!s->c) try_connect(s);
    if (!s->c) return 0;

    char *batch[PIPELINE_MAX];
    int nb = 0;
    metrics_record_t rec;
    double sc, sm, si, last_time;
    float tacc, tloss;
    int have;
    pthread_mutex_lock(&s->lock);
    while (nb < PIPELINE_MAX && s->n > 0) {
        batch[nb++] = s->ring[s->head];
        s->head = (s->head + 1) % REDIS_REPORT_BACKLOG;
        s->n--;
    }
    have = s->have_rec;
    rec = s->last;
    sc = s->sum_compute;
    sm = s->sum_comm;
    si = s->sum_idle;
    last_time = s->last_time;
    tacc = s->test_accuracy;
    tloss = s->test_loss;
    s->beat_now = 0;
    pthread_mutex_unlock(&s->lock);

    static const char *const xadd_head[] = { "XADD", NULL, "MAXLEN", "~", NULL, "*", "json" };
    char maxlen[16];
    snprintf(maxlen, sizeof maxlen, "%d", REDIS_REPORT_STREAM_MAXLEN);
    for (int i = 0; i < nb; i++) {
        const char *argv[8];
        size_t len[8];
        memcpy(argv, xadd_head, sizeof xadd_head);
        argv[1] = s->k_stream;
        argv[4] = maxlen;
        argv[7] = batch[i];
        for (int k = 0; k < 8; k++) len[k] = strlen(argv[k]);
        redisAppendCommandArgv(s->c, 8, argv, len);
    }
    int ncmd = nb;

    args_t a = { 0 };
    arg_str(&a, "HSET");
    arg_str(&a, s->k_node);
    arg_int(&a, "rank", s->rank);
    arg_str(&a, "host");
    arg_str(&a, have && rec.host[0] ? rec.host : s->host);
    arg_int(&a, "pid", (long long)getpid());
    arg_time(&a, "heartbeat", now_s());
    if (have) {
        arg_str(&a, "device");
        arg_str(&a, rec.device[0] ? rec.device : "cpu");
        arg_str(&a, "role");
        arg_str(&a, rec.role ? "ps" : "worker");
        arg_num(&a, "samples_per_s", rec.samples_per_s);
        arg_num(&a, "compute_s", sc);
        arg_num(&a, "comm_s", sm);
        arg_num(&a, "idle_s", si);
        arg_num(&a, "last_compute_s", rec.compute_s);
        arg_num(&a, "last_comm_s", rec.comm_s);
        arg_num(&a, "last_idle_s", rec.idle_s);
        arg_int(&a, "batch", rec.batch);
        arg_num(&a, "loss", rec.loss);
        arg_int(&a, "step", (long long)rec.step);
        arg_int(&a, "epoch", (long long)rec.epoch);
        arg_int(&a, "samples", (long long)rec.samples);
        arg_num(&a, "slowdown", rec.slowdown);
        arg_int(&a, "plan_version", (long long)rec.plan_version);
        arg_num(&a, "test_accuracy", tacc);
        arg_num(&a, "test_loss", tloss);
        arg_time(&a, "updated", last_time);
    }
    append(s->c, &a);
    ncmd++;
    if (have) {
        args_t b = { 0 };
        const staleness_t *st = &rec.staleness;
        arg_str(&b, "HSET");
        arg_str(&b, s->k_stale);
        arg_int(&b, "count", (long long)st->count);
        arg_int(&b, "sum", (long long)st->sum);
        arg_int(&b, "sumsq", (long long)st->sumsq);
        arg_int(&b, "max", (long long)st->max);
        arg_int(&b, "p50", (long long)st->p50);
        arg_int(&b, "p95", (long long)st->p95);
        arg_int(&b, "overflow", (long long)st->overflow);
        for (int h = 0; h < STALENESS_BUCKETS; h++) {
            arg_fmt(&b, "h%d", h);
            arg_fmt(&b, "%lld", (long long)st->hist[h]);
        }
        append(s->c, &b);
        ncmd++;
    }
    redisAppendCommand(s->c, "HMGET %s version batches", s->k_assign);
    ncmd++;

    int ok = 1;
    for (int i = 0; i < ncmd; i++) {
        redisReply *r = NULL;
        if (redisGetReply(s->c, (void **)&r) != REDIS_OK || !r) {
            ok = 0;
            break;
        }
        if (i < nb) {
            if (r->type == REDIS_REPLY_ERROR) {
                /* The server refused the entry (e.g. the key holds another type): resending
                 * cannot help, so it is dropped and counted. */
                if (s->xadd_errors++ == 0) rlog(s->rank, "XADD %s: %s", s->k_stream, r->str);
                pthread_mutex_lock(&s->lock);
                s->dropped++;
                pthread_mutex_unlock(&s->lock);
            }
            free(batch[i]);
            batch[i] = NULL;
        } else if (i == ncmd - 1) {
            take_assignment(s, r);
        }
        freeReplyObject(r);
    }
    if (!ok) {
        /* Entries whose replies did not come back are resent after the reconnect. */
        pthread_mutex_lock(&s->lock);
        for (int i = nb - 1; i >= 0; i--)
            if (batch[i]) ring_push_front(s, batch[i]);
        pthread_mutex_unlock(&s->lock);
        disconnect(s, s->c->errstr[0] ? s->c->errstr : "no reply");
        return 0;
    }
    pthread_mutex_lock(&s->lock);
    int more = s->n > 0;
    pthread_mutex_unlock(&s->lock);
    return more;
}

static void *sink_main(void *arg)
{
    rsink_t *s = arg;
    /* A write to a socket the server closed raises SIGPIPE in the writing thread; blocked
     * here, it stays pending for this thread only and write() returns EPIPE, which
     * hiredis reports. The process's own disposition is left alone. */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, NULL);

    double last_round = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        /* A round is due every beat period, or at once when there is something to send
         * and a connection to send it on (while disconnected, the beat period paces the
         * reconnection attempts, which try_connect spaces further by its backoff). */
        while (!s->stopping && !(s->c && (s->beat_now || s->n > 0)) &&
               now_s() - last_round < REDIS_REPORT_BEAT_S) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            long ns = ts.tv_nsec + (long)(REDIS_REPORT_BEAT_S * 1e9);
            ts.tv_sec += ns / 1000000000L;
            ts.tv_nsec = ns % 1000000000L;
            pthread_cond_timedwait(&s->wake, &s->lock, &ts);
        }
        int stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop) break;
        last_round = now_s();
        while (round_trip(s)) {
            pthread_mutex_lock(&s->lock);
            stop = s->stopping;
            pthread_mutex_unlock(&s->lock);
            if (stop) break;
        }
        pthread_mutex_lock(&s->lock);
    }
    /* Closing: one more connection attempt if needed, then a bounded flush. */
    double deadline = now_s() + CLOSE_FLUSH_S;
    s->next_try = 0;
    if (!s->c) try_connect(s);
    while (s->c && now_s() < deadline && round_trip(s)) {}
    if (s->c) redisFree(s->c);
    s->c = NULL;
    return NULL;
}

static void sink_close(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->n; i++) {
        free(s->ring[(s->head + i) % REDIS_REPORT_BACKLOG]);
        s->dropped++;
    }
    if (s->dropped)
        rlog(s->rank, "%llu metrics records were not delivered to %s (Redis unreachable or refused)",
             (unsigned long long)s->dropped, s->k_stream);
    free(s->ring);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

metrics_sink_t *redis_report_sink(const char *url, const char *job, int rank, char *err, size_t errlen)
{
    if (!job || !*job || strlen(job) >= 64 || strpbrk(job, " \t\r\n")) {
        snprintf(err, errlen, "job id must be 1-63 characters without spaces");
        return NULL;
    }
    rsink_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (redis_url_parse(url, &s->url, err, errlen) != 0) {
        free(s);
        return NULL;
    }
    s->ring = calloc(REDIS_REPORT_BACKLOG, sizeof *s->ring);
    if (!s->ring) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(s->job, sizeof s->job, "%s", job);
    s->rank = rank;
    if (gethostname(s->host, sizeof s->host) != 0) snprintf(s->host, sizeof s->host, "unknown");
    s->host[sizeof s->host - 1] = 0;
    snprintf(s->k_stream, sizeof s->k_stream, "pacer:job:%s:metrics", job);
    snprintf(s->k_node, sizeof s->k_node, "pacer:job:%s:node:%d", job, rank);
    snprintf(s->k_stale, sizeof s->k_stale, "pacer:job:%s:staleness:%d", job, rank);
    snprintf(s->k_assign, sizeof s->k_assign, "pacer:job:%s:assignment", job);
    s->test_accuracy = s->test_loss = NAN;
    s->base.write = sink_write;
    s->base.close = sink_close;
    s->base.ctx = s;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, sink_main, s) != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s->ring);
        free(s);
        snprintf(err, errlen, "cannot start the Redis sink thread");
        return NULL;
    }
    return &s->base;
}

uint64_t redis_report_dropped(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    uint64_t d = s->dropped;
    pthread_mutex_unlock(&s->lock);
    return d;
}

int redis_report_connected(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    int up = s->connected;
    pthread_mutex_unlock(&s->lock);
    return up;
}

void redis_report_heartbeat(metrics_sink_t *base)
{
    rsink_t *s = (rsink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->beat_now = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

int redis_report_assignment(metrics_sink_t *base, int64_t *version, int *batches, int n)
{
    rsink_t *s = (rsink_t *)base;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->asg_version != 0 && s->asg_version != s->asg_returned) {
        if (s->asg_bad || s->asg_n != n) {
            rc = -1;
        } else {
            memcpy(batches, s->asg, sizeof(int) * (size_t)n);
            *version = s->asg_version;
            s->asg_returned = s->asg_version;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}
