/* kernels/cpu/async_ops.c - the delay compensations of DC-ASGD and DDC-ASGD and DDC's
 * momentum step (ALGORITHMS.md sections 4 and 5). Elementwise, so written as single
 * loops the compiler vectorises; no FMA contraction is relied on. */
#include <math.h>

#include "ops.h"

__attribute__((target_clones("avx2", "default"))) void dc_compensate(size_t n, const float *g, const float *w,
                                                                     const float *w_bak, float lambda, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        out[i] = gi + lambda * gi * gi * (w[i] - w_bak[i]);
    }
}

__attribute__((target_clones("avx2", "default"))) void dc_compensate_adaptive(size_t n, const float *g, const float *w,
                                                                              const float *w_bak, float *ms, float m,
                                                                              float lambda0, float eps, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float msi = m * ms[i] + (1.0f - m) * gi * gi;
        ms[i] = msi;
        out[i] = gi + lambda0 / sqrtf(msi + eps) * gi * gi * (w[i] - w_bak[i]);
    }
}

__attribute__((target_clones("avx2", "default"))) void ddc_compensate(size_t n, const float *g, const float *w,
                                                                      const float *w_bak, float *v, float lambda0,
                                                                      float kappa, float eps, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float vi = 0.95f * v[i] + 0.05f * gi * gi;
        v[i] = vi;
        float c = lambda0 / sqrtf(vi + eps) * gi * gi * (w[i] - w_bak[i]);
        float s = kappa * fabsf(gi) / (fabsf(c) + eps);
        if (s > 1.0f) s = 1.0f;
        out[i] = gi + s * c;
    }
}

__attribute__((target_clones("avx2", "default"))) void
momentum_step(size_t n, float *w, float *u, const float *g, float grad_scale, float eta, float mu, float weight_decay)
{
    for (size_t i = 0; i < n; i++) {
        float ui = mu * u[i] - eta * (grad_scale * g[i] + weight_decay * w[i]);
        u[i] = ui;
        w[i] = w[i] + ui;
    }
}
