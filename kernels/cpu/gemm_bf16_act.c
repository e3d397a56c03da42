/* kernels/cpu/gemm_bf16_act.c - see gemm_bf16_act.h. The dispatch follows gemm_bf16.c's
 * run_on step for step (the bias, an empty inner dimension, the fallback without scratch),
 * so that each case gives its bits. */
#include "gemm_bf16_act.h"

#include <cblas.h>
#include <immintrin.h>
#include <string.h>

#include "bf16.h"
#include "gemm_bf16.h"
#include "gemm_bf16_pack.h"
#include "prefetch.h"

#define KB GEMM_BF16_KB
#define BLK GEMM_BF16_BLK
#define BLK_ELEMS GEMM_BF16_BLK_ELEMS

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* ---- storing ------------------------------------------------------------------------------ */

__attribute__((target_clones("avx512f", "avx2", "default"))) static void store_rne(size_t n, const float *src,
                                                                                   uint16_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = bf16_from_float(src[i]);
}

/* vcvtneps2bf16 sixteen at a time, the tail's under a mask: each element's own rounding.
 * src is mostly an activation written a layer ago and cold: asked for ahead (prefetch.h),
 * a convolution's input rounded a row at a time (bf16_act_store_rows) stalled on it. */
AVX512BF16 static void store_units(size_t n, const float *src, uint16_t *dst)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        prefetch_ahead(src, i, 0);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + i)));
    }
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(dst + i, k, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, src + i)));
    }
}

void bf16_act_store_on(cpu_isa_t isa, size_t n, const float *src, uint16_t *dst)
{
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (isa == CPU_ISA_PORTABLE) store_rne(n, src, dst);
    else store_units(n, src, dst);
}

void bf16_act_store(size_t n, const float *src, uint16_t *dst) { bf16_act_store_on(cpu_isa(), n, src, dst); }

void bf16_act_store_rows(cpu_isa_t isa, size_t rows, size_t n, const float *src, size_t lds, uint16_t *dst, size_t ldd)
{
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    for (size_t r = 0; r < rows; r++) {
        if (isa == CPU_ISA_PORTABLE) store_rne(n, src + r * lds, dst + r * ldd);
        else store_units(n, src + r * lds, dst + r * ldd);
    }
}

/* ---- packing a bf16 operand ---------------------------------------------------------------- */

/* ---- the products -------------------------------------------------------------------------- */

typedef gemm_bf16_opnd_t opnd_t;

/* element (r, c) of op(X) as the products take it: the bf16 value, or the float32 one
 * rounded */
static inline float value(const opnd_t *x, int r, int c)
{
    const size_t at = x->t ? (size_t)c * x->ld + r : (size_t)r * x->ld + c;
    return x->h ? bf16_to_float(x->h[at]) : bf16_round(x->f[at]);
}

/* gemm_bf16.c's direct (no scratch: out of memory) */
static void direct_mixed(const opnd_t *a, const opnd_t *b, int M, int N, int K, float alpha, float beta, float *C,
                         int ldc)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += value(a, m, k) * value(b, k, n);
            float *c = C + (size_t)m * ldc + n;
            *c = beta == 0.0f ? alpha * s : alpha * s + beta * *c;
        }
}

/* rows x cols of an operand as stored, dense, into x: widened (exact) or rounded */
static void dense(const opnd_t *o, int rows, int cols, float *x)
{
    if (o->h) bf16_widen_rows(rows, cols, o->h, (size_t)o->ld, x);
    else bf16_round_rows(rows, cols, o->f, (size_t)o->ld, x);
}

/* gemm_bf16.c's portable: OpenBLAS on the dense float32 operands, a bf16 one widened
 * (exact), a float32 one rounded */
static void portable_mixed(const opnd_t *a, const opnd_t *b, int M, int N, int K, float alpha, float beta, float *C,
                           int ldc)
{
    const int ar = a->t ? K : M, ac = a->t ? M : K, br = b->t ? N : K, bc = b->t ? K : N;
    float *da = gemm_bf16_scratch(0, (size_t)ar * ac * sizeof(float));
    float *db = da ? gemm_bf16_scratch(1, (size_t)br * bc * sizeof(float)) : NULL;
    if (!da || !db) {
        direct_mixed(a, b, M, N, K, alpha, beta, C, ldc);
        return;
    }
    dense(a, ar, ac, da);
    dense(b, br, bc, db);
    cblas_sgemm(CblasRowMajor, a->t ? CblasTrans : CblasNoTrans, b->t ? CblasTrans : CblasNoTrans, M, N, K, alpha, da,
                ac, db, bc, beta, C, ldc);
}

/* One product of the operands as stored (a bf16 A row-major: a->t 0); run_on's steps. */
static void run_mixed(cpu_isa_t isa, const opnd_t *a, const opnd_t *b, int M, int N, int K, float alpha,
                      const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (gemm_bf16_start(isa, M, N, K, bias, &beta, C, ldc)) return;
    if (isa == CPU_ISA_PORTABLE) {
        portable_mixed(a, b, M, N, K, alpha, beta, C, ldc);
        return;
    }
    const gemm_bf16_epilogue_t e = {.alpha = alpha, .beta = bias ? 0.0f : beta, .bias = bias};
    if (gemm_bf16_units(isa, a, b, M, N, K, &e, C, ldc) == 0) return;
    if (bias) gemm_bf16_fill_bias(M, N, bias, C, ldc), beta = 1.0f;
    direct_mixed(a, b, M, N, K, alpha, beta, C, ldc);
}

int gemm_bf16_rounded_on(cpu_isa_t isa, int tb, int M, int N, int K, float alpha, const float *A, const uint16_t *A16,
                         int lda, const float *B, int ldb, const float *bias, float *C, uint16_t *C16, int ldc)
{
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (isa == CPU_ISA_PORTABLE || M <= 0 || N <= 0 || K <= 0) return -1;
    const opnd_t a = {.f = A, .h = A16, .ld = lda}, b = {.f = B, .t = tb, .ld = ldb};
    const gemm_bf16_epilogue_t e = {.alpha = alpha, .bias = bias, .c16 = C16, .round = 1};
    return gemm_bf16_units(isa, &a, &b, M, N, K, &e, C, ldc);
}

void gemm_bf16_a16_on(cpu_isa_t isa, int tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    const opnd_t a = {.h = A, .ld = lda}, b = {.f = B, .t = tb, .ld = ldb};
    run_mixed(isa, &a, &b, M, N, K, alpha, bias, beta, C, ldc);
}

void gemm_bf16_b16_on(cpu_isa_t isa, int ta, int M, int N, int K, float alpha, const float *A, int lda,
                      const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    const opnd_t a = {.f = A, .t = ta, .ld = lda}, b = {.h = B, .ld = ldb};
    run_mixed(isa, &a, &b, M, N, K, alpha, NULL, beta, C, ldc);
}

void gemm_bf16_mixed_on(cpu_isa_t isa, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                        const uint16_t *A16, int lda, const float *B, const uint16_t *B16, int ldb, float beta,
                        float *C, int ldc)
{
    if (!A16 && !B16) { /* float32 both: gemm_bf16_on itself */
        gemm_bf16_on(isa, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const opnd_t a = {.f = A, .h = A16, .t = A16 ? 0 : ta, .ld = lda}, b = {.f = B, .h = B16, .t = tb, .ld = ldb};
    run_mixed(isa, &a, &b, M, N, K, alpha, NULL, beta, C, ldc);
}
