/* kernels/cpu/elementwise.c - activations (ReLU, LeakyReLU, sigmoid, tanh), the plain and the
 * option-A residual add, channel concatenation and global average pooling.
 *
 * The public functions take no restrict pointers, so relu_forward may run in place
 * (out == inp); gcc still vectorises the loops, guarding them with a runtime overlap
 * test. The hot loops are cloned for AVX2; there is no FMA in these clones, so both
 * versions round identically and results do not depend on the machine, except GELU's,
 * which a CPU with AVX2 and FMA runs through gelu_simd.c (AVX2 or AVX-512) (6.7% of a small GPT's step
 * before): there it differs from the portable loops by roundings.
 */
#include <math.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* The activations' selects (Clip's bounds, the sigmoid's numerator, scalar_fn.h's exp
 * clamps) are followed by arithmetic; with trapping math gcc threads that arithmetic into
 * branches it may not speculate, and the loops stay scalar. Nothing here reads the
 * floating-point exception flags, and the values are the same either way. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "bf16.h"
#include "gemm_bf16_act.h"
#include "gelu_simd.h"
#include "ops.h"
#include "parallel.h"
#include "relu_grad.h"

/* ---- on the kernels' threads (parallel.h) ------------------------------------------------
 * ReLU, zeroing and the residual add are split over the threads, by element ranges and by
 * images: every element is computed as one thread would, so results do not depend on the
 * threads.
 * A pass under PAR_MIN_FLOATS elements (parallel.h) stays on one thread. */

/* A pass over n floats (ReLU, zeroing), split by element ranges. */
typedef struct {
    size_t n;
    const float *inp, *out, *dout;
    float *y;
    int set; /* relu backward: y = instead of += */
} span_job_t;

__attribute__((target_clones("avx2", "default"))) static void relu_fwd(size_t n, const float *inp, float *out)
{
    /* NaN > 0 is false, so a NaN maps to 0 */
    for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

/* dinp += the term relu_bwd_set writes (relu_grad.h): adding a -0 that the ReLU passes as +0
 * keeps a -0 already in dinp from depending on whether the gradient went through a
 * buffer first (model.c's fusions add it straight into the shortcut's gradient) */
__attribute__((target_clones("avx2", "default"))) static void relu_bwd(size_t n, const float *out, const float *dout,
                                                                       float *dinp)
{
    for (size_t i = 0; i < n; i++) dinp[i] += relu_grad(dout[i], out[i]);
}

/* dinp = the same term + 0.0f: what += gives into a zeroed dinp, bit for bit (+0 for -0),
 * without reading dinp (relu_grad.h) */
__attribute__((target_clones("avx2", "default"))) static void relu_bwd_set(size_t n, const float *out,
                                                                           const float *dout, float *dinp)
{
    for (size_t i = 0; i < n; i++) dinp[i] = relu_grad(dout[i], out[i]);
}

static void relu_fwd_part(void *arg, int t, int T)
{
    const span_job_t *j = arg;
    long lo, hi;
    par_range((long)j->n, t, T, &lo, &hi);
    relu_fwd((size_t)(hi - lo), j->inp + lo, j->y + lo);
}

static void relu_bwd_part(void *arg, int t, int T)
{
    const span_job_t *j = arg;
    long lo, hi;
    par_range((long)j->n, t, T, &lo, &hi);
    (j->set ? relu_bwd_set : relu_bwd)((size_t)(hi - lo), j->out + lo, j->dout + lo, j->y + lo);
}

static void zero_part(void *arg, int t, int T)
{
    const span_job_t *j = arg;
    long lo, hi;
    par_range((long)j->n, t, T, &lo, &hi);
    memset(j->y + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

void zero_floats(size_t n, float *x)
{
    span_job_t j = {.n = n, .y = x};
    par_run_min(zero_part, &j, n);
}

void relu_forward(size_t n, const float *inp, float *out)
{
    span_job_t j = {.n = n, .inp = inp, .y = out};
    par_run_min(relu_fwd_part, &j, n);
}

static void relu_backward_run(size_t n, const float *out, const float *dout, float *dinp, int set)
{
    if (!dinp) return;
    span_job_t j = {.n = n, .out = out, .dout = dout, .y = dinp, .set = set};
    par_run_min(relu_bwd_part, &j, n);
}

void relu_backward(size_t n, const float *out, const float *dout, float *dinp)
{
    relu_backward_run(n, out, dout, dinp, 0);
}

void relu_backward_set(size_t n, const float *out, const float *dout, float *dinp)
{
    relu_backward_run(n, out, dout, dinp, 1);
}

/* The activations below are loops over scalar_fn.h's functions, the formulas the CUDA
 * kernels use too; each call names its function, so the switch folds away and the loop
 * vectorises as the expression written out would. */
#define UNARY_FWD_LOOP(op, a, b) \
    for (size_t i = 0; i < n; i++) out[i] = unary_fn(op, inp[i], a, b)
/* x and y: the input and output arrays the derivative reads (unary_grad_reads_input) */
#define UNARY_BWD_LOOP(op, x, y, a, b) \
    for (size_t i = 0; i < n; i++) dinp[i] += unary_grad(op, x, y, dout[i], a, b)

__attribute__((target_clones("avx2", "default"))) void leaky_relu_forward(size_t n, float alpha, const float *inp,
                                                                          float *out)
{
    UNARY_FWD_LOOP(UNARY_LEAKY_RELU, alpha, 0.0f);
}

__attribute__((target_clones("avx2", "default"))) void leaky_relu_backward(size_t n, float alpha, const float *out,
                                                                           const float *dout, float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_LEAKY_RELU, 0.0f, out[i], alpha, 0.0f);
}

__attribute__((target_clones("avx2", "default"))) void sigmoid_forward(size_t n, const float *inp, float *out)
{
    UNARY_FWD_LOOP(UNARY_SIGMOID, 0.0f, 0.0f);
}

__attribute__((target_clones("avx2", "default"))) void sigmoid_backward(size_t n, const float *out, const float *dout,
                                                                        float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_SIGMOID, 0.0f, out[i], 0.0f, 0.0f);
}

void tanh_forward(size_t n, const float *inp, float *out) { UNARY_FWD_LOOP(UNARY_TANH, 0.0f, 0.0f); }

__attribute__((target_clones("avx2", "default"))) void tanh_backward(size_t n, const float *out, const float *dout,
                                                                     float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_TANH, 0.0f, out[i], 0.0f, 0.0f);
}

/* ---- Clip, HardSigmoid, HardSwish, Mul ------------------------------------------ */

__attribute__((target_clones("avx2", "default"))) void clip_forward(size_t n, float lo, float hi, const float *inp,
                                                                    float *out)
{
    UNARY_FWD_LOOP(UNARY_CLIP, lo, hi);
}

__attribute__((target_clones("avx2", "default"))) void clip_backward(size_t n, float lo, float hi, const float *out,
                                                                     const float *dout, float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_CLIP, 0.0f, out[i], lo, hi);
}

__attribute__((target_clones("avx2", "default"))) void hardsigmoid_forward(size_t n, float alpha, float beta,
                                                                           const float *inp, float *out)
{
    UNARY_FWD_LOOP(UNARY_HARDSIGMOID, alpha, beta);
}

__attribute__((target_clones("avx2", "default"))) void hardsigmoid_backward(size_t n, float alpha, const float *out,
                                                                            const float *dout, float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_HARDSIGMOID, 0.0f, out[i], alpha, 0.0f);
}

__attribute__((target_clones("avx2", "default"))) void hardswish_forward(size_t n, const float *inp, float *out)
{
    UNARY_FWD_LOOP(UNARY_HARDSWISH, 0.0f, 0.0f);
}

__attribute__((target_clones("avx2", "default"))) void hardswish_backward(size_t n, const float *inp, const float *dout,
                                                                          float *dinp)
{
    if (!dinp) return;
    UNARY_BWD_LOOP(UNARY_HARDSWISH, inp[i], 0.0f, 0.0f, 0.0f);
}

/* Erf and GELU by blocks of ERF_BLOCK: every element through the small branch (a loop
 * without the erfc tail), then, in a block that holds an argument at or above
 * UFN_ERF_SPLIT (a NaN too), those elements listed; the listed elements of ERF_CHUNK are
 * given the full function (both branches and the select) together and put back. The
 * results are unary_fn's bit for bit. The erfc tail was about 1.3 ns of GELU's 2 ns an
 * element. A block all small (most of ConvNeXt's) costs its test and the small branch; in
 * the ViT, where 89% of GELU's arguments are small from init but only 2.5% of its blocks of
 * 32, a block costs the small branch, the listing (erf_list_avx2: 8 positions at a time,
 * about 0.1 ns an element; one at a time, branch-free, was 0.5) and the full function of
 * its large elements only. A block of more than ERF_LIST_MAX large arguments
 * takes the full function whole, as all blocks did before (listing them one at a time cost
 * more there: 2.75 against 2.05 ns an element with two thirds of them large). */
enum { ERF_BLOCK = 32, ERF_CHUNK = 8 * ERF_BLOCK, ERF_LIST_MAX = ERF_BLOCK / 3 };

/* at[nb..] = the positions j0 + k (k < w) of x whose argument x * scale needs the full
 * function, returning the new count; at holds 8 more than it is given positions for. */
static int erf_list(const float *x, int j0, int w, float scale, int *at, int nb)
{
    for (int k = 0; k < w; k++) {
        at[nb] = j0 + k;
        nb += !ufn_erf_is_small(x[j0 + k] * scale);
    }
    return nb;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same eight at a time: the lanes' mask (a NaN is not below the split) packs the
 * positions 0-7 of its set lanes through BMI2's pdep and pext (fast on Zen 3 and later and
 * on Intel since Haswell; not called on Zen 1 and 2), widened and stored as eight ints of
 * which the count's first are the list's; the rest are written over next. */
__attribute__((target("avx2,bmi2"))) static int erf_list_avx2(const float *x, int j0, int w, float scale, int *at,
                                                              int nb)
{
    const __m256 vs = _mm256_set1_ps(scale), split = _mm256_set1_ps(UFN_ERF_SPLIT);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    int k = 0;
    for (; k + 8 <= w; k += 8) {
        const __m256 a = _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j0 + k), vs), absm);
        const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, split, _CMP_NLT_UQ));
        const unsigned long long pos = _pext_u64(0x0706050403020100ULL, _pdep_u64(m, 0x0101010101010101ULL) * 0xFFULL);
        const __m256i idx = _mm256_add_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)pos)),
                                             _mm256_set1_epi32(j0 + k));
        _mm256_storeu_si256((__m256i *)(at + nb), idx);
        nb += __builtin_popcount(m);
    }
    return erf_list(x, j0 + k, w - k, scale, at, nb);
}
#endif

__attribute__((always_inline)) static inline void erf_gelu_forward(unary_op_t op, size_t n, const float *inp, float *out)
{
    const float scale = op == UNARY_GELU ? UFN_SQRT1_2 : 1.0f; /* erf's argument over x */
    float big[ERF_CHUNK], full[ERF_CHUNK];
    int at[ERF_CHUNK + 8]; /* big[t] is x[at[t]] of the chunk */
#if defined(__x86_64__) && defined(__GNUC__)
    /* pdep and pext are microcoded on Zen 1 and 2 (hundreds of cycles each): there the
     * list is made one element at a time, as on machines without AVX2 */
    const int simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && !__builtin_cpu_is("znver1") &&
                     !__builtin_cpu_is("znver2");
#endif
    for (size_t i = 0; i < n; i += ERF_CHUNK) {
        const int len = n - i < ERF_CHUNK ? (int)(n - i) : ERF_CHUNK;
        const float *x = inp + i;
        float *y = out + i;
        int nb = 0;
        for (int j = 0; j < len; j += ERF_BLOCK) {
            const int w = len - j < ERF_BLOCK ? len - j : ERF_BLOCK;
            int large = 0;
            for (int k = 0; k < w; k++) large += !ufn_erf_is_small(x[j + k] * scale);
            if (large > ERF_LIST_MAX) {
                for (int k = 0; k < w; k++) y[j + k] = unary_fn(op, x[j + k], 0.0f, 0.0f);
                continue;
            }
            if (op == UNARY_GELU)
                for (int k = 0; k < w; k++) y[j + k] = ufn_gelu_small(x[j + k]);
            else
                for (int k = 0; k < w; k++) y[j + k] = ufn_erf_small(x[j + k]);
            if (!large) continue;
#if defined(__x86_64__) && defined(__GNUC__)
            if (simd) {
                nb = erf_list_avx2(x, j, w, scale, at, nb);
                continue;
            }
#endif
            nb = erf_list(x, j, w, scale, at, nb);
        }
        for (int t = 0; t < nb; t++) big[t] = x[at[t]];
        for (int t = 0; t < nb; t++) full[t] = unary_fn(op, big[t], 0.0f, 0.0f);
        for (int t = 0; t < nb; t++) y[at[t]] = full[t];
    }
}

/* One loop per function: the switch is outside the loops, which vectorise. The
 * activations with entry points of their own are not taken here. */
__attribute__((target_clones("avx2", "default"))) void unary_forward(unary_op_t op, float a, size_t n, const float *inp,
                                                                     float *out)
{
    switch (op) {
    case UNARY_EXP: UNARY_FWD_LOOP(UNARY_EXP, a, 0.0f); break;
    case UNARY_NEG: UNARY_FWD_LOOP(UNARY_NEG, a, 0.0f); break;
    case UNARY_SQRT: UNARY_FWD_LOOP(UNARY_SQRT, a, 0.0f); break;
    case UNARY_RECIPROCAL: UNARY_FWD_LOOP(UNARY_RECIPROCAL, a, 0.0f); break;
    case UNARY_ABS: UNARY_FWD_LOOP(UNARY_ABS, a, 0.0f); break;
    case UNARY_POW: UNARY_FWD_LOOP(UNARY_POW, a, 0.0f); break;
    case UNARY_ERF: erf_gelu_forward(UNARY_ERF, n, inp, out); break; /* op a constant: */
    case UNARY_GELU: /* each inlined; GELU in vectors with FMA where the CPU has them (gelu_simd.c) */
        if (gelu_avx512_ok()) gelu_forward_avx512(n, inp, out);
        else if (gelu_avx2_ok()) gelu_forward_avx2(n, inp, out);
        else erf_gelu_forward(UNARY_GELU, n, inp, out);
        break;
    default: break;
    }
}

/* unary_backward's loop of one operator: dinp += the term, or with set dinp = the term +
 * 0.0f (what += gives into zeros, bit for bit), two loops so that each vectorises */
#define UNARY_BWD_RUN(op, x, y, a, b)                                                            \
    do {                                                                                         \
        if (set)                                                                                 \
            for (size_t i = 0; i < n; i++) dinp[i] = unary_grad(op, x, y, dout[i], a, b) + 0.0f; \
        else UNARY_BWD_LOOP(op, x, y, a, b);                                                     \
    } while (0)

__attribute__((target_clones("avx2", "default"))) static void
unary_bwd(unary_op_t op, float a, size_t n, const float *inp, const float *out, const float *dout, float *dinp, int set)
{
    switch (op) {
    case UNARY_EXP: UNARY_BWD_RUN(UNARY_EXP, 0.0f, out[i], a, 0.0f); break;
    case UNARY_NEG: UNARY_BWD_RUN(UNARY_NEG, 0.0f, 0.0f, a, 0.0f); break;
    case UNARY_SQRT: UNARY_BWD_RUN(UNARY_SQRT, 0.0f, out[i], a, 0.0f); break;
    case UNARY_RECIPROCAL: UNARY_BWD_RUN(UNARY_RECIPROCAL, 0.0f, out[i], a, 0.0f); break;
    case UNARY_ABS: UNARY_BWD_RUN(UNARY_ABS, inp[i], 0.0f, a, 0.0f); break;
    case UNARY_POW: UNARY_BWD_RUN(UNARY_POW, inp[i], 0.0f, a, 0.0f); break;
    case UNARY_ERF: UNARY_BWD_RUN(UNARY_ERF, inp[i], 0.0f, a, 0.0f); break;
    case UNARY_GELU:
        if (gelu_avx512_ok()) gelu_backward_avx512(n, inp, out, dout, dinp, set);
        else if (gelu_avx2_ok()) gelu_backward_avx2(n, inp, out, dout, dinp, set);
        else UNARY_BWD_RUN(UNARY_GELU, inp[i], out[i], a, 0.0f);
        break;
    default: break;
    }
}

void unary_backward(unary_op_t op, float a, size_t n, const float *inp, const float *out, const float *dout, float *dinp)
{
    if (dinp) unary_bwd(op, a, n, inp, out, dout, dinp, 0);
}

void unary_backward_set(unary_op_t op, float a, size_t n, const float *inp, const float *out, const float *dout,
                        float *dinp)
{
    if (dinp) unary_bwd(op, a, n, inp, out, dout, dinp, 1);
}

/* Elements a bf16 output's steps take at a time, through float32 on the stack: a multiple
 * of the vector kernels' 16 lanes, so each chunk's tail is the whole run's and every
 * element gets the bits one call over the whole run gives it. */
#define BF16_CHUNK 2048

/* c elements of the input from o: inp's, or inp16's widened into x */
static const float *input_chunk(const float *inp, const uint16_t *inp16, size_t o, size_t c, float *x)
{
    if (inp) return inp + o;
    bf16_widen_rows(1, (int)c, inp16 + o, c, x);
    return x;
}

/* GELU's vector kernels read bf16 where the CPU has them (gelu_simd.h's _h functions: the
 * bits of widening first), unary_fwd's and unary_bwd's choice of width; 0 where it has none */
static int gelu_h_width(void) { return gelu_avx512_ok() ? 16 : gelu_avx2_ok() ? 8 : 0; }

void unary_forward_bf16(unary_op_t op, float a, size_t n, const float *inp, const uint16_t *inp16, uint16_t *out16)
{
    float x[BF16_CHUNK], y[BF16_CHUNK];
    const int h = op == UNARY_GELU && inp16 ? gelu_h_width() : 0;
    for (size_t o = 0; o < n; o += BF16_CHUNK) {
        const size_t c = n - o < BF16_CHUNK ? n - o : BF16_CHUNK;
        if (h == 16) gelu_forward_h_avx512(c, inp16 + o, y);
        else if (h == 8) gelu_forward_h_avx2(c, inp16 + o, y);
        else unary_forward(op, a, c, input_chunk(inp, inp16, o, c, x), y);
        bf16_act_store(c, y, out16 + o);
    }
}

void unary_backward_bf16(unary_op_t op, float a, size_t n, const float *inp, const uint16_t *inp16, const float *out,
                         const uint16_t *out16, const float *dout, float *dinp, int set)
{
    if (!dinp) return;
    const int w = op == UNARY_GELU && inp16 && out16 ? gelu_h_width() : 0;
    if (w) { /* elementwise: the chunks' bits in one pass */
        if (w == 16) gelu_backward_h_avx512(n, inp16, out16, dout, dinp, set);
        else gelu_backward_h_avx2(n, inp16, out16, dout, dinp, set);
        return;
    }
    float x[BF16_CHUNK], y[BF16_CHUNK];
    uint16_t h[BF16_CHUNK];
    for (size_t o = 0; o < n; o += BF16_CHUNK) {
        const size_t c = n - o < BF16_CHUNK ? n - o : BF16_CHUNK;
        const uint16_t *r = out16 ? out16 + o : h;
        if (!out16) bf16_act_store(c, out + o, h);
        bf16_widen_rows(1, (int)c, r, c, y);
        unary_bwd(op, a, c, input_chunk(inp, inp16, o, c, x), y, dout + o, dinp + o, set);
    }
}

/* The walk over out in order: ia and ib follow the inputs' strides; counters per axis. */
typedef struct {
    int idx[BCAST_MAX_AXES];
    size_t ia, ib;
} bcast_pos_t;

static size_t bcast_count(const bcast_desc_t *d, int B)
{
    size_t n = (size_t)B;
    for (int ax = 1; ax < d->rank; ax++) n *= (size_t)d->dims[ax];
    return n;
}

static void bcast_next(const bcast_desc_t *d, int B, bcast_pos_t *p)
{
    for (int ax = d->rank - 1; ax >= 0; ax--) {
        const int n = ax ? d->dims[ax] : B;
        p->ia += d->sa[ax];
        p->ib += d->sb[ax];
        if (++p->idx[ax] < n) return;
        p->ia -= d->sa[ax] * (size_t)n;
        p->ib -= d->sb[ax] * (size_t)n;
        p->idx[ax] = 0;
    }
}

void binary_forward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, float *out)
{
    bcast_pos_t p = {{0}, 0, 0};
    const size_t n = bcast_count(d, B);
    for (size_t o = 0; o < n; o++, bcast_next(d, B, &p)) { out[o] = binary_fn(op, a[p.ia], b[p.ib]); }
}

void binary_backward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, const float *dout,
                     float *da, float *db)
{
    bcast_pos_t p = {{0}, 0, 0};
    const size_t n = bcast_count(d, B);
    for (size_t o = 0; o < n; o++, bcast_next(d, B, &p)) {
        const float g = dout[o], x = a[p.ia], y = b[p.ib];
        if (da) da[p.ia] += binary_grad_xy(op, g, x, y);
        if (db) db[p.ib] += binary_grad_y(op, g, x, y);
    }
}

void view_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, float *out)
{
    bcast_pos_t p = {{0}, off, 0};
    const size_t n = bcast_count(d, B);
    for (size_t o = 0; o < n; o++, bcast_next(d, B, &p)) out[o] = inp[p.ia];
}

void view_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp)
{
    bcast_pos_t p = {{0}, off, 0};
    const size_t n = bcast_count(d, B);
    if (!dinp) return;
    for (size_t o = 0; o < n; o++, bcast_next(d, B, &p)) dinp[p.ia] += dout[o];
}

void reduce_forward(const bcast_desc_t *d, int B, float scale, const float *inp, float *out, size_t nout)
{
    bcast_pos_t p = {{0}, 0, 0};
    const size_t n = bcast_count(d, B);
    memset(out, 0, nout * sizeof *out);
    for (size_t i = 0; i < n; i++, bcast_next(d, B, &p)) out[p.ib] += inp[p.ia];
    for (size_t o = 0; o < nout; o++) out[o] *= scale;
}

void reduce_backward(const bcast_desc_t *d, int B, float scale, const float *dout, float *dinp)
{
    bcast_pos_t p = {{0}, 0, 0};
    const size_t n = bcast_count(d, B);
    if (!dinp) return;
    for (size_t i = 0; i < n; i++, bcast_next(d, B, &p)) dinp[p.ia] += scale * dout[p.ib];
}

void mul_forward(int B, int C, int HW, int HW2, const float *a, const float *b, float *out)
{
    const size_t planes = (size_t)B * C;
    if (HW2 == HW) {
        for (size_t i = 0; i < planes * HW; i++) out[i] = a[i] * b[i];
        return;
    }
    for (size_t p = 0; p < planes; p++) {
        const float s = b[p];
        const float *ap = a + p * HW;
        float *op = out + p * HW;
        for (int j = 0; j < HW; j++) op[j] = ap[j] * s;
    }
}

void mul_backward(int B, int C, int HW, int HW2, const float *a, const float *b, const float *dout, float *da, float *db)
{
    const size_t planes = (size_t)B * C;
    if (HW2 == HW) {
        /* da and db may be one buffer: each element's two sums in turn */
        for (size_t i = 0; i < planes * HW; i++) {
            const float g = dout[i];
            if (da) da[i] += g * b[i];
            if (db) db[i] += g * a[i];
        }
        return;
    }
    for (size_t p = 0; p < planes; p++) {
        const float s = b[p], *ap = a + p * HW, *gp = dout + p * HW;
        float acc = 0.0f;
        if (da)
            for (int j = 0; j < HW; j++) da[p * HW + j] += gp[j] * s;
        for (int j = 0; j < HW; j++) acc += gp[j] * ap[j];
        if (db) db[p] += acc;
    }
}

/* ---- plain add and concatenation ------------------------------------------------- */

__attribute__((target_clones("avx2", "default"))) static void add_plane(size_t n, const float *a, const float *x,
                                                                        float *out)
{
    for (size_t i = 0; i < n; i++) out[i] = a[i] + x[i];
}

__attribute__((target_clones("avx2", "default"))) static void acc_plane(size_t n, const float *restrict g,
                                                                        float *restrict dst)
{
    for (size_t i = 0; i < n; i++) dst[i] += g[i];
}

/* dst = g + 0.0f: acc_plane into a zeroed dst, bit for bit, without reading dst */
__attribute__((target_clones("avx2", "default"))) static void set_plane(size_t n, const float *restrict g,
                                                                        float *restrict dst)
{
    for (size_t i = 0; i < n; i++) dst[i] = g[i] + 0.0f;
}

void add_forward(size_t n, const float *a, const float *b, float *out) { add_plane(n, a, b, out); }

void add_backward(size_t n, const float *dout, float *da, float *db)
{
    /* da == db (Add(x, x)) is two accumulations into one buffer: restrict holds per call */
    if (da) acc_plane(n, dout, da);
    if (db) acc_plane(n, dout, db);
}

void concat_forward(int B, int HW, int n, const int *C, const float *const *inp, float *out)
{
    size_t OC = 0;
    for (int i = 0; i < n; i++) OC += (size_t)C[i];
    for (int b = 0; b < B; b++) {
        size_t off = 0; /* channel offset of input i in out */
        for (int i = 0; i < n; i++) {
            const size_t len = (size_t)C[i] * HW;
            memcpy(out + ((size_t)b * OC + off) * HW, inp[i] + (size_t)b * len, len * sizeof(float));
            off += (size_t)C[i];
        }
    }
}

void concat_backward(int B, int HW, int n, const int *C, const float *dout, float *const *dinp)
{
    size_t OC = 0;
    for (int i = 0; i < n; i++) OC += (size_t)C[i];
    for (int b = 0; b < B; b++) {
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            const size_t len = (size_t)C[i] * HW;
            if (dinp[i]) acc_plane(len, dout + ((size_t)b * OC + off) * HW, dinp[i] + (size_t)b * len);
            off += (size_t)C[i];
        }
    }
}

/* ---- option-A shortcut ---------------------------------------------------------- */

int shortcut_init(shortcut_desc_t *d, int C, int H, int W, int OC, int stride)
{
    memset(d, 0, sizeof *d);
    if (C <= 0 || H <= 0 || W <= 0 || OC < C || stride <= 0) return -1;
    d->C = C;
    d->H = H;
    d->W = W;
    d->OC = OC;
    d->stride = stride;
    /* x[:, :, ::stride, ::stride] */
    d->OH = (H - 1) / stride + 1;
    d->OW = (W - 1) / stride + 1;
    return 0;
}

typedef struct {
    const shortcut_desc_t *d;
    int B;
    const float *a, *x, *dout;
    float *out, *da, *dx;
    int set_a, set_x; /* backward: da, dx = instead of += */
} add_job_t;

static void residual_fwd_part(void *arg, int t, int T)
{
    const add_job_t *j = arg;
    const shortcut_desc_t *d = j->d;
    const float *a = j->a, *x = j->x;
    float *out = j->out;
    const int C = d->C, OC = d->OC, H = d->H, W = d->W, OH = d->OH, OW = d->OW, s = d->stride;
    const int off = (OC - C) / 2;
    const size_t OHW = (size_t)OH * OW, HW = (size_t)H * W;
    long b0, b1;
    par_range(j->B, t, T, &b0, &b1);
    for (long b = b0; b < b1; b++)
        for (int oc = 0; oc < OC; oc++) {
            const size_t o = ((size_t)b * OC + oc) * OHW;
            const int c = oc - off;
            if (c < 0 || c >= C) {
                /* zero-padded channel: the shortcut contributes nothing */
                if (out + o != a + o) memcpy(out + o, a + o, OHW * sizeof(float));
                continue;
            }
            const float *xp = x + ((size_t)b * C + c) * HW; /* (H, W) */
            if (s == 1) {
                add_plane(OHW, a + o, xp, out + o); /* out may alias a: no restrict */
                continue;
            }
            for (int oh = 0; oh < OH; oh++) {
                const float *xr = xp + (size_t)oh * s * W;
                const float *ar = a + o + (size_t)oh * OW;
                float *yr = out + o + (size_t)oh * OW;
                for (int ow = 0; ow < OW; ow++) yr[ow] = ar[ow] + xr[ow * s];
            }
        }
}

void residual_add_forward(const shortcut_desc_t *d, int B, const float *a, const float *x, float *out)
{
    add_job_t j = {.d = d, .B = B, .a = a, .x = x, .out = out};
    par_run_min(residual_fwd_part, &j, (size_t)B * d->OC * d->OH * d->OW);
}

static void residual_bwd_part(void *arg, int t, int T)
{
    const add_job_t *j = arg;
    const shortcut_desc_t *d = j->d;
    const float *dout = j->dout;
    float *da = j->da, *dx = j->dx;
    const int C = d->C, OC = d->OC, H = d->H, W = d->W, OH = d->OH, OW = d->OW, s = d->stride;
    const int off = (OC - C) / 2;
    const size_t OHW = (size_t)OH * OW, HW = (size_t)H * W, img = (size_t)OC * OHW;
    long b0, b1;
    par_range(j->B, t, T, &b0, &b1);
    if (da) (j->set_a ? set_plane : acc_plane)((size_t)(b1 - b0) * img, dout + (size_t)b0 * img, da + (size_t)b0 * img);
    if (!dx) return;
    for (long b = b0; b < b1; b++)
        for (int c = 0; c < C; c++) {
            const float *g = dout + ((size_t)b * OC + c + off) * OHW; /* (OH, OW) */
            float *dp = dx + ((size_t)b * C + c) * HW;                /* (H, W) */
            if (s == 1) {
                (j->set_x ? set_plane : acc_plane)(OHW, g, dp);
                continue;
            }
            for (int oh = 0; oh < OH; oh++) {
                float *dr = dp + (size_t)oh * s * W;
                const float *gr = g + (size_t)oh * OW;
                for (int ow = 0; ow < OW; ow++) dr[ow * s] += gr[ow];
            }
        }
}

void residual_add_backward(const shortcut_desc_t *d, int B, const float *dout, float *da, float *dx)
{
    residual_add_backward_set(d, B, dout, da, 0, dx, 0);
}

void residual_add_backward_set(const shortcut_desc_t *d, int B, const float *dout, float *da, int set_a, float *dx,
                               int set_x)
{
    /* a strided shortcut's gradient has positions no output reaches: never set */
    add_job_t j = {.d = d, .B = B, .dout = dout, .da = da, .dx = dx, .set_a = set_a, .set_x = set_x && d->stride == 1};
    par_run_min(residual_bwd_part, &j, (size_t)B * d->OC * d->OH * d->OW);
}

/* ---- global average pooling ----------------------------------------------------- */

void gap_forward(int B, int C, int HW, const float *inp, float *out)
{
    const size_t planes = (size_t)B * C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * HW;
        /* eight explicit lanes: vectorisable without reassociation */
        float acc[8] = {0};
        int i = 0;
        for (; i + 8 <= HW; i += 8)
            for (int j = 0; j < 8; j++) acc[j] += x[i + j];
        float s = 0.0f;
        for (; i < HW; i++) s += x[i];
        for (int j = 0; j < 8; j++) s += acc[j];
        out[pl] = s / (float)HW;
    }
}

void gap_backward(int B, int C, int HW, const float *dout, float *dinp)
{
    if (!dinp) return;
    const size_t planes = (size_t)B * C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float g = dout[pl] / (float)HW;
        float *dx = dinp + pl * HW;
        for (int i = 0; i < HW; i++) dx[i] += g;
    }
}
