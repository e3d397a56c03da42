/* kernels/ref/pool.c - the reference poolings (ref.h). */
#include <math.h>

#include "ref.h"

/* Naive window bounds: every tap of the unclamped window (taps dH, dW apart), those
 * outside the input skipped. */
void ref_maxpool2d_forward(const pool2d_desc_t *d, int B, const double *x, double *y, int32_t *am)
{
    for (int pl = 0; pl < B * d->C; pl++)
        for (int oh = 0; oh < d->OH; oh++)
            for (int ow = 0; ow < d->OW; ow++) {
                double m = -INFINITY;
                int best = -1;
                for (int kh = 0; kh < d->KH; kh++)
                    for (int kw = 0; kw < d->KW; kw++) {
                        int ih = oh * d->sH - d->pad_t + kh * d->dH, iw = ow * d->sW - d->pad_l + kw * d->dW;
                        if (ih < 0 || ih >= d->H || iw < 0 || iw >= d->W) continue;
                        double v = x[(size_t)pl * d->H * d->W + ih * d->W + iw];
                        if (v > m) {
                            m = v;
                            best = ih * d->W + iw;
                        }
                    }
                y[(size_t)pl * d->OH * d->OW + oh * d->OW + ow] = m;
                if (am) am[(size_t)pl * d->OH * d->OW + oh * d->OW + ow] = best;
            }
}

/* The divisor counted tap by tap: the in-bounds taps, or with count_include_pad those
 * inside the padded input [-pad_t, H + pad_b) x [-pad_l, W + pad_r). */
void ref_avgpool2d_forward(const pool2d_desc_t *d, int B, const double *x, double *y)
{
    for (int pl = 0; pl < B * d->C; pl++)
        for (int oh = 0; oh < d->OH; oh++)
            for (int ow = 0; ow < d->OW; ow++) {
                double s = 0.0;
                int cnt = 0, padded = 0;
                for (int kh = 0; kh < d->KH; kh++)
                    for (int kw = 0; kw < d->KW; kw++) {
                        int ih = oh * d->sH - d->pad_t + kh * d->dH, iw = ow * d->sW - d->pad_l + kw * d->dW;
                        if (ih >= -d->pad_t && ih < d->H + d->pad_b && iw >= -d->pad_l && iw < d->W + d->pad_r)
                            padded++;
                        if (ih < 0 || ih >= d->H || iw < 0 || iw >= d->W) continue;
                        s += x[(size_t)pl * d->H * d->W + ih * d->W + iw];
                        cnt++;
                    }
                y[(size_t)pl * d->OH * d->OW + oh * d->OW + ow] = s / (d->count_include_pad ? padded : cnt);
            }
}

void ref_gap_forward(int B, int C, int HW, const double *x, double *y)
{
    for (int i = 0; i < B * C; i++) {
        double s = 0.0;
        for (int j = 0; j < HW; j++) s += x[(size_t)i * HW + j];
        y[i] = s / HW;
    }
}
