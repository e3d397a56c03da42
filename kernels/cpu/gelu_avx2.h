/* kernels/cpu/gelu_avx2.h - the exact GELU's forward and backward in AVX2 with FMA
 * (gelu_avx2.c), which unary_forward and unary_backward(_set) take for UNARY_GELU on a CPU
 * that has both; declared apart from ops.h so that test_ops can hold them to the reference
 * whatever the dispatch chose. */
#ifndef PACER_GELU_AVX2_H
#define PACER_GELU_AVX2_H

#include <stddef.h>

/* Whether this CPU runs the functions below (AVX2 and FMA); without, calling them is an
 * illegal instruction. */
int gelu_avx2_ok(void);
/* y = x / 2 * (1 + erf(x / sqrt(2))); y may be x */
void gelu_forward_avx2(size_t n, const float *x, float *y);
/* d += g * (Phi(x) + x phi(x)) (set 0), or d = that + 0.0f (set 1), Phi read back from the
 * forward's output y as unary_grad's UNARY_GELU does */
void gelu_backward_avx2(size_t n, const float *x, const float *y, const float *g, float *d, int set);

#endif
