/* kernels/cpu/conv_depthwise.c - depthwise convolutions (groups == C): with one filter
 * per channel by the channels-inner kernel below; with more, by the row kernel at the end.
 *
 * The channels-inner kernel keeps the channels innermost, the layout MobileNet's and EfficientNet's
 * depthwise layers need: their planes are small (16x16 down to 1x1 at 32x32 inputs) and
 * their channels many (32 to 1152), so a loop over a plane's row (the row kernel's dw_rows_forward)
 * runs 1 to 16 iterations per call and spends the step in loop and call overhead
 * (mobilenet_v2: 34 of 98 ms a step, layer_profile, batch 32).
 *
 * Per image, the input's planes are transposed to (H, W, C) and every output pixel is
 * computed for all C channels at once: for each of its valid taps one vectorised pass
 * y[c] += w[tap][c] * x[ih][iw][c] over C, the weights transposed to (KH*KW, C) once per
 * call. The output is transposed back to (C, OH, OW). Numerics: each output starts at the
 * bias and adds its taps in (kh, kw) order, and each input gradient element adds its taps in
 * (kh, kw) order onto what dinp held, as the row kernel does, so forward and input
 * gradient are its bits; the weight gradient of a tap and channel is a float sum over one
 * image's pixels (8x8 at most in ConvNeXt's later stages, and at most OH*OW terms
 * anywhere), those partial sums added in double over the images and rounded once: the
 * per-pixel pass stays in float vectors (a double one took twice the forward's time, issue
 * 44), and the long sum over the batch keeps double's accuracy. One thread: conv.c calls it for
 * depthwise layers with one filter per channel (M = OC / C = 1). */
#include <string.h>

#include "conv_depthwise.h"

/* The rows a tap index k of n reaches: output positions o with i = o*s - pad + k*dil in
 * [0, n_in), as [*lo, *hi). */
static void tap_span(int k, int s, int pad, int dil, int n_in, int n_out, int *lo, int *hi)
{
    const int off = k * dil - pad; /* i = o*s + off */
    int a = off >= 0 ? 0 : (-off + s - 1) / s;
    int b = n_in - off <= 0 ? 0 : (n_in - off + s - 1) / s;
    if (b > n_out) b = n_out;
    *lo = a;
    *hi = b > a ? b : a;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

int dwc_fits(const conv2d_desc_t *d) { return d->groups > 1 && d->groups == d->C && d->OC == d->C; }

/* Floats: x^T (H*W, C), y^T or dout^T (OH*OW, C), dx^T (H*W, C), w^T (KH*KW, C), one
 * image's weight gradient (KH*KW, C), and the weight gradient's double sums (KH*KW, C),
 * each rounded up to 16 floats. */
size_t dwc_workspace(const conv2d_desc_t *d)
{
    const size_t C = (size_t)d->C, taps = (size_t)d->KH * d->KW;
    return 2 * round16((size_t)d->H * d->W * C) + round16((size_t)d->OH * d->OW * C) + 2 * round16(taps * C) +
           2 * round16(taps * C);
}

typedef struct {
    float *xt, *gt, *dxt, *wt, *dwf;
    double *dwt;
} dwc_ws_t;

static void ws_split(const conv2d_desc_t *d, float *ws, dwc_ws_t *s)
{
    const size_t C = (size_t)d->C, taps = (size_t)d->KH * d->KW;
    s->xt = ws;
    s->dxt = s->xt + round16((size_t)d->H * d->W * C);
    s->gt = s->dxt + round16((size_t)d->H * d->W * C);
    s->wt = s->gt + round16((size_t)d->OH * d->OW * C);
    s->dwf = s->wt + round16(taps * C);
    s->dwt = (double *)(s->dwf + round16(taps * C)); /* 64-byte multiple from ws: aligned as ws is */
}

/* dst (cols, rows) = src (rows, cols)^T: (C, P) planes to channels-inner and back */
__attribute__((target_clones("avx2", "default"))) static void transpose(size_t rows, size_t cols,
                                                                        const float *restrict src, float *restrict dst)
{
    if (rows == 1 || cols == 1) {
        memcpy(dst, src, rows * cols * sizeof(float));
        return;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

/* y[c] += w[c] * x[c] */
__attribute__((target_clones("avx2", "default"))) static void madd(int C, const float *restrict w,
                                                                   const float *restrict x, float *restrict y)
{
    for (int c = 0; c < C; c++) y[c] += w[c] * x[c];
}

/* acc[i] += part[i], in double */
__attribute__((target_clones("avx2", "default"))) static void add_f64(size_t n, const float *restrict part,
                                                                      double *restrict acc)
{
    for (size_t i = 0; i < n; i++) acc[i] += (double)part[i];
}

void dwc_forward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *bias, float *out,
                 float *ws)
{
    const int C = d->C, KH = d->KH, KW = d->KW, OH = d->OH, OW = d->OW;
    const size_t HW = (size_t)d->H * d->W, P = (size_t)OH * OW;
    dwc_ws_t s;
    ws_split(d, ws, &s);
    transpose((size_t)C, (size_t)KH * KW, weight, s.wt);
    for (int b = 0; b < B; b++) {
        transpose((size_t)C, HW, inp + (size_t)b * C * HW, s.xt);
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                float *y = s.gt + ((size_t)oh * OW + ow) * C;
                if (bias) memcpy(y, bias, (size_t)C * sizeof(float));
                else memset(y, 0, (size_t)C * sizeof(float));
                for (int kh = 0; kh < KH; kh++) {
                    const int ih = oh * d->sH - d->pad_t + kh * d->dH;
                    if (ih < 0 || ih >= d->H) continue;
                    for (int kw = 0; kw < KW; kw++) {
                        const int iw = ow * d->sW - d->pad_l + kw * d->dW;
                        if (iw < 0 || iw >= d->W) continue;
                        madd(C, s.wt + ((size_t)kh * KW + kw) * C, s.xt + ((size_t)ih * d->W + iw) * C, y);
                    }
                }
            }
        transpose(P, (size_t)C, s.gt, out + (size_t)b * C * P);
    }
}

void dwc_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout, float *dinp,
                  float *dweight, float *ws)
{
    const int C = d->C, KH = d->KH, KW = d->KW, W = d->W;
    const size_t HW = (size_t)d->H * W, P = (size_t)d->OH * d->OW, taps = (size_t)KH * KW;
    dwc_ws_t s;
    ws_split(d, ws, &s);
    transpose((size_t)C, taps, weight, s.wt);
    memset(s.dwt, 0, taps * C * sizeof(double));
    for (int b = 0; b < B; b++) {
        transpose((size_t)C, HW, inp + (size_t)b * C * HW, s.xt);
        transpose((size_t)C, P, dout + (size_t)b * C * P, s.gt);
        if (dinp) transpose((size_t)C, HW, dinp + (size_t)b * C * HW, s.dxt);
        memset(s.dwf, 0, taps * C * sizeof(float));
        /* tap by tap, so that each input gradient element adds its taps in (kh, kw) order */
        for (int kh = 0; kh < KH; kh++) {
            int oh0, oh1;
            tap_span(kh, d->sH, d->pad_t, d->dH, d->H, d->OH, &oh0, &oh1);
            for (int kw = 0; kw < KW; kw++) {
                int ow0, ow1;
                tap_span(kw, d->sW, d->pad_l, d->dW, W, d->OW, &ow0, &ow1);
                const size_t k = (size_t)kh * KW + kw;
                for (int oh = oh0; oh < oh1; oh++) {
                    const int ih = oh * d->sH - d->pad_t + kh * d->dH;
                    for (int ow = ow0; ow < ow1; ow++) {
                        const size_t o = ((size_t)oh * d->OW + ow) * C;
                        const size_t i = ((size_t)ih * W + ow * d->sW - d->pad_l + kw * d->dW) * C;
                        madd(C, s.gt + o, s.xt + i, s.dwf + k * C);
                        if (dinp) madd(C, s.wt + k * C, s.gt + o, s.dxt + i);
                    }
                }
            }
        }
        if (dinp) transpose(HW, (size_t)C, s.dxt, dinp + (size_t)b * C * HW);
        add_f64(taps * C, s.dwf, s.dwt);
    }
    /* dweight (C, KH*KW) = dwt (KH*KW, C)^T, rounded once */
    for (int c = 0; c < C; c++)
        for (size_t k = 0; k < taps; k++) dweight[(size_t)c * taps + k] = (float)s.dwt[k * C + c];
}

/* ---- the row kernel: depthwise layers with more than one filter per channel ------------
 * groups == C > 1: output channel oc reads input channel oc / M only (M = OC / C filters
 * per channel), through its KH*KW taps. Each tap is one pass over the output plane: for
 * every output row whose input row exists, out_row[lo..hi) += w * in_row (stride sW), the
 * column range computed once per tap (tap_span), so no bounds test runs per element.
 * The backward runs the same passes: the weight gradient of a tap is the dot product of
 * dout's rows with the input rows under them (double, explicit lanes), the input gradient
 * the same axpy with the roles of the rows exchanged. */

/* y[j] += a * x[j*s] */
__attribute__((target_clones("avx2", "default"))) static void axpy_gather(int n, int s, float a,
                                                                          const float *restrict x, float *restrict y)
{
    if (s == 1)
        for (int j = 0; j < n; j++) y[j] += a * x[j];
    else if (s == 2)
        for (int j = 0; j < n; j++) y[j] += a * x[2 * j];
    else
        for (int j = 0; j < n; j++) y[j] += a * x[j * s];
}

/* y[j*s] += a * x[j] */
__attribute__((target_clones("avx2", "default"))) static void axpy_scatter(int n, int s, float a,
                                                                           const float *restrict x, float *restrict y)
{
    if (s == 1)
        for (int j = 0; j < n; j++) y[j] += a * x[j];
    else
        for (int j = 0; j < n; j++) y[j * s] += a * x[j];
}

/* sum of g[j] * x[j*s] in double, four explicit lanes (vectorised without reassociation) */
__attribute__((target_clones("avx2", "default"))) static double dot_gather(int n, int s, const float *restrict g,
                                                                           const float *restrict x)
{
    double acc[4] = {0};
    int j = 0;
    if (s == 1)
        for (; j + 4 <= n; j += 4)
            for (int k = 0; k < 4; k++) acc[k] += (double)g[j + k] * (double)x[j + k];
    double r = 0.0;
    for (; j < n; j++) r += (double)g[j] * (double)x[(size_t)j * s];
    return r + ((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

/* The rows a tap touches: output columns [*lo, *hi), first input column *iw0; returns
 * whether the range is empty. */
static int tap_columns(const conv2d_desc_t *d, int kw, int *lo, int *hi, int *iw0)
{
    tap_span(kw, d->sW, d->pad_l, d->dW, d->W, d->OW, lo, hi);
    *iw0 = *lo * d->sW - d->pad_l + kw * d->dW;
    return *hi <= *lo;
}

void dw_rows_forward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *bias, float *out)
{
    const int C = d->C, OC = d->OC, M = OC / C, H = d->H, W = d->W, OH = d->OH, OW = d->OW;
    const size_t P = (size_t)OH * OW;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < OC; oc++) {
            const float *x = inp + ((size_t)b * C + oc / M) * H * W; /* (H, W) */
            float *y = out + ((size_t)b * OC + oc) * P;              /* (OH, OW) */
            const float *w = weight + (size_t)oc * d->KH * d->KW;    /* (KH, KW) */
            const float bv = bias ? bias[oc] : 0.0f;
            for (size_t i = 0; i < P; i++) y[i] = bv;
            for (int kh = 0; kh < d->KH; kh++)
                for (int kw = 0; kw < d->KW; kw++) {
                    int lo, hi, iw0;
                    if (tap_columns(d, kw, &lo, &hi, &iw0)) continue;
                    const float wv = w[kh * d->KW + kw];
                    for (int oh = 0; oh < OH; oh++) {
                        const int ih = oh * d->sH - d->pad_t + kh * d->dH;
                        if (ih < 0 || ih >= H) continue;
                        axpy_gather(hi - lo, d->sW, wv, x + (size_t)ih * W + iw0, y + (size_t)oh * OW + lo);
                    }
                }
        }
}

void dw_rows_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                      float *dinp, float *dweight)
{
    const int C = d->C, OC = d->OC, M = OC / C, H = d->H, W = d->W, OH = d->OH, OW = d->OW;
    const size_t P = (size_t)OH * OW;
    for (int oc = 0; oc < OC; oc++)
        for (int kh = 0; kh < d->KH; kh++)
            for (int kw = 0; kw < d->KW; kw++) {
                int lo, hi, iw0;
                double s = 0.0;
                if (!tap_columns(d, kw, &lo, &hi, &iw0))
                    for (int b = 0; b < B; b++) {
                        const float *x = inp + ((size_t)b * C + oc / M) * H * W;
                        const float *g = dout + ((size_t)b * OC + oc) * P;
                        for (int oh = 0; oh < OH; oh++) {
                            const int ih = oh * d->sH - d->pad_t + kh * d->dH;
                            if (ih < 0 || ih >= H) continue;
                            s += dot_gather(hi - lo, d->sW, g + (size_t)oh * OW + lo, x + (size_t)ih * W + iw0);
                        }
                    }
                dweight[((size_t)oc * d->KH + kh) * d->KW + kw] = (float)s;
            }
    if (!dinp) return;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < OC; oc++) {
            float *dx = dinp + ((size_t)b * C + oc / M) * H * W;
            const float *g = dout + ((size_t)b * OC + oc) * P;
            const float *w = weight + (size_t)oc * d->KH * d->KW;
            for (int kh = 0; kh < d->KH; kh++)
                for (int kw = 0; kw < d->KW; kw++) {
                    int lo, hi, iw0;
                    if (tap_columns(d, kw, &lo, &hi, &iw0)) continue;
                    const float wv = w[kh * d->KW + kw];
                    for (int oh = 0; oh < OH; oh++) {
                        const int ih = oh * d->sH - d->pad_t + kh * d->dH;
                        if (ih < 0 || ih >= H) continue;
                        axpy_scatter(hi - lo, d->sW, wv, g + (size_t)oh * OW + lo, dx + (size_t)ih * W + iw0);
                    }
                }
        }
}
