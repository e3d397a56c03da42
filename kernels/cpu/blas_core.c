/* kernels/cpu/blas_core.c - see blas_core.h. */
#include "blas_core.h"

#include <cblas.h>

const char *blas_core(void)
{
    const char *c = openblas_get_corename();
    return c && *c ? c : "unknown";
}
