/* kernels/cuda/pool.cu - max and average pooling, floor or ceil output size (own kernels).
 *
 * Letters: B batch, C channels, H W input size, OH OW output size, K window, s stride.
 *
 * cuDNN is not used: its max pooling does not promise the CPU's tie rule (first maximum in
 * row-major order), and its exclude-padding average divides by the in-padding count, while
 * a ceil-mode window that runs past the edge without padding must divide by the number of
 * in-bounds elements. These kernels copy the CPU's arithmetic operation for operation, so
 * outputs, argmax and gradients are bit-identical to kernels/cpu/pool.c:
 *   - forward: one thread per output, the window clamped exactly like window() in pool.c,
 *     visited in the same row-major order with the same comparisons / float additions;
 *   - backward: one thread per INPUT element gathers the outputs whose window contains it,
 *     in increasing output index, adding onto dinp in the CPU's order. No atomics, so the
 *     result does not depend on scheduling, and overlapping windows (K > s) need no care.
 */
#include "cuda_common.h"

/* Window of output index o along a dimension of length n, clamped to [0, n). */
static __device__ __forceinline__ void window(int o, int K, int s, int pad, int n, int *lo, int *hi)
{
    int a = o * s - pad, b = a + K;
    *lo = a < 0 ? 0 : a;
    *hi = b > n ? n : b;
}

/* Outputs along one dimension whose (unclamped) window [o*s - pad, o*s - pad + K) contains
 * input index i: o in [*lo, *hi], possibly empty. */
static __device__ __forceinline__ void covering(int i, int K, int s, int pad, int nout, int *lo, int *hi)
{
    int first = i + pad - K + 1; /* o*s >= i + pad - K + 1 */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    int h = (i + pad) / s; /* o*s <= i + pad, i + pad >= 0 */
    *hi = h < nout - 1 ? h : nout - 1;
}

__global__ void maxpool_fwd_kernel(const float *inp, float *out, int32_t *argmax, size_t n, int H, int W, int OH,
                                   int OW, int K, int s, int pad)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        const size_t pl = i / ((size_t)OH * OW);
        const float *x = inp + pl * H * W; /* (H, W) */
        int h0, h1, w0, w1;
        window(oh, K, s, pad, H, &h0, &h1);
        window(ow, K, s, pad, W, &w0, &w1);
        /* start from the first element; strict > keeps the first maximum; a NaN wins and
         * stays (pool.c) */
        int best = h0 * W + w0;
        float m = x[best];
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) {
                float v = x[ih * W + iw];
                if (v > m || (v != v && m == m)) {
                    m = v;
                    best = ih * W + iw;
                }
            }
        out[i] = m;
        argmax[i] = best;
    }
}

__global__ void maxpool_bwd_kernel(const float *dout, const int32_t *argmax, float *dinp, size_t n, int H, int W,
                                   int OH, int OW, int K, int s, int pad)
{
    GRID_STRIDE(i, n)
    {
        const int iw = (int)(i % W), ih = (int)((i / W) % H);
        const size_t pl = i / ((size_t)H * W);
        const float *g = dout + pl * OH * OW;
        const int32_t *am = argmax + pl * OH * OW;
        const int32_t me = ih * W + iw;
        int oh0, oh1, ow0, ow1;
        covering(ih, K, s, pad, OH, &oh0, &oh1);
        covering(iw, K, s, pad, OW, &ow0, &ow1);
        float acc = dinp[i];
        for (int oh = oh0; oh <= oh1; oh++)
            for (int ow = ow0; ow <= ow1; ow++) {
                const int o = oh * OW + ow;
                if (am[o] == me) acc = __fadd_rn(acc, g[o]);
            }
        dinp[i] = acc;
    }
}

__global__ void avgpool_fwd_kernel(const float *inp, float *out, size_t n, int H, int W, int OH, int OW, int K, int s,
                                   int pad)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        const size_t pl = i / ((size_t)OH * OW);
        const float *x = inp + pl * H * W;
        int h0, h1, w0, w1;
        window(oh, K, s, pad, H, &h0, &h1);
        window(ow, K, s, pad, W, &w0, &w1);
        float sum = 0.0f;
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) sum = __fadd_rn(sum, x[ih * W + iw]);
        out[i] = __fdiv_rn(sum, (float)((h1 - h0) * (w1 - w0)));
    }
}

__global__ void avgpool_bwd_kernel(const float *dout, float *dinp, size_t n, int H, int W, int OH, int OW, int K, int s,
                                   int pad)
{
    GRID_STRIDE(i, n)
    {
        const int iw = (int)(i % W), ih = (int)((i / W) % H);
        const size_t pl = i / ((size_t)H * W);
        const float *g = dout + pl * OH * OW;
        int oh0, oh1, ow0, ow1;
        covering(ih, K, s, pad, OH, &oh0, &oh1);
        covering(iw, K, s, pad, OW, &ow0, &ow1);
        float acc = dinp[i];
        for (int oh = oh0; oh <= oh1; oh++) {
            int h0, h1;
            window(oh, K, s, pad, H, &h0, &h1);
            for (int ow = ow0; ow <= ow1; ow++) {
                int w0, w1;
                window(ow, K, s, pad, W, &w0, &w1);
                acc = __fadd_rn(acc, __fdiv_rn(g[oh * OW + ow], (float)((h1 - h0) * (w1 - w0))));
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
    maxpool_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, argmax, n, d->H, d->W, d->OH, d->OW, d->K,
                                                                    d->stride, d->pad);
    KERNEL_CHECK(ctx, "maxpool_fwd_kernel");
    return 0;
}

extern "C" int cuda_maxpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout,
                                       const int32_t *argmax, float *dinp)
{
    const size_t n = (size_t)B * d->C * d->H * d->W;
    if (!dinp || !n) return 0;
    maxpool_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, argmax, dinp, n, d->H, d->W, d->OH, d->OW,
                                                                    d->K, d->stride, d->pad);
    KERNEL_CHECK(ctx, "maxpool_bwd_kernel");
    return 0;
}

extern "C" int cuda_avgpool2d_forward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *inp, float *out)
{
    const size_t n = (size_t)B * d->C * d->OH * d->OW;
    if (!n) return 0;
    avgpool_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, n, d->H, d->W, d->OH, d->OW, d->K,
                                                                    d->stride, d->pad);
    KERNEL_CHECK(ctx, "avgpool_fwd_kernel");
    return 0;
}

extern "C" int cuda_avgpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout, float *dinp)
{
    const size_t n = (size_t)B * d->C * d->H * d->W;
    if (!dinp || !n) return 0;
    avgpool_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dinp, n, d->H, d->W, d->OH, d->OW, d->K,
                                                                    d->stride, d->pad);
    KERNEL_CHECK(ctx, "avgpool_bwd_kernel");
    return 0;
}
