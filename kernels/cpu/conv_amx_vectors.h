/* kernels/cpu/conv_amx_vectors.h - conv_amx.h's loops on AVX512-BF16's vdpbf16ps.
 *
 * A CPU with AVX512-BF16 and no AMX (AMD's Zen 4 and 5, Intel's Cooper Lake) runs the
 * padded planes' convolutions of conv_amx.h on vectors, from the same packed operands:
 * the weights' A tiles, the source's channel pairs, dout's pairs of positions and the
 * source's rounded planes. Each vdpbf16ps adds 16 outputs' two products of a pair, an A
 * pair broadcast against a row of 16 pairs of B; 8 rows x 32 columns of sums stay in 16
 * registers through the whole sum, as in gemm_bf16.c's AVX512-BF16 loop. The sums are
 * conv_amx.h's, within the same bound; the order inside a vdpbf16ps is the unit's.
 * Called by conv_amx.c only (CONV_AMX_VECTORS). */
#ifndef PACER_CONV_AMX_VECTORS_H
#define PACER_CONV_AMX_VECTORS_H

#include <stdint.h>

#include "conv_amx.h"

/* conv_amx_grid on vectors: y (Mp rows ldy apart) from the packed weights wp and the
 * source's channel pairs xs, its first rows * PW positions (the grid's cells) rounded up
 * to 16, not to N's 32: conv.c reads rows x cols of the grid, never past the cells. */
void conv_amx_vectors_grid(const conv_amx_geom_t *g, const uint16_t *wp, const uint32_t *xs, float *y);

/* conv_amx_wgrad's sums on vectors: acc (first: from zero, else added to), in conv_amx.c's
 * layout (a 16 x 16 block of channels by output channels for each tap), from dout packed
 * in pairs of positions dv and the source's rounded planes x16. */
void conv_amx_vectors_wgrad(const conv_amx_geom_t *g, const uint16_t *dv, const uint16_t *x16, float *acc, int first);

#endif
