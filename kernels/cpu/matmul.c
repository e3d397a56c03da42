/* kernels/cpu/matmul.c - see matmul.h. */
#include "matmul.h"

#include <cblas.h>
#include <string.h>

#include "cpu_isa.h"
#include "gemm_bf16.h"
#include "gemm_bf16_act.h"

static mm_precision_t precision = MM_FP32;

const char *mm_precision_name(mm_precision_t p) { return p == MM_BF16 ? "bf16" : "fp32"; }

int mm_precision_parse(const char *s, mm_precision_t *out)
{
    if (s && strcmp(s, "fp32") == 0) *out = MM_FP32;
    else if (s && strcmp(s, "bf16") == 0) *out = MM_BF16;
    else return -1;
    return 0;
}

void mm_set_precision(mm_precision_t p) { precision = p; }

mm_precision_t mm_precision(void) { return precision; }

const char *mm_kernel(void)
{
    static const char *const BF16[CPU_ISA_N] = {"portable-bf16", "avx512-bf16", "amx-bf16"};
    return precision == MM_BF16 ? BF16[cpu_isa()] : "openblas-fp32";
}

void mm_sgemm(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc)
{
    if (precision == MM_BF16) gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                    lda, B, ldb, beta, C, ldc);
}

void mm_sgemm_bias(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float *C, int ldc)
{
    if (precision == MM_BF16) {
        gemm_bf16_bias_on(cpu_isa(), ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
        return;
    }
    for (int m = 0; m < M; m++) memcpy(C + (size_t)m * ldc, bias, (size_t)N * sizeof(float));
    mm_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, C, ldc);
}

void mm_sgemm_a16(mm_trans_t tb, int M, int N, int K, float alpha, const uint16_t *A, int lda, const float *B, int ldb,
                  const float *bias, float beta, float *C, int ldc)
{
    gemm_bf16_a16_on(cpu_isa(), tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
}

void mm_sgemm_b16(mm_trans_t ta, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                  float beta, float *C, int ldc)
{
    gemm_bf16_b16_on(cpu_isa(), ta, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void mm_sgemm_mixed(mm_trans_t ta, mm_trans_t tb, int M, int N, int K, float alpha, const float *A, const uint16_t *A16,
                    int lda, const float *B, const uint16_t *B16, int ldb, float beta, float *C, int ldc)
{
    gemm_bf16_mixed_on(cpu_isa(), ta, tb, M, N, K, alpha, A, A16, lda, B, B16, ldb, beta, C, ldc);
}

void mm_keep_weight(mm_trans_t tb, int K, int N, const float *B, int ldb)
{
    if (precision == MM_BF16) gemm_bf16_keep_b(tb, K, N, B, ldb);
}

void mm_weights_changed(void) { gemm_bf16_forget(); }

void mm_keep_all_weights(int all) { gemm_bf16_keep_all(all); }
