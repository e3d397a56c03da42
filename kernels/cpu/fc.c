/* kernels/cpu/fc.c - fully connected layer, out = inp x W^T + bias, on OpenBLAS. */
#include <cblas.h>
#include <string.h>

#include "ops.h"

void fc_forward(int B, int IN, int OUT, const float *inp, const float *weight, const float *bias, float *out)
{
    if (B <= 0 || OUT <= 0) return;
    if (IN <= 0) {
        /* no GEMM with an empty inner dimension: OpenBLAS rejects lda = 0 */
        for (int b = 0; b < B; b++)
            for (int o = 0; o < OUT; o++) out[(size_t)b * OUT + o] = bias ? bias[o] : 0.0f;
        return;
    }
    /* Pre-filling out with the bias and using beta = 1 adds it for free in the GEMM. */
    if (bias)
        for (int b = 0; b < B; b++) memcpy(out + (size_t)b * OUT, bias, (size_t)OUT * sizeof(float));
    /* out (B, OUT) = inp (B, IN) x W^T (IN, OUT) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, OUT, IN, 1.0f, inp, IN, weight, IN, bias ? 1.0f : 0.0f, out,
                OUT);
}

void fc_backward(int B, int IN, int OUT, const float *inp, const float *weight, const float *dout, float *dinp,
                 float *dweight, float *dbias)
{
    if (OUT <= 0) return;
    if (dbias) {
        /* column sums, row by row so the inner loop is contiguous and vectorises */
        if (B <= 0) memset(dbias, 0, (size_t)OUT * sizeof(float));
        else memcpy(dbias, dout, (size_t)OUT * sizeof(float));
        for (int b = 1; b < B; b++) {
            const float *g = dout + (size_t)b * OUT;
            for (int o = 0; o < OUT; o++) dbias[o] += g[o];
        }
    }
    if (IN <= 0) return;
    if (B <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        memset(dweight, 0, (size_t)OUT * IN * sizeof(float));
        return;
    }
    /* dW (OUT, IN) = dout^T (OUT, B) x inp (B, IN) */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OUT, IN, B, 1.0f, dout, OUT, inp, IN, 0.0f, dweight, IN);
    /* dinp (B, IN) += dout (B, OUT) x W (OUT, IN) */
    if (dinp)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, IN, OUT, 1.0f, dout, OUT, weight, IN, 1.0f, dinp, IN);
}
