/* kernels/cpu/conv_direct.c - the implicit-GEMM tile kernel of conv_direct.h.
 *
 * Why: im2col + OpenBLAS reached 15-17 FLOP/cycle of the AVX2 core's 32 on ResNet-20's
 * 16-channel 32x32 layers (docs/PERFORMANCE.md): with M = 16 output channels every call
 * packs the whole lowered matrix (K x 1088 floats an image) that im2col has just written,
 * and with K = 16 the input gradient's GEMM is mostly stores. Reading the taps straight
 * from the padded planes removes both copies.
 *
 * A grid tile is DIRECT_MR = 4 rows of A by 3 vectors of grid columns: 12 accumulators,
 * the three vectors of the tap's run and one broadcast weight, the 16 AVX registers. The
 * runs of one grid block over all K taps (K x 3 vectors) stay in L1 while the row blocks
 * of A go over them. For small planes the channel-vector tiles (conv_direct.h) instead.
 *
 * The kernels exist for AVX2 and for AVX-512 (conv_direct_tiles.h, compiled once for
 * each); direct_isa() picks AVX-512 where the CPU has it and OpenBLAS runs its AVX-512
 * kernels too, so that OPENBLAS_CORETYPE=Haswell (the AVX2 comparison with PyTorch's BLAS)
 * puts every GEMM-like kernel of the CPU path on AVX2. */
#include "conv_direct.h"

#include <stdatomic.h>

#include "blas_core.h"

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
/* The run of tap k in x (conv_direct.h's lowering). */
static const float *tap_run(const direct_geom_t *g, const float *x, int k)
{
    const int KK = g->KH * g->KW, c = k / KK, kh = k % KK / g->KW, kw = k % g->KW;
    return x + (size_t)c * g->pld + (size_t)kh * g->dH * g->PW + (size_t)kw * g->dW;
}

/* Where output position p of a rows x cols plane reads its taps from: p's offset on the
 * grid of padded planes, PW wide, g's strides apart. */
static size_t grid_pos(const direct_geom_t *g, int p, int cols)
{
    return (size_t)(p / cols) * g->sH * g->PW + (size_t)(p % cols) * g->sW;
}

/* Stores a channel-vector tile t (t[i*tw + o]: position or tap i, row o) into y (rows ld
 * apart, column j0 + i): y = t (+ bias[o]) or y += t, rows o < mr and columns i < nc. */
static void store_tile(const float *t, int tw, int mr, int nc, float *y, size_t ld, size_t j0, const float *bias,
                       int accumulate)
{
    for (int o = 0; o < mr; o++) {
        float *r = y + (size_t)o * ld + j0;
        const float bv = bias ? bias[o] : 0.0f;
        for (int i = 0; i < nc; i++) r[i] = accumulate ? r[i] + t[i * tw + o] : t[i * tw + o] + bv;
    }
}

/* The sum of an AVX vector's eight lanes: ((l0+l4) + (l1+l5)) + ((l2+l6) + (l3+l7)). */
__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_hadd_ps(s, s);
    s = _mm_hadd_ps(s, s);
    return _mm_cvtss_f32(s);
}

#define SFX(name) name##_avx2
#define TARGET __attribute__((target("avx2,fma")))
#define VW 8
#define VEC __m256
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VBCAST(p) _mm256_broadcast_ss(p)
#define VZERO() _mm256_setzero_ps()
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VHSUM(v) hsum8(v)
#include "conv_direct_tiles.h"
#undef SFX
#undef TARGET
#undef VW
#undef VEC
#undef VLOAD
#undef VSTORE
#undef VBCAST
#undef VZERO
#undef VFMA
#undef VHSUM

#define SFX(name) name##_avx512
#define TARGET __attribute__((target("avx512f")))
#define VW 16
#define VEC __m512
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VBCAST(p) _mm512_set1_ps(*(p))
#define VZERO() _mm512_setzero_ps()
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VHSUM(v) _mm512_reduce_add_ps(v)
#include "conv_direct_tiles.h"

/* What the CPU can run, and what direct_force_isa asked for (-1: nothing). */
static int direct_cpu_isa(void)
{
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return DIRECT_NO_ISA;
    return __builtin_cpu_supports("avx512f") ? DIRECT_AVX512 : DIRECT_AVX2;
}
static atomic_int g_forced = -1, g_isa = -1;

int direct_force_isa(int isa)
{
    if (isa > direct_cpu_isa()) return -1;
    atomic_store(&g_forced, isa);
    return 0;
}

int direct_isa(void)
{
    const int forced = atomic_load(&g_forced);
    if (forced >= 0) return forced;
    int isa = atomic_load(&g_isa);
    if (isa < 0) {
        /* OpenBLAS picks its kernels once, when it is loaded */
        isa = direct_cpu_isa();
        if (isa == DIRECT_AVX512 && !blas_core_avx512()) isa = DIRECT_AVX2;
        atomic_store(&g_isa, isa);
    }
    return isa;
}

void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy)
{
    if (direct_isa() == DIRECT_AVX512) direct_gemm_avx512(M, Ap, g, x, y, ldy);
    else direct_gemm_avx2(M, Ap, g, x, y, ldy);
}

void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n, const float *x, float *dw,
                       int accumulate)
{
    if (direct_isa() == DIRECT_AVX512) direct_gemm_wgrad_avx512(M, dy, ldd, g, n, x, dw, accumulate);
    else direct_gemm_wgrad_avx2(M, dy, ldd, g, n, x, dw, accumulate);
}

void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows, int cols, const float *x,
                    const float *bias, int accumulate, float *y)
{
    if (direct_isa() == DIRECT_AVX512) direct_conv_cv_avx512(M, Ap, g, rows, cols, x, bias, accumulate, y);
    else direct_conv_cv_avx2(M, Ap, g, rows, cols, x, bias, accumulate, y);
}

void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, int nimg, size_t ximg,
                     const float *x, float *dw, int accumulate)
{
    if (direct_isa() == DIRECT_AVX512) direct_wgrad_cv_avx512(M, dyT, g, rows, cols, nimg, ximg, x, dw, accumulate);
    else direct_wgrad_cv_avx2(M, dyT, g, rows, cols, nimg, ximg, x, dw, accumulate);
}
#else
/* Elsewhere conv.c never calls the kernels: direct_isa() says there are none. */
int direct_force_isa(int isa) { return isa == DIRECT_NO_ISA ? 0 : -1; }
int direct_isa(void) { return DIRECT_NO_ISA; }
void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy)
{
    (void)M, (void)Ap, (void)g, (void)x, (void)y, (void)ldy;
}
void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n, const float *x, float *dw,
                       int accumulate)
{
    (void)M, (void)dy, (void)ldd, (void)g, (void)n, (void)x, (void)dw, (void)accumulate;
}
void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows, int cols, const float *x,
                    const float *bias, int accumulate, float *y)
{
    (void)M, (void)Ap, (void)g, (void)rows, (void)cols, (void)x, (void)bias, (void)accumulate, (void)y;
}
void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, int nimg, size_t ximg,
                     const float *x, float *dw, int accumulate)
{
    (void)M, (void)dyT, (void)g, (void)rows, (void)cols, (void)nimg, (void)ximg, (void)x, (void)dw, (void)accumulate;
}
#endif

const char *direct_isa_name(void)
{
    switch (direct_isa()) {
    case DIRECT_AVX512: return "direct-avx512";
    case DIRECT_AVX2: return "direct-avx2";
    default: return "im2col-gemm";
    }
}

int direct_cv_rows(void) { return direct_isa() == DIRECT_AVX512 ? 32 : 16; }
