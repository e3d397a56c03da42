/* kernels/cpu/conv_crop.h - the taps of a convolution that never read its input.
 *
 * A tap whose every output position lands in the zero padding adds only zeros: a 3x3
 * convolution with pad 1 on a 1x1 plane (ResNet-18's last stage on a 32x32 image) reads
 * its input through the centre tap alone, yet im2col lowers and multiplies all nine, and
 * the GEMM packs the whole (OC, 9C) weight for a handful of columns. conv.c runs such a
 * convolution as the one over the taps that read the input: the same sums less products
 * of zeros, and a weight gradient of zero at the taps dropped (each was a sum of products
 * with the padding's zeros). Depthwise convolutions keep their own kernels. */
#ifndef PACER_CONV_CROP_H
#define PACER_CONV_CROP_H

#include "ops.h"

typedef struct {
    conv2d_desc_t d; /* the convolution over the kept taps, set up: the same OH and OW */
    int kh0, kw0;    /* its first tap's place in the full kernel */
} conv_crop_t;

/* 1 when some rows or columns of taps never read the input of d and c describes the
 * convolution over the others (pads that stay >= 0, the same output size); 0 otherwise,
 * also when no tap reads the input at all (the full kernel then runs as it is). */
int conv_crop_plan(const conv2d_desc_t *d, conv_crop_t *c);
/* Floats of the kept taps' weights (OC, C/groups, c->d.KH, c->d.KW). */
size_t conv_crop_weight_floats(const conv_crop_t *c);
/* wc = the kept taps of w (d's layout). */
void conv_crop_weights(const conv2d_desc_t *d, const conv_crop_t *c, const float *w, float *wc);
/* dw (d's layout) = dwc at the kept taps, zero at the others. */
void conv_crop_grad(const conv2d_desc_t *d, const conv_crop_t *c, const float *dwc, float *dw);

#endif
