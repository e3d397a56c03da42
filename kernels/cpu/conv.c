/* kernels/cpu/conv.c - 2-D convolution as im2col + one SGEMM per chunk of images.
 *
 * The images of a batch are lowered in chunks of nb images into one column matrix
 *   col (K, nb*P),  K = C*KH*KW,  P = OH*OW,  column index = b*P + oh*OW + ow,
 * so that the GEMM's N dimension is nb*P rather than P: at LeNet sizes a single image
 * gives P = 100..784, too narrow for OpenBLAS to reach its peak. nb is the largest
 * count whose col fits CONV_COL_BUDGET (at least 1).
 *
 * Workspace layout (floats):  col (K rows of ld)  then, when nb > 1,  tmp (OC rows of ld),
 * ld = padded_ld(nb*P):
 *   forward : tmp = W x col, then scattered to (B, OC, OH, OW) with the bias added;
 *   backward: tmp = dout gathered to (OC, nb*P); dW (+)= tmp x col^T;
 *             col = W^T x tmp (the column gradient), then col2im adds it into dinp.
 * With nb == 1 the (OC, P) matrix of one image already has the layout of out/dout, so
 * the GEMMs use them directly and tmp is not needed.
 *
 * General geometry (ops.h): stride and padding per dimension and side, and dilation, enter
 * only the lowering (im2col and col2im); groups split col's K rows into groups blocks of
 * K/groups, one GEMM per group on its block (with groups == 1 exactly the calls of a plain
 * convolution, so the built-in networks' results do not move). Depthwise convolutions
 * (groups > 1, one input channel per group) skip the lowering: conv_depthwise.c's
 * channels-inner kernel with one filter per channel, its row kernel
 * with more, because im2col + GEMM with one channel per group is a K = KH*KW GEMM per
 * channel, all overhead. 1x1 convolutions on small planes take the lowering with whole
 * images per GEMM ("pointwise" below). And where the CPU has AVX2 and FMA, one-group convolutions (any
 * stride for the channel-vector tiles, stride 1 for the grid tiles) read their taps
 * straight from padded planes with conv_direct.c's kernels instead of im2col + SGEMM
 * ("direct" below says where and why). At bf16 those kernels give way: on the AMX and
 * AVX512-BF16 paths the layers of stride 1 and 2 run on conv_amx.c's padded planes, on the tiles
 * or on vdpbf16ps (conv_amx_vectors.c; "AMX" below), the rest take im2col and the bf16
 * GEMM (matmul.h).
 *
 * Measured on a 2-core AMD EPYC (Zen 4, OpenBLAS 0.3.21, one thread):
 *  - a 256 KiB col beat 1, 2 and 4 MiB for every LeNet, cifar10_quick and ResNet-20
 *    layer (LeNet conv1 at B=128: 0.93 ms forward vs 1.3 ms with 1 MiB), presumably
 *    because OpenBLAS's own packed panels then still fit in L2 beside it;
 *  - a row stride of 1024 floats (ResNet-20's 32x32 stage, nb = 1) makes every row of
 *    col map to the same L1 sets: the three GEMMs of a 16-channel 3x3 layer took 325 us
 *    per image with ld = 1024 and about 200 us with ld = 1040. Hence padded_ld().
 */
#include <cblas.h>
#include <string.h>

#include "conv_amx.h"
#include "conv_crop.h"
#include "conv_depthwise.h"
#include "conv_direct.h"
#include "conv_winograd.h"
#include "cpu_isa.h"
#include "im2col.h"
#include "matmul.h"
#include "ops.h"
#include "parallel.h"

/* Target size of the column buffer in floats (256 KiB); overridable for tuning. */
#ifndef CONV_COL_BUDGET
#define CONV_COL_BUDGET ((size_t)1 << 16)
#endif

int conv2d_setup(conv2d_desc_t *d)
{
    d->OH = d->OW = 0;
    if (d->C <= 0 || d->H <= 0 || d->W <= 0 || d->OC <= 0 || d->KH <= 0 || d->KW <= 0 || d->sH <= 0 || d->sW <= 0 ||
        d->dH <= 0 || d->dW <= 0 || d->groups <= 0 || d->pad_t < 0 || d->pad_l < 0 || d->pad_b < 0 || d->pad_r < 0)
        return -1;
    if (d->C % d->groups != 0 || d->OC % d->groups != 0) return -1;
    /* extent of the dilated kernel, in long so that absurd sizes fail instead of wrapping */
    const long eh = (long)d->dH * (d->KH - 1) + 1, ew = (long)d->dW * (d->KW - 1) + 1;
    const long ph = (long)d->H + d->pad_t + d->pad_b, pw = (long)d->W + d->pad_l + d->pad_r;
    if (ph < eh || pw < ew || ph > INT32_MAX || pw > INT32_MAX) return -1;
    d->OH = (int)((ph - eh) / d->sH + 1);
    d->OW = (int)((pw - ew) / d->sW + 1);
    return 0;
}

int conv2d_init(conv2d_desc_t *d, int C, int H, int W, int OC, int KH, int KW, int stride, int pad)
{
    memset(d, 0, sizeof *d);
    *d = (conv2d_desc_t){.C = C,
                         .H = H,
                         .W = W,
                         .OC = OC,
                         .KH = KH,
                         .KW = KW,
                         .sH = stride,
                         .sW = stride,
                         .pad_t = pad,
                         .pad_l = pad,
                         .pad_b = pad,
                         .pad_r = pad,
                         .dH = 1,
                         .dW = 1,
                         .groups = 1};
    if (conv2d_setup(d) != 0) {
        memset(d, 0, sizeof *d);
        return -1;
    }
    return 0;
}

/* The direct depthwise kernel takes groups with one input channel each. */
static int use_depthwise(const conv2d_desc_t *d) { return d->groups > 1 && d->groups == d->C; }

/* d, or in c the convolution over d's taps that read its input (conv_crop.h): what runs.
 * torchvision's ResNet-18 on a 32x32 image, its three 3x3 layers on 1x1 planes: forward
 * 45.8 -> 2.0 ms, backward 102.0 -> 4.8 ms a step at fp32 (layer_profile --batch 32). */
static const conv2d_desc_t *runs_as(const conv2d_desc_t *d, conv_crop_t *c)
{
    return !use_depthwise(d) && conv_crop_plan(d, c) ? &c->d : d;
}

/* Images per chunk: as many as fit a budget of `budget` floats at per_image each, at
 * least one, and no more than B/T rounded up, so that T threads have a chunk each.
 * Non-decreasing in B, so the workspace sized for B covers every smaller batch. */
static int images_per_chunk(size_t budget, size_t per_image, int B, int T)
{
    size_t nb = budget / per_image;
    const size_t share = ((size_t)B + (size_t)T - 1) / (size_t)T;
    if (nb < 1) nb = 1;
    if (nb > share) nb = share;
    return (int)nb;
}

static int use_pointwise(const conv2d_desc_t *d);
static int pointwise_images(const conv2d_desc_t *d, int B);

/* A chunk's budget of col: base or, at bf16, the weights' size where that is larger (small
 * planes, many channels): the bf16 GEMM converts and packs the weights again for every
 * chunk, and on 2x2 planes of 256 channels a chunk of one image (2,304 x 8 floats of col
 * against 256 x 2,304 weights) spent most of its time packing them (torchvision's
 * ResNet-18 at 32x32: those three layers 12.4 -> 3.6 ms forward, 27.9 -> 7.5 backward a
 * step, layer_profile --precision bf16 --batch 32). At fp32 they take the direct kernel,
 * and OpenBLAS's GEMM elsewhere gained nothing from such chunks: with them at fp32 too,
 * that ResNet-18's step was a median 2.5% longer over 8 alternating rounds (ratios 0.91
 * to 1.08). The workspace is sized for the larger chunks at either precision (sizing), so
 * that it does not depend on the precision. */
static size_t col_budget(const conv2d_desc_t *d, size_t base, int sizing)
{
    const size_t weights = (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW;
    return (sizing || mm_precision() == MM_BF16) && weights > base ? weights : base;
}

static int chunk_images(const conv2d_desc_t *d, int B, int T, int sizing)
{
    if (use_pointwise(d)) return pointwise_images(d, B);
    return images_per_chunk(col_budget(d, CONV_COL_BUDGET, sizing), (size_t)d->C * d->KH * d->KW * d->OH * d->OW, B, T);
}

/* Row stride for an n-column matrix in the workspace: whole cache lines, and never a
 * multiple of 1 KiB, so that consecutive rows do not share L1 sets (see the top). */
static size_t padded_ld(size_t n)
{
    size_t ld = (n + 15) & ~(size_t)15;
    if (ld % 256 == 0) ld += 16;
    return ld;
}

static int use_wide(const conv2d_desc_t *d);
static size_t wide_workspace(const conv2d_desc_t *d, int B, int T);
static int direct_fits(const conv2d_desc_t *d);
static size_t direct_workspace(const conv2d_desc_t *d);
static int amx_fits(const conv2d_desc_t *d);
static size_t amx_workspace(const conv2d_desc_t *d);

/* ---- threads (parallel.h) -------------------------------------------------------------
 * A batch's chunks are split into T contiguous ranges, one per thread. Thread t works in
 * its own slice of the workspace, ws + t * slice: with T > 1 the slice starts with room
 * for the thread's weight gradient (thread 0 accumulates in dweight itself), then the
 * thread's col / tmp / padded planes as the layouts above and below describe. The partial
 * weight gradients are added to dweight in thread order once all have returned. */

static size_t dw_floats(const conv2d_desc_t *d) { return (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW; }

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* One thread's workspace (col, tmp, padded planes) for a batch of B over T threads. */
static size_t chunk_workspace(const conv2d_desc_t *d, int B, int T)
{
    size_t w;
    if (use_wide(d)) {
        w = wide_workspace(d, B, T);
    } else {
        size_t nb = (size_t)chunk_images(d, B, T, 1);
        size_t ld = padded_ld(nb * d->OH * d->OW);
        size_t K = (size_t)d->C * d->KH * d->KW;
        w = K * ld + (nb > 1 ? (size_t)d->OC * ld : 0);
    }
    const size_t dw = direct_fits(d) ? direct_workspace(d) : 0, amx = amx_fits(d) ? amx_workspace(d) : 0;
    w = w > dw ? w : dw;
    return w > amx ? w : amx;
}

static size_t slice_floats(const conv2d_desc_t *d, int B, int T)
{
    return round16(chunk_workspace(d, B, T)) + (T > 1 ? round16(dw_floats(d)) : 0);
}

size_t conv2d_workspace(const conv2d_desc_t *d, int B)
{
    if (B <= 0) return 0;
    conv_crop_t c;
    if (runs_as(d, &c) != d) return 2 * round16(conv_crop_weight_floats(&c)) + conv2d_workspace(&c.d, B);
    if (use_depthwise(d)) return dwc_fits(d) ? dwc_workspace(d) : 0;
    const int T = par_threads();
    return (size_t)T * slice_floats(d, B, T);
}

/* A forward or backward pass over a batch, as par_run hands it to each thread. */
typedef struct {
    const conv2d_desc_t *d;
    int B;
    int T;        /* the threads the slices are laid out for (par_threads) */
    int ran;      /* the threads that ran it (1 when par_run ran it on one) */
    size_t slice; /* slice_floats(d, B, T) */
    const float *inp, *weight, *bias, *dout;
    float *out, *dinp, *dweight, *dbias, *ws;
    par_fn pass; /* a backward's images (backward_part) */
    int set;     /* direct_backward: dinp = its input gradient, not += (conv2d_backward_set) */
    int wino;    /* direct_forward and _backward: by Winograd (use_wino) */
} conv_job_t;

/* Thread t's chunk workspace and where its weight gradient goes. */
static float *job_ws(const conv_job_t *j, int t)
{
    return j->ws + (size_t)t * j->slice + (j->T > 1 ? round16(dw_floats(j->d)) : 0);
}
static float *job_dw(const conv_job_t *j, int t) { return t == 0 ? j->dweight : j->ws + (size_t)t * j->slice; }

/* dweight += the other threads' partials, in thread order. */
static void add_partials(const conv_job_t *j)
{
    const size_t n = dw_floats(j->d);
    for (int t = 1; t < j->ran; t++) {
        const float *p = job_dw(j, t);
        for (size_t i = 0; i < n; i++) j->dweight[i] += p[i];
    }
}

static void job_run(conv_job_t *j, par_fn fn)
{
    j->T = par_threads();
    j->ran = 1;
    j->slice = slice_floats(j->d, j->B, j->T);
    par_run(fn, j);
}

/* Thread t's chunks [*c0, *c1) of B images in chunks of nb. */
static void my_chunks(int B, int nb, int t, int T, long *c0, long *c1)
{
    par_range(((long)B + nb - 1) / nb, t, T, c0, c1);
}

/* out[b] = tmp[:, b*P : (b+1)*P] + bias, for each image of the chunk. */
__attribute__((target_clones("avx2", "default"))) static void
scatter_chunk(int nb, int OC, size_t P, const float *restrict tmp, /* (OC, nb*P), rows ld apart */
              size_t ld, const float *restrict bias,               /* (OC) or NULL */
              float *restrict out)                                 /* (nb, OC, P) */
{
    for (int b = 0; b < nb; b++)
        for (int oc = 0; oc < OC; oc++) {
            const float *src = tmp + (size_t)oc * ld + (size_t)b * P;
            float *dst = out + ((size_t)b * OC + oc) * P;
            const float bv = bias ? bias[oc] : 0.0f;
            for (size_t p = 0; p < P; p++) dst[p] = src[p] + bv;
        }
}

/* tmp[:, b*P : (b+1)*P] = dout[b], the inverse of scatter_chunk without the bias. */
static void gather_chunk(int nb, int OC, size_t P, const float *dout, /* (nb, OC, P) */
                         float *tmp, size_t ld)                       /* (OC, nb*P), rows ld apart */
{
    for (int b = 0; b < nb; b++)
        for (int oc = 0; oc < OC; oc++)
            memcpy(tmp + (size_t)oc * ld + (size_t)b * P, dout + ((size_t)b * OC + oc) * P, P * sizeof(float));
}

/* Sum of x[0..n) in double with eight independent lanes: the lanes are explicit, so
 * gcc vectorises it without reassociating and the result is the same on every ISA. */
__attribute__((target_clones("avx2", "default"))) static double sum_f64(const float *restrict x, size_t n)
{
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)x[i + j];
    double s = 0.0;
    for (; i < n; i++) s += (double)x[i];
    for (int j = 0; j < 8; j++) s += acc[j];
    return s;
}

static void fill_bias(float *out /* (OC, P) */, int OC, size_t P, const float *bias /* (OC) */)
{
    for (int oc = 0; oc < OC; oc++)
        for (size_t p = 0; p < P; p++) out[(size_t)oc * P + p] = bias[oc];
}

/* ---- stride 1: lowering on the padded-width grid ----------------------------------------
 * With stride 1 the outputs of one image can be computed on a grid of OH rows of PW =
 * W + pad_l + pad_r columns instead of OH x OW: the columns ow >= OW are garbage and
 * dropped. On that grid the lowered row of tap (c, kh, kw) for one image is ONE contiguous
 * run of OH*PW floats of the (padded) input plane, starting at kh*dH*PW + kw*dW, instead of OH short
 * rows of OW with bounds logic: at LeNet sizes (OW = 10..28) the short-row copies were a
 * quarter of a training step. The price is (PW - OW) / OW more GEMM columns (40% for
 * LeNet's conv2, 6% for ResNet's 3x3 pad 1), far cheaper than the copies.
 * Backward gathers dout onto the same grid with zeros in the garbage columns, so they add
 * nothing to dW, and the column gradient there is zero too, so col2im can add whole runs.
 * A run may reach KW - 1 floats past the plane's end: the copy stops at the plane and
 * zero-fills (those positions are garbage columns), so nothing outside is ever read. */
static int has_pad(const conv2d_desc_t *d) { return d->pad_t > 0 || d->pad_l > 0 || d->pad_b > 0 || d->pad_r > 0; }

/* ---- pointwise on small planes ----------------------------------------------------------
 * A 1x1 convolution (stride 1, no pads, one group) is a GEMM whose N is the pixels of the
 * images it takes. On planes of at most POINTWISE_MAX_PIXELS (MobileNet's and EfficientNet's
 * 4x4 to 1x1 layers at 32x32 inputs) the direct kernels, one image at a time, are matrix-
 * vector products that stream the weights once per image (12 GFLOP/s on mobilenet_v2's
 * 1x1 layers); the lowered path below takes CONV_COL_BUDGET's worth of images per GEMM
 * (all 32 of a batch on the 1x1 planes), its im2col a copy of the chunk's planes. */
#ifndef POINTWISE_MAX_PIXELS
#define POINTWISE_MAX_PIXELS 16
#endif

static int use_pointwise(const conv2d_desc_t *d)
{
    return d->groups == 1 && d->KH == 1 && d->KW == 1 && d->sH == 1 && d->sW == 1 && !has_pad(d) &&
           d->OH * d->OW <= POINTWISE_MAX_PIXELS;
}

/* Images per chunk: POINTWISE_COLUMNS columns of the GEMM, or fewer where CONV_COL_BUDGET
 * ends first, whatever the threads, so that every image's GEMM has the same shape on any
 * number of threads and the forward and the input gradient do not depend on them (an
 * OpenBLAS tile at a matrix's edge rounds differently from one inside it). */
#ifndef POINTWISE_COLUMNS
#define POINTWISE_COLUMNS 256
#endif

static int pointwise_images(const conv2d_desc_t *d, int B)
{
    const size_t P = (size_t)d->OH * d->OW;
    size_t nb = (POINTWISE_COLUMNS + P - 1) / P;
    const size_t fit = CONV_COL_BUDGET / ((size_t)d->C * P);
    if (nb > fit) nb = fit;
    if (nb > (size_t)B) nb = (size_t)B;
    return nb < 1 ? 1 : (int)nb;
}

static int use_wide(const conv2d_desc_t *d) { return d->sH == 1 && d->sW == 1 && !use_pointwise(d); }

/* Column budget of the wide path, in floats. Smaller than CONV_COL_BUDGET: with the
 * copies cheap, keeping col + OpenBLAS's packed panels in L2 matters most. LeNet-5 on one
 * core: 64 KiB 17.5K samples/s, 128 KiB 16.9K, 256 KiB 16.3K, 1 MiB 13.1K (medians of
 * two runs each, noisy machine). */
#ifndef WIDE_COL_BUDGET
#define WIDE_COL_BUDGET ((size_t)1 << 14)
#endif

typedef struct {
    int PH, PW;   /* padded plane */
    size_t Pw;    /* grid positions per image: OH * PW */
    size_t plane; /* PH * PW */
    int nb;       /* images per chunk */
    size_t ld;    /* row stride of col and tmp */
} wide_t;

static void wide_geometry(const conv2d_desc_t *d, int B, int T, int sizing, wide_t *g)
{
    g->PH = d->H + d->pad_t + d->pad_b;
    g->PW = d->W + d->pad_l + d->pad_r;
    g->Pw = (size_t)d->OH * g->PW;
    g->plane = (size_t)g->PH * g->PW;
    g->nb = images_per_chunk(col_budget(d, WIDE_COL_BUDGET, sizing), (size_t)d->C * d->KH * d->KW * g->Pw, B, T);
    g->ld = padded_ld((size_t)g->nb * g->Pw);
}

/* Workspace: col (K, ld), tmp (OC, ld), and with padding a padded copy of the chunk's
 * images (nb * C planes), also used for the input gradient in backward. */
static size_t wide_workspace(const conv2d_desc_t *d, int B, int T)
{
    wide_t g;
    wide_geometry(d, B, T, 1, &g);
    size_t K = (size_t)d->C * d->KH * d->KW;
    size_t pad = has_pad(d) ? (size_t)g.nb * d->C * g.plane : 0;
    return (K + (size_t)d->OC) * g.ld + pad;
}

/* The rows of n planes of H x W into padded planes: plane i's row h starts at
 * i*pld + (h + top)*PW + left. Writes nothing else: a caller that fills the same layout
 * image after image zeroes the rest once (pad_copy zeroes it every time). */
static void pad_fill(size_t n, int H, int W, const float *restrict src, int PW, size_t pld, int top, int left,
                     float *restrict dst)
{
    for (size_t pl = 0; pl < n; pl++)
        for (int h = 0; h < H; h++)
            memcpy(dst + pl * pld + (size_t)(h + top) * PW + left, src + (pl * H + h) * W, (size_t)W * sizeof(float));
}

/* xp = the nb images' planes with pad zeros around them (has_pad only). */
/* dst = n planes of H x W with zeros around them, everything else of the n*pld zero. */
static void pad_copy(size_t n, int H, int W, const float *restrict src, int PW, size_t pld, int top, int left,
                     float *restrict dst)
{
    memset(dst, 0, n * pld * sizeof(float));
    pad_fill(n, H, W, src, PW, pld, top, left, dst);
}

static void pad_planes(const conv2d_desc_t *d, const wide_t *g, int nb, const float *restrict inp, float *restrict xp)
{
    pad_copy((size_t)nb * d->C, d->H, d->W, inp, g->PW, g->plane, d->pad_t, d->pad_l, xp);
}

static void im2col_wide(const conv2d_desc_t *d, const wide_t *g, int nb, const float *restrict xp, float *restrict col)
{
    const size_t Pw = g->Pw;
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < d->KH; kh++)
            for (int kw = 0; kw < d->KW; kw++) {
                float *row = col + ((size_t)(c * d->KH + kh) * d->KW + kw) * g->ld;
                const size_t off = (size_t)kh * d->dH * g->PW + (size_t)kw * d->dW;
                const size_t n = off + Pw <= g->plane ? Pw : g->plane - off;
                for (int b = 0; b < nb; b++) {
                    memcpy(row + (size_t)b * Pw, xp + ((size_t)b * d->C + c) * g->plane + off, n * sizeof(float));
                    if (n < Pw) memset(row + (size_t)b * Pw + n, 0, (Pw - n) * sizeof(float));
                }
            }
}

__attribute__((target_clones("avx2", "default"))) static void
col2im_wide_add(const conv2d_desc_t *d, const wide_t *g, int nb, const float *restrict col, float *restrict dxp)
{
    const size_t Pw = g->Pw;
    for (int c = 0; c < d->C; c++)
        for (int kh = 0; kh < d->KH; kh++)
            for (int kw = 0; kw < d->KW; kw++) {
                const float *row = col + ((size_t)(c * d->KH + kh) * d->KW + kw) * g->ld;
                const size_t off = (size_t)kh * d->dH * g->PW + (size_t)kw * d->dW;
                const size_t n = off + Pw <= g->plane ? Pw : g->plane - off;
                for (int b = 0; b < nb; b++) {
                    float *dst = dxp + ((size_t)b * d->C + c) * g->plane + off;
                    const float *src = row + (size_t)b * Pw;
                    for (size_t i = 0; i < n; i++) dst[i] += src[i];
                }
            }
}

/* dx += the column gradient col (K, nb grids) of nb images, through the padded planes xp
 * (nb * C planes of scratch) when the convolution pads. */
static void col2im_wide_to(const conv2d_desc_t *d, const wide_t *g, int nb, const float *col, float *xp, float *dx)
{
    if (!has_pad(d)) {
        /* the grid is the input plane itself */
        col2im_wide_add(d, g, nb, col, dx);
        return;
    }
    memset(xp, 0, (size_t)nb * d->C * g->plane * sizeof(float));
    col2im_wide_add(d, g, nb, col, xp);
    for (size_t pl = 0; pl < (size_t)nb * d->C; pl++)
        for (int h = 0; h < d->H; h++) {
            const float *sp = xp + pl * g->plane + (size_t)(h + d->pad_t) * g->PW + d->pad_l;
            float *dp = dx + (pl * d->H + h) * d->W;
            for (int w = 0; w < d->W; w++) dp[w] += sp[w];
        }
}

/* ---- direct (conv_direct.h) ---------------------------------------------------------
 * Where the tile kernels run (AVX2 and FMA), a convolution with one group skips im2col
 * and the GEMM library (bench/layer_profile, docs/PERFORMANCE.md):
 *  - forward: the kernel on the image's padded planes, then (grid tiles) the grid's valid
 *    columns plus the bias into out, or (channel-vector tiles) straight into out;
 *  - weight gradient: dout, gathered onto the same grid (zeros in its garbage columns) or
 *    transposed, against the same taps;
 *  - input gradient: a convolution of dout, padded by dH*(KH-1) - pad_t on top (likewise
 *    the other sides), with the flipped weights Wf[c][oc][kh][kw] = W[oc][c][KH-1-kh]
 *    [KW-1-kw], whose output is the input's plane. This replaces a K = OC GEMM writing a
 *    (C*KH*KW, grid) column gradient plus col2im by a K = OC*KH*KW product writing (C,
 *    grid). It needs pads no wider than the dilated kernel less one (every "same" or
 *    "valid" convolution), stride 1 and, for the grid tiles, an input plane of at least
 *    DIRECT_MIN_PIXELS values; otherwise a GEMM of dout on the grid and the wide path's
 *    col2im (stride 1), or of dout and the general col2im (other strides).
 * One image per step of the loops, so the forward and the input gradient do not depend
 * on the threads. */
#ifndef DIRECT_MIN_PIXELS
#define DIRECT_MIN_PIXELS 256
#endif
#ifndef DIRECT_MAX_M
#define DIRECT_MAX_M 16
#endif

/* Which direct kernels a convolution takes, by geometry alone (layer_profile, ResNet-20 and
 * LeNet-5, docs/PERFORMANCE.md): the channel-vector tiles where there are at least
 * DIRECT_CV_MIN_M output channels and 16 input channels (the input gradient's
 * rows) and, at stride 1, the pads stay within the kernel's reach: on ResNet-20's 16x16
 * and 8x8 layers they beat the grid tiles, which on 8x8 lose a third of their columns to
 * the grid, and on its two stride-2 layers im2col + OpenBLAS (forward 10.2 -> 7.3 ms,
 * backward 21.1 -> 18.8 ms, layer_profile, medians of 3 alternating runs); then, at
 * stride 1 only, the
 * grid tiles where the output plane
 * has at least DIRECT_MIN_PIXELS values or there are at most DIRECT_MAX_M output channels
 * (below that OpenBLAS's packed GEMM did better). The workspace is sized for the direct
 * and the wide path, so that it (and the catalog's memory figures) is the same on every
 * CPU. */
#ifndef DIRECT_CV_MIN_M
#define DIRECT_CV_MIN_M 32
#endif
enum { DIRECT_NONE, DIRECT_GRID, DIRECT_CV };

static int within_reach(const conv2d_desc_t *d)
{
    const int eh = d->dH * (d->KH - 1), ew = d->dW * (d->KW - 1);
    return d->pad_t <= eh && d->pad_b <= eh && d->pad_l <= ew && d->pad_r <= ew;
}

static int direct_kind(const conv2d_desc_t *d)
{
    if (d->groups != 1 || use_pointwise(d)) return DIRECT_NONE;
    if (d->OC >= DIRECT_CV_MIN_M && d->C >= 16 && (within_reach(d) || !use_wide(d))) return DIRECT_CV;
    if (!use_wide(d)) return DIRECT_NONE; /* the grid tiles are stride 1's */
    if (d->OH * d->OW >= DIRECT_MIN_PIXELS || d->OC <= DIRECT_MAX_M) return DIRECT_GRID;
    return DIRECT_NONE;
}

static int direct_fits(const conv2d_desc_t *d) { return direct_kind(d) != DIRECT_NONE; }

/* bf16 products (matmul.h) take the GEMM: the direct kernels multiply in float32 */
static int use_direct(const conv2d_desc_t *d)
{
    return direct_fits(d) && direct_isa() != DIRECT_NO_ISA && mm_precision() == MM_FP32;
}

/* ... and the direct input gradient, given direct_fits */
static int direct_dinp_fits(const conv2d_desc_t *d)
{
    return use_wide(d) && within_reach(d) && (direct_kind(d) == DIRECT_CV || d->H * d->W >= DIRECT_MIN_PIXELS);
}

/* ---- Winograd (conv_winograd.h) ----------------------------------------------------
 * Of the direct path's layers, the 3x3 ones at stride 1 with one pixel of padding and at
 * least WINO_MIN_CHANNELS channels in and out (ResNet-20's stride-1 convolutions but the
 * first, whose input has 3 channels) take F(4x4, 3x3) for the forward, the input gradient
 * (on the flipped filters) and the weight gradient (in the 6x6 domain). layer_profile,
 * ResNet-20, AVX2: docs/PERFORMANCE.md ("Winograd"). Below 16 channels the GEMM's blocks
 * would be half padding. */
#ifndef WINO_MIN_CHANNELS
#define WINO_MIN_CHANNELS 16
#endif

/* ... and planes on which its 36 products a 4x4 tile are fewer than the direct sums' 9 an
 * output: not 2x2 ones (one tile, four outputs). The direct kernel took torchvision's
 * ResNet-18's three on 2x2 planes (a 32x32 image) from 9.2 to 6.4 ms forward and 22.1 to
 * 14.0 ms backward a step (layer_profile --batch 32). */
static int wino_fits(const conv2d_desc_t *d)
{
    const long tiles = (long)((d->OH + 3) / 4) * ((d->OW + 3) / 4);
    return direct_fits(d) && d->KH == 3 && d->KW == 3 && d->sH == 1 && d->sW == 1 && d->dH == 1 && d->dW == 1 &&
           d->pad_t == 1 && d->pad_b == 1 && d->pad_l == 1 && d->pad_r == 1 && d->C >= WINO_MIN_CHANNELS &&
           d->OC >= WINO_MIN_CHANNELS && 4 * tiles < (long)d->OH * d->OW;
}

/* At bf16 products on a CPU without the tiles, Winograd layers take F(4x4, 3x3) too, on
 * operands rounded to bf16 as they are loaded (wino_geom_t's bf16): mixed precision's
 * products of bf16 operands, the transforms and sums in float32. The portable path: all
 * of fp32's (its other way, im2col and the portable bf16 GEMM, ran ResNet-20's bf16 step
 * at 382 ms against fp32's 133 on a Zen 5). AVX512-BF16: where the filters' transform is
 * small (C x K at most WINO_BF16_MAX_CK) and either vdpbf16ps' 32-position blocks are a
 * third padding (planes of at most WINO_BF16_MAX_PIXELS outputs) or both sides have
 * WINO_BF16_WIDE_CHANNELS channels on planes of at most WINO_BF16_WIDE_PIXELS: ResNet-20's
 * 64x8x8 layers 33.1 -> 21.0 ms a step at batch 128; its 32x16x16 ones, since Winograd's
 * products take two vectors of output channels (3e08d5ab), 26.7 -> 24.7 ms (they had lost
 * before, 28.6 against 29.4). 16 channels keep the direct kernels (ResNet-20's 16x32x32
 * layers: 38.7 ms direct, 47.4 by fp32's Winograd, one run each), as do 4x4 planes of 128 (7.4 against
 * 7.7, before 3e08d5ab). The tiles keep every layer. docs/PERFORMANCE.md has the rest. */
#ifndef WINO_BF16_MAX_PIXELS
#define WINO_BF16_MAX_PIXELS 64
#endif
#ifndef WINO_BF16_WIDE_PIXELS
#define WINO_BF16_WIDE_PIXELS 256
#endif
#ifndef WINO_BF16_WIDE_CHANNELS
#define WINO_BF16_WIDE_CHANNELS 32
#endif
#ifndef WINO_BF16_MAX_CK
#define WINO_BF16_MAX_CK (64 * 64)
#endif

static int wino_bf16(const conv2d_desc_t *d)
{
    if (mm_precision() != MM_BF16 || !wino_fits(d) || direct_isa() == DIRECT_NO_ISA || conv_amx_twin_forced()) return 0;
    if (cpu_isa() == CPU_ISA_PORTABLE) return 1;
    const int pixels = d->OH * d->OW, wide = d->C >= WINO_BF16_WIDE_CHANNELS && d->OC >= WINO_BF16_WIDE_CHANNELS;
    return cpu_isa() == CPU_ISA_AVX512_BF16 && (long)d->C * d->OC <= WINO_BF16_MAX_CK &&
           (pixels <= WINO_BF16_MAX_PIXELS || (wide && pixels <= WINO_BF16_WIDE_PIXELS));
}

/* ... and, for WINO_BIG_CK channel pairs or more, batches of WINO_BIG_TILES tiles or more:
 * a small batch's products do not pay back the 36 C x K filters' transform. torchvision's
 * ResNet-18's 512-channel layers, fp32: 122 ms by Winograd against 73 direct at 112x112,
 * batch 16 (16 tiles); the CIFAR ResNet-18's at batch 64 (64 tiles), 216 against 251. */
#ifndef WINO_BIG_CK
#define WINO_BIG_CK (512 * 512)
#endif
#ifndef WINO_BIG_TILES
#define WINO_BIG_TILES 64
#endif

static int wino_pays(const conv2d_desc_t *d, int B)
{
    const long tiles = (long)((d->OH + 3) / 4) * ((d->OW + 3) / 4);
    return (long)d->C * d->OC < WINO_BIG_CK || (long)B * tiles >= WINO_BIG_TILES;
}

/* wino_bf16's layers on AVX512-BF16 leave the vectors whatever the batch (use_amx) */
_Static_assert(WINO_BF16_MAX_CK < WINO_BIG_CK, "every wino_bf16 layer on the vectors pays at any batch");

static int use_wino(const conv2d_desc_t *d, int B)
{
    return wino_fits(d) && wino_pays(d, B) && (use_direct(d) || wino_bf16(d));
}

int conv2d_winograd(const conv2d_desc_t *d, int B)
{
    conv_crop_t c;
    return use_wino(runs_as(d, &c), B);
}

/* The geometry of the forward (C -> OC) or of the input gradient (OC -> C). */
static void wino_plan(const conv2d_desc_t *d, int backward, wino_geom_t *g)
{
    wino_geom(backward ? d->OC : d->C, backward ? d->C : d->OC, d->H, d->W, wino_images(d->H, d->W), g);
    g->bf16 = mm_precision() == MM_BF16; /* use_wino: wino_bf16's layers */
}

/* A thread's floats: the forward's U and scratch; the backward's dU and weight-gradient
 * scratch, then the input gradient's U and scratch (wino_backward). */
static size_t wino_workspace(const conv2d_desc_t *d)
{
    wino_geom_t f, b;
    wino_plan(d, 0, &f);
    wino_plan(d, 1, &b);
    const size_t fwd = round16(wino_weight_floats(&f)) + wino_scratch_floats(&f);
    const size_t bwd = round16(wino_weight_floats(&f)) + round16(wino_wgrad_scratch_floats(&f)) +
                       round16(wino_weight_floats(&b)) + wino_scratch_floats(&b);
    return fwd > bwd ? fwd : bwd;
}

/* The weight gradient's kernel: the channel-vector one also for grid-tile layers whose
 * output plane is small (LeNet-5's conv2: a grid row of 144 columns is 18 AVX2 vectors
 * per reduction, and the grid tile's lane sums then cost as much as the FMAs). */
static int direct_wgrad_kind(const conv2d_desc_t *d)
{
    return direct_kind(d) == DIRECT_CV || d->OH * d->OW < DIRECT_MIN_PIXELS ? DIRECT_CV : DIRECT_GRID;
}

/* Images the channel-vector weight gradient takes a call (direct_wgrad_cv), and a strided
 * layer's input-gradient GEMM: enough for DIRECT_WGRAD_POSITIONS output positions, at most
 * DIRECT_WGRAD_IMAGES, so that a small plane's dw, read and written once a call, is not
 * streamed once an image, nor W^T packed once an image (an imported ResNet-18's 256 -> 512
 * stride-2 layer, 4x4 outputs, a 4.7 MB dw: backward 120-135 -> 68-73 ms at batch 64;
 * 128, 256 and 512 positions tried, 256 kept: docs/PERFORMANCE.md). One for the grid
 * kernel, and for planes of 256 outputs or more. */
#ifndef DIRECT_WGRAD_POSITIONS
#define DIRECT_WGRAD_POSITIONS 256
#endif
#define DIRECT_WGRAD_IMAGES 32
static int wgrad_images(const conv2d_desc_t *d)
{
    const int P = d->OH * d->OW, n = (DIRECT_WGRAD_POSITIONS + P - 1) / P;
    return direct_wgrad_kind(d) != DIRECT_CV ? 1 : n < DIRECT_WGRAD_IMAGES ? n : DIRECT_WGRAD_IMAGES;
}

/* The rows of A a kernel's packed blocks hold. */
static int direct_block(int kind) { return kind == DIRECT_CV ? direct_cv_rows() : DIRECT_MR; }

typedef struct {
    direct_geom_t g;
    int top, left;  /* where the source planes start in their padded planes */
    int rows, cols; /* the output planes: grid rows, valid columns of each */
    int SH, SW;     /* the source planes */
    size_t ldy;     /* row stride of the output grid */
} direct_plan_t;

/* ... given the source planes, their padded height PH and the strides: the grid and the
 * plane stride, which holds both the padded plane and the last tap's reach */
static void direct_finish(const conv2d_desc_t *d, int PH, int sH, int sW, direct_plan_t *p)
{
    p->g.KH = d->KH, p->g.KW = d->KW, p->g.dH = d->dH, p->g.dW = d->dW, p->g.sH = sH, p->g.sW = sW;
    const size_t cells = ((size_t)(p->rows - 1) * sH + 1) * p->g.PW;
    p->g.N = (int)((cells + DIRECT_NR_MAX - 1) / DIRECT_NR_MAX * DIRECT_NR_MAX);
    const size_t reach = (size_t)(d->KH - 1) * d->dH * p->g.PW + (size_t)(d->KW - 1) * d->dW + (size_t)p->g.N;
    const size_t plane = (size_t)PH * p->g.PW;
    p->g.pld = round16(reach > plane ? reach : plane);
    p->ldy = padded_ld((size_t)p->g.N);
}

/* forward: the input planes padded as the descriptor says */
static void direct_fwd_plan(const conv2d_desc_t *d, direct_plan_t *p)
{
    p->g.C = d->C, p->g.PW = d->W + d->pad_l + d->pad_r;
    p->top = d->pad_t, p->left = d->pad_l, p->rows = d->OH, p->cols = d->OW, p->SH = d->H, p->SW = d->W;
    direct_finish(d, d->H + d->pad_t + d->pad_b, d->sH, d->sW, p);
}

/* input gradient: dout's planes padded to the full reach of the flipped kernel */
static void direct_bwd_plan(const conv2d_desc_t *d, direct_plan_t *p)
{
    const int eh = d->dH * (d->KH - 1), ew = d->dW * (d->KW - 1);
    p->g.C = d->OC, p->g.PW = d->OW + 2 * ew - d->pad_l - d->pad_r;
    p->top = eh - d->pad_t, p->left = ew - d->pad_l, p->rows = d->H, p->cols = d->W, p->SH = d->OH, p->SW = d->OW;
    direct_finish(d, d->OH + 2 * eh - d->pad_t - d->pad_b, 1, 1, p);
}

/* packed weights, the padded planes, the output grid (the grid kernel's only) */
static size_t direct_need(const direct_plan_t *p, int M, int kind)
{
    const size_t K = (size_t)p->g.C * p->g.KH * p->g.KW;
    const int mr = kind == DIRECT_CV ? DIRECT_CV_M_MAX : DIRECT_MR; /* the most either ISA packs */
    return round16(direct_packed_floats(M, (int)K, mr)) + (size_t)p->g.C * p->g.pld +
           (kind == DIRECT_GRID ? (size_t)M * p->ldy : 0);
}

/* dout as the weight gradient reads it: on the forward's grid (grid kernel), or
 * transposed, (OH*OW, OC rounded up to direct_cv_rows()) (channel-vector kernel; room
 * for the most either ISA rounds to). */
static size_t dout_floats(const conv2d_desc_t *d, const direct_plan_t *f, int kind)
{
    if (kind == DIRECT_GRID) return (size_t)d->OC * f->ldy;
    return (size_t)d->OH * d->OW * (size_t)((d->OC + DIRECT_CV_M_MAX - 1) / DIRECT_CV_M_MAX * DIRECT_CV_M_MAX);
}

/* One thread's floats: the forward's (packed weights, padded input, output grid), or the
 * backward's: the padded input and dout as the weight gradient reads it (dout_floats),
 * then for the input gradient either the unpacked flipped weights and its own
 * direct_need, or the wide path's workspace for one image (col2im_wide_to). */
static size_t direct_workspace(const conv2d_desc_t *d)
{
    direct_plan_t f, b;
    direct_fwd_plan(d, &f);
    direct_bwd_plan(d, &b);
    const int kind = direct_kind(d);
    const size_t fwd = direct_need(&f, d->OC, kind);
    const size_t K = (size_t)d->C * d->KH * d->KW;
    const size_t dx = direct_dinp_fits(d) ? round16((size_t)d->C * d->OC * d->KH * d->KW) + direct_need(&b, d->C, kind)
                      : use_wide(d)       ? wide_workspace(d, 1, 1)
                                          : K * padded_ld((size_t)wgrad_images(d) * d->OH * d->OW);
    const size_t bwd = (size_t)wgrad_images(d) * ((size_t)d->C * f.g.pld + dout_floats(d, &f, direct_wgrad_kind(d))) +
                       dx;
    const size_t w = fwd > bwd ? fwd : bwd, wino = wino_fits(d) ? wino_workspace(d) : 0;
    return w > wino ? w : wino;
}

/* One image: y = Ap x (src padded into xp, whose pads the caller zeroed once); out = y's
 * valid part (+ bias), or += it. */
static void direct_image(const direct_plan_t *p, int kind, int M, const float *ap, const float *src, float *xp,
                         float *y, const float *bias, int accumulate, float *out)
{
    pad_fill((size_t)p->g.C, p->SH, p->SW, src, p->g.PW, p->g.pld, p->top, p->left, xp);
    if (kind == DIRECT_CV) {
        direct_conv_cv(M, ap, &p->g, p->rows, p->cols, xp, bias, accumulate, out);
        return;
    }
    direct_gemm(M, ap, &p->g, xp, y, p->ldy);
    conv_grid_to_planes(M, p->rows, p->cols, p->g.PW, y, p->ldy, bias, accumulate, out);
}

/* A direct pass's start in thread t: the job, and the forward's plan in *f. */
static conv_job_t *direct_job(void *arg, int t, int T, direct_plan_t *f)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    direct_fwd_plan(j->d, f);
    return j;
}

/* Where the transformed filters of a Winograd pass lie: in thread 0's slice, where that
 * thread's own scratch would put them (wino_forward's U, wino_backward's Uf); the other
 * threads read them there. */
static float *wino_filters_at(const conv_job_t *j, int backward)
{
    wino_geom_t gf;
    wino_plan(j->d, 0, &gf);
    float *ws0 = job_ws(j, 0);
    return backward ? ws0 + round16(wino_weight_floats(&gf)) + round16(wino_wgrad_scratch_floats(&gf)) : ws0;
}

/* A pass's transformed filters, once for all threads, each transforming a range of output
 * channels (in double: per thread and call they were 4% of a ResNet-20 step on one thread,
 * and as much again on each thread beside it). Run before the pass's own par_run; the
 * forward's from the weights, the input gradient's (j->dout set) from them flipped. */
static void wino_filters(void *arg, int t, int T)
{
    const conv_job_t *j = arg;
    const int backward = j->dout != NULL;
    wino_geom_t g;
    wino_plan(j->d, backward, &g);
    long k0, k1;
    par_range(g.Kp / 16, t, T, &k0, &k1); /* whole cache lines of each row of U */
    wino_weights(&g, j->weight, backward, (int)k0 * 16, (int)k1 * 16, wino_filters_at(j, backward));
}

/* The forward by Winograd: each thread takes its chunks of g.nb images (the filters are
 * wino_filters'). */
static void wino_forward(conv_job_t *j, int t, int T)
{
    const conv2d_desc_t *d = j->d;
    wino_geom_t g;
    wino_plan(d, 0, &g);
    const float *U = wino_filters_at(j, 0);
    float *s = job_ws(j, t) + round16(wino_weight_floats(&g));
    wino_begin(&g, s);
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    long c0, c1;
    my_chunks(j->B, g.nb, t, T, &c0, &c1);
    for (long c = c0; c < c1; c++) {
        const long b = c * g.nb;
        const int n = j->B - b < g.nb ? (int)(j->B - b) : g.nb;
        wino_conv(&g, n, U, j->inp + (size_t)b * in_img, j->bias, 0, j->out + (size_t)b * out_img, s);
    }
}

static void direct_forward(void *arg, int t, int T)
{
    direct_plan_t p;
    conv_job_t *j = direct_job(arg, t, T, &p);
    const conv2d_desc_t *d = j->d;
    if (j->wino) {
        wino_forward(j, t, T);
        return;
    }
    const int K = d->C * d->KH * d->KW, kind = direct_kind(d), mr = direct_block(kind);
    float *ap = job_ws(j, t), *xp = ap + round16(direct_packed_floats(d->OC, K, mr)), *y = xp + (size_t)d->C * p.g.pld;
    direct_pack(d->OC, K, j->weight, (size_t)K, mr, ap);
    memset(xp, 0, (size_t)d->C * p.g.pld * sizeof(float)); /* the pads, for every image */
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    long b0, b1;
    my_chunks(j->B, 1, t, T, &b0, &b1);
    for (long b = b0; b < b1; b++)
        direct_image(&p, kind, d->OC, ap, j->inp + (size_t)b * in_img, xp, y, j->bias, 0, j->out + (size_t)b * out_img);
}

/* The input gradient's state in one thread: plan, packed flipped weights, scratch. */
typedef struct {
    direct_plan_t p;
    float *ap, *xp, *y;
} direct_dinp_t;

/* Lays out the input gradient's scratch from wf on and packs the flipped weights. */
static void direct_dinp_begin(const conv2d_desc_t *d, int kind, const float *weight, float *wf, direct_dinp_t *s)
{
    const int KK = d->KH * d->KW, K = d->OC * KK, mr = direct_block(kind);
    direct_bwd_plan(d, &s->p);
    s->ap = wf + round16((size_t)d->C * K);
    s->xp = s->ap + round16(direct_packed_floats(d->C, K, mr));
    s->y = s->xp + (size_t)d->OC * s->p.g.pld;
    for (int c = 0; c < d->C; c++)
        for (int oc = 0; oc < d->OC; oc++)
            for (int k = 0; k < KK; k++)
                wf[((size_t)c * d->OC + oc) * KK + k] = weight[((size_t)oc * d->C + c) * KK + (KK - 1 - k)];
    direct_pack(d->C, K, wf, (size_t)K, mr, s->ap);
    memset(s->xp, 0, (size_t)d->OC * s->p.g.pld * sizeof(float)); /* dout's pads, for every image */
}

/* The backward by Winograd, chunk by chunk of g.nb images: the weight gradient summed in
 * the 6x6 domain over the thread's chunks and carried back once at the end, and each
 * chunk's input gradient from the flipped filters. */
static void wino_backward(conv_job_t *j, int t, int T)
{
    const conv2d_desc_t *d = j->d;
    wino_geom_t gf, gb;
    wino_plan(d, 0, &gf);
    wino_plan(d, 1, &gb);
    float *dweight = job_dw(j, t);
    long c0, c1;
    my_chunks(j->B, gf.nb, t, T, &c0, &c1);
    if (c0 == c1) {
        memset(dweight, 0, dw_floats(d) * sizeof(float));
        return;
    }
    float *dU = job_ws(j, t), *ws = dU + round16(wino_weight_floats(&gf));
    float *bs = ws + round16(wino_wgrad_scratch_floats(&gf)) + round16(wino_weight_floats(&gb));
    const float *Uf = wino_filters_at(j, 1); /* wino_filters', where j->dinp is set */
    wino_wgrad_begin(&gf, dU, ws);
    wino_begin(&gb, bs);
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    for (long c = c0; c < c1; c++) {
        const long b = c * gf.nb;
        const int n = j->B - b < gf.nb ? (int)(j->B - b) : gf.nb;
        /* dout copied channel-last once, for both gradients */
        wino_load(&gb, n, j->dout + (size_t)b * out_img, bs);
        wino_wgrad(&gf, n, j->inp + (size_t)b * in_img, &gb, bs, dU, ws);
        if (j->dinp) wino_conv_loaded(&gb, n, Uf, NULL, !j->set, j->dinp + (size_t)b * in_img, bs);
    }
    wino_wgrad_end(&gf, dU, dweight);
}

/* Per image: dout as the weight gradient's kernel reads it (on the forward's grid, or
 * transposed), the weight gradient from it and the padded input (the first image of the
 * thread writes, the others add), then the input gradient. Winograd layers go to
 * wino_backward instead. */
static void direct_backward(void *arg, int t, int T)
{
    direct_plan_t f;
    conv_job_t *j = direct_job(arg, t, T, &f);
    const conv2d_desc_t *d = j->d;
    if (j->wino) {
        wino_backward(j, t, T);
        return;
    }
    const size_t n = round16((size_t)f.rows * f.g.PW); /* <= f.g.N, a multiple of 48 */
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    const int nw = wgrad_images(d); /* images a weight-gradient call takes */
    const int direct_dx = direct_dinp_fits(d), kind = direct_kind(d), wkind = direct_wgrad_kind(d);
    const size_t ximg = (size_t)d->C * f.g.pld, gimg = dout_floats(d, &f, wkind);
    float *dweight = job_dw(j, t), *xp = job_ws(j, t), *gy = xp + (size_t)nw * ximg;
    long b0, b1;
    my_chunks(j->B, 1, t, T, &b0, &b1);
    if (b0 == b1) {
        memset(dweight, 0, dw_floats(d) * sizeof(float));
        return;
    }
    const int P = d->OH * d->OW, MV = (d->OC + direct_cv_rows() - 1) / direct_cv_rows() * direct_cv_rows();
    float *rest = gy + (size_t)nw * gimg;
    direct_dinp_t dd;
    const int K = d->C * d->KH * d->KW;
    /* without direct_dx, stride 1: one image's column gradient on the grid (wide path) */
    wide_t wg;
    wide_geometry(d, 1, 1, 0, &wg);
    float *gcol = rest, *gdy = gcol + (size_t)K * wg.ld, *gxp = gdy + (size_t)d->OC * wg.ld;
    const size_t ldc = padded_ld((size_t)nw * P); /* without direct_dx, other strides: a group's columns */
    if (j->dinp && direct_dx) direct_dinp_begin(d, kind, j->weight, rest, &dd);
    memset(xp, 0, (size_t)nw * ximg * sizeof(float));                         /* the input's pads, for every image */
    if (wkind == DIRECT_CV) memset(gy, 0, (size_t)nw * gimg * sizeof(float)); /* the padding columns */
    for (long g0 = b0; g0 < b1; g0 += nw) {
        const int ng = b1 - g0 < nw ? (int)(b1 - g0) : nw;
        for (int i = 0; i < ng; i++)
            pad_fill((size_t)d->C, d->H, d->W, j->inp + (size_t)(g0 + i) * in_img, f.g.PW, f.g.pld, f.top, f.left,
                     xp + (size_t)i * ximg);
        if (wkind == DIRECT_CV) {
            for (int i = 0; i < ng; i++) {
                const float *dy = j->dout + (size_t)(g0 + i) * out_img;
                float *gi = gy + (size_t)i * P * MV; /* the images' positions one after another */
                for (int oc = 0; oc < d->OC; oc++)
                    for (int q = 0; q < P; q++) gi[(size_t)q * MV + oc] = dy[(size_t)oc * P + q];
            }
            direct_wgrad_cv(d->OC, gy, &f.g, f.rows, f.cols, ng, ximg, xp, dweight, g0 != b0);
        } else {
            conv_planes_to_grid(d->OC, f.rows, f.cols, f.g.PW, j->dout + (size_t)g0 * out_img, gy, f.ldy, n);
            direct_gemm_wgrad(d->OC, gy, f.ldy, &f.g, (int)n, xp, dweight, g0 != b0);
        }
        if (!j->dinp) continue;
        if (!direct_dx && !use_wide(d)) {
            /* strided: col (K, ng*P) = W^T x the group's dout, from its transposed copy gy
             * (one GEMM a group: OpenBLAS packs W^T once, not once an image), then the
             * general path's col2im */
            mm_sgemm(MM_T, MM_T, K, ng * P, d->OC, 1.0f, j->weight, K, gy, MV, 0.0f, rest, (int)ldc);
            col2im_chunk_add(d, ng, rest, ldc, j->dinp + (size_t)g0 * in_img);
            continue;
        }
        for (long b = g0; b < g0 + ng; b++) {
            const float *dy = j->dout + (size_t)b * out_img;
            float *dx = j->dinp + (size_t)b * in_img;
            if (direct_dx) {
                direct_image(&dd.p, kind, d->C, dd.ap, dy, dd.xp, dd.y, NULL, !j->set, dx);
                continue;
            }
            /* col (K, grid) = W^T x dout on the grid (zeros in its garbage columns), then
             * the wide path's col2im: one run of the grid per tap instead of OH short rows */
            conv_planes_to_grid(d->OC, d->OH, d->OW, wg.PW, dy, gdy, wg.ld, wg.Pw);
            mm_sgemm(MM_T, MM_N, K, (int)wg.Pw, d->OC, 1.0f, j->weight, K, gdy, (int)wg.ld, 0.0f, gcol, (int)wg.ld);
            col2im_wide_to(d, &wg, 1, gcol, gxp, dx);
        }
    }
}

/* ---- groups: one GEMM per group on its block of col's rows ----------------------------
 * col's K rows are channel-major, so group g's input channels are the contiguous block of
 * Kg = C/groups*KH*KW rows starting at g*Kg, and its filters the OCg = OC/groups rows of
 * the weight starting at g*OCg (each Kg long). With one group these are exactly the single
 * GEMM calls of a plain convolution. */

/* y (OC, N), rows ldy apart: y_g = W_g x col_g (+ beta * y_g). */
static void gemm_fwd_groups(const conv2d_desc_t *d, int N, const float *weight, const float *col, int ldc, float beta,
                            float *y, int ldy)
{
    const int G = d->groups, OCg = d->OC / G, Kg = d->C / G * d->KH * d->KW;
    for (int g = 0; g < G; g++)
        mm_sgemm(MM_N, MM_N, OCg, N, Kg, 1.0f, weight + (size_t)g * OCg * Kg, Kg, col + (size_t)g * Kg * ldc, ldc, beta,
                 y + (size_t)g * OCg * ldy, ldy);
}

/* dW_g (OCg, Kg) = (wbeta = 0) or += (wbeta = 1) gr_g x col_g^T; then, with dcol, col_g =
 * W_g^T x gr_g (the column gradient). Group by group: the column gradient of group g
 * overwrites only the rows of col that no later group reads. */
static void gemm_bwd_groups(const conv2d_desc_t *d, int N, const float *weight, const float *gr, int ldg, float *col,
                            int ldc, float wbeta, float *dweight, int dcol)
{
    const int G = d->groups, OCg = d->OC / G, Kg = d->C / G * d->KH * d->KW;
    for (int g = 0; g < G; g++) {
        const float *gg = gr + (size_t)g * OCg * ldg, *wg = weight + (size_t)g * OCg * Kg;
        float *cg = col + (size_t)g * Kg * ldc;
        mm_sgemm(MM_N, MM_T, OCg, Kg, N, 1.0f, gg, ldg, cg, ldc, wbeta, dweight + (size_t)g * OCg * Kg, Kg);
        if (dcol) mm_sgemm(MM_T, MM_N, Kg, N, OCg, 1.0f, wg, Kg, gg, ldg, 0.0f, cg, ldc);
    }
}

static void wide_forward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    const int B = j->B;
    const float *inp = j->inp, *weight = j->weight, *bias = j->bias;
    float *out = j->out;
    wide_t g;
    wide_geometry(d, B, j->T, 0, &g);
    const int OC = d->OC, K = d->C * d->KH * d->KW, OW = d->OW, OH = d->OH;
    const size_t in_img = (size_t)d->C * d->H * d->W, P = (size_t)OH * OW;
    float *col = job_ws(j, t), *tmp = col + (size_t)K * g.ld, *xp = tmp + (size_t)OC * g.ld;
    long c0, c1;
    my_chunks(B, g.nb, t, T, &c0, &c1);
    for (long ci = c0; ci < c1; ci++) {
        const int b0 = (int)(ci * g.nb);
        const int nb = B - b0 < g.nb ? B - b0 : g.nb;
        const float *src = inp + (size_t)b0 * in_img;
        if (has_pad(d)) {
            pad_planes(d, &g, nb, src, xp);
            src = xp;
        }
        im2col_wide(d, &g, nb, src, col);
        gemm_fwd_groups(d, (int)(nb * g.Pw), weight, col, (int)g.ld, 0.0f, tmp, (int)g.ld);
        for (int b = 0; b < nb; b++)
            conv_grid_to_planes(OC, OH, OW, g.PW, tmp + (size_t)b * g.Pw, g.ld, bias, 0,
                                out + (size_t)(b0 + b) * OC * P);
    }
}

static void wide_backward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    const int B = j->B;
    const float *inp = j->inp, *weight = j->weight, *dout = j->dout;
    float *dinp = j->dinp, *dweight = job_dw(j, t);
    wide_t g;
    wide_geometry(d, B, j->T, 0, &g);
    const int OC = d->OC, K = d->C * d->KH * d->KW, OW = d->OW, OH = d->OH;
    const size_t in_img = (size_t)d->C * d->H * d->W, P = (size_t)OH * OW;
    float *col = job_ws(j, t), *tmp = col + (size_t)K * g.ld, *xp = tmp + (size_t)OC * g.ld;
    long c0, c1;
    my_chunks(B, g.nb, t, T, &c0, &c1);
    if (c0 == c1) memset(dweight, 0, dw_floats(d) * sizeof(float));

    for (long ci = c0; ci < c1; ci++) {
        const int b0 = (int)(ci * g.nb);
        const int nb = B - b0 < g.nb ? B - b0 : g.nb;
        const int N = (int)(nb * g.Pw);
        for (int b = 0; b < nb; b++)
            conv_planes_to_grid(OC, OH, OW, g.PW, dout + (size_t)(b0 + b) * OC * P, tmp + (size_t)b * g.Pw, g.ld, g.Pw);
        const float *src = inp + (size_t)b0 * in_img;
        if (has_pad(d)) {
            pad_planes(d, &g, nb, src, xp);
            src = xp;
        }
        im2col_wide(d, &g, nb, src, col);
        gemm_bwd_groups(d, N, weight, tmp, (int)g.ld, col, (int)g.ld, ci == c0 ? 0.0f : 1.0f, dweight, dinp != NULL);
        if (!dinp) continue;
        col2im_wide_to(d, &g, nb, col, xp, dinp + (size_t)b0 * in_img);
    }
}

/* ---- AMX (conv_amx.h) ------------------------------------------------------------------
 * At bf16 on the AMX path (the tiles) or the AVX512-BF16 path (the same operands on
 * vdpbf16ps: ResNet-20's bf16 step 228 -> 155 ms on a Zen 5, whose im2col + GEMM had made
 * it slower than fp32's 162 ms; layer_profile --precision bf16 resnet20), a one-group
 * convolution of dilation 1 and stride 1, or 2 with each side of the kernel at least 2,
 * whose pads stay within the kernel's reach (so that its input gradient is a convolution of
 * dout, by phases at stride 2) runs straight from its padded planes: im2col + the GEMM
 * copied each input value KH*KW times as float32 and again as bf16 while packing, most of
 * a ResNet-20 step's convolution time (layer_profile; docs/PERFORMANCE.md); its two
 * stride-2 layers, on the planes' phases, 15.3-16.5 -> 9.1-9.2 ms a step on the Zen 5
 * (forward and backward, layer_profile --precision bf16 resnet20). Each image is one
 * thread's.
 * Not for 1x1 kernels, which im2col copies only once and whose GEMM takes many images at
 * a time (mobilenet_v2's 1x1 layers ran 1.5-10x slower on the tiles, an image at a time,
 * the weights streamed once per image: layer_profile, batch 32), nor for output planes
 * under AMX_MIN_PIXELS values, whose grid would be mostly the 32-position blocks'
 * padding (ResNet-20's 8x8 planes, 64 outputs on a grid of 96, ran 2x faster: forward
 * 13.8 -> 6.8 ms a step for the five, layer_profile --precision bf16 resnet20). */
#ifndef AMX_MIN_PIXELS
#define AMX_MIN_PIXELS 64
#endif

static int amx_fits(const conv2d_desc_t *d)
{
    const int s = d->sH;
    return d->groups == 1 && (s == 1 || s == 2) && d->sW == s && d->KH >= s && d->KW >= s && d->dH == 1 && d->dW == 1 &&
           within_reach(d) && d->KH * d->KW > 1 && d->OH * d->OW >= AMX_MIN_PIXELS;
}

/* On vectors, not for inputs of VECTORS_MIN_C channels or fewer: padded to 16, a first
 * layer's 3 channels ran ResNet-20's conv1 slower than im2col + the GEMM (forward 2.0
 * against 1.2 ms, backward 2.4 against 1.4 a step on a Zen 5; layer_profile --precision
 * bf16). */
#define VECTORS_MIN_C 8

static int use_amx(const conv2d_desc_t *d)
{
    if (!amx_fits(d) || mm_precision() != MM_BF16 || wino_bf16(d)) return 0;
    return conv_amx_twin_forced() || cpu_isa() == CPU_ISA_AMX ||
           (cpu_isa() == CPU_ISA_AVX512_BF16 && d->C > VECTORS_MIN_C);
}

int conv2d_amx(const conv2d_desc_t *d)
{
    conv_crop_t c;
    return use_amx(runs_as(d, &c));
}

static conv_amx_unit_t amx_unit(void)
{
    if (conv_amx_twin_forced()) return CONV_AMX_TWIN;
    return cpu_isa() == CPU_ISA_AMX ? CONV_AMX_TILES : CONV_AMX_VECTORS;
}

/* forward: the input's planes padded as the descriptor says (at stride 2 as their phases) */
static void amx_fwd_geom(const conv2d_desc_t *d, conv_amx_geom_t *g)
{
    const int s = d->sH, PH = d->H + d->pad_t + d->pad_b, PW = d->W + d->pad_l + d->pad_r;
    *g = (conv_amx_geom_t){.C = d->C,
                           .M = d->OC,
                           .KH = d->KH,
                           .KW = d->KW,
                           .stride = s,
                           .SH = d->H,
                           .SW = d->W,
                           .PH = (PH + s - 1) / s,
                           .PW = (PW + s - 1) / s,
                           .top = d->pad_t,
                           .left = d->pad_l,
                           .rows = d->OH,
                           .cols = d->OW};
    conv_amx_plan(g);
}

static size_t floats_of(size_t bytes) { return round16((bytes + 3) / 4); }

/* A convolution pass's floats: packed weights, one source, one output grid. */
static size_t amx_pass_floats(const conv_amx_geom_t *g)
{
    return floats_of(conv_amx_weight_bytes(g)) + floats_of(conv_amx_source_bytes(g)) + conv_amx_grid_floats(g);
}

static size_t amx_workspace(const conv2d_desc_t *d)
{
    conv_amx_geom_t f;
    conv_amx_dinp_t b;
    amx_fwd_geom(d, &f);
    conv_amx_dinp_plan(&f, &b);
    const size_t bwd = floats_of(conv_amx_wgrad_bytes(&f)) + floats_of(conv_amx_dinp_bytes(&b)),
                 fwd = amx_pass_floats(&f);
    return fwd > bwd ? fwd : bwd;
}

/* One image's forward laid out from ws on: out = the grid's valid part + bias; pads: the
 * thread's first image (conv_amx_source) */
static void amx_image(const conv_amx_geom_t *g, float *ws, const float *src, const float *bias, int pads, float *out)
{
    uint16_t *wp = (uint16_t *)ws;
    uint32_t *xs = (uint32_t *)(ws + floats_of(conv_amx_weight_bytes(g)));
    float *y = (float *)xs + floats_of(conv_amx_source_bytes(g));
    conv_amx_source(g, src, pads, xs);
    conv_amx_grid(amx_unit(), g, wp, xs, y);
    conv_grid_to_planes(g->M, g->rows, g->cols, g->PW, y, g->ldy, bias, 0, out);
}

const char *conv2d_kernel(void)
{
    if (mm_precision() == MM_BF16)
        return cpu_isa() == CPU_ISA_AMX           ? "direct-amx-bf16"
               : cpu_isa() == CPU_ISA_AVX512_BF16 ? "direct-avx512-bf16"
               : direct_isa() == DIRECT_AVX512    ? "winograd-avx512-bf16" /* wino_bf16's layers */
               : direct_isa() == DIRECT_AVX2      ? "winograd-avx2-bf16"
                                                  : "im2col-gemm";
    return direct_isa_name();
}

static void amx_forward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    conv_amx_geom_t g;
    amx_fwd_geom(d, &g);
    long b0, b1;
    my_chunks(j->B, 1, t, T, &b0, &b1);
    if (b0 == b1) return;
    float *ws = job_ws(j, t);
    conv_amx_pack(&g, j->weight, (uint16_t *)ws);
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    for (long b = b0; b < b1; b++) amx_image(&g, ws, j->inp + b * in_img, j->bias, b == b0, j->out + b * out_img);
}

/* Per image: its weight gradient into the thread's float32 sums, then its input gradient
 * (written under j->set, else added); the thread's sums to its dweight at the end. */
static void amx_backward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    float *dweight = job_dw(j, t);
    long b0, b1;
    my_chunks(j->B, 1, t, T, &b0, &b1);
    if (b0 == b1) {
        memset(dweight, 0, dw_floats(d) * sizeof(float));
        return;
    }
    conv_amx_geom_t f;
    conv_amx_dinp_t g;
    amx_fwd_geom(d, &f);
    conv_amx_dinp_plan(&f, &g);
    float *wg = job_ws(j, t), *ws = wg + floats_of(conv_amx_wgrad_bytes(&f));
    if (j->dinp) conv_amx_dinp_pack(&g, j->weight, ws);
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)d->OC * d->OH * d->OW;
    for (long b = b0; b < b1; b++) {
        const float *dy = j->dout + b * out_img;
        conv_amx_wgrad(amx_unit(), &f, j->inp + b * in_img, dy, b == b0, wg);
        if (j->dinp) conv_amx_dinp_image(amx_unit(), &g, ws, dy, !j->set, b == b0, j->dinp + b * in_img);
    }
    conv_amx_wgrad_store(&f, wg, dweight);
}

/* The general path (strided convolutions): im2col_chunk + GEMM, thread t's chunks. */
typedef struct {
    int nbmax;        /* images per chunk */
    float *col, *tmp; /* (K, nb*P) and (OC, nb*P), rows ld apart; tmp only when nb > 1 */
    long c0, c1;      /* thread t's chunks */
} lowered_t;

static void lowered_plan(conv_job_t *j, int t, int T, lowered_t *p)
{
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    p->nbmax = chunk_images(d, j->B, j->T, 0);
    p->col = job_ws(j, t);
    p->tmp = p->col + (size_t)d->C * d->KH * d->KW * padded_ld((size_t)p->nbmax * d->OH * d->OW);
    my_chunks(j->B, p->nbmax, t, T, &p->c0, &p->c1);
}

static void lowered_forward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    lowered_t L;
    lowered_plan(j, t, T, &L);
    const conv2d_desc_t *d = j->d;
    const int B = j->B, OC = d->OC, nbmax = L.nbmax;
    const float *inp = j->inp, *weight = j->weight, *bias = j->bias;
    float *out = j->out, *col = L.col, *tmp = L.tmp;
    const size_t P = (size_t)d->OH * d->OW;
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)OC * P;
    for (long ci = L.c0; ci < L.c1; ci++) {
        const int b0 = (int)(ci * nbmax);
        const int nb = B - b0 < nbmax ? B - b0 : nbmax;
        const int N = (int)((size_t)nb * P);
        const size_t ld = padded_ld((size_t)N);
        im2col_chunk(d, nb, inp + (size_t)b0 * in_img, col, ld);
        if (nb == 1) {
            /* one image: (OC, P) is already the layout of out[b0] */
            float *o = out + (size_t)b0 * out_img;
            if (bias) fill_bias(o, OC, P, bias);
            gemm_fwd_groups(d, N, weight, col, (int)ld, bias ? 1.0f : 0.0f, o, N);
        } else {
            gemm_fwd_groups(d, N, weight, col, (int)ld, 0.0f, tmp, (int)ld);
            scatter_chunk(nb, OC, P, tmp, ld, bias, out + (size_t)b0 * out_img);
        }
    }
}

static void lowered_backward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    lowered_t L;
    lowered_plan(j, t, T, &L);
    const conv2d_desc_t *d = j->d;
    const int B = j->B, OC = d->OC, nbmax = L.nbmax;
    const float *inp = j->inp, *weight = j->weight, *dout = j->dout;
    float *dinp = j->dinp, *dweight = job_dw(j, t), *col = L.col, *tmp = L.tmp;
    const size_t P = (size_t)d->OH * d->OW;
    const size_t in_img = (size_t)d->C * d->H * d->W, out_img = (size_t)OC * P;
    if (L.c0 == L.c1) memset(dweight, 0, dw_floats(d) * sizeof(float));
    for (long ci = L.c0; ci < L.c1; ci++) {
        const int b0 = (int)(ci * nbmax);
        const int nb = B - b0 < nbmax ? B - b0 : nbmax;
        const int N = (int)((size_t)nb * P);
        const size_t ld = padded_ld((size_t)N);
        const float *g = dout + (size_t)b0 * out_img; /* (OC, N), rows ldg apart */
        int ldg = N;
        if (nb > 1) {
            gather_chunk(nb, OC, P, g, tmp, ld);
            g = tmp;
            ldg = (int)ld;
        }
        im2col_chunk(d, nb, inp + (size_t)b0 * in_img, col, ld);
        /* dW (OC, K) (+)= g (OC, N) x col^T (N, K), the first chunk writes; then dcol
         * (K, N) = W^T (K, OC) x g (OC, N), reusing col which is no longer needed */
        gemm_bwd_groups(d, N, weight, g, ldg, col, (int)ld, ci == L.c0 ? 0.0f : 1.0f, dweight, dinp != NULL);
        if (dinp) col2im_chunk_add(d, nb, col, ld, dinp + (size_t)b0 * in_img);
    }
}

/* Pointwise on 1x1 planes (use_pointwise with one pixel): the batch's activations are
 * already the GEMM's matrices, (B, C) in and (B, OC) out, so no lowering: thread t takes
 * its chunks of pointwise_images images, out = bias + inp W^T, dW (+)= dout^T inp,
 * dinp += dout W. */
static void pw1_forward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    const int nb = pointwise_images(d, j->B);
    long c0, c1;
    my_chunks(j->B, nb, t, T, &c0, &c1);
    for (long ci = c0; ci < c1; ci++) {
        const int b0 = (int)(ci * nb), n = j->B - b0 < nb ? j->B - b0 : nb;
        float *out = j->out + (size_t)b0 * d->OC;
        if (j->bias)
            for (int b = 0; b < n; b++) memcpy(out + (size_t)b * d->OC, j->bias, (size_t)d->OC * sizeof(float));
        mm_sgemm(MM_N, MM_T, n, d->OC, d->C, 1.0f, j->inp + (size_t)b0 * d->C, d->C, j->weight, d->C,
                 j->bias ? 1.0f : 0.0f, out, d->OC);
    }
}

static void pw1_backward(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (t == 0) j->ran = T;
    const conv2d_desc_t *d = j->d;
    const int C = d->C, OC = d->OC, nb = pointwise_images(d, j->B);
    float *dweight = job_dw(j, t);
    long c0, c1;
    my_chunks(j->B, nb, t, T, &c0, &c1);
    if (c0 == c1) memset(dweight, 0, dw_floats(d) * sizeof(float));
    for (long ci = c0; ci < c1; ci++) {
        const int b0 = (int)(ci * nb), n = j->B - b0 < nb ? j->B - b0 : nb;
        const float *g = j->dout + (size_t)b0 * OC;
        mm_sgemm(MM_T, MM_N, OC, C, n, 1.0f, g, OC, j->inp + (size_t)b0 * C, C, ci == c0 ? 0.0f : 1.0f, dweight, C);
        if (j->dinp) mm_sgemm(MM_N, MM_N, n, C, OC, 1.0f, g, OC, j->weight, C, 1.0f, j->dinp + (size_t)b0 * C, C);
    }
}

static int use_pw1(const conv2d_desc_t *d) { return use_pointwise(d) && d->OH * d->OW == 1; }

/* dbias[oc] for oc in [oc0, oc1): per image and channel a contiguous plane of P values,
 * summed in double so that the result does not drift with the batch size. */
static void bias_grad(const conv2d_desc_t *d, int B, const float *dout, int oc0, int oc1, float *dbias)
{
    const size_t P = (size_t)d->OH * d->OW, out_img = (size_t)d->OC * P;
    for (int oc = oc0; oc < oc1; oc++) {
        double s = 0.0;
        for (int b = 0; b < B; b++) s += sum_f64(dout + (size_t)b * out_img + (size_t)oc * P, P);
        dbias[oc] = (float)s;
    }
}

/* A backward in thread t: its share of the bias gradient's channels (each channel's sum
 * is one thread's, so the bias gradient does not depend on the threads), then its images. */
static void backward_part(void *arg, int t, int T)
{
    conv_job_t *j = arg;
    if (j->dbias) {
        long lo, hi;
        par_range(j->d->OC, t, T, &lo, &hi);
        bias_grad(j->d, j->B, j->dout, (int)lo, (int)hi, j->dbias);
    }
    j->pass(arg, t, T);
}

void conv2d_forward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *bias, float *out,
                    float *ws)
{
    if (B <= 0) return;
    conv_crop_t c;
    if (runs_as(d, &c) != d) { /* the kept taps' weights first in ws */
        conv_crop_weights(d, &c, weight, ws);
        conv2d_forward(&c.d, B, inp, ws, bias, out, ws + 2 * round16(conv_crop_weight_floats(&c)));
        return;
    }
    if (use_depthwise(d)) {
        if (dwc_fits(d)) dwc_forward(d, B, inp, weight, bias, out, ws);
        else dw_rows_forward(d, B, inp, weight, bias, out);
        return;
    }
    conv_job_t j = {
        .d = d, .B = B, .inp = inp, .weight = weight, .bias = bias, .out = out, .ws = ws, .wino = use_wino(d, B)};
    if (j.wino) job_run(&j, wino_filters);
    job_run(&j, use_amx(d)                ? amx_forward
                : use_direct(d) || j.wino ? direct_forward
                : use_pw1(d)              ? pw1_forward
                : use_wide(d)             ? wide_forward
                                          : lowered_forward);
}

static void backward_run(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                         float *dinp, float *dweight, float *dbias, float *ws, int set)
{
    const int OC = d->OC, K = d->C * d->KH * d->KW;

    if (B <= 0) {
        /* parameter gradients are written even for an empty batch */
        memset(dweight, 0, (size_t)OC * (K / d->groups) * sizeof(float));
        if (dbias) memset(dbias, 0, (size_t)OC * sizeof(float));
        return;
    }
    conv_crop_t c;
    if (runs_as(d, &c) != d) { /* the kept taps' weights, then their gradient, first in ws */
        const size_t n = round16(conv_crop_weight_floats(&c));
        conv_crop_weights(d, &c, weight, ws);
        backward_run(&c.d, B, inp, ws, dout, dinp, ws + n, dbias, ws + 2 * n, set);
        conv_crop_grad(d, &c, ws + n, dweight);
        return;
    }

    /* set: only the direct, Winograd and AMX input gradients write; the others add, into zeros */
    const int wino = use_wino(d, B);
    if (set && dinp && !use_amx(d) && !wino && !(use_direct(d) && direct_dinp_fits(d))) {
        zero_floats((size_t)B * d->C * d->H * d->W, dinp);
        set = 0;
    }
    if (use_depthwise(d)) {
        if (dbias) bias_grad(d, B, dout, 0, OC, dbias);
        if (dwc_fits(d)) dwc_backward(d, B, inp, weight, dout, dinp, dweight, ws);
        else dw_rows_backward(d, B, inp, weight, dout, dinp, dweight);
        return;
    }
    conv_job_t j = {.d = d,
                    .B = B,
                    .inp = inp,
                    .weight = weight,
                    .dout = dout,
                    .dinp = dinp,
                    .dweight = dweight,
                    .dbias = dbias,
                    .ws = ws,
                    .set = set,
                    .wino = wino,
                    .pass = use_amx(d)              ? amx_backward
                            : use_direct(d) || wino ? direct_backward
                            : use_pw1(d)            ? pw1_backward
                            : use_wide(d)           ? wide_backward
                                                    : lowered_backward};
    if (dinp && wino) job_run(&j, wino_filters);
    job_run(&j, backward_part);
    add_partials(&j);
}

void conv2d_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                     float *dinp, float *dweight, float *dbias, float *ws)
{
    backward_run(d, B, inp, weight, dout, dinp, dweight, dbias, ws, 0);
}

void conv2d_backward_set(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                         float *dinp, float *dweight, float *dbias, float *ws)
{
    backward_run(d, B, inp, weight, dout, dinp, dweight, dbias, ws, 1);
}
