/* kernels/cpu/fc.c - fully connected layer and ONNX Gemm, out = alpha * inp x W' + beta * bias,
 * on OpenBLAS. fc_* is gemm with the (OUT, IN) layout and alpha = beta = 1: the same calls,
 * the same bits. */
#include <cblas.h>
#include <string.h>

#include "ops.h"

static const gemm_desc_t *fc_desc(gemm_desc_t *d, int IN, int OUT)
{
    *d = (gemm_desc_t){.IN = IN, .OUT = OUT, .layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    return d;
}

void fc_forward(int B, int IN, int OUT, const float *inp, const float *weight, const float *bias, float *out)
{
    gemm_desc_t d;
    gemm_forward(fc_desc(&d, IN, OUT), B, inp, weight, bias, out);
}

void fc_backward(int B, int IN, int OUT, const float *inp, const float *weight, const float *dout, float *dinp,
                 float *dweight, float *dbias)
{
    gemm_desc_t d;
    gemm_backward(fc_desc(&d, IN, OUT), B, inp, weight, dout, dinp, dweight, dbias);
}

void gemm_forward(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *bias, float *out)
{
    const int IN = d->IN, OUT = d->OUT;
    const float beta = d->beta;
    if (B <= 0 || OUT <= 0) return;
    /* Pre-filling out with beta * bias and using beta = 1 in the GEMM adds it for free
     * (beta = 1: a plain copy, no rounding). */
    if (bias) {
        for (int b = 0; b < B; b++) {
            float *o = out + (size_t)b * OUT;
            if (beta == 1.0f) memcpy(o, bias, (size_t)OUT * sizeof(float));
            else
                for (int j = 0; j < OUT; j++) o[j] = beta * bias[j];
        }
    }
    if (IN <= 0) {
        /* no GEMM with an empty inner dimension: OpenBLAS rejects lda = 0 */
        if (!bias) memset(out, 0, (size_t)B * OUT * sizeof(float));
        return;
    }
    /* out (B, OUT) = alpha * inp (B, IN) x W^T (IN, OUT), or x W (IN, OUT) */
    if (d->layout == GEMM_W_OUT_IN)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, OUT, IN, d->alpha, inp, IN, weight, IN,
                    bias ? 1.0f : 0.0f, out, OUT);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, OUT, IN, d->alpha, inp, IN, weight, OUT,
                    bias ? 1.0f : 0.0f, out, OUT);
}

void gemm_backward(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *dout, float *dinp,
                   float *dweight, float *dbias)
{
    const int IN = d->IN, OUT = d->OUT;
    if (OUT <= 0) return;
    if (dbias) {
        /* column sums, row by row so the inner loop is contiguous and vectorises */
        if (B <= 0) memset(dbias, 0, (size_t)OUT * sizeof(float));
        else memcpy(dbias, dout, (size_t)OUT * sizeof(float));
        for (int b = 1; b < B; b++) {
            const float *g = dout + (size_t)b * OUT;
            for (int o = 0; o < OUT; o++) dbias[o] += g[o];
        }
        if (d->beta != 1.0f)
            for (int o = 0; o < OUT; o++) dbias[o] *= d->beta;
    }
    if (IN <= 0) return;
    if (B <= 0) {
        /* parameter gradients are written even when nothing flows into them */
        memset(dweight, 0, (size_t)OUT * IN * sizeof(float));
        return;
    }
    if (d->layout == GEMM_W_OUT_IN) {
        /* dW (OUT, IN) = alpha * dout^T (OUT, B) x inp (B, IN) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OUT, IN, B, d->alpha, dout, OUT, inp, IN, 0.0f, dweight,
                    IN);
        /* dinp (B, IN) += alpha * dout (B, OUT) x W (OUT, IN) */
        if (dinp)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, IN, OUT, d->alpha, dout, OUT, weight, IN, 1.0f,
                        dinp, IN);
    } else {
        /* dW (IN, OUT) = alpha * inp^T (IN, B) x dout (B, OUT) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, IN, OUT, B, d->alpha, inp, IN, dout, OUT, 0.0f, dweight,
                    OUT);
        /* dinp (B, IN) += alpha * dout (B, OUT) x W^T (OUT, IN) */
        if (dinp)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, IN, OUT, d->alpha, dout, OUT, weight, OUT, 1.0f,
                        dinp, IN);
    }
}
