/* kernels/cpu/gemv.c - see gemv.h. */
#include "gemv.h"

#include <cblas.h>
#include <string.h>

void gemv_forward(int IN, int OUT, const float *in, const float *w, const float *bias, float *out)
{
    if (OUT <= 0) return;
    if (bias) memcpy(out, bias, (size_t)OUT * sizeof(float));
    if (IN <= 0) {
        if (!bias) memset(out, 0, (size_t)OUT * sizeof(float));
        return;
    }
    cblas_sgemv(CblasRowMajor, CblasNoTrans, OUT, IN, 1.0f, w, IN, in, 1, bias ? 1.0f : 0.0f, out, 1);
}
