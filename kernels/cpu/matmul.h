/* kernels/cpu/matmul.h - the precision of the CPU kernels' matrix products.
 *
 * Every product of two matrices a CPU step computes (fully connected layers and ONNX Gemm,
 * MatMul and attention's two products, convolutions through their GEMMs, a tied head)
 * goes through mm_sgemm, which computes it as cblas_sgemm in float32 or, at MM_BF16, as
 * gemm_bf16.h's product of bf16-rounded operands with float32 sums (mixed precision as
 * autocast defines it: everything that is not a matrix product stays float32). Like the
 * kernels' threads (parallel.h), the precision is the process's: a worker sets it once,
 * before its first step, from its job's `precision`. At MM_BF16 the products that have
 * float32 kernels of their own take the bf16 units instead: convolutions leave the direct
 * and Winograd kernels for conv_amx.h's tiles on the AMX path (one group, stride 1) or
 * else im2col and the GEMM, small products leave bmm.c's own kernel, and
 * a causal attention runs as its layers (model.c); a depthwise convolution, which
 * multiplies no two matrices, stays float32. */
#ifndef PACER_MATMUL_H
#define PACER_MATMUL_H

#include <stdint.h>

typedef enum { MM_FP32 = 0, MM_BF16 = 1 } mm_precision_t;

/* The job spec's spelling: "fp32", "bf16". */
const char *mm_precision_name(mm_precision_t p);
int mm_precision_parse(const char *s, mm_precision_t *out);

void mm_set_precision(mm_precision_t p);
mm_precision_t mm_precision(void);

/* The kernels the products run on, for a summary: "openblas-fp32", or "amx-bf16",
 * "avx512-bf16", "portable-bf16" (cpu_isa.h's path). */
const char *mm_kernel(void);

/* op(X): X as stored or transposed */
typedef enum { MM_N = 0, MM_T = 1 } mm_trans_t;

/* cblas_sgemm's row-major product (C = alpha op(A) op(B) + beta C) at the process's
 * precision. */
void mm_sgemm(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

/* C = alpha op(A) op(B) + bias (one float per column; C not read), the bits of mm_sgemm
 * with beta = 1 on C whose rows hold the bias: at bf16 the bias is added as the sums are
 * written (gemm_bf16_bias_on), at fp32 C is filled first. */
void mm_sgemm_bias(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float *C, int ldc);

/* The products of an activation stored in bf16 (gemm_bf16_act.h: a model at bf16 keeps
 * the activations only products read so, model/plan.h's act_bf16): always at bf16, on
 * cpu_isa()'s path, whatever the process's precision. mm_sgemm_a16: C = alpha * A op(B) +
 * bias (bias NULL: + beta * C), A (M, K) row-major bf16; the bits of mm_sgemm_bias (or
 * mm_sgemm) at MM_BF16 on A's values. mm_sgemm_b16: C = alpha * op(A) B + beta * C, B (K,
 * N) row-major bf16; the bits of mm_sgemm at MM_BF16. */
void mm_sgemm_a16(mm_trans_t tb, int M, int N, int K, float alpha, const uint16_t *A, int lda, const float *B, int ldb,
                  const float *bias, float beta, float *C, int ldc);
void mm_sgemm_b16(mm_trans_t ta, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                  float beta, float *C, int ldc);
/* mm_sgemm at bf16 products with either operand, or both, stored in bf16 (A16, B16 where
 * not NULL: gemm_bf16_act.h's gemm_bf16_mixed_on), on cpu_isa()'s path */
void mm_sgemm_mixed(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, const uint16_t *A16,
                    int lda, const float *B, const uint16_t *B16, int ldb, float beta, float *C, int ldc);

/* At bf16, packs a weight op(B) once for the products that read it until
 * mm_weights_changed (gemm_bf16_keep_b); nothing at fp32. From one thread, outside a
 * par_run. Whoever runs layers that keep (fc.c's) calls mm_weights_changed before their
 * weights change or are freed: model.c does at each forward's start, each backward's end
 * and model_free. */
void mm_keep_weight(mm_trans_t tb, int K, int N, const float *B, int ldb);
/* The weights are about to change (or a new pass begins): kept packings are stale. */
void mm_weights_changed(void);
/* Whether every kept weight stays packed until mm_weights_changed (1: generation, which
 * reads each weight for every token) or only the last one (0, the default: a training
 * step reads each once per layout). */
void mm_keep_all_weights(int all);

#endif
