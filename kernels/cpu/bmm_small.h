/* kernels/cpu/bmm_small.h - bmm.c's small-product kernel for the other kernels here that
 * compose it (attention.c): products of operands read through strides, written through a
 * row stride, with the causal mask's skips. Not part of ops.h: its callers are kernels. */
#ifndef PACER_KERNELS_CPU_BMM_SMALL_H
#define PACER_KERNELS_CPU_BMM_SMALL_H

#include <stddef.h>

/* The packed right operand's bound in floats (32 KB on the stack): K rows of N rounded up
 * to 8. The ViT's largest is 65 x 16 (its transposed operands are 16 or 65 rows of 16 or 65
 * floats). bmm_small_ok holds every product's operands and output (M x N rounded) within it. */
#define BMM_PACK_MAX 8192

/* What a tile of the kernel may skip (bmm_causal_t's products, bmm_forward_causal and
 * bmm_backward_causal): nothing; the tiles wholly above the diagonal (their outputs unread);
 * the terms k past the tile's last row, or before its first row or first column (zeros). */
typedef enum { BMM_TRI_NONE, BMM_TRI_OUT_LOWER, BMM_TRI_K_LE_ROW, BMM_TRI_K_GE_ROW, BMM_TRI_K_GE_COL } bmm_tri_t;

/* Whether the kernel takes a (M, K) x (K, N) product and the two of its backward: AVX2 and
 * FMA, and each right operand within its packing buffer. */
int bmm_small_ok(int M, int K, int N);

/* C (M, N, rows ldc apart) = op(A) (M, K) op(B) (K, N) where set (each value + 0.0f), else
 * C += it: A(m, k) at A[m * am + k * ak], B(k, n) at B[k * bk + n * bn]. Each output is its
 * sum over k in order, by fused multiply-adds from zero, whatever the strides: the same
 * bits from a copy of an operand as from the operand read in place. Only where
 * bmm_small_ok (a no-op elsewhere). */
void bmm_strided(int M, int N, int K, const float *A, size_t am, size_t ak, const float *B, size_t bk, size_t bn,
                 float *C, size_t ldc, int set, bmm_tri_t tri);

#endif
