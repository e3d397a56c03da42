/* kernels/cpu/gemm_bf16.h - matrix products of bf16 operands with float32 sums: what
 * autocast's bf16 runs and mixed precision means (Micikevicius et al., 2018; Megatron).
 *
 *   C (M, N) = alpha * op(A) (M, K) x op(B) (K, N) + beta * C
 *
 * row-major as cblas_sgemm (op(X) = X or X^T by trans), with every element of A and B
 * rounded to bf16 first (bf16.h: nearest, ties to even), each product exact in float32,
 * the K products summed in float32, then alpha and beta applied in float32; beta = 0
 * never reads C. One defined result up to the order of the sums, which each path
 * documents:
 *   portable     OpenBLAS's sgemm on the rounded operands (its blocking's order);
 *   avx512_bf16  for each output one float32 sum in k order, two products at a time as
 *                vdpbf16ps adds them;
 *   amx          tdpbf16ps over blocks of 32 k, each block's 16 pairs into the running
 *                sum in the tile unit's own order.
 * On the two units a product whose packed A would pass 4 MiB runs in pieces: by rows
 * (the same sums), or, where B is as large, by k: each piece's sum as above, then alpha
 * times it added into C piece after piece (C = alpha S1 + beta C, then C = alpha Si + C),
 * K / 32 more roundings at most: the bound below with K + K / 32 for K.
 * On the two bf16 units an operand below float32's smallest normal (2^-126) counts as
 * zero and a sum there flushes to zero; the portable path keeps such values. Whatever the
 * order, each output's error against the exact sum of the rounded operands' products is
 * at most gamma(K + 2) * (|alpha| sum_k |a_k b_k| + |beta c|) + (K + 2) 2^-126 * (the
 * same plus one), gamma(n) = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability,
 * 3.1): tests/unit/test_gemm_bf16.c checks each path against that bound.
 *
 * Scratch (the packed operands: A whole or a piece of it, B a chunk of columns) is each
 * calling thread's own, grown on its first product of a new size and kept: a training
 * step's products allocate nothing after the first. */
#ifndef PACER_GEMM_BF16_H
#define PACER_GEMM_BF16_H

#include "cpu_isa.h"

/* On cpu_isa()'s path. transA/transB: 0 as stored, 1 transposed (lda/ldb as cblas). */
void gemm_bf16(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
               int ldb, float beta, float *C, int ldc);
/* On a given path, which the CPU must have (tests compare the paths). */
void gemm_bf16_on(cpu_isa_t isa, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);

/* C = alpha * op(A) op(B) + bias, bias one float per column of C, C not read: the bits of
 * gemm_bf16_on with beta = 1 on C whose rows were each set to the bias first (alpha * sum
 * rounded, then the bias added), without that pass over C (a linear layer's forward). */
void gemm_bf16_bias_on(cpu_isa_t isa, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, const float *bias, float *C, int ldc);

/* Keeps op(B) (K, N) packed for every later product that reads it (the same pointer,
 * transposition, shape and stride) until gemm_bf16_forget: a layer's weight, packed once a
 * step rather than once per product and thread. From one thread, outside the products
 * (the products only read what is kept); the caller must call gemm_bf16_forget before B
 * changes. Returns 0, or -1 when it cannot keep it (out of memory, too many kept): the
 * products then pack it themselves. The buffers stay for the next step's packing. With
 * one kept operand (gemm_bf16_keep_all(0)) and the kernels on one thread it keeps none:
 * the one product that reads it packs a chunk at a time, as it goes, in less memory. */
int gemm_bf16_keep_b(int transB, int K, int N, const float *B, int ldb);
/* Every kept operand is stale (the weights are about to change, or have). */
void gemm_bf16_forget(void);
/* 0 (the default): only the operand kept last stays kept (a training step reads each
 * weight once per layout: keeping one avoids packing it once per thread, in memory the
 * size of the largest); 1: every one until gemm_bf16_forget (generation reads every
 * weight for every token). Forgets what is kept. */
void gemm_bf16_keep_all(int all);

#endif
