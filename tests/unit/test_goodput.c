/* tests/unit/test_goodput.c - the gradient-noise-scale estimator (common/gns.h) on synthetic
 * gradients with a known noise scale, and the goodput planner (common/goodput.h) on
 * scripted node models: the split, the batch it picks as the noise scale grows, leaving
 * out a node that lowers goodput, hysteresis, AdaptDL's equal-nodes model, the fit. And
 * the worker's reports of the estimator's ceiling (worker/adaptive.c, issue 42). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive.h"
#include "gns.h"
#include "goodput.h"
#include "metrics.h"
#include "rng.h"

/* ---- the estimator ------------------------------------------------------------------- */

#define DIM 1000

/* One step of n workers with batches b[i] on a problem whose true gradient G has |G|^2 = g2
 * and whose per-sample gradient has covariance s2 I (tr(Sigma) = DIM s2, so phi = DIM s2 / g2):
 * worker i's mean gradient is G + sqrt(s2 / b_i) z. Fills sum(b_i |g_i|^2) and |g|^2 of
 * the batch-weighted mean, and the unweighted mean of |g_i|^2 (what an estimator that
 * ignores unequal batches would use). */
static void synthetic_step(rng_t *r, const int *b, int n, double g2, double s2, double *local_sum, double *total_sqr,
                           double *plain_mean)
{
    static double mean[DIM];
    const double g = sqrt(g2 / DIM);
    double B = 0;
    for (int i = 0; i < n; i++) B += b[i];
    memset(mean, 0, sizeof mean);
    *local_sum = 0;
    *plain_mean = 0;
    for (int i = 0; i < n; i++) {
        double sq = 0, sd = sqrt(s2 / b[i]);
        for (int k = 0; k < DIM; k++) {
            double x = g + sd * rng_normal(r);
            sq += x * x;
            mean[k] += b[i] * x / B;
        }
        *local_sum += b[i] * sq;
        *plain_mean += sq / n;
    }
    *total_sqr = 0;
    for (int k = 0; k < DIM; k++) *total_sqr += mean[k] * mean[k];
}

/* Unequal batches (a dynamic-batching plan over uneven nodes): the weighted estimator
 * finds tr(Sigma) and |G|^2 on average, and its smoothed phi is within 20%; the same
 * figures combined as if the batches were equal miss by far more, so the weighting is
 * what this checks. */
static void test_gns_unequal_batches(void **state)
{
    (void)state;
    const int b[] = {64, 64, 32, 32, 16, 8, 4, 2};
    const int n = 8;
    const double phi = 400, s2 = phi / DIM;
    rng_t r;
    rng_seed(&r, 7);
    gns_t avg;
    gns_reset(&avg);
    double trace = 0, g2 = 0, naive = 0;
    const int steps = 2000;
    int B = 0;
    for (int i = 0; i < n; i++) B += b[i];
    for (int s = 0; s < steps; s++) {
        double local, total, plain;
        synthetic_step(&r, b, n, 1.0, s2, &local, &total, &plain);
        gns_sample_t x;
        assert_int_equal(gns_sample(local, total, B, n, &x), 0);
        trace += x.trace / steps;
        g2 += x.g2 / steps;
        gns_update(&avg, &x, 1.0);
        /* equal-batch formula on the plain mean: B (mean |g_i|^2 - |g|^2) / (n - 1) */
        naive += B * (plain - total) / (n - 1) / steps;
    }
    assert_true(fabs(trace - phi) < 0.05 * phi);
    assert_true(fabs(g2 - 1.0) < 0.1);
    double est = gns_noise_scale(&avg);
    assert_true(isfinite(est));
    assert_true(fabs(est - phi) < 0.2 * phi);
    assert_true(fabs(naive - phi) > 0.5 * phi);
}

/* |G|^2 falling as training starts (20x in the first ~150 steps, as LeNet-5's does in
 * docs/RESULTS.md), tr(Sigma) steady: 300 steps in, the smoothed phi must be within 20%
 * of the noise scale of the last 100 steps (their mean tr(Sigma) over their mean |G|^2,
 * what bench/gns_check.sh compares with). An average whose tail still holds the first
 * steps' large |G|^2 is far below it: GNS_DECAY 0.99 (mean age 99 steps) gives 0.59 of
 * it here, 0.98 (mean age 50 steps, the middle of that window) 0.91. */
static void test_gns_falling_gradient(void **state)
{
    (void)state;
    const int b[] = {24, 24, 23, 24, 12, 12, 6, 3};
    const double trace = 400, s2 = trace / DIM;
    rng_t r;
    rng_seed(&r, 5);
    gns_t avg;
    gns_reset(&avg);
    const int steps = 300, window = 100;
    double recent_g2 = 0;
    for (int s = 0; s < steps; s++) {
        double g2 = 1 + 19 * exp(-s / 50.0), local, total, plain;
        synthetic_step(&r, b, 8, g2, s2, &local, &total, &plain);
        gns_sample_t x;
        assert_int_equal(gns_sample(local, total, 128, 8, &x), 0);
        gns_update(&avg, &x, 1.0);
        if (s >= steps - window) recent_g2 += g2 / window;
    }
    double truth = trace / recent_g2, est = gns_noise_scale(&avg);
    assert_true(isfinite(est));
    assert_true(fabs(est - truth) < 0.2 * truth);
}

/* Equal batches: the same estimator is AdaptDL's; a larger noise scale is found larger. */
static void test_gns_equal_batches(void **state)
{
    (void)state;
    const int b[] = {32, 32, 32, 32};
    rng_t r;
    rng_seed(&r, 11);
    double found[2];
    const double phis[2] = {50, 2000};
    for (int p = 0; p < 2; p++) {
        gns_t avg;
        gns_reset(&avg);
        for (int s = 0; s < 1500; s++) {
            double local, total, plain;
            synthetic_step(&r, b, 4, 1.0, phis[p] / DIM, &local, &total, &plain);
            gns_sample_t x;
            assert_int_equal(gns_sample(local, total, 128, 4, &x), 0);
            gns_update(&avg, &x, 1.0);
        }
        found[p] = gns_noise_scale(&avg);
        assert_true(fabs(found[p] - phis[p]) < 0.25 * phis[p]);
    }
    assert_true(found[1] > 10 * found[0]);
}

static void test_gns_edges(void **state)
{
    (void)state;
    gns_sample_t x = {0, 0};
    assert_int_equal(gns_sample(1, 1, 64, 1, &x), -1); /* one gradient: nothing to compare */
    assert_int_equal(gns_sample(NAN, 1, 64, 2, &x), -1);
    assert_int_equal(gns_sample(1, 1, 1, 2, &x), -1); /* B must exceed n - 1 */
    gns_t e;
    gns_reset(&e);
    assert_true(isnan(gns_noise_scale(&e))); /* nothing measured: missing, not 0 */
    gns_sample_t s = {.g2 = 1, .trace = 100};
    for (int i = 0; i < GNS_MIN_SAMPLES - 1; i++) gns_update(&e, &s, 1);
    assert_true(isnan(gns_noise_scale(&e)));
    gns_update(&e, &s, 1);
    /* bias-corrected: constant inputs give the constant back, not a fraction of it */
    assert_true(fabs(gns_noise_scale(&e) - 100) < 1e-9);
    gns_sample_t neg = {.g2 = -50, .trace = 100};
    for (int i = 0; i < 2000; i++) gns_update(&e, &neg, 1);
    assert_true(gns_noise_scale(&e) == GNS_PHI_MAX);
    /* the ceiling steers the planner but is reported as not measured, and said "beyond" */
    assert_true(gns_beyond(gns_noise_scale(&e)) && isnan(gns_reported(gns_noise_scale(&e))));
    assert_true(!gns_beyond(412.5) && gns_reported(412.5) == 412.5 && !gns_beyond(NAN) && isnan(gns_reported(NAN)));
    /* efficiency and gain */
    assert_true(fabs(gns_efficiency(100, 64, 64) - 1) < 1e-12);
    assert_true(fabs(gns_efficiency(100, 64, 164) - 164.0 / 264.0) < 1e-12);
    assert_true(fabs(gns_gain(100, 64, 128) - 2 * 164.0 / 228.0) < 1e-12);
    assert_true(gns_gain(1e9, 64, 128) > 1.99 && gns_gain(1e9, 64, 128) <= 2.0);
    assert_true(fabs(gns_gain(0, 64, 128) - 1) < 1e-12);
    assert_true(fabs(gns_gain(NAN, 64, 128) - 1) < 1e-12);
    assert_true(fabs(gns_efficiency(NAN, 64, 128) - 0.5) < 1e-12);
}

/* The worker's reports at the estimator's ceiling (issue 42): the metrics record's
 * noise_scale is NAN (null in the record, Redis and the API), the summary's null with
 * noise_scale_beyond = GNS_PHI_MAX; a measured phi is reported as it is. */
static void test_gns_ceiling_reported(void **state)
{
    (void)state;
    static worker_t w;
    adaptive_t ad;
    memset(&ad, 0, sizeof ad);
    w.adapt = &ad;
    metrics_record_t r;
    for (int k = 0; k < 2; k++) {
        ad.phi = k ? 412.5 : GNS_PHI_MAX;
        memset(&r, 0, sizeof r);
        adaptive_fill_record(&w, &r);
        json_t *sum = json_object();
        adaptive_summary(&w, sum);
        json_t *phi = json_object_get(sum, "noise_scale"), *beyond = json_object_get(sum, "noise_scale_beyond");
        if (k) {
            assert_true(r.noise_scale == 412.5 && json_number_value(phi) == 412.5 && !beyond);
        } else {
            assert_true(isnan(r.noise_scale) && json_is_null(phi) && json_number_value(beyond) == GNS_PHI_MAX);
        }
        json_decref(sum);
    }
}

/* ---- the planner --------------------------------------------------------------------- */

static int total(const int *b, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) s += b[i];
    return s;
}

static goodput_in_t scripted(int n, const double *a, const double *c, double fixed, double phi, int b0, int maxg)
{
    goodput_in_t in = {.n = n,
                       .a = a,
                       .c = c,
                       .fixed_s = fixed,
                       .phi = phi,
                       .b0 = b0,
                       .max_global = maxg,
                       .min_b = 1,
                       .max_b = 4096,
                       .pinned = 0,
                       .equal = 0};
    return in;
}

/* Nodes at 1000, 1000, 500 and 250 samples/s with no noise scale yet: the spec's batch,
 * split so every node's compute ends together. */
static void test_goodput_split_by_speed(void **state)
{
    (void)state;
    const double a[] = {0, 0, 0, 0}, c[] = {0.001, 0.001, 0.002, 0.004};
    goodput_in_t in = scripted(4, a, c, 0.01, NAN, 110, 1000);
    int out[4];
    goodput_eval_t ev;
    assert_int_equal(goodput_plan(&in, out, &ev), 0);
    assert_int_equal(total(out, 4), 110);
    assert_int_equal(ev.global, 110);
    assert_int_equal(ev.active, 4);
    /* ideal 40, 40, 20, 10 */
    assert_int_equal(out[0], 40);
    assert_int_equal(out[1], 40);
    assert_int_equal(out[2], 20);
    assert_int_equal(out[3], 10);
    assert_true(fabs(ev.step_s - 0.05) < 1e-9);
    assert_true(fabs(ev.efficiency - 1) < 1e-12 && fabs(ev.gain - 1) < 1e-12);
}

/* With the collective a large fixed cost, the chosen batch grows with the noise scale:
 * never below B0, never above max_global_batch, non-decreasing in phi, and the spec's
 * batch while phi is small. */
static void test_goodput_batch_grows_with_noise(void **state)
{
    (void)state;
    const double a[] = {0, 0, 0, 0}, c[] = {0.001, 0.001, 0.002, 0.004};
    const double phis[] = {1, 10, 100, 1000, 10000, 1e6};
    int prev = 0, chosen[6];
    for (int p = 0; p < 6; p++) {
        goodput_in_t in = scripted(4, a, c, 0.05, phis[p], 64, 2048);
        int out[4];
        goodput_eval_t ev;
        assert_int_equal(goodput_plan(&in, out, &ev), 0);
        chosen[p] = ev.global;
        assert_true(ev.global >= 64 && ev.global <= 2048);
        assert_true(ev.global >= prev);
        prev = ev.global;
        /* the gain is B/B0 x E(B), between 1 and B/B0 */
        assert_true(ev.gain >= 1 && ev.gain <= ev.global / 64.0 + 1e-9);
    }
    assert_true(chosen[0] < 100);
    assert_int_equal(chosen[5], 2048);
    assert_true(chosen[3] > 2 * chosen[0]);
}

/* A node with a per-step cost of its own (0.5 s, as a far slower machine's fixed
 * overhead) lowers goodput: it is left out with a reason; the same node without the
 * overhead takes part; as the pinned node (rank 0) it takes part whatever it costs. */
static void test_goodput_leaves_out_node(void **state)
{
    (void)state;
    double a[] = {0, 0, 0, 0.5};
    const double c[] = {0.001, 0.001, 0.001, 0.001};
    goodput_in_t in = scripted(4, a, c, 0.01, 500, 120, 1200);
    int out[4];
    goodput_eval_t ev;
    assert_int_equal(goodput_plan(&in, out, &ev), 0);
    assert_int_equal(out[3], 0);
    assert_int_equal(ev.active, 3);
    assert_true(out[0] > 0 && out[1] > 0 && out[2] > 0);
    char why[256];
    assert_int_equal(goodput_reason(&in, out, 3, why, sizeof why), 0);
    assert_non_null(strstr(why, "1000 samples/s"));
    assert_non_null(strstr(why, "without it"));
    assert_int_equal(goodput_reason(&in, out, 0, why, sizeof why), -1); /* takes part */

    a[3] = 0;
    assert_int_equal(goodput_plan(&in, out, &ev), 0);
    assert_int_equal(ev.active, 4);

    double a0[] = {0.5, 0, 0, 0};
    goodput_in_t p = scripted(4, a0, c, 0.01, 500, 120, 1200);
    assert_int_equal(goodput_plan(&p, out, &ev), 0);
    assert_true(out[0] > 0);
}

/* A node so slow that even the smallest batch it may take (min_b) makes it the step's
 * straggler is left out; the equal-nodes model (AdaptDL's) keeps every node and splits
 * evenly, so it pays for the straggler. */
static void test_goodput_slow_node_and_equal_model(void **state)
{
    (void)state;
    const double a[] = {0, 0, 0, 0}, c[] = {0.001, 0.001, 0.001, 0.1};
    goodput_in_t in = scripted(4, a, c, 0.01, 200, 64, 512);
    in.min_b = 8;
    int out[4];
    goodput_eval_t ev, eq;
    assert_int_equal(goodput_plan(&in, out, &ev), 0);
    assert_int_equal(out[3], 0);
    in.equal = 1;
    assert_int_equal(goodput_plan(&in, out, &eq), 0);
    assert_int_equal(eq.active, 4);
    for (int i = 1; i < 4; i++) assert_true(abs(out[i] - out[0]) <= 1);
    assert_true(ev.goodput > 2 * eq.goodput);
}

/* The plan in force stays unless the best one beats it by more than the hysteresis; a
 * plan outside the bounds is always replaced. */
static void test_goodput_hysteresis(void **state)
{
    (void)state;
    const double a[] = {0, 0, 0, 0}, c[] = {0.001, 0.001, 0.002, 0.004};
    goodput_in_t in = scripted(4, a, c, 0.05, 1000, 64, 2048);
    int best[4], out[4];
    goodput_eval_t ev, e2;
    assert_int_equal(goodput_plan(&in, best, &ev), 0);
    /* one sample moved from the fastest node to the slowest: a few % worse at most */
    int near[4] = {best[0] - 1, best[1], best[2], best[3] + 1};
    assert_int_equal(goodput_evaluate(&in, near, &e2), 0);
    assert_true(e2.goodput > ev.goodput / (1 + GOODPUT_HYSTERESIS));
    assert_int_equal(goodput_replan(&in, near, out, &e2), 0);
    assert_memory_equal(out, near, sizeof near);
    /* the spec's batch, evenly: far worse with phi 1000 and a 50 ms collective */
    int even[4] = {16, 16, 16, 16};
    assert_int_equal(goodput_replan(&in, even, out, &e2), 1);
    assert_memory_equal(out, best, sizeof best);
    /* below B0 (a broken plan): replaced */
    int small[4] = {1, 1, 1, 1};
    assert_int_equal(goodput_replan(&in, small, out, &e2), 1);
}

static void test_goodput_invalid(void **state)
{
    (void)state;
    const double a[] = {0, 0}, c[] = {0.001, 0.001}, bad[] = {0.001, 0};
    int out[2];
    goodput_eval_t ev;
    goodput_in_t in = scripted(2, a, c, 0.01, 100, 64, 128);
    in.n = 0;
    assert_int_equal(goodput_plan(&in, out, &ev), -1);
    in = scripted(2, a, bad, 0.01, 100, 64, 128);
    assert_int_equal(goodput_plan(&in, out, &ev), -1);
    in = scripted(2, a, c, NAN, 100, 64, 128);
    assert_int_equal(goodput_plan(&in, out, &ev), -1);
    in = scripted(2, a, c, 0.01, 100, 64, 32); /* max_global below B0 */
    assert_int_equal(goodput_plan(&in, out, &ev), -1);
    in = scripted(2, a, c, 0.01, 100, 64, 128);
    in.max_b = 16; /* two nodes cannot hold 64 */
    assert_int_equal(goodput_plan(&in, out, &ev), -1);
}

static void test_goodput_fit(void **state)
{
    (void)state;
    goodput_fit_t f;
    memset(&f, 0, sizeof f);
    double a, c;
    assert_int_equal(goodput_fit_get(&f, &a, &c), -1);
    /* one batch size only: through the origin */
    for (int i = 0; i < 10; i++) goodput_fit_add(&f, 32, 0.02 + 0.001 * 32);
    assert_int_equal(goodput_fit_get(&f, &a, &c), 0);
    assert_true(a == 0);
    assert_true(fabs(c - (0.02 + 0.032) / 32) < 1e-9);
    /* two sizes: t = 0.02 + 0.001 b exactly */
    for (int i = 0; i < 10; i++) goodput_fit_add(&f, 64, 0.02 + 0.001 * 64);
    assert_int_equal(goodput_fit_get(&f, &a, &c), 0);
    assert_true(fabs(a - 0.02) < 1e-9);
    assert_true(fabs(c - 0.001) < 1e-9);
    /* ignored observations */
    goodput_fit_add(&f, 0, 1);
    goodput_fit_add(&f, 16, NAN);
    goodput_fit_add(&f, 16, -1);
    assert_int_equal(goodput_fit_get(&f, &a, &c), 0);
    assert_true(fabs(a - 0.02) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gns_unequal_batches),
        cmocka_unit_test(test_gns_equal_batches),
        cmocka_unit_test(test_gns_falling_gradient),
        cmocka_unit_test(test_gns_edges),
        cmocka_unit_test(test_gns_ceiling_reported),
        cmocka_unit_test(test_goodput_split_by_speed),
        cmocka_unit_test(test_goodput_batch_grows_with_noise),
        cmocka_unit_test(test_goodput_leaves_out_node),
        cmocka_unit_test(test_goodput_slow_node_and_equal_model),
        cmocka_unit_test(test_goodput_hysteresis),
        cmocka_unit_test(test_goodput_invalid),
        cmocka_unit_test(test_goodput_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
