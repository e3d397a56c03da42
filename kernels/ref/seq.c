/* kernels/ref/seq.c - the references of the language models' kernels (ref.h). */
#include <math.h>

#include "ref.h"

void ref_embed_forward(size_t rows, int V, int E, const double *ids, const double *table, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (int e = 0; e < E; e++)
            y[r * (size_t)E + (size_t)e] = ids[r] >= 0 && ids[r] < V ? table[(size_t)ids[r] * (size_t)E + (size_t)e]
                                                                     : 0.0;
}

void ref_causal_softmax(size_t mats, int T, double scale, const double *x, double *y)
{
    for (size_t m = 0; m < mats; m++)
        for (int i = 0; i < T; i++) {
            const double *a = x + (m * (size_t)T + (size_t)i) * (size_t)T;
            double *b = y + (m * (size_t)T + (size_t)i) * (size_t)T, mx = -INFINITY, sum = 0.0;
            for (int j = 0; j <= i; j++) mx = fmax(mx, scale * a[j]);
            for (int j = 0; j <= i; j++) sum += exp(scale * a[j] - mx);
            for (int j = 0; j < T; j++) b[j] = j <= i ? exp(scale * a[j] - mx) / sum : 0.0;
        }
}
