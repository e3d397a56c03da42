/* kernels/cuda/optim.cu - SGD, AdamW, gradient norms and clipping (own kernels). The asynchronous
 * algorithms' updates have no device version: the parameter server is a CPU rank.
 *
 * n is a flat element count. Elementwise formulas use __fmul_rn/__fadd_rn/__fsub_rn/
 * __fdiv_rn/__fsqrt_rn, which are never contracted into FMA, so with the same inputs they
 * round exactly like the float C expressions written in ops_cuda.h (evaluated left to
 * right) and like sgd_update and adamw_update in kernels/cpu/optim.c (whose sqrtf is
 * correctly rounded, as __fsqrt_rn).
 *
 * Reductions are two-pass and deterministic: CUDA_RED_BLOCKS partial sums in double in a
 * fixed tree order, then one block adds the partials in a fixed order. No atomics, so the
 * same gradient always gives the same norm (and the same clipping decision).
 */
#include <math.h>

#include "cuda_common.h"

/* ---- SGD ------------------------------------------------------------------------------- */

static __device__ __forceinline__ float sgd_d(float g, float w, float gs, float wd)
{
    return __fadd_rn(__fmul_rn(gs, g), __fmul_rn(wd, w)); /* d = gs*g + wd*w */
}

__global__ void sgd_plain_kernel(float *w, const float *g, size_t n, float lr, float wd, float gs, const float *gs_dev)
{
    if (gs_dev) gs = *gs_dev;
    GRID_STRIDE(i, n)
    {
        const float d = sgd_d(g[i], w[i], gs, wd);
        w[i] = __fsub_rn(w[i], __fmul_rn(lr, d));
    }
}

__global__ void sgd_momentum_kernel(float *w, const float *g, float *u, size_t n, float lr, float mu, float wd,
                                    float gs, const float *gs_dev, int nesterov)
{
    if (gs_dev) gs = *gs_dev;
    GRID_STRIDE(i, n)
    {
        const float d = sgd_d(g[i], w[i], gs, wd);
        const float v = __fadd_rn(__fmul_rn(mu, u[i]), d); /* v = mu*u + d */
        u[i] = v;
        const float step = nesterov ? __fadd_rn(d, __fmul_rn(mu, v)) : v;
        w[i] = __fsub_rn(w[i], __fmul_rn(lr, step));
    }
}

extern "C" int cuda_sgd_update(cuda_ctx_t *ctx, size_t n, float *w, const float *g, float *u, float lr, float momentum,
                               int nesterov, float weight_decay, float grad_scale, const float *grad_scale_dev)
{
    if (!n) return 0;
    if (momentum == 0.0f) {
        /* u is not touched and may be NULL (sgd_update) */
        sgd_plain_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(w, g, n, lr, weight_decay, grad_scale,
                                                                      grad_scale_dev);
        KERNEL_CHECK(ctx, "sgd_plain_kernel");
    } else {
        sgd_momentum_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(w, g, u, n, lr, momentum, weight_decay,
                                                                         grad_scale, grad_scale_dev, nesterov ? 1 : 0);
        KERNEL_CHECK(ctx, "sgd_momentum_kernel");
    }
    return 0;
}

/* ---- AdamW ----------------------------------------------------------------------------- */

/* adamw_update's scalars (kernels/cpu/optim.c's adamw_scalars_t), from double on the host */
struct adamw_k {
    float decay, b1, c1, b2, c2, step_size, bc2_sqrt, eps, gs;
};

__global__ void adamw_kernel(float *w, const float *g, float *m, float *v, size_t n, adamw_k k, const float *gs_dev)
{
    const float gs = gs_dev ? *gs_dev : k.gs;
    GRID_STRIDE(i, n)
    {
        const float gi = __fmul_rn(gs, g[i]);
        const float wi = __fmul_rn(w[i], k.decay);
        const float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(k.c1, gi));
        const float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(__fmul_rn(k.c2, gi), gi));
        m[i] = mi;
        v[i] = vi;
        const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
        w[i] = __fsub_rn(wi, __fmul_rn(k.step_size, __fdiv_rn(mi, denom)));
    }
}

extern "C" int cuda_adamw_update(cuda_ctx_t *ctx, size_t n, float *w, const float *g, float *m, float *v,
                                 const adamw_hparams_t *h, long step, float grad_scale, const float *grad_scale_dev)
{
    if (!n) return 0;
    const double t = (double)(step < 1 ? 1 : step);
    const double bc1 = 1.0 - pow(h->beta1, t), bc2 = 1.0 - pow(h->beta2, t);
    adamw_k k;
    k.decay = (float)(1.0 - h->lr * h->weight_decay);
    k.b1 = (float)h->beta1;
    k.c1 = (float)(1.0 - h->beta1);
    k.b2 = (float)h->beta2;
    k.c2 = (float)(1.0 - h->beta2);
    k.step_size = (float)(h->lr / bc1);
    k.bc2_sqrt = (float)sqrt(bc2);
    k.eps = (float)h->eps;
    k.gs = grad_scale;
    adamw_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(w, g, m, v, n, k, grad_scale_dev);
    KERNEL_CHECK(ctx, "adamw_kernel");
    return 0;
}

/* ---- norms and clipping ---------------------------------------------------------------- */

__global__ void sumsq_partial_kernel(const float *g, size_t n, double *partials)
{
    double s = 0.0;
    GRID_STRIDE(i, n)
    {
        const double v = (double)g[i];
        s += v * v;
    }
    s = block_sum<CUDA_RED_THREADS>(s);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

enum { FINAL_SUM = 0, FINAL_CLIP_COEF = 1, FINAL_WORKER_SCALE = 2 };

/* One block: adds the partials, then, by mode,
 *   FINAL_SUM          *result = sum of squares
 *   FINAL_CLIP_COEF    *result = ss; *scale = coef < 1 ? coef : 1, coef = a/(sqrt(ss) + 1e-6)
 *   FINAL_WORKER_SCALE *scale = b * (a/norm if a > 0 and norm > a, else 1), norm = b*sqrt(ss)
 * with a = max_norm / clip_norm and b = grad_scale. */
__global__ void sumsq_final_kernel(const double *partials, int nparts, double *result, float *scale, int mode, float a,
                                   float b)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < nparts; i += CUDA_RED_THREADS) s += partials[i];
    s = block_sum<CUDA_RED_THREADS>(s);
    if (threadIdx.x != 0) return;
    if (result) *result = s;
    if (mode == FINAL_CLIP_COEF) {
        /* clip_grad_norm: coefficient max_norm / (norm + 1e-6), applied only when < 1 */
        const double coef = (double)a / (sqrt(s) + 1e-6);
        *scale = (a > 0.0f && coef < 1.0) ? (float)coef : 1.0f;
    } else if (mode == FINAL_WORKER_SCALE) {
        /* worker_apply_gradient: norm = grad_scale * (float)sqrt(ss) */
        const float norm = __fmul_rn(b, (float)sqrt(s));
        *scale = (a > 0.0f && norm > a) ? __fmul_rn(b, __fdiv_rn(a, norm)) : b;
    }
}

/* Enqueues the two reduction passes over g. */
static int sumsq_enqueue(cuda_ctx_t *ctx, size_t n, const float *g, int mode, float a, float b, double *result,
                         float *scale)
{
    size_t blocks = (n + CUDA_RED_THREADS - 1) / CUDA_RED_THREADS;
    if (blocks > CUDA_RED_BLOCKS) blocks = CUDA_RED_BLOCKS;
    if (blocks < 1) blocks = 1;
    sumsq_partial_kernel<<<(unsigned)blocks, CUDA_RED_THREADS, 0, ctx->stream>>>(g, n, ctx->d_partials);
    KERNEL_CHECK(ctx, "sumsq_partial_kernel");
    sumsq_final_kernel<<<1, CUDA_RED_THREADS, 0, ctx->stream>>>(ctx->d_partials, (int)blocks, result, scale, mode, a, b);
    KERNEL_CHECK(ctx, "sumsq_final_kernel");
    return 0;
}

extern "C" int cuda_sum_squares(cuda_ctx_t *ctx, size_t n, const float *g, double *out)
{
    if (sumsq_enqueue(ctx, n, g, FINAL_SUM, 0.0f, 0.0f, ctx->d_result, NULL) != 0) return -1;
    CUDA_CHECK(ctx, cudaMemcpyAsync(ctx->h_result, ctx->d_result, sizeof(double), cudaMemcpyDeviceToHost, ctx->stream),
               "sum of squares download");
    CUDA_CHECK(ctx, cudaStreamSynchronize(ctx->stream), "sum of squares (or an earlier kernel failed)");
    *out = *ctx->h_result;
    return 0;
}

__global__ void scale_by_dev_kernel(float *g, const float *k, size_t n)
{
    const float s = *k;
    GRID_STRIDE(i, n) g[i] = __fmul_rn(g[i], s);
}

extern "C" int cuda_clip_grad_norm(cuda_ctx_t *ctx, size_t n, float *g, float max_norm, float *norm_out)
{
    if (sumsq_enqueue(ctx, n, g, FINAL_CLIP_COEF, max_norm, 0.0f, ctx->d_result, ctx->d_scratch) != 0) return -1;
    if (max_norm > 0.0f && n) {
        scale_by_dev_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(g, ctx->d_scratch, n);
        KERNEL_CHECK(ctx, "scale_by_dev_kernel");
    }
    if (norm_out) {
        CUDA_CHECK(ctx,
                   cudaMemcpyAsync(ctx->h_result, ctx->d_result, sizeof(double), cudaMemcpyDeviceToHost, ctx->stream),
                   "norm download");
        CUDA_CHECK(ctx, cudaStreamSynchronize(ctx->stream), "clip_grad_norm (or an earlier kernel failed)");
        *norm_out = (float)sqrt(*ctx->h_result);
    }
    return 0;
}

extern "C" int cuda_clip_scale(cuda_ctx_t *ctx, size_t n, const float *g, float grad_scale, float clip_norm,
                               float *scale_dev)
{
    return sumsq_enqueue(ctx, n, g, FINAL_WORKER_SCALE, clip_norm, grad_scale, NULL, scale_dev);
}
