/* kernels/cuda/seq.cu - the language models' kernels (ops.h's embed_* and
 * causal_softmax_*): an embedding table read by token ids, and the causal softmax.
 *
 * The embedding's backward gives one thread to each table element, which walks the rows
 * in increasing order and adds those whose id names its row, as the CPU's loop meets them:
 * the CPU's bits, no atomics (a walk over every row per element: for the small
 * vocabularies of text models; a large one wants a sort by id first). The causal softmax
 * gives one thread to each row of a score matrix and reads only its first i + 1 elements,
 * in the CPU's order.
 */
#include "cuda_common.h"

__global__ void embed_fwd_kernel(size_t rows, int V, int E, const float *ids, const float *table, float *out)
{
    GRID_STRIDE(j, rows * (size_t)E)
    {
        const float id = ids[j / (size_t)E];
        const size_t e = j % (size_t)E;
        out[j] = id >= 0.0f && id < (float)V ? table[(size_t)id * (size_t)E + e] : 0.0f;
    }
}

__global__ void embed_bwd_kernel(size_t rows, int V, int E, const float *ids, const float *dout, float *dtable, int add)
{
    GRID_STRIDE(k, (size_t)V * (size_t)E)
    {
        const size_t v = k / (size_t)E, e = k % (size_t)E;
        float acc = add ? dtable[k] : 0.0f;
        for (size_t r = 0; r < rows; r++)
            if (ids[r] >= 0.0f && ids[r] < (float)V && (size_t)ids[r] == v)
                acc = __fadd_rn(acc, dout[r * (size_t)E + e]);
        dtable[k] = acc;
    }
}

__global__ void causal_fwd_kernel(size_t mats, int T, float scale, const float *inp, float *out)
{
    GRID_STRIDE(row, mats * (size_t)T)
    {
        const int i = (int)(row % (size_t)T);
        const float *x = inp + row * (size_t)T;
        float *y = out + row * (size_t)T;
        float mx = x[0] * scale;
        for (int j = 1; j <= i; j++) mx = fmaxf(mx, x[j] * scale);
        float sum = 0.0f;
        for (int j = 0; j <= i; j++) {
            y[j] = expf(x[j] * scale - mx);
            sum += y[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j <= i; j++) y[j] *= inv;
        for (int j = i + 1; j < T; j++) y[j] = 0.0f;
    }
}

__global__ void causal_bwd_kernel(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp,
                                  int set)
{
    GRID_STRIDE(row, mats * (size_t)T)
    {
        const int i = (int)(row % (size_t)T);
        const float *y = out + row * (size_t)T, *g = dout + row * (size_t)T;
        float *d = dinp + row * (size_t)T;
        float dot = 0.0f;
        for (int j = 0; j <= i; j++) dot += y[j] * g[j];
        for (int j = 0; j <= i; j++) d[j] = (set ? 0.0f : d[j]) + scale * y[j] * (g[j] - dot);
        if (set)
            for (int j = i + 1; j < T; j++) d[j] = 0.0f;
    }
}

extern "C" int cuda_embed_forward(cuda_ctx_t *ctx, size_t rows, int V, int E, const float *ids, const float *table,
                                  float *out)
{
    const size_t n = rows * (size_t)E;
    if (!n) return 0;
    embed_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(rows, V, E, ids, table, out);
    KERNEL_CHECK(ctx, "embed_fwd_kernel");
    return 0;
}

extern "C" int cuda_embed_backward(cuda_ctx_t *ctx, size_t rows, int V, int E, const float *ids, const float *dout,
                                   float *dtable, int add)
{
    const size_t n = (size_t)V * (size_t)E;
    if (!n) return 0;
    embed_bwd_kernel<<<pacer_grid(n, 128), 128, 0, ctx->stream>>>(rows, V, E, ids, dout, dtable, add);
    KERNEL_CHECK(ctx, "embed_bwd_kernel");
    return 0;
}

extern "C" int cuda_causal_softmax_forward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *inp,
                                           float *out)
{
    const size_t n = mats * (size_t)T;
    if (!n) return 0;
    causal_fwd_kernel<<<pacer_grid(n, 128), 128, 0, ctx->stream>>>(mats, T, scale, inp, out);
    KERNEL_CHECK(ctx, "causal_fwd_kernel");
    return 0;
}

extern "C" int cuda_causal_softmax_backward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *out,
                                            const float *dout, float *dinp, int set)
{
    const size_t n = mats * (size_t)T;
    if (!n) return 0;
    causal_bwd_kernel<<<pacer_grid(n, 128), 128, 0, ctx->stream>>>(mats, T, scale, out, dout, dinp, set);
    KERNEL_CHECK(ctx, "causal_bwd_kernel");
    return 0;
}
