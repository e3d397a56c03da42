/* kernels/cpu/conv_direct.h - convolutions as implicit GEMMs over padded planes.
 *
 * Owned by conv.c, which decides when to use them (conv.c, "direct"). On a grid
 * of padded planes, PW floats a row, the row of tap (c, kh, kw) of the lowered input is
 * the run of the plane of channel c starting at kh*dH*PW + kw*dW (the wide lowering of
 * conv.c), so the GEMM  y (M, N) = A (M, K) x lowered (K, N),  K = C*KH*KW,  can read its
 * right-hand side straight from the planes: no im2col copy and no packing of it.
 *
 * Two tile shapes, each for AVX2 and AVX-512 (direct_isa):
 *  - grid tiles: DIRECT_MR rows of A by 3 vectors of grid columns, for large planes at
 *    stride 1;
 *  - channel-vector tiles: direct_cv_rows() rows of A (two vectors) by 6 output
 *    positions, over the outputs only, for planes too small for the grid and for any
 *    stride (an output position's taps start at its strided place on the grid).
 * Each output of direct_gemm and direct_conv_cv is summed over k = (c, kh, kw) in that
 * order, one FMA per term: the same bits on every run, thread and ISA.
 */
#ifndef PACER_CONV_DIRECT_H
#define PACER_CONV_DIRECT_H

#include <stddef.h>

#define DIRECT_MR 4        /* rows of A a grid tile computes */
#define DIRECT_NR_MAX 48   /* grid columns a grid tile computes at most (3 vectors) */
#define DIRECT_CV_M_MAX 32 /* rows of A a channel-vector tile computes at most */

enum { DIRECT_NO_ISA, DIRECT_AVX2, DIRECT_AVX512 };

typedef struct {
    int C, KH, KW, dH, dW; /* the taps: K = C*KH*KW rows */
    int sH, sW;            /* strides: the channel-vector kernels' (the grid ones take 1) */
    int PW;                /* padded plane width */
    size_t pld;            /* floats from one plane to the next: at least the reach of
                            * the last tap, (KH-1)*dH*PW + (KW-1)*dW + N, all readable */
    int N;                 /* grid columns computed: a multiple of DIRECT_NR_MAX */
} direct_geom_t;

/* The kernels this process runs: DIRECT_NO_ISA (none: not x86-64, or no AVX2 and FMA),
 * DIRECT_AVX2, or DIRECT_AVX512 where the CPU has AVX-512F and OpenBLAS runs its AVX-512
 * kernels (blas_core.h). Decided once, unless direct_force_isa says otherwise. */
int direct_isa(void);
/* For tests: run the kernels of isa from now on (-1: back to direct_isa's choice).
 * Returns -1, changing nothing, when the CPU cannot. Not while a kernel runs. */
int direct_force_isa(int isa);
/* What a CPU rank's summary says of its convolutions (per_rank[].device.conv):
 * "direct-avx512", "direct-avx2", or "im2col-gemm" (no direct kernels). */
const char *direct_isa_name(void);
/* Rows of A a channel-vector tile computes: 16 on AVX2, 32 on AVX-512. */
int direct_cv_rows(void);

/* Floats of A packed in blocks of mr rows: M rounded up to mr, times K. */
size_t direct_packed_floats(int M, int K, int mr);
/* Ap = A (M, K), rows lda apart, packed in mr-row blocks, k-major inside a block, the rows
 * past M zero: mr = DIRECT_MR for direct_gemm, direct_cv_rows() for direct_conv_cv. */
void direct_pack(int M, int K, const float *A, size_t lda, int mr, float *Ap);

/* y (M, g->N), rows ldy apart = A x the lowered planes x (g->C planes, g->pld apart). */
void direct_gemm(int M, const float *Ap, const direct_geom_t *g, const float *x, float *y, size_t ldy);
/* dw (M, K), rows K apart, = (accumulate 0) or += (accumulate 1) dy x lowered^T:
 * dw[m][k] = sum over grid columns j < n of dy[m][j] * x's run of tap k at j. dy has M
 * rows ldd apart, zero where the grid is not an output; n a multiple of 16, at most g->N.
 * Each term summed in lane j % (vector width) of a vector, the lanes added at the end. */
void direct_gemm_wgrad(int M, const float *dy, size_t ldd, const direct_geom_t *g, int n, const float *x, float *dw,
                       int accumulate);

/* The channel-vector kernels, over the outputs of a rows x cols plane only (no garbage
 * columns): output position p reads its taps at grid offset (p / cols) * g->sH * g->PW +
 * (p % cols) * g->sW; g->N is not used.
 * direct_conv_cv: y (M planes of rows*cols) = Ap x taps (+ bias[m]), or += (accumulate);
 *   Ap packed with mr = direct_cv_rows().
 * direct_wgrad_cv: dw (M, K) = or += dy x taps^T of nimg images, summed over images and
 *   their positions in order; image i's planes start at x + i * ximg, and dyT is their dy
 *   transposed, image after image, (nimg*rows*cols, M rounded up to direct_cv_rows()),
 *   the padding columns zero. Several images a call keep a small plane's dw (which can be
 *   megabytes: 512 x 2304 floats) from being read and written once per image. */
void direct_conv_cv(int M, const float *Ap, const direct_geom_t *g, int rows, int cols, const float *x,
                    const float *bias, int accumulate, float *y);
void direct_wgrad_cv(int M, const float *dyT, const direct_geom_t *g, int rows, int cols, int nimg, size_t ximg,
                     const float *x, float *dw, int accumulate);

#endif
