/* kernels/ref/batchnorm.c - the reference batch norm (ref.h). */
#include <math.h>

#include "ref.h"

/* Training-mode forward in double; mean and biased variance of the batch. */
void ref_batchnorm_forward_train(int B, int C, int HW, const double *x, const double *gamma, const double *beta,
                                 double eps, double *y, double *mean, double *var)
{
    const double M = (double)B * HW;
    for (int c = 0; c < C; c++) {
        double s = 0.0, q = 0.0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++) s += x[((size_t)b * C + c) * HW + i];
        double m = s / M;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++) {
                double v = x[((size_t)b * C + c) * HW + i] - m;
                q += v * v;
            }
        double vr = q / M, inv = 1.0 / sqrt(vr + eps);
        if (mean) mean[c] = m;
        if (var) var[c] = vr;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < HW; i++) {
                size_t k = ((size_t)b * C + c) * HW + i;
                y[k] = gamma[c] * (x[k] - m) * inv + beta[c];
            }
    }
}

void ref_layernorm_forward(int rows, int D, double eps, const double *x, const double *w, const double *b, double *y)
{
    for (int r = 0; r < rows; r++) {
        const double *a = x + (size_t)r * D;
        double m = 0.0, v = 0.0;
        for (int j = 0; j < D; j++) m += a[j];
        m /= D;
        for (int j = 0; j < D; j++) v += (a[j] - m) * (a[j] - m);
        v /= D;
        for (int j = 0; j < D; j++) y[(size_t)r * D + j] = (a[j] - m) / sqrt(v + eps) * w[j] + b[j];
    }
}
