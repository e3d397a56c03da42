/* kernels/cpu/bmm.c - the product of two activations over batch dimensions (ops.h's
 * bmm_forward): attention's Q K^T and A V, one OpenBLAS call per matrix pair. */
#include <cblas.h>

#include "ops.h"

void bmm_forward(int G, int M, int K, int N, const float *a, const float *b, float *out)
{
    for (int g = 0; g < G; g++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a + (size_t)g * M * K, K,
                    b + (size_t)g * K * N, N, 0.0f, out + (size_t)g * M * N, N);
}

void bmm_backward_set(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da,
                      int set_a, float *db, int set_b)
{
    /* beta 0 writes C without reading it; beta 1 adds the same product (the bits of adding
     * into zeros) */
    const float beta_a = set_a ? 0.0f : 1.0f, beta_b = set_b ? 0.0f : 1.0f;
    for (int g = 0; g < G; g++) {
        const float *dg = dout + (size_t)g * M * N;
        /* da += dout b^T, db += a^T dout: each reads only the inputs, so da and db may alias
         * (when both add) */
        if (da)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dg, N, b + (size_t)g * K * N, N, beta_a,
                        da + (size_t)g * M * K, K);
        if (db)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, a + (size_t)g * M * K, K, dg, N, beta_b,
                        db + (size_t)g * K * N, N);
    }
}

void bmm_backward(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da, float *db)
{
    bmm_backward_set(G, M, K, N, a, b, dout, da, 0, db, 0);
}
