/* kernels/cpu/conv_crop.c - see conv_crop.h. */
#include "conv_crop.h"

#include <string.h>

/* The first and last of the K taps (dilation dil) that read some of the n input rows for
 * some of the out output rows (stride s, pad before); -1 in *lo when none does. */
static void reading_taps(int K, int dil, int s, int pad, int n, int out, int *lo, int *hi)
{
    *lo = *hi = -1;
    for (int k = 0; k < K; k++)
        for (int o = 0; o < out; o++) {
            const long i = (long)o * s - pad + (long)k * dil;
            if (i >= 0 && i < n) {
                if (*lo < 0) *lo = k;
                *hi = k;
                break;
            }
        }
}

/* The pad after that keeps out output rows over taps of span `reach` (dil * (K - 1)), or
 * -1 when only a negative pad would */
static int pad_after(int n, int pad, int reach, int s, int out)
{
    const long need = (long)(out - 1) * s + reach + 1 - n - pad;
    return need < 0 ? -1 : (int)need;
}

int conv_crop_plan(const conv2d_desc_t *d, conv_crop_t *c)
{
    int h0, h1, w0, w1;
    reading_taps(d->KH, d->dH, d->sH, d->pad_t, d->H, d->OH, &h0, &h1);
    reading_taps(d->KW, d->dW, d->sW, d->pad_l, d->W, d->OW, &w0, &w1);
    if (h0 < 0 || w0 < 0 || (h0 == 0 && h1 == d->KH - 1 && w0 == 0 && w1 == d->KW - 1)) return 0;
    c->d = *d;
    c->d.KH = h1 - h0 + 1;
    c->d.KW = w1 - w0 + 1;
    c->d.pad_t = d->pad_t - h0 * d->dH;
    c->d.pad_l = d->pad_l - w0 * d->dW;
    c->d.pad_b = pad_after(d->H, c->d.pad_t, d->dH * (c->d.KH - 1), d->sH, d->OH);
    c->d.pad_r = pad_after(d->W, c->d.pad_l, d->dW * (c->d.KW - 1), d->sW, d->OW);
    if (c->d.pad_t < 0 || c->d.pad_l < 0 || c->d.pad_b < 0 || c->d.pad_r < 0) return 0;
    if (conv2d_setup(&c->d) != 0 || c->d.OH != d->OH || c->d.OW != d->OW) return 0;
    c->kh0 = h0;
    c->kw0 = w0;
    return 1;
}

size_t conv_crop_weight_floats(const conv_crop_t *c)
{
    return (size_t)c->d.OC * (c->d.C / c->d.groups) * c->d.KH * c->d.KW;
}

void conv_crop_weights(const conv2d_desc_t *d, const conv_crop_t *c, const float *w, float *wc)
{
    const size_t filters = (size_t)d->OC * (d->C / d->groups);
    for (size_t f = 0; f < filters; f++)
        for (int kh = 0; kh < c->d.KH; kh++)
            memcpy(wc + (f * c->d.KH + kh) * c->d.KW, w + (f * d->KH + c->kh0 + kh) * d->KW + c->kw0,
                   (size_t)c->d.KW * sizeof(float));
}

void conv_crop_grad(const conv2d_desc_t *d, const conv_crop_t *c, const float *dwc, float *dw)
{
    const size_t filters = (size_t)d->OC * (d->C / d->groups);
    memset(dw, 0, filters * d->KH * d->KW * sizeof(float));
    for (size_t f = 0; f < filters; f++)
        for (int kh = 0; kh < c->d.KH; kh++)
            memcpy(dw + (f * d->KH + c->kh0 + kh) * d->KW + c->kw0, dwc + (f * c->d.KH + kh) * c->d.KW,
                   (size_t)c->d.KW * sizeof(float));
}
