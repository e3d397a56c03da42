/* kernels/cpu/tr8_avx2.h - an 8x8 transpose of floats in AVX2 registers (avx2_tr8), which
 * the views' transposed panels (view.c) and bmm's packing of a transposed operand (bmm.c)
 * both take; x86-64 with GCC or clang only, called from functions compiled for AVX2. */
#ifndef PACER_KERNELS_CPU_TR8_AVX2_H
#define PACER_KERNELS_CPU_TR8_AVX2_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* r[k] (k < 8) transposed in place: lane l of r[k] becomes lane k of r[l] */
__attribute__((target("avx2"))) static inline void avx2_tr8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
}
#endif

#endif
