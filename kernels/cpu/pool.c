/* kernels/cpu/pool.c - max and average pooling, floor or ceil output size.
 *
 * Every window is clamped to the input once (window() below), so the inner loops run over
 * in-bounds taps only: padding never enters a max or a sum; it enters an average only
 * through the divisor (count_include_pad, ops.h).
 */
#include <string.h>

#include "ops.h"
#include "parallel.h"

/* Output size along one dimension of length n: window k, stride s, padding pb before and
 * pe after, dilation dl (ops.h). */
static int pooled_size(int n, int k, int s, int pb, int pe, int dl, int ceil_mode)
{
    long span = (long)n + pb + pe - ((long)dl * (k - 1) + 1);
    /* floor(num / s) + 1 as PyTorch and ONNX count it: in ceil mode a window wider than
     * the padded input by less than the stride still gives one output (squeezenet's last
     * 3x3/2 pool on a 2x2 plane: 1x1), its taps clipped to the input by window() */
    long num = ceil_mode ? span + s - 1 : span;
    if (num < 0) return 0;
    long out = num / s + 1;
    /* In ceil mode the last window must start inside the input or its leading padding,
     * otherwise it would cover padding only (PyTorch and Caffe drop it). */
    if (ceil_mode && (out - 1) * s >= (long)n + pb) out--;
    return out > INT32_MAX ? 0 : (int)out;
}

/* In-bounds taps of output index o along a dimension of length n: the window's taps are
 * o*s - pb + t*dl, t in [0, k); those in [0, n) are *lo, *lo + dl, ..., below *hi. */
static void window(int o, int k, int s, int pb, int dl, int n, int *lo, int *hi)
{
    const int a = o * s - pb;
    if (dl == 1) {
        /* dense window: no divisions (this runs once per output) */
        *lo = a < 0 ? 0 : a;
        *hi = a + k > n ? n : a + k;
        if (*hi < *lo) *hi = *lo;
        return;
    }
    int t0 = a < 0 ? (-a + dl - 1) / dl : 0;
    int t1 = n - 1 - a < 0 ? 0 : (n - 1 - a) / dl + 1; /* taps with a + t*dl <= n - 1 */
    if (t1 > k) t1 = k;
    if (t0 > t1) t0 = t1;
    *lo = a + t0 * dl;
    *hi = a + (t1 - 1) * dl + 1;
    if (t1 <= t0) *hi = *lo; /* no tap inside */
}

/* Taps of output index o inside the padded extent [-pb, n + pe): count_include_pad's
 * divisor along one dimension (the window starts at or after -pb, so only its end can
 * stick out, in ceil mode). */
static int padded_taps(int o, int k, int s, int pb, int pe, int dl, int n)
{
    const long a = (long)o * s - pb, room = (long)n + pe - a; /* positions a .. n + pe - 1 */
    long t = room <= 0 ? 0 : (room - 1) / dl + 1;
    return t < k ? (int)t : k;
}

int pool2d_setup(pool2d_desc_t *d)
{
    d->OH = d->OW = 0;
    if (d->C <= 0 || d->H <= 0 || d->W <= 0 || d->KH <= 0 || d->KW <= 0 || d->sH <= 0 || d->sW <= 0 || d->dH <= 0 ||
        d->dW <= 0 || d->pad_t < 0 || d->pad_l < 0 || d->pad_b < 0 || d->pad_r < 0)
        return -1;
    d->ceil_mode = d->ceil_mode ? 1 : 0;
    d->count_include_pad = d->count_include_pad ? 1 : 0;
    const int OH = pooled_size(d->H, d->KH, d->sH, d->pad_t, d->pad_b, d->dH, d->ceil_mode);
    const int OW = pooled_size(d->W, d->KW, d->sW, d->pad_l, d->pad_r, d->dW, d->ceil_mode);
    if (OH <= 0 || OW <= 0) return -1;
    /* every window must hold at least one input element (no max over nothing, no average
     * divided by zero): checked row by row and column by column, once */
    for (int o = 0; o < OH; o++) {
        int lo, hi;
        window(o, d->KH, d->sH, d->pad_t, d->dH, d->H, &lo, &hi);
        if (hi <= lo) return -1;
    }
    for (int o = 0; o < OW; o++) {
        int lo, hi;
        window(o, d->KW, d->sW, d->pad_l, d->dW, d->W, &lo, &hi);
        if (hi <= lo) return -1;
    }
    d->OH = OH;
    d->OW = OW;
    return 0;
}

int pool2d_init(pool2d_desc_t *d, int C, int H, int W, int K, int stride, int pad, int ceil_mode)
{
    memset(d, 0, sizeof *d);
    /* pad <= K/2 (PyTorch's rule) guarantees every window overlaps the input, so no
     * max is taken over nothing and no average divides by zero. */
    if (pad < 0 || 2 * pad > K) return -1;
    *d = (pool2d_desc_t){.C = C,
                         .H = H,
                         .W = W,
                         .KH = K,
                         .KW = K,
                         .sH = stride,
                         .sW = stride,
                         .pad_t = pad,
                         .pad_l = pad,
                         .pad_b = pad,
                         .pad_r = pad,
                         .dH = 1,
                         .dW = 1,
                         .ceil_mode = ceil_mode};
    if (pool2d_setup(d) != 0) {
        memset(d, 0, sizeof *d);
        return -1;
    }
    return 0;
}

/* The 2x2, stride 2, unpadded windows of LeNet-style nets, all inside the input. The
 * general loop below spends ~10 instructions per input element on window bookkeeping and
 * data-dependent selects (17-23% of a LeNet-5 step); here eight outputs at a time are
 * computed with vector selects (gcc vector extensions: AVX in the avx2 clone, SSE pairs
 * otherwise). The selects keep the general loop's rule exactly: the first maximum in
 * row-major order wins, and a NaN wins and stays. */
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int v4i __attribute__((vector_size(16)));

/* Macros, not functions: a function passing AVX-sized vectors by value would have a
 * different ABI in the default (non-AVX) clone. */
#define TAKE(v, m) (((v) > (m)) | (((v) != (v)) & ((m) == (m))))
#define SEL_F(k, a, b) ((v8f)(((v8i)(a) & (k)) | ((v8i)(b) & ~(k))))
#define SEL_F4(k, a, b) ((v4f)(((v4i)(a) & (k)) | ((v4i)(b) & ~(k))))
#define SEL_I(k, a, b) (((a) & (k)) | ((b) & ~(k)))

__attribute__((target_clones("avx2", "default"))) static void maxpool_2x2(size_t planes, int H, int W, int OH, int OW,
                                                                          const float *restrict inp,
                                                                          float *restrict out, int32_t *restrict argmax)
{
    const v8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = even + 1;
    const v4i even4 = {0, 2, 4, 6}, odd4 = even4 + 1;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * H * W;
        for (int oh = 0; oh < OH; oh++) {
            const float *r0 = x + (size_t)(2 * oh) * W, *r1 = r0 + W;
            float *y = out + (pl * OH + oh) * OW;
            int32_t *am = argmax + (pl * OH + oh) * OW;
            const int base = 2 * oh * W;
            /* Blocks of 8 outputs, then one more block of 8 (or 4) ending at OW that may
             * overlap the previous one: recomputing an output writes the same values, and
             * the scalar loop below only runs for rows of fewer than 4 outputs (the tail
             * was most of this function's time at LeNet's OW = 14 and 5). */
            int ow = 0;
            for (;;) {
                if (ow + 8 > OW) {
                    if (OW < 8 || ow >= OW) break;
                    ow = OW - 8;
                }
                v8f a, b, c, d;
                memcpy(&a, r0 + 2 * ow, sizeof a);
                memcpy(&b, r0 + 2 * ow + 8, sizeof b);
                memcpy(&c, r1 + 2 * ow, sizeof c);
                memcpy(&d, r1 + 2 * ow + 8, sizeof d);
                v8f tl = __builtin_shuffle(a, b, even), tr = __builtin_shuffle(a, b, odd);
                v8f bl = __builtin_shuffle(c, d, even), br = __builtin_shuffle(c, d, odd);
                v8i idx = base + 2 * ow + even;
                v8f m = tl;
                v8i best = idx, k;
                k = TAKE(tr, m);
                m = SEL_F(k, tr, m);
                best = SEL_I(k, idx + 1, best);
                k = TAKE(bl, m);
                m = SEL_F(k, bl, m);
                best = SEL_I(k, idx + W, best);
                k = TAKE(br, m);
                m = SEL_F(k, br, m);
                best = SEL_I(k, idx + W + 1, best);
                memcpy(y + ow, &m, sizeof m);
                memcpy(am + ow, &best, sizeof best);
                if (ow + 8 >= OW) {
                    ow = OW;
                    break;
                }
                ow += 8;
            }
            for (int o4 = 0; OW >= 4 && OW < 8 && o4 < OW; o4 += 4) {
                if (o4 + 4 > OW) o4 = OW - 4;
                v4f a, b, c, d;
                memcpy(&a, r0 + 2 * o4, sizeof a);
                memcpy(&b, r0 + 2 * o4 + 4, sizeof b);
                memcpy(&c, r1 + 2 * o4, sizeof c);
                memcpy(&d, r1 + 2 * o4 + 4, sizeof d);
                v4f tl = __builtin_shuffle(a, b, even4), tr = __builtin_shuffle(a, b, odd4);
                v4f bl = __builtin_shuffle(c, d, even4), br = __builtin_shuffle(c, d, odd4);
                v4i idx = base + 2 * o4 + even4;
                v4f m = tl;
                v4i best = idx, k;
                k = TAKE(tr, m);
                m = SEL_F4(k, tr, m);
                best = SEL_I(k, idx + 1, best);
                k = TAKE(bl, m);
                m = SEL_F4(k, bl, m);
                best = SEL_I(k, idx + W, best);
                k = TAKE(br, m);
                m = SEL_F4(k, br, m);
                best = SEL_I(k, idx + W + 1, best);
                memcpy(y + o4, &m, sizeof m);
                memcpy(am + o4, &best, sizeof best);
                ow = OW;
            }
            for (; ow < OW; ow++) {
                float m = r0[2 * ow];
                int best = base + 2 * ow;
                float v = r0[2 * ow + 1];
                int take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + 2 * ow + 1 : best;
                v = r1[2 * ow];
                take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + W + 2 * ow : best;
                v = r1[2 * ow + 1];
                take = (v > m) | ((v != v) & (m == m));
                m = take ? v : m;
                best = take ? base + W + 2 * ow + 1 : best;
                y[ow] = m;
                am[ow] = best;
            }
        }
    }
}

/* Planes [p0, p1) of a max pooling's forward. */
static void maxpool_fwd_planes(const pool2d_desc_t *d, size_t p0, size_t p1, const float *inp, float *out,
                               int32_t *argmax)
{
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW, dH = d->dH, dW = d->dW;
    if (d->KH == 2 && d->KW == 2 && d->sH == 2 && d->sW == 2 && d->pad_t == 0 && d->pad_l == 0 && d->dH == 1 &&
        d->dW == 1 && 2 * OH <= H && 2 * OW <= W) {
        const size_t in = (size_t)H * W, on = (size_t)OH * OW;
        maxpool_2x2(p1 - p0, H, W, OH, OW, inp + p0 * in, out + p0 * on, argmax + p0 * on);
        return;
    }
    for (size_t pl = p0; pl < p1; pl++) {
        const float *x = inp + pl * H * W;   /* (H, W) */
        float *y = out + pl * OH * OW;       /* (OH, OW) */
        int32_t *am = argmax + pl * OH * OW; /* (OH, OW) */
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->KH, d->sH, d->pad_t, dH, H, &h0, &h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->KW, d->sW, d->pad_l, dW, W, &w0, &w1);
                /* Start from the first element so the argmax is always a valid index;
                 * strict > keeps the first maximum, and a NaN, once seen, wins and
                 * stays (the max of anything with a NaN is NaN, as in PyTorch). */
                int best = h0 * W + w0;
                float m = x[best];
                /* Branch-free selects: which element wins is data-dependent and a
                 * branch here mispredicts about half the time (it was 22% of a LeNet-5
                 * step); conditional moves cost the same for every element. */
                for (int ih = h0; ih < h1; ih += dH)
                    for (int iw = w0; iw < w1; iw += dW) {
                        float v = x[ih * W + iw];
                        int take = (v > m) | ((v != v) & (m == m));
                        m = take ? v : m;
                        best = take ? ih * W + iw : best;
                    }
                y[oh * OW + ow] = m;
                am[oh * OW + ow] = best;
            }
        }
    }
}

/* Planes [p0, p1) of a max pooling's backward. */
static void maxpool_bwd_planes(const pool2d_desc_t *d, size_t p0, size_t p1, const float *dout, const int32_t *argmax,
                               float *dinp)
{
    const size_t HW = (size_t)d->H * d->W, OHW = (size_t)d->OH * d->OW;
    /* Sequential within a plane on purpose: overlapping windows may share an argmax. */
    for (size_t pl = p0; pl < p1; pl++) {
        const float *g = dout + pl * OHW;
        const int32_t *am = argmax + pl * OHW;
        float *dx = dinp + pl * HW;
        for (size_t i = 0; i < OHW; i++) dx[am[i]] += g[i];
    }
}

/* ---- on the kernels' threads (parallel.h) ----------------------------------------------
 * A max pooling is split by planes: each plane is pooled as one thread would pool it, and
 * no two planes share an output or an input gradient, so results do not depend on the
 * threads. Passes of fewer than PAR_MIN_FLOATS input values stay on one thread. */
typedef struct {
    const pool2d_desc_t *d;
    size_t planes;
    const float *inp, *dout;
    float *out, *dinp;
    int32_t *argmax;      /* the forward's, written */
    const int32_t *taken; /* the backward's, read */
} maxpool_job_t;

static void maxpool_fwd_part(void *arg, int t, int T)
{
    const maxpool_job_t *j = arg;
    long lo, hi;
    par_range((long)j->planes, t, T, &lo, &hi);
    maxpool_fwd_planes(j->d, (size_t)lo, (size_t)hi, j->inp, j->out, j->argmax);
}

static void maxpool_bwd_part(void *arg, int t, int T)
{
    const maxpool_job_t *j = arg;
    long lo, hi;
    par_range((long)j->planes, t, T, &lo, &hi);
    maxpool_bwd_planes(j->d, (size_t)lo, (size_t)hi, j->dout, j->taken, j->dinp);
}

void maxpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out, int32_t *argmax)
{
    maxpool_job_t j = {.d = d, .planes = (size_t)B * d->C, .inp = inp, .out = out, .argmax = argmax};
    par_run_min(maxpool_fwd_part, &j, j.planes * d->H * d->W);
}

void maxpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, const int32_t *argmax, float *dinp)
{
    if (!dinp) return;
    maxpool_job_t j = {.d = d, .planes = (size_t)B * d->C, .dout = dout, .dinp = dinp, .taken = argmax};
    par_run_min(maxpool_bwd_part, &j, j.planes * d->H * d->W);
}

/* Number of taps dl apart in [lo, hi) (window() gives hi = last tap + 1). */
static inline int tap_count(int lo, int hi, int dl) { return dl == 1 ? hi - lo : (hi - lo + dl - 1) / dl; }

/* Divisor of an average along one dimension: the in-bounds taps [lo, hi), or with
 * count_include_pad the window's taps inside the padded input. The 2-D divisor is the
 * product of the two, as an int and then one conversion to float, as it always was. */
static inline int avg_taps(const pool2d_desc_t *d, int row, int o, int lo, int hi)
{
    if (row)
        return d->count_include_pad ? padded_taps(o, d->KH, d->sH, d->pad_t, d->pad_b, d->dH, d->H)
                                    : tap_count(lo, hi, d->dH);
    return d->count_include_pad ? padded_taps(o, d->KW, d->sW, d->pad_l, d->pad_r, d->dW, d->W)
                                : tap_count(lo, hi, d->dW);
}

void avgpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out)
{
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW, dH = d->dH, dW = d->dW;
    const size_t planes = (size_t)B * d->C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = inp + pl * H * W;
        float *y = out + pl * OH * OW;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->KH, d->sH, d->pad_t, dH, H, &h0, &h1);
            const int nh = avg_taps(d, 1, oh, h0, h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->KW, d->sW, d->pad_l, dW, W, &w0, &w1);
                float s = 0.0f;
                for (int ih = h0; ih < h1; ih += dH)
                    for (int iw = w0; iw < w1; iw += dW) s += x[ih * W + iw];
                y[oh * OW + ow] = s / (float)(nh * avg_taps(d, 0, ow, w0, w1));
            }
        }
    }
}

void avgpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, float *dinp)
{
    if (!dinp) return;
    const int H = d->H, W = d->W, OH = d->OH, OW = d->OW, dH = d->dH, dW = d->dW;
    const size_t planes = (size_t)B * d->C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *g = dout + pl * OH * OW;
        float *dx = dinp + pl * H * W;
        for (int oh = 0; oh < OH; oh++) {
            int h0, h1;
            window(oh, d->KH, d->sH, d->pad_t, dH, H, &h0, &h1);
            const int nh = avg_taps(d, 1, oh, h0, h1);
            for (int ow = 0; ow < OW; ow++) {
                int w0, w1;
                window(ow, d->KW, d->sW, d->pad_l, dW, W, &w0, &w1);
                const float v = g[oh * OW + ow] / (float)(nh * avg_taps(d, 0, ow, w0, w1));
                for (int ih = h0; ih < h1; ih += dH)
                    for (int iw = w0; iw < w1; iw += dW) dx[ih * W + iw] += v;
            }
        }
    }
}
