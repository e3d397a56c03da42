/* kernels/cuda/layernorm.cu - layer normalisation over the last axes (LAYER_LAYERNORM),
 * the twin of kernels/cpu/layernorm.c.
 *
 * Letters: R rows (the batch times the axes before the normalised ones), D the elements of
 * a row (the normalised axes), CH the rows of one chunk of the parameter gradients.
 *
 * Forward and input gradient: one thread per row runs layernorm.c's loop body (ln_row_*,
 * host and device code): the row's mean and variance in double, then each element, with no
 * FMA contraction (DFN_* in double, UFN_* in float). The CPU sums a row in eight lanes
 * (vectorised), this in order: the two differ by the double sums' rounding, which the cast
 * to float almost always hides (test_cuda_parity's TOL_LN). Nothing is saved by the forward, as on the CPU: the backward recomputes each row's
 * statistics.
 *
 * Weight and bias gradients are sums over the R rows. The CPU adds each row's term to a
 * float running sum, an order that cannot be split across threads; here the backward
 * keeps each row's statistics in the caller's workspace, sums the terms in double per chunk
 * of CH rows (one thread per chunk and element), then the chunks in order (one thread per
 * element): deterministic, no atomics, and more accurate than the CPU's float sum, from
 * which it differs by that sum's rounding (test_cuda_parity's TOL_LN_PARAM).
 */
#include "cuda_common.h"

#define LN_CHUNK 64 /* CH */

/* mean and 1 / sqrt(var + eps) of one row (layernorm.c's row_stats) */
static OPS_HD void ln_row_stats(const float *x, int D, float eps, double *mean, double *invstd)
{
    double s = 0.0, q = 0.0;
    for (int j = 0; j < D; j++) s = DFN_ADD(s, (double)x[j]);
    *mean = s / D;
    for (int j = 0; j < D; j++) {
        const double c = DFN_SUB((double)x[j], *mean);
        q = DFN_ADD(q, DFN_MUL(c, c));
    }
    *invstd = 1.0 / sqrt(DFN_ADD(q / D, (double)eps));
}

static OPS_HD float ln_xhat(float x, double mean, double invstd)
{
    return (float)DFN_MUL(DFN_SUB((double)x, mean), invstd);
}

/* y = xhat * w + b, one row */
static OPS_HD void ln_row_fwd(int D, float eps, const float *x, const float *w, const float *b, float *y)
{
    double mean, invstd;
    ln_row_stats(x, D, eps, &mean, &invstd);
    for (int j = 0; j < D; j++) y[j] = UFN_ADD(UFN_MUL(ln_xhat(x[j], mean, invstd), w[j]), b[j]);
}

/* One row of the backward: its statistics into stats (mean, invstd), and, d not NULL,
 * d += invstd * (g w - mean(g w) - xhat mean(g w xhat)), xhat in double here as there. */
static OPS_HD void ln_row_bwd(int D, float eps, const float *x, const float *w, const float *g, float *d, double *stats)
{
    double mean, invstd, sg = 0.0, sgx = 0.0;
    ln_row_stats(x, D, eps, &mean, &invstd);
    stats[0] = mean;
    stats[1] = invstd;
    if (!d) return;
    for (int j = 0; j < D; j++) {
        const double xh = DFN_MUL(DFN_SUB((double)x[j], mean), invstd), gw = DFN_MUL((double)g[j], (double)w[j]);
        sg = DFN_ADD(sg, gw);
        sgx = DFN_ADD(sgx, DFN_MUL(gw, xh));
    }
    for (int j = 0; j < D; j++) {
        const double xh = DFN_MUL(DFN_SUB((double)x[j], mean), invstd), gw = DFN_MUL((double)g[j], (double)w[j]);
        d[j] = UFN_ADD(d[j], (float)DFN_MUL(invstd, DFN_SUB(DFN_SUB(gw, sg / D), DFN_MUL(xh, sgx) / D)));
    }
}

/* Chunk c's sums for element j: part[2 (c D + j)] the weight's (g xhat), + 1 the bias's (g) */
static OPS_HD void ln_chunk_sums(int R, int D, int c, int j, const float *x, const float *g, const double *stats,
                                 double *part)
{
    double sw = 0.0, sb = 0.0;
    const int end = (c + 1) * LN_CHUNK < R ? (c + 1) * LN_CHUNK : R;
    for (int r = c * LN_CHUNK; r < end; r++) {
        const size_t i = (size_t)r * D + j;
        const double xh = DFN_MUL(DFN_SUB((double)x[i], stats[2 * (size_t)r]), stats[2 * (size_t)r + 1]);
        sw = DFN_ADD(sw, DFN_MUL((double)g[i], xh));
        sb = DFN_ADD(sb, (double)g[i]);
    }
    part[2 * ((size_t)c * D + j)] = sw;
    part[2 * ((size_t)c * D + j) + 1] = sb;
}

/* The chunks' sums in order: dw[j], db[j] written (=) */
static OPS_HD void ln_param_grads(int nchunks, int D, int j, const double *part, float *dw, float *db)
{
    double sw = 0.0, sb = 0.0;
    for (int c = 0; c < nchunks; c++) {
        sw = DFN_ADD(sw, part[2 * ((size_t)c * D + j)]);
        sb = DFN_ADD(sb, part[2 * ((size_t)c * D + j) + 1]);
    }
    dw[j] = (float)sw;
    db[j] = (float)sb;
}

static int ln_chunks(int R) { return (R + LN_CHUNK - 1) / LN_CHUNK; }

__global__ void ln_fwd_kernel(int R, int D, float eps, const float *inp, const float *w, const float *b, float *out)
{
    GRID_STRIDE(r, (size_t)R) ln_row_fwd(D, eps, inp + r * D, w, b, out + r * D);
}

__global__ void ln_bwd_rows_kernel(int R, int D, float eps, const float *inp, const float *w, const float *dout,
                                   float *dinp, double *stats)
{
    GRID_STRIDE(r, (size_t)R)
    ln_row_bwd(D, eps, inp + r * D, w, dout + r * D, dinp ? dinp + r * D : NULL, stats + 2 * r);
}

__global__ void ln_bwd_chunks_kernel(int R, int D, const float *inp, const float *dout, const double *stats,
                                     double *part, size_t n)
{
    GRID_STRIDE(t, n) ln_chunk_sums(R, D, (int)(t / D), (int)(t % D), inp, dout, stats, part);
}

__global__ void ln_bwd_params_kernel(int nchunks, int D, const double *part, float *dw, float *db)
{
    GRID_STRIDE(j, (size_t)D) ln_param_grads(nchunks, D, (int)j, part, dw, db);
}

extern "C" size_t cuda_layernorm_workspace(int R, int D)
{
    if (R <= 0 || D <= 0) return 0;
    return (2 * (size_t)R + 2 * (size_t)ln_chunks(R) * D) * sizeof(double);
}

extern "C" int cuda_layernorm_forward(cuda_ctx_t *ctx, int R, int D, float eps, const float *inp, const float *w,
                                      const float *b, float *out)
{
    if (R <= 0 || D <= 0) return 0;
    ln_fwd_kernel<<<pacer_grid((size_t)R, 128), 128, 0, ctx->stream>>>(R, D, eps, inp, w, b, out);
    KERNEL_CHECK(ctx, "ln_fwd_kernel");
    return 0;
}

extern "C" int cuda_layernorm_backward(cuda_ctx_t *ctx, int R, int D, float eps, const float *inp, const float *w,
                                       const float *dout, float *dinp, float *dw, float *db, void *ws, size_t ws_bytes)
{
    if (D <= 0) return 0;
    if (R <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        CUDA_CHECK(ctx, cudaMemsetAsync(dw, 0, (size_t)D * sizeof(float), ctx->stream), "memset layer norm dw");
        CUDA_CHECK(ctx, cudaMemsetAsync(db, 0, (size_t)D * sizeof(float), ctx->stream), "memset layer norm db");
        return 0;
    }
    if (!ws || ws_bytes < cuda_layernorm_workspace(R, D))
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "cuda_layernorm_backward", "workspace too small",
                               "size it with cuda_layernorm_workspace(rows, D)");
    double *stats = (double *)ws, *part = stats + 2 * (size_t)R;
    const int nchunks = ln_chunks(R);
    const size_t n = (size_t)nchunks * D;
    ln_bwd_rows_kernel<<<pacer_grid((size_t)R, 128), 128, 0, ctx->stream>>>(R, D, eps, inp, w, dout, dinp, stats);
    KERNEL_CHECK(ctx, "ln_bwd_rows_kernel");
    ln_bwd_chunks_kernel<<<pacer_grid(n, 128), 128, 0, ctx->stream>>>(R, D, inp, dout, stats, part, n);
    KERNEL_CHECK(ctx, "ln_bwd_chunks_kernel");
    ln_bwd_params_kernel<<<pacer_grid((size_t)D, 128), 128, 0, ctx->stream>>>(nchunks, D, part, dw, db);
    KERNEL_CHECK(ctx, "ln_bwd_params_kernel");
    return 0;
}
