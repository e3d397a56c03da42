/* tests/unit/test_phase.c - the time breakdown of a training step (worker/phase.h), the
 * worker's trace ring (worker/trace.h) and the record's JSON (worker/metrics.h), on
 * scripted steps: sleeps of known length stand for the phases. Sleeps only ever take
 * longer than asked on a loaded machine, so the checks are lower bounds plus the exact
 * identity sum(phases) == wall; nothing asserts a speed. Also the coordinator's trace
 * and downsampled metric history built from such records (coordinator/jobtrace.h,
 * jobhistory.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "algo.h"
#include "jobhistory.h"
#include "jobtrace.h"
#include "metrics.h"
#include "phase.h"
#include "prom.h"
#include "trace.h"
#include "worker.h"

/* One scripted step: data 4 ms, compute 12 ms, emulated 6 ms, wait 8 ms, comm 5 ms,
 * optimizer 3 ms, each ended by its mark, as the worker's code does. */
static const struct {
    phase_t ph;
    double s;
} SCRIPT[] = {
    {PHASE_DATA, 0.004}, {PHASE_COMPUTE, 0.012}, {PHASE_EMULATED, 0.006},
    {PHASE_WAIT, 0.008}, {PHASE_COMM, 0.005},    {PHASE_OPTIMIZER, 0.003},
};
#define NSCRIPT (sizeof SCRIPT / sizeof SCRIPT[0])

static void scripted_step(step_phases_t *p, int64_t step)
{
    phase_begin(p, step);
    for (size_t i = 0; i < NSCRIPT; i++) {
        clock_sleep_s(SCRIPT[i].s);
        phase_mark(p, SCRIPT[i].ph);
    }
    phase_event(p, STEP_EV_PLAN);
    phase_end(p);
}

static void test_scripted_step_adds_up(void **state)
{
    (void)state;
    step_phases_t p;
    memset(&p, 0, sizeof p);
    double t0 = mono();
    scripted_step(&p, 7);
    double outside = mono() - t0;
    for (size_t i = 0; i < NSCRIPT; i++) assert_true(p.s[SCRIPT[i].ph] >= SCRIPT[i].s);
    /* The phases tile the step: their sum is its wall time (rounding only). */
    assert_true(fabs(phase_sum(&p) - p.wall) < 1e-9);
    assert_true(p.wall <= outside + 1e-9);
    assert_true(p.wall >= 0.038);
    /* Nothing happened between the last mark and the end: "other" is that gap only. */
    assert_true(p.s[PHASE_OTHER] >= 0 && p.s[PHASE_OTHER] < p.wall);
    assert_int_equal(p.events, STEP_EV_PLAN);
    assert_int_equal(p.steps, 1);
    assert_true(fabs(p.total_wall - p.wall) < 1e-12);
}

static void test_marks_outside_a_step_do_nothing(void **state)
{
    (void)state;
    step_phases_t p;
    memset(&p, 0, sizeof p);
    scripted_step(&p, 1);
    double before[PHASE_N];
    memcpy(before, p.s, sizeof before);
    clock_sleep_s(0.002);
    phase_mark(&p, PHASE_COMPUTE); /* evaluation, say: not a step */
    phase_event(&p, STEP_EV_MERGE);
    assert_memory_equal(before, p.s, sizeof before);
    assert_int_equal(p.events, STEP_EV_PLAN);
    /* Gaps before a phase are booked as other, never into the phase that follows. */
    phase_begin(&p, 2);
    clock_sleep_s(0.004);
    phase_mark(&p, PHASE_OTHER);
    phase_mark(&p, PHASE_COMM);
    phase_end(&p);
    assert_true(p.s[PHASE_OTHER] >= 0.004);
    assert_true(p.s[PHASE_COMM] < 0.004);
    assert_int_equal(p.steps, 2);
    /* An aborted step is not booked. */
    phase_begin(&p, 3);
    phase_mark(&p, PHASE_DATA);
    phase_abort(&p);
    assert_int_equal(p.steps, 2);
}

/* Stage boundaries and scopes (what algo_step and the shared primitives use): a switch
 * books to the phase in force, a scope returns the time around it to the stage's phase,
 * a relabel books nothing. */
static void test_switch_scope_relabel(void **state)
{
    (void)state;
    step_phases_t p;
    memset(&p, 0, sizeof p);
    phase_begin(&p, 1);
    assert_int_equal(p.cur, PHASE_OTHER);
    clock_sleep_s(0.002);
    phase_switch(&p, PHASE_COMM);
    clock_sleep_s(0.003);
    phase_enter(&p, PHASE_WAIT);
    clock_sleep_s(0.004);
    phase_leave(&p);
    assert_int_equal(p.cur, PHASE_COMM);
    clock_sleep_s(0.002);
    phase_switch(&p, PHASE_DATA);
    clock_sleep_s(0.003);
    phase_relabel(&p, PHASE_OPTIMIZER); /* the moment since the switch is the optimizer's */
    phase_switch(&p, PHASE_OTHER);
    phase_end(&p);
    assert_true(p.s[PHASE_OTHER] >= 0.002);
    assert_true(p.s[PHASE_WAIT] >= 0.004);
    assert_true(p.s[PHASE_COMM] >= 0.005); /* both sides of the scope */
    assert_true(p.s[PHASE_OPTIMIZER] >= 0.003);
    assert_true(p.s[PHASE_DATA] == 0.0);
    assert_true(fabs(phase_sum(&p) - p.wall) < 1e-9);
    /* Scopes deeper than PHASE_DEPTH belong to the scope around them; leaving them all
     * restores the stage's phase. */
    phase_begin(&p, 2);
    phase_switch(&p, PHASE_COMPUTE);
    for (int i = 0; i < PHASE_DEPTH + 2; i++) phase_enter(&p, i % 2 ? PHASE_COMM : PHASE_WAIT);
    clock_sleep_s(0.002);
    for (int i = 0; i < PHASE_DEPTH + 2; i++) phase_leave(&p);
    phase_leave(&p); /* one too many: ignored */
    assert_int_equal(p.cur, PHASE_COMPUTE);
    assert_int_equal(p.depth, 0);
    phase_end(&p);
    assert_true(p.s[PHASE_COMM] >= 0.002); /* PHASE_DEPTH = 4: the fourth scope's phase */
    /* Outside a step nothing is booked and no scope is kept. */
    phase_enter(&p, PHASE_COMM);
    phase_switch(&p, PHASE_DATA);
    assert_int_equal(p.depth, 0);
    assert_int_equal(p.steps, 2);
}

/* A scripted algorithm for algo_step: each stage sleeps a known time in its phase. */
static int st_data(worker_t *w, algo_step_t *s)
{
    clock_sleep_s(0.003);
    return 0;
}

static int st_compute(worker_t *w, algo_step_t *s)
{
    assert_true(isnan(s->loss) && s->scale == 1.0f);
    clock_sleep_s(0.004);
    phase_enter(&w->phases, PHASE_EMULATED); /* as worker_compute_grad's slowdown */
    clock_sleep_s(0.002);
    phase_leave(&w->phases);
    clock_sleep_s(0.001);
    s->loss = 2.5f;
    return 0;
}

static int st_idle(worker_t *w, algo_step_t *s) { return ALGO_SKIP; }

static int st_comm(worker_t *w, algo_step_t *s)
{
    assert_true(s->loss == 2.5f); /* what the compute stage handed on */
    clock_sleep_s(0.003);
    return ALGO_MERGED;
}

static int st_last(worker_t *w, algo_step_t *s)
{
    clock_sleep_s(0.002);
    return ALGO_END;
}

static int st_never(worker_t *w, algo_step_t *s)
{
    fail_msg("a stage after ALGO_END ran");
    return -1;
}

static int st_fail(worker_t *w, algo_step_t *s) { return -3; }

static const algo_ops_t SCRIPTED = {
    .name = "scripted",
    .step = {{PHASE_DATA, st_data},
             {PHASE_COMPUTE, st_compute},
             {PHASE_WAIT, st_idle},
             {PHASE_COMM, st_comm},
             {PHASE_OPTIMIZER, st_last},
             {PHASE_COMM, st_never}},
};

/* The loop marks, the stages hold none: each stage's time lands in its phase, a scope
 * inside one in its own, a skipped stage's moment in the next, nothing after ALGO_END;
 * ALGO_MERGED flags the step; the phases still tile it. */
static void test_algo_step_books_stages(void **state)
{
    (void)state;
    worker_t *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->algo = &SCRIPTED;
    phase_begin(&w->phases, 5);
    assert_int_equal(algo_step(w), 0);
    assert_int_equal(w->phases.cur, PHASE_OTHER);
    phase_end(&w->phases);
    const double *ph = w->phases.s;
    assert_true(ph[PHASE_DATA] >= 0.003);
    assert_true(ph[PHASE_COMPUTE] >= 0.005);
    assert_true(ph[PHASE_EMULATED] >= 0.002);
    assert_true(ph[PHASE_WAIT] == 0.0);
    assert_true(ph[PHASE_COMM] >= 0.003);
    assert_true(ph[PHASE_OPTIMIZER] >= 0.002);
    assert_int_equal(w->phases.events, STEP_EV_MERGE);
    assert_true(fabs(phase_sum(&w->phases) - w->phases.wall) < 1e-9);
    /* A stage's error ends the step with it. */
    algo_ops_t failing = {.name = "failing", .step = {{PHASE_DATA, st_data}, {PHASE_COMM, st_fail}}};
    w->algo = &failing;
    phase_begin(&w->phases, 6);
    assert_int_equal(algo_step(w), -3);
    free(w);
}

/* The record's JSON: the phases by name, step_s, events; the sum checks out. */
static void test_record_json(void **state)
{
    (void)state;
    step_phases_t p;
    memset(&p, 0, sizeof p);
    scripted_step(&p, 3);
    metrics_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = METRICS_STEP;
    r.loss = NAN;
    r.test_loss = r.test_accuracy = NAN;
    memcpy(r.phase_s, p.s, sizeof r.phase_s);
    r.step_s = p.wall;
    r.events = p.events | STEP_EV_MERGE;
    char buf[4096];
    assert_true(metrics_to_json(&r, "j-1", buf, sizeof buf) > 0);
    json_error_t e;
    json_t *o = json_loads(buf, 0, &e);
    assert_non_null(o);
    json_t *ph = json_object_get(o, "phases");
    assert_int_equal(json_object_size(ph), PHASE_N);
    double sum = 0;
    for (int i = 0; i < PHASE_N; i++) {
        json_t *v = json_object_get(ph, PHASE_NAMES[i]);
        assert_true(json_is_number(v));
        sum += json_number_value(v);
    }
    double wall = json_number_value(json_object_get(o, "step_s"));
    assert_true(fabs(sum - wall) <= 0.02 * wall);
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "events"), 0)), "plan");
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "events"), 1)), "merge");
    json_decref(o);
    /* Epoch records carry no breakdown. */
    r.kind = METRICS_EPOCH;
    assert_true(metrics_to_json(&r, "j-1", buf, sizeof buf) > 0);
    assert_null(strstr(buf, "\"phases\""));
}

/* Slices of one track, in order, must not overlap. */
static void check_track(json_t *events, int tid, int *nslices)
{
    double end = -1;
    size_t i;
    json_t *ev;
    *nslices = 0;
    json_array_foreach(events, i, ev)
    {
        if (json_integer_value(json_object_get(ev, "tid")) != tid) continue;
        if (strcmp(json_string_value(json_object_get(ev, "ph")), "X") != 0) continue;
        double ts = json_number_value(json_object_get(ev, "ts"));
        double dur = json_number_value(json_object_get(ev, "dur"));
        assert_true(dur >= 0);
        assert_true(ts >= end - 1e-9);
        end = ts + dur;
        (*nslices)++;
    }
}

static void test_trace_ring(void **state)
{
    (void)state;
    trace_ring_t ring;
    assert_int_equal(trace_ring_init(&ring), 0);
    step_phases_t p;
    memset(&p, 0, sizeof p);
    p.ring = &ring;
    scripted_step(&p, 1);
    scripted_step(&p, 2);
    /* Six phases per step, plus "other" when its gap reaches a microsecond. */
    assert_true(ring.nslices >= 2 * NSCRIPT && ring.nslices <= 2 * (NSCRIPT + 1));
    assert_int_equal(ring.ninst, 2);
    /* The same phase twice in a row is one slice. */
    uint64_t n = ring.nslices;
    double t = mono() + 1.0;
    trace_slice(&ring, 9, PHASE_COMM, t, 0.5);
    trace_slice(&ring, 9, PHASE_COMM, t + 0.5, 0.25);
    assert_int_equal(ring.nslices, n + 1);
    assert_true(fabs(ring.slices[n % TRACE_SLICES].dur - 0.75) < 1e-12);

    char *text = trace_ring_events(&ring, 3, "rank 3 (h\"x, worker)", trace_ring_first_wall(&ring));
    assert_non_null(text);
    char *texts[2] = {text, NULL};
    char *doc = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&doc, &len);
    assert_int_equal(trace_write_file(f, "job \"q\"", texts, 2), 0);
    fclose(f);
    json_error_t e;
    json_t *o = json_loads(doc, 0, &e);
    if (!o) fprintf(stderr, "%s: %s\n", e.text, doc);
    assert_non_null(o);
    json_t *events = json_object_get(o, "traceEvents");
    assert_true(json_is_array(events));
    int ns = 0;
    check_track(events, 3, &ns);
    assert_int_equal(ns, (int)ring.nslices);
    json_decref(o);
    free(doc);
    free(text);

    /* Full ring: the newest TRACE_SLICES slices are kept, the oldest overwritten. */
    for (int i = 0; i < TRACE_SLICES + 10; i++)
        trace_slice(&ring, 100 + i, i % 2 ? PHASE_COMPUTE : PHASE_COMM, 200.0 + i, 0.5);
    assert_true(fabs(trace_ring_first_wall(&ring) - ring.wall_minus_mono - 210.0) < 1e-9);
    trace_ring_free(&ring);
}

/* GET /metrics: the breakdown as per-rank counters, one series per phase; the bytes per
 * step and the compression ratio as gauges, none for a rank without them. */
static void test_prom_phases(void **state)
{
    (void)state;
    json_t *nodes = json_loads("{\"job\":\"j-9\",\"world\":2,\"ranks\":["
                               "{\"rank\":0,\"step_s\":2.5,\"phase_data_s\":0.25,\"phase_compute_s\":1.5,"
                               "\"phase_comm_s\":0.5,\"phase_wait_s\":0.125,\"phase_optimizer_s\":0.0625,"
                               "\"phase_emulated_s\":0,\"phase_other_s\":0.0625,"
                               "\"comm_bytes_per_step\":3010,\"compression_ratio\":20.5},"
                               "{\"rank\":1}]}",
                               0, NULL);
    assert_non_null(nodes);
    prom_input_t in;
    memset(&in, 0, sizeof in);
    in.redis_up = 1;
    in.nodes = &nodes;
    in.nnodes = 1;
    size_t len = 0;
    char *text = prom_render(&in, &len);
    assert_non_null(text);
    const char *want[] = {
        "# TYPE pacer_rank_phase_seconds_total counter\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"data\"} 0.25\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"compute\"} 1.5\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"comm\"} 0.5\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"wait\"} 0.125\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"optimizer\"} 0.0625\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"emulated\"} 0\n",
        "pacer_rank_phase_seconds_total{job=\"j-9\",rank=\"0\",phase=\"other\"} 0.0625\n",
        "# TYPE pacer_rank_step_seconds_total counter\n",
        "pacer_rank_step_seconds_total{job=\"j-9\",rank=\"0\"} 2.5\n",
        /* bytes per step and the compression ratio (worker/compress.h), rank 0 only */
        "# TYPE pacer_rank_comm_bytes_per_step gauge\n",
        "pacer_rank_comm_bytes_per_step{job=\"j-9\",rank=\"0\"} 3010\n",
        "# TYPE pacer_rank_compression_ratio gauge\n",
        "pacer_rank_compression_ratio{job=\"j-9\",rank=\"0\"} 20.5\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(text, want[i])) print_message("missing: %s", want[i]);
        assert_non_null(strstr(text, want[i]));
    }
    assert_null(strstr(text, "rank=\"1\"")); /* nothing reported yet: no series */
    free(text);
    json_decref(nodes);
}

/* The coordinator's trace from step records: the window per rank, the clamping that keeps
 * slices apart when records' times overlap, restarts, events, bad records skipped. */
static void test_trace_from_records(void **state)
{
    (void)state;
    json_t *recs = json_array();
    /* rank 0: steps 1..5 of 0.1 s; step 4 flags a plan change. rank 1: steps 1..3 whose
     * times claim they overlap (end 0.05 s apart), then a restart at step 2. */
    for (int s = 1; s <= 5; s++)
        json_array_append_new(recs,
                              json_pack("{s:s, s:i, s:s, s:s, s:i, s:f, s:f, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}, s:o}",
                                        "kind", "step", "rank", 0, "host", "h0", "role", "worker", "step", s, "time",
                                        1000.0 + 0.1 * s, "step_s", 0.1, "phases", "data", 0.01, "compute", 0.05,
                                        "comm", 0.02, "wait", 0.01, "optimizer", 0.005, "emulated", 0.0, "other", 0.005,
                                        "events", s == 4 ? json_pack("[s]", "plan") : json_array()));
    for (int s = 1; s <= 4; s++)
        json_array_append_new(recs, json_pack("{s:s, s:i, s:s, s:i, s:f, s:f, s:{s:f, s:f}}", "kind", "step", "rank", 1,
                                              "host", "h1", "step", s == 4 ? 2 : s, "time", 1000.2 + 0.05 * s, "step_s",
                                              0.1, "phases", "compute", 0.08, "wait", 0.02));
    json_array_append_new(recs, json_pack("{s:s, s:i}", "kind", "epoch", "rank", 0)); /* not a step */
    json_array_append_new(recs, json_pack("{s:s, s:i, s:f, s:f}", "kind", "step", "rank", 2, "time", 1000.0, "step_s",
                                          0.1)); /* no phases */
    json_array_append_new(recs, json_pack("{s:s, s:i, s:f, s:f, s:{}}", "kind", "step", "rank", -1, "time", 1000.0,
                                          "step_s", 0.1)); /* bad rank */
    json_array_append_new(recs, json_string("garbage"));
    json_t *tr = trace_from_records(recs, 3, "j-5");
    assert_non_null(tr);
    json_t *ev = json_object_get(tr, "traceEvents");
    int steps0[8] = {0}, restarts = 0, plans = 0, ns = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        assert_true(tid == 0 || tid == 1);
        if (strcmp(ph, "X") == 0 && tid == 0)
            steps0[json_integer_value(json_object_get(json_object_get(e, "args"), "step"))] = 1;
        if (strcmp(ph, "i") == 0 && strcmp(json_string_value(json_object_get(e, "name")), "restart") == 0) restarts++;
        if (strcmp(ph, "i") == 0 && strcmp(json_string_value(json_object_get(e, "name")), "batch plan") == 0) plans++;
    }
    /* The newest 3 steps of rank 0 only. */
    assert_int_equal(steps0[1] + steps0[2], 0);
    assert_int_equal(steps0[3] + steps0[4] + steps0[5], 3);
    assert_int_equal(restarts, 1);
    assert_int_equal(plans, 1);
    check_track(ev, 0, &ns);
    assert_int_equal(ns, 3 * 6); /* six non-zero phases a step */
    check_track(ev, 1, &ns);
    assert_int_equal(ns, 3 * 2);
    json_decref(tr);
    /* Nothing usable: a valid, empty trace. */
    json_t *none = json_array();
    tr = trace_from_records(none, 10, "j-6");
    assert_non_null(tr);
    assert_int_equal(json_array_size(json_object_get(tr, "traceEvents")), 1); /* the process name */
    json_decref(tr);
    json_decref(none);
    json_decref(recs);
}

/* The downsampled history: a spike survives min/max decimation, every series stays within
 * its bound and spans the first to the last record, the parameter server is left out of
 * the worker-only series, the job's samples add up, bad records are skipped. */
static void test_history_downsample(void **state)
{
    (void)state;
    const int n = 3000;
    history_t *h = history_new(10, 1000.0, 1000.0 + (n - 1) * 0.01, 3);
    assert_non_null(h);
    for (int k = 0; k < n; k++) {
        for (int r = 0; r < 3; r++) {
            double loss = r == 1 && k == 1234 ? 99.0 : 2.0 - k * 0.0005;
            json_t *rec = json_pack("{s:s, s:i, s:s, s:f, s:f, s:f, s:i, s:i, s:I, s:{s:f, s:i}}", "kind", "step",
                                    "rank", r, "role", r == 0 ? "ps" : "worker", "time", 1000.0 + k * 0.01, "loss",
                                    loss, "samples_per_s", 100.0 + r, "batch", 32, "epoch", 1 + k / 1000, "samples",
                                    (json_int_t)(32 * (k + 1)), "staleness", "mean", 0.5, "p95", 1);
            history_add(h, rec);
            json_decref(rec);
        }
        if (k % 1000 == 999) {
            json_t *ev = json_pack("{s:s, s:i, s:s, s:f, s:i, s:f, s:f}", "kind", "epoch", "rank", 1, "role", "worker",
                                   "time", 1000.0 + k * 0.01, "epoch", 1 + k / 1000, "test_accuracy", 0.8, "test_loss",
                                   0.5);
            history_add(h, ev);
            json_decref(ev);
        }
    }
    json_t *junk = json_pack("{s:s, s:i, s:f}", "kind", "step", "rank", 7, "time", 1000.0); /* rank out of range */
    history_add(h, junk);
    history_add(h, NULL);
    json_decref(junk);
    json_t *out = history_json(h);
    assert_non_null(out);
    assert_int_equal(json_integer_value(json_object_get(out, "records")), 3 * n + 3);
    json_t *series = json_object_get(out, "series");
    const char *key;
    json_t *list;
    json_object_foreach(series, key, list)
    {
        /* loss has every rank; the worker-only series leave rank 0 (the ps) out; the noise
         * scale's and the goodput planner's have none: no record here measured them. */
        int none = !strcmp(key, "noise_scale") || !strcmp(key, "global_batch") || !strcmp(key, "goodput");
        assert_int_equal(json_array_size(list), none ? 0 : strcmp(key, "loss") == 0 ? 3 : 2);
        size_t i;
        json_t *s;
        json_array_foreach(list, i, s)
        {
            json_t *t = json_object_get(s, "t");
            assert_true(json_array_size(t) >= 2 && json_array_size(t) <= 10);
            assert_int_equal(json_array_size(t), json_array_size(json_object_get(s, "v")));
            assert_true(fabs(json_real_value(json_array_get(t, 0)) - 1000.0) < 1e-9);
            assert_true(fabs(json_real_value(json_array_get(t, json_array_size(t) - 1)) - (1000.0 + (n - 1) * 0.01)) <
                        1e-9);
            for (size_t k = 1; k < json_array_size(t); k++)
                assert_true(json_real_value(json_array_get(t, k)) > json_real_value(json_array_get(t, k - 1)));
            if (strcmp(key, "loss") == 0 && json_integer_value(json_object_get(s, "rank")) == 1) {
                double top = 0;
                size_t k;
                json_t *v;
                json_array_foreach(json_object_get(s, "v"), k, v) if (json_real_value(v) > top) top = json_real_value(v);
                assert_true(top == 99.0); /* the spike */
            }
        }
    }
    json_t *jl = json_object_get(out, "job_loss");
    size_t nj = json_array_size(json_object_get(jl, "t"));
    assert_true(nj > 0 && nj <= 10);
    /* Two workers of 32 x n samples each (the ps counts none). */
    assert_true(json_real_value(json_array_get(json_object_get(jl, "samples"), nj - 1)) == 2.0 * 32 * n);
    assert_int_equal(json_array_size(json_object_get(out, "accuracy")), 3);
    json_decref(out);
    history_free(h);
    /* Nothing yet: an empty, valid answer. */
    h = history_new(5, NAN, NAN, 0);
    assert_non_null(h);
    out = history_json(h);
    assert_non_null(out);
    assert_true(json_is_null(json_object_get(out, "from")));
    assert_int_equal(json_integer_value(json_object_get(out, "points")), HISTORY_POINTS_MIN);
    json_decref(out);
    history_free(h);
}

/* One epoch or final record for test_history_accuracy; acc NAN: the record carries no
 * evaluation (null), -1: it has no test fields at all. */
static void eval_record(history_t *h, const char *kind, int rank, double t, int epoch, double acc)
{
    json_t *rec = json_pack("{s:s, s:i, s:s, s:f, s:i, s:I}", "kind", kind, "rank", rank, "role",
                            rank == 0 ? "ps" : "worker", "time", t, "epoch", epoch, "samples", (json_int_t)100);
    if (acc == -1) {
    } else if (isnan(acc)) {
        json_object_set_new(rec, "test_accuracy", json_null());
        json_object_set_new(rec, "test_loss", json_null());
    } else {
        json_object_set_new(rec, "test_accuracy", json_real(acc));
        json_object_set_new(rec, "test_loss", json_real(acc == 0 ? 0.0 : 1.0 - acc));
    }
    history_add(h, rec);
    json_decref(rec);
}

/* The accuracy series (issue 29): one point per evaluated epoch, the evaluation of the rank
 * that made it. A parameter-server job: the PS (rank 0) evaluates at each epoch end; its
 * workers' final records and its own carry no evaluation (null, or no field), and neither
 * do the records of a run that stopped before its first epoch end. Streams written before
 * the fix hold the workers' final records with 0 where they evaluated nothing, labelled
 * with an epoch the PS evaluated (or 0): they never replace the PS's evaluation. A resumed
 * attempt evaluates again the epochs it trained again; its evaluation is the one the run
 * went on from, so it replaces the earlier one. A final record's evaluation (a run
 * resumed after its last epoch end evaluates the restored weights) counts only for an
 * epoch without an epoch record. */
static void test_history_accuracy(void **state)
{
    (void)state;
    history_t *h = history_new(100, 0.0, 100.0, 4);
    assert_non_null(h);
    eval_record(h, "epoch", 0, 10, 1, 0.50);
    eval_record(h, "epoch", 0, 20, 2, 0.60);
    eval_record(h, "epoch", 0, 30, 3, 0.70);
    for (int r = 1; r <= 3; r++) eval_record(h, "final", r, 30.5, 2, 0.0); /* as main's workers wrote them */
    eval_record(h, "final", 1, 30.6, 0, 0.0);                              /* a 1-epoch job's, the same */
    eval_record(h, "final", 0, 31, 3, 0.70);                               /* main's PS repeated its last */
    eval_record(h, "final", 2, 31, 3, NAN);
    eval_record(h, "final", 3, 31, 3, -1);
    eval_record(h, "epoch", 1, 31, 4, NAN); /* a synchronous rank that did not evaluate */
    /* Resumed from a checkpoint in epoch 2: epochs 2 and 3 again, then a resume after the
     * last epoch end, whose final record evaluates the restored weights. */
    eval_record(h, "epoch", 0, 40, 2, 0.65);
    eval_record(h, "epoch", 0, 50, 3, 0.72);
    eval_record(h, "final", 0, 60, 3, 0.72);
    eval_record(h, "final", 0, 70, 4, 0.74); /* the epoch record of epoch 4 was lost */
    json_t *out = history_json(h);
    assert_non_null(out);
    json_t *acc = json_object_get(out, "accuracy");
    static const struct {
        int epoch;
        double t, acc;
    } want[] = {{1, 10, 0.50}, {2, 40, 0.65}, {3, 50, 0.72}, {4, 70, 0.74}};
    if (json_array_size(acc) != 4) {
        char *s = json_dumps(acc, JSON_COMPACT);
        print_message("accuracy: %s\n", s);
        free(s);
    }
    assert_int_equal(json_array_size(acc), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *a = json_array_get(acc, i);
        assert_int_equal(json_integer_value(json_object_get(a, "epoch")), want[i].epoch);
        assert_true(fabs(json_number_value(json_object_get(a, "test_accuracy")) - want[i].acc) < 1e-9);
        assert_true(fabs(json_number_value(json_object_get(a, "time")) - want[i].t) < 1e-9);
        assert_int_equal(json_integer_value(json_object_get(a, "rank")), 0);
        assert_true(json_number_value(json_object_get(a, "test_loss")) > 0);
    }
    json_decref(out);
    history_free(h);
}

/* Evaluations between epoch ends (eval_every_steps, records of kind "eval", issue 28): a
 * point each, keyed by its step and carrying it, before its epoch's end; a resumed attempt's
 * evaluation of the same step replaces the earlier one; another rank's (null) adds none. */
static void test_history_eval_between(void **state)
{
    (void)state;
    history_t *h = history_new(100, 0.0, 100.0, 2);
    assert_non_null(h);
    static const struct {
        const char *kind;
        int rank, epoch, step;
        double t, acc;
    } in[] = {{"eval", 0, 1, 10, 5, 0.30},   {"eval", 1, 1, 10, 5, NAN},   {"eval", 0, 1, 20, 8, 0.40},
              {"epoch", 0, 1, 25, 10, 0.45}, {"eval", 0, 2, 35, 15, 0.50}, {"eval", 0, 1, 20, 18, 0.42}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        json_t *rec = json_pack("{s:s, s:i, s:s, s:f, s:i, s:i, s:I}", "kind", in[i].kind, "rank", in[i].rank, "role",
                                "worker", "time", in[i].t, "epoch", in[i].epoch, "step", in[i].step, "samples",
                                (json_int_t)100);
        json_object_set_new(rec, "test_accuracy", isnan(in[i].acc) ? json_null() : json_real(in[i].acc));
        history_add(h, rec);
        json_decref(rec);
    }
    json_t *out = history_json(h);
    assert_non_null(out);
    json_t *acc = json_object_get(out, "accuracy");
    /* epoch 1: steps 10 and 20 (the resumed 0.42), then its end; epoch 2: step 35 */
    static const struct {
        int epoch, step;
        double acc;
    } want[] = {{1, 10, 0.30}, {1, 20, 0.42}, {1, -1, 0.45}, {2, 35, 0.50}};
    assert_int_equal(json_array_size(acc), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *a = json_array_get(acc, i), *st = json_object_get(a, "step");
        assert_int_equal(json_integer_value(json_object_get(a, "epoch")), want[i].epoch);
        assert_true(fabs(json_number_value(json_object_get(a, "test_accuracy")) - want[i].acc) < 1e-9);
        if (want[i].step < 0) assert_null(st);
        else assert_int_equal(json_integer_value(st), want[i].step);
    }
    json_decref(out);
    history_free(h);
}

/* eval_sample: a record's text (quotes, a newline, a control byte, UTF-8) is one escaped
 * JSON string that decodes back to it, and the longest sample, every byte escaped, fits
 * the reporter's line; the history's accuracy points carry the text of the evaluation
 * that stands for the epoch (a re-evaluation's replaces the first), none when the record
 * had none or one longer than HISTORY_SAMPLE_MAX. */
static void test_eval_sample(void **state)
{
    (void)state;
    metrics_record_t r;
    memset(&r, 0, sizeof r);
    r.kind = METRICS_EPOCH;
    r.test_loss = r.test_accuracy = r.noise_scale = NAN;
    snprintf(r.eval_sample, sizeof r.eval_sample, "say \"caf\xc3\xa9\"\n\x01\\");
    char buf[2048 + 6 * METRICS_SAMPLE_MAX];
    assert_true(metrics_to_json(&r, "j", buf, sizeof buf) > 0);
    json_t *rec = json_loads(buf, 0, NULL);
    assert_non_null(rec);
    assert_string_equal(json_string_value(json_object_get(rec, "eval_sample")), r.eval_sample);
    json_decref(rec);
    memset(r.eval_sample, 1, sizeof r.eval_sample - 1); /* the worst case: \u0001 each */
    r.eval_sample[sizeof r.eval_sample - 1] = '\0';
    assert_true(metrics_to_json(&r, "j", buf, sizeof buf) > 0);
    r.eval_sample[0] = '\0';
    assert_true(metrics_to_json(&r, "j", buf, sizeof buf) > 0);
    assert_null(strstr(buf, "eval_sample"));

    history_t *h = history_new(10, 0.0, 100.0, 1);
    char *big = malloc(HISTORY_SAMPLE_MAX + 2);
    assert_non_null(big);
    memset(big, 'x', HISTORY_SAMPLE_MAX + 1);
    big[HISTORY_SAMPLE_MAX + 1] = '\0';
    const char *text[] = {"first", "second", NULL, big};
    for (int i = 0; i < 4; i++) {
        json_t *e = json_pack("{s:s, s:i, s:f, s:i, s:f, s:f}", "kind", "epoch", "rank", 0, "time", 10.0 + i, "epoch",
                              i == 0 ? 1 : i, "test_accuracy", 0.5, "test_loss", 1.0);
        if (text[i]) json_object_set_new(e, "eval_sample", json_string(text[i]));
        history_add(h, e);
        json_decref(e);
    }
    free(big);
    json_t *out = history_json(h);
    json_t *acc = json_object_get(out, "accuracy");
    assert_int_equal(json_array_size(acc), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(acc, 0), "eval_sample")), "second");
    assert_null(json_object_get(json_array_get(acc, 1), "eval_sample"));
    assert_null(json_object_get(json_array_get(acc, 2), "eval_sample"));
    json_decref(out);
    history_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scripted_step_adds_up), cmocka_unit_test(test_marks_outside_a_step_do_nothing),
        cmocka_unit_test(test_switch_scope_relabel),  cmocka_unit_test(test_algo_step_books_stages),
        cmocka_unit_test(test_record_json),           cmocka_unit_test(test_trace_ring),
        cmocka_unit_test(test_prom_phases),           cmocka_unit_test(test_trace_from_records),
        cmocka_unit_test(test_history_downsample),    cmocka_unit_test(test_history_accuracy),
        cmocka_unit_test(test_history_eval_between),  cmocka_unit_test(test_eval_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
