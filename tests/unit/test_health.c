/* tests/unit/test_health.c - the collapse detector (worker/health.h) on scripted losses: a
 * run that learns, a slow first plateau and a noisy one are never called collapsed; a
 * network that died (loss back at ln C), a loss grown to twice its best, a NaN and test
 * accuracy at chance are, dated from the last step the run improved; and which
 * checkpoints count as written before the collapse. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "health.h"

/* A deterministic wiggle in [-a, a] (no RNG: the same sequence everywhere). */
static double wiggle(long step, double a) { return a * sin(0.7 * (double)step) * cos(1.3 * (double)step); }

/* Feeds loss(step) for steps from..to; returns the step that made it collapse, or 0. */
static long feed(health_t *h, long from, long to, double (*loss)(long))
{
    for (long s = from; s <= to; s++)
        if (health_step(h, s, loss(s))) return s;
    return 0;
}

static double learning(long s) { return 2.3 * exp(-(double)s / 300.0) + 0.3 + wiggle(s, 0.15); }
static double plateau(long s) { return log(10.0) + wiggle(s, 0.02) - (s > 400 ? 0.002 * (double)(s - 400) : 0); }
/* Learns to ~1.6 by step 80, a spike at 90-100, then dead at ln 10 (per-batch noise). */
static double dies(long s)
{
    if (s <= 80) return 2.3 - 0.009 * (double)s + wiggle(s, 0.05);
    if (s <= 100) return 3.2;
    return log(10.0) + wiggle(s, 0.03);
}
/* Blown up after 80, then hovering 1% under ln 10 (still learning, slowly) for 300 steps
 * before it learns again: what an asgd run at momentum 0.9 did (docs/RESULTS.md). */
static double hovers(long s)
{
    if (s <= 80) return 2.3 - 0.009 * (double)s + wiggle(s, 0.05);
    if (s <= 100) return 3.2;
    if (s <= 400) return 0.99 * log(10.0) + wiggle(s, 0.01);
    return 2.0;
}
static double grows(long s) { return s <= 200 ? 2.3 - 0.009 * (double)s : 1.8 + wiggle(s, 0.05); }

static void test_health_learning_run(void **state)
{
    (void)state;
    health_t h;
    health_init(&h, 10);
    assert_int_equal(h.state, HEALTH_OK);
    assert_int_equal(feed(&h, 1, 3000, learning), 0);
    assert_int_equal(h.state, HEALTH_OK);
    /* An evaluation well above chance changes nothing. */
    assert_int_equal(health_eval(&h, 3000, 0.85), 0);
    /* It keeps improving: checkpoints of the last stretch are good. */
    assert_true(health_good_step(&h, 3000) > 2500);
    char buf[512];
    assert_true(health_to_json(&h, buf, sizeof buf) > 0);
    assert_string_equal(buf, "{\"state\":\"ok\"}");
}

static void test_health_first_plateau(void **state)
{
    (void)state;
    /* A slow start: 400 steps at ln 10 (within 0.5%) before it learns. It never left the
     * level, so the uniform rule does not apply (the chance rule judges such a run). */
    health_t h;
    health_init(&h, 10);
    assert_int_equal(feed(&h, 1, 800, plateau), 0);
    assert_int_equal(h.state, HEALTH_OK);
}

static void test_health_dead_network(void **state)
{
    (void)state;
    health_t h;
    health_init(&h, 10);
    long at = feed(&h, 1, 1000, dies);
    /* Back in the band a few steps after 100 (the smoothing), then HEALTH_STRETCH steps. */
    assert_true(at > 100 + HEALTH_STRETCH && at < 100 + HEALTH_STRETCH + 60);
    assert_int_equal(h.state, HEALTH_COLLAPSED);
    assert_int_equal(h.cause, HEALTH_CAUSE_UNIFORM);
    assert_int_equal(h.at_step, at);
    /* Dated from the last improvement, before the spike. */
    assert_true(h.since_step > 60 && h.since_step <= 90);
    assert_int_equal(health_good_step(&h, at), h.since_step);
    /* Once collapsed it stays so, and is not declared twice. */
    assert_int_equal(feed(&h, at + 1, at + 200, learning), 0);
    assert_int_equal(health_eval(&h, at + 200, 0.1), 0);
    char why[320], json[512];
    health_reason(&h, why, sizeof why);
    assert_non_null(strstr(why, "uniform guess"));
    assert_non_null(strstr(why, "ln 10 = 2.3026"));
    assert_true(health_to_json(&h, json, sizeof json) > 0);
    char want[128];
    snprintf(want, sizeof want, "{\"state\":\"collapsed\",\"since_step\":%ld,\"at_step\":%ld,\"reason\":\"",
             h.since_step, at);
    assert_memory_equal(json, want, strlen(want));
    assert_int_equal(health_to_json(&h, json, 40), -1); /* does not fit: said so */
}

static void test_health_hovering_below(void **state)
{
    (void)state;
    health_t h;
    health_init(&h, 10);
    assert_int_equal(feed(&h, 1, 500, hovers), 0);
    assert_int_equal(h.state, HEALTH_OK);
}

static void test_health_grown(void **state)
{
    (void)state;
    health_t h;
    health_init(&h, 10);
    long at = feed(&h, 1, 1000, grows);
    assert_int_equal(h.cause, HEALTH_CAUSE_GROWN);
    /* The smoothed loss is at its best (~0.67, lagging the loss's 0.5) at step 200; at 1.8
     * the smoothing reaches twice that ~18 steps later, then the stretch. */
    assert_true(at > 200 + HEALTH_STRETCH && at < 200 + HEALTH_STRETCH + 40);
    assert_true(h.since_step >= 195 && h.since_step <= 201);
    char why[320];
    health_reason(&h, why, sizeof why);
    assert_non_null(strstr(why, "2 times its best"));
}

static void test_health_not_finite_and_chance(void **state)
{
    (void)state;
    health_t h;
    health_init(&h, 10);
    assert_int_equal(feed(&h, 1, 30, learning), 0);
    assert_int_equal(health_step(&h, 31, NAN), 1);
    assert_int_equal(h.cause, HEALTH_CAUSE_NOT_FINITE);
    assert_int_equal(h.since_step, h.best_step);
    health_init(&h, 10);
    assert_int_equal(health_step(&h, 1, INFINITY), 1);
    assert_int_equal(h.since_step, 0);
    /* Chance: only after HEALTH_STRETCH steps, and only at or below 1.2 / C. */
    health_init(&h, 10);
    assert_int_equal(feed(&h, 1, HEALTH_STRETCH - 1, learning), 0);
    assert_int_equal(health_eval(&h, HEALTH_STRETCH - 1, 0.1), 0);
    assert_int_equal(feed(&h, HEALTH_STRETCH, HEALTH_STRETCH, learning), 0);
    assert_int_equal(health_eval(&h, HEALTH_STRETCH, 0.13), 0);
    assert_int_equal(health_eval(&h, HEALTH_STRETCH, 0.1), 1);
    assert_int_equal(h.cause, HEALTH_CAUSE_CHANCE);
    char why[320];
    health_reason(&h, why, sizeof why);
    char want[128];
    snprintf(want, sizeof want, "test accuracy 0.1000 is at chance (1/10 = 0.1000) after %d steps", HEALTH_STRETCH);
    assert_string_equal(why, want);
    /* a language model's: next-token accuracy over a vocabulary, loss in nats per token */
    h.lm = 1;
    health_reason(&h, why, sizeof why);
    snprintf(want, sizeof want, "next-token accuracy 0.1000 is at chance (1/10 = 0.1000) after %d steps",
             HEALTH_STRETCH);
    assert_string_equal(why, want);
    /* 100 classes: chance is 1%. */
    health_init(&h, 100);
    assert_int_equal(feed(&h, 1, HEALTH_STRETCH, learning), 0);
    assert_int_equal(health_eval(&h, HEALTH_STRETCH, 0.05), 0);
    assert_int_equal(health_eval(&h, HEALTH_STRETCH, 0.011), 1);
}

static void test_health_good_step(void **state)
{
    (void)state;
    health_t h;
    memset(&h, 0, sizeof h); /* a rank that does not judge: every checkpoint is good */
    assert_int_equal(health_good_step(&h, 77), 77);
    health_init(&h, 10);
    assert_int_equal(health_good_step(&h, 5), 5); /* nothing seen yet */
    assert_int_equal(feed(&h, 1, 80, dies), 0);
    long good = health_good_step(&h, 80);
    assert_true(good >= 70 && good <= 80);
    assert_int_equal(feed(&h, 81, 100, dies), 0); /* the spike: no improvement */
    assert_int_equal(health_good_step(&h, 100), good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_learning_run),   cmocka_unit_test(test_health_first_plateau),
        cmocka_unit_test(test_health_dead_network),   cmocka_unit_test(test_health_grown),
        cmocka_unit_test(test_health_hovering_below), cmocka_unit_test(test_health_not_finite_and_chance),
        cmocka_unit_test(test_health_good_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
