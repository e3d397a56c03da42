/* kernels/cuda/gather.cu - a parameter table gathered by constant indices (ops.h's
 * gather_param_forward and gather_param_backward): Swin's relative position bias.
 *
 * The backward gives one thread to each table element, which walks the n outputs in
 * increasing j and adds those that read it, as the CPU's loop meets them: the CPU's bits,
 * no atomics (tables and index maps are small: a few thousand elements each).
 */
#include "cuda_common.h"

__global__ void gather_param_fwd_kernel(size_t n, size_t tcount, const float *map, const float *table, float *out)
{
    GRID_STRIDE(j, n)
    {
        const float k = map[j];
        out[j] = k >= 0.0f && k < (float)tcount ? table[(size_t)k] : 0.0f;
    }
}

__global__ void gather_param_bwd_kernel(size_t n, size_t tcount, const float *map, const float *dout, float *dtable)
{
    GRID_STRIDE(k, tcount)
    {
        float acc = 0.0f;
        for (size_t j = 0; j < n; j++)
            if (map[j] == (float)k) acc = __fadd_rn(acc, dout[j]);
        dtable[k] = acc;
    }
}

/* fwd: out (n) from table; else dtable (tcount) from dout (n) */
static int gather_run(cuda_ctx_t *ctx, size_t n, size_t tcount, const float *map, const float *src, float *dst, int fwd)
{
    const size_t threads = fwd ? n : tcount;
    if (!threads) return 0;
    if (fwd) {
        gather_param_fwd_kernel<<<pacer_grid(threads, 256), 256, 0, ctx->stream>>>(n, tcount, map, src, dst);
        KERNEL_CHECK(ctx, "gather_param_fwd_kernel");
    } else {
        gather_param_bwd_kernel<<<pacer_grid(threads, 128), 128, 0, ctx->stream>>>(n, tcount, map, src, dst);
        KERNEL_CHECK(ctx, "gather_param_bwd_kernel");
    }
    return 0;
}

extern "C" int cuda_gather_param_forward(cuda_ctx_t *ctx, size_t n, size_t tcount, const float *map, const float *table,
                                         float *out)
{
    return gather_run(ctx, n, tcount, map, table, out, 1);
}

extern "C" int cuda_gather_param_backward(cuda_ctx_t *ctx, size_t n, size_t tcount, const float *map, const float *dout,
                                          float *dtable)
{
    return gather_run(ctx, n, tcount, map, dout, dtable, 0);
}
