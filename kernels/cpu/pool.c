/* kernels/cpu/pool.c - max and average pooling, floor or ceil output size.
 *
 * Every window is clamped to the input once (window() below), so the
 * inner loops run over in-bounds elements only and padding never enters a max or an
 * average (count_include_pad = false).
 */
#include <string.h>

#include "ops.h"

static int pooled_size(int n, int K, int stride, int pad, int ceil_mode)
{
    int span = n + 2 * pad - K;
    if (span < 0) return 0;
    int out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
    /* In ceil mode the last window must start inside the input or its left padding,
     * otherwise it would cover padding only (PyTorch and Caffe drop it). */
    if (ceil_mode && (out - 1) * stride >= n + pad) out--;
    return out;
}

int pool2d_init(pool2d_desc_t *d, int C, int H, int W, int K, int stride, int pad, int ceil_mode)
{
    memset(d, 0, sizeof *d);
    /* pad <= K/2 (PyTorch's rule) guarantees every window overlaps the input, so no
     * max is taken over nothing and no average divides by zero. */
    if (C <= 0 || H <= 0 || W <= 0 || K <= 0 || stride <= 0 || pad < 0 || 2 * pad > K) return -1;
    d->C = C;
    d->H = H;
    d->W = W;
    d->K = K;
    d->stride = stride;
    d->pad = pad;
    d->ceil_mode = ceil_mode ? 1 : 0;
    d->OH = pooled_size(H, K, stride, pad, d->ceil_mode);
    d->OW = pooled_size(W, K, stride, pad, d->ceil_mode);
    return d->OH > 0 && d->OW > 0 ? 0 : -1;
}

/* Window of output index o along a dimension of length n, clamped to [0, n). */
static void window(int o, int K, int stride, int pad, int n, int *lo, int *hi)
{
    int a = o * stride - pad, b = a + K;
    *lo = a < 0 ? 0 : a;
    *hi = b > n ? n : b;
}

/* The 2x2, stride 2, unpadded windows of LeNet-style nets, all inside the input. The
 * general loop below spends ~10 instructions per input element on window bookkeeping and
 * data-dependent selects (17-23% of a LeNet-5 step); here eight outputs at a time are
 * computed with vector selects (gcc vector extensions: AVX in the avx2 clone, SSE pairs
 * otherwise). The selects keep the general loop's rule exactly: the first maximum in
 * row-major order wins, and a NaN wins and stays. */
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));

/* Macros, not functions: a function passing AVX-sized vectors by value would have a
 * different ABI in the default (non-AVX) clone. */
#define TAKE(v, m) (((v) > (m)) | (((v) != (v)) & ((m) == (m))))
#define SEL_F(k, a, b) ((v8f)(((v8i)(a) & (k)) | ((v8i)(b) & ~(k))))
#define SEL_F4(k, a, b) ((v4f)(((v4i)(a) & (k)) | ((v4i)(b) & ~(k))))
#define SEL_I(k, a, b) (((a) & (k)) | ((b) & ~(k)))

__attribute__((target_clones("avx2", "default"))) static void maxpool_2x2(size_t planes, int H, int W, int OH, int OW,
                                                                          const float *restrict inp,
                                                                          float *restrict out, int32_t *restrict argmax)
{
    const v8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = even + 1;
    const v4i even4 = {0, 2, 4, 6}, odd4 = even4 + 1;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * H * W;
        for (int oh = 0; oh < OH; oh++) {
            const float *r0 = x + (size_t)(2 * oh) * W, *r1 = r0 + W;
            float *y = out + (pl * OH + oh) * OW;
            int32_t *am = argmax + (pl * OH + oh) * OW;
            const int base = 2 * oh * W;
            /* Blocks of 8 outputs, then one more block of 8 (or 4) ending at OW that may
             * overlap the previous one: recomputing an output writes the same values, and
             * the scalar loop below only runs for rows of fewer than 4 outputs (the tail
             * was most of this function's time at LeNet's OW = 14 and 5). */
            int ow = 0;
            for (;;) {
                if (ow + 8 > OW) {
                    if (OW < 8 || ow >= OW) break;
                    ow = OW - 8;
                }
                v8f a, b, c, d;
                memcpy(&a, r0 + 2 * ow, sizeof a);
                memcpy(&b, r0 + 2 * ow + 8, sizeof b);
                memcpy(&c, r1 + 2 * ow, sizeof c);
                memcpy(&d, r1 + 2 * ow + 8, sizeof d);
                v8f tl = __builtin_shuffle(a, b, even), tr = __builtin_shuffle(a, b, odd);
                v8f bl = __builtin_shuffle(c, d, even), br = __builtin_shuffle(c, d, odd);
                v8i idx = base + 2 * ow + even;
                v8f m = tl;
                v8i best = idx, k;
                k = TAKE(tr, m);
                m = SEL_F(k, tr, m);
                best = SEL_I(k, idx + 1, best);
                k = TAKE(bl, m);
                m = SEL_F(k, bl, m);
                best = SEL_I(k, idx + W, best);
                k = TAKE(br, m);
                m = SEL_F(k, br, m);
                best = SEL_I(k, idx + W + 1, best);
                memcpy(y + ow, &m, sizeof m);
                memcpy(am + ow, &best, sizeof best);
                if (ow + 8 >= OW) {
                    ow = OW;
                    break;
                }
                ow += 8;
            }
            for (int o4 = 0; OW >= 4 && OW < 8 && o4 < OW; o4 += 4) {
                if (o4 + 4 > OW) o4 = OW - 4;
                v4f a, b, c, d;
                memcpy(&a, r0 + 2 * o4, sizeof a);
                memcpy(&b, r0 + 2 * o4 + 4, sizeof b);
                memcpy(&c, r1 + 2 * o4, sizeof c);
                memcpy(&d, r1 + 2 * o4 + 4, sizeof d);
                v4f tl = __builtin_shuffle(a, b, even4), tr = __builtin_shuffle(a, b, odd4);
                v4f bl = __builtin_shuffle(c, d, even4), br = __builtin_shuffle(c, d, odd4);
                v4i idx = base + 2 * o4 + even4;
                v4f m = tl;
                v4i best = idx, k;
                k = TAKE(tr, m);
                m = SEL_F4(k, tr, m);
                best = SEL_I(k, idx + 1, best);
                k = TAKE(bl, m);
                m = SEL_F4(k, bl, m);
                best = SEL_I(k, idx + W, best);
                k = TAKE(br, m);
                m = SEL_F4(k, br, m);
                best = SEL_I(k, idx + W + 1, best);
                memcpy(y + o4, &m, sizeof m);
                memcpy(am + o4, &best, sizeof best);
                ow = OW;
            }
            for (; ow < OW; ow++) {
                float m = r0[2 * ow];
                int best = base + 2 * ow;
                float v = r0[2 * ow + 1];
                int take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + 2 * ow + 1 : best;
                v = r1[2 * ow];
                take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + W + 2 * ow : best;
                v = r1[2 * ow + 1];
                take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + W + 2 * ow + 1 : best;
                y[ow] = m;
                am[ow] = best;
            }
        }
    }
}

void maxpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out, int32_t *argmax)
{
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW;
    const size_t planes = (size_t)B * d->C;
    if (d->K == 2 && d->stride == 2 && d->pad == 0 && 2 * OH <= H && 2 * OW <= W) {
        maxpool_2x2(planes, H, W, OH, OW, inp, out, argmax);
        return;
    }
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * H * W;   /* (H, W) */
        float *y = out + pl * OH * OW;       /* (OH, OW) */
        int32_t *am = argmax + pl * OH * OW; /* (OH, OW) */
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->K, d->stride, d->pad, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->K, d->stride, d->pad, W, &w0, &w1);
                /* Start from the first element so the argmax is always a valid index;
                 * strict > keeps the first maximum, and a NaN, once seen, wins and
                 * stays (the max of anything with a NaN is NaN, as in PyTorch). */
                int best = h0 * W + w0;
                float m = x[best];
                /* Branch-free selects: which element wins is data-dependent and a
                 * branch here mispredicts about half the time (it was 22% of a LeNet-5
                 * step); conditional moves cost the same for every element. */
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++) {
                        float v = x[ih * W + iw];
                        int take = (v > m) | ((v != v) & (m == m));
                        m = take ? v : m;
                        best = take ? ih * W + iw : best;
                    }
                y[oh * OW + ow] = m;
                am[oh * OW + ow] = best;
            }
        }
    }
}

void maxpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, const int32_t *argmax, float *dinp)
{
    if (!dinp) return;
    const size_t HW = (size_t)d->H * d->W, OHW = (size_t)d->OH * d->OW;
    const size_t planes = (size_t)B * d->C;
    /* Sequential on purpose: overlapping windows may share an argmax. */
    for (size_t pl = 0; pl < planes; pl++) {
        const float *g = dout + pl * OHW;
        const int32_t *am = argmax + pl * OHW;
        float *dx = dinp + pl * HW;
        for (size_t i = 0; i < OHW; i++) dx[am[i]] += g[i];
    }
}

void avgpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out)
{
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW;
    const size_t planes = (size_t)B * d->C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * H * W;
        float *y = out + pl * OH * OW;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->K, d->stride, d->pad, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->K, d->stride, d->pad, W, &w0, &w1);
                float s = 0.0f;
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++) s += x[ih * W + iw];
                y[oh * OW + ow] = s / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
}

void avgpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, float *dinp)
{
    if (!dinp) return;
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW;
    const size_t planes = (size_t)B * d->C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *g = dout + pl * OH * OW;
        float *dx = dinp + pl * H * W;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->K, d->stride, d->pad, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->K, d->stride, d->pad, W, &w0, &w1);
                const float v = g[oh * OW + ow] / (float)((h1 - h0) * (w1 - w0));
                for (int ih = h0; ih < h1; ih++)
                    for (int iw = w0; iw < w1; iw++) dx[ih * W + iw] += v;
            }
        }
    }
}
