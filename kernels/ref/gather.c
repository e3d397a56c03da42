/* kernels/ref/gather.c - the reference of a gathered parameter table (ref.h). */
#include "ref.h"

void ref_gather_param_forward(size_t n, size_t tcount, const double *map, const double *table, double *y)
{
    for (size_t j = 0; j < n; j++) y[j] = map[j] >= 0 && map[j] < (double)tcount ? table[(size_t)map[j]] : 0.0;
}
