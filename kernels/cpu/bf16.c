/* kernels/cpu/bf16.c - see bf16.h. */
#include "bf16.h"

/* One clone a vector width, each bf16_round's bits: no two iterations touch one element,
 * in place included, which ivdep tells the vectoriser (else it checks for overlap on
 * every row of a few dozen floats). */
__attribute__((target_clones("avx512f", "avx2", "default"))) void bf16_round_rows(int rows, int cols, const float *src,
                                                                                  size_t ld, float *dst)
{
    for (int r = 0; r < rows; r++) {
        const float *s = src + (size_t)r * ld;
        float *d = dst + (size_t)r * cols;
#pragma GCC ivdep
        for (int c = 0; c < cols; c++) d[c] = bf16_round(s[c]);
    }
}

/* The same clones: the bf16 values widened (a shift), each row's run contiguous. */
__attribute__((target_clones("avx512f", "avx2", "default"))) void
bf16_widen_rows(int rows, int cols, const uint16_t *src, size_t ld, float *dst)
{
    for (int r = 0; r < rows; r++) {
        const uint16_t *s = src + (size_t)r * ld;
        float *d = dst + (size_t)r * cols;
#pragma GCC ivdep
        for (int c = 0; c < cols; c++) d[c] = bf16_to_float(s[c]);
    }
}
