/* kernels/ref/conv.c - the reference convolution (ref.h). */
#include "ref.h"

/* The direct 7-loop convolution, written from ONNX's definition: output channel oc of
 * group g = oc / (OC/groups) sums over the group's C/groups input channels, tap (kh, kw)
 * at input row oh*sH - pad_t + kh*dH and column ow*sW - pad_l + kw*dW. */
void ref_conv2d_forward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *bias, double *y)
{
    const int Cg = d->C / d->groups, OCg = d->OC / d->groups;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < d->OC; oc++)
            for (int oh = 0; oh < d->OH; oh++)
                for (int ow = 0; ow < d->OW; ow++) {
                    double s = bias ? bias[oc] : 0.0;
                    for (int ci = 0; ci < Cg; ci++)
                        for (int kh = 0; kh < d->KH; kh++)
                            for (int kw = 0; kw < d->KW; kw++) {
                                int c = oc / OCg * Cg + ci;
                                int ih = oh * d->sH - d->pad_t + kh * d->dH;
                                int iw = ow * d->sW - d->pad_l + kw * d->dW;
                                if (ih < 0 || ih >= d->H || iw < 0 || iw >= d->W) continue;
                                s += x[((size_t)(b * d->C + c) * d->H + ih) * d->W + iw] *
                                     w[((size_t)(oc * Cg + ci) * d->KH + kh) * d->KW + kw];
                            }
                    y[((size_t)(b * d->OC + oc) * d->OH + oh) * d->OW + ow] = s;
                }
}

void ref_conv2d_backward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *g, double *dx,
                         double *dw, double *db)
{
    const int Cg = d->C / d->groups, OCg = d->OC / d->groups;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < d->OC; oc++)
            for (int oh = 0; oh < d->OH; oh++)
                for (int ow = 0; ow < d->OW; ow++) {
                    double gv = g[((size_t)(b * d->OC + oc) * d->OH + oh) * d->OW + ow];
                    db[oc] += gv;
                    for (int ci = 0; ci < Cg; ci++)
                        for (int kh = 0; kh < d->KH; kh++)
                            for (int kw = 0; kw < d->KW; kw++) {
                                int c = oc / OCg * Cg + ci;
                                int ih = oh * d->sH - d->pad_t + kh * d->dH;
                                int iw = ow * d->sW - d->pad_l + kw * d->dW;
                                if (ih < 0 || ih >= d->H || iw < 0 || iw >= d->W) continue;
                                size_t xi = ((size_t)(b * d->C + c) * d->H + ih) * d->W + iw;
                                size_t wi = ((size_t)(oc * Cg + ci) * d->KH + kh) * d->KW + kw;
                                dx[xi] += gv * w[wi];
                                dw[wi] += gv * x[xi];
                            }
                }
}

/* ONNX ConvTranspose's definition, scattered: every input pixel times every tap of its
 * channel's filters, added where the tap lands (the padding cut off). */
void ref_conv_transpose2d_forward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *bias,
                                  double *y)
{
    const int Cg = d->C / d->groups, OCg = d->OC / d->groups;
    const size_t plane = (size_t)d->OH * d->OW;
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < d->OC; oc++)
            for (size_t p = 0; p < plane; p++) y[((size_t)b * d->OC + oc) * plane + p] = bias ? bias[oc] : 0.0;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < d->C; c++)
            for (int ih = 0; ih < d->H; ih++)
                for (int iw = 0; iw < d->W; iw++) {
                    const double xv = x[((size_t)(b * d->C + c) * d->H + ih) * d->W + iw];
                    for (int o = 0; o < OCg; o++)
                        for (int kh = 0; kh < d->KH; kh++)
                            for (int kw = 0; kw < d->KW; kw++) {
                                const int oh = ih * d->sH - d->pad_t + kh * d->dH;
                                const int ow = iw * d->sW - d->pad_l + kw * d->dW;
                                if (oh < 0 || oh >= d->OH || ow < 0 || ow >= d->OW) continue;
                                const int oc = c / Cg * OCg + o;
                                y[((size_t)(b * d->OC + oc) * d->OH + oh) * d->OW + ow] +=
                                    xv * w[((size_t)(c * OCg + o) * d->KH + kh) * d->KW + kw];
                            }
                }
}
