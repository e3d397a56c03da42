/* tests/unit/test_phase.c - the time breakdown of a training step (worker/phase.h), the
 * worker's trace ring (worker/trace.h) and the record's JSON (worker/metrics.h), on
 * scripted steps: sleeps of known length stand for the phases. Sleeps only ever take
 * longer than asked on a loaded machine, so the checks are lower bounds plus the exact
 * identity sum(phases) == wall; nothing asserts a speed.
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

#include "metrics.h"
#include "phase.h"
#include "trace.h"

/* One scripted step: data 4 ms, compute 12 ms, emulated 6 ms, wait 8 ms, comm 5 ms,
 * optimizer 3 ms, each ended by its mark, as the worker's code does. */
static const struct { phase_t ph; double s; } SCRIPT[] = {
    { PHASE_DATA, 0.004 }, { PHASE_COMPUTE, 0.012 }, { PHASE_EMULATED, 0.006 },
    { PHASE_WAIT, 0.008 }, { PHASE_COMM, 0.005 }, { PHASE_OPTIMIZER, 0.003 },
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
    phase_mark(&p, PHASE_COMPUTE);   /* evaluation, say: not a step */
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
    json_array_foreach(events, i, ev) {
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
    char *texts[2] = { text, NULL };
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
    for (int i = 0; i < TRACE_SLICES + 10; i++) trace_slice(&ring, 100 + i, i % 2 ? PHASE_COMPUTE : PHASE_COMM, 200.0 + i, 0.5);
    assert_true(fabs(trace_ring_first_wall(&ring) - ring.wall_minus_mono - 210.0) < 1e-9);
    trace_ring_free(&ring);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scripted_step_adds_up),
        cmocka_unit_test(test_marks_outside_a_step_do_nothing),
        cmocka_unit_test(test_record_json),
        cmocka_unit_test(test_trace_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
