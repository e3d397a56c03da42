/* tests/unit/test_redis_report.c - the worker's Redis link (worker/redis_report.h):
 * URL parsing, and the sink against a real redis-server that each test starts on a unix
 * socket in a fresh mkdtemp() directory (the coordinator's embedded-server code starts
 * and stops it). Asynchronous results are awaited by polling with a deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "embedded.h"
#include "metrics.h"
#include "redis_report.h"
#include "waitmark.h"

/* Time limits are what a user would notice, not what this machine happens to take: a
 * write must never wait for the network, so the median call returns within
 * WRITE_MEDIAN_S and no call stalls a training step for STALL_S (the 1 s connect
 * timeout plus what the scheduler of a loaded machine may add to one call); close gives
 * up within CLOSE_S (its 2 s flush budget, retried while Redis is away, plus slack). Polling deadlines (AWAIT_S) only
 * bound a failing test. */
#define AWAIT_S 30.0
#define WRITE_MEDIAN_S 0.05
#define STALL_S 2.0
#define CLOSE_S 4.0

#define ERRLEN 512

/* ---- fixture: a redis-server in a temporary directory ----------------------------------- */

typedef struct {
    char dir[64];
    char url[160];
    embedded_t redis;
    redisContext *c; /* the test's own connection, to look at what the sink wrote */
} fixture_t;

static int start_redis(fixture_t *fx)
{
    char err[ERRLEN];
    if (embedded_start(&fx->redis, fx->dir, "redis-server", AWAIT_S, err, sizeof err) != 0) {
        fprintf(stderr, "cannot start redis-server: %s\n", err);
        return -1;
    }
    struct timeval tv = {2, 0};
    fx->c = redisConnectUnixWithTimeout(fx->redis.sock, tv);
    return fx->c && !fx->c->err ? 0 : -1;
}

static void stop_redis(fixture_t *fx)
{
    if (fx->c) redisFree(fx->c);
    fx->c = NULL;
    embedded_stop(&fx->redis, 5.0);
}

static int setup(void **state)
{
    signal(SIGPIPE, SIG_IGN);
    fixture_t *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    strcpy(fx->dir, "/tmp/pacer-test-rr-XXXXXX");
    if (!mkdtemp(fx->dir) || start_redis(fx) != 0) {
        free(fx);
        return -1;
    }
    snprintf(fx->url, sizeof fx->url, "unix://%s/redis.sock", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *fx = *state;
    stop_redis(fx);
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

static long long integer(redisContext *c, const char *fmt, const char *key)
{
    redisReply *r = redisCommand(c, fmt, key);
    long long v = -1;
    if (r && r->type == REDIS_REPLY_INTEGER) v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING) v = strtoll(r->str, NULL, 10);
    if (r) freeReplyObject(r);
    return v;
}

static double hfield(redisContext *c, const char *key, const char *field)
{
    redisReply *r = redisCommand(c, "HGET %s %s", key, field);
    double v = NAN;
    if (r && r->type == REDIS_REPLY_STRING) v = strtod(r->str, NULL);
    if (r) freeReplyObject(r);
    return v;
}

/* Waits until XLEN key == want (deadline s); returns the last length seen. */
static long long await_xlen(redisContext *c, const char *key, long long want, double deadline_s)
{
    double end = mono() + deadline_s;
    long long n;
    while ((n = integer(c, "XLEN %s", key)) != want && mono() < end) nap();
    return n;
}

/* ---- records ------------------------------------------------------------------------------ */

static void make_record(metrics_record_t *r, int64_t step)
{
    memset(r, 0, sizeof *r);
    r->kind = METRICS_STEP;
    r->time = (double)time(NULL);
    snprintf(r->host, sizeof r->host, "test-host");
    snprintf(r->device, sizeof r->device, "cpu");
    r->step = step;
    r->epoch = 1;
    r->batch = 64;
    r->loss = 0.5f;
    r->compute_s = 0.01;
    r->comm_s = 0.002;
    r->idle_s = 0.001;
    r->samples_per_s = 6400;
    r->samples = 64 * step;
    r->slowdown = 1;
    static staleness_acc_t acc; /* 8 KB: not on the stack of every caller */
    memset(&acc, 0, sizeof acc);
    staleness_add(&acc, 0);
    staleness_add(&acc, 1);
    staleness_add(&acc, 5);
    r->staleness = acc.s;
    r->test_loss = NAN;
    r->test_accuracy = NAN;
}

/* Durations of the write calls since the last reset, for the median. */
static double g_calls[1024];
static int g_ncalls;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double calls_median(void)
{
    assert_true(g_ncalls > 0);
    qsort(g_calls, (size_t)g_ncalls, sizeof g_calls[0], cmp_double);
    return g_calls[g_ncalls / 2];
}

/* Writes n records through the sink as the reporter would; returns the longest call. */
static double write_records(metrics_sink_t *s, int64_t first, int n)
{
    static char lines[64][1536];
    metrics_record_t recs[64];
    const char *json[64];
    double worst = 0;
    for (int done = 0; done < n;) {
        int k = n - done < 64 ? n - done : 64;
        for (int i = 0; i < k; i++) {
            make_record(&recs[i], first + done + i);
            assert_true(metrics_to_json(&recs[i], "j-7", lines[i], sizeof lines[i]) > 0);
            json[i] = lines[i];
        }
        double t0 = mono();
        s->write(s, recs, json, k);
        double dt = mono() - t0;
        if (dt > worst) worst = dt;
        if (g_ncalls < (int)(sizeof g_calls / sizeof g_calls[0])) g_calls[g_ncalls++] = dt;
        done += k;
    }
    return worst;
}

/* ---- URL parsing -------------------------------------------------------------------------------- */

static void test_url_parse(void **state)
{
    (void)state;
    redis_url_t u;
    char err[ERRLEN];
    assert_int_equal(redis_url_parse("redis://localhost", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_false(u.is_unix);
    assert_int_equal(redis_url_parse("redis://10.0.0.5:7000/3", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "10.0.0.5");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 3);
    assert_int_equal(redis_url_parse("redis://:s3cret@db.example:6380/", &u, err, sizeof err), 0);
    assert_string_equal(u.password, "s3cret");
    assert_string_equal(u.host, "db.example");
    assert_int_equal(u.port, 6380);
    assert_int_equal(redis_url_parse("redis://user:pw@h", &u, err, sizeof err), 0);
    assert_string_equal(u.password, "pw");
    assert_int_equal(redis_url_parse("redis://[::1]:7001", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 7001);
    assert_int_equal(redis_url_parse("unix:///var/run/redis.sock", &u, err, sizeof err), 0);
    assert_true(u.is_unix);
    assert_string_equal(u.path, "/var/run/redis.sock");
    assert_int_equal(redis_url_parse("unix:///tmp/r.sock?db=2", &u, err, sizeof err), 0);
    assert_string_equal(u.path, "/tmp/r.sock");
    assert_int_equal(u.db, 2);

    static const char *const bad[] = {
        "",
        "http://x",
        "redis://",
        "redis://:6379",
        "redis://h:0",
        "redis://h:99999",
        "redis://h:12a",
        "redis://h/x",
        "unix://relative.sock",
        "unix://",
        "unix:///tmp/x?foo=1",
        "redis://[::1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(redis_url_parse(bad[i], &u, err, sizeof err), -1);
        assert_true(strlen(err) > 0);
    }
    char longpath[300] = "unix:///";
    memset(longpath + 8, 'a', 200);
    assert_int_equal(redis_url_parse(longpath, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer"));
}

/* ---- the sink against a live server ----------------------------------------------------------- */

static void test_records_land(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-7", 0, err, sizeof err);
    assert_non_null(s);
    write_records(s, 1, 3);
    assert_int_equal(await_xlen(fx->c, "pacer:job:j-7:metrics", 3, AWAIT_S), 3);

    /* The node hash: latest values, cumulative sums, a fresh heartbeat. */
    const char *node = "pacer:job:j-7:node:0";
    double end = mono() + AWAIT_S;
    while (!(hfield(fx->c, node, "step") == 3) && mono() < end) nap();
    assert_true(hfield(fx->c, node, "step") == 3);
    assert_true(fabs(hfield(fx->c, node, "compute_s") - 0.03) < 1e-9);
    assert_true(fabs(hfield(fx->c, node, "comm_s") - 0.006) < 1e-9);
    assert_true(fabs(hfield(fx->c, node, "last_compute_s") - 0.01) < 1e-9);
    assert_true(hfield(fx->c, node, "samples_per_s") == 6400);
    assert_true(hfield(fx->c, node, "batch") == 64);
    assert_true(fabs(hfield(fx->c, node, "heartbeat") - (double)time(NULL)) < AWAIT_S); /* fresh, not stale */
    redisReply *r = redisCommand(fx->c, "HGET %s host", node);
    assert_non_null(r);
    assert_string_equal(r->str, "test-host");
    freeReplyObject(r);

    /* The staleness hash mirrors the record's cumulative statistics. */
    const char *st = "pacer:job:j-7:staleness:0";
    assert_true(hfield(fx->c, st, "count") == 3);
    assert_true(hfield(fx->c, st, "sum") == 6);
    assert_true(hfield(fx->c, st, "sumsq") == 26);
    assert_true(hfield(fx->c, st, "max") == 5);
    assert_true(hfield(fx->c, st, "p50") == 1);
    assert_true(hfield(fx->c, st, "p95") == 5);
    assert_true(hfield(fx->c, st, "overflow") == 0);
    assert_true(hfield(fx->c, st, "h0") == 1);
    assert_true(hfield(fx->c, st, "h1") == 1);
    assert_true(hfield(fx->c, st, "h4") == 1);

    /* Stream entries carry the record's JSON in field "json". */
    r = redisCommand(fx->c, "XRANGE pacer:job:j-7:metrics - + COUNT 1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    redisReply *fields = r->element[0]->element[1];
    assert_string_equal(fields->element[0]->str, "json");
    assert_non_null(strstr(fields->element[1]->str, "\"step\":1"));
    freeReplyObject(r);

    assert_true(redis_report_connected(s));
    assert_int_equal(redis_report_dropped(s), 0);
    s->close(s);
}

/* Bytes per step and the compression ratio (worker/metrics.h comm_measured): in the
 * step record's JSON and, as a mean over the measured steps, in the node hash; a rank
 * that does not measure them (comm_measured 0) has neither, never a 0. */
static void test_comm_bytes(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN], line[4096];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-13", 0, err, sizeof err);
    metrics_sink_t *q = redis_report_sink(fx->url, "j-13", 1, err, sizeof err);
    assert_non_null(s);
    assert_non_null(q);
    metrics_record_t r[2];
    const char *json[2];
    static char lines[2][4096];
    for (int i = 0; i < 2; i++) {
        make_record(&r[i], i + 1);
        r[i].comm_measured = 1;
        r[i].comm_bytes = i ? 3000 : 1000;
        r[i].compression_ratio = 20.5;
        assert_true(metrics_to_json(&r[i], "j-13", lines[i], sizeof lines[i]) > 0);
        json[i] = lines[i];
    }
    assert_non_null(strstr(lines[0], "\"comm_bytes\":1000,\"compression_ratio\":20.5,"));
    s->write(s, r, json, 2);
    make_record(&r[0], 1); /* not measured: no field in the record or the hash */
    assert_true(metrics_to_json(&r[0], "j-13", line, sizeof line) > 0);
    assert_null(strstr(line, "comm_bytes"));
    assert_null(strstr(line, "compression_ratio"));
    json[0] = line;
    q->write(q, r, json, 1);
    const char *node = "pacer:job:j-13:node:0", *other = "pacer:job:j-13:node:1";
    double end = mono() + AWAIT_S;
    while (!(hfield(fx->c, node, "step") == 2 && hfield(fx->c, other, "step") == 1) && mono() < end) nap();
    assert_true(hfield(fx->c, node, "comm_bytes_per_step") == 2000);
    assert_true(hfield(fx->c, node, "compression_ratio") == 20.5);
    assert_true(isnan(hfield(fx->c, other, "comm_bytes_per_step")));
    assert_true(isnan(hfield(fx->c, other, "compression_ratio")));
    s->close(s);
    q->close(q);
}

/* metrics_flush: every record pushed before it is in the stream when it returns (what
 * rank 0 relies on before a checkpoint appears, worker/train.c); against a server that
 * is not there it does not wait (the records stay in the sink's backlog). */
static void test_flush(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-12", 0, err, sizeof err);
    assert_non_null(s);
    static metrics_reporter_t m;
    assert_int_equal(metrics_start(&m, "j-12", &s, 1), 0);
    metrics_record_t r;
    for (int i = 1; i <= 50; i++) {
        make_record(&r, i);
        metrics_push(&m, &r);
    }
    assert_int_equal(metrics_flush(&m, 30.0), 0);
    redisReply *x = redisCommand(fx->c, "XLEN pacer:job:j-12:metrics");
    assert_true(x && x->type == REDIS_REPLY_INTEGER);
    assert_int_equal(x->integer, 50); /* no waiting here: flushed means delivered */
    freeReplyObject(x);
    metrics_stop(&m, 5.0);

    metrics_sink_t *gone = redis_report_sink("redis://127.0.0.1:1", "j-12", 0, err, sizeof err);
    assert_non_null(gone);
    assert_int_equal(metrics_start(&m, "j-12", &gone, 1), 0);
    make_record(&r, 1);
    metrics_push(&m, &r);
    double t0 = mono();
    assert_int_equal(metrics_flush(&m, 30.0), 0); /* nothing it could deliver: no wait */
    assert_true(mono() - t0 < AWAIT_S);
    metrics_stop(&m, 5.0);
}

static void test_heartbeat_without_records(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-8", 2, err, sizeof err);
    assert_non_null(s);
    const char *node = "pacer:job:j-8:node:2";
    double end = mono() + AWAIT_S, first;
    while (!((first = hfield(fx->c, node, "heartbeat")) > 0) && mono() < end) nap();
    assert_true(first > 0);
    /* It keeps beating with no records at all (a rank that loads data or evaluates). */
    double later = first;
    end = mono() + AWAIT_S;
    while (!((later = hfield(fx->c, node, "heartbeat")) > first) && mono() < end) nap();
    assert_true(later > first);
    assert_true(hfield(fx->c, node, "rank") == 2);
    assert_true(hfield(fx->c, node, "pid") == getpid());
    redis_report_heartbeat(s); /* never blocks */
    s->close(s);
}

static void test_assignment_cache(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-9", 0, err, sizeof err);
    assert_non_null(s);
    int64_t v = 0;
    int b[3] = {0};
    assert_int_equal(redis_report_assignment(s, &v, b, 3), 0); /* none yet */

    redisReply *r = redisCommand(fx->c, "HSET pacer:job:j-9:assignment version 3 batches [10,20,34] time 1");
    freeReplyObject(r);
    int got = 0;
    double end = mono() + AWAIT_S;
    while ((got = redis_report_assignment(s, &v, b, 3)) == 0 && mono() < end) nap();
    assert_int_equal(got, 1);
    assert_int_equal(v, 3);
    assert_int_equal(b[0], 10);
    assert_int_equal(b[1], 20);
    assert_int_equal(b[2], 34);
    assert_int_equal(redis_report_assignment(s, &v, b, 3), 0); /* nothing newer */

    /* A plan for another world size, then a malformed one: -1, never garbage. */
    r = redisCommand(fx->c, "HSET pacer:job:j-9:assignment version 4 batches [32,32]");
    freeReplyObject(r);
    end = mono() + AWAIT_S;
    while ((got = redis_report_assignment(s, &v, b, 3)) == 0 && mono() < end) nap();
    assert_int_equal(got, -1);
    r = redisCommand(fx->c, "HSET pacer:job:j-9:assignment version 5 batches {oops");
    freeReplyObject(r);
    end = mono() + AWAIT_S;
    while ((got = redis_report_assignment(s, &v, b, 3)) != -1 && mono() < end) nap();
    assert_int_equal(got, -1);
    r = redisCommand(fx->c, "HSET pacer:job:j-9:assignment version 6 batches [1,2,61]");
    freeReplyObject(r);
    end = mono() + AWAIT_S;
    while ((got = redis_report_assignment(s, &v, b, 3)) != 1 && mono() < end) nap();
    assert_int_equal(got, 1);
    assert_int_equal(v, 6);
    assert_int_equal(b[2], 61);
    s->close(s);
}

/* Nothing listens: writes return at once, the backlog holds REDIS_REPORT_BACKLOG entries,
 * the rest is dropped and counted, and close does not hang. */
static void test_unreachable_bounded(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN], url[200];
    snprintf(url, sizeof url, "unix://%s/nobody.sock", fx->dir);
    double t0 = mono();
    metrics_sink_t *s = redis_report_sink(url, "j-10", 0, err, sizeof err);
    assert_non_null(s);
    assert_true(mono() - t0 < STALL_S);
    g_ncalls = 0;
    double worst = write_records(s, 1, REDIS_REPORT_BACKLOG + 100);
    double med = calls_median();
    print_message("unreachable: %d write calls, median %.2g s, worst %.2g s\n", g_ncalls, med, worst);
    assert_true(med < WRITE_MEDIAN_S);
    assert_true(worst < STALL_S);
    assert_false(redis_report_connected(s));
    assert_int_equal(redis_report_dropped(s), 100);
    t0 = mono();
    s->close(s);
    assert_true(mono() - t0 < CLOSE_S);

    /* A TCP port with no server: refused at once, same behaviour. */
    s = redis_report_sink("redis://127.0.0.1:1", "j-10", 0, err, sizeof err);
    assert_non_null(s);
    g_ncalls = 0;
    worst = write_records(s, 1, 50 * 64);
    assert_true(calls_median() < WRITE_MEDIAN_S);
    assert_true(worst < STALL_S);
    t0 = mono();
    s->close(s);
    assert_true(mono() - t0 < CLOSE_S);
}

static void *close_sink(void *arg)
{
    metrics_sink_t *s = arg;
    s->close(s);
    return NULL;
}

/* A rank ends while Redis is away (the embedded one restarts with its coordinator): its
 * close keeps reconnecting and delivers the backlog once Redis is back, within its
 * window (long here, so that how fast redis-server starts on a loaded machine cannot
 * matter). Before, close made one attempt and dropped the rank's last records. */
static void test_close_waits_for_restart(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-12", 0, err, sizeof err);
    assert_non_null(s);
    redis_report_close_window(s, AWAIT_S);
    write_records(s, 1, 3);
    assert_int_equal(await_xlen(fx->c, "pacer:job:j-12:metrics", 3, AWAIT_S), 3);
    stop_redis(fx);
    double end = mono() + AWAIT_S;
    int64_t step = 4;
    while (redis_report_connected(s) && mono() < end) {
        write_records(s, step++, 1);
        nap();
    }
    assert_false(redis_report_connected(s));
    write_records(s, step, 5);
    step += 5;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, close_sink, s), 0);
    nap();
    assert_int_equal(start_redis(fx), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* close has returned: everything it will deliver is in */
    assert_int_equal(integer(fx->c, "XLEN %s", "pacer:job:j-12:metrics"), step - 1);
}

/* The server goes away mid-run and comes back with its AOF: what was written meanwhile
 * is delivered after the reconnect, and no write call waited for the network. */
static void test_server_restart(void **state)
{
    fixture_t *fx = *state;
    char err[ERRLEN];
    metrics_sink_t *s = redis_report_sink(fx->url, "j-11", 0, err, sizeof err);
    assert_non_null(s);
    write_records(s, 1, 5);
    assert_int_equal(await_xlen(fx->c, "pacer:job:j-11:metrics", 5, AWAIT_S), 5);

    stop_redis(fx);
    double end = mono() + AWAIT_S, worst = 0;
    int64_t step = 6;
    g_ncalls = 0;
    /* Keep writing (as the reporter would) until the sink notices the loss. */
    while (redis_report_connected(s) && mono() < end) {
        double w = write_records(s, step++, 1);
        if (w > worst) worst = w;
        nap();
    }
    assert_false(redis_report_connected(s));
    double w = write_records(s, step, 20);
    if (w > worst) worst = w;
    step += 20;
    assert_true(calls_median() < WRITE_MEDIAN_S);
    assert_true(worst < STALL_S);

    assert_int_equal(start_redis(fx), 0);
    long long want = step - 1;
    assert_int_equal(await_xlen(fx->c, "pacer:job:j-11:metrics", want, AWAIT_S), want);
    assert_true(redis_report_connected(s));
    assert_int_equal(redis_report_dropped(s), 0);
    s->close(s);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    char err[ERRLEN];
    assert_null(redis_report_sink("nope://x", "j-1", 0, err, sizeof err));
    assert_non_null(strstr(err, "redis://"));
    assert_null(redis_report_sink("redis://h", "", 0, err, sizeof err));
    assert_null(redis_report_sink("redis://h", "has space", 0, err, sizeof err));
}

/* The coarse stream's rule: every record of the first 2 x BASE steps, then BASE per
 * doubling of the step count; epoch and final records always. */
static void test_coarse_keep(void **state)
{
    (void)state;
    long kept = 0;
    for (int64_t step = 1; step <= 64 * REDIS_REPORT_COARSE_BASE; step++)
        kept += redis_report_coarse_keep(METRICS_STEP, step);
    /* [1, 2B): all; [2B, 4B): every 2nd; ... [32B, 64B): every 32nd; 64B itself. */
    assert_int_equal(kept, 2 * REDIS_REPORT_COARSE_BASE - 1 + 5 * REDIS_REPORT_COARSE_BASE + 1);
    assert_true(redis_report_coarse_keep(METRICS_EPOCH, 1000003));
    assert_true(redis_report_coarse_keep(METRICS_FINAL, 1000003));
    assert_false(redis_report_coarse_keep(METRICS_STEP, 1000003));
    assert_true(redis_report_coarse_keep(METRICS_STEP, 0));
    assert_false(redis_report_coarse_keep(METRICS_STEP, INT64_MAX)); /* odd: never a multiple of k > 1 */
}

/* The wait mark a training step publishes and the reporter reads (worker/waitmark.h),
 * and the limit past which a wait is reported. */
static void test_waitmark(void **state)
{
    (void)state;
    waitmark_t m = {0};
    wait_op_t op;
    int peer;
    double since;
    assert_int_equal(waitmark_read(&m, &op, &peer, &since), 0);
    waitmark_enter(&m, WAIT_ALLREDUCE, -1);
    assert_int_equal(waitmark_read(&m, &op, &peer, &since), 1);
    assert_int_equal(op, WAIT_ALLREDUCE);
    assert_int_equal(peer, -1);
    assert_true(since > 0);
    assert_string_equal(waitmark_name(op), "allreduce");
    waitmark_leave(&m);
    assert_int_equal(waitmark_read(&m, &op, &peer, &since), 0);
    waitmark_enter(&m, WAIT_REPLY, 0);
    assert_int_equal(waitmark_read(&m, &op, &peer, &since), 1);
    assert_int_equal(peer, 0);
    /* A write left half done (odd count) reads as not waiting, after bounded tries. */
    atomic_store(&m.seq, atomic_load(&m.seq) + 1);
    assert_int_equal(waitmark_read(&m, &op, &peer, &since), 0);
    waitmark_enter(NULL, WAIT_PUSH, 0); /* nothing published, no crash */
    waitmark_leave(NULL);
    assert_string_equal(waitmark_name(WAIT_NONE), "");
    assert_string_equal(waitmark_name((wait_op_t)99), "");
    /* WAITMARK_FACTOR x the median step, never below the floor; unmeasured: the floor. */
    assert_true(waitmark_limit_s(2.0) == WAITMARK_FACTOR * 2.0);
    assert_true(waitmark_limit_s(0.01) == WAITMARK_FLOOR_S);
    assert_true(waitmark_limit_s(0) == WAITMARK_FLOOR_S);
    assert_true(waitmark_limit_s(-1) == WAITMARK_FLOOR_S);
    assert_true(waitmark_limit_s(NAN) == WAITMARK_FLOOR_S);
    assert_true(waitmark_limit_s(INFINITY) == WAITMARK_FLOOR_S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coarse_keep),
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_waitmark),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test_setup_teardown(test_records_land, setup, teardown),
        cmocka_unit_test_setup_teardown(test_comm_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_without_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assignment_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_waits_for_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
