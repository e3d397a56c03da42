/* kernels/cuda/bmm.cu - the product of two activations over batch dimensions (LAYER_BMM:
 * attention's Q K^T and A V), the twin of kernels/cpu/bmm.c: one cuBLAS strided-batched
 * SGEMM per pass instead of one OpenBLAS call per matrix pair.
 *
 * Letters: G pairs, a (G, M, K), b (G, K, N), out (G, M, N), every buffer row-major as in
 * ops.h. cuBLAS is column-major, and a row-major (R, C) matrix is the column-major (C, R)
 * one with leading dimension C (fc.cu's rule), so:
 *   out (M, N)  = a b        ->  out^T (N, M) = b^T (N, K) x a^T (K, M)
 *   da (M, K)  += dout b^T   ->  da^T (K, M) += op_T(b^T) (K, N) x dout^T (N, M)
 *   db (K, N)  += a^T dout   ->  db^T (N, K) += dout^T (N, M) x op_T(a^T) (M, K)
 * Each backward GEMM reads only the inputs and dout, so da and db may be one buffer (the
 * two launches run in turn on the stream). The handle runs CUBLAS_DEFAULT_MATH (ctx.cu):
 * fp32, never TF32; the sums are cuBLAS's order, not OpenBLAS's (test_cuda_parity's
 * TOL_FC).
 */
#include "cuda_common.h"

extern "C" int cuda_bmm_forward(cuda_ctx_t *ctx, int G, int M, int K, int N, const float *a, const float *b, float *out)
{
    if (G <= 0 || M <= 0 || N <= 0) return 0;
    if (K <= 0) {
        CUDA_CHECK(ctx, cudaMemsetAsync(out, 0, (size_t)G * M * N * sizeof(float), ctx->stream), "memset bmm out");
        return 0;
    }
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(ctx,
                 cublasSgemmStridedBatched(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, N, (long long)K * N,
                                           a, K, (long long)M * K, &zero, out, N, (long long)M * N, G),
                 "bmm forward GEMM (strided batched)");
    return 0;
}

extern "C" int cuda_bmm_backward(cuda_ctx_t *ctx, int G, int M, int K, int N, const float *a, const float *b,
                                 const float *dout, float *da, float *db)
{
    if (G <= 0 || M <= 0 || K <= 0 || N <= 0) return 0;
    const float one = 1.0f;
    if (da)
        CUBLAS_CHECK(ctx,
                     cublasSgemmStridedBatched(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, K, M, N, &one, b, N,
                                               (long long)K * N, dout, N, (long long)M * N, &one, da, K,
                                               (long long)M * K, G),
                     "bmm input-gradient GEMM (first input)");
    if (db)
        CUBLAS_CHECK(ctx,
                     cublasSgemmStridedBatched(ctx->cublas, CUBLAS_OP_N, CUBLAS_OP_T, N, K, M, &one, dout, N,
                                               (long long)M * N, a, K, (long long)M * K, &one, db, N, (long long)K * N,
                                               G),
                     "bmm input-gradient GEMM (second input)");
    return 0;
}
