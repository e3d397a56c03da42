/* kernels/cpu/blas_core.c - see blas_core.h. */
#include "blas_core.h"

#include <cblas.h>
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_isa.h"

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

const char *blas_core_by_flags(void)
{
    unsigned a, b, c, d;
    const unsigned long long x = cpu_os_states();
    if (!x || !__get_cpuid(1, &a, &b, &c, &d)) return NULL;
    const int fma = (c & bit_FMA) != 0, os_avx = (x & CPU_OS_AVX) == CPU_OS_AVX,
              os_avx512 = (x & CPU_OS_AVX512) == CPU_OS_AVX512;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return NULL;
    const unsigned avx512 = bit_AVX512F | bit_AVX512CD | bit_AVX512BW | bit_AVX512DQ | bit_AVX512VL;
    if (os_avx512 && (b & avx512) == avx512) return "SkylakeX";
    if (os_avx && fma && (b & bit_AVX2)) return "Haswell";
    return NULL;
}

/* 1 SSE-era kernels, 2 AVX2, 3 AVX-512; 0 unknown */
static int width(const char *core)
{
    static const char *const sse[] = {"Prescott", "Core2",     "Penryn",     "Dunnington", "Nehalem",
                                      "Atom",     "Katmai",    "Coppermine", "Northwood",  "Banias",
                                      "Opteron",  "Barcelona", "Sandybridge"};
    static const char *const avx2[] = {"Haswell", "Zen"};
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; i < sizeof sse / sizeof sse[0]; i++)
        if (strcmp(core, sse[i]) == 0) return 1;
    for (size_t i = 0; i < sizeof avx2 / sizeof avx2[0]; i++)
        if (strcmp(core, avx2[i]) == 0) return 2;
    for (size_t i = 0; i < sizeof avx512 / sizeof avx512[0]; i++)
        if (strcmp(core, avx512[i]) == 0) return 3;
    return 0;
}

int blas_core_narrower(const char *a, const char *b)
{
    int wa = width(a), wb = width(b);
    return wa > 0 && wb > 0 && wa < wb;
}

void blas_core_choose(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") || getenv("PACER_BLAS_REPLACED")) return;
    const char *picked = getenv("PACER_BLAS_PICKED");
    if (!picked || !*picked) picked = blas_core();
    const char *want = blas_core_by_flags();
    if (!want || !blas_core_narrower(picked, want)) return;
    if (setenv("OPENBLAS_CORETYPE", want, 1) != 0 || setenv("PACER_BLAS_REPLACED", picked, 1) != 0) return;
    execv("/proc/self/exe", argv);
    fprintf(stderr,
            "warning: OpenBLAS runs its %s kernels where this CPU's flags allow %s (cannot run again with "
            "OPENBLAS_CORETYPE=%s; set it by hand)\n",
            picked, want, want);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("PACER_BLAS_REPLACED");
}

const char *blas_core_replaced(void)
{
    const char *r = getenv("PACER_BLAS_REPLACED");
    return r && *r ? r : NULL;
}
