/* kernels/cpu/blas_core.c - see blas_core.h. */
#include "blas_core.h"

#include <cblas.h>
#include <string.h>

const char *blas_core(void)
{
    const char *c = openblas_get_corename();
    return c && *c ? c : "unknown";
}

static int named(const char *const *names, size_t n)
{
    const char *c = blas_core();
    for (size_t i = 0; i < n; i++)
        if (strcmp(c, names[i]) == 0) return 1;
    return 0;
}

int blas_core_avx512(void)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    return named(avx512, sizeof avx512 / sizeof avx512[0]);
}

int blas_core_avx2(void)
{
    static const char *const avx2[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"};
    return named(avx2, sizeof avx2 / sizeof avx2[0]);
}
