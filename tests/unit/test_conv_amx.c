/* tests/unit/test_conv_amx.c - bf16 convolutions on the AMX tiles' loops (kernels/cpu/
 * conv_amx.h): forward, input gradient (added and written) and weight gradient through
 * conv.c, against float64 sums of the bf16-rounded operands, on the portable twin of the
 * tile unit (every CPU), on the tiles (where the CPU has AMX), on AVX512-BF16's vectors
 * (where it has those: conv_amx_vectors.h), on the portable path (im2col + GEMM, or
 * Winograd: below) and on the im2col + GEMM every path takes for strided and 1x1
 * convolutions.
 *
 * The bound (gemm_bf16.h): a product of two bf16 values is exact in float32, so only the
 * sums round; a float32 sum of n terms in any order is within gamma(n) = n u / (1 - n u),
 * u = 2^-24, of the exact sum relative to the sum of the terms' magnitudes (Higham, eq.
 * 3.5), and the matrix units count a value below 2^-126 as zero: at most n 2^-126 (mag +
 * 1) more. n: the taps' products (C*KH*KW, or OC*KH*KW for the input gradient) or, for
 * the weight gradient, every image's positions, plus the threads' partial sums, plus the
 * bias or the value added to. No tolerance here comes from a measurement. The data are
 * not bf16 values: a path that skipped the rounding would be off by about 2^-9 of the
 * magnitudes, far past the bound (each case checks that it could tell).
 *
 * Winograd's layers (conv.c's wino_bf16: every one of fp32's on the portable path, small
 * planes of few channels on AVX512-BF16) compute in float32 on operands rounded as loaded.
 * Their sums carry the transforms' coefficients: with F(4x4, 3x3)'s matrices (Lavin and
 * Gray) every value is a sum of terms c * g * d over the filter's 9 taps g and the 6x6
 * input patch's 36 values d (for the weight gradient, d and dout's 4x4 tile), each term
 * rounded at most n + 40 times (n the channel or position sums; the transforms' passes,
 * the products and the filters' conversion from double: 39 at most), with |c| <= KAPPA =
 * max over (i, r, t) of (sum_p |A^T_ip| |G_pr| |B^T_pt|)^2. So the bound is
 * gamma(n + 40) KAPPA sum |g| sum |d|: rigorous but some hundred times the errors seen,
 * too loose to tell a rounded operand from an unrounded one. That the operands are
 * rounded is checked bit for bit instead: each pass equals the float32 Winograd's on the
 * operands rounded first. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "conv_amx.h"
#include "conv_direct.h"
#include "cpu_isa.h"
#include "matmul.h"
#include "ops.h"
#include "parallel.h"

static uint64_t lcg_state = 7;
static float uniform(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(2.0 * ((double)(lcg_state >> 11) / 9007199254740992.0) - 1.0);
}

static float *random_floats(size_t n)
{
    float *x = malloc(n * sizeof(float));
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) x[i] = uniform();
    return x;
}

static double bound(double n, double mag)
{
    const double u = ldexp(1.0, -24);
    return n * u / (1.0 - n * u) * mag + n * ldexp(1.0, -126) * (mag + 1.0);
}

typedef struct {
    const char *name;
    int C, OC, H, W, KH, KW, pt, pb, pl, pr, B, threads;
    int stride; /* 0: 1 */
} conv_case_t;

/* Block edges: 16 channels (one K chunk of 16), 32 and 64 (chunks of 32), counts that are
 * not multiples of 16 (zero padding, the 1 x 4 tiles beside the 2 x 2 ones), odd widths
 * (garbage columns on the grid), the first layer's 3 channels, 1x3 and 5x5 kernels, no
 * pads and pads on one side only; a last block of 16 output channels at 3 and 5 columns
 * of taps (the weight gradient's taps two columns apart together on vectors); two and
 * three threads over an odd batch. Each output
 * plane has the 64 values conv.c's dispatch asks of the tiles (conv2d_amx); the 32 -> 48
 * case's has more than 256, so that AVX512-BF16 runs it on the vectors, not by Winograd
 * (conv.c's wino_bf16). */
static const conv_case_t CASES[] = {
    {"16 -> 16, 3x3 same, 9x8", 16, 16, 9, 8, 3, 3, 1, 1, 1, 1, 3, 1, 0},
    {"32 -> 48, 3x3 same, 16x17", 32, 48, 16, 17, 3, 3, 1, 1, 1, 1, 3, 2, 0},
    {"3 -> 16, 3x3 same, 8x8", 3, 16, 8, 8, 3, 3, 1, 1, 1, 1, 2, 1, 0},
    {"40 -> 20, 5x5 same, 9x9", 40, 20, 9, 9, 5, 5, 2, 2, 2, 2, 3, 3, 0},
    {"20 -> 16, 5x5 same, 8x9", 20, 16, 8, 9, 5, 5, 2, 2, 2, 2, 2, 1, 0},
    {"24 -> 16, 1x3 same, 8x8", 24, 16, 8, 8, 1, 3, 0, 0, 1, 1, 2, 1, 0},
    {"16 -> 32, 3x3 valid, 10x10", 16, 32, 10, 10, 3, 3, 0, 0, 0, 0, 3, 2, 0},
    {"64 -> 64, 3x3 pads top and right, 9x9", 64, 64, 9, 9, 3, 3, 1, 0, 0, 1, 2, 2, 0},
    {"16 -> 32, 3x3 stride 2, 16x16", 16, 32, 16, 16, 3, 3, 1, 1, 1, 1, 3, 2, 2},
    {"24 -> 16, 3x3 stride 2, 17x17", 24, 16, 17, 17, 3, 3, 1, 1, 1, 1, 3, 3, 2},
    {"16 -> 20, 3x3 stride 2 pads top and left, 18x17", 16, 20, 18, 17, 3, 3, 1, 0, 1, 0, 2, 1, 2},
    {"32 -> 16, 3x3 stride 2 valid, 19x18", 32, 16, 19, 18, 3, 3, 0, 0, 0, 0, 2, 2, 2},
    {"16 -> 16, 3x3 stride 2 pads 2, 14x14", 16, 16, 14, 14, 3, 3, 2, 2, 2, 2, 2, 1, 2},
    {"20 -> 16, 5x5 stride 2, 17x16", 20, 16, 17, 16, 5, 5, 2, 2, 2, 2, 2, 2, 2},
    {"16 -> 48, 4x4 stride 2, 16x16", 16, 48, 16, 16, 4, 4, 1, 1, 1, 1, 2, 1, 2},
    {"40 -> 16, 2x2 stride 2, 16x17", 40, 16, 16, 17, 2, 2, 0, 0, 0, 0, 3, 2, 2},
    {"3 -> 16, 3x3 stride 2, 16x16", 3, 16, 16, 16, 3, 3, 1, 1, 1, 1, 2, 1, 2},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

/* Layers every path lowers to im2col + the GEMM: strided, 1x1, planes under 64 outputs. */
static const conv_case_t LOWERED[] = {
    {"16 -> 32, 1x3 stride 2, 16x16", 16, 32, 16, 16, 1, 3, 0, 0, 1, 1, 3, 2, 2},
    {"16 -> 32, 3x3 stride 3, 24x24", 16, 32, 24, 24, 3, 3, 1, 1, 1, 1, 2, 1, 3},
    {"24 -> 40, 1x1, 9x9", 24, 40, 9, 9, 1, 1, 0, 0, 0, 0, 2, 1, 1},
    /* weights past the chunks' col budget: chunks of several images (conv.c's col_budget) */
    {"128 -> 64, 3x3 same, 2x2", 128, 64, 2, 2, 3, 3, 1, 1, 1, 1, 5, 2, 1},
};
#define NLOWERED (sizeof LOWERED / sizeof LOWERED[0])

/* Layers conv.c sends to Winograd at bf16 products (wino_bf16) on the portable path and on
 * AVX512-BF16: 3x3, stride 1, pad 1, 16 channels or more, planes of at most 64 outputs and
 * at most 64 x 64 channel pairs; planes that are not multiples of the 4x4 tiles, and
 * channels and widths that are not multiples of 8 (the loads' scalar loop). */
static const conv_case_t WINO[] = {
    {"64 -> 64, 3x3 same, 8x8", 64, 64, 8, 8, 3, 3, 1, 1, 1, 1, 3, 2, 0},
    {"20 -> 36, 3x3 same, 7x6", 20, 36, 7, 6, 3, 3, 1, 1, 1, 1, 2, 1, 0},
    {"16 -> 32, 3x3 same, 5x9", 16, 32, 5, 9, 3, 3, 1, 1, 1, 1, 3, 3, 0},
};
#define NWINO (sizeof WINO / sizeof WINO[0])

typedef struct {
    conv2d_desc_t d;
    float *x, *w, *bias, *dy, *d0;
} conv_data_t;

static void make_data(const conv_case_t *k, conv_data_t *s)
{
    memset(&s->d, 0, sizeof s->d);
    s->d.C = k->C, s->d.H = k->H, s->d.W = k->W, s->d.OC = k->OC, s->d.KH = k->KH, s->d.KW = k->KW;
    s->d.dH = s->d.dW = s->d.groups = 1;
    s->d.sH = s->d.sW = k->stride ? k->stride : 1;
    s->d.pad_t = k->pt, s->d.pad_b = k->pb, s->d.pad_l = k->pl, s->d.pad_r = k->pr;
    assert_int_equal(conv2d_setup(&s->d), 0);
    const size_t in = (size_t)k->B * k->C * k->H * k->W, out = (size_t)k->B * k->OC * s->d.OH * s->d.OW;
    s->x = random_floats(in);
    s->w = random_floats((size_t)k->OC * k->C * k->KH * k->KW);
    s->bias = random_floats((size_t)k->OC);
    s->dy = random_floats(out);
    s->d0 = random_floats(in);
}

static void free_data(conv_data_t *s) { free(s->x), free(s->w), free(s->bias), free(s->dy), free(s->d0); }

/* x's value at (b, c, h, w), zero outside the plane, rounded */
static double x_at(const float *x, int C, int H, int W, int b, int c, int h, int w)
{
    if (h < 0 || h >= H || w < 0 || w >= W) return 0.0;
    return bf16_round(x[(((size_t)b * C + c) * H + h) * W + w]);
}

/* worst error over the bound of got against want (both n long); *shows: some element's
 * unrounded sum lies outside 4x the bound */
static double worst_of(const float *got, const double *want, const double *mag, const double *plain, size_t n,
                       double terms, int *shows)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double b = bound(terms, mag[i]);
        if (!isfinite(got[i])) return INFINITY;
        const double r = fabs(got[i] - want[i]) / b;
        if (r > worst) worst = r;
        if (fabs(plain[i] - want[i]) > 4.0 * b) *shows = 1;
    }
    return worst;
}

/* The three references: forward (with the bias), input gradient (with d0 added), weight
 * gradient; each as the rounded operands' sum, its magnitude and the unrounded sum. */
typedef struct {
    double *y, *ym, *yp, *dx, *dxm, *dxp, *dw, *dwm, *dwp;
} refs_t;

static void reference(const conv_case_t *k, const conv_data_t *s, refs_t *r)
{
    const conv2d_desc_t *d = &s->d;
    const int OH = d->OH, OW = d->OW, KK = k->KH * k->KW, st = d->sH;
    const size_t ny = (size_t)k->B * k->OC * OH * OW, nx = (size_t)k->B * k->C * k->H * k->W,
                 nw = (size_t)k->OC * k->C * KK;
    double **all[] = {&r->y, &r->ym, &r->yp, &r->dx, &r->dxm, &r->dxp, &r->dw, &r->dwm, &r->dwp};
    const size_t sizes[] = {ny, ny, ny, nx, nx, nx, nw, nw, nw};
    for (int i = 0; i < 9; i++) {
        *all[i] = calloc(sizes[i], sizeof(double));
        assert_non_null(*all[i]);
    }
    for (size_t i = 0; i < nx; i++) r->dx[i] = r->dxp[i] = s->d0[i], r->dxm[i] = fabs(s->d0[i]);
    for (int b = 0; b < k->B; b++)
        for (int m = 0; m < k->OC; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    const size_t yi = (((size_t)b * k->OC + m) * OH + oh) * OW + ow;
                    r->y[yi] = r->yp[yi] = s->bias[m], r->ym[yi] = fabs(s->bias[m]);
                    const double g = bf16_round(s->dy[yi]), gp = s->dy[yi];
                    for (int c = 0; c < k->C; c++)
                        for (int t = 0; t < KK; t++) {
                            const int h = oh * st - k->pt + t / k->KW, w = ow * st - k->pl + t % k->KW;
                            if (h < 0 || h >= k->H || w < 0 || w >= k->W) continue;
                            const size_t xi = (((size_t)b * k->C + c) * k->H + h) * k->W + w,
                                         wi = ((size_t)m * k->C + c) * KK + t;
                            const double xv = x_at(s->x, k->C, k->H, k->W, b, c, h, w), wv = bf16_round(s->w[wi]);
                            r->y[yi] += wv * xv, r->ym[yi] += fabs(wv * xv), r->yp[yi] += (double)s->w[wi] * s->x[xi];
                            r->dx[xi] += wv * g, r->dxm[xi] += fabs(wv * g), r->dxp[xi] += (double)s->w[wi] * gp;
                            r->dw[wi] += g * xv, r->dwm[wi] += fabs(g * xv), r->dwp[wi] += gp * s->x[xi];
                        }
                }
}

static void free_refs(refs_t *r)
{
    free(r->y), free(r->ym), free(r->yp), free(r->dx), free(r->dxm), free(r->dxp), free(r->dw), free(r->dwm),
        free(r->dwp);
}

/* F(4x4, 3x3)'s matrices (conv_winograd.h): B^T (input), G (filter), A^T (output). */
static const double WB[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
static const double WG[6][3] = {{1.0 / 4, 0, 0},
                                {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                {0, 0, 1}};
static const double WA[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

static double wino_kappa(void)
{
    double k = 0.0;
    for (int i = 0; i < 4; i++)
        for (int r = 0; r < 3; r++)
            for (int t = 0; t < 6; t++) {
                double c = 0.0;
                for (int p = 0; p < 6; p++) c += fabs(WA[i][p]) * fabs(WG[p][r]) * fabs(WB[p][t]);
                if (c * c > k) k = c * c;
            }
    return k;
}

/* sum of |v| (rounded) over rows r0 .. r0 + n - 1 and columns c0 .. c0 + n - 1 of plane
 * (b, c) of v (B, C, H, W), zero outside */
static double patch_abs(const float *v, int C, int H, int W, int b, int c, int r0, int c0, int n)
{
    double s = 0.0;
    for (int h = r0; h < r0 + n; h++)
        for (int w = c0; w < c0 + n; w++) s += fabs(x_at(v, C, H, W, b, c, h, w));
    return s;
}

/* The magnitudes of Winograd's sums (the header's): r's ym, dxm (d0's part kept) and dwm
 * replaced by KAPPA sum |g| sum |d| over their terms. */
static void wino_magnitudes(const conv_case_t *k, const conv_data_t *s, refs_t *r)
{
    const int H = k->H, W = k->W, C = k->C, M = k->OC;
    const double kappa = wino_kappa();
    double *gabs = calloc((size_t)M * C, sizeof(double));
    assert_non_null(gabs);
    for (int m = 0; m < M; m++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < 9; t++) gabs[(size_t)m * C + c] += fabs(bf16_round(s->w[((size_t)m * C + c) * 9 + t]));
    for (int b = 0; b < k->B; b++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                const int r0 = h / 4 * 4 - 1, c0 = w / 4 * 4 - 1;
                for (int m = 0; m < M; m++) {
                    double sum = 0.0;
                    for (int c = 0; c < C; c++)
                        sum += gabs[(size_t)m * C + c] * patch_abs(s->x, C, H, W, b, c, r0, c0, 6);
                    r->ym[(((size_t)b * M + m) * H + h) * W + w] = kappa * sum + fabs(s->bias[m]);
                }
                for (int c = 0; c < C; c++) {
                    double sum = 0.0;
                    for (int m = 0; m < M; m++)
                        sum += gabs[(size_t)m * C + c] * patch_abs(s->dy, M, H, W, b, m, r0, c0, 6);
                    const size_t xi = (((size_t)b * C + c) * H + h) * W + w;
                    r->dxm[xi] = kappa * sum + fabs(s->d0[xi]);
                }
            }
    for (int m = 0; m < M; m++)
        for (int c = 0; c < C; c++) {
            double sum = 0.0;
            for (int b = 0; b < k->B; b++)
                for (int th = 0; th < H; th += 4)
                    for (int tw = 0; tw < W; tw += 4)
                        sum += patch_abs(s->x, C, H, W, b, c, th - 1, tw - 1, 6) *
                               patch_abs(s->dy, M, H, W, b, m, th, tw, 4);
            for (int t = 0; t < 9; t++) r->dwm[((size_t)m * C + c) * 9 + t] = kappa * sum;
        }
    free(gabs);
}

/* The passes of k on the Winograd path at bf16 products against float32's on the operands
 * rounded first: the same bits (y, dx added to d0 and written, dw). */
static void wino_rounds(const conv_case_t *k, const conv_data_t *s, const float *y, const float *dx_add,
                        const float *dx_set, const float *dw, float *ws)
{
    const conv2d_desc_t *d = &s->d;
    const size_t ny = (size_t)k->B * k->OC * d->OH * d->OW, nx = (size_t)k->B * k->C * k->H * k->W,
                 nw = (size_t)k->OC * k->C * 9;
    float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float)), *dy = malloc(ny * sizeof(float));
    float *y32 = malloc(ny * sizeof(float)), *dx32 = malloc(nx * sizeof(float)), *dw32 = malloc(nw * sizeof(float));
    float db[64];
    assert_true(x && w && dy && y32 && dx32 && dw32);
    for (size_t i = 0; i < nx; i++) x[i] = bf16_round(s->x[i]);
    for (size_t i = 0; i < nw; i++) w[i] = bf16_round(s->w[i]);
    for (size_t i = 0; i < ny; i++) dy[i] = bf16_round(s->dy[i]);
    const mm_precision_t was = mm_precision();
    mm_set_precision(MM_FP32);
    assert_int_equal(conv2d_winograd(d, k->B), 1);
    conv2d_forward(d, k->B, x, w, s->bias, y32, ws);
    memcpy(dx32, s->d0, nx * sizeof(float));
    conv2d_backward(d, k->B, x, w, dy, dx32, dw32, db, ws);
    if (memcmp(y, y32, ny * sizeof(float)) || memcmp(dx_add, dx32, nx * sizeof(float)) ||
        memcmp(dw, dw32, nw * sizeof(float)))
        fail_msg("%s: Winograd at bf16 is not float32's on the rounded operands", k->name);
    conv2d_backward_set(d, k->B, x, w, dy, dx32, dw32, db, ws);
    if (memcmp(dx_set, dx32, nx * sizeof(float))) fail_msg("%s: the written input gradient differs", k->name);
    mm_set_precision(was);
    free(x), free(w), free(dy), free(y32), free(dx32), free(dw32);
}

/* One case on the path the process now takes: forward, backward adding into d0, backward
 * writing; returns the worst error over its bound. */
/* amx: whether the case must take the padded planes' loops: 0 never, 1 always,
 * AMX_BUT_FEW on vectors (conv.c sends inputs of 8 channels or fewer to im2col there) */
#define AMX_BUT_FEW 2

static double run_case(const conv_case_t *k, const char *path, int amx)
{
    if (amx == AMX_BUT_FEW) amx = k->C > 8;
    conv_data_t s;
    make_data(k, &s);
    if (conv2d_amx(&s.d) != amx) fail_msg("%s, %s: conv2d_amx %d, want %d", path, k->name, conv2d_amx(&s.d), amx);
    refs_t r;
    reference(k, &s, &r);
    const int wino = conv2d_winograd(&s.d, k->B);
    if (wino) wino_magnitudes(k, &s, &r);
    const double extra = wino ? 40.0 : 2.0; /* the bound's rounding steps beyond the sums' */
    assert_int_equal(par_set_threads(k->threads), 0);
    const conv2d_desc_t *d = &s.d;
    const size_t ny = (size_t)k->B * k->OC * d->OH * d->OW, nx = (size_t)k->B * k->C * k->H * k->W,
                 nw = (size_t)k->OC * k->C * k->KH * k->KW;
    /* the scratch starts as NaNs: a pass must write every value it reads */
    const size_t nws = conv2d_workspace(d, k->B) + 1;
    float *ws = malloc(nws * sizeof(float)), *y = malloc(ny * sizeof(float));
    float *dx = malloc(nx * sizeof(float)), *dw = malloc(nw * sizeof(float)), *dx_add = malloc(nx * sizeof(float)),
          db[64];
    assert_true(k->OC <= 64); /* db */
    assert_true(ws && y && dx && dw && dx_add);
    memset(ws, 0xff, nws * sizeof(float));
    int shows_y = 0, shows_dx = 0, shows_dw = 0;
    conv2d_forward(d, k->B, s.x, s.w, s.bias, y, ws);
    double worst = worst_of(y, r.y, r.ym, r.yp, ny, k->C * k->KH * k->KW + extra, &shows_y), w;
    memcpy(dx, s.d0, nx * sizeof(float));
    memset(ws, 0xff, nws * sizeof(float));
    conv2d_backward(d, k->B, s.x, s.w, s.dy, dx, dw, db, ws);
    memcpy(dx_add, dx, nx * sizeof(float));
    if ((w = worst_of(dx, r.dx, r.dxm, r.dxp, nx, k->OC * k->KH * k->KW + extra, &shows_dx)) > worst) worst = w;
    const double wterms = (double)k->B * d->OH * d->OW + k->threads + extra;
    if ((w = worst_of(dw, r.dw, r.dwm, r.dwp, nw, wterms, &shows_dw)) > worst) worst = w;
    /* written: dx = the gradient alone, whatever it held */
    for (size_t i = 0; i < nx; i++) dx[i] = NAN, r.dx[i] -= s.d0[i], r.dxm[i] -= fabs(s.d0[i]), r.dxp[i] -= s.d0[i];
    memset(ws, 0xff, nws * sizeof(float));
    conv2d_backward_set(d, k->B, s.x, s.w, s.dy, dx, dw, db, ws);
    if ((w = worst_of(dx, r.dx, r.dxm, r.dxp, nx, k->OC * k->KH * k->KW + extra, &shows_dx)) > worst) worst = w;
    if (wino) wino_rounds(k, &s, y, dx_add, dx, dw, ws);
    else if (worst <= 1.0 && !(shows_y && shows_dx && shows_dw))
        fail_msg("%s, %s: the data cannot tell a rounded sum from an unrounded one", path, k->name);
    free(ws), free(y), free(dx), free(dw), free(dx_add);
    free_refs(&r);
    free_data(&s);
    par_set_threads(1);
    return worst;
}

/* amx: as run_case takes it */
static void run_set(const conv_case_t *cases, size_t n, const char *path, int amx)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double w = run_case(&cases[i], path, amx);
        if (!(w <= 1.0)) fail_msg("%s, %s: error %.3g x the bound", path, cases[i].name, w);
        if (w > worst) worst = w;
    }
    printf("%s: largest error %.3f of the bound\n", path, worst);
}

static void run_cases(const char *path, int amx) { run_set(CASES, NCASES, path, amx); }

/* The tiles' loops on the twin: every CPU runs it. */
static void test_twin(void **state)
{
    mm_set_precision(MM_BF16);
    cpu_isa_cap(CPU_ISA_PORTABLE);
    conv_amx_force_twin(1);
    run_cases("twin", 1);
}

/* The cases on path isa, skipped by its name where the CPU lacks it */
static void run_on_path(cpu_isa_t isa, const char *path, int amx)
{
    if (cpu_isa_available() < isa) {
        printf("skip: %s path: %s\n", cpu_isa_name(isa), cpu_isa_why());
        skip();
    }
    mm_set_precision(MM_BF16);
    cpu_isa_cap(isa);
    run_cases(path, amx);
}

static void test_tiles(void **state) { run_on_path(CPU_ISA_AMX, "amx tiles", 1); }

/* The same loops on AVX512-BF16's vdpbf16ps, from the same packed operands. */
static void test_vectors(void **state) { run_on_path(CPU_ISA_AVX512_BF16, "avx512_bf16 vectors", AMX_BUT_FEW); }

/* The portable path on the same cases: im2col + GEMM (the bound is the same), or Winograd
 * for the 3x3 layers of 16 channels or more; and every path's im2col + GEMM on the layers
 * none of them runs on the planes. */
static void test_gemm_paths(void **state)
{
    mm_set_precision(MM_BF16);
    cpu_isa_cap(CPU_ISA_PORTABLE);
    run_cases("portable", 0);
    for (int isa = 0; isa <= (int)cpu_isa_available(); isa++) {
        cpu_isa_cap((cpu_isa_t)isa);
        run_set(LOWERED, NLOWERED, cpu_isa_name((cpu_isa_t)isa), 0);
    }
}

/* Winograd on the operands rounded as loaded, on the paths without tiles where the CPU has
 * the vector kernels (direct_isa), each skipped by name where it does not run. */
static void test_winograd(void **state)
{
    if (direct_isa() == DIRECT_NO_ISA) {
        printf("skip: Winograd: the CPU has neither AVX2 with FMA nor AVX-512\n");
        skip();
    }
    mm_set_precision(MM_BF16);
    const cpu_isa_t paths[2] = {CPU_ISA_PORTABLE, CPU_ISA_AVX512_BF16};
    for (int i = 0; i < 2; i++) {
        if (cpu_isa_available() < paths[i]) {
            printf("skip: Winograd on the %s path: %s\n", cpu_isa_name(paths[i]), cpu_isa_why());
            continue;
        }
        cpu_isa_cap(paths[i]);
        char what[64];
        snprintf(what, sizeof what, "Winograd on %s", cpu_isa_name(paths[i]));
        for (size_t k = 0; k < NWINO; k++) {
            conv_data_t s;
            make_data(&WINO[k], &s);
            if (!conv2d_winograd(&s.d, WINO[k].B)) fail_msg("%s: %s does not take Winograd", what, WINO[k].name);
            free_data(&s);
        }
        run_set(WINO, NWINO, what, 0);
    }
}

/* Which layers take the padded planes: only bf16 ones of one group, stride 1 or 2 (each
 * side of the kernel at least the stride), more than one tap and planes of 64 outputs or
 * more; on the vectors, more than 8 input channels,
 * and not the Winograd layers (wino_bf16); on the tiles, every one. */
static void test_dispatch(void **state)
{
    conv2d_desc_t d;
    conv_amx_force_twin(1);
    mm_set_precision(MM_FP32);
    assert_int_equal(conv2d_init(&d, 16, 8, 8, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* fp32 */
    mm_set_precision(MM_BF16);
    assert_int_equal(conv2d_amx(&d), 1);
    assert_int_equal(conv2d_init(&d, 16, 7, 7, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* 49 outputs */
    assert_int_equal(conv2d_init(&d, 16, 8, 8, 16, 1, 1, 1, 0), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* 1x1 */
    assert_int_equal(conv2d_init(&d, 16, 16, 16, 16, 3, 3, 2, 1), 0);
    assert_int_equal(conv2d_amx(&d), 1); /* stride 2 */
    assert_int_equal(conv2d_init(&d, 16, 24, 24, 16, 3, 3, 3, 1), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* stride 3 */
    d.sW = 1;
    assert_int_equal(conv2d_setup(&d), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* strides that differ */
    assert_int_equal(conv2d_init(&d, 16, 16, 18, 16, 1, 3, 2, 0), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* stride 2 past a side of the kernel */
    assert_int_equal(conv2d_init(&d, 16, 8, 8, 16, 3, 3, 1, 3), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* pads past the kernel's reach */
    assert_int_equal(conv2d_init(&d, 16, 8, 8, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), 0); /* the twin keeps the tiles' layers */
    conv_amx_force_twin(0);
    const int wino = direct_isa() != DIRECT_NO_ISA;
    cpu_isa_cap(CPU_ISA_PORTABLE);
    assert_int_equal(conv2d_amx(&d), 0);            /* the portable path lowers ... */
    assert_int_equal(conv2d_winograd(&d, 1), wino); /* ... or takes Winograd */
    assert_int_equal(conv2d_init(&d, 16, 16, 16, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), wino);
    cpu_isa_cap(CPU_ISA_AVX512_BF16);
    const int vectors = cpu_isa() == CPU_ISA_AVX512_BF16;
    assert_int_equal(conv2d_amx(&d), vectors); /* 256 outputs: the vectors */
    assert_int_equal(conv2d_winograd(&d, 1), !vectors && wino);
    assert_int_equal(conv2d_init(&d, 64, 8, 8, 64, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* 64 outputs, 64 x 64 channels: Winograd */
    assert_int_equal(conv2d_winograd(&d, 1), wino);
    assert_int_equal(conv2d_init(&d, 128, 4, 4, 128, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), !vectors && wino); /* 128 x 128 channels: not on vectors */
    assert_int_equal(conv2d_init(&d, 8, 16, 16, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_amx(&d), 0); /* 8 channels in: im2col on vectors */
    assert_int_equal(conv2d_init(&d, 9, 16, 16, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_amx(&d), vectors);
    mm_set_precision(MM_FP32);
    assert_int_equal(conv2d_init(&d, 16, 16, 16, 16, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), wino); /* fp32's own rule */
    if (cpu_isa_available() == CPU_ISA_AMX) {
        mm_set_precision(MM_BF16);
        cpu_isa_cap(CPU_ISA_AMX);
        assert_int_equal(conv2d_init(&d, 64, 8, 8, 64, 3, 3, 1, 1), 0);
        assert_int_equal(conv2d_amx(&d), 1); /* the tiles keep every layer */
        assert_int_equal(conv2d_winograd(&d, 1), 0);
    }
}

static cpu_isa_t start_isa; /* the path the process started on (PACER_CPU_ISA may cap it) */

/* After each test, passed or failed: the process's defaults again. */
static int reset(void **state)
{
    conv_amx_force_twin(0);
    mm_set_precision(MM_FP32);
    cpu_isa_cap(start_isa);
    par_set_threads(1);
    return 0;
}

int main(void)
{
    start_isa = cpu_isa();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_dispatch, reset),   cmocka_unit_test_teardown(test_twin, reset),
        cmocka_unit_test_teardown(test_tiles, reset),      cmocka_unit_test_teardown(test_vectors, reset),
        cmocka_unit_test_teardown(test_gemm_paths, reset), cmocka_unit_test_teardown(test_winograd, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
