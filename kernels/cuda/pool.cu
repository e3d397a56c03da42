/* kernels/cuda/pool.cu - max and average pooling, floor or ceil output size (own kernels).
 *
 * Letters: B batch, C channels, H W input size, OH OW output size; the geometry (window
 * KH x KW, stride, padding per side, dilation, count_include_pad) is ops.h's pool2d_desc_t,
 * passed to the kernels by value.
 *
 * cuDNN is not used: its max pooling does not promise the CPU's tie rule (first maximum in
 * row-major order), and its exclude-padding average divides by the in-padding count, while
 * a ceil-mode window that runs past the edge without padding must divide by the number of
 * in-bounds elements. These kernels copy the CPU's arithmetic operation for operation, so
 * outputs, argmax and gradients are bit-identical to kernels/cpu/pool.c:
 *   - forward: one thread per output, the window clamped exactly like window() in pool.c,
 *     visited in the same row-major order with the same comparisons / float additions, the
 *     divisor the same int product converted once;
 *   - backward: one thread per INPUT element gathers the outputs whose window contains it,
 *     in increasing output index, adding onto dinp in the CPU's order. No atomics, so the
 *     result does not depend on scheduling, and overlapping windows (K > s) need no care.
 */
#include "cuda_common.h"

/* In-bounds taps of output o along a dimension of length n (pool.c's window()): taps
 * o*s - pb + t*dl, t in [0, k); those inside [0, n) are lo, lo + dl, ... below hi. */
static __device__ __forceinline__ void window(int o, int k, int s, int pb, int dl, int n, int *lo, int *hi)
{
    const int a = o * s - pb;
    if (dl == 1) {
        *lo = a < 0 ? 0 : a;
        *hi = a + k > n ? n : a + k;
        if (*hi < *lo) *hi = *lo;
        return;
    }
    int t0 = a < 0 ? (-a + dl - 1) / dl : 0;
    int t1 = n - 1 - a < 0 ? 0 : (n - 1 - a) / dl + 1;
    if (t1 > k) t1 = k;
    if (t0 > t1) t0 = t1;
    *lo = a + t0 * dl;
    *hi = t1 <= t0 ? *lo : a + (t1 - 1) * dl + 1;
}

/* Taps of output o inside the padded extent [-pb, n + pe) (pool.c's padded_taps). */
static __device__ __forceinline__ int padded_taps(int o, int k, int s, int pb, int pe, int dl, int n)
{
    const long long a = (long long)o * s - pb, room = (long long)n + pe - a;
    long long t = room <= 0 ? 0 : (room - 1) / dl + 1;
    return t < k ? (int)t : k;
}

static __device__ __forceinline__ int tap_count(int lo, int hi, int dl)
{
    return dl == 1 ? hi - lo : (hi - lo + dl - 1) / dl;
}

/* The divisor of an average along one dimension (pool.c's avg_taps). */
static __device__ __forceinline__ int avg_taps_h(const pool2d_desc_t &d, int o, int lo, int hi)
{
    return d.count_include_pad ? padded_taps(o, d.KH, d.sH, d.pad_t, d.pad_b, d.dH, d.H) : tap_count(lo, hi, d.dH);
}
static __device__ __forceinline__ int avg_taps_w(const pool2d_desc_t &d, int o, int lo, int hi)
{
    return d.count_include_pad ? padded_taps(o, d.KW, d.sW, d.pad_l, d.pad_r, d.dW, d.W) : tap_count(lo, hi, d.dW);
}

/* Outputs along one dimension whose (unclamped) window [o*s - pb, o*s - pb + (k-1)*dl]
 * reaches input index i: o in [*lo, *hi], possibly empty. With dilation a window in that
 * range may step over i; the caller checks (i + pb - o*s) % dl. */
static __device__ __forceinline__ void covering(int i, int k, int s, int pb, int dl, int nout, int *lo, int *hi)
{
    int first = i + pb - (k - 1) * dl; /* o*s >= i + pb - (k-1)*dl */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    int h = (i + pb) / s; /* o*s <= i + pb, i + pb >= 0 */
    *hi = h < nout - 1 ? h : nout - 1;
}

__global__ void maxpool_fwd_kernel(const float *inp, float *out, int32_t *argmax, size_t n, pool2d_desc_t d)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % d.OW), oh = (int)((i / d.OW) % d.OH);
        const size_t pl = i / ((size_t)d.OH * d.OW);
        const float *x = inp + pl * d.H * d.W; /* (H, W) */
        int h0, h1, w0, w1;
        window(oh, d.KH, d.sH, d.pad_t, d.dH, d.H, &h0, &h1);
        window(ow, d.KW, d.sW, d.pad_l, d.dW, d.W, &w0, &w1);
        /* start from the first element; strict > keeps the first maximum; a NaN wins and
         * stays (pool.c) */
        int best = h0 * d.W + w0;
        float m = x[best];
        for (int ih = h0; ih < h1; ih += d.dH)
            for (int iw = w0; iw < w1; iw += d.dW) {
                float v = x[ih * d.W + iw];
                if (v > m || (v != v && m == m)) {
                    m = v;
                    best = ih * d.W + iw;
                }
            }
        out[i] = m;
        argmax[i] = best;
    }
}

__global__ void maxpool_bwd_kernel(const float *dout, const int32_t *argmax, float *dinp, size_t n, pool2d_desc_t d)
{
    GRID_STRIDE(i, n)
    {
        const int iw = (int)(i % d.W), ih = (int)((i / d.W) % d.H);
        const size_t pl = i / ((size_t)d.H * d.W);
        const float *g = dout + pl * d.OH * d.OW;
        const int32_t *am = argmax + pl * d.OH * d.OW;
        const int32_t me = ih * d.W + iw;
        int oh0, oh1, ow0, ow1;
        covering(ih, d.KH, d.sH, d.pad_t, d.dH, d.OH, &oh0, &oh1);
        covering(iw, d.KW, d.sW, d.pad_l, d.dW, d.OW, &ow0, &ow1);
        float acc = dinp[i];
        for (int oh = oh0; oh <= oh1; oh++)
            for (int ow = ow0; ow <= ow1; ow++) {
                const int o = oh * d.OW + ow;
                if (am[o] == me) acc = __fadd_rn(acc, g[o]);
            }
        dinp[i] = acc;
    }
}

__global__ void avgpool_fwd_kernel(const float *inp, float *out, size_t n, pool2d_desc_t d)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % d.OW), oh = (int)((i / d.OW) % d.OH);
        const size_t pl = i / ((size_t)d.OH * d.OW);
        const float *x = inp + pl * d.H * d.W;
        int h0, h1, w0, w1;
        window(oh, d.KH, d.sH, d.pad_t, d.dH, d.H, &h0, &h1);
        window(ow, d.KW, d.sW, d.pad_l, d.dW, d.W, &w0, &w1);
        float sum = 0.0f;
        for (int ih = h0; ih < h1; ih += d.dH)
            for (int iw = w0; iw < w1; iw += d.dW) sum = __fadd_rn(sum, x[ih * d.W + iw]);
        out[i] = __fdiv_rn(sum, (float)(avg_taps_h(d, oh, h0, h1) * avg_taps_w(d, ow, w0, w1)));
    }
}

__global__ void avgpool_bwd_kernel(const float *dout, float *dinp, size_t n, pool2d_desc_t d)
{
    GRID_STRIDE(i, n)
    {
        const int iw = (int)(i % d.W), ih = (int)((i / d.W) % d.H);
        const size_t pl = i / ((size_t)d.H * d.W);
        const float *g = dout + pl * d.OH * d.OW;
        int oh0, oh1, ow0, ow1;
        covering(ih, d.KH, d.sH, d.pad_t, d.dH, d.OH, &oh0, &oh1);
        covering(iw, d.KW, d.sW, d.pad_l, d.dW, d.OW, &ow0, &ow1);
        float acc = dinp[i];
        for (int oh = oh0; oh <= oh1; oh++) {
            if ((ih + d.pad_t - oh * d.sH) % d.dH != 0) continue; /* a dilated window steps over ih */
            int h0, h1;
            window(oh, d.KH, d.sH, d.pad_t, d.dH, d.H, &h0, &h1);
            const int nh = avg_taps_h(d, oh, h0, h1);
            for (int ow = ow0; ow <= ow1; ow++) {
                if ((iw + d.pad_l - ow * d.sW) % d.dW != 0) continue;
                int w0, w1;
                window(ow, d.KW, d.sW, d.pad_l, d.dW, d.W, &w0, &w1);
                acc = __fadd_rn(acc, __fdiv_rn(g[oh * d.OW + ow], (float)(nh * avg_taps_w(d, ow, w0, w1))));
            }
        }
        dinp[i] = acc;
    }
}

extern "C" int cuda_maxpool2d_forward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *inp, float *out,
                                      int32_t *argmax)
{
    const size_t n = (size_t)B * d->C * d->OH * d->OW;
    if (!n) return 0;
    maxpool_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, argmax, n, *d);
    KERNEL_CHECK(ctx, "maxpool_fwd_kernel");
    return 0;
}

extern "C" int cuda_maxpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout,
                                       const int32_t *argmax, float *dinp)
{
    const size_t n = (size_t)B * d->C * d->H * d->W;
    if (!dinp || !n) return 0;
    maxpool_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, argmax, dinp, n, *d);
    KERNEL_CHECK(ctx, "maxpool_bwd_kernel");
    return 0;
}

extern "C" int cuda_avgpool2d_forward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *inp, float *out)
{
    const size_t n = (size_t)B * d->C * d->OH * d->OW;
    if (!n) return 0;
    avgpool_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, n, *d);
    KERNEL_CHECK(ctx, "avgpool_fwd_kernel");
    return 0;
}

extern "C" int cuda_avgpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout, float *dinp)
{
    const size_t n = (size_t)B * d->C * d->H * d->W;
    if (!dinp || !n) return 0;
    avgpool_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dinp, n, *d);
    KERNEL_CHECK(ctx, "avgpool_bwd_kernel");
    return 0;
}
