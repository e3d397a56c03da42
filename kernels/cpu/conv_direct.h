/* kernels/cpu/conv_direct.h - a stride-1 convolution as an implicit GEMM over padded planes.
 *
 * Owned by conv.c, which decides when to use it (conv.c, "stride 1, direct"). On a grid of
 * padded planes, PW floats a row, the row of tap (c, kh, kw) of the lowered input is the
 * run of the plane of channel c starting at kh*dH*PW + kw*dW (the wide lowering of
 * conv.c), so the GEMM  y (M, N) = A (M, K) x lowered (K, N),  K = C*KH*KW,  can read its
 * right-hand side straight from the planes: no im2col copy and no packing of it. The
 * kernel computes DIRECT_MR x DIRECT_NR tiles with AVX2 FMA, each output summed over
 * k = (c, kh, kw) in that order, one FMA per term: the same bits on every run and thread.
 */
#ifndef PACER_CONV_DIRECT_H
#define PACER_CONV_DIRECT_H

#include <stddef.h>

#define DIRECT_MR 4  /* rows of A (output channels) a tile computes */
#define DIRECT_NR 24 /* grid columns a tile computes */

typedef struct {
    int C, KH, KW, dH, dW; /* the taps: K = C*KH*KW rows */
    int PW;                /* padded plane width */
    size_t pld;            /* floats from one plane to the next: at least the reach of
                            * the last tap, (KH-1)*dH*PW + (KW-1)*dW + N, all readable */
    int N;                 /* grid columns computed: a multiple of DIRECT_NR */
} direct_geom_t;

/* Whether this CPU runs the kernel (x86-64 with AVX2 and FMA). */
int direct_available(void);
/* Floats of A packed in blocks of mr rows: M rounded up to mr, times K. */
size_t direct_packed_floats(int M, int K, int mr);
/* Ap = A (M, K), rows lda apart, packed in mr-row blocks, k-major inside a block, the rows
 * past M zero: mr = DIRECT_MR for direct_gemm, DIRECT_CV_M for direct_conv_cv. */
void direct_pack(int M, int K, const float *A, size_t lda, int mr, float *Ap);
/* y (M, g->N), rows ldy apart = A x the lowered planes x (g->C planes, g->pld apart). */
void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy);
/* dw (M, K), rows K apart, = (accumulate 0) or += (accumulate 1) dy x lowered^T:
 * dw[m][k] = sum over grid columns j < n of dy[m][j] * x's run of tap k at j. dy has M
 * rows ldd apart, zero where the grid is not an output; n a multiple of 8, at most g->N.
 * Each term summed in lane j % 8 of a vector, the lanes added at the end. */
void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n, const float *x, float *dw,
                       int accumulate);

/* The channel-vector kernels, for small planes: tiles of DIRECT_CV_M rows of A (vectors)
 * by 6 output positions or taps (broadcast), over the outputs of a rows x cols plane only
 * (no garbage columns). Output position p reads its taps at grid offset
 * (p / cols) * g->PW + p % cols; g->N is not used.
 * direct_conv_cv: y (M planes of rows*cols) = Ap x taps (+ bias[m]), or += (accumulate);
 *   Ap packed with mr = DIRECT_CV_M. Each output summed over k in order, as direct_gemm.
 * direct_wgrad_cv: dw (M, K) = or += dy x taps^T, summed over positions in order; dyT is
 *   dy transposed, (rows*cols, M rounded up to DIRECT_CV_M), the padding columns zero. */
#define DIRECT_CV_M 16
void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows, int cols, const float *x,
                    const float *bias, int accumulate, float *y);
void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, const float *x, float *dw,
                     int accumulate);

#endif
