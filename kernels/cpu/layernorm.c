/* kernels/cpu/layernorm.c - layer normalisation over the last axes (ops.h's
 * layernorm_forward): each row of D elements normalised alone by its own mean and biased
 * variance, then scaled and shifted per element. The statistics are recomputed by the
 * backward (no saved state: a row is read twice instead of keeping 2 floats per row per
 * sample, which the fixed aux arena could not hold at any batch). Sums in double. */
#include <math.h>
#include <string.h>

#include "ops.h"

/* mean and 1 / sqrt(var + eps) of one row */
static void row_stats(const float *x, int D, float eps, double *mean, double *invstd)
{
    double s = 0.0, q = 0.0;
    for (int j = 0; j < D; j++) s += x[j];
    *mean = s / D;
    for (int j = 0; j < D; j++) q += ((double)x[j] - *mean) * ((double)x[j] - *mean);
    *invstd = 1.0 / sqrt(q / D + (double)eps);
}

void layernorm_forward(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out)
{
    for (int r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * D;
        float *y = out + (size_t)r * D;
        double mean, invstd;
        row_stats(x, D, eps, &mean, &invstd);
        for (int j = 0; j < D; j++) y[j] = (float)(((double)x[j] - mean) * invstd) * w[j] + b[j];
    }
}

void layernorm_backward(int rows, int D, float eps, const float *inp, const float *w, const float *dout, float *dinp,
                        float *dw, float *db)
{
    memset(dw, 0, (size_t)D * sizeof *dw);
    memset(db, 0, (size_t)D * sizeof *db);
    for (int r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * D, *g = dout + (size_t)r * D;
        double mean, invstd, sg = 0.0, sgx = 0.0;
        row_stats(x, D, eps, &mean, &invstd);
        for (int j = 0; j < D; j++) {
            const double xh = ((double)x[j] - mean) * invstd, gw = (double)g[j] * w[j];
            sg += gw;
            sgx += gw * xh;
            dw[j] += (float)(g[j] * xh);
            db[j] += g[j];
        }
        if (!dinp) continue;
        float *d = dinp + (size_t)r * D;
        for (int j = 0; j < D; j++) {
            const double xh = ((double)x[j] - mean) * invstd;
            d[j] += (float)(invstd * ((double)g[j] * w[j] - sg / D - xh * sgx / D));
        }
    }
}
