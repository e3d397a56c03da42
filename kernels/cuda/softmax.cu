/* kernels/cuda/softmax.cu - fused softmax + cross-entropy, its gradient, and accuracy.
 *
 * Letters: B batch, N classes.
 *
 * The forward pass follows kernels/cpu/softmax.c step by step (row maximum, expf of the
 * shifted logits, their sum in double, one float reciprocal, loss = log(sum) - (x_label - m)
 * in double); only expf and log may differ from glibc's by an ulp, and the sum's order (a
 * fixed tree in double) from the CPU's loop. One block per row, rows b, b + blocks, ... of
 * a block (a language model's rows are B x T of a vocabulary of 50257: one thread per row
 * took 1.3 s of GPT-2 124M's 1.8 s step at B = 8, T = 1024 on an H200); each block adds its
 * rows' losses in row order and the blocks' partials are added in block order, so the
 * loss is deterministic.
 * A label outside [0, N) gives that row a NaN loss instead of reading out of bounds.
 * Label smoothing eps as there: (1 - eps) * nll + eps * (log(sum) - (mean x - m)), the
 * mean of x in double; eps = 0 takes the unsmoothed expression.
 *
 * Softmax and LogSoftmax along one axis (LAYER_SOFTMAX, LAYER_LOG_SOFTMAX): a sample is
 * (outer, n, inner), so B * outer * inner lines of n elements lying inner apart. One thread
 * per line (softmax_line_fwd below, host and device code): the line's maximum, the sum of
 * the shifted exponentials and its log in double, no FMA contraction (DFN_*). The CPU's
 * kernel (kernels/cpu/softmax.c) computes in float with one vectorised exponential per
 * element, so the two agree within a few float ulps (test_cuda_parity's TOL_SOFTMAX). The
 * backward likewise (softmax_line_bwd): each line's dot product in double, each element's
 * gradient added once, no atomics.
 */
#include <math.h>

#include "cuda_common.h"

#define XENT_THREADS 256 /* a block per row */

/* Block g: rows g, g + gridDim.x, ...; its rows' losses, in row order, to partials[g]. */
__global__ void softmax_xent_rows_kernel(const float *logits, const int32_t *labels, float *probs, double *partials,
                                         int B, int N, double eps)
{
    double acc = 0.0; /* thread 0's */
    for (int r = blockIdx.x; r < B; r += gridDim.x) {
        const float *x = logits + (size_t)r * N; /* (N) */
        float *p = probs + (size_t)r * N;        /* (N) */
        float m = x[0];
        for (int j = threadIdx.x; j < N; j += XENT_THREADS) m = x[j] > m ? x[j] : m;
        m = block_max<XENT_THREADS>(m);
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += XENT_THREADS) {
            p[j] = expf(__fsub_rn(x[j], m));
            s += (double)p[j];
        }
        const double sum = block_sum<XENT_THREADS>(s);
        const float inv = (float)(1.0 / sum);
        for (int j = threadIdx.x; j < N; j += XENT_THREADS) p[j] = __fmul_rn(p[j], inv);
        double xs = 0.0;
        if (eps != 0.0) {
            for (int j = threadIdx.x; j < N; j += XENT_THREADS) xs += (double)x[j];
            xs = block_sum<XENT_THREADS>(xs);
        }
        if (threadIdx.x != 0) continue;
        const int y = labels[r];
        const double nll = (y >= 0 && y < N) ? log(sum) - ((double)x[y] - (double)m) : (double)NAN;
        acc += eps == 0.0 ? nll : (1.0 - eps) * nll + eps * (log(sum) - (xs / N - (double)m));
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

/* The mean over B rows of the blocks' partials, added in block order. */
__global__ void xent_mean_kernel(const double *partials, int blocks, int B, float *loss)
{
    double acc = 0.0;
    for (int g = 0; g < blocks; g++) acc += partials[g];
    *loss = (float)(acc / B);
}

/* on = (1 - eps) + eps/N, off = eps/N: softmax_xent_backward's targets */
__global__ void softmax_xent_bwd_kernel(const float *probs, const int32_t *labels, float k, float on, float off,
                                        float *dlogits, size_t n, int N)
{
    GRID_STRIDE(i, n)
    {
        const size_t b = i / N;
        const int j = (int)(i % N);
        const float p = probs[i];
        dlogits[i] = __fmul_rn(k, __fsub_rn(p, j == labels[b] ? on : off));
    }
}

__global__ void count_correct_kernel(const float *logits, const int32_t *labels, int *count, int B, int N)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B) return;
    const float *x = logits + (size_t)r * N;
    int best = 0;
    /* strict > keeps the lowest index among ties */
    for (int j = 1; j < N; j++)
        if (x[j] > x[best]) best = j;
    if (best == labels[r]) atomicAdd(count, 1);
}

extern "C" int cuda_softmax_xent_forward(cuda_ctx_t *ctx, int B, int N, const float *logits, const int32_t *labels,
                                         float smoothing, float *probs, float *loss_dev)
{
    if (B <= 0 || N <= 0) {
        CUDA_CHECK(ctx, cudaMemsetAsync(loss_dev, 0, sizeof(float), ctx->stream), "memset loss");
        return 0;
    }
    const int blocks = B < CUDA_RED_BLOCKS ? B : CUDA_RED_BLOCKS;
    softmax_xent_rows_kernel<<<blocks, XENT_THREADS, 0, ctx->stream>>>(logits, labels, probs, ctx->d_partials, B, N,
                                                                       (double)smoothing);
    KERNEL_CHECK(ctx, "softmax_xent_rows_kernel");
    xent_mean_kernel<<<1, 1, 0, ctx->stream>>>(ctx->d_partials, blocks, B, loss_dev);
    KERNEL_CHECK(ctx, "xent_mean_kernel");
    return 0;
}

extern "C" int cuda_softmax_xent_backward(cuda_ctx_t *ctx, int B, int N, const float *probs, const int32_t *labels,
                                          float smoothing, float scale, float *dlogits)
{
    if (B <= 0 || N <= 0) return 0;
    const float k = scale / (float)B;
    const float off = smoothing / (float)N, on = (1.0f - smoothing) + off;
    const size_t n = (size_t)B * N;
    softmax_xent_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(probs, labels, k, on, off, dlogits, n, N);
    KERNEL_CHECK(ctx, "softmax_xent_bwd_kernel");
    return 0;
}

extern "C" int cuda_count_correct(cuda_ctx_t *ctx, int B, int N, const float *logits, const int32_t *labels)
{
    if (B <= 0 || N <= 0) return 0;
    CUDA_CHECK(ctx, cudaMemsetAsync(ctx->d_count, 0, sizeof(int), ctx->stream), "memset count");
    count_correct_kernel<<<(B + 127) / 128, 128, 0, ctx->stream>>>(logits, labels, ctx->d_count, B, N);
    KERNEL_CHECK(ctx, "count_correct_kernel");
    CUDA_CHECK(ctx, cudaMemcpyAsync(ctx->h_count, ctx->d_count, sizeof(int), cudaMemcpyDeviceToHost, ctx->stream),
               "count download");
    CUDA_CHECK(ctx, cudaStreamSynchronize(ctx->stream), "count_correct (or an earlier kernel failed)");
    return *ctx->h_count;
}

/* The first element of line L of (rows, n, inner): row L / inner, offset L % inner. */
static OPS_HD size_t softmax_line_base(size_t L, int n, int inner)
{
    return L / (size_t)inner * (size_t)n * inner + L % (size_t)inner;
}

/* One line of the softmax: its maximum, the sum of the shifted exponentials and
 * its log in double, then each output from the shifted value in double. */
static OPS_HD void softmax_line_fwd(int take_log, int n, int inner, const float *a, float *o)
{
    float m = a[0];
    for (int j = 1; j < n; j++) m = a[(size_t)j * inner] > m ? a[(size_t)j * inner] : m;
    double s = 0.0;
    for (int j = 0; j < n; j++) s = DFN_ADD(s, exp(DFN_SUB((double)a[(size_t)j * inner], (double)m)));
    const double ls = log(s);
    for (int j = 0; j < n; j++) {
        const double v = DFN_SUB((double)a[(size_t)j * inner], (double)m);
        o[(size_t)j * inner] = (float)(take_log ? DFN_SUB(v, ls) : exp(DFN_SUB(v, ls)));
    }
}

/* One line of softmax_axis_backward (y the forward's output): the line's sum of dout (log)
 * or of dout * y in double, then each element's term added to d. */
static OPS_HD void softmax_line_bwd(int take_log, int n, int inner, const float *y, const float *g, float *d)
{
    double s = 0.0;
    for (int j = 0; j < n; j++) {
        const size_t o = (size_t)j * inner;
        s = DFN_ADD(s, take_log ? (double)g[o] : DFN_MUL((double)g[o], (double)y[o]));
    }
    for (int j = 0; j < n; j++) {
        const size_t o = (size_t)j * inner;
        const double t = take_log ? DFN_SUB((double)g[o], DFN_MUL(exp((double)y[o]), s))
                                  : DFN_MUL((double)y[o], DFN_SUB((double)g[o], s));
        d[o] = UFN_ADD(d[o], (float)t);
    }
}

__global__ void softmax_axis_fwd_kernel(int take_log, int n, int inner, const float *inp, float *out, size_t lines)
{
    GRID_STRIDE(L, lines)
    {
        const size_t base = softmax_line_base(L, n, inner);
        softmax_line_fwd(take_log, n, inner, inp + base, out + base);
    }
}

__global__ void softmax_axis_bwd_kernel(int take_log, int n, int inner, const float *out, const float *dout,
                                        float *dinp, size_t lines)
{
    GRID_STRIDE(L, lines)
    {
        const size_t base = softmax_line_base(L, n, inner);
        softmax_line_bwd(take_log, n, inner, out + base, dout + base, dinp + base);
    }
}

extern "C" int cuda_softmax_axis_forward(cuda_ctx_t *ctx, int take_log, int rows, int n, int inner, const float *inp,
                                         float *out)
{
    if (rows <= 0 || n <= 0 || inner <= 0) return 0;
    const size_t lines = (size_t)rows * inner;
    softmax_axis_fwd_kernel<<<pacer_grid(lines, 128), 128, 0, ctx->stream>>>(take_log, n, inner, inp, out, lines);
    KERNEL_CHECK(ctx, "softmax_axis_fwd_kernel");
    return 0;
}

extern "C" int cuda_softmax_axis_backward(cuda_ctx_t *ctx, int take_log, int rows, int n, int inner, const float *out,
                                          const float *dout, float *dinp)
{
    if (!dinp || rows <= 0 || n <= 0 || inner <= 0) return 0;
    const size_t lines = (size_t)rows * inner;
    softmax_axis_bwd_kernel<<<pacer_grid(lines, 128), 128, 0, ctx->stream>>>(take_log, n, inner, out, dout, dinp, lines);
    KERNEL_CHECK(ctx, "softmax_axis_bwd_kernel");
    return 0;
}
