/* kernels/cpu/gemm_bf16_act.h - activations stored in bf16, and the products that read them.
 *
 * At bf16 every matrix product rounds its operands to bf16 (gemm_bf16.h). An activation
 * that only such products read can therefore be stored rounded, in half the memory, by
 * its producer: bf16_act_store rounds as the products on the same path would (to nearest,
 * ties to even; on the bf16 units' paths a float32 denormal becomes a zero of its sign,
 * as their vcvtne2ps2bf16 makes it), and the products below take that operand as stored.
 * They give the bits of gemm_bf16_on on the float32 activation: the same rounded values
 * in the same packed blocks (gemm_bf16_pack.h) or, on the portable path, the same
 * float32 matrices handed to OpenBLAS. The bf16 operand's pack is a copy of half the bytes
 * instead of a conversion of float32. */
#ifndef PACER_GEMM_BF16_ACT_H
#define PACER_GEMM_BF16_ACT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_isa.h"

/* dst[i] = src[i] rounded to bf16 as the products on path isa round an operand (above);
 * bf16_act_store on cpu_isa()'s path. */
void bf16_act_store_on(cpu_isa_t isa, size_t n, const float *src, uint16_t *dst);
void bf16_act_store(size_t n, const float *src, uint16_t *dst);
/* bf16_act_store_on over rows: row r's n values from src + r * lds to dst + r * ldd (one
 * dispatch for all: a convolution rounds its planes a row at a time into padded rows). */
void bf16_act_store_rows(cpu_isa_t isa, size_t rows, size_t n, const float *src, size_t lds, uint16_t *dst, size_t ldd);

/* C (M, N) = alpha * A op(B) + bias (bias one float per column, C not read), or with bias
 * NULL alpha * A op(B) + beta * C: A (M, K) row-major bf16 (row stride lda), op(B) float32
 * as gemm_bf16_on's (tb, ldb). The bits of gemm_bf16_on (gemm_bf16_bias_on with a bias) on
 * A's values as float32. */
void gemm_bf16_a16_on(cpu_isa_t isa, int tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const float *B, int ldb, const float *bias, float beta, float *C, int ldc);
/* C (M, N) = alpha * A op(B) + bias (bias NULL: none), A (M, K) row-major, bf16 A16 where
 * not NULL, else float32 A; each result rounded as bf16_act_store_on(isa, ...) rounds it,
 * into C16 (row stride ldc) where not NULL, else into C as floats: the bits of
 * gemm_bf16_a16_on or gemm_bf16_bias_on, then bf16_act_store_on. 0, or -1 (nothing
 * written) on the portable path, with K <= 0 or without scratch: the caller rounds a
 * float32 product itself. */
int gemm_bf16_rounded_on(cpu_isa_t isa, int tb, int M, int N, int K, float alpha, const float *A, const uint16_t *A16,
                         int lda, const float *B, int ldb, const float *bias, float *C, uint16_t *C16, int ldc);
/* C (M, N) = alpha * op(A) B + beta * C: op(A) float32 as gemm_bf16_on's (ta, lda), B (K,
 * N) row-major bf16 (row stride ldb): a weight gradient dY^T X of a bf16 X. The bits of
 * gemm_bf16_on on B's values as float32. */
void gemm_bf16_b16_on(cpu_isa_t isa, int ta, int M, int N, int K, float alpha, const float *A, int lda,
                      const uint16_t *B, int ldb, float beta, float *C, int ldc);
/* C (M, N) = alpha * op(A) op(B) + beta * C with either operand, or both, stored in bf16:
 * A16 (M, K) row-major where not NULL (ta then 0), else op(A) float32 as gemm_bf16_on's;
 * B16 where not NULL, (K, N) row-major, or (N, K) for tb 1 (B^T stored), else op(B)
 * float32. The bits of gemm_bf16_on on the bf16 operands' values as float32 (a fused
 * attention's q, k and v stored in bf16). */
void gemm_bf16_mixed_on(cpu_isa_t isa, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                        const uint16_t *A16, int lda, const float *B, const uint16_t *B16, int ldb, float beta,
                        float *C, int ldc);

#endif
