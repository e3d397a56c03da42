/* kernels/cpu/gelu_simd.c - see gelu_simd.h. The exact GELU, x / 2 * (1 + erf(x / sqrt(2))),
 * eight lanes at a time with AVX2 and FMA, or sixteen with AVX-512 (gelu_lanes.h, written
 * once for both widths: every lane computes the same operations, so the widths give the
 * same bits): scalar_fn.h's approximations (the same P below
 * UFN_ERF_SPLIT, the same erfc = exp(Q(t) - t^2) above it, the same split and clamps, the
 * same Phi read back from the output in the backward), evaluated with fused multiply-adds.
 * At nanoGPT's CPU shape GELU's forward and backward were 6.7% of the GPT's training step
 * through elementwise.c's portable loops (no FMA, the erfc tail listed block by block); here
 * a vector whose arguments are all below the split costs the small branch alone (most of
 * them: GELU's inputs are mostly small), any other the tail too, whole.
 *
 * Not the portable loops' bits: each FMA rounds once where they round a product and a sum,
 * so results on a CPU with FMA differ from one without by roundings (as the GEMMs' do).
 * The error bound, u = 2^-24, an FMA's rounding at most u |result| (test_ops's
 * test_gelu_simd holds both passes to the float64 reference under the portable loops'
 * tolerances, GELU_ULP and FWD_TOL; the approximations' own error is the coefficients',
 * shared with scalar_fn.h and checked there over every 251st float, ERF_ULP):
 * - below the split (|z| < 0.922, t = z^2 < 0.85): P's Horner partial sums are at most
 *   0.38 in magnitude, so P is off by at most u (0.001 + 0.005 + 0.023 + 0.093 + 0.30 +
 *   0.12) < 0.6 u; z + z P, one FMA, by that times |z| and half an ulp: erf within ~2 ulps.
 *   1 + erf >= 0.19 (1 - erf(0.922)) scales that to at most ~10 ulps of GELU next to the
 *   split on the negative side, a few elsewhere.
 * - above it erfc(t) = exp(a), a = Q(t) - t^2 in [-17.4, -1.6], t <= 3.92: Q's partial
 *   sums p_k are at most 2 in magnitude and each step's rounding grows by t per later step,
 *   sum over k of u |p_k| t^(8-k) <= 18 u at t = 3.92; a itself is one FMA (t^2 exact
 *   inside it), rounded by at most 16 u (half an ulp of 17.4); z = x / sqrt(2) rounded by
 *   u |z| / 2 moves a by |da/dz| <= 8 times that, 16 u. exp turns |error of a| <= 50 u
 *   into that relative error of erfc, plus its own ~2 ulps and GELU's last product's half:
 *   at most ~55 ulps where GELU is erfc's tail (x < -1.3), inside GELU_ULP's 64; on the
 *   positive side 2 - erfc, where the same error is scaled down by erfc / 2 < 0.1.
 * - the backward, g * (Phi + x phi): Phi = y / x, one division of the forward's output
 *   (so within GELU_ULP of Phi where GELU is), x phi = (x pdf) e^(-x^2/2), exp's argument
 *   rounded once: relative errors of a few 1e-7 at most against FWD_TOL's 1e-5 (relative,
 *   or absolute below 1). */
#include "gelu_simd.h"

#include <string.h>

#include "prefetch.h"

#include "scalar_fn.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "cpu_isa.h"

int gelu_avx2_ok(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

int gelu_avx512_ok(void) { return cpu_avx512f_usable(); }

/* ---- eight lanes: AVX2 and FMA ------------------------------------------------------------ */
#define GL_TARGET __attribute__((target("avx2,fma")))
#define GL_W 8
#define GL_NAME(f) f##_avx2
#define GL_V __m256
#define GL_VI __m256i
#define GL_M __m256
#define GL_SET1(c) _mm256_set1_ps(c)
#define GL_SET1I(c) _mm256_set1_epi32(c)
#define GL_ZERO() _mm256_setzero_ps()
#define GL_ADD(a, b) _mm256_add_ps(a, b)
#define GL_SUB(a, b) _mm256_sub_ps(a, b)
#define GL_MUL(a, b) _mm256_mul_ps(a, b)
#define GL_DIV(a, b) _mm256_div_ps(a, b)
#define GL_MIN(a, b) _mm256_min_ps(a, b)
#define GL_MAX(a, b) _mm256_max_ps(a, b)
#define GL_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GL_FNMADD(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define GL_ABS(a) _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
#define GL_RINT(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define GL_CVTI(a) _mm256_cvtps_epi32(a)
#define GL_SRAI1(a) _mm256_srai_epi32(a, 1)
#define GL_SUBI(a, b) _mm256_sub_epi32(a, b)
#define GL_ADDI(a, b) _mm256_add_epi32(a, b)
#define GL_SHL23(a) _mm256_castsi256_ps(_mm256_slli_epi32(a, 23))
#define GL_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define GL_ALL(m) (_mm256_movemask_ps(m) == 0xff)
#define GL_SELECT(m, t, f) _mm256_blendv_ps(f, t, m)
#define GL_ZERO_WHERE(m, a) _mm256_andnot_ps(m, a)
#define GL_LOAD(p) _mm256_loadu_ps(p)
#define GL_STORE(p, v) _mm256_storeu_ps(p, v)
#define GL_LOADN(p, n) _mm256_maskload_ps(p, gl_tail_avx2(n))
#define GL_STOREN(p, n, v) _mm256_maskstore_ps(p, gl_tail_avx2(n), v)
#define GL_LOADH(p) _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define GL_WIDEN(h) _mm256_castsi256_ps(_mm256_slli_epi32(h, 16))
/* lanes j < n set (all ones), the others clear: the tail's mask */
GL_TARGET static inline __m256i gl_tail_avx2(size_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#include "gelu_lanes.h"
#include "gelu_lanes_undef.h"

/* ---- sixteen lanes: AVX-512 ------------------------------------------------------------- */
#define GL_TARGET __attribute__((target("avx512f")))
#define GL_W 16
#define GL_NAME(f) f##_avx512
#define GL_V __m512
#define GL_VI __m512i
#define GL_M __mmask16
#define GL_SET1(c) _mm512_set1_ps(c)
#define GL_SET1I(c) _mm512_set1_epi32(c)
#define GL_ZERO() _mm512_setzero_ps()
#define GL_ADD(a, b) _mm512_add_ps(a, b)
#define GL_SUB(a, b) _mm512_sub_ps(a, b)
#define GL_MUL(a, b) _mm512_mul_ps(a, b)
#define GL_DIV(a, b) _mm512_div_ps(a, b)
#define GL_MIN(a, b) _mm512_min_ps(a, b)
#define GL_MAX(a, b) _mm512_max_ps(a, b)
#define GL_FMADD(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GL_FNMADD(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define GL_ABS(a) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff)))
#define GL_RINT(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define GL_CVTI(a) _mm512_cvtps_epi32(a)
#define GL_SRAI1(a) _mm512_srai_epi32(a, 1)
#define GL_SUBI(a, b) _mm512_sub_epi32(a, b)
#define GL_ADDI(a, b) _mm512_add_epi32(a, b)
#define GL_SHL23(a) _mm512_castsi512_ps(_mm512_slli_epi32(a, 23))
#define GL_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define GL_ALL(m) ((m) == 0xffff)
#define GL_SELECT(m, t, f) _mm512_mask_blend_ps(m, f, t)
#define GL_ZERO_WHERE(m, a) _mm512_maskz_mov_ps((__mmask16) ~(m), a)
#define GL_LOAD(p) _mm512_loadu_ps(p)
#define GL_STORE(p, v) _mm512_storeu_ps(p, v)
#define GL_LOADN(p, n) _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), p)
#define GL_STOREN(p, n, v) _mm512_mask_storeu_ps(p, (__mmask16)((1u << (n)) - 1), v)
#define GL_LOADH(p) _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define GL_WIDEN(h) _mm512_castsi512_ps(_mm512_slli_epi32(h, 16))
#include "gelu_lanes.h"
#include "gelu_lanes_undef.h"
#else
void gelu_forward_h_avx2(size_t n, const uint16_t *x, float *y) { (void)n, (void)x, (void)y; }
void gelu_forward_h_avx512(size_t n, const uint16_t *x, float *y) { (void)n, (void)x, (void)y; }
void gelu_backward_h_avx2(size_t n, const uint16_t *x, const uint16_t *y, const float *g, float *d, int set)
{
    (void)n, (void)x, (void)y, (void)g, (void)d, (void)set;
}
void gelu_backward_h_avx512(size_t n, const uint16_t *x, const uint16_t *y, const float *g, float *d, int set)
{
    (void)n, (void)x, (void)y, (void)g, (void)d, (void)set;
}
int gelu_avx2_ok(void) { return 0; }
int gelu_avx512_ok(void) { return 0; }
void gelu_forward_avx2(size_t n, const float *x, float *y) { (void)n, (void)x, (void)y; }
void gelu_backward_avx2(size_t n, const float *x, const float *y, const float *g, float *d, int set)
{
    (void)n, (void)x, (void)y, (void)g, (void)d, (void)set;
}
void gelu_forward_avx512(size_t n, const float *x, float *y) { (void)n, (void)x, (void)y; }
void gelu_backward_avx512(size_t n, const float *x, const float *y, const float *g, float *d, int set)
{
    (void)n, (void)x, (void)y, (void)g, (void)d, (void)set;
}
#endif
