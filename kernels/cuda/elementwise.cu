/* kernels/cuda/elementwise.cu - the functions of one input (ReLU, LeakyRelu, sigmoid, tanh,
 * Clip, HardSigmoid, HardSwish, Exp, Neg, Sqrt, Reciprocal, Abs, Pow: one launcher over
 * kernels/cpu/scalar_fn.h's table), the option-A residual add, Mul, concatenation,
 * dropout, global average pooling and small vector helpers (own kernels).
 *
 * Letters: B batch, C input channels, OC output channels, H W / OH OW spatial sizes, HW a
 * plane, n a flat count.
 *
 * Additions and products go through __fadd_rn/__fmul_rn/__fdiv_rn (scalar_fn.h's UFN_*
 * on the device), which nvcc never fuses into FMA, so each kernel rounds exactly like its
 * loop in kernels/cpu/elementwise.c (the CPU clones use no FMA either); only CUDA's expf,
 * tanhf and powf differ from glibc's, by an ulp or two. gap_forward even keeps the CPU's
 * eight-lane summation order, so it too is bit-identical.
 */
#include "cuda_common.h"

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

/* ---- the activations of imported graphs, concatenation, dropout --------------------------- */

/* One input of a channel concatenation: inp (B, Ci, HW) is the slice [off, off + Ci) of the
 * OC channels of out (B, OC, HW). fwd: out slice = inp; else dinp += dout slice. One thread
 * per element of the input, so within one launch no two threads touch the same element. */
__global__ void concat_slice_kernel(const float *src, float *dst, size_t n, size_t plane_in, size_t plane_out,
                                    size_t slice_off, int fwd)
{
    GRID_STRIDE(i, n)
    {
        const size_t b = i / plane_in, r = i % plane_in;
        const size_t o = b * plane_out + slice_off + r;
        if (fwd) dst[o] = src[i];
        else dst[i] = __fadd_rn(dst[i], src[o]);
    }
}

/* Inverted dropout with ops.h's stateless mask (dropout_keep is __host__ __device__: the
 * same code draws the same mask on both sides, bit for bit). fwd: out = keep ? inp * scale
 * : 0; else dinp += keep ? dout * scale : 0. */
__global__ void dropout_kernel(const float *src, float *dst, size_t n, uint64_t key, uint32_t threshold, float scale,
                               int fwd)
{
    GRID_STRIDE(i, n)
    {
        const float v = dropout_keep(key, (uint64_t)i, threshold) ? __fmul_rn(src[i], scale) : 0.0f;
        dst[i] = fwd ? v : __fadd_rn(dst[i], v);
    }
}

/* dropout_kernel with one draw per sample of per elements (stochastic depth, mode "row"). */
__global__ void stochastic_depth_kernel(const float *src, float *dst, size_t n, size_t per, uint64_t key,
                                        uint32_t threshold, float scale, int fwd)
{
    GRID_STRIDE(i, n)
    {
        const float v = dropout_keep(key, (uint64_t)(i / per), threshold) ? __fmul_rn(src[i], scale) : 0.0f;
        dst[i] = fwd ? v : __fadd_rn(dst[i], v);
    }
}

/* Mul: one thread per element of out (b read at its plane where HW2 is 1). */
__global__ void mul_fwd_kernel(const float *a, const float *b, float *out, size_t n, int HW, int bcast)
{
    GRID_STRIDE(i, n) out[i] = __fmul_rn(a[i], b[bcast ? i / (size_t)HW : i]);
}

/* da += dout * b and, for equal shapes, db += dout * a in the same thread (da and db may
 * be one buffer: Mul(x, x)). */
__global__ void mul_bwd_kernel(const float *a, const float *b, const float *dout, float *da, float *db, size_t n,
                               int HW, int bcast)
{
    GRID_STRIDE(i, n)
    {
        const float g = dout[i];
        if (da) da[i] = __fadd_rn(da[i], __fmul_rn(g, b[bcast ? i / (size_t)HW : i]));
        if (db && !bcast) db[i] = __fadd_rn(db[i], __fmul_rn(g, a[i]));
    }
}

/* The broadcast input's gradient: one thread per plane sums dout * a over it in order. */
__global__ void mul_bwd_bcast_kernel(const float *a, const float *dout, float *db, size_t planes, int HW)
{
    GRID_STRIDE(p, planes)
    {
        float acc = 0.0f;
        for (int j = 0; j < HW; j++) acc = __fadd_rn(acc, __fmul_rn(dout[p * HW + j], a[p * HW + j]));
        db[p] = __fadd_rn(db[p], acc);
    }
}

extern "C" int cuda_mul_forward(cuda_ctx_t *ctx, int B, int C, int HW, int HW2, const float *a, const float *b,
                                float *out)
{
    const size_t n = (size_t)B * C * HW;
    if (!n) return 0;
    mul_fwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(a, b, out, n, HW, HW2 != HW);
    KERNEL_CHECK(ctx, "mul_fwd_kernel");
    return 0;
}

extern "C" int cuda_mul_backward(cuda_ctx_t *ctx, int B, int C, int HW, int HW2, const float *a, const float *b,
                                 const float *dout, float *da, float *db)
{
    const size_t n = (size_t)B * C * HW, planes = (size_t)B * C;
    if (!n) return 0;
    if (da || (db && HW2 == HW)) {
        mul_bwd_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(a, b, dout, da, db, n, HW, HW2 != HW);
        KERNEL_CHECK(ctx, "mul_bwd_kernel");
    }
    if (db && HW2 != HW) {
        mul_bwd_bcast_kernel<<<pacer_grid(planes, 256), 256, 0, ctx->stream>>>(a, dout, db, planes, HW);
        KERNEL_CHECK(ctx, "mul_bwd_bcast_kernel");
    }
    return 0;
}

/* One launch per input, in order, on the one stream: for the backward of a concatenation of
 * a tensor with itself (dinp[0] == dinp[1]) the second launch adds after the first, in the
 * CPU's order, and no launch has two threads on one element. */
static int concat_run(cuda_ctx_t *ctx, int B, int HW, int n, const int *C, const float *const *inp, float *out,
                      const float *dout, float *const *dinp)
{
    size_t OC = 0;
    for (int k = 0; k < n; k++) OC += (size_t)C[k];
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        const size_t plane_in = (size_t)C[k] * HW, cnt = (size_t)B * plane_in;
        if (cnt) {
            if (out)
                concat_slice_kernel<<<pacer_grid(cnt, 256), 256, 0, ctx->stream>>>(inp[k], out, cnt, plane_in, OC * HW,
                                                                                   off * HW, 1);
            else if (dinp[k])
                concat_slice_kernel<<<pacer_grid(cnt, 256), 256, 0, ctx->stream>>>(dout, dinp[k], cnt, plane_in,
                                                                                   OC * HW, off * HW, 0);
            KERNEL_CHECK(ctx, "concat_slice_kernel");
        }
        off += (size_t)C[k];
    }
    return 0;
}

extern "C" int cuda_concat_forward(cuda_ctx_t *ctx, int B, int HW, int n, const int *C, const float *const *inp,
                                   float *out)
{
    return concat_run(ctx, B, HW, n, C, inp, out, NULL, NULL);
}

extern "C" int cuda_concat_backward(cuda_ctx_t *ctx, int B, int HW, int n, const int *C, const float *dout,
                                    float *const *dinp)
{
    return concat_run(ctx, B, HW, n, C, NULL, NULL, dout, dinp);
}

/* dropout.c's keep_scale: 1 / (1 - p) in float, 0 when everything is dropped. */
static float dropout_scale(float p) { return p >= 1.0f ? 0.0f : 1.0f / (1.0f - p); }

extern "C" int cuda_dropout_forward(cuda_ctx_t *ctx, size_t n, float p, uint64_t key, const float *inp, float *out)
{
    if (!n) return 0;
    const uint32_t t = dropout_threshold(p);
    if (t == 0) {
        /* p = 0: the identity, no hashing (dropout.c) */
        if (out != inp)
            CUDA_CHECK(ctx, cudaMemcpyAsync(out, inp, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream),
                       "dropout copy");
        return 0;
    }
    dropout_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, n, key, t, dropout_scale(p), 1);
    KERNEL_CHECK(ctx, "dropout_kernel");
    return 0;
}

extern "C" int cuda_dropout_backward(cuda_ctx_t *ctx, size_t n, float p, uint64_t key, const float *dout, float *dinp)
{
    if (!dinp || !n) return 0;
    const uint32_t t = dropout_threshold(p);
    if (t == 0) return cuda_accumulate(ctx, n, dout, dinp);
    dropout_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dinp, n, key, t, dropout_scale(p), 0);
    KERNEL_CHECK(ctx, "dropout_kernel");
    return 0;
}

extern "C" int cuda_stochastic_depth_forward(cuda_ctx_t *ctx, size_t n, size_t per, float p, uint64_t key,
                                             const float *inp, float *out)
{
    const uint32_t t = dropout_threshold(p);
    if (t == 0 || !per) return cuda_dropout_forward(ctx, n, 0.0f, key, inp, out);
    if (!n) return 0;
    stochastic_depth_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, n, per, key, t, dropout_scale(p), 1);
    KERNEL_CHECK(ctx, "stochastic_depth_kernel");
    return 0;
}

extern "C" int cuda_stochastic_depth_backward(cuda_ctx_t *ctx, size_t n, size_t per, float p, uint64_t key,
                                              const float *dout, float *dinp)
{
    if (!dinp || !n) return 0;
    const uint32_t t = dropout_threshold(p);
    if (t == 0 || !per) return cuda_accumulate(ctx, n, dout, dinp);
    stochastic_depth_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dout, dinp, n, per, key, t, dropout_scale(p),
                                                                         0);
    KERNEL_CHECK(ctx, "stochastic_depth_kernel");
    return 0;
}

/* ---- the functions of one input: one kernel template, one launcher ------------------------ */

/* OP is a template argument, so each instantiation's switch in unary_fn folds away. */
template <unary_op_t OP> __global__ void unary_fwd_kernel(const float *inp, float *out, size_t n, float a, float b)
{
    GRID_STRIDE(i, n) out[i] = unary_fn(OP, inp[i], a, b);
}

/* dinp += unary_grad at each element, reading only the array OP's derivative reads */
template <unary_op_t OP>
__global__ void unary_bwd_kernel(const float *inp, const float *out, const float *dout, float *dinp, size_t n, float a,
                                 float b)
{
    const int reads_x = unary_grad_reads_input(OP), reads_y = unary_grad_reads_output(OP);
    GRID_STRIDE(i, n)
    {
        const float x = reads_x ? inp[i] : 0.0f, y = reads_y ? out[i] : 0.0f;
        dinp[i] = __fadd_rn(dinp[i], unary_grad(OP, x, y, dout[i], a, b));
    }
}

/* forward (dout NULL) or backward of OP */
template <unary_op_t OP>
static int unary_run(cuda_ctx_t *ctx, float a, float b, size_t n, const float *inp, const float *out, const float *dout,
                     float *y)
{
    if (!dout) {
        unary_fwd_kernel<OP><<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, y, n, a, b);
        KERNEL_CHECK(ctx, "unary_fwd_kernel");
    } else {
        unary_bwd_kernel<OP><<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, out, dout, y, n, a, b);
        KERNEL_CHECK(ctx, "unary_bwd_kernel");
    }
    return 0;
}

/* the instantiation of op; y: the output (forward) or dinp (backward) */
static int unary_dispatch(cuda_ctx_t *ctx, unary_op_t op, float a, float b, size_t n, const float *inp,
                          const float *out, const float *dout, float *y)
{
#define UNARY_CASE(OP) \
    case OP: return unary_run<OP>(ctx, a, b, n, inp, out, dout, y)
    switch (op) {
        UNARY_CASE(UNARY_EXP);
        UNARY_CASE(UNARY_NEG);
        UNARY_CASE(UNARY_SQRT);
        UNARY_CASE(UNARY_RECIPROCAL);
        UNARY_CASE(UNARY_ABS);
        UNARY_CASE(UNARY_POW);
        UNARY_CASE(UNARY_RELU);
        UNARY_CASE(UNARY_LEAKY_RELU);
        UNARY_CASE(UNARY_SIGMOID);
        UNARY_CASE(UNARY_TANH);
        UNARY_CASE(UNARY_CLIP);
        UNARY_CASE(UNARY_HARDSIGMOID);
        UNARY_CASE(UNARY_HARDSWISH);
        UNARY_CASE(UNARY_ERF);
        UNARY_CASE(UNARY_GELU);
    default: break;
    }
#undef UNARY_CASE
    return pacer_cuda_fail(ctx, __FILE__, __LINE__, "cuda_unary", "not a function of scalar_fn.h's table",
                           "a unary_op_t value below UNARY_OP_COUNT");
}

extern "C" int cuda_unary_forward(cuda_ctx_t *ctx, unary_op_t op, float a, float b, size_t n, const float *inp,
                                  float *out)
{
    return n ? unary_dispatch(ctx, op, a, b, n, inp, NULL, NULL, out) : 0;
}

extern "C" int cuda_unary_backward(cuda_ctx_t *ctx, unary_op_t op, float a, float b, size_t n, const float *inp,
                                   const float *out, const float *dout, float *dinp)
{
    return n && dinp ? unary_dispatch(ctx, op, a, b, n, inp, out, dout, dinp) : 0;
}
