/* kernels/cuda/seq.cu - the language models' kernels (ops.h's embed_* and
 * causal_softmax_*): an embedding table read by token ids, and the causal softmax.
 *
 * The embedding's backward adds each table row's gradient rows in increasing row order, as
 * the CPU's loop meets them: the CPU's bits, no atomics. The rows that read one id are
 * chained first (next[r]: the next row of r's id; has_prev[r]: r is not its id's first), one
 * thread per row scanning forward, then one thread per (first row, element) walks its chain
 * and writes the table element: rows x E additions, not V x E x rows as a walk over every
 * row per table element was (223 ms of GPT-2 124M's step at B = 8, T = 1024 on an H200;
 * 0.60 ms now). The chains' forward scans cost up to rows^2 / 2 comparisons (every id
 * distinct): 33 M at those 8,192 rows, but quadratic beyond; a sort by id (counts, a scan,
 * a stable placement) is the step for batches of hundreds of long windows.
 * The table rows no id names are zeroed first, or left as they are when adding (a tied
 * reader's gradient). The causal softmax
 * gives a warp to each row of a score matrix and reads only its first i + 1 elements; its
 * sums run in another order than the CPU's loop (TOL_SOFTMAX).
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

static __device__ __forceinline__ int embed_id_ok(float id, int V) { return id >= 0.0f && id < (float)V; }

/* next[r]: the next row with r's id (-1: none); has_prev[q] = 1 for every row another
 * row's chain reaches (zeroed before). */
__global__ void embed_chain_kernel(size_t rows, int V, const float *ids, int32_t *next, int32_t *has_prev)
{
    GRID_STRIDE(r, rows)
    {
        const float id = ids[r];
        int32_t nx = -1;
        if (embed_id_ok(id, V))
            for (size_t q = r + 1; q < rows; q++)
                if (ids[q] == id) {
                    nx = (int32_t)q;
                    has_prev[q] = 1;
                    break;
                }
        next[r] = nx;
    }
}

__global__ void embed_bwd_kernel(size_t rows, int V, int E, const float *ids, const int32_t *next,
                                 const int32_t *has_prev, const float *dout, float *dtable, int add)
{
    GRID_STRIDE(j, rows * (size_t)E)
    {
        const size_t r = j / (size_t)E, e = j % (size_t)E;
        if (has_prev[r] || !embed_id_ok(ids[r], V)) continue;
        const size_t k = (size_t)ids[r] * (size_t)E + e;
        float acc = add ? dtable[k] : 0.0f;
        for (int32_t q = (int32_t)r; q >= 0; q = next[q]) acc = __fadd_rn(acc, dout[(size_t)q * E + e]);
        dtable[k] = acc;
    }
}

/* A warp per score row (rows w, w + warps, ...): its lanes take elements lane, lane + 32, ...
 * of the row's first i + 1, the maximum and the sums by shuffles (a thread per row read
 * its row alone, lanes a row apart: 59 ms of GPT-2 124M's step at B = 8, T = 1024). */
#define CAUSAL_WARPS_PER_BLOCK 8

static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void causal_fwd_kernel(size_t mats, int T, float scale, const float *inp, float *out)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (blockDim.x / 32), rows = mats * (size_t)T;
    for (size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows; row += warps) {
        const int i = (int)(row % (size_t)T);
        const float *x = inp + row * (size_t)T;
        float *y = out + row * (size_t)T;
        float mx = -INFINITY;
        for (int j = lane; j <= i; j += 32) mx = fmaxf(mx, x[j] * scale);
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int j = lane; j <= i; j += 32) {
            y[j] = expf(x[j] * scale - mx);
            sum += y[j];
        }
        const float inv = 1.0f / warp_sum(sum);
        for (int j = lane; j <= i; j += 32) y[j] *= inv;
        for (int j = i + 1 + lane; j < T; j += 32) y[j] = 0.0f;
    }
}

__global__ void causal_bwd_kernel(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp,
                                  int set)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (blockDim.x / 32), rows = mats * (size_t)T;
    for (size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows; row += warps) {
        const int i = (int)(row % (size_t)T);
        const float *y = out + row * (size_t)T, *g = dout + row * (size_t)T;
        float *d = dinp + row * (size_t)T;
        float dot = 0.0f;
        for (int j = lane; j <= i; j += 32) dot += y[j] * g[j];
        dot = warp_sum(dot);
        for (int j = lane; j <= i; j += 32) d[j] = (set ? 0.0f : d[j]) + scale * y[j] * (g[j] - dot);
        if (set)
            for (int j = i + 1 + lane; j < T; j += 32) d[j] = 0.0f;
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

extern "C" size_t cuda_embed_workspace(size_t rows) { return 2 * rows * sizeof(int32_t); }

extern "C" int cuda_embed_backward(cuda_ctx_t *ctx, size_t rows, int V, int E, const float *ids, const float *dout,
                                   float *dtable, int add, void *ws)
{
    if (!add) CUDA_CHECK(ctx, cudaMemsetAsync(dtable, 0, (size_t)V * E * sizeof(float), ctx->stream), "zero dtable");
    const size_t n = rows * (size_t)E;
    if (!n) return 0;
    if (rows > (size_t)INT32_MAX) /* the chains hold row numbers in int32 */
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "cuda_embed_backward", "more than 2^31 - 1 rows",
                               "a smaller batch");
    int32_t *next = (int32_t *)ws, *has_prev = next + rows;
    CUDA_CHECK(ctx, cudaMemsetAsync(has_prev, 0, rows * sizeof(int32_t), ctx->stream), "zero embed chains");
    embed_chain_kernel<<<pacer_grid(rows, 128), 128, 0, ctx->stream>>>(rows, V, ids, next, has_prev);
    KERNEL_CHECK(ctx, "embed_chain_kernel");
    embed_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(rows, V, E, ids, next, has_prev, dout, dtable, add);
    KERNEL_CHECK(ctx, "embed_bwd_kernel");
    return 0;
}

extern "C" int cuda_causal_softmax_forward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *inp,
                                           float *out)
{
    const size_t n = mats * (size_t)T;
    if (!n) return 0;
    causal_fwd_kernel<<<pacer_grid(n, CAUSAL_WARPS_PER_BLOCK), 32 * CAUSAL_WARPS_PER_BLOCK, 0, ctx->stream>>>(mats, T,
                                                                                                              scale,
                                                                                                              inp, out);
    KERNEL_CHECK(ctx, "causal_fwd_kernel");
    return 0;
}

extern "C" int cuda_causal_softmax_backward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *out,
                                            const float *dout, float *dinp, int set)
{
    const size_t n = mats * (size_t)T;
    if (!n) return 0;
    causal_bwd_kernel<<<pacer_grid(n, CAUSAL_WARPS_PER_BLOCK), 32 * CAUSAL_WARPS_PER_BLOCK, 0, ctx->stream>>>(
        mats, T, scale, out, dout, dinp, set);
    KERNEL_CHECK(ctx, "causal_bwd_kernel");
    return 0;
}
