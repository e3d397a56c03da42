/* kernels/cpu/conv_direct.c - the implicit-GEMM tile kernel of conv_direct.h.
 *
 * Why: im2col + OpenBLAS reached 15-17 FLOP/cycle of the AVX2 core's 32 on ResNet-20's
 * 16-channel 32x32 layers (docs/PERFORMANCE.md): with M = 16 output channels every call
 * packs the whole lowered matrix (K x 1088 floats an image) that im2col has just written,
 * and with K = 16 the input gradient's GEMM is mostly stores. Reading the taps straight
 * from the padded planes removes both copies.
 *
 * A tile is DIRECT_MR = 4 rows of A by DIRECT_NR = 24 grid columns: 12 accumulators, the
 * three vectors of the tap's run and one broadcast weight, the 16 AVX registers. The
 * runs of one grid block over all K taps (K x 96 bytes) stay in L1 while the row blocks
 * of A go over them. */
#include "conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DIRECT_X86 1
#endif

size_t direct_packed_floats(int M, int K, int mr) { return (size_t)((M + mr - 1) / mr) * mr * (size_t)K; }

void direct_pack(int M, int K, const float *A, size_t lda, int mr, float *Ap)
{
    for (int m0 = 0; m0 < M; m0 += mr)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < mr; i++) *Ap++ = m0 + i < M ? A[(size_t)(m0 + i) * lda + k] : 0.0f;
}

#ifdef DIRECT_X86
int direct_available(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

/* One tile: y[i][0..24) = sum over taps of ap[k][i] * run_k[0..24), rows i < mr stored. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile(const float *restrict ap, const direct_geom_t *g, const float *restrict x, float *restrict y, size_t ldy, int mr)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    const size_t row = (size_t)g->dH * g->PW;
    for (int c = 0; c < g->C; c++) {
        const float *pc = x + (size_t)c * g->pld;
        for (int kh = 0; kh < g->KH; kh++, pc += row) {
            const float *p = pc;
            for (int kw = 0; kw < g->KW; kw++, p += g->dW, ap += DIRECT_MR) {
                const __m256 b0 = _mm256_loadu_ps(p), b1 = _mm256_loadu_ps(p + 8), b2 = _mm256_loadu_ps(p + 16);
                __m256 a = _mm256_broadcast_ss(ap);
                c00 = _mm256_fmadd_ps(a, b0, c00);
                c01 = _mm256_fmadd_ps(a, b1, c01);
                c02 = _mm256_fmadd_ps(a, b2, c02);
                a = _mm256_broadcast_ss(ap + 1);
                c10 = _mm256_fmadd_ps(a, b0, c10);
                c11 = _mm256_fmadd_ps(a, b1, c11);
                c12 = _mm256_fmadd_ps(a, b2, c12);
                a = _mm256_broadcast_ss(ap + 2);
                c20 = _mm256_fmadd_ps(a, b0, c20);
                c21 = _mm256_fmadd_ps(a, b1, c21);
                c22 = _mm256_fmadd_ps(a, b2, c22);
                a = _mm256_broadcast_ss(ap + 3);
                c30 = _mm256_fmadd_ps(a, b0, c30);
                c31 = _mm256_fmadd_ps(a, b1, c31);
                c32 = _mm256_fmadd_ps(a, b2, c32);
            }
        }
    }
    _mm256_storeu_ps(y, c00);
    _mm256_storeu_ps(y + 8, c01);
    _mm256_storeu_ps(y + 16, c02);
    if (mr < 2) return;
    _mm256_storeu_ps(y + ldy, c10);
    _mm256_storeu_ps(y + ldy + 8, c11);
    _mm256_storeu_ps(y + ldy + 16, c12);
    if (mr < 3) return;
    _mm256_storeu_ps(y + 2 * ldy, c20);
    _mm256_storeu_ps(y + 2 * ldy + 8, c21);
    _mm256_storeu_ps(y + 2 * ldy + 16, c22);
    if (mr < 4) return;
    _mm256_storeu_ps(y + 3 * ldy, c30);
    _mm256_storeu_ps(y + 3 * ldy + 8, c31);
    _mm256_storeu_ps(y + 3 * ldy + 16, c32);
}

__attribute__((target("avx2,fma"))) void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x,
                                                     float *y, size_t ldy)
{
    const size_t K = (size_t)g->C * g->KH * g->KW;
    for (int j = 0; j < g->N; j += DIRECT_NR)
        for (int m0 = 0; m0 < M; m0 += DIRECT_MR)
            tile(Ap + (size_t)m0 * K, g, x + j, y + (size_t)m0 * ldy + j, ldy, M - m0 < DIRECT_MR ? M - m0 : DIRECT_MR);
}
/* The sum of v's eight lanes: ((l0+l4) + (l1+l5)) + ((l2+l6) + (l3+l7)). */
__attribute__((target("avx2,fma"), always_inline)) static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

/* The run of tap k in x (conv_direct.h's lowering). */
static const float *tap_run(const direct_geom_t *g, const float *x, int k)
{
    const int KK = g->KH * g->KW, c = k / KK, kh = k % KK / g->KW, kw = k % g->KW;
    return x + (size_t)c * g->pld + (size_t)kh * g->dH * g->PW + (size_t)kw * g->dW;
}

/* The weight gradient's tile: 4 rows of dy by 3 taps, 12 accumulators over the grid; the
 * rows past M and the taps past K repeat the last one and are not stored. */
__attribute__((target("avx2,fma"))) void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g,
                                                           int n, const float *x, float *dw, int accumulate)
{
    const int K = g->C * g->KH * g->KW;
    for (int m0 = 0; m0 < M; m0 += 4) {
        const float *d[4];
        for (int i = 0; i < 4; i++) d[i] = dy + (size_t)(m0 + i < M ? m0 + i : M - 1) * ldd;
        for (int k0 = 0; k0 < K; k0 += 3) {
            const float *r0 = tap_run(g, x, k0), *r1 = tap_run(g, x, k0 + 1 < K ? k0 + 1 : K - 1),
                        *r2 = tap_run(g, x, k0 + 2 < K ? k0 + 2 : K - 1);
            __m256 acc[4][3];
            for (int i = 0; i < 4; i++) acc[i][0] = acc[i][1] = acc[i][2] = _mm256_setzero_ps();
            for (int j = 0; j < n; j += 8) {
                const __m256 x0 = _mm256_loadu_ps(r0 + j), x1 = _mm256_loadu_ps(r1 + j), x2 = _mm256_loadu_ps(r2 + j);
                for (int i = 0; i < 4; i++) {
                    const __m256 v = _mm256_loadu_ps(d[i] + j);
                    acc[i][0] = _mm256_fmadd_ps(v, x0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(v, x1, acc[i][1]);
                    acc[i][2] = _mm256_fmadd_ps(v, x2, acc[i][2]);
                }
            }
            for (int i = 0; i < 4 && m0 + i < M; i++)
                for (int q = 0; q < 3 && k0 + q < K; q++) {
                    float *o = dw + (size_t)(m0 + i) * K + k0 + q;
                    *o = accumulate ? *o + hsum(acc[i][q]) : hsum(acc[i][q]);
                }
        }
    }
}
/* ---- channel-vector tiles: 16 rows of A (two vectors) by 6 broadcast values ----------
 * For planes too small for the grid tiles (ResNet-20's 8x8: a grid of 80 columns, 64 of
 * them outputs, in tiles of 24) the vectors run along the output channels instead, and
 * the positions are the outputs themselves, no garbage columns. */

/* Where output position p of a rows x cols plane reads its taps from: p's offset on the
 * grid of padded planes, PW wide. */
static size_t grid_pos(int p, int cols, int PW) { return (size_t)(p / cols) * PW + (size_t)(p % cols); }

/* Stores the 16 x 6 tile t (t[i][o]: position or tap i, row o) into y (rows ld apart,
 * column j0 + i): y = t (+ bias[o]) or y += t, rows o < mr and columns i < nc. */
static void store_tile(const float t[6][16], int mr, int nc, float *y, size_t ld, size_t j0, const float *bias,
                       int accumulate)
{
    for (int o = 0; o < mr; o++) {
        float *r = y + (size_t)o * ld + j0;
        const float bv = bias ? bias[o] : 0.0f;
        for (int i = 0; i < nc; i++) r[i] = accumulate ? r[i] + t[i][o] : t[i][o] + bv;
    }
}

__attribute__((target("avx2,fma"))) void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows,
                                                        int cols, const float *x, const float *bias, int accumulate,
                                                        float *y)
{
    const int P = rows * cols;
    const size_t K = (size_t)g->C * g->KH * g->KW, row = (size_t)g->dH * g->PW;
    for (int m0 = 0; m0 < M; m0 += DIRECT_CV_M) {
        const float *apm = Ap + (size_t)m0 * K;
        for (int p0 = 0; p0 < P; p0 += 6) {
            const float *q[6];
            for (int i = 0; i < 6; i++) q[i] = x + grid_pos(p0 + i < P ? p0 + i : P - 1, cols, g->PW);
            __m256 acc[6][2];
            for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
            const float *ap = apm;
            for (int c = 0; c < g->C; c++)
                for (int kh = 0; kh < g->KH; kh++) {
                    const size_t base = (size_t)c * g->pld + (size_t)kh * row;
                    for (int kw = 0; kw < g->KW; kw++, ap += DIRECT_CV_M) {
                        const size_t off = base + (size_t)kw * g->dW;
                        const __m256 w0 = _mm256_loadu_ps(ap), w1 = _mm256_loadu_ps(ap + 8);
                        for (int i = 0; i < 6; i++) {
                            const __m256 b = _mm256_broadcast_ss(q[i] + off);
                            acc[i][0] = _mm256_fmadd_ps(w0, b, acc[i][0]);
                            acc[i][1] = _mm256_fmadd_ps(w1, b, acc[i][1]);
                        }
                    }
                }
            float t[6][16];
            for (int i = 0; i < 6; i++) _mm256_storeu_ps(t[i], acc[i][0]), _mm256_storeu_ps(t[i] + 8, acc[i][1]);
            store_tile((const float(*)[16])t, M - m0 < 16 ? M - m0 : 16, P - p0 < 6 ? P - p0 : 6, y + (size_t)m0 * P,
                       (size_t)P, (size_t)p0, bias ? bias + m0 : NULL, accumulate);
        }
    }
}

__attribute__((target("avx2,fma"))) void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows,
                                                         int cols, const float *x, float *dw, int accumulate)
{
    const int K = g->C * g->KH * g->KW, M16 = (M + DIRECT_CV_M - 1) / DIRECT_CV_M * DIRECT_CV_M;
    for (int m0 = 0; m0 < M; m0 += DIRECT_CV_M)
        for (int k0 = 0; k0 < K; k0 += 6) {
            const float *r[6];
            for (int i = 0; i < 6; i++) r[i] = tap_run(g, x, k0 + i < K ? k0 + i : K - 1);
            __m256 acc[6][2];
            for (int i = 0; i < 6; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
            const float *d = dyT + m0;
            for (int h = 0; h < rows; h++) {
                const size_t o = (size_t)h * g->PW;
                for (int w = 0; w < cols; w++, d += M16) {
                    const __m256 d0 = _mm256_loadu_ps(d), d1 = _mm256_loadu_ps(d + 8);
                    for (int i = 0; i < 6; i++) {
                        const __m256 b = _mm256_broadcast_ss(r[i] + o + w);
                        acc[i][0] = _mm256_fmadd_ps(d0, b, acc[i][0]);
                        acc[i][1] = _mm256_fmadd_ps(d1, b, acc[i][1]);
                    }
                }
            }
            float t[6][16];
            for (int i = 0; i < 6; i++) _mm256_storeu_ps(t[i], acc[i][0]), _mm256_storeu_ps(t[i] + 8, acc[i][1]);
            store_tile((const float(*)[16])t, M - m0 < 16 ? M - m0 : 16, K - k0 < 6 ? K - k0 : 6, dw + (size_t)m0 * K,
                       (size_t)K, (size_t)k0, NULL, accumulate);
        }
}
#else
int direct_available(void) { return 0; }

void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows, int cols, const float *x,
                    const float *bias, int accumulate, float *y)
{
    (void)M, (void)Ap, (void)g, (void)rows, (void)cols, (void)x, (void)bias, (void)accumulate, (void)y;
}

void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, const float *x, float *dw,
                     int accumulate)
{
    (void)M, (void)dyT, (void)g, (void)rows, (void)cols, (void)x, (void)dw, (void)accumulate;
}

void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n, const float *x, float *dw,
                       int accumulate)
{
    (void)M, (void)dy, (void)ldd, (void)g, (void)n, (void)x, (void)dw, (void)accumulate;
}

void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy)
{
    (void)M, (void)Ap, (void)g, (void)x, (void)y, (void)ldy; /* conv.c never calls it here */
}
#endif
