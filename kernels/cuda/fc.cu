/* kernels/cuda/fc.cu - fully connected layer and ONNX Gemm on cuBLAS,
 * out = alpha * inp x W' + beta * bias (ops.h's gemm_desc_t; fc is the (OUT, IN) layout with
 * alpha = beta = 1).
 *
 * Letters: B batch, IN OUT widths.
 *
 * cuBLAS is column-major; a row-major (R, C) matrix is the column-major (C, R) matrix with
 * the same leading dimension C. So, with every buffer row-major as in ops.h:
 * layout (OUT, IN), W' = W^T (PyTorch's Linear, Gemm transB = 1):
 *   out  (B, OUT)  = inp (B, IN) x W^T      ->  out^T (OUT, B) = op_T(W) (OUT, IN) x inp^T (IN, B)
 *   dW   (OUT, IN) = dout^T x inp           ->  dW^T (IN, OUT) = inp^T (IN, B) x op_T(dout^T) (B, OUT)
 *   dinp (B, IN)  += dout (B, OUT) x W      ->  dinp^T (IN, B) += W^T (IN, OUT) x dout^T (OUT, B)
 * layout (IN, OUT), W' = W (Gemm transB = 0, MatMul + Add):
 *   out  (B, OUT)  = inp (B, IN) x W        ->  out^T (OUT, B) = W^T (OUT, IN) x inp^T (IN, B)
 *   dW   (IN, OUT) = inp^T x dout           ->  dW^T (OUT, IN) = dout^T (OUT, B) x op_T(inp^T) (B, IN)
 *   dinp (B, IN)  += dout (B, OUT) x W^T    ->  dinp^T (IN, B) += op_T(W^T) (IN, OUT) x dout^T (OUT, B)
 * alpha scales each GEMM (cuBLAS's alpha, as OpenBLAS's in fc.c); beta scales the bias once
 * in the pre-fill and its gradient once after the column sums.
 * The handle runs CUBLAS_DEFAULT_MATH (set in ctx.cu): fp32 stays fp32, never TF32.
 */
#include "cuda_common.h"

/* out (B, OUT) = beta * bias broadcast over rows (beta == 1: a copy, as fc.c), or 0 without
 * a bias */
__global__ void fill_rows_kernel(float *out, const float *bias, size_t n, int OUT, float beta)
{
    GRID_STRIDE(i, n)
    {
        const float v = bias ? bias[i % (size_t)OUT] : 0.0f;
        out[i] = beta == 1.0f ? v : __fmul_rn(beta, v);
    }
}

/* dbias[o] = beta * sum over b of dout[b, o], the sum in double; one thread per column. */
__global__ void col_sum_kernel(const float *dout, float *dbias, int B, int OUT, float beta)
{
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OUT) return;
    double s = 0.0;
    for (int b = 0; b < B; b++) s += (double)dout[(size_t)b * OUT + o];
    dbias[o] = beta == 1.0f ? (float)s : __fmul_rn((float)s, beta);
}

extern "C" int cuda_gemm_forward(cuda_ctx_t *ctx, const gemm_desc_t *d, int B, const float *inp, const float *weight,
                                 const float *bias, float *out)
{
    const int IN = d->IN, OUT = d->OUT;
    if (B <= 0 || OUT <= 0) return 0;
    const size_t n = (size_t)B * OUT;
    if (bias || IN <= 0) {
        /* pre-filling with beta * bias and using beta = 1 in the GEMM adds it (as fc.c) */
        fill_rows_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(out, bias, n, OUT, d->beta);
        KERNEL_CHECK(ctx, "fill_rows_kernel");
    }
    if (IN <= 0) return 0;
    const float alpha = d->alpha, beta = bias ? 1.0f : 0.0f;
    if (d->layout == GEMM_W_OUT_IN)
        CUBLAS_CHECK(ctx,
                     cublasSgemm(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, OUT, B, IN, &alpha, weight, IN, inp, IN, &beta,
                                 out, OUT),
                     "fc forward GEMM");
    else
        CUBLAS_CHECK(ctx,
                     cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, OUT, B, IN, &alpha, weight, OUT, inp, IN, &beta,
                                 out, OUT),
                     "gemm forward GEMM (weight (IN, OUT))");
    return 0;
}

extern "C" int cuda_gemm_backward(cuda_ctx_t *ctx, const gemm_desc_t *d, int B, const float *inp, const float *weight,
                                  const float *dout, float *dinp, float *dweight, float *dbias)
{
    const int IN = d->IN, OUT = d->OUT;
    if (OUT <= 0) return 0;
    if (dbias) {
        if (B <= 0) {
            CUDA_CHECK(ctx, cudaMemsetAsync(dbias, 0, (size_t)OUT * sizeof(float), ctx->stream), "memset dbias");
        } else {
            col_sum_kernel<<<(OUT + 127) / 128, 128, 0, ctx->stream>>>(dout, dbias, B, OUT, d->beta);
            KERNEL_CHECK(ctx, "col_sum_kernel");
        }
    }
    if (IN <= 0) return 0;
    if (B <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        CUDA_CHECK(ctx, cudaMemsetAsync(dweight, 0, (size_t)OUT * IN * sizeof(float), ctx->stream), "memset dweight");
        return 0;
    }
    const float alpha = d->alpha, zero = 0.0f, one = 1.0f;
    if (d->layout == GEMM_W_OUT_IN) {
        CUBLAS_CHECK(ctx,
                     cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_T, IN, OUT, B, &alpha, inp, IN, dout, OUT, &zero,
                                 dweight, IN),
                     "fc weight-gradient GEMM");
        if (dinp)
            CUBLAS_CHECK(ctx,
                         cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, IN, B, OUT, &alpha, weight, IN, dout, OUT,
                                     &one, dinp, IN),
                         "fc input-gradient GEMM");
    } else {
        CUBLAS_CHECK(ctx,
                     cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_T, OUT, IN, B, &alpha, dout, OUT, inp, IN, &zero,
                                 dweight, OUT),
                     "gemm weight-gradient GEMM (weight (IN, OUT))");
        if (dinp)
            CUBLAS_CHECK(ctx,
                         cublasSgemm(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, IN, B, OUT, &alpha, weight, OUT, dout, OUT,
                                     &one, dinp, IN),
                         "gemm input-gradient GEMM (weight (IN, OUT))");
    }
    return 0;
}

static const gemm_desc_t *fc_desc(gemm_desc_t *d, int IN, int OUT)
{
    d->IN = IN;
    d->OUT = OUT;
    d->layout = GEMM_W_OUT_IN;
    d->alpha = 1.0f;
    d->beta = 1.0f;
    return d;
}

extern "C" int cuda_fc_forward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, const float *weight,
                               const float *bias, float *out)
{
    gemm_desc_t d;
    return cuda_gemm_forward(ctx, fc_desc(&d, IN, OUT), B, inp, weight, bias, out);
}

extern "C" int cuda_fc_backward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, const float *weight,
                                const float *dout, float *dinp, float *dweight, float *dbias)
{
    gemm_desc_t d;
    return cuda_gemm_backward(ctx, fc_desc(&d, IN, OUT), B, inp, weight, dout, dinp, dweight, dbias);
}
