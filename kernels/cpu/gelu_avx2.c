/* kernels/cpu/gelu_avx2.c - see gelu_avx2.h. The exact GELU, x / 2 * (1 + erf(x / sqrt(2))),
 * eight lanes at a time with FMA: scalar_fn.h's approximations (the same P below
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
 * test_gelu_avx2 holds both passes to the float64 reference under the portable loops'
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
#include "gelu_avx2.h"

#include "prefetch.h"

#include "scalar_fn.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define GELU_TARGET __attribute__((target("avx2,fma")))

int gelu_avx2_ok(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

/* lanes j < n set (all ones), the others clear: the tail's mask */
GELU_TARGET static inline __m256i gelu_mask(size_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Horner's rule with FMA over c[0..n), highest degree first */
GELU_TARGET static inline __m256 gelu_poly(__m256 t, const float *c, int n)
{
    __m256 p = _mm256_set1_ps(c[0]);
    for (int i = 1; i < n; i++) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(c[i]));
    return p;
}

/* exp on eight lanes: scalar_fn.h's ufn_exp (Cephes' reduction by ln 2 in two parts, its
 * degree-7 polynomial, 2^k as two halves so that results down to exp(-104) go through the
 * subnormals, the same clamps) with FMA. A NaN argument gives a finite value: neither caller
 * passes one on to its result (the forward's argument is clamped first, the backward's
 * NaN x makes y / x NaN). */
GELU_TARGET static inline __m256 gelu_exp8(__m256 x)
{
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(89.0f));
    const __m256 kf = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(-2.12194440e-4f), r);
    static const float C[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
    const __m256 p = gelu_poly(r, C, 6);
    const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i k = _mm256_cvtps_epi32(kf);
    const __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1); /* each in [-75, 65] */
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(e, s1), s2);
}

/* GELU of eight lanes: 1 + erf(x / sqrt(2)) by the small branch, and where any lane is at or
 * above the split (or NaN) the tail for all eight, selected lane by lane as ufn_erf1p does:
 * erfc(-z) below -UFN_ERF_SPLIT (0 below -UFN_ERF_ONE), 2 - erfc(z) above the split. A
 * NaN x gives NaN through the last product, +inf inf, -inf NaN (-inf * 0), as unary_fn. */
GELU_TARGET static inline __m256 gelu8(__m256 x)
{
    static const float P[7] = UFN_ERF_P, Q[9] = UFN_ERFC_Q;
    const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(UFN_SQRT1_2));
    const __m256 az = _mm256_and_ps(z, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    const __m256 small = _mm256_cmp_ps(az, _mm256_set1_ps(UFN_ERF_SPLIT), _CMP_LT_OQ);
    const __m256 erf = _mm256_fmadd_ps(z, gelu_poly(_mm256_mul_ps(z, z), P, 7), z);
    __m256 onep = _mm256_add_ps(_mm256_set1_ps(1.0f), erf);
    if (_mm256_movemask_ps(small) != 0xff) {
        const __m256 t = _mm256_min_ps(az, _mm256_set1_ps(UFN_ERF_ONE)); /* a NaN: UFN_ERF_ONE */
        const __m256 ec = gelu_exp8(_mm256_fnmadd_ps(t, t, gelu_poly(t, Q, 9)));
        const __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
        const __m256 gone = _mm256_cmp_ps(z, _mm256_set1_ps(-UFN_ERF_ONE), _CMP_LT_OQ);
        __m256 tail = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), ec), ec, neg);
        tail = _mm256_andnot_ps(gone, tail);
        onep = _mm256_blendv_ps(tail, onep, small);
    }
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), onep);
}

GELU_TARGET void gelu_forward_avx2(size_t n, const float *x, float *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i m = gelu_mask(n - i);
        _mm256_maskstore_ps(y + i, m, gelu8(_mm256_maskload_ps(x + i, m)));
    }
}

/* g's factor, Phi(x) + x phi(x), of eight lanes: Phi as ufn_gelu_cdf reads it back (y / x,
 * or 1/2 + x pdf below 2^-20 in magnitude, x = 0 included) */
GELU_TARGET static inline __m256 gelu_grad8(__m256 x, __m256 y)
{
    const __m256 pdf = _mm256_set1_ps(UFN_GELU_PDF);
    const __m256 ax = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    const __m256 tiny = _mm256_cmp_ps(ax, _mm256_set1_ps(0x1p-20f), _CMP_LT_OQ);
    const __m256 cdf = _mm256_blendv_ps(_mm256_div_ps(y, x), _mm256_fmadd_ps(x, pdf, _mm256_set1_ps(0.5f)), tiny);
    const __m256 e = gelu_exp8(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x), x));
    return _mm256_fmadd_ps(_mm256_mul_ps(x, pdf), e, cdf);
}

/* d = g * grad + d, or + 0 with set: the FMA into zeros rounds g * grad once and turns a
 * -0 into +0, the bits of += into zeros (what unary_backward_set promises) */
GELU_TARGET void gelu_backward_avx2(size_t n, const float *x, const float *y, const float *g, float *d, int set)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        prefetch_ahead(x, i, 0); /* the forward's input and output, cold since */
        prefetch_ahead(y, i, 0);
        const __m256 acc = set ? _mm256_setzero_ps() : _mm256_loadu_ps(d + i);
        const __m256 t = gelu_grad8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
        _mm256_storeu_ps(d + i, _mm256_fmadd_ps(_mm256_loadu_ps(g + i), t, acc));
    }
    if (i < n) {
        const __m256i m = gelu_mask(n - i);
        const __m256 acc = set ? _mm256_setzero_ps() : _mm256_maskload_ps(d + i, m);
        /* the lanes past n hold x = y = 0: 1/2 + 0, finite */
        const __m256 t = gelu_grad8(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m));
        _mm256_maskstore_ps(d + i, m, _mm256_fmadd_ps(_mm256_maskload_ps(g + i, m), t, acc));
    }
}
#else
int gelu_avx2_ok(void) { return 0; }
void gelu_forward_avx2(size_t n, const float *x, float *y) { (void)n, (void)x, (void)y; }
void gelu_backward_avx2(size_t n, const float *x, const float *y, const float *g, float *d, int set)
{
    (void)n, (void)x, (void)y, (void)g, (void)d, (void)set;
}
#endif
