/* tests/unit/test_common.c - the planner, staleness statistics, the metrics record, the
 * clock, the Redis key names against docs/REDIS.md, and the checkpoint retention rule. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "ckptdir.h"
#include "clock.h"
#include "jsonbody.h"
#include "metrics.h"
#include "passert.h"
#include "planner.h"
#include "redis_keys.h"
#include "sha256.h"
#include "staleness.h"

static int sum(const int *b, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) s += b[i];
    return s;
}

static void test_planner_proportional(void **state)
{
    (void)state;
    /* slowdowns [1,1,2,4] -> speeds [4,4,2,1]/11 of B = 256 */
    double v[4] = {400, 400, 200, 100};
    int cur[4] = {64, 64, 64, 64}, out[4];
    assert_int_equal(planner_assign(v, cur, 4, 256, 1, 0, 0.05, out), 1);
    assert_int_equal(sum(out, 4), 256);
    /* ideal 93.09, 93.09, 46.55, 23.27: floors 93 93 46 23 = 255, the largest remainder
     * (46.55 -> .55) gets the last sample */
    assert_int_equal(out[0], 93);
    assert_int_equal(out[1], 93);
    assert_int_equal(out[2], 47);
    assert_int_equal(out[3], 23);
}

static void test_planner_hysteresis(void **state)
{
    (void)state;
    double v[2] = {101, 99};
    int cur[2] = {50, 50}, out[2];
    /* new plan 51/49 is a 2% change: kept at 50/50 under 5% hysteresis */
    assert_int_equal(planner_assign(v, cur, 2, 100, 1, 0, 0.05, out), 0);
    assert_int_equal(out[0], 50);
    assert_int_equal(out[1], 50);
    /* without hysteresis it moves */
    assert_int_equal(planner_assign(v, cur, 2, 100, 1, 0, 0.0, out), 1);
    assert_int_equal(out[0], 51);
    /* identical plan -> 0 */
    int same[2] = {51, 49};
    assert_int_equal(planner_assign(v, same, 2, 100, 1, 0, 0.0, out), 0);
}

static void test_planner_bounds(void **state)
{
    (void)state;
    double v[3] = {1000, 1, 1};
    int cur[3] = {20, 20, 20}, out[3];
    assert_int_equal(planner_assign(v, cur, 3, 60, 8, 40, 0.0, out), 1);
    assert_int_equal(sum(out, 3), 60);
    for (int i = 0; i < 3; i++) {
        assert_true(out[i] >= 8);
        assert_true(out[i] <= 40);
    }
    assert_int_equal(out[0], 40);
    /* impossible bounds and bad speeds are refused */
    assert_int_equal(planner_assign(v, cur, 3, 60, 30, 0, 0.0, out), -1);
    double bad[3] = {1, 0, 1};
    assert_int_equal(planner_assign(bad, cur, 3, 60, 1, 0, 0.0, out), -1);
    double nan_v[3] = {1, NAN, 1};
    assert_int_equal(planner_assign(nan_v, cur, 3, 60, 1, 0, 0.0, out), -1);
}

static void test_planner_imbalance(void **state)
{
    (void)state;
    double v[2] = {100, 50};
    int even[2] = {32, 32}, good[2] = {43, 21};
    assert_true(fabs(planner_imbalance(v, even, 2) - 2.0) < 1e-9);
    assert_true(planner_imbalance(v, good, 2) < 1.05);
}

/* "0 = derived": min 1; max the global batch with dynamic batching (capped), else the
 * batch size; explicit bounds as given. */
static void test_planner_derived_bounds(void **state)
{
    (void)state;
    job_spec_t s;
    spec_defaults(&s);
    s.workers = 4;
    s.batch_size = 64;
    int lo, hi;
    planner_bounds(&s, &lo, &hi);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 64);
    s.algorithm.dynamic_batch = 1;
    planner_bounds(&s, &lo, &hi);
    assert_int_equal(hi, 256);
    s.workers = 200;
    planner_bounds(&s, &lo, &hi);
    assert_int_equal(hi, PLANNER_DERIVED_MAX);
    s.algorithm.min_batch = 8;
    s.algorithm.max_batch = 100;
    planner_bounds(&s, &lo, &hi);
    assert_int_equal(lo, 8);
    assert_int_equal(hi, 100);
}

/* Fewer workers than the spec's (an elastic restart) share its global batch: the upper
 * bound grows to each one's share where it is smaller, never shrinks, and the even split
 * gives the first ones the remainder. */
static void test_planner_world_bounds(void **state)
{
    (void)state;
    job_spec_t s;
    spec_defaults(&s);
    s.workers = 3;
    s.batch_size = 32;
    s.algorithm.min_batch = 8;
    int lo, hi;
    planner_bounds_world(&s, 3, &lo, &hi);
    assert_int_equal(lo, 8);
    assert_int_equal(hi, 32);
    planner_bounds_world(&s, 2, &lo, &hi);
    assert_int_equal(lo, 8);
    assert_int_equal(hi, 48);
    s.workers = 5;
    s.batch_size = 10;
    planner_bounds_world(&s, 3, &lo, &hi);
    assert_int_equal(hi, 17); /* ceil(50 / 3) */
    s.algorithm.max_batch = 40;
    planner_bounds_world(&s, 3, &lo, &hi);
    assert_int_equal(hi, 40); /* already large enough */
    int out[3];
    planner_even(50, 3, out);
    assert_int_equal(out[0], 17);
    assert_int_equal(out[1], 17);
    assert_int_equal(out[2], 16);
    assert_int_equal(sum(out, 3), 50);
    assert_true(out[0] <= 17);
}

/* The 5% trigger: a plan whose predicted imbalance is within 5% stays (noise never moves
 * it), one beyond is replaced by the proportional plan, within the bounds. */
static void test_planner_replan_trigger(void **state)
{
    (void)state;
    int out[4];
    double v[4] = {100, 100, 50, 25};
    int balanced[4] = {93, 93, 47, 23}; /* imbalance 1.02 */
    assert_true(planner_imbalance(v, balanced, 4) < 1.05);
    assert_int_equal(planner_replan(v, balanced, 4, 256, 1, 256, out), 0);
    assert_memory_equal(out, balanced, sizeof balanced);
    double v4[4] = {100, 100, 50, 24}; /* 4% slower: still inside the band */
    assert_int_equal(planner_replan(v4, balanced, 4, 256, 1, 256, out), 0);
    int even[4] = {64, 64, 64, 64}; /* imbalance 4 */
    assert_int_equal(planner_replan(v, even, 4, 256, 1, 256, out), 1);
    assert_int_equal(sum(out, 4), 256);
    assert_true(abs(out[0] - 93) <= 1 && abs(out[3] - 23) <= 1);
    /* bounds hold: max 80 pins the fast ranks and the rest is shared by speed */
    assert_int_equal(planner_replan(v, even, 4, 256, 1, 80, out), 1);
    for (int i = 0; i < 4; i++) assert_true(out[i] <= 80);
    assert_int_equal(sum(out, 4), 256);
    double bad[4] = {100, 0, 50, 25};
    assert_int_equal(planner_replan(bad, even, 4, 256, 1, 256, out), -1);
}

/* Plans from outside are refused with a reason when they do not sum to the global batch
 * or leave [min, max] (the worker then keeps its plan and its buffers are never overrun). */
static void test_planner_check(void **state)
{
    (void)state;
    char why[160];
    int ok[3] = {40, 40, 48}, big[3] = {10, 10, 108}, short_[3] = {40, 40, 40}, zero[3] = {0, 64, 64};
    assert_int_equal(planner_check(ok, 3, 128, 1, 96, why, sizeof why), 0);
    assert_int_equal(planner_check(big, 3, 128, 1, 96, why, sizeof why), -1);
    assert_non_null(strstr(why, "batch 108 of worker 2 is outside [1, 96]"));
    assert_int_equal(planner_check(short_, 3, 128, 1, 96, why, sizeof why), -1);
    assert_non_null(strstr(why, "sum to 120, not to the global batch 128"));
    assert_int_equal(planner_check(zero, 3, 128, 1, 96, why, sizeof why), -1);
    assert_non_null(strstr(why, "batch 0 of worker 0"));
}

static staleness_acc_t acc; /* 8 KB each: static, not on the test's stack */

static void test_staleness_histogram(void **state)
{
    (void)state;
    memset(&acc, 0, sizeof acc);
    int64_t taus[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 1000};
    int64_t want_bucket[] = {0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8};
    for (size_t i = 0; i < sizeof taus / sizeof taus[0]; i++) {
        assert_int_equal(staleness_bucket(taus[i]), want_bucket[i]);
        staleness_add(&acc, taus[i]);
    }
    const staleness_t *s = &acc.s;
    assert_int_equal(s->count, 14);
    assert_int_equal(s->max, 1000);
    assert_int_equal(s->hist[4], 2);
    assert_int_equal(s->hist[8], 2);
    int64_t total = 0, sq = 0;
    for (size_t i = 0; i < 14; i++) {
        total += taus[i];
        sq += taus[i] * taus[i];
    }
    assert_int_equal(s->sum, total);
    assert_int_equal(s->sumsq, sq);
}

/* Quantiles come from exact counts, not bucket lower bounds: 90 x 3 and 10 x 10 give
 * p95 = 10 (the histogram alone could only say "8-15"). */
static void test_staleness_quantiles(void **state)
{
    (void)state;
    memset(&acc, 0, sizeof acc);
    for (int i = 0; i < 90; i++) staleness_add(&acc, 3);
    for (int i = 0; i < 10; i++) staleness_add(&acc, 10);
    assert_int_equal(staleness_quantile(&acc, 0.5), 3);
    assert_int_equal(staleness_quantile(&acc, 0.90), 3);
    assert_int_equal(staleness_quantile(&acc, 0.91), 10);
    assert_int_equal(acc.s.p50, 3);
    assert_int_equal(acc.s.p95, 10);
    assert_true(fabs(staleness_mean(&acc.s) - 3.7) < 1e-9);
    /* local-sgd with H = 5 records 0..4 per round: mean exactly 2, p50 2, p95 4 */
    memset(&acc, 0, sizeof acc);
    for (int round = 0; round < 7; round++)
        for (int j = 0; j < 5; j++) staleness_add(&acc, j);
    assert_true(fabs(staleness_mean(&acc.s) - 2.0) < 1e-12);
    assert_int_equal(acc.s.p50, 2);
    assert_int_equal(acc.s.p95, 4);
}

/* Above STALENESS_EXACT_MAX values are only counted: a quantile that falls among them
 * reads STALENESS_EXACT_MAX + 1, max stays exact. */
static void test_staleness_overflow(void **state)
{
    (void)state;
    memset(&acc, 0, sizeof acc);
    for (int i = 0; i < 90; i++) staleness_add(&acc, 2);
    for (int i = 0; i < 10; i++) staleness_add(&acc, 5000 + i);
    assert_int_equal(acc.s.overflow, 10);
    assert_int_equal(acc.s.max, 5009);
    assert_int_equal(acc.s.p50, 2);
    assert_int_equal(acc.s.p95, STALENESS_EXACT_MAX + 1);
    staleness_add(&acc, STALENESS_EXACT_MAX); /* the bound itself is exact */
    assert_int_equal(acc.s.overflow, 10);
    assert_int_equal(acc.counts[STALENESS_EXACT_MAX], 1);
}

/* The one JSON writer: every field, exact quantiles, and no overrun when short. */
static void test_staleness_json(void **state)
{
    (void)state;
    memset(&acc, 0, sizeof acc);
    staleness_add(&acc, 0);
    staleness_add(&acc, 1);
    staleness_add(&acc, 5);
    char buf[STALENESS_JSON_MAX];
    int n = staleness_to_json(&acc.s, buf, sizeof buf);
    assert_true(n > 0);
    assert_string_equal(buf, "{\"count\":3,\"sum\":6,\"sumsq\":26,\"mean\":2.0000,\"p50\":1,\"p95\":5,"
                             "\"max\":5,\"overflow\":0,\"hist\":[1,1,0,0,1,0,0,0,0]}");
    assert_int_equal(staleness_to_json(&acc.s, buf, 30), -1);
    /* the largest possible values still fit STALENESS_JSON_MAX */
    staleness_t big;
    for (size_t i = 0; i < sizeof big / sizeof(int64_t); i++) ((int64_t *)&big)[i] = INT64_MIN;
    big.count = 1;
    assert_true(staleness_to_json(&big, buf, sizeof buf) > 0);
    json_t *j = staleness_json(&acc.s);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "p95")), 5);
    json_decref(j);
    /* No update counted yet: the statistics of none are missing (null), not 0 (issue 29). */
    memset(&acc, 0, sizeof acc);
    assert_true(isnan(staleness_mean(&acc.s)));
    assert_true(staleness_to_json(&acc.s, buf, sizeof buf) > 0);
    assert_string_equal(buf, "{\"count\":0,\"sum\":0,\"sumsq\":0,\"mean\":null,\"p50\":null,\"p95\":null,"
                             "\"max\":null,\"overflow\":0,\"hist\":[0,0,0,0,0,0,0,0,0]}");
}

static void test_metrics_json(void **state)
{
    (void)state;
    metrics_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = METRICS_STEP;
    r.rank = 2;
    snprintf(r.host, sizeof r.host, "node\"a");
    r.step = 17;
    r.batch = 48;
    r.loss = 0.5f;
    r.test_loss = NAN;
    r.test_accuracy = NAN;
    r.slowdown = 2;
    memset(&acc, 0, sizeof acc);
    staleness_add(&acc, 3);
    r.staleness = acc.s;
    char buf[2048];
    int n = metrics_to_json(&r, "j-1", buf, sizeof buf);
    assert_true(n > 0);
    assert_non_null(strstr(buf, "\"rank\":2"));
    assert_non_null(strstr(buf, "\"host\":\"node\\\"a\""));
    assert_non_null(strstr(buf, "\"test_accuracy\":null"));
    assert_non_null(strstr(buf, "\"hist\":[0,0,0,1,0,0,0,0,0]"));
    assert_non_null(strstr(buf, "\"job\":\"j-1\""));
    /* too small a buffer is refused, not overrun */
    assert_int_equal(metrics_to_json(&r, "j-1", buf, 40), -1);
    /* What a rank did not measure is null, never 0 (issue 29): the parameter server
     * computes no samples, a skipped compute has no loss, no update has no staleness. */
    r.role = 1;
    r.samples_per_s = NAN;
    r.loss = NAN;
    memset(&r.staleness, 0, sizeof r.staleness);
    assert_true(metrics_to_json(&r, "j-1", buf, sizeof buf) > 0);
    json_t *o = json_loads(buf, 0, NULL);
    assert_non_null(o);
    assert_true(json_is_null(json_object_get(o, "samples_per_s")));
    assert_true(json_is_null(json_object_get(o, "loss")));
    assert_true(json_is_null(json_object_get(json_object_get(o, "staleness"), "mean")));
    json_decref(o);
}

static void test_metrics_reporter_file(void **state)
{
    (void)state;
    char path[] = "/tmp/pacer-metrics-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    static metrics_reporter_t rep;
    metrics_sink_t *sink = metrics_file_sink(path, err, sizeof err);
    assert_non_null(sink);
    assert_int_equal(metrics_start(&rep, "job", &sink, 1), 0);
    metrics_record_t r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 100; i++) {
        r.step = i;
        metrics_push(&rep, &r);
    }
    metrics_stop(&rep, 5);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) lines++;
    fclose(f);
    unlink(path);
    assert_int_equal(lines, 100);
}

/* The two meanings of time: monotonic for durations, wall for timestamps. Bounds are
 * one-sided or loose: a loaded machine may oversleep, never undersleep. */
static void test_clock(void **state)
{
    (void)state;
    double w = clock_wall_s();
    assert_true(fabs(w - (double)time(NULL)) < 2.0);
    struct timespec ts;
    clock_wall_ts(&ts);
    assert_true(fabs((double)ts.tv_sec - w) < 2.0);
    assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);

    double t0 = clock_mono_s(), c0 = clock_thread_cpu_s();
    clock_sleep_s(0.05);
    clock_sleep_s(0);
    clock_sleep_s(-1);
    double dt = clock_mono_s() - t0;
    assert_true(dt >= 0.05);
    assert_true(clock_thread_cpu_s() - c0 < dt); /* sleeping is not CPU time */

    struct timespec d;
    clock_wall_deadline(1.5, &d);
    double dd = (double)d.tv_sec + 1e-9 * (double)d.tv_nsec - clock_wall_s();
    assert_true(dd > 0 && dd <= 1.5);
    assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
}

/* A key's printf format against its documented pattern: %d stands for {rank}, %s for
 * any other {placeholder}, every other character is the same. */
static int format_matches(const char *fmt, const char *doc)
{
    while (*fmt || *doc) {
        if (*fmt == '%') {
            const char *end = strchr(doc, '}');
            if (*doc != '{' || !end || end == doc + 1) return 0;
            int is_rank = strncmp(doc, "{rank}", 6) == 0;
            if (fmt[1] != (is_rank ? 'd' : 's')) return 0;
            fmt += 2;
            doc = end + 1;
        } else if (*doc == '{' || *fmt != *doc) {
            return 0;
        } else {
            fmt++;
            doc++;
        }
    }
    return 1;
}

#define KEY_ROW(name, doc) {#name, name, doc},
static const struct {
    const char *name, *fmt, *doc;
} KEYS[] = {REDIS_KEYS(KEY_ROW)};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

/* PACER_ASSERT (common/passert.h): a true condition is nothing; a false one prints the
 * reason, the expression, file and line, and aborts. Run in a child, stderr to a pipe. */
static void test_assert_macro(void **state)
{
    (void)state;
    PACER_ASSERT(1 + 1 == 2, "never printed %d", 1);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        int four = 4;
        PACER_ASSERT(four == 5, "rank %d: broken", 3);
        _exit(0);
    }
    close(fd[1]);
    char out[512];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof out - 1 && (k = read(fd[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)k;
    out[n] = 0;
    close(fd[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    assert_non_null(strstr(out, "rank 3: broken\nassertion failed: four == 5 (tests/unit/test_common.c:"));
}

/* common/redis_keys.h names every key; docs/REDIS.md must describe exactly those. */
static void test_redis_keys_documented(void **state)
{
    (void)state;
    FILE *f = fopen("docs/REDIS.md", "r");
    if (!f) fail_msg("docs/REDIS.md not found: run the unit tests from the repository root");
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        if (!format_matches(KEYS[i].fmt, KEYS[i].doc))
            fail_msg("%s: format \"%s\" does not match its pattern \"%s\"", KEYS[i].name, KEYS[i].fmt, KEYS[i].doc);
        char quoted[128];
        snprintf(quoted, sizeof quoted, "`%s`", KEYS[i].doc);
        if (!strstr(doc, quoted)) fail_msg("docs/REDIS.md does not describe %s (%s)", quoted, KEYS[i].name);
        for (size_t k = 0; k < i; k++)
            if (strcmp(KEYS[k].fmt, KEYS[i].fmt) == 0)
                fail_msg("%s and %s are the same key", KEYS[k].name, KEYS[i].name);
    }
    /* ...and every key the document names in backquotes is one of them. */
    int seen = 0;
    for (const char *p = strstr(doc, "`pacer:"); p; p = strstr(p + 1, "`pacer:")) {
        const char *end = strchr(p + 1, '`');
        assert_non_null(end);
        size_t len = (size_t)(end - p - 1);
        int known = 0;
        for (size_t i = 0; i < NKEYS; i++) known |= strlen(KEYS[i].doc) == len && strncmp(KEYS[i].doc, p + 1, len) == 0;
        if (!known) fail_msg("docs/REDIS.md names %.*s, which common/redis_keys.h does not", (int)len, p + 1);
        seen++;
        p = end;
    }
    assert_true(seen >= (int)NKEYS);
    /* The check can fail: a wrong format or an undocumented pattern is caught. */
    assert_false(format_matches("pacer:job:%d:node:%d", "pacer:job:{id}:node:{rank}"));
    assert_false(format_matches("pacer:job:%s:node", "pacer:job:{id}:node:{rank}"));
    assert_false(format_matches("pacer:jobs", "pacer:job"));
    assert_null(strstr(doc, "`pacer:job:{id}:nodes:{rank}`"));
}


/* ---- checkpoint retention (common/ckptdir.h) ------------------------------------------- */

static ckpt_entry_t entry(long long step, double accuracy, int latest)
{
    ckpt_entry_t e;
    char f[CKPTDIR_FILE_MAX];
    assert_int_equal(ckptdir_name(f, sizeof f, "j", step, step / 10, accuracy), 0);
    assert_int_equal(ckptdir_parse(f, "j", &e), 0);
    e.latest = latest;
    return e;
}

/* "steps kept, best" after ckptdir_choose: "50 40 20 best 20" */
static void kept_upto(ckpt_entry_t *e, int n, int keep_last, int keep_best, long long upto, const char *want)
{
    char got[256] = "";
    size_t o = 0;
    ckptdir_choose(e, n, keep_last, keep_best, upto);
    long long best = -1;
    for (int i = 0; i < n; i++) {
        if (e[i].keep) o += (size_t)snprintf(got + o, sizeof got - o, "%lld ", e[i].step);
        if (e[i].best) best = e[i].step;
    }
    snprintf(got + o, sizeof got - o, "best %lld", best);
    assert_string_equal(got, want);
}

static void kept(ckpt_entry_t *e, int n, int keep_last, int keep_best, const char *want)
{
    kept_upto(e, n, keep_last, keep_best, -1, want);
}

static void test_ckptdir_names(void **state)
{
    (void)state;
    char f[CKPTDIR_FILE_MAX];
    ckpt_entry_t e;
    assert_int_equal(ckptdir_name(f, sizeof f, "a.b", 120, 3, 0.9731), 0);
    assert_string_equal(f, "a.b.step120-epoch3-acc973100.ckpt");
    assert_int_equal(ckptdir_parse(f, "a.b", &e), 0);
    assert_true(e.step == 120 && e.epoch == 3 && fabs(e.accuracy - 0.9731) < 1e-9);
    assert_int_equal(ckptdir_name(f, sizeof f, "a", 7, 0, -1), 0);
    assert_string_equal(f, "a.step7-epoch0.ckpt");
    assert_int_equal(ckptdir_parse(f, "a", &e), 0);
    assert_true(e.step == 7 && e.accuracy < 0);
    /* Another job's names, and anything not exactly this shape, are not ours. */
    const char *bad[] = {"a.ckpt",
                         "a.step7-epoch0.ckpt.tmp",
                         "ab.step7-epoch0.ckpt",
                         "a.step-7-epoch0.ckpt",
                         "a.step7-epoch0-acc1000001.ckpt",
                         "a.step99999999999999-epoch0.ckpt",
                         "a.step7-epoch.ckpt",
                         "a.step7-epoch0-acc.ckpt",
                         "a.step+7-epoch0.ckpt",
                         "a.step7-epoch0.ckptx",
                         "a.step7epoch0.ckpt"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (ckptdir_parse(bad[i], "a", &e) == 0) fail_msg("%s parsed as a checkpoint of a", bad[i]);
    assert_int_equal(ckptdir_name(f, sizeof f, "a", -1, 0, -1), -1);
    assert_int_equal(ckptdir_name(f, sizeof f, "a", 1, 0, 1.5), -1);
    assert_int_equal(ckptdir_name(f, 10, "a", 1, 0, -1), -1);
}

static void test_ckptdir_rule(void **state)
{
    (void)state;
    /* Last 2 and the best (an older one), given in any order. */
    ckpt_entry_t e[6] = {entry(20, 0.9, 0), entry(50, 0.7, 1), entry(10, 0.5, 0), entry(40, -1, 0), entry(30, 0.8, 0)};
    kept(e, 5, 2, 1, "50 40 20 best 20");
    kept(e, 5, 2, 0, "50 40 best 20");
    kept(e, 5, 1, 0, "50 best 20");
    kept(e, 5, 9, 1, "50 40 30 20 10 best 20");
    /* The best among the last ones is kept once; equal accuracies: the later step. */
    ckpt_entry_t t[3] = {entry(10, 0.8, 0), entry(20, 0.8, 0), entry(30, 0.6, 1)};
    kept(t, 3, 2, 1, "30 20 best 20");
    /* Nothing evaluated: no best. */
    ckpt_entry_t u[3] = {entry(5, -1, 0), entry(10, -1, 1)};
    kept(u, 2, 1, 1, "10 best -1");
    /* A run resumed from step 20 (its latest): 30 and 40 were rolled back, even the best. */
    ckpt_entry_t r[4] = {entry(40, 0.99, 0), entry(30, 0.1, 0), entry(20, 0.5, 1), entry(10, 0.6, 0)};
    kept(r, 4, 2, 1, "20 10 best 10");
    /* The latest is kept even when keep_last would count a newer stray. */
    ckpt_entry_t l[2] = {entry(7, -1, 1), entry(3, -1, 0)};
    kept(l, 2, 1, 0, "7 best -1");
    /* keep_upto: the newest at or before a collapse's start stays too (issue 29), and
     * nothing more when the latest is itself that old; a start before every checkpoint
     * keeps none extra. */
    ckpt_entry_t g[4] = {entry(40, -1, 1), entry(30, -1, 0), entry(20, -1, 0), entry(10, -1, 0)};
    kept_upto(g, 4, 1, 0, 25, "40 20 best -1");
    kept_upto(g, 4, 1, 0, 20, "40 20 best -1");
    kept_upto(g, 4, 1, 0, 40, "40 best -1");
    kept_upto(g, 4, 1, 0, 5, "40 best -1");
    kept_upto(g, 4, 2, 0, 35, "40 30 best -1");
    /* ckptdir_before: the newest strictly before a step. */
    assert_int_equal(g[ckptdir_before(g, 4, 25)].step, 20);
    assert_int_equal(g[ckptdir_before(g, 4, 20)].step, 10);
    assert_int_equal(ckptdir_before(g, 4, 10), -1);
}

/* ckptdir_retain and ckptdir_list on a real directory: links, pruning, the bytes. */
/* The attempt fence: absent is generation 0; a raise ends a generation (and removes its
 * own file); a publisher of an ended one is refused with a message naming both; a raise
 * while a publisher holds the lock says busy instead of waiting; a file that is not a
 * generation is refused by name. */
static void test_ckptdir_fence(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-fence-XXXXXX", path[300], err[512];
    long long g = -1;
    int fd = -1;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(ckptdir_fence_read(dir, "j", &g, err, sizeof err), 0);
    assert_true(g == 0);
    assert_int_equal(ckptdir_fence_enter(dir, "j", 0, &fd, err, sizeof err), 0);
    assert_true(fd >= 0);
    /* held by a publisher: the coordinator does not wait */
    assert_int_equal(ckptdir_fence_raise(dir, "j", 0, err, sizeof err), 1);
    ckptdir_fence_leave(fd);
    assert_int_equal(ckptdir_fence_own(path, sizeof path, dir, "j", 0), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(ckptdir_fence_raise(dir, "j", 0, err, sizeof err), 0);
    assert_int_equal(access(path, F_OK), -1); /* the ended generation's own file is gone */
    assert_int_equal(ckptdir_fence_read(dir, "j", &g, err, sizeof err), 0);
    assert_true(g == 1);
    /* raising past an older generation again changes nothing */
    assert_int_equal(ckptdir_fence_raise(dir, "j", 0, err, sizeof err), 0);
    assert_int_equal(ckptdir_fence_read(dir, "j", &g, err, sizeof err), 0);
    assert_true(g == 1);
    assert_int_equal(ckptdir_fence_enter(dir, "j", 0, &fd, err, sizeof err), 1);
    assert_true(fd == -1);
    assert_non_null(strstr(err, "checkpoint not published"));
    assert_non_null(strstr(err, "says generation 1, this attempt is 0"));
    assert_int_equal(ckptdir_fence_enter(dir, "j", 1, &fd, err, sizeof err), 0);
    ckptdir_fence_leave(fd);
    /* not a generation: refused by name, never taken for one */
    const char *bad[] = {"x1\n", "-3\n", "12a\n", "99999999999999999999\n", "1000000000000001\n"};
    snprintf(path, sizeof path, "%s/j.fence", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i], f);
        fclose(f);
        assert_int_equal(ckptdir_fence_read(dir, "j", &g, err, sizeof err), -1);
        assert_non_null(strstr(err, "j.fence: not a fence generation"));
        assert_int_equal(ckptdir_fence_enter(dir, "j", 1, &fd, err, sizeof err), -1);
    }
    unlink(path);
    /* a link in its place is never followed: the raise writes nothing through it */
    char target[300];
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    f = fopen(target, "w");
    assert_non_null(f);
    fputs("7\n", f);
    fclose(f);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(ckptdir_fence_raise(dir, "j", 7, err, sizeof err), -1);
    assert_non_null(strstr(err, "j.fence"));
    f = fopen(target, "r");
    assert_non_null(f);
    char got[8] = "";
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "7\n");
    unlink(path);
    unlink(target);
    assert_int_equal(rmdir(dir), 0);
}

static void test_ckptdir_retain(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-ckptdir-XXXXXX", path[256], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/j.ckpt", dir);
    const double accs[] = {-1, 0.6, -1, 0.4, -1, 0.5};
    for (int i = 0; i < 6; i++) {
        /* As checkpoint_save does: a new file renamed over j.ckpt, 100 + i bytes. */
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        assert_non_null(f);
        for (int k = 0; k < 100 + i; k++) fputc('x', f);
        fclose(f);
        assert_int_equal(rename(tmp, path), 0);
        if (ckptdir_retain(dir, "j", (i + 1) * 10, i / 2, accs[i], 2, 1, -1, err, sizeof err) != 0) fail_msg("%s", err);
    }
    /* A re-save at the same step replaces its linked name. */
    if (ckptdir_retain(dir, "j", 60, 2, 0.5, 2, 1, -1, err, sizeof err) != 0) fail_msg("%s", err);
    ckpt_entry_t e[8];
    long long total = 0;
    int n = ckptdir_list(dir, "j", e, 8, &total, err, sizeof err);
    if (n < 0) fail_msg("%s", err);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].file, "j.step60-epoch2-acc500000.ckpt");
    assert_true(e[0].latest && !e[0].best && e[0].bytes == 105);
    assert_string_equal(e[1].file, "j.step50-epoch2.ckpt");
    assert_string_equal(e[2].file, "j.step20-epoch0-acc600000.ckpt");
    assert_true(e[2].best && !e[2].latest && e[2].bytes == 101);
    /* j.ckpt is the same file as step 60's: counted once. */
    assert_true(total == 105 + 104 + 101);
    /* Too many for the caller's array: an error that says so, never an overrun. */
    assert_int_equal(ckptdir_list(dir, "j", e, 2, &total, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 2 checkpoints"));
    /* j.ckpt alone (an older pacer): one entry of unknown step. */
    assert_int_equal(ckptdir_list(dir, "j", e, 8, &total, err, sizeof err), 3);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, e[i].file);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/j.ckpt", dir);
    n = ckptdir_list(dir, "j", e, 8, &total, err, sizeof err);
    assert_int_equal(n, 1);
    assert_true(e[0].step == -1 && e[0].latest && total == 105);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
    /* A missing directory is an empty list. */
    assert_int_equal(ckptdir_list(dir, "j", e, 8, &total, err, sizeof err), 0);
}

/* The standard vectors: empty, "abc", the two-block 448-bit message, and lengths around
 * the padding boundary (55, 56, 64 bytes) against sha256sum's values. */
/* jansson quotes the bytes near a fault, a document's newline among them (an invalid escape
 * before a line break: fuzz_sched's finding): every message that carries its text is one
 * line, in a log, a CLI's output or an HTTP body. */
static void test_json_error_one_line(void **state)
{
    (void)state;
    static const char *docs[] = {"{\"name\": \"fast\\\n  \"x\": 1}", "{\"a\": \"\t\x01\"}", "[1,\n\r2,}"};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        json_error_t je;
        json_t *root = json_loads(docs[i], 0, &je);
        assert_null(root);
        char err[512];
        assert_int_equal(jsonbody_error(&je, "body", err, sizeof err), -1);
        assert_non_null(strstr(err, "body: "));
        for (const char *c = err; *c; c++) assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
        const char *text = jsonbody_text(&je);
        assert_ptr_equal(text, je.text);
        assert_true(text[0] != 0);
        for (const char *c = text; *c; c++) assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
    }
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char a[64];
    memset(a, 'a', sizeof a);
    sha256_hex(a, 55, hex);
    assert_string_equal(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    sha256_hex(a, 56, hex);
    assert_string_equal(hex, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    sha256_hex(a, 64, hex);
    assert_string_equal(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    assert_true(sha256_hex_valid(hex));
    hex[3] = 'A';
    assert_false(sha256_hex_valid(hex));
    assert_false(sha256_hex_valid("abc"));
    assert_false(sha256_hex_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planner_proportional),
        cmocka_unit_test(test_planner_hysteresis),
        cmocka_unit_test(test_planner_bounds),
        cmocka_unit_test(test_planner_world_bounds),
        cmocka_unit_test(test_planner_imbalance),
        cmocka_unit_test(test_planner_derived_bounds),
        cmocka_unit_test(test_planner_replan_trigger),
        cmocka_unit_test(test_planner_check),
        cmocka_unit_test(test_staleness_histogram),
        cmocka_unit_test(test_staleness_quantiles),
        cmocka_unit_test(test_staleness_overflow),
        cmocka_unit_test(test_staleness_json),
        cmocka_unit_test(test_metrics_json),
        cmocka_unit_test(test_metrics_reporter_file),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_assert_macro),
        cmocka_unit_test(test_redis_keys_documented),
        cmocka_unit_test(test_ckptdir_names),
        cmocka_unit_test(test_ckptdir_rule),
        cmocka_unit_test(test_ckptdir_retain),
        cmocka_unit_test(test_ckptdir_fence),
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_json_error_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
