/* kernels/cpu/seq.c - the language models' kernels (ops.h): an embedding table read by
 * token ids, and the causal softmax of attention scores. */
#include <math.h>
#include <string.h>

/* softmax.c's reason: with trapping math gcc keeps the selects of ufn_max and ufn_exp as
 * branches and the loops scalar; nothing here reads the floating-point flags */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "cpu_isa.h"
#include "ops.h"

/* The row of table an id names, or NULL for one outside [0, V) (a float-coded id that is
 * not whole is truncated, as a cast does). */
static const float *embed_row(const float *table, int V, int E, float id)
{
    if (!(id >= 0.0f && id < (float)V)) return NULL;
    return table + (size_t)id * (size_t)E;
}

void embed_forward(size_t rows, int V, int E, const float *ids, const float *table, float *out)
{
    for (size_t r = 0; r < rows; r++) {
        const float *src = embed_row(table, V, E, ids[r]);
        float *dst = out + r * (size_t)E;
        if (src) memcpy(dst, src, (size_t)E * sizeof *dst);
        else memset(dst, 0, (size_t)E * sizeof *dst);
    }
}

void embed_backward(size_t rows, int V, int E, const float *ids, const float *dout, float *dtable, int add)
{
    if (!add) memset(dtable, 0, (size_t)V * (size_t)E * sizeof *dtable);
    for (size_t r = 0; r < rows; r++) {
        const float id = ids[r];
        if (!(id >= 0.0f && id < (float)V)) continue;
        float *dst = dtable + (size_t)id * (size_t)E;
        const float *g = dout + r * (size_t)E;
        for (int e = 0; e < E; e++) dst[e] += g[e];
    }
}

/* The causal softmax's rows, through eight lanes as softmax.c's lines: the running maxima
 * and sums of positions j = 8q + k kept in lane k, the lanes folded in order at the end, so
 * gcc vectorises the loops and every build (the AVX2 clone or not, without FMA in either)
 * gives the same bits; the exponentials are scalar_fn.h's ufn_exp, which vectorises, where
 * a call to expf per position did not (the softmax with its expf was 4-5% of the GPT's step
 * at nanoGPT's CPU shape). */
#define CAUSAL_LANES 8

static inline float causal_fold_sum(const float *l)
{
    float s = 0.0f;
    for (int k = 0; k < CAUSAL_LANES; k++) s += l[k];
    return s;
}

/* y[0..n) = softmax(scale * x[0..n)); n >= 1 */
static inline void causal_row_fwd(int n, float scale, const float *x, float *y)
{
    float lm[CAUSAL_LANES], ls[CAUSAL_LANES] = {0};
    int j = 0;
    for (int k = 0; k < CAUSAL_LANES; k++) lm[k] = x[0] * scale;
    for (; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) lm[k] = ufn_max(x[j + k] * scale, lm[k]);
    float mx = lm[0];
    for (int k = 1; k < CAUSAL_LANES; k++) mx = ufn_max(lm[k], mx);
    for (; j < n; j++) mx = ufn_max(x[j] * scale, mx);
    for (j = 0; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) {
            y[j + k] = ufn_exp(x[j + k] * scale - mx);
            ls[k] += y[j + k];
        }
    float sum = causal_fold_sum(ls);
    for (; j < n; j++) {
        y[j] = ufn_exp(x[j] * scale - mx);
        sum += y[j];
    }
    const float inv = 1.0f / sum;
    for (j = 0; j < n; j++) y[j] *= inv;
}

/* sum over j < n of y[j] * g[j], by lanes */
static inline float causal_row_dot(int n, const float *y, const float *g)
{
    float l[CAUSAL_LANES] = {0};
    int j = 0;
    for (; j + CAUSAL_LANES <= n; j += CAUSAL_LANES)
        for (int k = 0; k < CAUSAL_LANES; k++) l[k] += y[j + k] * g[j + k];
    float dot = causal_fold_sum(l);
    for (; j < n; j++) dot += y[j] * g[j];
    return dot;
}

/* rows r0..r1 of the mats' T-row stack, by the lanes; row r reads (r % T) + 1 positions */
__attribute__((target_clones("avx2", "default"))) static void causal_lanes_rows(size_t r0, size_t r1, int T, float scale,
                                                                                const float *inp, float *out)
{
    for (size_t r = r0; r < r1; r++) {
        const int i = (int)(r % (size_t)T);
        const float *x = inp + r * (size_t)T;
        float *y = out + r * (size_t)T;
        /* only positions 0..i are read: the masked half is never computed */
        causal_row_fwd(i + 1, scale, x, y);
        for (int j = i + 1; j < T; j++) y[j] = 0.0f;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CAUSAL_AVX2 __attribute__((target("avx2")))

/* scalar_fn.h's ufn_exp on the lanes of a W-bit vector (P: its intrinsics' prefix, _mm256 or
 * _mm512), operation for operation (no FMA), so the same bits at any width: max_ps and
 * min_ps are ufn_max's and ufn_min's selects (the second operand on a NaN), k / 2
 * truncates toward zero as C's division does; KEEP_NAN(x, y) is y where x is a number, else
 * x */
#define CAUSAL_EXP(NAME, TARGET, P, W, KEEP_NAN)                                                                    \
    TARGET static inline __m##W NAME(__m##W x)                                                                      \
    {                                                                                                               \
        const __m##W xc = P##_min_ps(P##_max_ps(x, P##_set1_ps(-104.0f)), P##_set1_ps(89.0f));                      \
        const __m##W big = P##_set1_ps(12582912.0f);                                                                \
        const __m##W kf = P##_sub_ps(P##_add_ps(P##_mul_ps(xc, P##_set1_ps(1.44269504088896341f)), big), big);      \
        const __m##W r = P##_sub_ps(P##_sub_ps(xc, P##_mul_ps(kf, P##_set1_ps(0.693359375f))),                      \
                                    P##_mul_ps(kf, P##_set1_ps(-2.12194440e-4f)));                                  \
        __m##W p = P##_set1_ps(1.9875691500e-4f);                                                                   \
        p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(1.3981999507e-3f));                                            \
        p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(8.3334519073e-3f));                                            \
        p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(4.1665795894e-2f));                                            \
        p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(1.6666665459e-1f));                                            \
        p = P##_add_ps(P##_mul_ps(p, r), P##_set1_ps(5.0000001201e-1f));                                            \
        p = P##_add_ps(P##_add_ps(P##_mul_ps(p, P##_mul_ps(r, r)), r), P##_set1_ps(1.0f));                          \
        const __m##W##i k = P##_cvttps_epi32(kf);                                                                   \
        const __m##W##i k1 = P##_srai_epi32(P##_sub_epi32(k, P##_srai_epi32(k, 31)), 1), k2 = P##_sub_epi32(k, k1); \
        const __m##W##i bias = P##_set1_epi32(127);                                                                 \
        const __m##W s1 = P##_castsi##W##_ps(P##_slli_epi32(P##_add_epi32(k1, bias), 23));                          \
        const __m##W s2 = P##_castsi##W##_ps(P##_slli_epi32(P##_add_epi32(k2, bias), 23));                          \
        return KEEP_NAN(x, P##_mul_ps(P##_mul_ps(p, s1), s2));                                                      \
    }
#define CAUSAL_KEEP_NAN8(x, y) _mm256_blendv_ps(x, y, _mm256_cmp_ps(x, x, _CMP_EQ_OQ))
CAUSAL_EXP(causal_exp8, CAUSAL_AVX2, _mm256, 256, CAUSAL_KEEP_NAN8)

/* lanes j0 + k < n set (all ones), the others clear */
CAUSAL_AVX2 static inline __m256i causal_mask(int j0, int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - j0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* causal_row_fwd and the zeros after it in explicit AVX2: the same operations in the same
 * order (lanes, their fold, then the tail's terms one by one), so the bits of the lanes'
 * loops, which gcc compiled with the lanes' arrays through the stack, the maximum's fold
 * scalar and the constants reloaded in the loop: 2.8% of the GPT's step, now about a third
 * of that. In three passes (the maximum, the exponentials and their sum, the scaling),
 * each taken for CAUSAL_BLOCK rows before the next: a row's passes wait on each other's
 * folds, rows do not, so the rows of a block overlap (a row is short: 32 positions on
 * average at nanoGPT's block of 64). */
#define CAUSAL_BLOCK 4

/* the maximum of scale * x[0..n) */
CAUSAL_AVX2 static inline float causal_row_max(int n, float scale, const float *x)
{
    const __m256 vs = _mm256_set1_ps(scale);
    const int n8 = n / 8 * 8;
    __m256 lm = _mm256_set1_ps(x[0] * scale);
    for (int j = 0; j < n8; j += 8) lm = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vs), lm);
    float l[8];
    _mm256_storeu_ps(l, lm);
    float mx = l[0];
    for (int k = 1; k < 8; k++) mx = ufn_max(l[k], mx);
    for (int j = n8; j < n; j++) mx = ufn_max(x[j] * scale, mx);
    return mx;
}

/* The lanes' sums ls folded, then the tail's exponentials (positions n / 8 * 8 .. n) each
 * added in order: the sum of causal_row_exp */
CAUSAL_AVX2 static inline float causal_exp_tail(int n, __m256 ls, __m256 vs, __m256 vm, const float *x, float *y)
{
    const int n8 = n / 8 * 8;
    float l[8];
    _mm256_storeu_ps(l, ls);
    float sum = causal_fold_sum(l);
    if (n8 < n) {
        const __m256i mk = causal_mask(n8, n);
        const __m256 e = causal_exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_maskload_ps(x + n8, mk), vs), vm));
        _mm256_storeu_ps(l, e);
        for (int j = n8; j < n; j++) sum += l[j - n8];
        _mm256_maskstore_ps(y + n8, mk, e);
    }
    return sum;
}

/* y[0..n) = exp(scale * x - mx), and their sum */
CAUSAL_AVX2 static inline float causal_row_exp(int n, float scale, float mx, const float *x, float *y)
{
    const __m256 vs = _mm256_set1_ps(scale), vm = _mm256_set1_ps(mx);
    const int n8 = n / 8 * 8;
    __m256 ls = _mm256_setzero_ps();
    for (int j = 0; j < n8; j += 8) {
        const __m256 e = causal_exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vs), vm));
        _mm256_storeu_ps(y + j, e);
        ls = _mm256_add_ps(ls, e);
    }
    return causal_exp_tail(n, ls, vs, vm, x, y);
}

/* y[0..n) /= sum by one reciprocal, zeros after n up to T (whatever y held there) */
CAUSAL_AVX2 static inline void causal_row_scale(int n, int T, float sum, float *y)
{
    const __m256 inv = _mm256_set1_ps(1.0f / sum);
    int j = 0;
    for (; j + 8 <= T; j += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(y + j), inv);
        _mm256_storeu_ps(y + j, _mm256_and_ps(v, _mm256_castsi256_ps(causal_mask(j, n))));
    }
    for (; j < T; j++) y[j] = j < n ? y[j] * (1.0f / sum) : 0.0f;
}

/* NAME: rows first..end of the mats' T-row stack by the row functions ROW (ROW##_max,
 * ROW##_exp, ROW##_scale); row r reads (r % T) + 1 positions. In place (inp == out) too:
 * each pass reads a row's x before it writes that row's y. */
#define CAUSAL_FORWARD(NAME, TARGET, ROW)                                                                          \
    TARGET static void NAME(size_t first, size_t end, int T, float scale, const float *inp, float *out)            \
    {                                                                                                              \
        for (size_t r0 = first; r0 < end; r0 += CAUSAL_BLOCK) {                                                    \
            const int R = end - r0 < CAUSAL_BLOCK ? (int)(end - r0) : CAUSAL_BLOCK;                                \
            float v[CAUSAL_BLOCK];                                                                                 \
            for (int k = 0; k < R; k++) {                                                                          \
                const size_t r = r0 + (size_t)k;                                                                   \
                v[k] = ROW##_max((int)(r % (size_t)T) + 1, scale, inp + r * (size_t)T);                            \
            }                                                                                                      \
            for (int k = 0; k < R; k++) {                                                                          \
                const size_t r = r0 + (size_t)k;                                                                   \
                v[k] = ROW##_exp((int)(r % (size_t)T) + 1, scale, v[k], inp + r * (size_t)T, out + r * (size_t)T); \
            }                                                                                                      \
            for (int k = 0; k < R; k++) {                                                                          \
                const size_t r = r0 + (size_t)k;                                                                   \
                ROW##_scale((int)(r % (size_t)T) + 1, T, v[k], out + r * (size_t)T);                               \
            }                                                                                                      \
        }                                                                                                          \
    }
CAUSAL_FORWARD(causal_forward_avx2, CAUSAL_AVX2, causal_row)

/* The same on sixteen lanes with AVX-512, the same bits again: the exponentials and the
 * scaling are elementwise, so any width computes them alike; the maxima and the sums keep
 * AVX2's eight lanes, each vector's low half taken into them before its high half, which
 * is the order of AVX2's two vectors, and the last eight positions and the tail go through
 * AVX2's code. The exponentials, twice as many an instruction, are most of a row's work:
 * causal_forward_avx2 was 3% of the bf16 GPT's step at nanoGPT's CPU shape. */
#define CAUSAL_AVX512 __attribute__((target("avx512f")))

#define CAUSAL_KEEP_NAN16(x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_EQ_OQ), x, y)
CAUSAL_EXP(causal_exp16, CAUSAL_AVX512, _mm512, 512, CAUSAL_KEEP_NAN16)

CAUSAL_AVX512 static inline __m256 causal_lo(__m512 v) { return _mm512_castps512_ps256(v); }
CAUSAL_AVX512 static inline __m256 causal_hi(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* causal_row_max's maximum */
CAUSAL_AVX512 static inline float causal_row16_max(int n, float scale, const float *x)
{
    const __m512 vs = _mm512_set1_ps(scale);
    const int n8 = n / 8 * 8;
    __m256 lm = _mm256_set1_ps(x[0] * scale);
    int j = 0;
    for (; j + 16 <= n8; j += 16) {
        const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + j), vs);
        lm = _mm256_max_ps(causal_lo(v), lm);
        lm = _mm256_max_ps(causal_hi(v), lm);
    }
    if (j < n8) lm = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), _mm512_castps512_ps256(vs)), lm);
    float l[8];
    _mm256_storeu_ps(l, lm);
    float mx = l[0];
    for (int k = 1; k < 8; k++) mx = ufn_max(l[k], mx);
    for (j = n8; j < n; j++) mx = ufn_max(x[j] * scale, mx);
    return mx;
}

/* causal_row_exp's exponentials and sum */
CAUSAL_AVX512 static inline float causal_row16_exp(int n, float scale, float mx, const float *x, float *y)
{
    const __m512 vs = _mm512_set1_ps(scale), vm = _mm512_set1_ps(mx);
    const int n8 = n / 8 * 8;
    __m256 ls = _mm256_setzero_ps();
    int j = 0;
    for (; j + 16 <= n8; j += 16) {
        const __m512 e = causal_exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + j), vs), vm));
        _mm512_storeu_ps(y + j, e);
        ls = _mm256_add_ps(ls, causal_lo(e));
        ls = _mm256_add_ps(ls, causal_hi(e));
    }
    if (j < n8) {
        const __m256 e = causal_exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), causal_lo(vs)), causal_lo(vm)));
        _mm256_storeu_ps(y + j, e);
        ls = _mm256_add_ps(ls, e);
    }
    return causal_exp_tail(n, ls, causal_lo(vs), causal_lo(vm), x, y);
}

/* causal_row_scale's scaling and zeros */
CAUSAL_AVX512 static inline void causal_row16_scale(int n, int T, float sum, float *y)
{
    const __m512 inv = _mm512_set1_ps(1.0f / sum);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int j = 0;
    for (; j + 16 <= T; j += 16) {
        const __mmask16 keep = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(n - j), lane);
        _mm512_storeu_ps(y + j, _mm512_maskz_mul_ps(keep, _mm512_loadu_ps(y + j), inv));
    }
    for (; j < T; j++) y[j] = j < n ? y[j] * (1.0f / sum) : 0.0f;
}

CAUSAL_FORWARD(causal_forward_avx512, CAUSAL_AVX512, causal_row16)
#endif

/* Rows first..end of the stack by the widest path the CPU has, capped at lanes (16, 8 or
 * 0: the lanes gcc vectorises) */
static void causal_rows_by(int lanes, size_t first, size_t end, int T, float scale, const float *inp, float *out)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (lanes >= 16 && cpu_avx512f_usable()) {
        causal_forward_avx512(first, end, T, scale, inp, out);
        return;
    }
    if (lanes >= 8 && __builtin_cpu_supports("avx2")) {
        causal_forward_avx2(first, end, T, scale, inp, out);
        return;
    }
#endif
    (void)lanes;
    causal_lanes_rows(first, end, T, scale, inp, out);
}

void causal_softmax_rows(int T, int r0, int r1, float scale, const float *inp, float *out)
{
    causal_rows_by(16, (size_t)r0, (size_t)r1, T, scale, inp, out);
}

void causal_softmax_forward(size_t mats, int T, float scale, const float *inp, float *out)
{
    /* the mats' rows as one stack: row r is row r % T of its matrix */
    causal_rows_by(16, 0, mats * (size_t)T, T, scale, inp, out);
}

void causal_softmax_forward_width(int lanes, size_t mats, int T, float scale, const float *inp, float *out)
{
    causal_rows_by(lanes, 0, mats * (size_t)T, T, scale, inp, out);
}

__attribute__((target_clones("avx2", "default"))) void
causal_softmax_backward(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp, int set)
{
    for (size_t m = 0; m < mats; m++) {
        for (int i = 0; i < T; i++) {
            const size_t row = (m * (size_t)T + (size_t)i) * (size_t)T;
            const float *y = out + row, *g = dout + row;
            float *d = dinp + row;
            const float dot = causal_row_dot(i + 1, y, g);
            if (set) {
                for (int j = 0; j <= i; j++) d[j] = scale * y[j] * (g[j] - dot);
                for (int j = i + 1; j < T; j++) d[j] = 0.0f;
            } else {
                for (int j = 0; j <= i; j++) d[j] += scale * y[j] * (g[j] - dot);
            }
        }
    }
}
