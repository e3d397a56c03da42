/* kernels/cpu/conv_winograd.h - 3x3 stride-1 convolutions by Winograd's F(4x4, 3x3).
 *
 * Owned by conv.c, which decides when to use it (conv.c, "Winograd"). Each 4x4 block of
 * output (a tile) comes from the 6x6 block of padded input around it: the input block
 * and the 3x3 filter are carried into a 6x6 domain (V = B^T d B, U = G g G^T), multiplied
 * there point by point and summed over the input channels (36 GEMMs of tiles x C by C x
 * K), and carried back (Y = A^T M A): 36 multiplies per tile and channel pair instead of
 * the direct convolution's 144 (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2016; the matrices of their F(4x4, 3x3)).
 *
 * Layouts: the input is copied channel-last, so each transform works on vectors of
 * channels; U is 36 matrices (Cp, Kp) a cache line apart, Cp and Kp the channel counts
 * rounded up to 16 (zeros in between), each stored as Kp/16 blocks of (Cp, 16). Every
 * output is the same sum in the same order whatever the ISA, the threads or the number of
 * images a call takes, so runs are reproducible; its rounding is not the direct
 * convolution's (test_ops: within WINO_TOL of the double reference; at bf16 operands, of
 * the double reference on the rounded operands, test_conv_amx).
 */
#ifndef PACER_CONV_WINOGRAD_H
#define PACER_CONV_WINOGRAD_H

#include <stddef.h>

#define WINO_POINTS 36 /* the 6x6 domain */

typedef struct {
    int C, K;   /* input and output channels */
    int H, W;   /* planes, the same in and out (pad 1 on every side) */
    int TH, TW; /* tiles down and across: ceil(H / 4), ceil(W / 4) */
    int Cp, Kp; /* C and K rounded up to 16 */
    int PH, PW; /* the channel-last padded input: 4*TH + 2 rows of 4*TW + 2 pixels */
    int nb;     /* images a call takes at most */
    /* 1: every operand (the filters, the input and dout) rounded to bf16 as it is loaded
     * (bf16.h's bf16_round: to nearest even, denormals kept), the rest float32 as at 0:
     * mixed precision's products of bf16 operands, the transforms and sums in float32
     * (wino_geom sets 0) */
    int bf16;
} wino_geom_t;

/* The geometry of a C -> K convolution of H x W planes, nb images a call. */
void wino_geom(int C, int K, int H, int W, int nb, wino_geom_t *g);
/* Images a call should take: enough tiles to fill the GEMM's blocks (1 for 32x32 planes,
 * 6 for 8x8 ones). A call may take fewer. */
int wino_images(int H, int W);
/* Floats of U, and of a call's scratch (the padded input, V, M and one tile's output). */
size_t wino_weight_floats(const wino_geom_t *g);
size_t wino_scratch_floats(const wino_geom_t *g);

/* U's output channels k in [k0, k1) of Kp (multiples of 16) from the filters (zeros past K and for the
 * input channels past C), so that threads can share one U, each writing a range.
 * flip 0: w is (K, C, 3, 3), the forward's. flip 1: w is (C, K, 3, 3) and the filter
 * from input channel i to output channel o is w[i][o] turned by 180 degrees: the input
 * gradient of a convolution with weights w (a convolution of dout). */
void wino_weights(const wino_geom_t *g, const float *w, int flip, int k0, int k1, float *U);

/* Zeroes the padding of the scratch; once before the calls of a pass that share it. */
void wino_begin(const wino_geom_t *g, float *scratch);
/* y (n, K, H, W) = the convolution of x (n, C, H, W) with U (+ bias[k]), or += it
 * (accumulate); n <= g->nb. Needs direct_isa() != DIRECT_NO_ISA. */
void wino_conv(const wino_geom_t *g, int n, const float *U, const float *x, const float *bias, int accumulate, float *y,
               float *scratch);
/* wino_conv's two halves: x's padded channel-last copy into the scratch, then the rest,
 * so that the backward copies dout once for the input and the weight gradient. */
void wino_load(const wino_geom_t *g, int n, const float *x, float *scratch);
void wino_conv_loaded(const wino_geom_t *g, int n, const float *U, const float *bias, int accumulate, float *y,
                      float *scratch);

/* The weight gradient, in the 6x6 domain: dU (36, Cp, Kp, laid out as U) += over the
 * tiles of n images (n <= g->nb) V of x (n, C, H, W) times A dy A^T of dy (n, K, H, W),
 * summed over the tiles in order; then dw (K, C, 3, 3) = G^T dU G. dy comes as the input
 * gradient's geometry gd (K -> C, the same planes) loaded it: dscratch after
 * wino_load(gd, n, dy, dscratch). wino_wgrad_begin zeroes dU and the scratch's padding
 * (wino_wgrad_scratch_floats of it) once before a pass's calls. */
size_t wino_wgrad_scratch_floats(const wino_geom_t *g);
void wino_wgrad_begin(const wino_geom_t *g, float *dU, float *scratch);
void wino_wgrad(const wino_geom_t *g, int n, const float *x, const wino_geom_t *gd, const float *dscratch, float *dU,
                float *scratch);
void wino_wgrad_end(const wino_geom_t *g, const float *dU, float *dw);

#endif
