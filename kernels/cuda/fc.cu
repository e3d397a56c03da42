/* kernels/cuda/fc.cu - fully connected layer on cuBLAS, out = inp x W^T + bias.
 *
 * Letters: B batch, IN OUT widths.
 *
 * cuBLAS is column-major; a row-major (R, C) matrix is the column-major (C, R) matrix with
 * the same leading dimension C. So, with every buffer row-major as in ops.h:
 *   out  (B, OUT)  = inp (B, IN) x W^T      ->  out^T (OUT, B) = op_T(W) (OUT, IN) x inp^T (IN, B)
 *   dW   (OUT, IN) = dout^T x inp           ->  dW^T (IN, OUT) = inp^T (IN, B) x op_T(dout^T) (B, OUT)
 *   dinp (B, IN)  += dout (B, OUT) x W      ->  dinp^T (IN, B) += W^T (IN, OUT) x dout^T (OUT, B)
 * The handle runs CUBLAS_DEFAULT_MATH (set in ctx.cu): fp32 stays fp32, never TF32.
 */
#include "cuda_common.h"

/* out (B, OUT) = bias broadcast over rows, or 0 without a bias */
__global__ void fill_rows_kernel(float *out, const float *bias, size_t n, int OUT)
{
    GRID_STRIDE(i, n) out[i] = bias ? bias[i % (size_t)OUT] : 0.0f;
}

/* dbias[o] = sum over b of dout[b, o], in double; one thread per column. */
__global__ void col_sum_kernel(const float *dout, float *dbias, int B, int OUT)
{
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OUT) return;
    double s = 0.0;
    for (int b = 0; b < B; b++) s += (double)dout[(size_t)b * OUT + o];
    dbias[o] = (float)s;
}

extern "C" int cuda_fc_forward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, const float *weight,
                               const float *bias, float *out)
{
    if (B <= 0 || OUT <= 0) return 0;
    const size_t n = (size_t)B * OUT;
    if (bias || IN <= 0) {
        /* pre-filling with the bias and using beta = 1 adds it inside the GEMM (as fc.c) */
        fill_rows_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(out, bias, n, OUT);
        KERNEL_CHECK(ctx, "fill_rows_kernel");
    }
    if (IN <= 0) return 0;
    const float one = 1.0f, beta = bias ? 1.0f : 0.0f;
    CUBLAS_CHECK(ctx,
                 cublasSgemm(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, OUT, B, IN, &one, weight, IN, inp, IN, &beta, out,
                             OUT),
                 "fc forward GEMM");
    return 0;
}

extern "C" int cuda_fc_backward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, const float *weight,
                                const float *dout, float *dinp, float *dweight, float *dbias)
{
    if (OUT <= 0) return 0;
    if (dbias) {
        if (B <= 0) {
            CUDA_CHECK(ctx, cudaMemsetAsync(dbias, 0, (size_t)OUT * sizeof(float), ctx->stream), "memset dbias");
        } else {
            col_sum_kernel<<<(OUT + 127) / 128, 128, 0, ctx->stream>>>(dout, dbias, B, OUT);
            KERNEL_CHECK(ctx, "col_sum_kernel");
        }
    }
    if (IN <= 0) return 0;
    if (B <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        CUDA_CHECK(ctx, cudaMemsetAsync(dweight, 0, (size_t)OUT * IN * sizeof(float), ctx->stream), "memset dweight");
        return 0;
    }
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(ctx,
                 cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_T, IN, OUT, B, &one, inp, IN, dout, OUT, &zero,
                             dweight, IN),
                 "fc weight-gradient GEMM");
    if (dinp)
        CUBLAS_CHECK(ctx,
                     cublasSgemm(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, IN, B, OUT, &one, weight, IN, dout, OUT, &one,
                                 dinp, IN),
                     "fc input-gradient GEMM");
    return 0;
}
