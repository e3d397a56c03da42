/* kernels/cpu/dropout.c - training-time (inverted) dropout with a stateless mask.
 *
 * The mask is a function of (key, element index) (dropout_keep in ops.h), so the backward
 * regenerates it instead of storing it, and the CUDA twin, which includes the same inline
 * hash, draws the same mask. The scale is PyTorch's: 1.0f / (1.0f - p) in float, and a
 * kept element is inp * scale (one rounding), so a kept value equals PyTorch's for the
 * same p. Stochastic depth is the same with one draw per sample (the draw's index is the
 * sample's, not the element's).
 */
#include "ops.h"

/* 1 / (1 - p), or 0 when everything is dropped (p >= 1: no finite scale exists). */
static float keep_scale(float p) { return p >= 1.0f ? 0.0f : 1.0f / (1.0f - p); }

void dropout_forward(size_t n, float p, uint64_t key, const float *inp, float *out)
{
    const uint32_t t = dropout_threshold(p);
    const float scale = keep_scale(p);
    if (t == 0) {
        /* p = 0: the identity (no hashing) */
        if (out != inp)
            for (size_t i = 0; i < n; i++) out[i] = inp[i];
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = dropout_keep(key, i, t) ? inp[i] * scale : 0.0f;
}

void stochastic_depth_forward(size_t n, size_t per, float p, uint64_t key, const float *inp, float *out)
{
    const uint32_t t = dropout_threshold(p);
    const float scale = keep_scale(p);
    if (t == 0 || per == 0) {
        dropout_forward(n, 0.0f, key, inp, out);
        return;
    }
    for (size_t b = 0; b * per < n; b++) {
        const int keep = dropout_keep(key, b, t);
        for (size_t i = b * per; i < (b + 1) * per && i < n; i++) out[i] = keep ? inp[i] * scale : 0.0f;
    }
}

/* The backwards: dinp += the term, or with set dinp = the term + 0.0f (what += gives into a
 * zeroed dinp, bit for bit: +0 for -0), without reading dinp. */
static void dropout_grad(size_t n, float p, uint64_t key, const float *dout, float *dinp, int set)
{
    if (!dinp) return;
    const uint32_t t = dropout_threshold(p);
    const float scale = keep_scale(p);
    if (t == 0) {
        if (set)
            for (size_t i = 0; i < n; i++) dinp[i] = dout[i] + 0.0f;
        else
            for (size_t i = 0; i < n; i++) dinp[i] += dout[i];
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = dropout_keep(key, i, t) ? dout[i] * scale : 0.0f;
        dinp[i] = set ? v + 0.0f : dinp[i] + v;
    }
}

static void sdepth_grad(size_t n, size_t per, float p, uint64_t key, const float *dout, float *dinp, int set)
{
    if (!dinp) return;
    const uint32_t t = dropout_threshold(p);
    const float scale = keep_scale(p);
    if (t == 0 || per == 0) {
        dropout_grad(n, 0.0f, key, dout, dinp, set);
        return;
    }
    for (size_t b = 0; b * per < n; b++) {
        const int keep = dropout_keep(key, b, t);
        for (size_t i = b * per; i < (b + 1) * per && i < n; i++) {
            const float v = keep ? dout[i] * scale : 0.0f;
            dinp[i] = set ? v + 0.0f : dinp[i] + v;
        }
    }
}

void dropout_backward(size_t n, float p, uint64_t key, const float *dout, float *dinp)
{
    dropout_grad(n, p, key, dout, dinp, 0);
}

void dropout_backward_set(size_t n, float p, uint64_t key, const float *dout, float *dinp)
{
    dropout_grad(n, p, key, dout, dinp, 1);
}

void stochastic_depth_backward(size_t n, size_t per, float p, uint64_t key, const float *dout, float *dinp)
{
    sdepth_grad(n, per, p, key, dout, dinp, 0);
}

void stochastic_depth_backward_set(size_t n, size_t per, float p, uint64_t key, const float *dout, float *dinp)
{
    sdepth_grad(n, per, p, key, dout, dinp, 1);
}
