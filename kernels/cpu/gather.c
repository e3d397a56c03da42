/* kernels/cpu/gather.c - a parameter table gathered by constant indices (ops.h's
 * gather_param_forward): Swin's relative position bias, table[index] of one tensor. */
#include "ops.h"

void gather_param_forward(size_t n, size_t tcount, const float *map, const float *table, float *out)
{
    for (size_t j = 0; j < n; j++) {
        const float k = map[j];
        out[j] = k >= 0.0f && k < (float)tcount ? table[(size_t)k] : 0.0f;
    }
}

void gather_param_backward(size_t n, size_t tcount, const float *map, const float *dout, float *dtable)
{
    for (size_t k = 0; k < tcount; k++) dtable[k] = 0.0f;
    for (size_t j = 0; j < n; j++) {
        const float k = map[j];
        if (k >= 0.0f && k < (float)tcount) dtable[(size_t)k] += dout[j];
    }
}
