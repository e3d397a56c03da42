/* kernels/cpu/bmm.c - the product of two activations over batch dimensions (ops.h's
 * bmm_forward): attention's Q K^T and A V, G products of small matrices (the ViT's are
 * 65x16 and 65x65, 192 a layer at batch 64).
 *
 * Products whose right operand fits in L1 once packed (BMM_PACK_MAX) go through a small
 * AVX2 kernel here instead of one OpenBLAS call each, which packs both operands every call:
 * the kernel packs only a transposed right operand (rows of N rounded up to 8, zero beyond
 * N), reads a row-major one in place (a row's last vector through a mask: packing the
 * backward's 65x65 score gradients cost 0.3 ms a step) and the left one through strides (a
 * transposed left operand is broadcast from its columns), keeps a tile of 6 rows by 16
 * columns in registers, summing each output over k in order, and prefetches the next
 * product's operands (the backward's are cold: BMM_AHEAD). With the operands in cache it
 * runs the ViT's products at 90-113 GFLOP/s against OpenBLAS's 75-87. Bigger products, and
 * CPUs without AVX2 and FMA, take OpenBLAS. test_ops's test_bmm_small holds both to
 * kernels/ref. */
#include <cblas.h>
#include <stddef.h>

#include "bmm_small.h"
#include "matmul.h"
#include "ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "tr8_avx2.h"
#define BMM_X86 1
#endif

/* The register tile: BMM_MR rows by two vectors of 8 columns (12 accumulators). */
#define BMM_MR 6
/* The products ahead whose operands are prefetched: the backward reads its saved
 * activations cold (the rest of the step went through the cache since the forward), and
 * without asking for them a product at a time its reads ran at ~6 GB/s (1.14 -> 0.87 ms
 * for 192 of the ViT's pairs from cold memory; 2 or 3 ahead measured the same). */
#define BMM_AHEAD 1


/* round up to a whole vector of 8 floats */
static inline int bmm_round8(int n) { return (n + 7) & ~7; }

#ifdef BMM_X86
#define BMM_TARGET __attribute__((target("avx2,fma")))

/* The lanes of a vector that hold columns: mask(cnt) is bmm_mask + 8 - cnt. */
static const int bmm_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* Stores one vector of a tile's row: c = v + 0.0f where set (the bits of adding into
 * zeros), else c += v; cnt (1-8) columns. */
BMM_TARGET static inline void bmm_store(float *c, __m256 v, int cnt, int set)
{
    if (cnt >= 8) {
        _mm256_storeu_ps(c, set ? _mm256_add_ps(v, _mm256_setzero_ps()) : _mm256_add_ps(_mm256_loadu_ps(c), v));
        return;
    }
    const __m256i m = _mm256_loadu_si256((const __m256i *)(bmm_mask + 8 - cnt));
    _mm256_maskstore_ps(c, m, set ? _mm256_add_ps(v, _mm256_setzero_ps()) : _mm256_add_ps(_mm256_maskload_ps(c, m), v));
}

/* One tile of C (mr rows, nv vectors of which nc columns are C's) = sum over k in order of
 * A(i, k) B(k, :); A(i, k) at A[i * sm + k * sk], B's rows ldb apart. mr and nv are
 * constants where it is inlined, so the accumulators stay in registers. With masked, B's
 * last vector is read only in its columns (rows of N floats exactly, not padded: no read
 * past the row, which may be the buffer's end). */
#define BMM_KLOOP(load_last)                                                                                  \
    for (int k = k0; k < K; k++) {                                                                            \
        const float *bk = B + (size_t)k * ldb, *ak = A + (size_t)k * sk;                                      \
        const __m256 b0 = nv > 1 ? _mm256_loadu_ps(bk) : load_last(bk), b1 = nv > 1 ? load_last(bk + 8) : b0; \
        for (int i = 0; i < mr; i++) {                                                                        \
            const __m256 a = _mm256_broadcast_ss(ak + (size_t)i * sm);                                        \
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);                                                    \
            if (nv > 1) acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);                                        \
        }                                                                                                     \
    }
#define BMM_LOADU(p) _mm256_loadu_ps(p)
#define BMM_LOADM(p) _mm256_maskload_ps(p, m)
BMM_TARGET static inline __attribute__((always_inline)) void bmm_tile(const int mr, const int nv, int k0, int K,
                                                                      const float *A, size_t sm, size_t sk,
                                                                      const float *B, int ldb, float *C, int ldc,
                                                                      int nc, int masked, int set)
{
    __m256 acc[BMM_MR][2];
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++) acc[i][v] = _mm256_setzero_ps();
    if (masked && nc < 8 * nv) {
        const __m256i m = _mm256_loadu_si256((const __m256i *)(bmm_mask + 8 - (nc - 8 * (nv - 1))));
        BMM_KLOOP(BMM_LOADM)
    } else BMM_KLOOP(BMM_LOADU)
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < nv; v++) bmm_store(C + (size_t)i * ldc + 8 * v, acc[i][v], nc - 8 * v, set);
}

/* The tile's rows as constants: 1 to BMM_MR. */
#define BMM_ROWS(nv)                                                                      \
    switch (mr) {                                                                         \
    case 6: bmm_tile(6, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break;  \
    case 5: bmm_tile(5, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break;  \
    case 4: bmm_tile(4, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break;  \
    case 3: bmm_tile(3, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break;  \
    case 2: bmm_tile(2, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break;  \
    default: bmm_tile(1, nv, k0, k1, a, sm, sk, Bt, ldb, c, ldc, nc, masked, set); break; \
    }

/* C (M, N, rows ldc apart) = or += op(A) (M, K) B (K, N): A(m, k) at A[m * sm + k * sk]; B's
 * rows ldb apart, padded to a multiple of 8 floats (zero beyond N) or, with masked, not.
 * tri (bmm_tri_t) skips what a causal mask makes zero or unread, tile by tile: a tile's sum
 * over k starts or stops where its terms can be nonzero (the terms left out are exact
 * zeros, and a sum in order that starts later or stops earlier by zeros has the same
 * bits), or a tile wholly above the diagonal is not computed (its outputs unread). */
BMM_TARGET static void bmm_small(int M, int N, int K, const float *A, size_t sm, size_t sk, const float *B, int ldb,
                                 int masked, float *C, int ldc, int set, bmm_tri_t tri)
{
    for (int n0 = 0; n0 < N; n0 += 16) {
        const int nc = N - n0 < 16 ? N - n0 : 16;
        for (int m0 = 0; m0 < M; m0 += BMM_MR) {
            const int mr = M - m0 < BMM_MR ? M - m0 : BMM_MR;
            int k0 = 0, k1 = K;
            if (tri == BMM_TRI_OUT_LOWER && n0 > m0 + mr - 1) continue;
            if (tri == BMM_TRI_K_LE_ROW && m0 + mr < K) k1 = m0 + mr;
            if (tri == BMM_TRI_K_GE_ROW) k0 = m0 < K ? m0 : K;
            if (tri == BMM_TRI_K_GE_COL) k0 = n0 < K ? n0 : K;
            const float *a = A + (size_t)m0 * sm;
            float *c = C + (size_t)m0 * ldc + n0;
            const float *Bt = B + n0;
            if (nc > 8) {
                BMM_ROWS(2)
            } else {
                BMM_ROWS(1)
            }
        }
    }
}

/* Packs rows x cols of src (src(r, c) at src[r * sr + c * sc]) into rows of round8(cols)
 * floats, zero beyond cols. */
static void bmm_pack(int rows, int cols, const float *src, size_t sr, size_t sc, float *dst)
{
    const int ld = bmm_round8(cols);
    for (int r = 0; r < rows; r++) {
        float *d = dst + (size_t)r * ld;
        for (int c = 0; c < cols; c++) d[c] = src[(size_t)r * sr + (size_t)c * sc];
        for (int c = cols; c < ld; c++) d[c] = 0.0f;
    }
}

/* bmm_pack of a transposed operand (src(r, c) at src[r + c * sc]: its columns contiguous),
 * as the backward's da = dout b^T packs b: in 8x8 tiles of AVX2 shuffles, eight loads and
 * eight stores of eight floats, where the element by element copy read one float per
 * cache line (1-2% of the GPT's step at nanoGPT's CPU shape went to these packs). The same
 * floats land in the same places. */
BMM_TARGET static void bmm_pack_t(int rows, int cols, const float *src, size_t sc, float *dst)
{
    const int ld = bmm_round8(cols), R8 = rows / 8 * 8, C8 = cols / 8 * 8;
    for (int r = 0; r < R8; r += 8) {
        for (int c = 0; c < C8; c += 8) {
            __m256 v[8];
            for (int k = 0; k < 8; k++) v[k] = _mm256_loadu_ps(src + (size_t)(c + k) * sc + r);
            avx2_tr8(v);
            for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (size_t)(r + k) * ld + c, v[k]);
        }
    }
    for (int r = 0; r < rows; r++) {
        float *d = dst + (size_t)r * ld;
        for (int c = r < R8 ? C8 : 0; c < cols; c++) d[c] = src[(size_t)r + (size_t)c * sc];
        for (int c = cols; c < ld; c++) d[c] = 0.0f;
    }
}

/* C (M, N, rows ldc apart) = or += op(A) (M, K) op(B) (K, N), B(k, n) at B[k * bk + n * bn]:
 * B packed unless its rows are contiguous (bn 1). */
void bmm_strided(int M, int N, int K, const float *A, size_t am, size_t ak, const float *B, size_t bk, size_t bn,
                 float *C, size_t ldc, int set, bmm_tri_t tri)
{
    float pack[BMM_PACK_MAX];
    if (bn == 1) {
        bmm_small(M, N, K, A, am, ak, B, (int)bk, 1, C, (int)ldc, set, tri);
        return;
    }
    if (bk == 1) bmm_pack_t(K, N, B, bn, pack);
    else bmm_pack(K, N, B, bk, bn, pack);
    bmm_small(M, N, K, A, am, ak, pack, bmm_round8(N), 0, C, (int)ldc, set, tri);
}

static void bmm_one(int M, int N, int K, const float *A, size_t am, size_t ak, const float *B, size_t bk, size_t bn,
                    float *C, int set, bmm_tri_t tri)
{
    bmm_strided(M, N, K, A, am, ak, B, bk, bn, C, (size_t)N, set, tri);
}

/* Whether the small kernel takes a (M, K) x (K, N) product: AVX2 and FMA, and the right
 * operand of each of the forward's and backward's products within BMM_PACK_MAX once
 * packed (K x N, N x K and M x N). */
int bmm_small_ok(int M, int K, int N)
{
    const long k8 = bmm_round8(K), n8 = bmm_round8(N);
    if ((long)K * n8 > BMM_PACK_MAX || (long)N * k8 > BMM_PACK_MAX || (long)M * n8 > BMM_PACK_MAX) return 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* Asks for n floats at p, one cache line at a time. */
static inline void bmm_prefetch(const float *p, size_t n, int write)
{
    for (size_t i = 0; i < n; i += 16) {
        if (write) __builtin_prefetch(p + i, 1, 3);
        else __builtin_prefetch(p + i, 0, 3);
    }
}
#else
int bmm_small_ok(int M, int K, int N)
{
    (void)M, (void)K, (void)N;
    return 0;
}

void bmm_strided(int M, int N, int K, const float *A, size_t am, size_t ak, const float *B, size_t bk, size_t bn,
                 float *C, size_t ldc, int set, bmm_tri_t tri)
{
    (void)M, (void)N, (void)K, (void)A, (void)am, (void)ak, (void)B, (void)bk, (void)bn, (void)C, (void)ldc, (void)set,
        (void)tri;
}
#endif

/* The masks' shapes: the causal product's output is square (M == N), the causal left
 * operand too (M == K); anything else is computed whole. */
static inline bmm_causal_t causal_fits(bmm_causal_t causal, int M, int K, int N)
{
    if (causal == BMM_CAUSAL_OUT && M == N) return causal;
    if (causal == BMM_CAUSAL_LEFT && M == K) return causal;
    return BMM_CAUSAL_NONE;
}

void bmm_forward(int G, int M, int K, int N, const float *a, const float *b, float *out)
{
    bmm_forward_causal(BMM_CAUSAL_NONE, G, M, K, N, a, b, out);
}

void bmm_forward_causal(bmm_causal_t causal, int G, int M, int K, int N, const float *a, const float *b, float *out)
{
#ifdef BMM_X86
    if (mm_precision() == MM_FP32 && bmm_small_ok(M, K, N)) {
        const bmm_causal_t c = causal_fits(causal, M, K, N);
        const bmm_tri_t tri = c == BMM_CAUSAL_OUT    ? BMM_TRI_OUT_LOWER
                              : c == BMM_CAUSAL_LEFT ? BMM_TRI_K_LE_ROW
                                                     : BMM_TRI_NONE;
        for (int g = 0; g < G; g++) {
            if (g + BMM_AHEAD < G) {
                const size_t h = (size_t)g + BMM_AHEAD;
                bmm_prefetch(a + h * M * K, (size_t)M * K, 0);
                bmm_prefetch(b + h * K * N, (size_t)K * N, 0);
                bmm_prefetch(out + h * M * N, (size_t)M * N, 1);
            }
            bmm_one(M, N, K, a + (size_t)g * M * K, (size_t)K, 1, b + (size_t)g * K * N, (size_t)N, 1,
                    out + (size_t)g * M * N, 1, tri);
        }
        return;
    }
#endif
    for (int g = 0; g < G; g++)
        mm_sgemm(MM_N, MM_N, M, N, K, 1.0f, a + (size_t)g * M * K, K, b + (size_t)g * K * N, N, 0.0f,
                 out + (size_t)g * M * N, N);
}

void bmm_backward_set(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da,
                      int set_a, float *db, int set_b)
{
    bmm_backward_causal(BMM_CAUSAL_NONE, G, M, K, N, a, b, dout, da, set_a, db, set_b);
}

void bmm_backward_causal(bmm_causal_t causal, int G, int M, int K, int N, const float *a, const float *b,
                         const float *dout, float *da, int set_a, float *db, int set_b)
{
#ifdef BMM_X86
    if (mm_precision() == MM_FP32 && bmm_small_ok(M, K, N)) {
        /* causal out: dout is zero above the diagonal (da's sum over n stops at its row, db's
         * over m starts at its column); causal left: a is (da, a's gradient, is read below
         * the diagonal only; db's sum over m starts at its row) */
        const bmm_causal_t c = causal_fits(causal, M, K, N);
        const bmm_tri_t tri_a = c == BMM_CAUSAL_OUT    ? BMM_TRI_K_LE_ROW
                                : c == BMM_CAUSAL_LEFT ? BMM_TRI_OUT_LOWER
                                                       : BMM_TRI_NONE;
        const bmm_tri_t tri_b = c == BMM_CAUSAL_OUT    ? BMM_TRI_K_GE_COL
                                : c == BMM_CAUSAL_LEFT ? BMM_TRI_K_GE_ROW
                                                       : BMM_TRI_NONE;
        for (int g = 0; g < G; g++) {
            const float *ag = a + (size_t)g * M * K, *bg = b + (size_t)g * K * N, *dg = dout + (size_t)g * M * N;
            if (g + BMM_AHEAD < G) {
                const size_t h = (size_t)g + BMM_AHEAD;
                bmm_prefetch(dout + h * M * N, (size_t)M * N, 0);
                bmm_prefetch(a + h * M * K, (size_t)M * K, 0);
                bmm_prefetch(b + h * K * N, (size_t)K * N, 0);
                if (da) bmm_prefetch(da + h * M * K, (size_t)M * K, 1);
                if (db) bmm_prefetch(db + h * K * N, (size_t)K * N, 1);
            }
            /* da (M, K) = dout (M, N) b^T; db (K, N) = a^T dout: each reads only the inputs,
             * so da and db may alias (when both add) */
            if (da) bmm_one(M, K, N, dg, (size_t)N, 1, bg, 1, (size_t)N, da + (size_t)g * M * K, set_a, tri_a);
            if (db) bmm_one(K, N, M, ag, 1, (size_t)K, dg, (size_t)N, 1, db + (size_t)g * K * N, set_b, tri_b);
        }
        return;
    }
#endif
    /* beta 0 writes C without reading it; beta 1 adds the same product (the bits of adding
     * into zeros) */
    const float beta_a = set_a ? 0.0f : 1.0f, beta_b = set_b ? 0.0f : 1.0f;
    for (int g = 0; g < G; g++) {
        const float *dg = dout + (size_t)g * M * N;
        /* da += dout b^T, db += a^T dout: each reads only the inputs, so da and db may alias
         * (when both add) */
        if (da) mm_sgemm(MM_N, MM_T, M, K, N, 1.0f, dg, N, b + (size_t)g * K * N, N, beta_a, da + (size_t)g * M * K, K);
        if (db) mm_sgemm(MM_T, MM_N, K, N, M, 1.0f, a + (size_t)g * M * K, K, dg, N, beta_b, db + (size_t)g * K * N, N);
    }
}

void bmm_backward(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da, float *db)
{
    bmm_backward_set(G, M, K, N, a, b, dout, da, 0, db, 0);
}
