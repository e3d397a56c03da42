/* kernels/ref/optim.c - the reference optimizer step (ref.h): torch.optim.AdamW's rule
 * as its documentation writes it, in double. */
#include <math.h>

#include "ref.h"

void ref_adamw_step(size_t n, double *w, const double *g, double *m, double *v, double lr, double beta1, double beta2,
                    double eps, double weight_decay, long t)
{
    const double bc1 = 1.0 - pow(beta1, (double)t), bc2 = 1.0 - pow(beta2, (double)t);
    for (size_t i = 0; i < n; i++) {
        w[i] -= lr * weight_decay * w[i];
        m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
        const double mhat = m[i] / bc1, vhat = v[i] / bc2;
        w[i] -= lr * mhat / (sqrt(vhat) + eps);
    }
}
