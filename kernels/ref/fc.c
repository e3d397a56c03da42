/* kernels/ref/fc.c - the reference fully connected layer and ONNX Gemm (ref.h). */
#include "ref.h"

#include <math.h>

#include "bf16.h"

void ref_fc_forward(int B, int IN, int OUT, const double *x, const double *w, const double *b, double *y)
{
    for (int i = 0; i < B; i++)
        for (int o = 0; o < OUT; o++) {
            double s = b ? b[o] : 0.0;
            for (int k = 0; k < IN; k++) s += x[(size_t)i * IN + k] * w[(size_t)o * IN + k];
            y[(size_t)i * OUT + o] = s;
        }
}

/* out = alpha * x W' + beta * b, W' from the layout (ops.h) */
void ref_gemm_forward(const gemm_desc_t *d, int B, const double *x, const double *w, const double *b, double *y)
{
    for (int i = 0; i < B; i++)
        for (int o = 0; o < d->OUT; o++) {
            double s = 0.0;
            for (int k = 0; k < d->IN; k++)
                s += x[(size_t)i * d->IN + k] *
                     (d->layout == GEMM_W_OUT_IN ? w[(size_t)o * d->IN + k] : w[(size_t)k * d->OUT + o]);
            y[(size_t)i * d->OUT + o] = d->alpha * s + (b ? d->beta * b[o] : 0.0);
        }
}

void ref_bmm_forward(int G, int M, int K, int N, const double *a, const double *b, double *y)
{
    for (int g = 0; g < G; g++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0.0;
                for (int k = 0; k < K; k++) s += a[((size_t)g * M + i) * K + k] * b[((size_t)g * K + k) * N + j];
                y[((size_t)g * M + i) * N + j] = s;
            }
}

static double rounded(int trans, const float *X, int ld, int r, int c)
{
    return (double)bf16_round(trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c]);
}

void ref_gemm_bf16(int ta, int tb, int M, int N, int K, double alpha, const float *A, int lda, const float *B, int ldb,
                   double beta, const float *c, int ldc, double *y, double *mag)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0.0, a = 0.0;
            for (int k = 0; k < K; k++) {
                double p = rounded(ta, A, lda, m, k) * rounded(tb, B, ldb, k, n);
                s += p;
                a += fabs(p);
            }
            double cv = c && beta != 0.0 ? (double)c[(size_t)m * ldc + n] : 0.0;
            y[(size_t)m * N + n] = alpha * s + beta * cv;
            if (mag) mag[(size_t)m * N + n] = fabs(alpha) * a + fabs(beta * cv);
        }
}
