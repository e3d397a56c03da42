/* kernels/cpu/gemm_bf16_act.c - see gemm_bf16_act.h. The dispatch follows gemm_bf16.c's
 * run_on step for step (the bias, an empty inner dimension, the fallback without scratch),
 * so that each case gives its bits. */
#include "gemm_bf16_act.h"

#include <cblas.h>
#include <immintrin.h>
#include <string.h>

#include "bf16.h"
#include "gemm_bf16_pack.h"

#define KB GEMM_BF16_KB
#define BLK GEMM_BF16_BLK
#define BLK_ELEMS GEMM_BF16_BLK_ELEMS

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* ---- storing ------------------------------------------------------------------------------ */

/* vcvtne2ps2bf16's rounding of one float: a denormal (exponent 0) to the zero of its sign */
static inline uint16_t bf16_daz(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);
    return (uint16_t)(bf16_round_bits(u) >> 16);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void store_rne(size_t n, const float *src,
                                                                                   uint16_t *dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = bf16_from_float(src[i]);
}

AVX512BF16 static void store_units(size_t n, const float *src, uint16_t *dst)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i), (__m128i)_mm256_cvtneps_pbh(_mm256_loadu_ps(src + i)));
    for (; i < n; i++) dst[i] = bf16_daz(src[i]);
}

void bf16_act_store_on(cpu_isa_t isa, size_t n, const float *src, uint16_t *dst)
{
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (isa == CPU_ISA_PORTABLE) store_rne(n, src, dst);
    else store_units(n, src, dst);
}

void bf16_act_store(size_t n, const float *src, uint16_t *dst) { bf16_act_store_on(cpu_isa(), n, src, dst); }

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

/* gemm_bf16.c's pack_b_rows on B's values: rows 2q and 2q + 1 of a k block interleaved into
 * pairs, 16 columns a block, zeros past K and past N */
AVX512BF16 static void pack_b16_rows(int K, int N, const uint16_t *B, int ldb, const gemm_bf16_packed_t *p)
{
    const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                           21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int kb = 0; kb < p->kbn; kb++)
        for (int q = 0; q < KB / 2; q++) {
            const int k = kb * KB + 2 * q;
            for (int nb = 0; nb < p->nbn; nb++) {
                const int cols = N - nb * BLK;
                const __mmask16 mask = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
                const __m256i r0 = _mm256_maskz_loadu_epi16(k < K ? mask : 0,
                                                            k < K ? B + (size_t)k * ldb + nb * BLK : B);
                const __m256i r1 = _mm256_maskz_loadu_epi16(k + 1 < K ? mask : 0,
                                                            k + 1 < K ? B + (size_t)(k + 1) * ldb + nb * BLK : B);
                const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
                uint16_t *t = p->b + ((size_t)nb * p->kbn + kb) * BLK_ELEMS;
                _mm512_storeu_si512(t + q * KB, _mm512_permutexvar_epi16(inter, both));
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

static inline float elem(int trans, const float *X, int ld, int r, int c)
{
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* gemm_bf16.c's direct (no scratch: out of memory), one operand bf16: X16 is A (which 0)
 * or B (1), row-major */
static void direct16(int which, int t, int M, int N, int K, float alpha, const float *X, int ldx, const uint16_t *X16,
                     int ld16, float beta, float *C, int ldc)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) {
                const float a = which ? bf16_round(elem(t, X, ldx, m, k)) : bf16_to_float(X16[(size_t)m * ld16 + k]);
                const float b = which ? bf16_to_float(X16[(size_t)k * ld16 + n]) : bf16_round(elem(t, X, ldx, k, n));
                s += a * b;
            }
            float *c = C + (size_t)m * ldc + n;
            *c = beta == 0.0f ? alpha * s : alpha * s + beta * *c;
        }
}

/* rows x cols of bf16 X (row stride ld) as float32 into the dense x */
static void widen_rows(int rows, int cols, const uint16_t *X, int ld, float *x)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) x[(size_t)r * cols + c] = bf16_to_float(X[(size_t)r * ld + c]);
}

/* gemm_bf16.c's portable: OpenBLAS on the dense float32 operands, the bf16 one widened
 * (exact), the other rounded */
static void portable16(int which, int t, int M, int N, int K, float alpha, const float *X, int ldx, const uint16_t *X16,
                       int ld16, float beta, float *C, int ldc)
{
    /* the float32 operand as stored: B is K x N, or N x K transposed; A M x K, or K x M */
    const int xr = which ? (t ? K : M) : (t ? N : K), xc = which ? (t ? M : K) : (t ? K : N);
    const int wr = which ? K : M, wc = which ? N : K; /* the bf16 one */
    const size_t xn = (size_t)xr * xc, wn = (size_t)wr * wc;
    float *a = gemm_bf16_scratch(0, (which ? xn : wn) * sizeof(float));
    float *b = a ? gemm_bf16_scratch(1, (which ? wn : xn) * sizeof(float)) : NULL;
    if (!a || !b) {
        direct16(which, t, M, N, K, alpha, X, ldx, X16, ld16, beta, C, ldc);
        return;
    }
    bf16_round_rows(xr, xc, X, (size_t)ldx, which ? a : b);
    widen_rows(wr, wc, X16, ld16, which ? b : a);
    const CBLAS_TRANSPOSE tr = t ? CblasTrans : CblasNoTrans;
    cblas_sgemm(CblasRowMajor, which ? tr : CblasNoTrans, which ? CblasNoTrans : tr, M, N, K, alpha, a, which ? xc : K,
                b, which ? N : xc, beta, C, ldc);
}

/* One product with operand `which` (0: A, 1: B) bf16 and row-major, the other float32
 * op(X) (trans t); run_on's steps. */
static void run16(cpu_isa_t isa, int which, int t, int M, int N, int K, float alpha, const float *X, int ldx,
                  const uint16_t *X16, int ld16, const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (gemm_bf16_start(isa, M, N, K, bias, &beta, C, ldc)) return;
    if (isa == CPU_ISA_PORTABLE) {
        portable16(which, t, M, N, K, alpha, X, ldx, X16, ld16, beta, C, ldc);
        return;
    }
    gemm_bf16_packed_t p;
    gemm_bf16_blocks(M, N, K, &p);
    int rc;
    if (which) {
        rc = gemm_bf16_pack_a(t, M, K, X, ldx, &p);
        p.b = rc == 0 ? gemm_bf16_scratch(1, (size_t)p.nbn * p.kbn * BLK_ELEMS * sizeof(uint16_t)) : NULL;
        if (p.b) pack_b16_rows(K, N, X16, ld16, &p);
        rc = p.b ? 0 : -1;
    } else if (isa == CPU_ISA_AMX && M % BLK == 0 && K % KB == 0 && N <= AMX_ROWS_MAX_N) {
        if (gemm_bf16_pack_b(t, K, N, X, ldx, &p) == 0) {
            const gemm_bf16_epilogue_t e = {.alpha = alpha, .beta = bias ? 0.0f : beta, .bias = bias};
            const gemm_bf16_a_tiles_t a = {.a = X16,
                                           .block = (size_t)BLK * ld16,
                                           .kstep = KB,
                                           .stride = (size_t)ld16 * sizeof(uint16_t)};
            gemm_bf16_run_amx(&a, &p, M, N, &e, C, ldc);
            return;
        }
        rc = -1;
    } else {
        p.a = gemm_bf16_scratch(0, (size_t)p.mbn * p.kbn * BLK_ELEMS * sizeof(uint16_t));
        if (p.a) pack_a16_rows(M, K, X16, ld16, &p);
        rc = p.a ? gemm_bf16_pack_b(t, K, N, X, ldx, &p) : -1;
    }
    if (rc != 0) {
        if (bias) gemm_bf16_fill_bias(M, N, bias, C, ldc), beta = 1.0f;
        direct16(which, t, M, N, K, alpha, X, ldx, X16, ld16, beta, C, ldc);
        return;
    }
    const gemm_bf16_epilogue_t e = {.alpha = alpha, .beta = bias ? 0.0f : beta, .bias = bias};
    gemm_bf16_run_packed(isa, &p, M, N, &e, C, ldc);
}

void gemm_bf16_a16_on(cpu_isa_t isa, int tb, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    run16(isa, 0, tb, M, N, K, alpha, B, ldb, A, lda, bias, beta, C, ldc);
}

void gemm_bf16_b16_on(cpu_isa_t isa, int ta, int M, int N, int K, float alpha, const float *A, int lda,
                      const uint16_t *B, int ldb, float beta, float *C, int ldc)
{
    run16(isa, 1, ta, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc);
}
