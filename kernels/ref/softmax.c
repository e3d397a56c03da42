/* kernels/ref/softmax.c - the reference loss (ref.h). */
#include <math.h>

#include "ref.h"

double ref_softmax_xent(int B, int N, const double *x, const int32_t *labels, double eps, double *probs)
{
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const double *row = x + (size_t)b * N;
        double m = row[0];
        for (int j = 1; j < N; j++) m = fmax(m, row[j]);
        double s = 0.0;
        for (int j = 0; j < N; j++) s += exp(row[j] - m);
        if (probs)
            for (int j = 0; j < N; j++) probs[(size_t)b * N + j] = exp(row[j] - m) / s;
        /* -log p_j = log(s) + m - x_j */
        double mean_nlp = 0.0;
        for (int j = 0; j < N; j++) mean_nlp += log(s) + m - row[j];
        total += (1.0 - eps) * (log(s) + m - row[labels[b]]) + eps * mean_nlp / N;
    }
    return total / B;
}

void ref_softmax_axis(int take_log, int rows, int n, int inner, const double *x, double *y)
{
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < inner; k++) {
            const double *a = x + (size_t)r * n * inner + k;
            double *o = y + (size_t)r * n * inner + k;
            double m = a[0];
            for (int j = 1; j < n; j++) m = fmax(m, a[(size_t)j * inner]);
            double s = 0.0;
            for (int j = 0; j < n; j++) s += exp(a[(size_t)j * inner] - m);
            for (int j = 0; j < n; j++) {
                const double v = a[(size_t)j * inner] - m;
                o[(size_t)j * inner] = take_log ? v - log(s) : exp(v) / s;
            }
        }
}
