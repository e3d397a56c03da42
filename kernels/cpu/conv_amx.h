/* kernels/cpu/conv_amx.h - bf16 convolutions on AMX tiles, straight from padded planes.
 *
 * Owned by conv.c, which runs them at bf16 on the AMX path for one-group convolutions of
 * stride 1 or 2 and dilation 1 whose pads stay within the kernel's reach. im2col would copy
 * each input value KH*KW times, as float32 and again as bf16 while packing; here nothing
 * is lowered. On the grid of the padded planes (PW positions a row, garbage in the
 * columns past the output's; conv.c's wide lowering) the product
 *   y (M, grid) = sum over taps t of W_t (M, C) x source (C, grid shifted by t's offset)
 * reads its tiles in place:
 *  - forward and input gradient: the source padded, rounded to bf16 and stored as pairs
 *    of channels (one 32-bit pair a position, conv_amx_source), so that a B tile (16
 *    channel pairs x 16 positions) is one strided tile load at the tap's offset; the A
 *    tiles are the weights of a tap, packed once a pass (conv_amx_pack; the input
 *    gradient takes the flipped, transposed filters: a convolution of dout);
 *  - weight gradient: dW_t^T (C, M) = the source's padded planes (C, positions shifted
 *    by t) x dout on the grid (positions, M): A tiles straight from the source rounded
 *    to bf16 in its padded planes (any offset: a row of A is a run of positions), B
 *    tiles from dout stored as pairs of positions (one 32-bit pair per output channel);
 *    the sums stay in float32 tiles image after image (conv_amx_wgrad), then go to the
 *    (M, C, KH, KW) gradient once (conv_amx_wgrad_store).
 * Channels are padded with zeros to 16 (and C to 32 past 16), so any count runs.
 * At stride 2 the padded planes are stored as their four phases (even and odd rows by even
 * and odd columns, each ceil(padded / 2) a side, one after another): tap (ky, kx) reads
 * phase (ky % 2, kx % 2) at (ky / 2, kx / 2), so the grid is the output's, a shift of each
 * phase's plane a tap as at stride 1, and no product is wasted (conv_amx_tap). The input
 * gradient is then s * s convolutions of dout of stride 1 (conv_amx_dinp_t).
 *
 * Every output is a sum of products of bf16-rounded operands in float32, as gemm_bf16.h
 * defines the bf16 products: within gamma(n) of the exact sum of the rounded products
 * relative to their magnitudes, n the terms summed (C*KH*KW for the forward, M*KH*KW for
 * the input gradient, the positions of every image for the weight gradient) plus the
 * denormal term of gemm_bf16.h. The tiles' own order of the sums inside a tdpbf16ps is
 * the unit's.
 *
 * The same loops also run on a portable twin of the tile unit (CONV_AMX_TWIN: plain
 * float32 arithmetic on the same packed tiles), so that the layouts and the loops are
 * checked on every CPU, and the tiles against it where the CPU has AMX
 * (tests/unit/test_conv_amx.c). A CPU with AVX512-BF16 and no AMX runs the same operands
 * through vdpbf16ps (CONV_AMX_VECTORS, conv_amx_vectors.h). */
#ifndef PACER_CONV_AMX_H
#define PACER_CONV_AMX_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int C, M;       /* source channels, output channels */
    int KH, KW;     /* taps (dilation 1) */
    int stride;     /* 1 or 2, both directions */
    int SH, SW;     /* the source planes */
    int PH, PW;     /* the grid's planes: the padded planes at stride 1, each of their
                     * phases at stride 2 (ceil(padded / 2) a side) */
    int top, left;  /* where a source plane starts in its padded plane (the whole one) */
    int rows, cols; /* the output planes: grid rows, valid columns of each */
    /* derived by conv_amx_plan */
    int Cp, Mp, kc; /* C and M rounded up to 16 (Cp to 32 past 16); channels a K chunk */
    size_t phase;   /* stride 2: positions from one phase's plane to the next */
    size_t N;       /* grid positions computed: rows * PW rounded up to 32 */
    size_t pld;     /* 32-bit pairs from one pair-plane to the next: the padded plane and
                     * the last tap's reach past N, all readable */
    size_t ldy;     /* floats a row of the output grid */
    size_t Nk;      /* weight gradient: positions summed, rows * PW rounded up to 32 */
    size_t L;       /* weight gradient: bf16 values from one rounded plane to the next */
} conv_amx_geom_t;

/* Where the loops run: AMX tiles, their portable twin, or AVX512-BF16 vectors
 * (conv_amx_vectors.h: the same operands, other loops) */
typedef enum { CONV_AMX_TILES = 0, CONV_AMX_TWIN = 1, CONV_AMX_VECTORS = 2 } conv_amx_unit_t;

/* Fills g's derived fields from the others. */
void conv_amx_plan(conv_amx_geom_t *g);

/* Where tap t (ky * KW + kx) reads, from a grid position: ky rows and kx columns on at
 * stride 1; on phase (ky % 2, kx % 2)'s plane, ky / 2 rows and kx / 2 columns on, at 2 */
static inline size_t conv_amx_tap(const conv_amx_geom_t *g, int t)
{
    const int ky = t / g->KW, kx = t % g->KW;
    if (g->stride != 2) return (size_t)ky * g->PW + (size_t)kx;
    return (size_t)((ky & 1) * 2 + (kx & 1)) * g->phase + (size_t)(ky >> 1) * g->PW + (size_t)(kx >> 1);
}

/* Bytes of the packed weights, of one source (conv_amx_source), of one output grid
 * (floats: conv_amx_grid_floats), and of the weight gradient's scratch for one image and
 * its sums (conv_amx_wgrad_bytes: dout's pairs, the source's rounded planes, then the
 * float32 sums). */
size_t conv_amx_weight_bytes(const conv_amx_geom_t *g);
size_t conv_amx_source_bytes(const conv_amx_geom_t *g);
size_t conv_amx_grid_floats(const conv_amx_geom_t *g);
size_t conv_amx_wgrad_bytes(const conv_amx_geom_t *g);

/* wp = the weights w (M, C, KH, KW) as A tiles. */
void conv_amx_pack(const conv_amx_geom_t *g, const float *w, uint16_t *wp);
/* xs = the C planes of src (SH x SW each) padded, rounded to bf16, as channel pairs (at
 * stride 2, each padded plane as its four phases). The
 * zeros (the padding, the channels past C, the reach past the plane) are written only with
 * pads: without, xs must hold them from an earlier call of the same geometry, nothing
 * having written there since (conv.c: a thread's first image writes them, its next ones
 * only their values; a value or two a row of pad, one call a row, were 2% of ResNet-20's
 * step). */
void conv_amx_source(const conv_amx_geom_t *g, const float *src, int pads, uint32_t *xs);
/* y (Mp rows ldy apart, N positions each) = the convolution on the grid. */
void conv_amx_grid(conv_amx_unit_t u, const conv_amx_geom_t *g, const uint16_t *wp, const uint32_t *xs, float *y);

/* One image's weight gradient into the sums at ws's end (first: they start at zero, and
 * the scratch's zeros are written, as conv_amx_source's pads; without first, ws holds them
 * from the call before): dout is the image's (M, rows, cols) output gradient, src its
 * (C, SH, SW) input. */
void conv_amx_wgrad(conv_amx_unit_t u, const conv_amx_geom_t *g, const float *src, const float *dout, int first,
                    void *ws);
/* dw (M, C, KH, KW) = the sums. */
void conv_amx_wgrad_store(const conv_amx_geom_t *g, const void *ws, float *dw);

/* The input gradient of a convolution of stride s (1 or 2, each side of its kernel at
 * least s): dx at rows alpha mod s and columns beta mod s (a phase, in the padded input's
 * coordinates) is the stride-1 convolution of dout, padded, by the taps ky = alpha mod s,
 * kx = beta mod s of the kernel, flipped and transposed. The s * s phases share one padded
 * dout and each has its own packed weights and grid, scattered to its positions; at
 * stride 1 the one phase is the whole flipped kernel. The phases' taps together are the
 * kernel's: nothing is multiplied by a zero the stride put there. */
typedef struct {
    int s, H, W, KH, KW;   /* the stride; the input planes dx holds; the kernel */
    conv_amx_geom_t ph[4]; /* each phase's convolution on dout padded, one source for all
                            * (ph[0] describes it; every pld is its) */
    size_t at[4];          /* where phase i's grid starts on the source, in positions */
    size_t wat[4];         /* phase i's packed weights, in bf16 values from the first */
    int row0[4], col0[4];  /* the input row and column of phase i's first grid cell */
} conv_amx_dinp_t;

/* p = the input gradient's plan of the convolution whose forward geometry is f. */
void conv_amx_dinp_plan(const conv_amx_geom_t *f, conv_amx_dinp_t *p);
/* Bytes of its scratch: every phase's packed weights, the source and one grid. */
size_t conv_amx_dinp_bytes(const conv_amx_dinp_t *p);
/* The phases' weights into ws, from the forward's w (M, C, KH, KW): once a pass. */
void conv_amx_dinp_pack(const conv_amx_dinp_t *p, const float *w, void *ws);
/* dx (C planes of H x W) = one image's input gradient from its dout, or += it with
 * accumulate; pads as conv_amx_source's. */
void conv_amx_dinp_image(conv_amx_unit_t u, const conv_amx_dinp_t *p, void *ws, const float *dout, int accumulate,
                         int pads, float *dx);

/* For tests: 1 runs conv.c's bf16 convolutions through these loops on the twin, whatever
 * the CPU has, even on the portable path (0: on the tiles or the vectors where the CPU has
 * them, the default). Not while one runs. */
void conv_amx_force_twin(int on);
int conv_amx_twin_forced(void);

#endif
