/* tests/unit/test_async.c - the asynchronous update rules against hand-computed values
 * (issue 4): DC-ASGD (both variants) and DDC-ASGD compensated gradients on a small
 * vector; DDC-ASGD with tau = 0 equals momentum SGD; DDC-ASGD with lambda0 = 0 equals
 * staleness-aware momentum ASGD; n-softsync's alpha(tau); the compensated momentum
 * (optimizer.async_momentum) on a scripted staleness. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ops.h"
#include "algo_ddc_asgd.h"
#include "ps.h"
#include "spec.h"

#define N 4
static const float G[N] = {0.5f, -1.0f, 2.0f, 0.0f};
static const float W[N] = {1.0f, 2.0f, -1.0f, 0.5f};
static const float WB[N] = {0.8f, 2.5f, -1.0f, 0.0f}; /* w - w_bak = 0.2, -0.5, 0, 0.5 */

static void close_to(float got, double want, double tol)
{
    if (fabs((double)got - want) > tol * fmax(1.0, fabs(want)))
        fail_msg("got %.9g, want %.9g (tol %.1g)", (double)got, want, tol);
}

static void test_dc_constant(void **state)
{
    (void)state;
    float out[N];
    dc_compensate(N, G, W, WB, 0.04f, out);
    /* g + 0.04 * g^2 * (w - w_bak) */
    close_to(out[0], 0.5 + 0.04 * 0.25 * 0.2, 1e-7);
    close_to(out[1], -1.0 + 0.04 * 1.0 * -0.5, 1e-7);
    close_to(out[2], 2.0, 1e-7);
    close_to(out[3], 0.0, 1e-7);
}

static void test_dc_adaptive(void **state)
{
    (void)state;
    float out[N], ms[N] = {1.0f, 0.0f, 0.5f, 0.0f};
    dc_compensate_adaptive(N, G, W, WB, ms, 0.95f, 2.0f, 1e-7f, out);
    /* ms = 0.95 ms + 0.05 g^2 ; out = g + 2/sqrt(ms + 1e-7) * g^2 * (w - w_bak) */
    double ms0 = 0.95 * 1.0 + 0.05 * 0.25, ms1 = 0.05 * 1.0;
    close_to(ms[0], ms0, 1e-6);
    close_to(ms[1], ms1, 1e-6);
    close_to(out[0], 0.5 + 2.0 / sqrt(ms0 + 1e-7) * 0.25 * 0.2, 1e-6);
    close_to(out[1], -1.0 + 2.0 / sqrt(ms1 + 1e-7) * 1.0 * -0.5, 1e-6);
    close_to(out[2], 2.0, 1e-6);
}

static void test_ddc_compensation(void **state)
{
    (void)state;
    float out[N], v[N] = {0};
    ddc_compensate(N, G, W, WB, v, 1.0f, 1.0f, 1e-7f, out);
    for (int i = 0; i < N; i++) {
        double g = G[i], vi = 0.05 * g * g;
        double c = 1.0 / sqrt(vi + 1e-7) * g * g * ((double)W[i] - WB[i]);
        double s = fmin(1.0, 1.0 * fabs(g) / (fabs(c) + 1e-7));
        close_to(v[i], vi, 1e-6);
        close_to(out[i], g + s * c, 1e-5);
    }
    /* the correction is capped at kappa * |g|: element 1 has |c| = 2.24 > |g| = 1 */
    close_to(out[1], -1.0 - 1.0, 1e-5);
}

static job_spec_t spec_with(double lambda0, double momentum)
{
    job_spec_t s;
    spec_defaults(&s);
    s.algorithm.lambda0 = lambda0;
    s.algorithm.kappa = 1.0;
    s.algorithm.gamma = 0.9;
    s.algorithm.eps = 1e-7;
    s.optimizer.momentum = momentum;
    s.optimizer.weight_decay = 0.0;
    return s;
}

/* tau = 0 every step: w_bak = w (no delay), tau_avg stays 0, so eta and mu are not damped
 * and the compensation is 0: momentum SGD, step for step. */
static void test_ddc_tau0_is_momentum_sgd(void **state)
{
    (void)state;
    job_spec_t s = spec_with(1.0, 0.9);
    float w1[N], w2[N], u1[N] = {0}, u2[N] = {0}, v[N] = {0}, scratch[N];
    memcpy(w1, W, sizeof w1);
    memcpy(w2, W, sizeof w2);
    double tau_avg = 0;
    for (int step = 0; step < 10; step++) {
        float g[N];
        for (int i = 0; i < N; i++) g[i] = G[i] * (float)(1 + step % 3) + 0.1f * w1[i];
        float bak[N];
        memcpy(bak, w1, sizeof bak);
        ddc_step(&s, N, w1, u1, bak, v, &tau_avg, g, 1.0f, 0, 0.05f, (float)s.optimizer.momentum, scratch);
        for (int i = 0; i < N; i++) g[i] = G[i] * (float)(1 + step % 3) + 0.1f * w2[i];
        sgd_update(N, w2, g, u2, 0.05f, 0.9f, 0, 0.0f, 1.0f);
    }
    for (int i = 0; i < N; i++) close_to(w1[i], w2[i], 1e-5);
}

/* lambda0 = 0: no compensation; what remains is staleness-aware momentum ASGD:
 * eta_tau = eta*min(1, (tau_avg+1)/(tau+1)), mu_tau = mu*gamma^max(0, tau - tau_avg). */
static void test_ddc_lambda0_is_staleness_aware_asgd(void **state)
{
    (void)state;
    job_spec_t s = spec_with(0.0, 0.9);
    float w[N], u[N] = {0}, v[N] = {0}, scratch[N];
    double ref_w[N], ref_u[N] = {0};
    for (int i = 0; i < N; i++) {
        w[i] = W[i];
        ref_w[i] = W[i];
    }
    double tau_avg = 0, ref_avg = 0;
    const int64_t taus[] = {0, 3, 1, 7, 2, 2, 0, 5};
    for (int k = 0; k < 8; k++) {
        int64_t tau = taus[k];
        ddc_step(&s, N, w, u, WB, v, &tau_avg, G, 1.0f, tau, 0.1f, (float)s.optimizer.momentum, scratch);
        ref_avg = 0.95 * ref_avg + 0.05 * (double)tau;
        double eta = 0.1 * fmin(1.0, (ref_avg + 1) / ((double)tau + 1));
        double mu = 0.9 * pow(0.9, fmax(0.0, (double)tau - ref_avg));
        for (int i = 0; i < N; i++) {
            ref_u[i] = mu * ref_u[i] - eta * G[i];
            ref_w[i] += ref_u[i];
        }
    }
    close_to((float)tau_avg, ref_avg, 1e-6);
    for (int i = 0; i < N; i++) close_to(w[i], ref_w[i], 1e-5);
}

/* optimizer.clip_norm: DDC-ASGD clips scale * g_hat (the compensated gradient) to the
 * norm, as the other rules clip theirs: the step equals an unclipped step whose scale
 * is reduced by clip / |scale * g_hat|. */
static void test_ddc_clip_norm(void **state)
{
    (void)state;
    job_spec_t s = spec_with(1.0, 0.9);
    float w1[N], w2[N], u1[N] = {0}, u2[N] = {0}, v1[N] = {0}, v2[N] = {0}, vh[N] = {0};
    float scratch[N], ghat[N];
    memcpy(w1, W, sizeof w1);
    memcpy(w2, W, sizeof w2);
    ddc_compensate(N, G, W, WB, vh, 1.0f, 1.0f, 1e-7f, ghat);
    double norm = 0;
    for (int i = 0; i < N; i++) norm += (double)ghat[i] * ghat[i];
    norm = 2.0 * sqrt(norm); /* scale 2 */
    assert_true(norm > 0.5);
    double tau_avg1 = 0, tau_avg2 = 0;
    s.optimizer.clip_norm = 0.5;
    ddc_step(&s, N, w1, u1, WB, v1, &tau_avg1, G, 2.0f, 0, 0.1f, (float)s.optimizer.momentum, scratch);
    s.optimizer.clip_norm = 0;
    ddc_step(&s, N, w2, u2, WB, v2, &tau_avg2, G, (float)(2.0 * 0.5 / norm), 0, 0.1f, (float)s.optimizer.momentum,
             scratch);
    for (int i = 0; i < N; i++) close_to(w1[i], w2[i], 1e-6);
    /* a gradient already within the norm is left alone */
    memcpy(w1, W, sizeof w1);
    memcpy(w2, W, sizeof w2);
    memset(u1, 0, sizeof u1);
    memset(u2, 0, sizeof u2);
    memset(v1, 0, sizeof v1);
    memset(v2, 0, sizeof v2);
    tau_avg1 = tau_avg2 = 0;
    s.optimizer.clip_norm = 100;
    ddc_step(&s, N, w1, u1, WB, v1, &tau_avg1, G, 2.0f, 0, 0.1f, (float)s.optimizer.momentum, scratch);
    s.optimizer.clip_norm = 0;
    ddc_step(&s, N, w2, u2, WB, v2, &tau_avg2, G, 2.0f, 0, 0.1f, (float)s.optimizer.momentum, scratch);
    for (int i = 0; i < N; i++) close_to(w1[i], w2[i], 0);
}

static void test_softsync_alpha(void **state)
{
    (void)state;
    close_to(ps_softsync_alpha(0.1f, 0), 0.1, 1e-7);
    close_to(ps_softsync_alpha(0.1f, 1), 0.1, 1e-7);
    close_to(ps_softsync_alpha(0.1f, 4), 0.025, 1e-7);
}

/* optimizer.async_momentum "compensated" (ps.h, docs/JOB_SPEC.md): 1 - (1 - mu)(1 + tau),
 * clamped at 0, so that (1 - explicit)(1 - implicit) = 1 - mu with implicit = tau / (1 + tau). */
static void test_compensated_momentum(void **state)
{
    (void)state;
    close_to(ps_compensated_momentum(0.9, 0), 0.9, 1e-7);  /* no staleness: as given */
    close_to(ps_compensated_momentum(0.9, -1), 0.9, 1e-7); /* nothing measured */
    close_to(ps_compensated_momentum(0.9, 2), 0.7, 1e-6);  /* 3 equal workers: 1 - 1/3 implicit */
    close_to(ps_compensated_momentum(0.99, 3), 0.96, 1e-6);
    close_to(ps_compensated_momentum(0.9, 9), 0.0, 1e-7);  /* all of it implicit */
    close_to(ps_compensated_momentum(0.9, 20), 0.0, 1e-7); /* clamped, never negative */
    close_to(ps_compensated_momentum(0.5, 2), 0.0, 1e-7);
    close_to(ps_compensated_momentum(0.5, 0.5), 0.25, 1e-7);
    close_to(ps_compensated_momentum(0, 3), 0.0, 1e-7);
    /* The total relation holds wherever nothing is clamped. */
    for (double tau = 0; tau < 9; tau += 0.25) {
        double e = ps_compensated_momentum(0.9, tau), imp = tau / (1 + tau);
        close_to((float)((1 - e) * (1 - imp)), 0.1, 1e-5);
    }
    /* The parameter server's smoothing (ps_tau_smooth) on a scripted staleness: prior N - 1 = 2 for
     * three workers, then an epoch start of 0, 1, 2 and round-robin 2s; the momentum it
     * applies after each update. */
    double t = 2;
    const int taus[] = {0, 1, 2, 2, 2, 2};
    for (size_t i = 0; i < sizeof taus / sizeof *taus; i++) t = ps_tau_smooth(t, taus[i]);
    close_to((float)t, 1.88189659375, 1e-6); /* 1.9, 1.855, 1.86225, 1.8691375, 1.875680625 */
    close_to(ps_compensated_momentum(0.9, t), 1 - 0.1 * (1 + 1.88189659375), 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dc_constant),
        cmocka_unit_test(test_dc_adaptive),
        cmocka_unit_test(test_ddc_compensation),
        cmocka_unit_test(test_ddc_tau0_is_momentum_sgd),
        cmocka_unit_test(test_ddc_lambda0_is_staleness_aware_asgd),
        cmocka_unit_test(test_ddc_clip_norm),
        cmocka_unit_test(test_softsync_alpha),
        cmocka_unit_test(test_compensated_momentum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
