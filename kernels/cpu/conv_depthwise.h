/* kernels/cpu/conv_depthwise.h - the depthwise kernels (conv_depthwise.c), which conv.c
 * calls for depthwise convolutions: the channels-inner one with one filter per channel,
 * the row kernel with more. */
#ifndef PACER_CONV_DEPTHWISE_H
#define PACER_CONV_DEPTHWISE_H

#include <stddef.h>

#include "ops.h"

/* groups == C == OC */
int dwc_fits(const conv2d_desc_t *d);
/* floats of workspace a call takes, whatever the batch */
size_t dwc_workspace(const conv2d_desc_t *d);
void dwc_forward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                 const float *weight,                             /* (C, 1, KH, KW) */
                 const float *bias,                               /* (C) or NULL */
                 float *out,                                      /* (B, C, OH, OW) */
                 float *ws);
/* dinp += the input gradient (when not NULL); dweight = the weight gradient */
void dwc_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight,
                  const float *dout, /* (B, C, OH, OW) */
                  float *dinp, float *dweight, float *ws);

/* The row kernel: groups == C > 1, any number of filters per channel, one thread. */
void dw_rows_forward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *bias,
                     float *out);
/* dinp += the input gradient (when not NULL); dweight = the weight gradient */
void dw_rows_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                      float *dinp, float *dweight);

#endif
