/* kernels/cpu/gelu_simd.h - the exact GELU's forward and backward in vector registers
 * (gelu_simd.c): eight lanes with AVX2 and FMA, sixteen with AVX-512, the same bits at both
 * widths. unary_forward and unary_backward(_set) take the widest the CPU has for
 * UNARY_GELU; declared apart from ops.h so that test_ops can hold each width to the
 * reference and to the other whatever the dispatch chose. */
#ifndef PACER_GELU_SIMD_H
#define PACER_GELU_SIMD_H

#include <stddef.h>
#include <stdint.h>

/* Whether this CPU runs the _avx2 functions below (AVX2 and FMA) and the _avx512 ones
 * (AVX-512F, its registers saved by the OS); without, calling them is an illegal
 * instruction. */
int gelu_avx2_ok(void);
int gelu_avx512_ok(void);
/* y = x / 2 * (1 + erf(x / sqrt(2))); y may be x */
void gelu_forward_avx2(size_t n, const float *x, float *y);
void gelu_forward_avx512(size_t n, const float *x, float *y);
/* d += g * (Phi(x) + x phi(x)) (set 0), or d = that + 0.0f (set 1), Phi read back from the
 * forward's output y as unary_grad's UNARY_GELU does */
void gelu_backward_avx2(size_t n, const float *x, const float *y, const float *g, float *d, int set);
void gelu_backward_avx512(size_t n, const float *x, const float *y, const float *g, float *d, int set);
/* The same on bf16 x and y (bf16 activations: model/plan.h's act_bf16), each value widened
 * as it is loaded: the bits of the functions above on the widened arrays. */
void gelu_forward_h_avx2(size_t n, const uint16_t *x, float *y);
void gelu_forward_h_avx512(size_t n, const uint16_t *x, float *y);
void gelu_backward_h_avx2(size_t n, const uint16_t *x, const uint16_t *y, const float *g, float *d, int set);
void gelu_backward_h_avx512(size_t n, const uint16_t *x, const uint16_t *y, const float *g, float *d, int set);

#endif
