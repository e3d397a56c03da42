/* kernels/cpu/blas_core.c - see blas_core.h. */
#include "blas_core.h"

#include <cblas.h>
#include <string.h>

const char *blas_core(void)
{
    const char *c = openblas_get_corename();
    return c && *c ? c : "unknown";
}

int blas_core_avx512(void)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    const char *c = blas_core();
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (strcmp(c, avx512[i]) == 0) return 1;
    return 0;
}
