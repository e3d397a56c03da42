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

/* gemm_bf16.c's pack_a_rows on A's values: each block row 32 k of a row, zeros past K and
 * past M */
AVX512BF16 static void pack_a16_rows(int M, int K, const uint16_t *A, int lda, const gemm_bf16_packed_t *p)
{
    for (int mb = 0; mb < p->mbn; mb++)
        for (int r = 0; r < BLK; r++) {
            const int m = mb * BLK + r;
            const uint16_t *x = A + (size_t)m * lda;
            for (int kb = 0; kb < p->kbn; kb++) {
                uint16_t *t = p->a + ((size_t)mb * p->kbn + kb) * BLK_ELEMS + r * KB;
                const int left = m < M ? K - kb * KB : 0;
                const __mmask32 mask = left >= 32 ? 0xffffffffu : (__mmask32)((1u << (left > 0 ? left : 0)) - 1);
                _mm512_storeu_si512(t, _mm512_maskz_loadu_epi16(mask, left > 0 ? x + kb * KB : A));
            }
        }
}

/* ---- AMX on A as stored ------------------------------------------------------------------ */

/* gemm_bf16.c's AMX loop (gemm_bf16_run_amx) with A's tiles loaded straight from the
 * row-major bf16 A (16 rows of 32 k, its row stride apart): no pass packing it. Each
 * output tile takes the same tdpbf16ps of the same tiles in the same k order as on packed
 * A (its tiles are the packed blocks' bytes), and the same write-back, so the same bits.
 * For M a multiple of 16 and K of 32 (whole tiles: nothing past A is read) and N up to
 * AMX_ROWS_MAX_N; gemm_bf16_a16_on packs A otherwise. */

/* The widest product that loads A's tiles as stored: each A tile is loaded once per pair
 * of column blocks, and from rows a row stride apart (16 cache lines a tile) that costs
 * more than from a packed block, which a packing pass over A buys once. One thread, AMX,
 * thread CPU time, the weight kept, one run on a loaded 2-vCPU VM: A as stored 0.83-0.97x
 * the float32 pack's time at N = 384 to 768 (K = 128, 3072), 1.09-1.15x at N = 2304 and
 * 3072 (K = 768), where the bf16 pack took 0.99-1.01x. */
#define AMX_ROWS_MAX_N 1024

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

/* p->a from A (a bf16 A as stored, row-major): 0, or -1 without scratch */
static int pack_a_any(const opnd_t *a, int M, int K, gemm_bf16_packed_t *p)
{
    if (!a->h) return gemm_bf16_pack_a(a->t, M, K, a->f, a->ld, p);
    p->a = gemm_bf16_scratch(0, (size_t)p->mbn * p->kbn * BLK_ELEMS * sizeof(uint16_t));
    if (p->a) pack_a16_rows(M, K, a->h, a->ld, p);
    return p->a ? 0 : -1;
}

/* The product on the bf16 units' path isa from the packed operands, by e: 0, or -1
 * without scratch */
static int run_units(cpu_isa_t isa, const opnd_t *a, const opnd_t *b, int M, int N, int K,
                     const gemm_bf16_epilogue_t *e, float *C, int ldc)
{
    gemm_bf16_packed_t p;
    gemm_bf16_blocks(M, N, K, &p);
    if (a->h && isa == CPU_ISA_AMX && M % BLK == 0 && K % KB == 0 && N <= AMX_ROWS_MAX_N) {
        if (gemm_bf16_pack_b(isa, b, K, N, &p) != 0) return -1;
        const gemm_bf16_a_tiles_t at = {.a = a->h,
                                        .block = (size_t)BLK * a->ld,
                                        .kstep = KB,
                                        .stride = (size_t)a->ld * sizeof(uint16_t)};
        gemm_bf16_run_amx(&at, &p, M, N, e, C, ldc);
        return 0;
    }
    if (pack_a_any(a, M, K, &p) != 0 || gemm_bf16_pack_b(isa, b, K, N, &p) != 0) return -1;
    gemm_bf16_run_packed(isa, &p, M, N, e, C, ldc);
    return 0;
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
    if (run_units(isa, a, b, M, N, K, &e, C, ldc) == 0) return;
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
    return run_units(isa, &a, &b, M, N, K, &e, C, ldc);
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
