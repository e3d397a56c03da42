/* kernels/cpu/softmax.c - fused softmax + cross-entropy, its gradient, and accuracy.
 *
 * Each row is shifted by its maximum before exponentiating, so exp never overflows and
 * the largest term is exactly 1 (the sum is in [1, N]); the loss is then
 *   log(sum_j exp(x_j - m)) - (x_label - m),
 * which stays finite and accurate for logits of any magnitude. Label smoothing eps is
 * PyTorch's (torch.nn.CrossEntropyLoss): (1 - eps) * that + eps * the mean over classes of
 * -log p_j, whose gradient is p - ((1 - eps) * onehot + eps / N).
 */
#include <math.h>

/* elementwise.c's reason: with trapping math gcc keeps the selects of ufn_max and ufn_exp
 * as branches and the loops scalar; nothing here reads the floating-point flags */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "dlanes.h"
#include "ops.h"

/* p[0..N) = exp(x - m), m the row's maximum (*mx), returning their sum in double. The
 * maximum by lanes (exact whatever the order: a NaN is never taken, as x[j] > m never is,
 * unless x[0] is one), the exponentials scalar_fn.h's ufn_exp in a loop of their own that
 * vectorises, the sum by lanes: a call to expf per logit and one double sum in order were
 * 1.5% of the GPT's step at nanoGPT's CPU shape (256 classes). Its AVX-512 clone computes
 * the same bits (no FMA) and took the loss's forward from 0.18 to 0.14 ms there (Zen 5). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static double xent_exp_row(int N, const float *x, float *p,
                                                                                        float *mx)
{
    const int N8 = N / DLANES * DLANES;
    float lm[DLANES];
    for (int k = 0; k < DLANES; k++) lm[k] = x[0];
    for (int j = 0; j < N8; j += DLANES)
        for (int k = 0; k < DLANES; k++) lm[k] = ufn_max(x[j + k], lm[k]);
    float m = lm[0];
    for (int k = 1; k < DLANES; k++) m = ufn_max(lm[k], m);
    for (int j = N8; j < N; j++) m = ufn_max(x[j], m);
    for (int j = 0; j < N; j++) p[j] = ufn_exp(x[j] - m);
    *mx = m;
    return dlanes_sum(p, N);
}

float softmax_xent_forward(int B, int N, const float *logits, const int32_t *labels, float smoothing, float *probs)
{
    if (B <= 0 || N <= 0) return 0.0f;
    const double eps = smoothing;
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * N; /* (N) */
        float *p = probs + (size_t)b * N;        /* (N) */
        float m;
        const double sum = xent_exp_row(N, x, p, &m);
        const float inv = (float)(1.0 / sum);
        for (int j = 0; j < N; j++) p[j] *= inv;
        const double nll = log(sum) - ((double)x[labels[b]] - (double)m);
        if (eps == 0.0) {
            total += nll; /* the same bits as before label smoothing existed */
            continue;
        }
        /* the mean over classes of -log p_j = log(sum) - (x_j - m) */
        double xs = 0.0;
        for (int j = 0; j < N; j++) xs += (double)x[j];
        const double smooth = log(sum) - (xs / N - (double)m);
        total += (1.0 - eps) * nll + eps * smooth;
    }
    return (float)(total / B);
}

void softmax_xent_backward(int B, int N, const float *probs, const int32_t *labels, float smoothing, float scale,
                           float *dlogits)
{
    if (B <= 0) return;
    const float k = scale / (float)B;
    /* the smoothed target: 1 - eps + eps/N at the label, eps/N elsewhere; with eps = 0
     * the expressions below are the unsmoothed ones bit for bit */
    const float off = smoothing / (float)N, on = (1.0f - smoothing) + off;
    for (int b = 0; b < B; b++) {
        const float *p = probs + (size_t)b * N;
        float *g = dlogits + (size_t)b * N;
        for (int j = 0; j < N; j++) g[j] = k * (p[j] - off);
        g[labels[b]] = k * (p[labels[b]] - on);
    }
}

int count_correct(int B, int N, const float *logits, const int32_t *labels)
{
    int correct = 0;
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * N;
        int best = 0;
        /* strict > keeps the lowest index among ties */
        for (int j = 1; j < N; j++)
            if (x[j] > x[best]) best = j;
        correct += best == labels[b];
    }
    return correct;
}

/* ---- Softmax and LogSoftmax along an axis ----------------------------------------------
 * A sample is (outer, n, inner): rows * inner lines of n elements lying inner apart. All in
 * float, one exponential per element: out = exp(x - max) stored, then scaled by 1 / its sum
 * (log-softmax: (x - max) - log(sum)); the backward's exp(y) through the same exponential.
 * The loops vectorise: a contiguous line (inner 1, attention's rows) with eight explicit
 * lanes for its maximum and sums (no reassociation needed), strided lines SOFTMAX_BLOCK
 * at a time across the inner axis. The reference in double is kernels/ref's; test_op_table
 * and test_ops hold these to it. */
#define SOFTMAX_LANES 8
#define SOFTMAX_BLOCK 64 /* strided lines per pass: their running max and sum on the stack */

/* the eight lanes' partial sums or maxima, folded in lane order */
static inline float lanes_sum(const float *l)
{
    float s = 0.0f;
    for (int k = 0; k < SOFTMAX_LANES; k++) s += l[k];
    return s;
}

static inline float lanes_max(const float *l)
{
    float m = l[0];
    for (int k = 1; k < SOFTMAX_LANES; k++) m = ufn_max(l[k], m);
    return m;
}

/* one contiguous line of n */
static inline void softmax_line_fwd(int take_log, int n, const float *a, float *o)
{
    float lm[SOFTMAX_LANES], ls[SOFTMAX_LANES] = {0};
    int j = 0;
    for (int k = 0; k < SOFTMAX_LANES; k++) lm[k] = a[0];
    for (; j + SOFTMAX_LANES <= n; j += SOFTMAX_LANES)
        for (int k = 0; k < SOFTMAX_LANES; k++) lm[k] = ufn_max(a[j + k], lm[k]);
    float m = lanes_max(lm);
    for (; j < n; j++) m = ufn_max(a[j], m);
    for (j = 0; j + SOFTMAX_LANES <= n; j += SOFTMAX_LANES)
        for (int k = 0; k < SOFTMAX_LANES; k++) {
            o[j + k] = ufn_exp(a[j + k] - m);
            ls[k] += o[j + k];
        }
    float s = lanes_sum(ls);
    for (; j < n; j++) {
        o[j] = ufn_exp(a[j] - m);
        s += o[j];
    }
    if (take_log) {
        const float lg = logf(s);
        for (j = 0; j < n; j++) o[j] = (a[j] - m) - lg;
    } else {
        const float inv = 1.0f / s;
        for (j = 0; j < n; j++) o[j] *= inv;
    }
}

/* one contiguous line of n: d += y (g - sum g y), or g - exp(y) sum g (log); set: d = the
 * term + 0.0f (what += gives into zeros, bit for bit), d not read */
static inline void softmax_line_bwd(int take_log, int set, int n, const float *y, const float *g, float *d)
{
    float ls[SOFTMAX_LANES] = {0};
    int j = 0;
    for (; j + SOFTMAX_LANES <= n; j += SOFTMAX_LANES)
        for (int k = 0; k < SOFTMAX_LANES; k++) ls[k] += take_log ? g[j + k] : g[j + k] * y[j + k];
    float s = lanes_sum(ls);
    for (; j < n; j++) s += take_log ? g[j] : g[j] * y[j];
    if (take_log && set)
        for (j = 0; j < n; j++) d[j] = (g[j] - ufn_exp(y[j]) * s) + 0.0f;
    else if (take_log)
        for (j = 0; j < n; j++) d[j] += g[j] - ufn_exp(y[j]) * s;
    else if (set)
        for (j = 0; j < n; j++) d[j] = y[j] * (g[j] - s) + 0.0f;
    else
        for (j = 0; j < n; j++) d[j] += y[j] * (g[j] - s);
}

/* w adjacent lines (w <= SOFTMAX_BLOCK) of n elements inner apart, vectorised across them */
static inline void softmax_block_fwd(int take_log, int n, int inner, int w, const float *a, float *o)
{
    float m[SOFTMAX_BLOCK], s[SOFTMAX_BLOCK];
    for (int k = 0; k < w; k++) {
        m[k] = a[k];
        s[k] = 0.0f;
    }
    for (int j = 1; j < n; j++)
        for (int k = 0; k < w; k++) m[k] = ufn_max(a[(size_t)j * inner + k], m[k]);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < w; k++) {
            const size_t i = (size_t)j * inner + k;
            o[i] = ufn_exp(a[i] - m[k]);
            s[k] += o[i];
        }
    /* s becomes log(sum) or 1 / sum */
    for (int k = 0; k < w; k++) s[k] = take_log ? logf(s[k]) : 1.0f / s[k];
    for (int j = 0; j < n; j++)
        for (int k = 0; k < w; k++) {
            const size_t i = (size_t)j * inner + k;
            o[i] = take_log ? (a[i] - m[k]) - s[k] : o[i] * s[k];
        }
}

static inline void softmax_block_bwd(int take_log, int set, int n, int inner, int w, const float *y, const float *g,
                                     float *d)
{
    float s[SOFTMAX_BLOCK] = {0};
    for (int j = 0; j < n; j++)
        for (int k = 0; k < w; k++) {
            const size_t i = (size_t)j * inner + k;
            s[k] += take_log ? g[i] : g[i] * y[i];
        }
    for (int j = 0; j < n; j++)
        for (int k = 0; k < w; k++) {
            const size_t i = (size_t)j * inner + k;
            d[i] = (set ? 0.0f : d[i]) + (take_log ? g[i] - ufn_exp(y[i]) * s[k] : y[i] * (g[i] - s[k]));
        }
}

__attribute__((target_clones("avx2", "default"))) void softmax_axis_forward(int take_log, int rows, int n, int inner,
                                                                            const float *inp, float *out)
{
    for (int r = 0; r < rows; r++) {
        const size_t base = (size_t)r * n * inner;
        if (inner == 1) {
            softmax_line_fwd(take_log, n, inp + base, out + base);
            continue;
        }
        for (int k = 0; k < inner; k += SOFTMAX_BLOCK) {
            const int w = inner - k < SOFTMAX_BLOCK ? inner - k : SOFTMAX_BLOCK;
            softmax_block_fwd(take_log, n, inner, w, inp + base + k, out + base + k);
        }
    }
}

/* softmax_axis_backward, or with set its _set variant */
__attribute__((target_clones("avx2", "default"))) static void
softmax_axis_bwd(int take_log, int set, int rows, int n, int inner, const float *out, const float *dout, float *dinp)
{
    for (int r = 0; r < rows; r++) {
        const size_t base = (size_t)r * n * inner;
        if (inner == 1) {
            softmax_line_bwd(take_log, set, n, out + base, dout + base, dinp + base);
            continue;
        }
        for (int k = 0; k < inner; k += SOFTMAX_BLOCK) {
            const int w = inner - k < SOFTMAX_BLOCK ? inner - k : SOFTMAX_BLOCK;
            softmax_block_bwd(take_log, set, n, inner, w, out + base + k, dout + base + k, dinp + base + k);
        }
    }
}

void softmax_axis_backward(int take_log, int rows, int n, int inner, const float *out, const float *dout, float *dinp)
{
    softmax_axis_bwd(take_log, 0, rows, n, inner, out, dout, dinp);
}

void softmax_axis_backward_set(int take_log, int rows, int n, int inner, const float *out, const float *dout,
                               float *dinp)
{
    softmax_axis_bwd(take_log, 1, rows, n, inner, out, dout, dinp);
}
