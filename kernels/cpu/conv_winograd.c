/* kernels/cpu/conv_winograd.c - F(4x4, 3x3) Winograd convolutions (conv_winograd.h).
 *
 * Why: ResNet-20's 3x3 stride-1 layers are three quarters of a CPU step and the direct
 * kernels already run them at 80% of the AVX2 core's peak (docs/PERFORMANCE.md); only
 * fewer multiplies make them faster. F(4x4, 3x3) does a 4x4 block of outputs with 36
 * products per channel pair instead of 144.
 *
 * A call: the n images copied channel-last into padded planes (8x8 transposes), the
 * input transform, the 36 GEMMs, the output transform tile
 * by tile, each tile's outputs put back on the planes. The vector passes are
 * conv_winograd_tiles.h, compiled for AVX2 and AVX-512 like conv_direct_tiles.h and
 * picked by direct_isa(). */
#include "conv_winograd.h"

#include <string.h>

#include "bf16.h"
#include "conv_direct.h"
#include "prefetch.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WINO_X86 1
#endif

static int round16i(int n) { return (n + 15) & ~15; }

/* The GEMM's blocks take 6 (AVX2) or 12 (AVX-512) tiles; 24 fill both. */
#define WINO_MIN_TILES 24

void wino_geom(int C, int K, int H, int W, int nb, wino_geom_t *g)
{
    g->C = C, g->K = K, g->H = H, g->W = W, g->nb = nb;
    g->TH = (H + 3) / 4, g->TW = (W + 3) / 4;
    g->Cp = round16i(C), g->Kp = round16i(K);
    g->PH = 4 * g->TH + 2, g->PW = 4 * g->TW + 2;
    g->bf16 = 0;
}

int wino_images(int H, int W)
{
    const int tiles = ((H + 3) / 4) * ((W + 3) / 4);
    return (WINO_MIN_TILES + tiles - 1) / tiles;
}

/* The scratch: the padded channel-last input (nb images), V, M, one tile's outputs. */
static size_t xt_floats(const wino_geom_t *g) { return (size_t)g->nb * g->PH * g->PW * g->Cp; }
static size_t tiles_of(const wino_geom_t *g, int n) { return (size_t)n * g->TH * g->TW; }
/* Floats from one point's matrix of V or M to the next: T rows of `width`, plus a cache
 * line, so that the 36 points of a tile are not 4 KiB apart (32x32 planes: 64 tiles of
 * 16 channels), which put them all in one set of the L1 cache and took twice the time. */
static size_t point_stride(size_t T, int width) { return T * (size_t)width + 16; }

/* U's and dU's point matrices (Cp, Kp) are as far apart, for the same reason: at 512
 * channels a plain Cp * Kp is 1 MiB, and the passes that read or write all 36 points of a
 * filter at once (filters16, wgrad_end16) then hit one set of L1 and L2 with all 36. */
static size_t u_stride(const wino_geom_t *g) { return point_stride((size_t)g->Cp, g->Kp); }

/* Inside a point's matrix, the 16 output channels from kb (a multiple of 16) of input
 * channel c: blocks of 16 output channels, each its Cp rows of 16 one after another, so
 * that the GEMM, which walks the input channels of one block, reads one straight run
 * (row by row, 2 KiB apart at 512 channels, its load of U was a quarter of the GEMM's
 * time: perf, an imported ResNet-18). */
static size_t u_at(const wino_geom_t *g, int c, int kb) { return (size_t)kb * g->Cp + (size_t)c * 16; }

size_t wino_weight_floats(const wino_geom_t *g) { return (size_t)WINO_POINTS * u_stride(g); }

size_t wino_scratch_floats(const wino_geom_t *g)
{
    const size_t T = tiles_of(g, g->nb);
    return xt_floats(g) + (size_t)WINO_POINTS * (point_stride(T, g->Cp) + point_stride(T, g->Kp)) + (size_t)16 * g->Kp;
}

/* G's rows (6x3): the filter side of F(4x4, 3x3). */
static const double G[6][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

/* U's row c, output channels kb .. kb + 15 (those from K on zero): each filter in double
 * with the output channel innermost, so that the 16 are computed side by side and each of
 * the 36 points' 16 floats stored as one run. Each value is the scalar expression's. */
__attribute__((target_clones("avx2", "default"))) static void filters16(const wino_geom_t *g, const float *w, int flip,
                                                                        int c, int kb, float *u)
{
    const size_t pstride = u_stride(g);
    const int nk = g->K - kb < 16 ? g->K - kb : 16;
    double f[3][3][16], gf[6][3][16];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 16; q++) {
                const int k = kb + (q < nk ? q : 0);
                const float v = flip ? w[((size_t)c * g->K + k) * 9 + (2 - i) * 3 + (2 - j)]
                                     : w[((size_t)k * g->C + c) * 9 + i * 3 + j];
                f[i][j][q] = g->bf16 ? bf16_round(v) : v;
            }
    for (int a = 0; a < 6; a++)
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 16; q++)
                gf[a][j][q] = G[a][0] * f[0][j][q] + G[a][1] * f[1][j][q] + G[a][2] * f[2][j][q];
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            float *r = u + (size_t)(a * 6 + b) * pstride;
            for (int q = 0; q < 16; q++)
                r[q] = q < nk ? (float)(gf[a][0][q] * G[b][0] + gf[a][1][q] * G[b][1] + gf[a][2][q] * G[b][2]) : 0.0f;
        }
}

void wino_weights(const wino_geom_t *g, const float *w, int flip, int k0, int k1, float *U)
{
    const size_t pstride = u_stride(g);
    /* block by block, so that each of the 36 points' blocks is written straight through */
    for (int kb = k0; kb < k1; kb += 16)
        for (int c = 0; c < g->Cp; c++) {
            float *u = U + u_at(g, c, kb);
            if (c < g->C && kb < g->K) filters16(g, w, flip, c, kb, u);
            else
                for (int p = 0; p < WINO_POINTS; p++) memset(u + (size_t)p * pstride, 0, 16 * sizeof(float));
        }
}

void wino_begin(const wino_geom_t *g, float *scratch) { memset(scratch, 0, xt_floats(g) * sizeof(float)); }

/* n images of C planes of H x W into channel-last planes, pixel (h, w) of image b at
 * dst + b*img + ((h + off)*PW + w + off)*cp; nothing else of dst is written (the pads
 * and the channels past C stay the zeros of wino_begin / wino_wgrad_begin). */
static void channel_last_scalar(int n, int C, int H, int W, const float *x, int cp, int PW, size_t img, int off,
                                int rnd, float *dst)
{
    const size_t plane = (size_t)H * W, row = (size_t)PW * cp;
    for (int b = 0; b < n; b++)
        for (int h = 0; h < H; h++) {
            float *d = dst + (size_t)b * img + (size_t)(h + off) * row + (size_t)off * cp;
            for (int c = 0; c < C; c++) {
                const float *src = x + ((size_t)b * C + c) * plane + (size_t)h * W;
                for (int w = 0; w < W; w++) d[(size_t)w * cp + c] = rnd ? bf16_round(src[w]) : src[w];
            }
        }
}

#ifdef WINO_X86
/* bf16_round_bits of 8 floats */
__attribute__((target("avx2"))) static inline __m256 round8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v), one = _mm256_set1_epi32(1);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i even = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)),
                                          _mm256_set1_epi32((int)0xffff0000u));
    const __m256i nan = _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)),
                                         _mm256_set1_epi32((int)0xffff0000u));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                              _mm256_set1_epi32(0x7f800000));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(even, nan, is_nan));
}

/* The same by 8x8 blocks (8 channels of 8 pixels of a row, turned by unpacks, shuffles
 * and lane permutes): the scalar loop's scattered stores were 12-16% of a ResNet-20 step
 * (perf, AVX2, a Sapphire Rapids-class VM). Copies only (or each value rounded to bf16,
 * rnd): the scalar loop's values. Planes whose channels or width are not multiples of 8
 * go the scalar way. A row of the image reads C planes at once, and the image is cold (an
 * activation written a layer ago): its loads held 80% of this loop's samples (perf
 * annotate, a Zen 5), so each row asks for its share of the next image (prefetch.h). */
__attribute__((target("avx2"))) static void channel_last(int n, int C, int H, int W, const float *x, int cp, int PW,
                                                         size_t img, int off, int rnd, float *dst)
{
    if (C % 8 || W % 8) {
        channel_last_scalar(n, C, H, W, x, cp, PW, img, off, rnd, dst);
        return;
    }
    const size_t plane = (size_t)H * W, row = (size_t)PW * cp;
    for (int b = 0; b < n; b++)
        for (int h = 0; h < H; h++) {
            float *d = dst + (size_t)b * img + (size_t)(h + off) * row + (size_t)off * cp;
            /* the next image, whether this call or the next has it */
            prefetch_next_share(x + (size_t)b * C * plane, (size_t)C * plane * sizeof(float), (size_t)h, (size_t)H);
            for (int c = 0; c < C; c += 8) {
                const float *src = x + ((size_t)b * C + c) * plane + (size_t)h * W;
                for (int w = 0; w < W; w += 8) {
                    __m256 r[8], t[8];
                    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (size_t)i * plane + w);
                    if (rnd)
                        for (int i = 0; i < 8; i++) r[i] = round8(r[i]);
                    for (int i = 0; i < 8; i += 2) {
                        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
                    }
                    /* r: within each 128-bit half, column j's 4 channels of a row quad */
                    for (int q = 0; q < 8; q += 4) {
                        r[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
                        r[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
                        r[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
                        r[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
                    }
                    for (int j = 0; j < 4; j++) {
                        /* pixel w + j: low halves; pixel w + j + 4: high halves */
                        _mm256_storeu_ps(d + (size_t)(w + j) * cp + c, _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
                        _mm256_storeu_ps(d + (size_t)(w + j + 4) * cp + c, _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
                    }
                }
            }
        }
}
#else
#define channel_last channel_last_scalar
#endif

/* x (n, C, H, W) into the padded input planes xt: one pixel of pad on top and left;
 * rounded to bf16 where g says. */
static void to_channel_last(const wino_geom_t *g, int n, const float *x, float *xt)
{
    channel_last(n, g->C, g->H, g->W, x, g->Cp, g->PW, (size_t)g->PH * g->PW * g->Cp, 1, g->bf16, xt);
}

/* The weight gradient's scratch: the padded input and V as a forward call's, then dM
 * (dout's channel-last copy is the input gradient's: wino_load of gd). */
size_t wino_wgrad_scratch_floats(const wino_geom_t *g)
{
    const size_t T = tiles_of(g, g->nb);
    return xt_floats(g) + (size_t)WINO_POINTS * point_stride(T, g->Cp) + (size_t)WINO_POINTS * point_stride(T, g->Kp);
}

void wino_wgrad_begin(const wino_geom_t *g, float *dU, float *scratch)
{
    memset(dU, 0, wino_weight_floats(g) * sizeof(float));
    memset(scratch, 0, xt_floats(g) * sizeof(float));
}

/* The adjoint of U = G f G^T for output channels kb .. kb + 15 of input channel c:
 * df = G^T dU G, per filter in double, the 16 filters side by side (each of the 36 points
 * read as one run of 16 floats of a row of dU, where filter by filter they were 36 reads
 * of 4 bytes from 36 rows, 14% of an imported ResNet-18's step at 512 channels). Each
 * value is the scalar expression's, in the same order. */
__attribute__((target_clones("avx2", "default"))) static void wgrad_end16(const wino_geom_t *g, const float *dU, int c,
                                                                          int kb, float *dw)
{
    const size_t pstride = u_stride(g);
    const int nk = g->K - kb < 16 ? g->K - kb : 16;
    double u[6][6][16], ug[6][3][16];
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            const float *r = dU + (size_t)(a * 6 + b) * pstride + u_at(g, c, kb);
            for (int q = 0; q < 16; q++) u[a][b][q] = r[q];
        }
    for (int a = 0; a < 6; a++)
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 16; q++) {
                double v = 0;
                for (int b = 0; b < 6; b++) v += u[a][b][q] * G[b][j];
                ug[a][j][q] = v;
            }
    float out[9][16];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 16; q++) {
                double v = 0;
                for (int a = 0; a < 6; a++) v += G[a][i] * ug[a][j][q];
                out[i * 3 + j][q] = (float)v;
            }
    for (int q = 0; q < nk; q++) {
        float *f = dw + ((size_t)(kb + q) * g->C + c) * 9;
        for (int e = 0; e < 9; e++) f[e] = out[e][q];
    }
}

void wino_wgrad_end(const wino_geom_t *g, const float *dU, float *dw)
{
    /* Block by block of 16 filters, so that each of the 36 points' blocks of dU is read
     * straight through; the writes, 36 bytes to each of 16 filters, stay within 16 runs. */
    for (int kb = 0; kb < g->K; kb += 16)
        for (int c = 0; c < g->C; c++) wgrad_end16(g, dU, c, kb, dw);
}

/* One tile's outputs (tile: 16 positions by Kp channels) onto image yb's planes, the
 * positions past the planes dropped. */
static void tile_out_scalar(const wino_geom_t *g, const float *tile, int th, int tw, const float *bias, int accumulate,
                            float *yb)
{
    const int rows = g->H - 4 * th < 4 ? g->H - 4 * th : 4, cols = g->W - 4 * tw < 4 ? g->W - 4 * tw : 4;
    const size_t plane = (size_t)g->H * g->W;
    for (int k = 0; k < g->K; k++) {
        float *yk = yb + (size_t)k * plane + (size_t)(4 * th) * g->W + 4 * tw;
        const float bv = bias ? bias[k] : 0.0f;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) {
                const float v = tile[(size_t)(i * 4 + j) * g->Kp + k];
                float *o = yk + (size_t)i * g->W + j;
                *o = accumulate ? *o + v : v + bv;
            }
    }
}

#ifdef WINO_X86
/* The same for a whole 4x4 tile, 8 channels at a time: the four positions of a row of the
 * tile, as four vectors of 8 channels, turned into 8 rows of 4 (unpack and shuffle), one
 * 4-float store per channel: the scalar loop was a quarter of the call. The channels past
 * the last multiple of 8 go the scalar way. Same values, same additions. */
__attribute__((target("avx2,fma"))) static void tile_out(const wino_geom_t *g, const float *tile, int th, int tw,
                                                         const float *bias, int accumulate, float *yb)
{
    if (g->H - 4 * th < 4 || g->W - 4 * tw < 4 || g->K % 8) {
        tile_out_scalar(g, tile, th, tw, bias, accumulate, yb);
        return;
    }
    const size_t plane = (size_t)g->H * g->W;
    for (int k = 0; k < g->K; k += 8) {
        float *yk = yb + (size_t)k * plane + (size_t)(4 * th) * g->W + 4 * tw;
        __m128 b[8];
        for (int l = 0; l < 8; l++) b[l] = _mm_set1_ps(bias ? bias[k + l] : 0.0f);
        for (int i = 0; i < 4; i++, yk += g->W) {
            const float *r = tile + (size_t)(i * 4) * g->Kp + k;
            const __m256 a0 = _mm256_loadu_ps(r), a1 = _mm256_loadu_ps(r + g->Kp), a2 = _mm256_loadu_ps(r + 2 * g->Kp),
                         a3 = _mm256_loadu_ps(r + 3 * g->Kp);
            const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
            const __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
            const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                                 _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
            for (int l = 0; l < 8; l++) {
                /* channel l's four outputs: lane half l / 4 of u[l % 4] */
                const __m128 v = l < 4 ? _mm256_castps256_ps128(u[l]) : _mm256_extractf128_ps(u[l - 4], 1);
                float *o = yk + (size_t)l * plane;
                _mm_storeu_ps(o, accumulate ? _mm_add_ps(_mm_loadu_ps(o), v) : _mm_add_ps(v, b[l]));
            }
        }
    }
}
#else
#define tile_out tile_out_scalar
#endif

#ifdef WINO_X86
#define SFX(name) name##_avx2
#define TARGET __attribute__((target("avx2,fma")))
#define VW 8
#define VEC __m256
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VBCAST(p) _mm256_broadcast_ss(p)
#define VZERO() _mm256_setzero_ps()
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VSET1(x) _mm256_set1_ps(x)
#include "conv_winograd_tiles.h"
#undef SFX
#undef TARGET
#undef VW
#undef VEC
#undef VLOAD
#undef VSTORE
#undef VBCAST
#undef VZERO
#undef VFMA
#undef VADD
#undef VSUB
#undef VMUL
#undef VSET1

#define SFX(name) name##_avx512
#define TARGET __attribute__((target("avx512f")))
#define VW 16
#define VEC __m512
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VBCAST(p) _mm512_set1_ps(*(p))
#define VZERO() _mm512_setzero_ps()
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VSET1(x) _mm512_set1_ps(x)
#include "conv_winograd_tiles.h"

void wino_load(const wino_geom_t *g, int n, const float *x, float *scratch) { to_channel_last(g, n, x, scratch); }

void wino_conv_loaded(const wino_geom_t *g, int n, const float *U, const float *bias, int accumulate, float *y,
                      float *scratch)
{
    const size_t T = tiles_of(g, n);
    float *xt = scratch, *V = xt + xt_floats(g), *M = V + (size_t)WINO_POINTS * point_stride(T, g->Cp);
    float *tile = M + (size_t)WINO_POINTS * point_stride(T, g->Kp);
    if (direct_isa() == DIRECT_AVX512) {
        wino_input_avx512(g, n, xt, V);
        wino_gemm_avx512(g, (int)T, U, V, M);
        wino_output_avx512(g, n, M, bias, accumulate, y, tile);
    } else {
        wino_input_avx2(g, n, xt, V);
        wino_gemm_avx2(g, (int)T, U, V, M);
        wino_output_avx2(g, n, M, bias, accumulate, y, tile);
    }
}

void wino_conv(const wino_geom_t *g, int n, const float *U, const float *x, const float *bias, int accumulate, float *y,
               float *scratch)
{
    wino_load(g, n, x, scratch);
    wino_conv_loaded(g, n, U, bias, accumulate, y, scratch);
}

void wino_wgrad(const wino_geom_t *g, int n, const float *x, const wino_geom_t *gd, const float *dscratch, float *dU,
                float *scratch)
{
    const size_t T = tiles_of(g, n), Tnb = tiles_of(g, g->nb);
    float *xt = scratch, *V = xt + xt_floats(g), *dM = V + (size_t)WINO_POINTS * point_stride(Tnb, g->Cp);
    /* dout's 4x4 blocks inside gd's padded planes: one pixel in from the top left */
    const size_t row = (size_t)gd->PW * gd->Cp, img = (size_t)gd->PH * row;
    const float *dyt = dscratch + row + gd->Cp;
    to_channel_last(g, n, x, xt);
    if (direct_isa() == DIRECT_AVX512) {
        wino_input_avx512(g, n, xt, V);
        wino_dout_avx512(g, n, dyt, row, img, dM);
        wino_wgemm_avx512(g, (int)T, V, dM, dU);
    } else {
        wino_input_avx2(g, n, xt, V);
        wino_dout_avx2(g, n, dyt, row, img, dM);
        wino_wgemm_avx2(g, (int)T, V, dM, dU);
    }
}
#else
/* Elsewhere conv.c never calls them: direct_isa() says there are no vector kernels. */
void wino_load(const wino_geom_t *g, int n, const float *x, float *scratch)
{
    (void)g, (void)n, (void)x, (void)scratch;
}
void wino_conv_loaded(const wino_geom_t *g, int n, const float *U, const float *bias, int accumulate, float *y,
                      float *scratch)
{
    (void)g, (void)n, (void)U, (void)bias, (void)accumulate, (void)y, (void)scratch;
}
void wino_wgrad(const wino_geom_t *g, int n, const float *x, const wino_geom_t *gd, const float *dscratch, float *dU,
                float *scratch)
{
    (void)g, (void)n, (void)x, (void)gd, (void)dscratch, (void)dU, (void)scratch;
}
void wino_conv(const wino_geom_t *g, int n, const float *U, const float *x, const float *bias, int accumulate, float *y,
               float *scratch)
{
    (void)g, (void)n, (void)U, (void)x, (void)bias, (void)accumulate, (void)y, (void)scratch;
    (void)to_channel_last, (void)tile_out_scalar;
}
#endif
