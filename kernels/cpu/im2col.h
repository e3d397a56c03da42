/* kernels/cpu/im2col.h - a convolution's input lowered to columns, and back.
 *
 * conv.c's general path: im2col_chunk copies each input value once for every tap that
 * reads it, so that the convolution is one GEMM of the weights (OC, C*KH*KW) by the
 * columns (C*KH*KW, nb*OH*OW); col2im_chunk_add is its adjoint, for the input gradient.
 * Rows of col are ld floats apart; image b's columns start at b*OH*OW.
 *
 * The grid: the layout of conv.c's wide lowering and of the direct kernels (conv_direct.h,
 * conv_amx.h), an output of rows x cols computed on rows x PW positions (PW the padded
 * planes' width: the columns past cols are garbage), M such grids ldy floats apart. */
#ifndef PACER_IM2COL_H
#define PACER_IM2COL_H

#include <stddef.h>

#include "ops.h"

/* col = nb images of inp (nb, C, H, W) lowered; every element of col is written. */
void im2col_chunk(const conv2d_desc_t *d, int nb, const float *restrict inp, float *restrict col, size_t ld);
/* dinp (nb, C, H, W) += the column gradient col, the adjoint of im2col_chunk. */
void col2im_chunk_add(const conv2d_desc_t *d, int nb, const float *restrict col, size_t ld, float *restrict dinp);

/* The grids' valid parts into M planes of rows x cols: out = grid + bias (bias may be
 * NULL), or out += grid (accumulate). */
void conv_grid_to_planes(int M, int rows, int cols, int PW, const float *restrict y, size_t ldy, const float *bias,
                         int accumulate, float *restrict out);
/* The inverse: M planes of rows x cols onto grids, zeros in the columns past cols and from
 * rows * PW up to n. */
void conv_planes_to_grid(int M, int rows, int cols, int PW, const float *restrict src, float *restrict y, size_t ldy,
                         size_t n);

#endif
