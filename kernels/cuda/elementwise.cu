/* kernels/cuda/elementwise.cu - ReLU, the option-A residual add, global average pooling and
 * small vector helpers (own kernels).
 *
 * Letters: B batch, C input channels, OC output channels, H W / OH OW spatial sizes, HW a
 * plane, n a flat count.
 *
 * Additions and products go through __fadd_rn/__fmul_rn/__fdiv_rn, which nvcc never fuses
 * into FMA, so each kernel rounds exactly like its loop in kernels/cpu/elementwise.c (the
 * CPU clones use no FMA either). gap_forward even keeps the CPU's eight-lane summation
 * order, so it too is bit-identical.
 */
#include "cuda_common.h"

__global__ void relu_fwd_kernel(const float *inp, float *out, size_t n)
{
    /* NaN > 0 is false, so a NaN maps to 0 (as on the CPU) */
    GRID_STRIDE(i, n) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

__global__ void relu_bwd_kernel(const float *out, const float *dout, float *dinp, size_t n)
{
    GRID_STRIDE(i, n) dinp[i] = __fadd_rn(dinp[i], out[i] > 0.0f ? dout[i] : 0.0f);
}

__global__ void accumulate_kernel(const float *src, float *dst, size_t n)
{
    GRID_STRIDE(i, n) dst[i] = __fadd_rn(dst[i], src[i]);
}

__global__ void scale_kernel(float *x, float k, size_t n) { GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], k); }

/* out (B, OC, OH, OW) = a + S(x); one thread per output element. */
__global__ void residual_fwd_kernel(const float *a, const float *x, float *out, size_t n, int C, int H, int W, int OC,
                                    int OH, int OW, int s, int off)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        const int oc = (int)((i / ((size_t)OH * OW)) % OC);
        const size_t b = i / ((size_t)OC * OH * OW);
        const int c = oc - off;
        if (c < 0 || c >= C) {
            out[i] = a[i]; /* zero-padded channel */
        } else {
            const float xv = x[((b * C + c) * H + (size_t)oh * s) * W + (size_t)ow * s];
            out[i] = __fadd_rn(a[i], xv);
        }
    }
}

/* dx[b, c, oh*s, ow*s] += dout[b, c + off, oh, ow]; one thread per (b, c, oh, ow). The
 * subsampling is injective, so no two threads touch the same dx element. */
__global__ void residual_bwd_x_kernel(const float *dout, float *dx, size_t n, int C, int H, int W, int OC, int OH,
                                      int OW, int s, int off)
{
    GRID_STRIDE(i, n)
    {
        const int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        const int c = (int)((i / ((size_t)OH * OW)) % C);
        const size_t b = i / ((size_t)C * OH * OW);
        const float g = dout[((b * OC + c + off) * OH + oh) * OW + ow];
        float *dst = dx + ((b * C + c) * H + (size_t)oh * s) * W + (size_t)ow * s;
        *dst = __fadd_rn(*dst, g);
    }
}

/* out (B*C) = mean of each plane of HW; one thread per plane, the CPU's eight lanes. */
__global__ void gap_fwd_kernel(const float *inp, float *out, size_t planes, int HW)
{
    GRID_STRIDE(pl, planes)
    {
        const float *x = inp + pl * HW;
        float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        int i = 0;
        for (; i + 8 <= HW; i += 8)
            for (int j = 0; j < 8; j++) acc[j] = __fadd_rn(acc[j], x[i + j]);
        float s = 0.0f;
        for (; i < HW; i++) s = __fadd_rn(s, x[i]);
        for (int j = 0; j < 8; j++) s = __fadd_rn(s, acc[j]);
        out[pl] = __fdiv_rn(s, (float)HW);
    }
}

__global__ void gap_bwd_kernel(const float *dout, float *dinp, size_t n, int HW)
{
    GRID_STRIDE(i, n) dinp[i] = __fadd_rn(dinp[i], __fdiv_rn(dout[i / HW], (float)HW));
}

extern "C" int cuda_relu_forward(cuda_ctx_t *ctx, size_t n, const float *inp, float *out)
{
    if (!n) return 0;
    relu_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, n);
    KERNEL_CHECK(ctx, "relu_fwd_kernel");
    return 0;
}

extern "C" int cuda_relu_backward(cuda_ctx_t *ctx, size_t n, const float *out, const float *dout, float *dinp)
{
    if (!dinp || !n) return 0;
    relu_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(out, dout, dinp, n);
    KERNEL_CHECK(ctx, "relu_bwd_kernel");
    return 0;
}

extern "C" int cuda_accumulate(cuda_ctx_t *ctx, size_t n, const float *src, float *dst)
{
    if (!n) return 0;
    accumulate_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(src, dst, n);
    KERNEL_CHECK(ctx, "accumulate_kernel");
    return 0;
}

extern "C" int cuda_scale(cuda_ctx_t *ctx, size_t n, float *x, float k)
{
    if (!n) return 0;
    scale_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(x, k, n);
    KERNEL_CHECK(ctx, "scale_kernel");
    return 0;
}

extern "C" int cuda_residual_add_forward(cuda_ctx_t *ctx, const shortcut_desc_t *d, int B, const float *a,
                                         const float *x, float *out)
{
    const size_t n = (size_t)B * d->OC * d->OH * d->OW;
    if (!n) return 0;
    residual_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(a, x, out, n, d->C, d->H, d->W, d->OC, d->OH,
                                                                     d->OW, d->stride, (d->OC - d->C) / 2);
    KERNEL_CHECK(ctx, "residual_fwd_kernel");
    return 0;
}

extern "C" int cuda_residual_add_backward(cuda_ctx_t *ctx, const shortcut_desc_t *d, int B, const float *dout,
                                          float *da, float *dx)
{
    if (B <= 0) return 0;
    if (da && cuda_accumulate(ctx, (size_t)B * d->OC * d->OH * d->OW, dout, da) != 0) return -1;
    if (!dx) return 0;
    const size_t n = (size_t)B * d->C * d->OH * d->OW;
    residual_bwd_x_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dx, n, d->C, d->H, d->W, d->OC, d->OH,
                                                                       d->OW, d->stride, (d->OC - d->C) / 2);
    KERNEL_CHECK(ctx, "residual_bwd_x_kernel");
    return 0;
}

extern "C" int cuda_gap_forward(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, float *out)
{
    const size_t planes = (size_t)B * C;
    if (!planes || HW <= 0) return 0;
    gap_fwd_kernel<<<pacer_grid(planes, 128), 128, 0, ctx->stream>>>(inp, out, planes, HW);
    KERNEL_CHECK(ctx, "gap_fwd_kernel");
    return 0;
}

extern "C" int cuda_gap_backward(cuda_ctx_t *ctx, int B, int C, int HW, const float *dout, float *dinp)
{
    const size_t n = (size_t)B * C * HW;
    if (!dinp || !n) return 0;
    gap_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dinp, n, HW);
    KERNEL_CHECK(ctx, "gap_bwd_kernel");
    return 0;
}
