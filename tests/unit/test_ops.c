/* tests/unit/test_ops.c - the CPU kernels against the double-precision reference kernels of
 * kernels/ref (ref.h: the naive implementations named below).
 *
 * For every op:
 *   - the forward pass is compared with a naive double-precision implementation
 *     from kernels/ref (conv: the direct 7-loop convolution);
 *   - the backward pass is checked by central finite differences of the scalar
 *     f = sum(out * R) (R a random upstream gradient; for the loss, f is the loss),
 *     computed in double from the naive forward with step h = FD_H * max(1, |x|);
 *     convolution is also compared element by element with a naive direct backward;
 *   - the gradient conventions of ops.h are checked explicitly: input gradients are
 *     added to a pre-filled buffer (+=), parameter gradients are written over NaN (=),
 *     a NULL dinp is accepted and changes nothing else, and the workspace is filled
 *     with NaN before every call so that nothing may read it before writing it.
 *
 * Error measure (but for finite differences): |a - n| / max(1, |a|, |n|), a the kernel's value, n the
 * reference. Tolerances (the kernels compute in float, the references in double):
 *   FWD_TOL 1e-5  forward outputs against the naive double forward;
 *   WINO_TOL 1e-4 the same for convolutions that take Winograd's F(4x4, 3x3)
 *                 (conv2d_winograd): its transforms scale the products by up to ~100
 *                 before the sums and back; 2.7e-5 measured at most;
 *   WINO_GRAD_TOL 3e-4  their gradients (the weight gradient summed over every tile in
 *                 the 6x6 domain): 7.1e-5 measured at most;
 *   BWD_TOL 1e-4  convolution gradients against the naive double backward (dweight of
 *                 the B=200 case sums 16200 float products of size ~0.25 in SGEMM: its
 *                 absolute error reaches ~2e-5 while the sum is ~0.7);
 *   FD_ATOL 1e-6, FD_RTOL 1e-5  analytic gradients against double-precision central
 *                 differences: |a - n| <= FD_ATOL max|n| + FD_RTOL |n| (see check_fd);
 *   ADAMW_TOL 2e-6  adamw_update's weights and moments after 6 steps against
 *                 torch.optim.AdamW's rule in double (ref_adamw_step; the second moment
 *                 relative to itself, as it is ~1e-3 of the weights);
 *   ACC_TOL 1e-5  "+=" checks: dinp after the call equals prefill + gradient (the
 *                 kernel adds its terms one by one onto the prefill, so the rounding
 *                 differs slightly from prefill + the gradient computed from zero);
 *   ERF_ULP 2.0   erf (scalar_fn.h's ufn_erf, a vectorised polynomial and exp) against
 *                 erf in double, in ulps of the float result, on every ERF_STRIDE-th
 *                 float: 1.83 measured over every float (glibc's erff: 0.97);
 *   gemv_forward  an analytic bound per output from its IN (test_gemv's comment);
 *   GELU_ULP 64   GELU's forward in ulps on [-5.5, 10): a few ulps above -3, up to 50 in
 *                 the far negative tail (|GELU| < 1e-6), where Q(t) - t^2 ~ -16 is rounded
 *                 in float before its exp (the old 1 + erff(x) lost every bit there).
 * The maxima measured over the whole run are printed at the end.
 *
 * Inputs come from a 64-bit LCG (Knuth's MMIX constants), so every run is the same.
 */
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
#include "conv_crop.h"
#include "conv_direct.h"
#include "gelu_simd.h"
#include "gemv.h"
#include "ops.h"
#include "parallel.h"
#include "ref.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define FWD_TOL 1e-5
#define WINO_TOL 1e-4
#define WINO_GRAD_TOL 3e-4
#define BWD_TOL 1e-4
#define FD_ATOL 1e-6 /* x the largest |numeric gradient| of the check */
#define ADAMW_TOL 2e-6
#define FD_RTOL 1e-5
#define ACC_TOL 1e-5
#define ERF_ULP 2.0
#define ERF_STRIDE 251
#define GELU_ULP 64.0
#define FD_H 1e-5
#define PREFILL 0.5f

/* Largest errors seen, per kind of check, for the summary. */
static double g_max_fwd, g_max_bwd, g_max_fd, g_max_acc;

/* ---- helpers -------------------------------------------------------------------- */

typedef struct {
    uint64_t s;
} lcg_t;

static uint32_t lcg_next(lcg_t *r)
{
    r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(r->s >> 32);
}

/* Uniform in [lo, hi) with 24 random bits. */
static float lcg_unif(lcg_t *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)(lcg_next(r) >> 8) * (1.0f / 16777216.0f);
}

static float *falloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    return p;
}

static double *dalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    assert_non_null(p);
    return p;
}

static void ffill(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) p[i] = v;
}

/* Random floats and their exact double copies, so kernel and reference see the same
 * inputs. */
static void rand_fill(lcg_t *r, float *f, double *d, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        f[i] = lcg_unif(r, lo, hi);
        if (d) d[i] = f[i];
    }
}

static void to_double(const float *f, double *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f[i];
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double relerr(double a, double n)
{
    double d = fabs(a - n);
    double s = fmax(1.0, fmax(fabs(a), fabs(n)));
    return isnan(d) ? INFINITY : d / s;
}

/* Max error of got against ref; fails the test when it is not below tol. */
static double check_close(const char *what, const float *got, const double *ref, size_t n, double tol, double *track)
{
    double worst = 0.0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double e = relerr(got[i], ref[i]);
        if (e > worst) {
            worst = e;
            wi = i;
        }
    }
    if (worst > *track) *track = worst;
    if (!(worst < tol))
        fail_msg("%s: max relative error %.3g at [%zu] (got %.9g, want %.9g) is not below %.0e "
                 "(|a-n|/max(1,|a|,|n|))",
                 what, worst, wi, n ? got[wi] : 0.0, n ? ref[wi] : 0.0, tol);
    return worst;
}

/* Same for two float arrays that must agree bitwise-ish (e.g. dinp = prefill + grad). */
static double check_acc(const char *what, const float *got, const float *grad, float prefill, size_t n)
{
    double worst = 0.0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double e = relerr(got[i], (double)prefill + (double)grad[i]);
        if (e > worst) {
            worst = e;
            wi = i;
        }
    }
    if (worst > g_max_acc) g_max_acc = worst;
    if (!(worst < ACC_TOL))
        fail_msg("%s: input gradient not accumulated (+=): error %.3g at [%zu] (got %.9g, want "
                 "%.9g + %.9g), tolerance %.0e",
                 what, worst, wi, got[wi], prefill, grad[wi], ACC_TOL);
    return worst;
}

/* Central differences of loss() with respect to x[i] (x lives inside ctx), compared with
 * the analytic gradient g. Checks every element, or max_samples spread evenly over x
 * (so every image and every chunk of a batch is visited).
 *
 * Criterion (combined absolute-relative, not "relative to max(1, ...)", which passed a
 * zero gradient wherever the true one was below 1e-4): |a - n| <= atol + FD_RTOL |n|,
 * atol = FD_ATOL x max_i |n_i| (the float kernel's rounding is relative to the size of
 * the gradient it computes; the double differences are exact to ~1e-10). A zero or
 * wrong-sign a fails on every entry with |n| > 2 atol / (1 - FD_RTOL), and the largest
 * entry always is one, so a gradient that is zero, negated, or zero where the true one
 * is small cannot pass; a gradient check whose numeric gradient is identically zero
 * fails too (it could not tell). test_fd_criterion shows both on every op's case. */
typedef double (*loss_fn)(void *ctx);

typedef enum { FD_REAL, FD_ZERO, FD_NEGATED } fd_mode_t;
static fd_mode_t g_fd_mode = FD_REAL;  /* test_fd_criterion replaces the analytic side */
static int g_fd_rejected, g_fd_checks; /* checks made / failed while g_fd_mode != FD_REAL */

static double check_fd(const char *what, loss_fn loss, void *ctx, double *x, size_t n, const float *g,
                       size_t max_samples)
{
    size_t cnt = n < max_samples ? n : max_samples;
    double *num = dalloc(cnt);
    size_t *at = malloc(cnt * sizeof *at);
    assert_non_null(at);
    double scale = 0.0;
    for (size_t k = 0; k < cnt; k++) {
        size_t i = cnt == n ? k : (size_t)(((double)k + 0.5) * (double)n / (double)cnt);
        double x0 = x[i], h = FD_H * fmax(1.0, fabs(x0));
        x[i] = x0 + h;
        double fp = loss(ctx);
        x[i] = x0 - h;
        double fm = loss(ctx);
        x[i] = x0;
        num[k] = (fp - fm) / (2.0 * h);
        at[k] = i;
        scale = fmax(scale, fabs(num[k]));
    }
    double atol = fmax(1e-12, FD_ATOL * scale);
    double worst = 0.0, wn = 0.0, wa = 0.0;
    size_t wi = 0;
    for (size_t k = 0; k < cnt; k++) {
        double a = g[at[k]];
        if (g_fd_mode == FD_ZERO) a = 0.0;
        if (g_fd_mode == FD_NEGATED) a = -a;
        double e = fabs(a - num[k]) / (atol + FD_RTOL * fabs(num[k]));
        if (isnan(e)) e = INFINITY;
        if (e > worst) {
            worst = e;
            wi = at[k];
            wn = num[k];
            wa = a;
        }
    }
    free(num);
    free(at);
    if (g_fd_mode != FD_REAL) {
        g_fd_checks++;
        g_fd_rejected += !(worst <= 1.0) || scale == 0.0;
        return worst;
    }
    if (worst > g_max_fd) g_max_fd = worst;
    if (scale == 0.0)
        fail_msg("%s: every finite difference is 0: the check cannot tell a zero gradient from this one", what);
    if (!(worst <= 1.0))
        fail_msg("%s: finite-difference check failed at [%zu]: analytic %.9g, numeric %.9g: |a - n| = %.3g "
                 "exceeds %.0e x max|n| + %.0e x |n| = %.3g (%.3gx the bound)",
                 what, wi, wa, wn, fabs(wa - wn), FD_ATOL, FD_RTOL, atol + FD_RTOL * fabs(wn), worst);
    return worst;
}

/* ---- convolution ---------------------------------------------------------------- */

typedef struct {
    const conv2d_desc_t *d;
    int B;
    double *x, *w, *b, *y;
    const double *R;
    size_t ny;
} conv_ctx_t;

static double conv_loss(void *p)
{
    conv_ctx_t *c = p;
    ref_conv2d_forward(c->d, c->B, c->x, c->w, c->b, c->y);
    return dot(c->y, c->R, c->ny);
}

typedef struct {
    const char *name;
    int B, C, H, W, OC, KH, KW, stride, pad;
    int bias;
    int expect_chunks; /* the batch must not fit one chunk */
    size_t fd_samples;
} conv_case_t;

/* One convolution of any geometry (d filled by conv2d_init or conv2d_setup) against the
 * naive forward and backward and finite differences. */
static void run_conv_desc(const char *name, const conv2d_desc_t *dp, int B, int has_bias, int expect_chunks,
                          size_t fd_samples, uint64_t seed)
{
    lcg_t r = {seed};
    const conv2d_desc_t d = *dp;
    const conv_case_t ccv = {
        .name = name, .B = B, .bias = has_bias, .expect_chunks = expect_chunks, .fd_samples = fd_samples};
    const conv_case_t *cc = &ccv;
    const size_t nx = (size_t)B * d.C * d.H * d.W, nw = (size_t)d.OC * (d.C / d.groups) * d.KH * d.KW;
    const size_t ny = (size_t)B * d.OC * d.OH * d.OW, nb = (size_t)d.OC;
    const size_t nws = conv2d_workspace(&d, B);
    /* more than one chunk: less scratch than col + tmp for the whole batch (one thread:
     * more have a slice each) */
    if (cc->expect_chunks && par_threads() == 1)
        assert_true(nws < (size_t)B * (d.C * d.KH * d.KW + d.OC) * d.OH * d.OW);
    /* a smaller batch never needs more */
    assert_true(conv2d_workspace(&d, B > 1 ? B - 1 : 1) <= nws);

    float *x = falloc(nx), *w = falloc(nw), *bias = falloc(nb), *y = falloc(ny);
    float *g = falloc(ny), *dx = falloc(nx), *dx2 = falloc(nx), *dw = falloc(nw);
    float *dw2 = falloc(nw), *db = falloc(nb), *db2 = falloc(nb), *ws = falloc(nws);
    double *xd = dalloc(nx), *wd = dalloc(nw), *bd = dalloc(nb), *yd = dalloc(ny);
    double *Rd = dalloc(ny), *dxd = dalloc(nx), *dwd = dalloc(nw), *dbd = dalloc(nb);
    rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
    rand_fill(&r, w, wd, nw, -0.5f, 0.5f);
    rand_fill(&r, bias, bd, nb, -0.5f, 0.5f);
    rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
    const float *bp = cc->bias ? bias : NULL;
    double *bdp = cc->bias ? bd : NULL;
    char what[160];

    /* forward: every output written, equal to the direct convolution */
    ffill(y, ny, NAN);
    ffill(ws, nws, NAN);
    conv2d_forward(&d, B, x, w, bp, y, ws);
    ref_conv2d_forward(&d, B, xd, wd, bdp, yd);
    snprintf(what, sizeof what, "conv %s forward", cc->name);
    double e_fwd = check_close(what, y, yd, ny, conv2d_winograd(&d, B) ? WINO_TOL : FWD_TOL, &g_max_fwd);

    /* backward into zeroed dinp; parameter gradients pre-filled with NaN must be written */
    memset(dx, 0, nx * sizeof(float));
    ffill(dw, nw, NAN);
    ffill(db, nb, NAN);
    ffill(ws, nws, NAN);
    conv2d_backward(&d, B, x, w, g, dx, dw, cc->bias ? db : NULL, ws);
    ref_conv2d_backward(&d, B, xd, wd, Rd, dxd, dwd, dbd);
    const double btol = conv2d_winograd(&d, B) ? WINO_GRAD_TOL : BWD_TOL;
    snprintf(what, sizeof what, "conv %s dinp vs naive", cc->name);
    double e_bwd = check_close(what, dx, dxd, nx, btol, &g_max_bwd);
    snprintf(what, sizeof what, "conv %s dweight vs naive", cc->name);
    double e = check_close(what, dw, dwd, nw, btol, &g_max_bwd);
    e_bwd = fmax(e_bwd, e);
    if (cc->bias) {
        snprintf(what, sizeof what, "conv %s dbias vs naive", cc->name);
        e = check_close(what, db, dbd, nb, BWD_TOL, &g_max_bwd);
        e_bwd = fmax(e_bwd, e);
    }

    /* finite differences of f = sum(conv(x, w, b) * R) */
    conv_ctx_t ctx = {&d, B, xd, wd, bdp, yd, Rd, ny};
    snprintf(what, sizeof what, "conv %s dinp", cc->name);
    double e_fd = check_fd(what, conv_loss, &ctx, xd, nx, dx, cc->fd_samples);
    snprintf(what, sizeof what, "conv %s dweight", cc->name);
    e = check_fd(what, conv_loss, &ctx, wd, nw, dw, cc->fd_samples);
    e_fd = fmax(e_fd, e);
    if (cc->bias) {
        snprintf(what, sizeof what, "conv %s dbias", cc->name);
        e = check_fd(what, conv_loss, &ctx, bd, nb, db, cc->fd_samples);
        e_fd = fmax(e_fd, e);
    }

    /* dinp accumulates; without dinp the parameter gradients are unchanged */
    ffill(dx2, nx, PREFILL);
    ffill(ws, nws, NAN);
    conv2d_backward(&d, B, x, w, g, dx2, dw2, cc->bias ? db2 : NULL, ws);
    snprintf(what, sizeof what, "conv %s dinp", cc->name);
    check_acc(what, dx2, dx, PREFILL, nx);
    ffill(dw2, nw, NAN);
    ffill(db2, nb, NAN);
    ffill(ws, nws, NAN);
    conv2d_backward(&d, B, x, w, g, NULL, dw2, cc->bias ? db2 : NULL, ws);
    assert_memory_equal(dw, dw2, nw * sizeof(float));
    if (cc->bias) assert_memory_equal(db, db2, nb * sizeof(float));

    print_message("conv %-28s ws %7zu floats  fwd %.1e  bwd-vs-naive %.1e  fd %.1e\n", cc->name, nws, e_fwd, e_bwd,
                  e_fd);

    free(x);
    free(w);
    free(bias);
    free(y);
    free(g);
    free(dx);
    free(dx2);
    free(dw);
    free(dw2);
    free(db);
    free(db2);
    free(ws);
    free(xd);
    free(wd);
    free(bd);
    free(yd);
    free(Rd);
    free(dxd);
    free(dwd);
    free(dbd);
}

static void run_conv_case(const conv_case_t *cc, uint64_t seed)
{
    conv2d_desc_t d;
    assert_int_equal(conv2d_init(&d, cc->C, cc->H, cc->W, cc->OC, cc->KH, cc->KW, cc->stride, cc->pad), 0);
    assert_int_equal(d.OH, (cc->H + 2 * cc->pad - cc->KH) / cc->stride + 1);
    assert_int_equal(d.OW, (cc->W + 2 * cc->pad - cc->KW) / cc->stride + 1);
    run_conv_desc(cc->name, &d, cc->B, cc->bias, cc->expect_chunks, cc->fd_samples, seed);
}

static void test_conv_geometries(void **state)
{
    static const conv_case_t cases[] = {
        /* name                    B  C   H   W OC KH KW s p bias chunks fd */
        {"3x3 s1 p1 non-square", 2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 0, 1000},
        {"3x3 s2 p0", 2, 2, 9, 8, 3, 3, 3, 2, 0, 1, 0, 1000},
        {"3x3 s2 p1", 3, 2, 8, 7, 3, 3, 3, 2, 1, 0, 0, 1000},
        {"5x5 s1 p2", 3, 1, 12, 12, 2, 5, 5, 1, 2, 1, 0, 1000},
        {"5x5 s1 p0 C>1", 2, 3, 9, 10, 4, 5, 5, 1, 0, 1, 0, 1000},
        {"1x1 s1 p0", 2, 3, 5, 7, 4, 1, 1, 1, 0, 1, 0, 1000},
        {"1x1 s2 p0", 2, 3, 6, 5, 2, 1, 1, 2, 0, 1, 0, 1000},
        {"3x2 s2 p1 (KH != KW)", 2, 2, 8, 7, 3, 3, 2, 2, 1, 1, 0, 1000},
        {"3x3 p1 on 2x2 input", 2, 2, 2, 2, 2, 3, 3, 1, 1, 1, 0, 1000},
        {"5x5 s3 p2", 2, 2, 11, 13, 2, 5, 5, 3, 2, 1, 0, 1000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_conv_case(&cases[i], 100 + i);
}

static void test_conv_chunked(void **state)
{
    /* Batches larger than one chunk, the last chunk partial. Every gradient element is
     * compared with the naive backward; finite differences (one naive forward pass of
     * the whole batch per evaluation) only spot-check a few, spread over all chunks. */
    static const conv_case_t cases[] = {
        /* name                        B   C   H   W  OC KH KW s p bias chunks fd */
        {"3x3 s1 p1 B=200 chunked", 200, 2, 9, 9, 3, 3, 3, 1, 1, 1, 1, 16},
        {"LeNet conv1 B=20", 20, 1, 28, 28, 6, 5, 5, 1, 2, 1, 1, 5},
        {"LeNet conv2 B=19", 19, 6, 14, 14, 16, 5, 5, 1, 0, 1, 1, 5},
        {"ResNet 3x3 s2 B=9", 9, 16, 16, 16, 8, 3, 3, 2, 1, 0, 1, 8},
        /* chunks of 7 images = 1792 columns, a padded row stride; then a lone image */
        {"3x3 s1 p1 16x16 B=8", 8, 4, 16, 16, 3, 3, 3, 1, 1, 1, 1, 8},
        /* one image per chunk, written straight into out */
        {"ResNet 3x3 s1 16ch B=2", 2, 16, 16, 16, 4, 3, 3, 1, 1, 1, 1, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_conv_case(&cases[i], 200 + i);
}

static void test_conv_init(void **state)
{
    conv2d_desc_t d;
    assert_int_equal(conv2d_init(&d, 1, 2, 2, 1, 5, 5, 1, 0), -1); /* empty output */
    assert_int_equal(conv2d_init(&d, 1, 4, 4, 1, 3, 3, 0, 0), -1); /* stride 0 */
    assert_int_equal(conv2d_init(&d, 1, 28, 28, 6, 5, 5, 1, 2), 0);
    assert_int_equal(d.OH, 28);
    assert_int_equal(d.OW, 28);
    assert_int_equal(conv2d_init(&d, 3, 32, 31, 8, 3, 3, 2, 1), 0);
    assert_int_equal(d.OH, 16);
    assert_int_equal(d.OW, 16);
}

/* ---- pooling -------------------------------------------------------------------- */

typedef struct {
    const pool2d_desc_t *d;
    int B, is_max;
    double *x, *y;
    const double *R;
    size_t ny;
} pool_ctx_t;

static double pool_loss(void *p)
{
    pool_ctx_t *c = p;
    if (c->is_max) ref_maxpool2d_forward(c->d, c->B, c->x, c->y, NULL);
    else ref_avgpool2d_forward(c->d, c->B, c->x, c->y);
    return dot(c->y, c->R, c->ny);
}

static void test_pool_sizes(void **state)
{
    pool2d_desc_t d;
    /* Caffe's cifar10_quick pools: 32 -> 16 in ceil mode, 15 in floor mode */
    assert_int_equal(pool2d_init(&d, 32, 32, 32, 3, 2, 0, 1), 0);
    assert_int_equal(d.OH, 16);
    assert_int_equal(d.OW, 16);
    assert_int_equal(pool2d_init(&d, 32, 32, 32, 3, 2, 0, 0), 0);
    assert_int_equal(d.OH, 15);
    assert_int_equal(pool2d_init(&d, 1, 16, 16, 3, 2, 0, 1), 0);
    assert_int_equal(d.OH, 8);
    assert_int_equal(pool2d_init(&d, 1, 16, 16, 3, 2, 0, 0), 0);
    assert_int_equal(d.OH, 7);
    /* LeNet 2x2/2: 28 -> 14 either way */
    assert_int_equal(pool2d_init(&d, 6, 28, 28, 2, 2, 0, 0), 0);
    assert_int_equal(d.OH, 14);
    assert_int_equal(pool2d_init(&d, 6, 28, 28, 2, 2, 0, 1), 0);
    assert_int_equal(d.OH, 14);
    /* odd sizes: H 7 -> 3 (floor) or 4 (ceil), W 9 -> 4 or 5 */
    assert_int_equal(pool2d_init(&d, 1, 7, 9, 2, 2, 0, 0), 0);
    assert_int_equal(d.OH, 3);
    assert_int_equal(d.OW, 4);
    assert_int_equal(pool2d_init(&d, 1, 7, 9, 2, 2, 0, 1), 0);
    assert_int_equal(d.OH, 4);
    assert_int_equal(d.OW, 5);
    /* ceil would give 4, but the 4th window would start at 6 - 1 = 5 >= H: dropped */
    assert_int_equal(pool2d_init(&d, 1, 5, 5, 2, 2, 1, 1), 0);
    assert_int_equal(d.OH, 3);
    assert_int_equal(pool2d_init(&d, 1, 5, 5, 2, 2, 1, 0), 0);
    assert_int_equal(d.OH, 3);
    /* a 3x3/2 window in ceil mode on a 2x2 plane: one output (PyTorch's and ONNX's count),
     * not a refusal; with stride 1 (or in floor mode) PyTorch gives none, nor do we */
    assert_int_equal(pool2d_init(&d, 1, 2, 2, 3, 2, 0, 1), 0);
    assert_int_equal(d.OH, 1);
    assert_int_equal(d.OW, 1);
    assert_int_equal(pool2d_init(&d, 1, 2, 2, 3, 1, 0, 1), -1);
    /* errors: window larger than the padded input; pad over K/2 */
    assert_int_equal(pool2d_init(&d, 1, 2, 2, 3, 1, 0, 0), -1);
    assert_int_equal(pool2d_init(&d, 1, 8, 8, 2, 2, 2, 0), -1);
}

typedef struct {
    const char *name;
    int B, C, H, W, K, stride, pad, ceil_mode;
} pool_case_t;

static const pool_case_t pool_cases[] = {
    {"2x2/2 floor", 2, 3, 8, 6, 2, 2, 0, 0},    {"3x3/2 ceil 9x9", 2, 2, 9, 9, 3, 2, 0, 1},
    {"3x3/2 ceil 8x7", 2, 2, 8, 7, 3, 2, 0, 1}, {"3x3/2 floor 8x7", 2, 2, 8, 7, 3, 2, 0, 0},
    {"3x3/2 p1 ceil", 2, 2, 7, 6, 3, 2, 1, 1},  {"2x2/2 p1 ceil (drop)", 1, 2, 5, 5, 2, 2, 1, 1},
    {"3x3/1 p1 floor", 2, 1, 5, 4, 3, 1, 1, 0}, {"3x3/2 ceil 2x2 (window past the plane)", 2, 3, 2, 2, 3, 2, 0, 1},
};

/* One pooling of any geometry (d filled by pool2d_init or pool2d_setup) against the naive
 * forward (and argmax) and finite differences. */
static void run_pool_desc(const char *name, const pool2d_desc_t *dp, int B, int is_max, uint64_t seed)
{
    lcg_t r = {seed};
    const pool2d_desc_t d = *dp;
    const pool_case_t pcv = {.name = name};
    const pool_case_t *pc = &pcv;
    const size_t nx = (size_t)B * d.C * d.H * d.W, ny = (size_t)B * d.C * d.OH * d.OW;
    float *x = falloc(nx), *y = falloc(ny), *g = falloc(ny), *dx = falloc(nx), *dx2 = falloc(nx);
    int32_t *am = malloc(ny * sizeof(int32_t)), *amd = malloc(ny * sizeof(int32_t));
    double *xd = dalloc(nx), *yd = dalloc(ny), *Rd = dalloc(ny);
    assert_non_null(am);
    assert_non_null(amd);
    /* distinct values 0.01 apart in scrambled order (7919 is prime and nx < 7919),
     * so every max is unique and stays the max under a step of 1e-5 */
    assert_true(nx < 7919);
    for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 7919 + 13) % nx) * 0.01f - 0.005f * (float)nx;
    to_double(x, xd, nx);
    rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
    char what[160];

    ffill(y, ny, NAN);
    if (is_max) {
        maxpool2d_forward(&d, B, x, y, am);
        ref_maxpool2d_forward(&d, B, xd, yd, amd);
        assert_memory_equal(am, amd, ny * sizeof(int32_t));
    } else {
        avgpool2d_forward(&d, B, x, y);
        ref_avgpool2d_forward(&d, B, xd, yd);
    }
    snprintf(what, sizeof what, "%s %s forward", is_max ? "maxpool" : "avgpool", pc->name);
    double e_fwd = check_close(what, y, yd, ny, FWD_TOL, &g_max_fwd);

    memset(dx, 0, nx * sizeof(float));
    if (is_max) maxpool2d_backward(&d, B, g, am, dx);
    else avgpool2d_backward(&d, B, g, dx);
    pool_ctx_t ctx = {&d, B, is_max, xd, yd, Rd, ny};
    snprintf(what, sizeof what, "%s %s dinp", is_max ? "maxpool" : "avgpool", pc->name);
    double e_fd = check_fd(what, pool_loss, &ctx, xd, nx, dx, 100000);

    ffill(dx2, nx, PREFILL);
    if (is_max) maxpool2d_backward(&d, B, g, am, dx2);
    else avgpool2d_backward(&d, B, g, dx2);
    check_acc(what, dx2, dx, PREFILL, nx);
    print_message("%s %-22s %dx%d -> %dx%d  fwd %.1e  fd %.1e\n", is_max ? "maxpool" : "avgpool", pc->name, d.H, d.W,
                  d.OH, d.OW, e_fwd, e_fd);

    free(x);
    free(y);
    free(g);
    free(dx);
    free(dx2);
    free(am);
    free(amd);
    free(xd);
    free(yd);
    free(Rd);
}

static void run_pool_case(const pool_case_t *pc, int is_max, uint64_t seed)
{
    pool2d_desc_t d;
    assert_int_equal(pool2d_init(&d, pc->C, pc->H, pc->W, pc->K, pc->stride, pc->pad, pc->ceil_mode), 0);
    run_pool_desc(pc->name, &d, pc->B, is_max, seed);
}

static void test_maxpool(void **state)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) run_pool_case(&pool_cases[i], 1, 300 + i);

    /* ties keep the first element of the window; argmax is a flat index into H*W */
    pool2d_desc_t d;
    assert_int_equal(pool2d_init(&d, 1, 2, 4, 2, 2, 0, 0), 0);
    const float x[8] = {1, 3, 2, 2, 3, 0, 2, 2};
    float y[2];
    int32_t am[2];
    maxpool2d_forward(&d, 1, x, y, am);
    assert_true(y[0] == 3.0f && y[1] == 2.0f);
    assert_int_equal(am[0], 1);
    assert_int_equal(am[1], 2);
}

/* The vectorised 2x2/stride-2 paths (blocks of 8 outputs with an overlapping last block,
 * blocks of 4 for rows of 4..7 outputs, scalar below 4) against the rule written out
 * plainly: first maximum in row-major order, a NaN wins and stays. Values from
 * {0, 1, 2, 3} make ties common; a few NaNs sit in different window slots. Widths cover
 * OW = 3, 5 (LeNet's second pool), 8, 14 (LeNet's first), 15 and an odd input width. */
static void check_maxpool_2x2(int H, int W, uint64_t seed)
{
    enum { B = 3, C = 2 };
    pool2d_desc_t d;
    assert_int_equal(pool2d_init(&d, C, H, W, 2, 2, 0, 0), 0);
    const int OH = d.OH, OW = d.OW;
    size_t nx = (size_t)B * C * H * W, ny = (size_t)B * C * OH * OW;
    float *x = falloc(nx), *y = falloc(ny);
    int32_t *am = malloc(ny * sizeof(int32_t));
    assert_non_null(am);
    lcg_t r = {seed};
    for (size_t i = 0; i < nx; i++) {
        x[i] = (float)(lcg_next(&r) % 4);
        if (lcg_next(&r) % 53 == 0) x[i] = NAN;
    }
    maxpool2d_forward(&d, B, x, y, am);
    for (int pl = 0; pl < B * C; pl++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                const float *p = x + (size_t)pl * H * W;
                int best = 2 * oh * W + 2 * ow;
                float m = p[best];
                for (int dh = 0; dh < 2; dh++)
                    for (int dw = 0; dw < 2; dw++) {
                        int i = (2 * oh + dh) * W + 2 * ow + dw;
                        float v = p[i];
                        if (v > m || (isnan(v) && !isnan(m))) {
                            m = v;
                            best = i;
                        }
                    }
                size_t o = ((size_t)pl * OH + oh) * OW + ow;
                if (am[o] != best) fail_msg("2x2 pool %dx%d: argmax[%zu] = %d, want %d", H, W, o, am[o], best);
                assert_true(isnan(m) ? isnan(y[o]) : y[o] == m);
            }
    free(x);
    free(y);
    free(am);
}

static void test_maxpool_2x2_fast_path(void **state)
{
    (void)state;
    static const int widths[] = {6, 10, 16, 28, 30, 31};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) check_maxpool_2x2(12, widths[i], 77 + i);
    check_maxpool_2x2(28, 28, 91);
    check_maxpool_2x2(10, 10, 92);
}

static void test_avgpool(void **state)
{
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) run_pool_case(&pool_cases[i], 0, 400 + i);

    /* ceil-mode edge windows average only what lies inside the input:
     *   1 2 3
     *   4 5 6   2x2/2 ceil -> [(1+2+4+5)/4, (3+6)/2; (7+8)/2, 9]
     *   7 8 9 */
    pool2d_desc_t d;
    assert_int_equal(pool2d_init(&d, 1, 3, 3, 2, 2, 0, 1), 0);
    assert_int_equal(d.OH, 2);
    assert_int_equal(d.OW, 2);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float y[4];
    avgpool2d_forward(&d, 1, x, y);
    assert_float_equal(y[0], 3.0f, 1e-6f);
    assert_float_equal(y[1], 4.5f, 1e-6f);
    assert_float_equal(y[2], 7.5f, 1e-6f);
    assert_float_equal(y[3], 9.0f, 1e-6f);
    /* the backward spreads each output gradient over the elements it averaged */
    const float g[4] = {4, 2, 2, 1};
    float dx[9] = {0};
    avgpool2d_backward(&d, 1, g, dx);
    const float want[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 9; i++) assert_float_equal(dx[i], want[i], 1e-6f);
    /* same geometry in floor mode: one window */
    assert_int_equal(pool2d_init(&d, 1, 3, 3, 2, 2, 0, 0), 0);
    assert_int_equal(d.OH, 1);
}

/* ---- elementwise ---------------------------------------------------------------- */

typedef struct {
    double *x, *y;
    const double *R;
    size_t n;
} relu_ctx_t;

static double relu_loss(void *p)
{
    relu_ctx_t *c = p;
    for (size_t i = 0; i < c->n; i++) c->y[i] = c->x[i] > 0 ? c->x[i] : 0.0;
    return dot(c->y, c->R, c->n);
}

static void test_relu(void **state)
{
    lcg_t r = {500};
    const size_t n = 1037; /* not a multiple of any vector width */
    float *x = falloc(n), *y = falloc(n), *g = falloc(n), *dx = falloc(n), *dx2 = falloc(n);
    double *xd = dalloc(n), *yd = dalloc(n), *Rd = dalloc(n);
    /* keep |x| >= 0.05 so a finite-difference step never crosses the kink */
    for (size_t i = 0; i < n; i++) {
        float v = lcg_unif(&r, 0.05f, 2.0f);
        x[i] = (lcg_next(&r) & 1) ? v : -v;
    }
    x[7] = 0.0f; /* relu(0) = 0, and no gradient flows (out > 0 is false) */
    to_double(x, xd, n);
    rand_fill(&r, g, Rd, n, -1.0f, 1.0f);

    relu_forward(n, x, y);
    for (size_t i = 0; i < n; i++) assert_true(y[i] == (x[i] > 0.0f ? x[i] : 0.0f));
    relu_ctx_t ctx = {xd, yd, Rd, n};
    relu_loss(&ctx);
    check_close("relu forward", y, yd, n, FWD_TOL, &g_max_fwd);

    memset(dx, 0, n * sizeof(float));
    relu_backward(n, y, g, dx);
    for (size_t i = 0; i < n; i++) assert_true(dx[i] == (x[i] > 0.0f ? g[i] : 0.0f));
    xd[7] = 0.5; /* the FD check needs a differentiable point; its gradient is g */
    dx[7] = g[7];
    double e = check_fd("relu dinp", relu_loss, &ctx, xd, n, dx, 100000);
    dx[7] = 0.0f;
    ffill(dx2, n, PREFILL);
    relu_backward(n, y, g, dx2);
    check_acc("relu dinp", dx2, dx, PREFILL, n);
    relu_backward(n, y, g, NULL); /* dinp may be NULL */
    /* the _set backward: what += gives into zeros, whatever dinp held (a -0 included) */
    for (size_t i = 0; i < n; i++)
        if (y[i] > 0.0f) {
            g[i] = -0.0f;
            break;
        }
    memset(dx, 0, n * sizeof(float));
    relu_backward(n, y, g, dx);
    ffill(dx2, n, NAN);
    relu_backward_set(n, y, g, dx2);
    assert_memory_equal(dx2, dx, n * sizeof(float));

    /* in place */
    memcpy(dx2, x, n * sizeof(float));
    relu_forward(n, dx2, dx2);
    assert_memory_equal(dx2, y, n * sizeof(float));
    print_message("relu fd %.1e\n", e);

    free(x);
    free(y);
    free(g);
    free(dx);
    free(dx2);
    free(xd);
    free(yd);
    free(Rd);
}

typedef struct {
    const shortcut_desc_t *d;
    int B;
    double *a, *x, *y;
    const double *R;
    size_t ny;
} sc_ctx_t;

static double sc_loss(void *p)
{
    sc_ctx_t *c = p;
    ref_shortcut_add_forward(c->d, c->B, c->a, c->x, c->y);
    return dot(c->y, c->R, c->ny);
}

static void test_residual_add(void **state)
{
    static const struct {
        int B, C, H, W, OC, stride, OH, OW;
    } cases[] = {
        {2, 3, 5, 4, 3, 1, 5, 4},                           /* identity */
        {2, 4, 5, 5, 8, 2, 3, 3},                           /* ResNet downsampling, odd size */
        {2, 4, 8, 6, 8, 2, 4, 3}, {1, 4, 6, 7, 7, 2, 3, 4}, /* odd channel gap: offset (7-4)/2 = 1 */
        {2, 3, 4, 4, 5, 1, 4, 4},                           /* channel padding only */
        {1, 2, 7, 7, 2, 3, 3, 3},                           /* subsampling only */
    };
    shortcut_desc_t d;
    assert_int_equal(shortcut_init(&d, 4, 8, 8, 2, 1), -1); /* OC < C */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lcg_t r = {600 + k};
        assert_int_equal(shortcut_init(&d, cases[k].C, cases[k].H, cases[k].W, cases[k].OC, cases[k].stride), 0);
        assert_int_equal(d.OH, cases[k].OH);
        assert_int_equal(d.OW, cases[k].OW);
        const int B = cases[k].B;
        const size_t nx = (size_t)B * d.C * d.H * d.W, ny = (size_t)B * d.OC * d.OH * d.OW;
        float *a = falloc(ny), *x = falloc(nx), *y = falloc(ny), *g = falloc(ny);
        float *da = falloc(ny), *dx = falloc(nx), *da2 = falloc(ny), *dx2 = falloc(nx);
        double *ad = dalloc(ny), *xd = dalloc(nx), *yd = dalloc(ny), *Rd = dalloc(ny);
        rand_fill(&r, a, ad, ny, -1.0f, 1.0f);
        rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
        rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
        char what[96];

        ffill(y, ny, NAN);
        residual_add_forward(&d, B, a, x, y);
        ref_shortcut_add_forward(&d, B, ad, xd, yd);
        snprintf(what, sizeof what, "residual case %zu forward", k);
        check_close(what, y, yd, ny, FWD_TOL, &g_max_fwd);

        memset(da, 0, ny * sizeof(float));
        memset(dx, 0, nx * sizeof(float));
        residual_add_backward(&d, B, g, da, dx);
        sc_ctx_t ctx = {&d, B, ad, xd, yd, Rd, ny};
        snprintf(what, sizeof what, "residual case %zu da", k);
        check_fd(what, sc_loss, &ctx, ad, ny, da, 100000);
        snprintf(what, sizeof what, "residual case %zu dx", k);
        check_fd(what, sc_loss, &ctx, xd, nx, dx, 100000);

        ffill(da2, ny, PREFILL);
        ffill(dx2, nx, PREFILL);
        residual_add_backward(&d, B, g, da2, dx2);
        check_acc(what, da2, da, PREFILL, ny);
        check_acc(what, dx2, dx, PREFILL, nx);
        /* either gradient may be NULL */
        ffill(dx2, nx, PREFILL);
        residual_add_backward(&d, B, g, NULL, dx2);
        check_acc(what, dx2, dx, PREFILL, nx);
        ffill(da2, ny, PREFILL);
        residual_add_backward(&d, B, g, da2, NULL);
        check_acc(what, da2, da, PREFILL, ny);
        /* the _set backward: da, and dx at stride 1, what += gives into zeros whatever
         * they held (a -0 gradient included); a strided dx is added to as before */
        g[0] = -0.0f;
        memset(da, 0, ny * sizeof(float));
        ffill(dx, nx, 0.25f);
        residual_add_backward(&d, B, g, da, dx);
        ffill(da2, ny, NAN);
        ffill(dx2, nx, d.stride == 1 ? NAN : 0.25f);
        residual_add_backward_set(&d, B, g, da2, 1, dx2, 1);
        if (d.stride == 1) {
            memset(dx, 0, nx * sizeof(float));
            residual_add_backward(&d, B, g, NULL, dx);
        }
        assert_memory_equal(da2, da, ny * sizeof(float));
        assert_memory_equal(dx2, dx, nx * sizeof(float));

        /* in place on a: out == a */
        memcpy(da2, a, ny * sizeof(float));
        residual_add_forward(&d, B, da2, x, da2);
        assert_memory_equal(da2, y, ny * sizeof(float));

        free(a);
        free(x);
        free(y);
        free(g);
        free(da);
        free(dx);
        free(da2);
        free(dx2);
        free(ad);
        free(xd);
        free(yd);
        free(Rd);
    }
}

typedef struct {
    int B, C, HW;
    double *x, *y;
    const double *R;
} gap_ctx_t;

static double gap_loss(void *p)
{
    gap_ctx_t *c = p;
    ref_gap_forward(c->B, c->C, c->HW, c->x, c->y);
    return dot(c->y, c->R, (size_t)c->B * c->C);
}

static void test_gap(void **state)
{
    static const int shapes[][3] = {{2, 3, 64}, {3, 2, 13}, {1, 4, 1}};
    for (size_t k = 0; k < 3; k++) {
        lcg_t r = {700 + k};
        const int B = shapes[k][0], C = shapes[k][1], HW = shapes[k][2];
        const size_t nx = (size_t)B * C * HW, ny = (size_t)B * C;
        float *x = falloc(nx), *y = falloc(ny), *g = falloc(ny), *dx = falloc(nx), *dx2 = falloc(nx);
        double *xd = dalloc(nx), *yd = dalloc(ny), *Rd = dalloc(ny);
        rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
        rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
        gap_ctx_t ctx = {B, C, HW, xd, yd, Rd};
        gap_forward(B, C, HW, x, y);
        gap_loss(&ctx);
        check_close("gap forward", y, yd, ny, FWD_TOL, &g_max_fwd);
        memset(dx, 0, nx * sizeof(float));
        gap_backward(B, C, HW, g, dx);
        check_fd("gap dinp", gap_loss, &ctx, xd, nx, dx, 100000);
        ffill(dx2, nx, PREFILL);
        gap_backward(B, C, HW, g, dx2);
        check_acc("gap dinp", dx2, dx, PREFILL, nx);
        free(x);
        free(y);
        free(g);
        free(dx);
        free(dx2);
        free(xd);
        free(yd);
        free(Rd);
    }
}

/* ---- fully connected ------------------------------------------------------------ */

typedef struct {
    int B, IN, OUT;
    double *x, *w, *b, *y;
    const double *R;
} fc_ctx_t;

static double fc_loss(void *p)
{
    fc_ctx_t *c = p;
    ref_fc_forward(c->B, c->IN, c->OUT, c->x, c->w, c->b, c->y);
    return dot(c->y, c->R, (size_t)c->B * c->OUT);
}

static void test_fc(void **state)
{
    static const int shapes[][4] = {{5, 7, 3, 1}, {33, 50, 10, 1}, {4, 9, 6, 0}, {1, 1, 1, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        lcg_t r = {800 + k};
        const int B = shapes[k][0], IN = shapes[k][1], OUT = shapes[k][2], has_b = shapes[k][3];
        const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
        float *x = falloc(nx), *w = falloc(nw), *b = falloc(OUT), *y = falloc(ny), *g = falloc(ny);
        float *dx = falloc(nx), *dx2 = falloc(nx), *dw = falloc(nw), *db = falloc(OUT);
        float *dw2 = falloc(nw), *db2 = falloc(OUT);
        double *xd = dalloc(nx), *wd = dalloc(nw), *bd = dalloc(OUT), *yd = dalloc(ny);
        double *Rd = dalloc(ny);
        rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
        rand_fill(&r, w, wd, nw, -0.5f, 0.5f);
        rand_fill(&r, b, bd, OUT, -0.5f, 0.5f);
        rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
        fc_ctx_t ctx = {B, IN, OUT, xd, wd, has_b ? bd : NULL, yd, Rd};

        ffill(y, ny, NAN);
        fc_forward(B, IN, OUT, x, w, has_b ? b : NULL, y);
        fc_loss(&ctx);
        check_close("fc forward", y, yd, ny, FWD_TOL, &g_max_fwd);

        memset(dx, 0, nx * sizeof(float));
        ffill(dw, nw, NAN);
        ffill(db, OUT, NAN);
        fc_backward(B, IN, OUT, x, w, g, dx, dw, has_b ? db : NULL);
        check_fd("fc dinp", fc_loss, &ctx, xd, nx, dx, 100000);
        check_fd("fc dweight", fc_loss, &ctx, wd, nw, dw, 100000);
        if (has_b) check_fd("fc dbias", fc_loss, &ctx, bd, OUT, db, 100000);
        if (has_b) {
            /* the bias gradient is each column of g summed over the rows in order, in float:
             * the bits of the plain loop below whichever clone (AVX2 or not) ran */
            for (int o = 0; o < OUT; o++) {
                float want = g[o];
                for (int i = 1; i < B; i++) want += g[(size_t)i * OUT + o];
                if (memcmp(&want, &db[o], sizeof want)) fail_msg("fc dbias[%d] %.9g, in order %.9g", o, db[o], want);
            }
        }

        ffill(dx2, nx, PREFILL);
        fc_backward(B, IN, OUT, x, w, g, dx2, dw2, has_b ? db2 : NULL);
        check_acc("fc dinp", dx2, dx, PREFILL, nx);
        ffill(dw2, nw, NAN);
        ffill(db2, OUT, NAN);
        fc_backward(B, IN, OUT, x, w, g, NULL, dw2, has_b ? db2 : NULL);
        assert_memory_equal(dw, dw2, nw * sizeof(float));
        if (has_b) assert_memory_equal(db, db2, OUT * sizeof(float));

        free(x);
        free(w);
        free(b);
        free(y);
        free(g);
        free(dx);
        free(dx2);
        free(dw);
        free(db);
        free(dw2);
        free(db2);
        free(xd);
        free(wd);
        free(bd);
        free(yd);
        free(Rd);
    }
}

/* ---- one row through a linear layer (gemv.h) ------------------------------------ */

/* gemv_forward, its own kernel and OpenBLAS's each, against ref_fc_forward of one row over
 * every remainder of IN by the own kernel's 16 lanes and of OUT by its 4 rows, IN or OUT 0
 * included, with and without a bias. The bound is the float error of any order of summing
 * n = IN + 1 terms (the IN rounded products and the bias; Higham, "Accuracy and Stability of
 * Numerical Algorithms", 2nd ed., eq. 3.5 and lemma 3.1): |y - exact| <= gamma(IN + 2) *
 * (sum_i |w_i x_i| + |b|), gamma(k) = k u / (1 - k u), u = 2^-24: each term meets at most
 * IN additions on its way to the result (the depth of the summation tree), one rounding of
 * its product, and FMA's single rounding (OpenBLAS) is within it. A missed or doubled
 * term is off by about |w_i x_i|, far above it. Nothing past out[OUT - 1] is written. */
static void check_gemv(int IN, int OUT, int has_b, lcg_t *r)
{
    const size_t nw = (size_t)OUT * IN;
    float *x = falloc((size_t)IN), *w = falloc(nw), *b = falloc((size_t)OUT), *y = falloc((size_t)OUT + 1);
    double *xd = dalloc((size_t)IN), *wd = dalloc(nw), *bd = dalloc((size_t)OUT), *yd = dalloc((size_t)OUT);
    rand_fill(r, x, xd, (size_t)IN, -1.0f, 1.0f);
    rand_fill(r, w, wd, nw, -0.5f, 0.5f);
    rand_fill(r, b, bd, (size_t)OUT, -0.5f, 0.5f);
    ffill(y, (size_t)OUT + 1, NAN);
    gemv_forward(IN, OUT, x, w, has_b ? b : NULL, y);
    if (OUT > 0) ref_fc_forward(1, IN, OUT, xd, wd, has_b ? bd : NULL, yd);
    const double u = 0x1p-24, k = IN + 2, gamma = k * u / (1.0 - k * u);
    for (int o = 0; o < OUT; o++) {
        double mag = has_b ? fabs(bd[o]) : 0.0;
        for (int i = 0; i < IN; i++) mag += fabs(wd[(size_t)o * IN + i] * xd[i]);
        if (!(fabs(y[o] - yd[o]) <= gamma * mag))
            fail_msg("gemv IN %d OUT %d bias %d: out[%d] = %.9g, reference %.9g, bound %.3g", IN, OUT, has_b, o,
                     (double)y[o], yd[o], gamma * mag);
        if (IN == 0) assert_true(y[o] == (has_b ? b[o] : 0.0f)); /* exactly */
    }
    assert_true(isnan(y[OUT > 0 ? OUT : 0]));
    free(x), free(w), free(b), free(y), free(xd), free(wd), free(bd), free(yd);
}

static void test_gemv(void **state)
{
    /* IN 0 to 2 x GEMV_LANES + 1 (every remainder, with and without a whole lane before
     * it), then a GPT's widths */
    static const int wide_ins[] = {48, 383, 384, 1539};
    static const int outs[] = {0, 1, 3, 4, 5, 7, 8, 13};
    static const int kinds[] = {GEMV_OWN, GEMV_OPENBLAS, GEMV_AUTO};
    const int nnarrow = 2 * GEMV_LANES + 2, nins = nnarrow + (int)(sizeof wide_ins / sizeof wide_ins[0]);
    lcg_t r = {61};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        gemv_force(kinds[k]);
        for (int i = 0; i < nins; i++)
            for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
                for (int has_b = 0; has_b < 2; has_b++)
                    check_gemv(i < nnarrow ? i : wide_ins[i - nnarrow], outs[o], has_b, &r);
    }
    /* a weight of a GPT of width 384 (the 4 x 384 projection's shape) */
    gemv_force(GEMV_OWN);
    check_gemv(1536, 384, 1, &r);
    gemv_force(GEMV_AUTO);
}

/* ---- softmax cross-entropy ------------------------------------------------------ */

typedef struct {
    int B, N;
    double *x;
    const int32_t *labels;
    double eps; /* label smoothing */
} xent_ctx_t;

static double xent_loss(void *p)
{
    xent_ctx_t *c = p;
    return ref_softmax_xent(c->B, c->N, c->x, c->labels, c->eps, NULL);
}

static void test_softmax_xent(void **state)
{
    lcg_t r = {900};
    enum { B = 7, N = 10 };
    float x[B * N], probs[B * N], g[B * N], g2[B * N];
    double xd[B * N], pd[B * N];
    int32_t labels[B];
    rand_fill(&r, x, xd, B * N, -3.0f, 3.0f);
    for (int b = 0; b < B; b++) labels[b] = (int32_t)(lcg_next(&r) % N);

    float loss = softmax_xent_forward(B, N, x, labels, 0.0f, probs);
    double want = ref_softmax_xent(B, N, xd, labels, 0.0, pd);
    double e = relerr(loss, want);
    if (!(e < FWD_TOL)) fail_msg("xent loss %.9g, want %.9g: error %.3g >= %.0e", loss, want, e, FWD_TOL);
    if (e > g_max_fwd) g_max_fwd = e;
    check_close("softmax probs", probs, pd, B * N, FWD_TOL, &g_max_fwd);

    /* dlogits written (=) over NaN; d(mean loss)/dlogits with scale 1 */
    ffill(g, B * N, NAN);
    softmax_xent_backward(B, N, probs, labels, 0.0f, 1.0f, g);
    xent_ctx_t ctx = {B, N, xd, labels, 0.0};
    double efd = check_fd("xent dlogits", xent_loss, &ctx, xd, B * N, g, 100000);
    /* scale multiplies the gradient */
    softmax_xent_backward(B, N, probs, labels, 0.0f, 0.25f, g2);
    for (int i = 0; i < B * N; i++) assert_float_equal(g2[i], 0.25f * g[i], 1e-7f);
    print_message("softmax-xent loss err %.1e  fd %.1e\n", e, efd);

    /* label smoothing 0.1 (torch.nn.CrossEntropyLoss's): the loss against the reference,
     * the gradient against its finite differences */
    const float ls = 0.1f;
    loss = softmax_xent_forward(B, N, x, labels, ls, probs);
    want = ref_softmax_xent(B, N, xd, labels, ls, NULL);
    e = relerr(loss, want);
    if (!(e < FWD_TOL)) fail_msg("smoothed xent loss %.9g, want %.9g: error %.3g >= %.0e", loss, want, e, FWD_TOL);
    ffill(g, B * N, NAN);
    softmax_xent_backward(B, N, probs, labels, ls, 1.0f, g);
    ctx.eps = ls;
    efd = check_fd("smoothed xent dlogits", xent_loss, &ctx, xd, B * N, g, 100000);
    print_message("softmax-xent smoothing 0.1: loss err %.1e  fd %.1e\n", e, efd);

    /* huge logits: finite and exact, no overflow in exp */
    const float big[2 * 3] = {1000.0f, 0.0f, -1000.0f, 1000.0f, 1000.0f, 1000.0f};
    const int32_t lab_a[2] = {0, 2};
    float pb[6];
    loss = softmax_xent_forward(2, 3, big, lab_a, 0.0f, pb);
    assert_true(isfinite(loss));
    /* row 0: loss 0 (exp(-1000) underflows to 0); row 1: log(3) */
    assert_float_equal(loss, (float)(log(3.0) / 2.0), 1e-6f);
    assert_float_equal(pb[0], 1.0f, 1e-7f);
    assert_float_equal(pb[3], 1.0f / 3.0f, 1e-7f);
    const int32_t lab_b[2] = {1, 0};
    loss = softmax_xent_forward(2, 3, big, lab_b, 0.0f, pb);
    assert_true(isfinite(loss));
    /* row 0: loss 1000; row 1: log(3) */
    assert_float_equal(loss, (float)((1000.0 + log(3.0)) / 2.0), 1e-3f);
}

static void test_count_correct(void **state)
{
    const float x[4 * 3] = {
        1,  3,  3, /* tie between 1 and 2: argmax is 1 */
        5,  5,  5, /* all equal: 0 */
        -1, -2, 0, /* 2 */
        0,  9,  1, /* 1 */
    };
    const int32_t ok[4] = {1, 0, 2, 1}, tie_high[4] = {2, 2, 2, 0};
    assert_int_equal(count_correct(4, 3, x, ok), 4);
    assert_int_equal(count_correct(4, 3, x, tie_high), 1);
}

/* ---- batch norm ----------------------------------------------------------------- */

typedef struct {
    int B, C, HW;
    double *x, *gamma, *beta, *y;
    const double *R;
    double eps;
} bn_ctx_t;

static double bn_loss(void *p)
{
    bn_ctx_t *c = p;
    ref_batchnorm_forward_train(c->B, c->C, c->HW, c->x, c->gamma, c->beta, c->eps, c->y, NULL, NULL);
    return dot(c->y, c->R, (size_t)c->B * c->C * c->HW);
}

/* The most channels a batch-norm case has: past batchnorm.c's block of 1024 (BN_BLOCK) */
#define BN_CASE_C 1040

/* eps == BN_EPS runs the plain functions (and checks that the _eps variants give their
 * bits), any other eps the _eps variants. */
static void run_bn_case_eps(int B, int C, int HW, float center, float eps, uint64_t seed)
{
    lcg_t r = {seed};
    const size_t n = (size_t)B * C * HW;
    float *x = falloc(n), *y = falloc(n), *g = falloc(n), *dx = falloc(n), *dx2 = falloc(n);
    float gamma[BN_CASE_C], beta[BN_CASE_C], smean[BN_CASE_C], sinv[BN_CASE_C], rm[BN_CASE_C], rv[BN_CASE_C],
        dgam[BN_CASE_C], dbet[BN_CASE_C], dg2[BN_CASE_C], db2[BN_CASE_C];
    double *xd = dalloc(n), *yd = dalloc(n), *Rd = dalloc(n);
    double gd[BN_CASE_C], bd[BN_CASE_C], md[BN_CASE_C], vd[BN_CASE_C], sinvd[BN_CASE_C];
    assert_true(C <= BN_CASE_C);
    rand_fill(&r, x, xd, n, center - 2.0f, center + 2.0f);
    rand_fill(&r, gamma, gd, C, 0.5f, 1.5f);
    rand_fill(&r, beta, bd, C, -0.5f, 0.5f);
    rand_fill(&r, g, Rd, n, -1.0f, 1.0f);
    for (int c = 0; c < C; c++) {
        rm[c] = 0.1f * (float)c;
        rv[c] = 1.0f + 0.5f * (float)c;
    }
    const float momentum = 0.1f;
    char what[96];

    ffill(y, n, NAN);
    float rm0[BN_CASE_C], rv0[BN_CASE_C];
    memcpy(rm0, rm, sizeof rm);
    memcpy(rv0, rv, sizeof rv);
    if (eps == BN_EPS) batchnorm_forward_train(B, C, HW, x, gamma, beta, y, smean, sinv, rm, rv, momentum);
    else batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, y, smean, sinv, rm, rv, momentum, eps);
    if (eps == BN_EPS) {
        /* the _eps variant with BN_EPS is the same computation, bit for bit */
        float *y2 = falloc(n), sm2[BN_CASE_C], si2[BN_CASE_C];
        batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, y2, sm2, si2, rm0, rv0, momentum, BN_EPS);
        assert_memory_equal(y2, y, n * sizeof(float));
        assert_memory_equal(sm2, smean, C * sizeof(float));
        assert_memory_equal(si2, sinv, C * sizeof(float));
        assert_memory_equal(rm0, rm, C * sizeof(float));
        assert_memory_equal(rv0, rv, C * sizeof(float));
        float *y3 = falloc(n);
        batchnorm_forward_eval(B, C, HW, x, gamma, beta, rm, rv, y3);
        batchnorm_forward_eval_eps(B, C, HW, x, gamma, beta, rm, rv, y2, BN_EPS);
        assert_memory_equal(y2, y3, n * sizeof(float));
        free(y2);
        free(y3);
    }
    ref_batchnorm_forward_train(B, C, HW, xd, gd, bd, (double)eps, yd, md, vd);
    snprintf(what, sizeof what, "batchnorm B=%d C=%d HW=%d mean %g eps %g forward", B, C, HW, center, eps);
    double e_fwd = check_close(what, y, yd, n, FWD_TOL, &g_max_fwd);
    check_close("batchnorm save_mean", smean, md, C, FWD_TOL, &g_max_fwd);
    for (int c = 0; c < C; c++) sinvd[c] = 1.0 / sqrt(vd[c] + (double)eps);
    check_close("batchnorm save_invstd", sinv, sinvd, C, FWD_TOL, &g_max_fwd);
    /* running statistics: (1 - momentum)*old + momentum*batch, unbiased variance */
    double M = (double)B * HW, want_m[BN_CASE_C], want_v[BN_CASE_C];
    for (int c = 0; c < C; c++) {
        want_m[c] = (1.0 - momentum) * (0.1 * c) + momentum * md[c];
        want_v[c] = (1.0 - momentum) * (1.0 + 0.5 * c) + momentum * vd[c] * M / (M - 1.0);
    }
    check_close("batchnorm running_mean", rm, want_m, C, FWD_TOL, &g_max_fwd);
    check_close("batchnorm running_var (unbiased update)", rv, want_v, C, FWD_TOL, &g_max_fwd);

    /* eval mode with the running statistics just computed */
    if (eps == BN_EPS) batchnorm_forward_eval(B, C, HW, x, gamma, beta, rm, rv, y);
    else batchnorm_forward_eval_eps(B, C, HW, x, gamma, beta, rm, rv, y, eps);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < HW; i++) {
                size_t k = ((size_t)b * C + c) * HW + i;
                yd[k] = gd[c] * (xd[k] - rm[c]) / sqrt((double)rv[c] + (double)eps) + bd[c];
            }
    check_close("batchnorm eval forward", y, yd, n, FWD_TOL, &g_max_fwd);

    /* backward through the batch statistics */
    memset(dx, 0, n * sizeof(float));
    ffill(dgam, C, NAN);
    ffill(dbet, C, NAN);
    batchnorm_backward(B, C, HW, x, gamma, smean, sinv, g, dx, dgam, dbet);
    bn_ctx_t ctx = {B, C, HW, xd, gd, bd, yd, Rd, (double)eps};
    double e_fd = 0.0;
    if (center == 0.0f) {
        e_fd = check_fd("batchnorm dinp", bn_loss, &ctx, xd, n, dx, 200);
        e_fd = fmax(e_fd, check_fd("batchnorm dgamma", bn_loss, &ctx, gd, C, dgam, 100));
        e_fd = fmax(e_fd, check_fd("batchnorm dbeta", bn_loss, &ctx, bd, C, dbet, 100));
    }
    ffill(dx2, n, PREFILL);
    batchnorm_backward(B, C, HW, x, gamma, smean, sinv, g, dx2, dg2, db2);
    check_acc("batchnorm dinp", dx2, dx, PREFILL, n);
    batchnorm_backward(B, C, HW, x, gamma, smean, sinv, g, NULL, dg2, db2);
    assert_memory_equal(dgam, dg2, C * sizeof(float));
    assert_memory_equal(dbet, db2, C * sizeof(float));
    print_message("batchnorm B=%d C=%d HW=%-3d mean %-6g eps %-6g fwd %.1e  fd %.1e\n", B, C, HW, center, eps, e_fwd,
                  e_fd);

    free(x);
    free(y);
    free(g);
    free(dx);
    free(dx2);
    free(xd);
    free(yd);
    free(Rd);
}

static void run_bn_case(int B, int C, int HW, float center, uint64_t seed)
{
    run_bn_case_eps(B, C, HW, center, BN_EPS, seed);
}

/* A fused batch norm's training forward against the kernels it replaces: the same output
 * and statistics, bit for bit, with the ReLU clamping between a quarter and three
 * quarters of the outputs (both sides of the kink exercised). */
static void same_bn_relu_outputs(size_t n, int C, const float *o1, const float *o2, const float *sm1, const float *sm2,
                                 const float *si1, const float *si2, const float *rm1, const float *rm2,
                                 const float *rv1, const float *rv2)
{
    assert_memory_equal(o1, o2, n * sizeof(float));
    assert_memory_equal(sm1, sm2, C * sizeof(float));
    assert_memory_equal(si1, si2, C * sizeof(float));
    assert_memory_equal(rm1, rm2, C * sizeof(float));
    assert_memory_equal(rv1, rv2, C * sizeof(float));
    size_t clamped = 0;
    for (size_t i = 0; i < n; i++) clamped += o1[i] == 0.0f;
    assert_true(clamped > n / 4 && clamped < 3 * n / 4);
}

/* The fused batch norm + ReLU kernels give the bits of the pair they replace: the batch
 * norm kernel then relu_forward, and relu_backward into a zeroed buffer then
 * batchnorm_backward (model.c runs the fused ones on resnet20's pairs). Half the outputs
 * are clamped, dout has exact zeros and -0 where the ReLU passes it, and HW is not a
 * multiple of the vector width; a plane over 4096 floats takes the kernel's other path. */
static void run_bn_relu_case(int B, int C, int HW, uint64_t seed)
{
    const size_t n = (size_t)B * C * HW;
    lcg_t r = {seed};
    assert_true(C <= 4);
    float *x = falloc(n), *g = falloc(n), *y1 = falloc(n), *o1 = falloc(n), *o2 = falloc(n), *d1 = falloc(n),
          *d2 = falloc(n), *gb = falloc(n);
    double *xd = malloc(n * sizeof(double)), *gd = malloc(n * sizeof(double));
    float gamma[4], beta[4], sm1[4], si1[4], sm2[4], si2[4], rm1[4], rv1[4], rm2[4], rv2[4];
    float dg1[4], db1[4], dg2[4], db2[4];
    double tmp[4];
    rand_fill(&r, x, xd, n, -2.0f, 2.0f);
    rand_fill(&r, g, gd, n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i += 7) g[i] = (i / 7) % 2 ? 0.0f : -0.0f;
    rand_fill(&r, gamma, tmp, C, 0.5f, 1.5f);
    rand_fill(&r, beta, tmp, C, -0.5f, 0.5f);
    for (int c = 0; c < C; c++) {
        rm1[c] = rm2[c] = 0.1f * (float)c;
        rv1[c] = rv2[c] = 1.0f + 0.25f * (float)c;
    }
    batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, y1, sm1, si1, rm1, rv1, 0.1f, BN_EPS);
    relu_forward(n, y1, o1);
    batchnorm_relu_forward_train_eps(B, C, HW, x, gamma, beta, o2, sm2, si2, rm2, rv2, 0.1f, BN_EPS);
    same_bn_relu_outputs(n, C, o1, o2, sm1, sm2, si1, si2, rm1, rm2, rv1, rv2);

    /* backward: dinp accumulates, so both start from the same nonzero values */
    for (size_t i = 0; i < n; i++) d1[i] = d2[i] = 0.01f * (float)(i % 13);
    memset(gb, 0, n * sizeof(float));
    relu_backward(n, o1, g, gb);
    batchnorm_backward(B, C, HW, x, gamma, sm1, si1, gb, d1, dg1, db1);
    batchnorm_relu_backward(B, C, HW, x, gamma, sm1, si1, o1, g, d2, dg2, db2);
    assert_memory_equal(d1, d2, n * sizeof(float));
    assert_memory_equal(dg1, dg2, C * sizeof(float));
    assert_memory_equal(db1, db2, C * sizeof(float));

    /* the _set backwards: what += gives into a zeroed dinp, whatever dinp held */
    for (int fused = 0; fused < 2; fused++) {
        memset(d1, 0, n * sizeof(float));
        ffill(d2, n, NAN);
        if (fused) {
            batchnorm_relu_backward(B, C, HW, x, gamma, sm1, si1, o1, g, d1, dg1, db1);
            batchnorm_relu_backward_set(B, C, HW, x, gamma, sm1, si1, o1, g, d2, dg2, db2);
        } else {
            batchnorm_backward(B, C, HW, x, gamma, sm1, si1, gb, d1, dg1, db1);
            batchnorm_backward_set(B, C, HW, x, gamma, sm1, si1, gb, d2, dg2, db2);
        }
        assert_memory_equal(d1, d2, n * sizeof(float));
        assert_memory_equal(dg1, dg2, C * sizeof(float));
        assert_memory_equal(db1, db2, C * sizeof(float));
    }

    batchnorm_forward_eval_eps(B, C, HW, x, gamma, beta, rm1, rv1, y1, 1e-3f);
    relu_forward(n, y1, o1);
    batchnorm_relu_forward_eval_eps(B, C, HW, x, gamma, beta, rm1, rv1, o2, 1e-3f);
    assert_memory_equal(o1, o2, n * sizeof(float));
    free(x);
    free(g);
    free(y1);
    free(o1);
    free(o2);
    free(d1);
    free(d2);
    free(gb);
    free(xd);
    free(gd);
}

/* The fused batch norm + identity residual add + ReLU forward gives the bits of the three
 * kernels it replaces, training and evaluation (its backward is batchnorm_relu_backward
 * and relu_backward: test_model runs resnet20's fused and unfused). */
static void run_bn_add_relu_case(int B, int C, int HW, uint64_t seed)
{
    const size_t n = (size_t)B * C * HW;
    lcg_t r = {seed};
    assert_true(C <= BN_CASE_C);
    float *x = falloc(n), *res = falloc(n), *y1 = falloc(n), *o1 = falloc(n), *o2 = falloc(n);
    double *xd = malloc(n * sizeof(double));
    float gamma[BN_CASE_C], beta[BN_CASE_C], sm1[BN_CASE_C], si1[BN_CASE_C], sm2[BN_CASE_C], si2[BN_CASE_C],
        rm1[BN_CASE_C], rv1[BN_CASE_C], rm2[BN_CASE_C], rv2[BN_CASE_C];
    double tmp[BN_CASE_C];
    rand_fill(&r, x, xd, n, -2.0f, 2.0f);
    rand_fill(&r, res, xd, n, -1.0f, 1.0f);
    rand_fill(&r, gamma, tmp, C, 0.5f, 1.5f);
    rand_fill(&r, beta, tmp, C, -0.5f, 0.5f);
    for (int c = 0; c < C; c++) {
        rm1[c] = rm2[c] = 0.1f * (float)c;
        rv1[c] = rv2[c] = 1.0f + 0.25f * (float)c;
    }
    shortcut_desc_t id;
    assert_int_equal(shortcut_init(&id, C, 1, HW, C, 1), 0);
    batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, y1, sm1, si1, rm1, rv1, 0.1f, BN_EPS);
    residual_add_forward(&id, B, y1, res, y1);
    relu_forward(n, y1, o1);
    ffill(o2, n, NAN);
    batchnorm_add_relu_forward_train_eps(B, C, HW, x, gamma, beta, res, o2, sm2, si2, rm2, rv2, 0.1f, BN_EPS);
    same_bn_relu_outputs(n, C, o1, o2, sm1, sm2, si1, si2, rm1, rm2, rv1, rv2);

    batchnorm_forward_eval_eps(B, C, HW, x, gamma, beta, rm1, rv1, y1, 1e-3f);
    residual_add_forward(&id, B, y1, res, y1);
    relu_forward(n, y1, o1);
    ffill(o2, n, NAN);
    batchnorm_add_relu_forward_eval_eps(B, C, HW, x, gamma, beta, rm1, rv1, res, o2, 1e-3f);
    assert_memory_equal(o1, o2, n * sizeof(float));
    free(x);
    free(res);
    free(y1);
    free(o1);
    free(o2);
    free(xd);
}

static void test_batchnorm_relu_fused(void **state)
{
    (void)state;
    run_bn_relu_case(3, 4, 37, 2027);
    run_bn_relu_case(2, 2, 4101, 2028);
    run_bn_add_relu_case(3, 4, 37, 2029);
    run_bn_add_relu_case(2, 2, 4101, 2030);
    run_bn_add_relu_case(3, 1030, 5, 2031); /* two of batchnorm.c's channel blocks */
}

static void test_batchnorm(void **state)
{
    run_bn_case(4, 3, 5, 0.0f, 1000);
    run_bn_case(2, 2, 13, 0.0f, 1001);
    run_bn_case(3, 2, 64, 0.0f, 1002);
    run_bn_case(1, 3, 9, 0.0f, 1003);
    /* a large mean and a small spread: the forward must keep its precision */
    run_bn_case(4, 2, 33, 1000.0f, 1004);
    /* another epsilon (ONNX's attribute): a small variance makes it matter, in the forward
     * (through 1/sqrt(var + eps)) and in the gradient (through the saved inverse std) */
    run_bn_case_eps(4, 3, 5, 0.0f, 1e-3f, 1005);
    run_bn_case_eps(2, 2, 13, 0.0f, 0.5f, 1006);
    /* more channels than batchnorm.c takes in one block (BN_BLOCK, 1024): two blocks */
    run_bn_case(2, 1030, 3, 0.0f, 1007);
    /* and more images than one run of its sums holds at 1024 channels (BN_PARTS / 1024 =
     * 8): runs of 8 and 1 */
    run_bn_case(9, 1030, 2, 0.0f, 1008);
}

/* ---- general convolution geometry (ONNX Conv) ------------------------------------ */

typedef struct {
    const char *name;
    int B;
    conv2d_desc_t d; /* every field but OH/OW */
    int bias, chunks;
    size_t fd;
} conv_gcase_t;

/* A descriptor's fields but OH/OW, in the order of the cases' columns */
#define CONV_G(C_, H_, W_, OC_, KH_, KW_, SH, SW, PT, PL, PB, PR, DH, DW, GR)                                     \
    {                                                                                                             \
        .C = C_, .H = H_, .W = W_, .OC = OC_, .KH = KH_, .KW = KW_, .sH = SH, .sW = SW, .pad_t = PT, .pad_l = PL, \
        .pad_b = PB, .pad_r = PR, .dH = DH, .dW = DW, .groups = GR                                                \
    }

/* Grouped, depthwise, dilated, asymmetrically padded and rectangular-stride convolutions,
 * each through both lowerings where the geometry allows (stride 1 in both dimensions: the
 * padded-width grid; otherwise im2col) and the direct depthwise kernel (groups == C). */
static void test_conv_general(void **state)
{
    (void)state;
    static const conv_gcase_t cases[] = {
        /* name                                B  C  H   W OC KH KW sH sW pt pl pb pr dH dW g   bias chunks fd */
        {"groups 2 3x3 s1 p1", 2, CONV_G(4, 7, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2), 1, 0, 1000},
        {"groups 3 3x3 s2 p1", 2, CONV_G(6, 9, 8, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3), 0, 0, 1000},
        {"groups 2 1x1 (OC/g=3)", 2, CONV_G(4, 5, 5, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2), 1, 0, 1000},
        {"depthwise 3x3 s1 p1", 2, CONV_G(3, 8, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3), 1, 0, 1000},
        {"depthwise x2 3x3 s2 p1", 2, CONV_G(3, 9, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3), 1, 0, 1000},
        {"depthwise s(1,2) asym d(2,1)", 2, CONV_G(4, 9, 10, 4, 3, 3, 1, 2, 0, 1, 2, 1, 2, 1, 4), 0, 0, 1000},
        {"depthwise 5x5 s3 p2", 2, CONV_G(2, 11, 13, 2, 5, 5, 3, 3, 2, 2, 2, 2, 1, 1, 2), 1, 0, 1000},
        {"dilated 3x3 d2 p2 s1", 2, CONV_G(2, 9, 8, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1), 1, 0, 1000},
        {"dilated 3x3 d(2,3) s2 p(1,2)", 2, CONV_G(2, 11, 12, 3, 3, 3, 2, 2, 1, 2, 1, 2, 2, 3, 1), 1, 0, 1000},
        {"asym 2x2 s1 SAME_UPPER", 2, CONV_G(3, 6, 5, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1), 1, 0, 1000},
        {"asym 3x3 s2 SAME_UPPER", 2, CONV_G(2, 8, 8, 3, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1), 1, 0, 1000},
        {"asym 4x4 s1 t2 l1 b1 r2", 2, CONV_G(2, 7, 6, 3, 4, 4, 1, 1, 2, 1, 1, 2, 1, 1, 1), 0, 0, 1000},
        {"rect stride s(1,2) 3x3 p1", 2, CONV_G(2, 7, 9, 3, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 1), 1, 0, 1000},
        {"rect stride s(2,3) 3x2 p(1,0)", 2, CONV_G(3, 9, 11, 2, 3, 2, 2, 3, 1, 0, 1, 0, 1, 1, 1), 1, 0, 1000},
        {"groups 2 d2 asym s(2,1)", 2, CONV_G(4, 9, 8, 8, 3, 3, 2, 1, 1, 2, 2, 1, 2, 2, 2), 1, 0, 1000},
        /* many images: the wide path in chunks with groups, the depthwise kernel on a batch */
        {"groups 2 3x3 s1 p1 B=40 chunked", 40, CONV_G(4, 16, 16, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2), 1, 1, 8},
        {"groups 2 3x3 s2 B=40 chunked", 40, CONV_G(4, 16, 16, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2), 1, 1, 8},
        {"depthwise 3x3 s1 p1 B=30", 30, CONV_G(4, 12, 12, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4), 1, 0, 8},
        /* MobileNet's and EfficientNet's small planes: the channels-inner depthwise kernel
         * (conv_depthwise.c) on 2x2 and on 1x1 behind a 5x5 kernel (only the centre tap
         * reaches), the pointwise GEMM over a whole batch on 4x4 and 1x1 planes */
        {"depthwise 3x3 p1 2x2 C=40 B=5", 5, CONV_G(40, 2, 2, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40), 1, 0, 8},
        {"depthwise 5x5 p2 1x1 C=24 B=3", 3, CONV_G(24, 1, 1, 24, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 24), 0, 0, 8},
        {"depthwise 3x3 s2 p1 5x4 C=20 B=3", 3, CONV_G(20, 5, 4, 20, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 20), 1, 0, 8},
        {"pointwise 1x1 4x4 C=24 OC=40 B=5", 5, CONV_G(24, 4, 4, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), 1, 0, 8},
        {"pointwise 1x1 1x1 C=48 OC=20 B=33", 33, CONV_G(48, 1, 1, 20, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), 0, 0, 8},
        /* planes of >= 256 outputs: conv.c's direct kernel where the CPU has AVX2 and FMA
         * (forward, and the input gradient as the flipped convolution), with row blocks
         * of A short of 4 (OC 5, C 3), grids not a multiple of 24 columns, dilation,
         * uneven and one-sided pads; the last case's pads are wider than the kernel
         * reaches, so its input gradient stays on the wide path */
        {"direct 3x3 p1 17x19 OC=5", 2, CONV_G(3, 17, 19, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        {"direct dilated d(2,3) p(2,3)", 2, CONV_G(2, 18, 20, 3, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3, 1), 1, 0, 8},
        {"direct asym 4x4 t2 l1 b1 r2", 2, CONV_G(2, 17, 16, 3, 4, 4, 1, 1, 2, 1, 1, 2, 1, 1, 1), 0, 0, 8},
        {"direct 2x2 SAME_UPPER", 2, CONV_G(3, 16, 18, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1), 1, 0, 8},
        {"direct 5x5 valid", 2, CONV_G(2, 22, 22, 3, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1), 1, 0, 8},
        {"direct 1x1", 3, CONV_G(3, 16, 16, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), 1, 0, 8},
        {"3x3 p3 (pads past the reach)", 2, CONV_G(2, 16, 16, 3, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1, 1), 1, 0, 8},
        /* >= 32 output and >= 16 input channels: the channel-vector kernel, with blocks
         * of 16 channels short (40 = 16 + 16 + 8, C = 20 in the input gradient), position
         * tiles of 6 short (63, 64 positions), dilation and uneven pads */
        {"cv 3x3 p1 8x8 C=20 OC=40", 2, CONV_G(20, 8, 8, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        {"cv dilated d(2,1) p(2,1) 9x7", 2, CONV_G(16, 9, 7, 33, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1, 1), 0, 0, 8},
        {"cv asym 2x2 SAME_UPPER", 2, CONV_G(17, 7, 9, 32, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1), 1, 0, 8},
        {"cv 1x1 B=3", 3, CONV_G(16, 5, 6, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1), 1, 0, 8},
        /* 2x2 planes: the direct kernel, not Winograd (one tile for four outputs) */
        {"cv 3x3 p1 2x2 C=16 OC=32 B=3", 3, CONV_G(16, 2, 2, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        /* strided: the channel-vector forward and weight gradient, the input gradient by
         * GEMM and col2im; 10x10 leaves the last padded row unread, the last case mixes
         * strides, dilation and uneven pads */
        /* 3x3 stride 1 pad 1, >= 16 channels: Winograd's F(4x4, 3x3) for the forward and
         * the input gradient (conv2d_winograd), with planes not a multiple of the 4x4
         * tiles (18x15), 20 output channels (not a multiple of 8), and batches not a
         * multiple of the images a call takes (2 of 5, 6 of 7) */
        {"wino 3x3 p1 18x15 C=16 OC=20 B=5", 5, CONV_G(16, 18, 15, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        {"wino 3x3 p1 8x8 C=16 OC=32 B=7", 7, CONV_G(16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 0, 0, 8},
        {"cv 3x3 s2 p1 16x16 C=16 OC=32", 2, CONV_G(16, 16, 16, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        {"cv 3x3 s2 p1 10x10 C=16 OC=40", 2, CONV_G(16, 10, 10, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 0, 0, 8},
        {"cv 1x1 s2 C=16 OC=32", 3, CONV_G(16, 8, 8, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1), 1, 0, 8},
        {"cv 3x2 s(2,3) d(2,1) asym", 2, CONV_G(16, 11, 13, 32, 3, 2, 2, 3, 2, 0, 1, 1, 2, 1, 1), 1, 0, 8},
        /* 3x3 outputs: the weight gradient and the input gradient's GEMM take 29 images a
         * call (conv.c, wgrad_images), so 61 images are calls of 29, 29 and 3 (on two
         * threads 29 + 1 and 29 + 2) */
        {"cv 3x3 s2 p1 6x6 C=16 OC=32 B=61", 61, CONV_G(16, 6, 6, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 1, 0, 8},
        /* sequences (C, L): ONNX's 1-D Conv runs as an image (C, L, 1) with a kernel (K, 1)
         * (op_table.c), through the same lowerings: im2col with stride, uneven pads,
         * dilation and groups, the depthwise kernel, the direct kernel on a long sequence
         * (>= 256 outputs in a column one wide) and the channel-vector kernel */
        {"1-D k3 s2 p(1,2)", 2, CONV_G(3, 10, 1, 4, 3, 1, 2, 1, 1, 0, 2, 0, 1, 1, 1), 1, 0, 1000},
        {"1-D k3 d2 p2 groups 2", 2, CONV_G(4, 12, 1, 6, 3, 1, 1, 1, 2, 0, 2, 0, 2, 1, 2), 0, 0, 1000},
        {"1-D depthwise k3 p1", 3, CONV_G(8, 20, 1, 8, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1, 8), 1, 0, 8},
        {"1-D direct k5 p2 L=300", 2, CONV_G(3, 300, 1, 5, 5, 1, 1, 1, 2, 0, 2, 0, 1, 1, 1), 1, 0, 8},
        {"1-D cv k3 p1 L=40 C=16 OC=32", 2, CONV_G(16, 40, 1, 32, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1), 1, 0, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conv2d_desc_t d = cases[i].d;
        assert_int_equal(conv2d_setup(&d), 0);
        /* the cases named for Winograd take it wherever the direct kernels run */
        if (!strncmp(cases[i].name, "wino", 4)) assert_int_equal(conv2d_winograd(&d, 1), direct_isa() != DIRECT_NO_ISA);
        /* the output size of ONNX's Conv (floor) */
        assert_int_equal(d.OH, (d.H + d.pad_t + d.pad_b - d.dH * (d.KH - 1) - 1) / d.sH + 1);
        assert_int_equal(d.OW, (d.W + d.pad_l + d.pad_r - d.dW * (d.KW - 1) - 1) / d.sW + 1);
        run_conv_desc(cases[i].name, &d, cases[i].B, cases[i].bias, cases[i].chunks, cases[i].fd, 1100 + i);
    }

    /* conv2d_setup refuses what has no meaning */
    static const conv2d_desc_t bad[] = {
        CONV_G(4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0),  /* no groups */
        CONV_G(4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3),  /* 3 does not divide C = 4 */
        CONV_G(6, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3),  /* 3 does not divide OC = 4 */
        CONV_G(2, 8, 8, 2, 3, 3, 1, 1, -1, 1, 1, 1, 1, 1, 1), /* negative pad */
        CONV_G(2, 8, 8, 2, 3, 3, 1, 1, 1, 1, 1, 1, 0, 1, 1),  /* dilation 0 */
        CONV_G(2, 8, 8, 2, 3, 3, 1, 0, 1, 1, 1, 1, 1, 1, 1),  /* stride 0 */
        CONV_G(2, 4, 8, 2, 3, 3, 1, 1, 0, 0, 0, 0, 2, 1, 1),  /* dilated extent 5 > H = 4 */
        CONV_G(2, 8, 8, 0, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1),  /* no output channels */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        conv2d_desc_t d = bad[i];
        if (conv2d_setup(&d) != -1) fail_msg("conv2d_setup accepted bad geometry %zu", i);
        assert_int_equal(d.OH, 0);
        assert_int_equal(d.OW, 0);
    }
    /* conv2d_init is the symmetric, dense, one-group case of conv2d_setup */
    conv2d_desc_t a, b = {.C = 3,
                          .H = 32,
                          .W = 31,
                          .OC = 8,
                          .KH = 3,
                          .KW = 3,
                          .sH = 2,
                          .sW = 2,
                          .pad_t = 1,
                          .pad_l = 1,
                          .pad_b = 1,
                          .pad_r = 1,
                          .dH = 1,
                          .dW = 1,
                          .groups = 1};
    assert_int_equal(conv2d_init(&a, 3, 32, 31, 8, 3, 3, 2, 1), 0);
    assert_int_equal(conv2d_setup(&b), 0);
    assert_memory_equal(&a, &b, sizeof a);
}

/* Taps that never read the input (conv_crop.h): each case runs as the convolution over
 * the others, and must give what the full kernel gives (the naive forward and backward,
 * finite differences, a weight gradient of zero at the dropped taps). */
static void test_conv_cropped(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int B;
        conv2d_desc_t d;
        int kh, kw; /* the kept taps */
    } cases[] = {
        /* ResNet-18's last stage on a 32x32 image: the centre tap alone */
        {"3x3 p1 on 1x1 planes C=24 OC=20", 3, CONV_G(24, 1, 1, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 1},
        /* its stride-2 entry: 2x2 planes to 1x1, the lower right 2x2 taps */
        {"3x3 s2 p1 on 2x2 planes", 2, CONV_G(16, 2, 2, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1), 2, 2},
        /* one row of taps on a one-row plane, every column */
        {"3x3 p1 on a 1x7 row", 2, CONV_G(3, 1, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 3},
        {"dilated 3x3 d2 p2 on 2x2", 2, CONV_G(4, 2, 2, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1), 1, 1},
        {"groups 2 3x3 p1 on 1x1", 2, CONV_G(4, 1, 1, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2), 1, 1},
        /* the bottom row of taps only: bottom pads past the plane */
        {"3x3 t0 b2 on 2x5", 2, CONV_G(3, 2, 5, 2, 3, 3, 1, 1, 0, 1, 2, 1, 1, 1, 1), 2, 3},
        {"5x5 p2 on 1x1, 40 channels", 5, CONV_G(40, 1, 1, 33, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1), 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conv2d_desc_t d = cases[i].d;
        assert_int_equal(conv2d_setup(&d), 0);
        conv_crop_t c;
        if (!conv_crop_plan(&d, &c) || c.d.KH != cases[i].kh || c.d.KW != cases[i].kw)
            fail_msg("%s: not cropped to %dx%d taps", cases[i].name, cases[i].kh, cases[i].kw);
        run_conv_desc(cases[i].name, &d, cases[i].B, 1, 0, 1000, 1300 + i);
    }
    /* every tap reads the input somewhere: nothing to crop */
    conv2d_desc_t d;
    conv_crop_t c;
    assert_int_equal(conv2d_init(&d, 2, 2, 2, 2, 3, 3, 1, 1), 0);
    assert_int_equal(conv_crop_plan(&d, &c), 0);
    assert_int_equal(conv2d_init(&d, 2, 8, 8, 2, 3, 3, 2, 1), 0);
    assert_int_equal(conv_crop_plan(&d, &c), 0);
    /* Winograd where its 36 products a tile are fewer than 9 an output: 3x3 planes (one
     * tile, nine outputs), not 2x2 ones (four) */
    assert_int_equal(conv2d_init(&d, 16, 2, 2, 32, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), 0);
    assert_int_equal(conv2d_init(&d, 16, 3, 3, 32, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), direct_isa() != DIRECT_NO_ISA);
    /* 512 x 512 channels only at batches of 64 tiles or more: 4x4 planes, one tile each */
    assert_int_equal(conv2d_init(&d, 512, 4, 4, 512, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 63), 0);
    assert_int_equal(conv2d_winograd(&d, 64), direct_isa() != DIRECT_NO_ISA);
    assert_int_equal(conv2d_init(&d, 256, 4, 4, 512, 3, 3, 1, 1), 0);
    assert_int_equal(conv2d_winograd(&d, 1), direct_isa() != DIRECT_NO_ISA);
}

/* ---- general pooling geometry (ONNX MaxPool / AveragePool) ------------------------ */

#define PG(C_, H_, W_, KH_, KW_, SH, SW, PT, PL, PB, PR, DH, DW, CEIL, CIP)                                         \
    {                                                                                                               \
        .C = C_, .H = H_, .W = W_, .KH = KH_, .KW = KW_, .sH = SH, .sW = SW, .pad_t = PT, .pad_l = PL, .pad_b = PB, \
        .pad_r = PR, .dH = DH, .dW = DW, .ceil_mode = CEIL, .count_include_pad = CIP                                \
    }

/* Rectangular windows and strides, asymmetric pads, dilation, ceil mode; average pooling
 * with count_include_pad both ways (max pooling ignores it). */
static void test_pool_general(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int B;
        pool2d_desc_t d;
    } cases[] = {
        /*                                     C  H  W KH KW sH sW pt pl pb pr dH dW ceil cip */
        {"3x2 s(2,1) p1 d(1,2) ceil", 2, PG(2, 5, 7, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 0)},
        {"3x3 s2 p1 d2 floor", 2, PG(2, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 2, 2, 0, 0)},
        {"3x3 s2 p1 ceil 6x6", 2, PG(2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0)},
        {"3x2 s2 p1 ceil", 2, PG(2, 5, 7, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0)},
        {"2x3 s(3,2) p1 floor", 2, PG(2, 5, 7, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0, 0)},
        {"asym t0 l1 b2 r1 3x3 s2", 2, PG(2, 7, 8, 3, 3, 2, 2, 0, 1, 2, 1, 1, 1, 0, 0)},
        {"asym t1 l0 b0 r2 3x3 s2 ceil", 2, PG(2, 7, 8, 3, 3, 2, 2, 1, 0, 0, 2, 1, 1, 1, 0)},
        {"asym SAME_UPPER 2x2 s1", 2, PG(2, 5, 6, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0)},
        {"dilated d(2,3) s1 p(2,3) ceil", 1, PG(2, 8, 9, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3, 1, 0)},
        /* sequences (C, L) as images (C, L, 1) with a window (K, 1), as the 1-D pools run */
        {"1-D k3 s2 p1 ceil", 2, PG(3, 11, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 1, 0)},
        {"1-D k2 s1 d3 p(2,1)", 2, PG(2, 9, 1, 2, 1, 1, 1, 2, 0, 1, 0, 3, 1, 0, 0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pool2d_desc_t d = cases[i].d;
        assert_int_equal(pool2d_setup(&d), 0);
        run_pool_desc(cases[i].name, &d, cases[i].B, 1, 1200 + i);
        for (int cip = 0; cip <= 1; cip++) {
            char name[96];
            snprintf(name, sizeof name, "%s cip=%d", cases[i].name, cip);
            d.count_include_pad = cip;
            run_pool_desc(name, &d, cases[i].B, 0, 1300 + 2 * i + (size_t)cip);
        }
    }

    /* pool2d_setup refuses what has no meaning */
    static const pool2d_desc_t bad[] = {
        PG(1, 5, 5, 0, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0),  /* empty window */
        PG(1, 5, 5, 2, 2, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0),  /* stride 0 */
        PG(1, 5, 5, 2, 2, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0),  /* dilation 0 */
        PG(1, 5, 5, 2, 2, 1, 1, 0, -1, 0, 0, 1, 1, 0, 0), /* negative pad */
        PG(1, 2, 5, 2, 2, 1, 1, 0, 0, 0, 0, 3, 1, 0, 0),  /* dilated extent 4 > H = 2 */
        PG(1, 5, 5, 2, 2, 2, 2, 3, 0, 0, 0, 1, 1, 0, 0),  /* the first window lies in the padding */
        PG(1, 4, 4, 2, 2, 2, 2, 0, 0, 3, 0, 1, 1, 0, 0),  /* the last window lies in the padding */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pool2d_desc_t d = bad[i];
        if (pool2d_setup(&d) != -1) fail_msg("pool2d_setup accepted bad geometry %zu", i);
    }
}

/* Values PyTorch 1.13 gives (torch.nn.functional.max_pool2d / avg_pool2d, float32, CPU),
 * generated once with /usr/bin/python3 and torch 1.13.0 and pasted here; the script:
 *   x = torch.tensor([((i*17+3) % (H*W))*0.25 - 4.0 for i in range(H*W)]).reshape(1,1,H,W)
 *   F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
 *   F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad)
 * (distinct values, so the maxima and their indices are unique). PyTorch pads
 * symmetrically; its count_include_pad divisor is the window clipped to the padded input. */
static void test_pool_pytorch(void **state)
{
    (void)state;
    static const float max0[] = {4.5f,  0.25f, 4.5f, 0,     4.25f, -0.25f, 4,     4.5f, 3.75f, 4.5f, 3.5f,
                                 4.25f, 3.25f, 4,    2.75f, 2,     2.75f,  1.75f, 2.5f, 1.5f,  2.25f};
    static const int32_t max0_i[] = {8, 7, 8, 9, 10, 11, 12, 8, 14, 8, 16, 10, 18, 12, 22, 28, 22, 30, 24, 32, 26};
    static const float max1[] = {4.5f, 4.5f, 4.25f, 4.5f, 4.5f, 4.25f};
    static const int32_t max1_i[] = {8, 8, 10, 8, 8, 10};
    static const float max2[] = {4.25f, 3.75f, 4.75f, 0,    4.25f, 3.75f, 4.5f, 4.5f,
                                 4,     4,     4.5f,  4.5f, 2.5f,  2.5f,  2,    1.5f};
    static const int32_t max2_i[] = {6, 8, 4, 5, 6, 8, 23, 23, 25, 25, 23, 23, 31, 31, 33, 35};
    static const float avg0[] = {-0.5f,  0.333333343f,  0.166666672f,  0,       0.416666657f, 1.375f, 1.125f,
                                 0.875f, 0.0833333358f, 0.0416666679f, -0.125f, -0.291666657f};
    static const float avg1[] = {-1.5f,  0.5f,   0.25f, 0,       0.833333313f, 1.375f,
                                 1.125f, 0.875f, 0.25f, 0.0625f, -0.1875f,     -0.4375f};
    static const float avg2[] = {0.166666672f, 0,     0.666666687f, -0.25f, 0.25f,  -0.75f, -0.25f, 0,
                                 0.25f,        0.25f, 0.75f,        1.5f,   0.125f, 0.375f, 0.125f, 0.375f};
    static const float avg3[] = {0.375f, 0,     1,     -0.75f, 0.375f, -0.75f, -0.25f, 0,
                                 0.375f, 0.25f, 0.75f, 3,      0.375f, 0.75f,  0.25f,  1.5f};
    static const float avg4[] = {-0.375f,      -0.291666657f, -0.416666657f, -0.583333313f,
                                 0.708333313f, 0.875f,        0.625f,        0.291666657f};
    static const struct {
        int is_max;
        pool2d_desc_t d;
        const float *want;
        const int32_t *want_i;
        int OH, OW;
    } cases[] = {
        /* max_pool2d(kernel (3,2), stride (2,1), padding 1, dilation (1,2), ceil_mode=True) */
        {1, PG(1, 5, 7, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 0), max0, max0_i, 3, 7},
        /* max_pool2d(3, stride 2, padding 1, dilation 2) */
        {1, PG(1, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 2, 2, 0, 0), max1, max1_i, 2, 3},
        /* max_pool2d(3, stride 2, padding 1, ceil_mode=True) on 6x6 */
        {1, PG(1, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0), max2, max2_i, 4, 4},
        /* avg_pool2d(kernel (3,2), stride 2, padding 1, ceil_mode=True, count_include_pad=True / False) */
        {0, PG(1, 5, 7, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1), avg0, NULL, 3, 4},
        {0, PG(1, 5, 7, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0), avg1, NULL, 3, 4},
        /* avg_pool2d(3, stride 2, padding 1, ceil_mode=True, count_include_pad=True / False) on 6x6:
         * the last window runs past the padded input */
        {0, PG(1, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1), avg2, NULL, 4, 4},
        {0, PG(1, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0), avg3, NULL, 4, 4},
        /* avg_pool2d(kernel (2,3), stride (3,2), padding 1, count_include_pad=True) */
        {0, PG(1, 5, 7, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0, 1), avg4, NULL, 2, 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pool2d_desc_t d = cases[k].d;
        assert_int_equal(pool2d_setup(&d), 0);
        if (d.OH != cases[k].OH || d.OW != cases[k].OW)
            fail_msg("pytorch pool case %zu: output %dx%d, PyTorch's is %dx%d", k, d.OH, d.OW, cases[k].OH, cases[k].OW);
        const int n = d.H * d.W, no = d.OH * d.OW;
        float x[36], y[36];
        int32_t am[36];
        assert_true(n <= 36 && no <= 36);
        for (int i = 0; i < n; i++) x[i] = (float)((i * 17 + 3) % n) * 0.25f - 4.0f;
        if (cases[k].is_max) maxpool2d_forward(&d, 1, x, y, am);
        else avgpool2d_forward(&d, 1, x, y);
        for (int i = 0; i < no; i++) {
            /* maxima are exact; averages may round differently in the last place */
            if (!(fabsf(y[i] - cases[k].want[i]) <= (cases[k].is_max ? 0.0f : 1e-6f)))
                fail_msg("pytorch pool case %zu: out[%d] = %.9g, PyTorch gives %.9g", k, i, y[i], cases[k].want[i]);
            if (cases[k].want_i && am[i] != cases[k].want_i[i])
                fail_msg("pytorch pool case %zu: argmax[%d] = %d, PyTorch gives %d", k, i, am[i], cases[k].want_i[i]);
        }
    }
}
#undef PG


/* ---- the kernels' threads (kernels/cpu/parallel.h) ------------------------------------ */

/* Every convolution and batch-norm case again on 2 and 3 threads, against the same naive
 * references and finite differences: 3 gives threads without a chunk (batches of 1 and 2)
 * and uneven splits; the NaN-filled workspaces and gradients show that each thread's
 * partial weight gradient is written before it is added. */
static void test_threads_reference(void **state)
{
    for (int T = 2; T <= 3; T++) {
        assert_int_equal(par_set_threads(T), 0);
        assert_int_equal(par_threads(), T);
        test_conv_geometries(state);
        test_conv_chunked(state);
        test_conv_general(state);
        test_batchnorm(state);
        test_batchnorm_relu_fused(state);
        test_relu(state);
        test_residual_add(state);
    }
    assert_int_equal(par_set_threads(1), 0);
    assert_int_equal(par_set_threads(0), -1);
    assert_int_equal(par_set_threads(PAR_MAX_THREADS + 1), -1);
    assert_int_equal(par_threads(), 1);
}

/* The direct convolution kernels on each instruction set this CPU has (conv_direct.h;
 * without this only the one direct_isa() picks would run, AVX2 under CI's
 * OPENBLAS_CORETYPE=Haswell), and with none (the im2col + GEMM paths they replace): every
 * convolution case against the naive references again; then the forward of a grid-tile
 * and a channel-vector-tile layer, which is bit for bit the same on AVX2 and AVX-512. */
static void test_conv_direct_isas(void **state)
{
    static const int isas[] = {DIRECT_NO_ISA, DIRECT_AVX2, DIRECT_AVX512};
    static const char *names[] = {"none (im2col + GEMM)", "AVX2", "AVX-512"};
    for (size_t i = 0; i < 3; i++) {
        if (direct_force_isa(isas[i]) != 0) {
            print_message("direct kernels on %s: this CPU has not got it, not run\n", names[i]);
            continue;
        }
        print_message("direct kernels on %s\n", names[i]);
        test_conv_geometries(state);
        test_conv_chunked(state);
        test_conv_general(state);
    }
    /* 16 channels at 32x32 (grid tiles), 32 at 8x8 (channel-vector tiles) */
    static const int shapes[2][3] = {{16, 32, 16}, {32, 8, 32}};
    for (int k = 0; k < 2; k++) {
        conv2d_desc_t d;
        const int B = 3, C = shapes[k][0], H = shapes[k][1], OC = shapes[k][2];
        assert_int_equal(conv2d_init(&d, C, H, H, OC, 3, 3, 1, 1), 0);
        const size_t nx = (size_t)B * C * H * H, nw = (size_t)OC * C * 9, ny = (size_t)B * OC * H * H;
        lcg_t r = {91 + (uint64_t)k};
        float *x = falloc(nx), *w = falloc(nw), *bias = falloc((size_t)OC), *y[2], *ws = falloc(conv2d_workspace(&d, B));
        for (size_t i = 0; i < nx; i++) x[i] = lcg_unif(&r, -1.0f, 1.0f);
        for (size_t i = 0; i < nw; i++) w[i] = lcg_unif(&r, -0.5f, 0.5f);
        for (int i = 0; i < OC; i++) bias[i] = lcg_unif(&r, -0.5f, 0.5f);
        for (int v = 0; v < 2; v++) {
            y[v] = falloc(ny);
            if (direct_force_isa(v ? DIRECT_AVX512 : DIRECT_AVX2) == 0) conv2d_forward(&d, B, x, w, bias, y[v], ws);
            else memcpy(y[v], y[0], ny * sizeof(float)); /* no AVX-512 here: nothing to compare */
        }
        assert_memory_equal(y[0], y[1], ny * sizeof(float));
        free(x), free(w), free(bias), free(y[0]), free(y[1]), free(ws);
    }
    assert_int_equal(direct_force_isa(-1), 0);
}

/* |a-b|/max(1,|a|) at its largest over n values. */
static double worst_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]) / fmax(1.0, fabs(a[i])));
    return worst;
}

/* What parallel.h promises beside the references: on 2 threads a ResNet-20 convolution's
 * forward, input and bias gradients, a batch norm's forward and backward, ReLU, the
 * residual add, max pooling and zeroing (sizes above PAR_MIN_FLOATS) are bit for bit
 * those of one thread
 * (each image, channel or element computed by one thread as one thread would), and the
 * weight gradient differs in rounding only (two partial sums added). */
static void test_threads_same_results(void **state)
{
    (void)state;
    conv2d_desc_t d;
    const int B = 10, C = 16, H = 16, W = 16, OC = 16;
    assert_int_equal(conv2d_init(&d, C, H, W, OC, 3, 3, 1, 1), 0);
    const size_t nx = (size_t)B * C * H * W, nw = (size_t)OC * C * 9, ny = (size_t)B * OC * H * W;
    lcg_t r = {77};
    float *x = falloc(nx), *w = falloc(nw), *g = falloc(ny), *y[2], *dx[2], *dw[2], *bn[2], *dbn[2], *ew[2], *dew[2];
    shortcut_desc_t sc;
    assert_int_equal(shortcut_init(&sc, C, H, W, OC, 1), 0);
    for (size_t i = 0; i < nx; i++) x[i] = lcg_unif(&r, -1.0f, 1.0f);
    for (size_t i = 0; i < nw; i++) w[i] = lcg_unif(&r, -0.5f, 0.5f);
    for (size_t i = 0; i < ny; i++) g[i] = lcg_unif(&r, -1.0f, 1.0f);
    float gamma[16], beta[16], mean[16], invstd[16], rm[16], rv[16], dgamma[2][16], dbeta[2][16], db[2][16];
    for (int c = 0; c < 16; c++) gamma[c] = lcg_unif(&r, 0.5f, 1.5f), beta[c] = lcg_unif(&r, -0.5f, 0.5f);
    /* max poolings of the input (40960 values, above the threshold): the 2x2 kernel and
     * the general loop (3x3 stride 2, padded) */
    pool2d_desc_t pd[2];
    assert_int_equal(pool2d_init(&pd[0], C, H, W, 2, 2, 0, 0), 0);
    assert_int_equal(pool2d_init(&pd[1], C, H, W, 3, 2, 1, 1), 0);
    float *py[2][2], *pdx[2][2];
    int32_t *pam[2][2];
    /* the optimizer's update and the set backwards, split by element ranges */
    float *sw[2], *su[2], *sa[2], *sx[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(par_set_threads(k + 1), 0);
        float *ws = falloc(conv2d_workspace(&d, B));
        y[k] = falloc(ny), dx[k] = falloc(nx), dw[k] = falloc(nw), bn[k] = falloc(ny), dbn[k] = falloc(ny);
        conv2d_forward(&d, B, x, w, NULL, y[k], ws);
        memset(dx[k], 0, nx * sizeof(float));
        conv2d_backward(&d, B, x, w, g, dx[k], dw[k], db[k], ws);
        for (int p = 0; p < 2; p++) {
            const size_t npy = (size_t)B * C * pd[p].OH * pd[p].OW;
            py[k][p] = falloc(npy), pdx[k][p] = falloc(nx);
            pam[k][p] = malloc(npy * sizeof(int32_t));
            assert_non_null(pam[k][p]);
            maxpool2d_forward(&pd[p], B, x, py[k][p], pam[k][p]);
            ffill(pdx[k][p], nx, 1.0f);
            zero_floats(nx / 2, pdx[k][p]); /* the second half stays 1: backward adds */
            maxpool2d_backward(&pd[p], B, g, pam[k][p], pdx[k][p]);
        }
        for (int c = 0; c < 16; c++) rm[c] = 0.0f, rv[c] = 1.0f;
        batchnorm_relu_forward_train_eps(B, OC, H * W, y[k], gamma, beta, bn[k], mean, invstd, rm, rv, 0.1f, 1e-5f);
        memset(dbn[k], 0, ny * sizeof(float));
        batchnorm_relu_backward(B, OC, H * W, y[k], gamma, mean, invstd, bn[k], g, dbn[k], dgamma[k], dbeta[k]);
        ew[k] = falloc(ny), dew[k] = falloc(ny);
        residual_add_forward(&sc, B, y[k], x, ew[k]);
        relu_forward(ny, ew[k], ew[k]);
        memset(dew[k], 0, ny * sizeof(float));
        relu_backward(ny, ew[k], g, dew[k]);
        residual_add_backward(&sc, B, g, dew[k], dew[k]);
        sw[k] = falloc(nx), su[k] = falloc(nx), sa[k] = falloc(ny), sx[k] = falloc(nx);
        memcpy(sw[k], x, nx * sizeof(float));
        ffill(su[k], nx, 0.5f);
        sgd_update(nx, sw[k], g, su[k], 0.1f, 0.9f, 0, 5e-4f, 0.5f);
        sgd_update(nx, sw[k], g, su[k], 0.1f, 0.9f, 1, 5e-4f, 0.5f);
        sgd_update(nx, sw[k], g, NULL, 0.1f, 0.0f, 0, 5e-4f, 0.5f);
        ffill(sa[k], ny, NAN);
        ffill(sx[k], nx, NAN);
        relu_backward_set(ny, ew[k], g, sx[k]);
        residual_add_backward_set(&sc, B, g, sa[k], 1, sx[k], 0);
        free(ws);
    }
    assert_int_equal(par_set_threads(1), 0);
    assert_memory_equal(y[0], y[1], ny * sizeof(float));
    assert_memory_equal(dx[0], dx[1], nx * sizeof(float));
    assert_memory_equal(bn[0], bn[1], ny * sizeof(float));
    assert_memory_equal(dbn[0], dbn[1], ny * sizeof(float));
    assert_memory_equal(dgamma[0], dgamma[1], sizeof dgamma[0]);
    assert_memory_equal(dbeta[0], dbeta[1], sizeof dbeta[0]);
    assert_memory_equal(ew[0], ew[1], ny * sizeof(float));
    assert_memory_equal(dew[0], dew[1], ny * sizeof(float));
    assert_memory_equal(db[0], db[1], sizeof db[0]);
    assert_memory_equal(sw[0], sw[1], nx * sizeof(float));
    assert_memory_equal(su[0], su[1], nx * sizeof(float));
    assert_memory_equal(sa[0], sa[1], ny * sizeof(float));
    assert_memory_equal(sx[0], sx[1], nx * sizeof(float));
    for (int p = 0; p < 2; p++) {
        const size_t npy = (size_t)B * C * pd[p].OH * pd[p].OW;
        assert_memory_equal(py[0][p], py[1][p], npy * sizeof(float));
        assert_memory_equal(pam[0][p], pam[1][p], npy * sizeof(int32_t));
        assert_memory_equal(pdx[0][p], pdx[1][p], nx * sizeof(float));
        assert_true(pdx[1][p][0] != 1.0f || pdx[1][p][1] != 1.0f); /* zeroed, then added to */
        for (int k = 0; k < 2; k++) {
            free(py[k][p]);
            free(pdx[k][p]);
            free(pam[k][p]);
        }
    }
    const double worst = worst_diff(dw[0], dw[1], nw);
    print_message("threads 2 vs 1: conv dweight worst |a-b|/max(1,|a|) %.1e\n", worst);
    /* a Winograd weight gradient's two partials are sums in the 6x6 domain: 5.3e-5 seen */
    assert_true(worst < (conv2d_winograd(&d, B) ? WINO_GRAD_TOL : 1e-5));
    free(x);
    free(w);
    free(g);
    for (int k = 0; k < 2; k++) {
        free(y[k]);
        free(dx[k]);
        free(dw[k]);
        free(bn[k]);
        free(dbn[k]);
        free(ew[k]);
        free(dew[k]);
        free(sw[k]);
        free(su[k]);
        free(sa[k]);
        free(sx[k]);
    }
}

/* Batch norm's sums over several runs of images (batchnorm.c: BN_PARTS / 1024 = 8 images
 * a run at 1024 channels; here 8, 8 and 4, then a block of 6 channels in one run) give
 * the bits of one thread on 2 and 3 threads, where the threads' shares of planes end
 * inside an image: each channel's sums are still added in image order. Planes of 3 values
 * are small ones (BN_SMALL_PLANE): one thread takes them run by run, the others plane by
 * plane, so this also checks that the two give the same bits. */
static void test_threads_batchnorm_runs(void **state)
{
    (void)state;
    enum { B = 20, C = 1030, HW = 3, N = B * C * HW };
    lcg_t r = {91};
    float *x = falloc(N), *res = falloc(N), *g = falloc(N), *y[3], *dx[3], *prm[3];
    for (size_t i = 0; i < N; i++)
        x[i] = lcg_unif(&r, -2.0f, 3.0f), res[i] = lcg_unif(&r, -1.0f, 1.0f), g[i] = lcg_unif(&r, -1.0f, 1.0f);
    /* Channel 0 is 0 but for 1, 1e17 and -1e17 in images 4, 5 and 6 (in x and in g): added
     * in image order its sums are 0 (1e17 + 1 rounds to 1e17), in any other order they
     * can be 1, which the float mean and gradients show; rounding alone seldom would. */
    for (int b = 0; b < B; b++)
        for (int i = 0; i < HW; i++) {
            const float v = i > 0 ? 0.0f : b == 4 ? 1.0f : b == 5 ? 1e17f : b == 6 ? -1e17f : 0.0f;
            x[(size_t)b * C * HW + i] = g[(size_t)b * C * HW + i] = v;
        }
    for (int k = 0; k < 3; k++) {
        assert_int_equal(par_set_threads(k + 1), 0);
        y[k] = falloc(2 * (size_t)N), dx[k] = falloc(2 * (size_t)N), prm[k] = falloc(10 * (size_t)C);
        float *gamma = prm[k], *beta = gamma + C, *mean = beta + C, *inv = mean + C, *rm = inv + C, *rv = rm + C,
              *dg = rv + C, *db = dg + C, *dg2 = db + C, *db2 = dg2 + C;
        for (int c = 0; c < C; c++)
            gamma[c] = 0.5f + 0.001f * (float)c, beta[c] = 0.01f * (float)(c % 7), rm[c] = 0.0f, rv[c] = 1.0f;
        batchnorm_add_relu_forward_train_eps(B, C, HW, x, gamma, beta, res, y[k], mean, inv, rm, rv, 0.1f, 1e-5f);
        batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, y[k] + N, mean, inv, rm, rv, 0.1f, 1e-5f);
        ffill(dx[k], N, NAN);
        batchnorm_relu_backward_set(B, C, HW, x, gamma, mean, inv, y[k], g, dx[k], dg, db);
        ffill(dx[k] + N, N, 0.5f);
        batchnorm_backward(B, C, HW, x, gamma, mean, inv, g, dx[k] + N, dg2, db2);
    }
    assert_int_equal(par_set_threads(1), 0);
    for (int k = 1; k < 3; k++) {
        assert_memory_equal(y[0], y[k], 2 * (size_t)N * sizeof(float));
        assert_memory_equal(dx[0], dx[k], 2 * (size_t)N * sizeof(float));
        assert_memory_equal(prm[0], prm[k], 10 * (size_t)C * sizeof(float));
    }
    free(x);
    free(res);
    free(g);
    for (int k = 0; k < 3; k++) {
        free(y[k]);
        free(dx[k]);
        free(prm[k]);
    }
}

/* d = a convolution of C channels of H x H into OC, K x K, of the given stride, pads and
 * groups */
static void square_conv(conv2d_desc_t *d, int C, int H, int OC, int K, int stride, int pad, int groups)
{
    assert_int_equal(conv2d_init(d, C, H, H, OC, K, K, stride, pad), 0);
    d->groups = groups;
    assert_int_equal(conv2d_setup(d), 0);
}

/* What parallel.h promises for the small-plane paths (conv.c's pointwise GEMM over whole
 * images, on 1x1 and 4x4 planes, and the channels-inner depthwise kernel, which stays on
 * one thread): on 2 and 3 threads the forward and the input gradient are the bits of one
 * thread, the weight gradient within rounding. */
static void test_threads_small_planes(void **state)
{
    (void)state;
    static const struct {
        int C, H, OC, K, pad, groups;
    } cases[] = {{24, 4, 40, 1, 0, 1}, {40, 2, 40, 3, 1, 40}, {48, 1, 20, 1, 0, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        conv2d_desc_t d;
        square_conv(&d, cases[k].C, cases[k].H, cases[k].OC, cases[k].K, 1, cases[k].pad, cases[k].groups);
        const int B = 37;
        const size_t nx = (size_t)B * d.C * d.H * d.W, nw = (size_t)d.OC * (d.C / d.groups) * d.KH * d.KW,
                     ny = (size_t)B * d.OC * d.OH * d.OW;
        lcg_t r = {850 + k};
        float *x = falloc(nx), *w = falloc(nw), *g = falloc(ny), *bias = falloc((size_t)d.OC), *y[3], *dx[3], *dw[3];
        rand_fill(&r, x, NULL, nx, -1.0f, 1.0f);
        rand_fill(&r, w, NULL, nw, -0.5f, 0.5f);
        rand_fill(&r, g, NULL, ny, -1.0f, 1.0f);
        rand_fill(&r, bias, NULL, (size_t)d.OC, -0.5f, 0.5f);
        for (int T = 1; T <= 3; T++) {
            assert_int_equal(par_set_threads(T), 0);
            float *ws = falloc(conv2d_workspace(&d, B) + 1);
            y[T - 1] = falloc(ny), dx[T - 1] = falloc(nx), dw[T - 1] = falloc(nw);
            conv2d_forward(&d, B, x, w, bias, y[T - 1], ws);
            memset(dx[T - 1], 0, nx * sizeof(float));
            conv2d_backward(&d, B, x, w, g, dx[T - 1], dw[T - 1], NULL, ws);
            free(ws);
        }
        assert_int_equal(par_set_threads(1), 0);
        for (int T = 2; T <= 3; T++) {
            assert_memory_equal(y[0], y[T - 1], ny * sizeof(float));
            assert_memory_equal(dx[0], dx[T - 1], nx * sizeof(float));
            assert_true(worst_diff(dw[0], dw[T - 1], nw) < 1e-5);
        }
        for (int T = 0; T < 3; T++) free(y[T]), free(dx[T]), free(dw[T]);
        free(x), free(w), free(g), free(bias);
    }
}

/* conv2d_backward_set: over a NaN-filled dinp, the bits conv2d_backward adds into a zeroed
 * one, for a grid-tile and a channel-vector direct input gradient (written directly), a
 * strided and a small-plane layer (GEMM + col2im into zeros), a depthwise one, and on 2
 * threads. */
static void test_conv_backward_set(void **state)
{
    (void)state;
    static const struct {
        int C, H, OC, K, stride, pad, groups;
    } cases[] = {{16, 32, 16, 3, 1, 1, 1},
                 {32, 8, 32, 3, 1, 1, 1},
                 {16, 16, 32, 3, 2, 1, 1},
                 {6, 14, 16, 5, 1, 0, 1},
                 {4, 9, 4, 3, 1, 1, 4}};
    for (int T = 1; T <= 2; T++) {
        assert_int_equal(par_set_threads(T), 0);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            conv2d_desc_t d;
            square_conv(&d, cases[k].C, cases[k].H, cases[k].OC, cases[k].K, cases[k].stride, cases[k].pad,
                        cases[k].groups);
            const int B = 3;
            const size_t nx = (size_t)B * d.C * d.H * d.W, nw = (size_t)d.OC * (d.C / d.groups) * d.KH * d.KW,
                         ny = (size_t)B * d.OC * d.OH * d.OW;
            lcg_t r = {800 + k};
            float *x = falloc(nx), *w = falloc(nw), *g = falloc(ny), *dx1 = falloc(nx), *dx2 = falloc(nx);
            float *dw1 = falloc(nw), *dw2 = falloc(nw), *ws = falloc(conv2d_workspace(&d, B) + 1);
            float db1[32], db2[32];
            for (size_t i = 0; i < nx; i++) x[i] = lcg_unif(&r, -1.0f, 1.0f);
            for (size_t i = 0; i < nw; i++) w[i] = lcg_unif(&r, -0.5f, 0.5f);
            for (size_t i = 0; i < ny; i++) g[i] = lcg_unif(&r, -1.0f, 1.0f);
            memset(dx1, 0, nx * sizeof(float));
            conv2d_backward(&d, B, x, w, g, dx1, dw1, db1, ws);
            ffill(dx2, nx, NAN);
            conv2d_backward_set(&d, B, x, w, g, dx2, dw2, db2, ws);
            assert_memory_equal(dx1, dx2, nx * sizeof(float));
            assert_memory_equal(dw1, dw2, nw * sizeof(float));
            assert_memory_equal(db1, db2, (size_t)d.OC * sizeof(float));
            float *bufs[] = {x, w, g, dx1, dx2, dw1, dw2, ws};
            for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
        }
    }
    assert_int_equal(par_set_threads(1), 0);
}

/* view_rows_* (view.c), the model's Transpose, Slice and Expand steps: the forward against
 * the naive walk of kernels/ref (exact: a copy), the backward bit for bit view_backward's
 * (the same sums in the same order) onto a prefill, and the _set variant over NaN, for the
 * permutations, bit for bit view_backward into zeros. The views: a ViT's head split (T,
 * heads, D) -> (heads, T, D) and its K^T, ConvNeXt's NCHW -> NHWC, a Slice of a fused
 * projection, a Slice walking down (negative stride), an Expand along an axis and of a
 * batch-less constant, a permutation with axes of size 1 (merged away), and transposes of
 * the last two axes whose sides are no multiples of 8 (view.c's 8x8 tiles and their edges;
 * the K^T and NHWC cases take the tiles too). */
static void test_view_rows(void **state)
{
    (void)state;
    const size_t neg = (size_t)-4; /* a stride of -4 floats, as the descriptor holds it */
    static const struct {
        int perm; /* a bijection: the _set variant applies */
        size_t off, nin;
        bcast_desc_t d;
    } cases[] = {
        {1, 0, 65 * 3 * 16, {4, {0, 3, 65, 16}, {3120, 16, 48, 1}, {0}}},
        {1, 0, 65 * 3 * 16, {4, {0, 3, 16, 65}, {3120, 16, 1, 48}, {0}}},
        {1, 0, 32 * 8 * 8, {4, {0, 8, 8, 32}, {2048, 8, 1, 64}, {0}}},
        {1, 0, 2 * 5 * 3, {5, {0, 1, 3, 5, 2}, {30, 30, 1, 3, 15}, {0}}},
        {1, 0, 5 * 13, {3, {0, 13, 5}, {65, 1, 13}, {0}}},
        {1, 0, 21 * 11, {3, {0, 21, 11}, {231, 1, 21}, {0}}},
        {0, 48, 65 * 144, {3, {0, 65, 48}, {9360, 144, 1}, {0}}},
        {0, 32, 10 * 4, {3, {0, 5, 4}, {40, 0, 1}, {0}}},
        {0, 0, 4 * 1 * 5, {4, {0, 4, 3, 5}, {20, 5, 0, 1}, {0}}},
        {0, 0, 2 * 6, {3, {0, 3, 12}, {0, 0, 1}, {0}}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bcast_desc_t d = cases[k].d;
        if (k == 7) d.sa[1] = neg; /* rows 8, 7, .., 4 of a (10, 4) sample */
        for (int B = 1; B <= 3; B += 2) {
            const size_t nin = (d.sa[0] ? (size_t)B : 1) * cases[k].nin;
            size_t nout = (size_t)B;
            for (int ax = 1; ax < d.rank; ax++) nout *= (size_t)d.dims[ax];
            lcg_t r = {900 + k};
            float *x = falloc(nin), *y = falloc(nout), *g = falloc(nout), *dx1 = falloc(nin), *dx2 = falloc(nin);
            double *xd = dalloc(nin), *yd = dalloc(nout);
            rand_fill(&r, x, xd, nin, -1.0f, 1.0f);
            rand_fill(&r, g, NULL, nout, -1.0f, 1.0f);
            g[nout - 1] = -0.0f; /* set gives +0, as adding it to zero does */
            view_rows_forward(&d, cases[k].off, B, x, y);
            ref_view_forward(&d, cases[k].off, B, xd, yd);
            for (size_t i = 0; i < nout; i++) assert_true(y[i] == (float)yd[i]);
            ffill(dx1, nin, PREFILL);
            ffill(dx2, nin, PREFILL);
            view_backward(&d, cases[k].off, B, g, dx1);
            view_rows_backward(&d, cases[k].off, B, g, dx2);
            assert_memory_equal(dx1, dx2, nin * sizeof(float));
            view_rows_backward(&d, cases[k].off, B, g, NULL); /* no input gradient: nothing */
            if (cases[k].perm) {
                memset(dx1, 0, nin * sizeof(float));
                view_backward(&d, cases[k].off, B, g, dx1);
                ffill(dx2, nin, NAN);
                view_rows_backward_set(&d, cases[k].off, B, g, dx2);
                assert_memory_equal(dx1, dx2, nin * sizeof(float));
            }
            float *bufs[] = {x, y, g, dx1, dx2};
            for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
            free(xd);
            free(yd);
        }
    }
}

/* binary_rows_* (view.c), the model's Add, Sub, Mul and Div steps: for every operator the
 * forward exactly ref_binary_forward's and binary_forward's (one rounding either way), the
 * backward bit for bit binary_backward's onto a prefill (the same sums in the same order:
 * a broadcast input's gradient summed along the rows), each gradient alone (the other
 * NULL, as for a frozen constant), and set_a / set_b over NaN bit for bit binary_backward
 * into zeros for the inputs that are not broadcast. The descriptors: the ViT's q / sqrt(D)
 * (a scalar constant), its positional embedding (a batch-less constant), ConvNeXt's layer
 * scale (C, 1, 1), equal shapes, a middle axis and the last axis broadcast, strides other
 * than 0 and 1 (a transposed read), and Mul(x, x) (the gradients one buffer). */
static void test_binary_rows(void **state)
{
    (void)state;
    static const struct {
        size_t na, nb; /* per sample, or the whole batch-less constant where its sa[0] (sb[0]) is 0 */
        int alias;     /* a == b, da == db */
        bcast_desc_t d;
    } cases[] = {
        {65 * 3 * 16, 1, 0, {4, {0, 65, 3, 16}, {3120, 48, 16, 1}, {0, 0, 0, 0}}},
        {65 * 48, 65 * 48, 0, {3, {0, 65, 48}, {3120, 48, 1}, {0, 48, 1}}},
        {32, 32 * 8 * 8, 0, {4, {0, 32, 8, 8}, {0, 1, 0, 0}, {2048, 64, 8, 1}}},
        {5 * 7, 5 * 7, 0, {3, {0, 5, 7}, {35, 7, 1}, {35, 7, 1}}},
        {4 * 5, 4 * 3 * 5, 0, {4, {0, 4, 3, 5}, {20, 5, 0, 1}, {60, 15, 5, 1}}},
        {6 * 4, 6, 0, {3, {0, 6, 4}, {24, 4, 1}, {6, 1, 0}}},
        {3 * 4, 3 * 4, 0, {3, {0, 3, 4}, {12, 1, 3}, {12, 4, 1}}},
        {5 * 7, 5 * 7, 1, {3, {0, 5, 7}, {35, 7, 1}, {35, 7, 1}}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int op = BINARY_ADD; op <= BINARY_DIV; op++)
            for (int B = 1; B <= 3; B += 2) {
                const bcast_desc_t *d = &cases[k].d;
                const size_t na = (d->sa[0] ? (size_t)B : 1) * cases[k].na;
                const size_t nb = (d->sb[0] ? (size_t)B : 1) * cases[k].nb;
                size_t no = (size_t)B;
                for (int ax = 1; ax < d->rank; ax++) no *= (size_t)d->dims[ax];
                lcg_t r = {1000 + 8 * k + (size_t)op};
                float *a = falloc(na), *b0 = falloc(nb), *y1 = falloc(no), *y2 = falloc(no), *g = falloc(no);
                float *da1 = falloc(na), *da2 = falloc(na), *db1 = falloc(nb), *db2 = falloc(nb);
                double *ad = dalloc(na), *bd = dalloc(nb), *yd = dalloc(no);
                rand_fill(&r, a, ad, na, -1.0f, 1.0f);
                rand_fill(&r, b0, bd, nb, 0.5f, 1.5f); /* no division by 0 */
                rand_fill(&r, g, NULL, no, -1.0f, 1.0f);
                const float *b = cases[k].alias ? a : b0;
                if (cases[k].alias) to_double(a, bd, na);
                binary_forward((binary_op_t)op, d, B, a, b, y1);
                binary_rows_forward((binary_op_t)op, d, B, a, b, y2);
                ref_binary_forward((binary_op_t)op, d, B, ad, bd, yd);
                assert_memory_equal(y1, y2, no * sizeof(float));
                for (size_t i = 0; i < no; i++) assert_true(y2[i] == (float)yd[i]);
                /* both gradients, then each alone, added onto a prefill */
                for (int which = 3; which >= 1; which--) {
                    float *ga1 = which & 1 ? da1 : NULL, *gb1 = which & 2 ? (cases[k].alias ? da1 : db1) : NULL;
                    float *ga2 = which & 1 ? da2 : NULL, *gb2 = which & 2 ? (cases[k].alias ? da2 : db2) : NULL;
                    ffill(da1, na, PREFILL);
                    ffill(da2, na, PREFILL);
                    ffill(db1, nb, PREFILL);
                    ffill(db2, nb, PREFILL);
                    binary_backward((binary_op_t)op, d, B, a, b, g, ga1, gb1);
                    binary_rows_backward((binary_op_t)op, d, B, a, b, g, ga2, 0, gb2, 0);
                    assert_memory_equal(da1, da2, na * sizeof(float));
                    assert_memory_equal(db1, db2, nb * sizeof(float));
                }
                /* set: an input as large as the output (the other one added to) */
                for (int set = 1; set <= 3 && !cases[k].alias; set++) {
                    const int set_a = set & 1 && na == no, set_b = set & 2 && nb == no;
                    if (!set_a && !set_b) continue;
                    ffill(da1, na, set_a ? 0.0f : PREFILL);
                    ffill(db1, nb, set_b ? 0.0f : PREFILL);
                    binary_backward((binary_op_t)op, d, B, a, b, g, da1, db1);
                    ffill(da2, na, set_a ? NAN : PREFILL);
                    ffill(db2, nb, set_b ? NAN : PREFILL);
                    binary_rows_backward((binary_op_t)op, d, B, a, b, g, da2, set_a, db2, set_b);
                    assert_memory_equal(da1, da2, na * sizeof(float));
                    assert_memory_equal(db1, db2, nb * sizeof(float));
                }
                float *bufs[] = {a, b0, y1, y2, g, da1, da2, db1, db2};
                for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
                free(ad);
                free(bd);
                free(yd);
            }
}

/* gemm_backward_set and bmm_backward_set: over a NaN-filled input gradient, the bits the
 * adding kernels give into zeros (both weight layouts, on 1 and 2 threads; each input of a
 * product alone and both), and the parameter gradients unchanged. */
static void test_backward_set_gemm(void **state)
{
    (void)state;
    const int B = 130, IN = 48, OUT = 144; /* above PAR_MIN_MACS: split on 2 threads */
    const size_t nx = (size_t)B * IN, nw = (size_t)IN * OUT, ny = (size_t)B * OUT;
    lcg_t r = {950};
    float *x = falloc(nx), *w = falloc(nw), *g = falloc(ny), *dx1 = falloc(nx), *dx2 = falloc(nx);
    float *dw1 = falloc(nw), *dw2 = falloc(nw), *db1 = falloc(OUT), *db2 = falloc(OUT);
    rand_fill(&r, x, NULL, nx, -1.0f, 1.0f);
    rand_fill(&r, w, NULL, nw, -0.5f, 0.5f);
    rand_fill(&r, g, NULL, ny, -1.0f, 1.0f);
    for (int T = 1; T <= 2; T++) {
        assert_int_equal(par_set_threads(T), 0);
        for (int layout = 0; layout < 2; layout++) {
            const gemm_desc_t d = {IN, OUT, layout ? GEMM_W_IN_OUT : GEMM_W_OUT_IN, 0.5f, 2.0f};
            memset(dx1, 0, nx * sizeof(float));
            gemm_backward(&d, B, x, w, g, dx1, dw1, db1);
            ffill(dx2, nx, NAN);
            gemm_backward_set(&d, B, x, w, g, dx2, dw2, db2);
            assert_memory_equal(dx1, dx2, nx * sizeof(float));
            assert_memory_equal(dw1, dw2, nw * sizeof(float));
            assert_memory_equal(db1, db2, OUT * sizeof(float));
        }
    }
    assert_int_equal(par_set_threads(1), 0);
    /* attention's Q K^T shapes: G pairs of (M, K) x (K, N) */
    const int G = 6, M = 13, K = 8, N = 11;
    const size_t na = (size_t)G * M * K, nb = (size_t)G * K * N, no = (size_t)G * M * N;
    float *a = falloc(na), *b = falloc(nb), *go = falloc(no);
    float *da1 = falloc(na), *da2 = falloc(na), *dbb1 = falloc(nb), *dbb2 = falloc(nb);
    rand_fill(&r, a, NULL, na, -1.0f, 1.0f);
    rand_fill(&r, b, NULL, nb, -1.0f, 1.0f);
    rand_fill(&r, go, NULL, no, -1.0f, 1.0f);
    for (int set = 1; set <= 3; set++) {
        const int set_a = set & 1, set_b = (set >> 1) & 1;
        /* reference: zeros where set, a prefill where added */
        ffill(da1, na, set_a ? 0.0f : PREFILL);
        ffill(dbb1, nb, set_b ? 0.0f : PREFILL);
        bmm_backward(G, M, K, N, a, b, go, da1, dbb1);
        ffill(da2, na, set_a ? NAN : PREFILL);
        ffill(dbb2, nb, set_b ? NAN : PREFILL);
        bmm_backward_set(G, M, K, N, a, b, go, da2, set_a, dbb2, set_b);
        assert_memory_equal(da1, da2, na * sizeof(float));
        assert_memory_equal(dbb1, dbb2, nb * sizeof(float));
    }
    float *bufs[] = {x, w, g, dx1, dx2, dw1, dw2, db1, db2, a, b, go, da1, da2, dbb1, dbb2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

/* bmm_forward and bmm_backward(_set) against kernels/ref in double: the ViT's attention
 * products (65x16 by 16x65 and 65x65 by 65x16), the small kernel's row and column tails
 * (N and K off multiples of 8 and 16, M off multiples of its 6 rows, M of 1) and one product
 * above its packing bound, which OpenBLAS takes. The backward's reference: da = dout b^T,
 * db = a^T dout, added into PREFILL and written over NaN. */
/* The backward's da = dout b^T packs b transposed (bmm.c's bmm_pack_t, 8x8 AVX2 tiles);
 * the forward of dout by b^T written out contiguous reads its rows in place: where both
 * take the small kernel (AVX2 and FMA, every packed operand within bmm.c's BMM_PACK_MAX of
 * 8192 floats, as bmm_small_ok asks) they sum the same terms in the same order, so da has
 * the forward's bits: the pack moved every float where the element by element one did. */
static int bmm_fits_small(int M, int K, int N)
{
    const long k8 = (K + 7) / 8 * 8, n8 = (N + 7) / 8 * 8;
    return (long)K * n8 <= 8192 && (long)N * k8 <= 8192 && (long)M * n8 <= 8192;
}

static void bmm_packed_same(int G, int M, int K, int N, const float *b, const float *go, const float *da)
{
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !bmm_fits_small(M, K, N) ||
        !bmm_fits_small(M, N, K))
        return;
    float *bt = falloc((size_t)G * K * N), *want = falloc((size_t)G * M * K);
    for (int g = 0; g < G; g++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < N; j++) bt[((size_t)g * N + j) * K + k] = b[((size_t)g * K + k) * N + j];
    bmm_forward(G, M, N, K, go, bt, want);
    assert_memory_equal(da, want, (size_t)G * M * K * sizeof *da);
    free(bt);
    free(want);
}

static void test_bmm_small(void **state)
{
    (void)state;
    static const int cases[][4] = {{3, 65, 16, 65}, {3, 65, 65, 16}, {2, 13, 8, 11},  {2, 7, 5, 9},
                                   {1, 1, 24, 17},  {2, 19, 1, 8},   {1, 20, 130, 70}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int G = cases[ci][0], M = cases[ci][1], K = cases[ci][2], N = cases[ci][3];
        const size_t na = (size_t)G * M * K, nb = (size_t)G * K * N, no = (size_t)G * M * N;
        lcg_t r = {3300 + ci};
        float *a = falloc(na), *b = falloc(nb), *y = falloc(no), *go = falloc(no);
        float *da = falloc(na), *db = falloc(nb), *da1 = falloc(na), *db1 = falloc(nb);
        double *ad = dalloc(na), *bd = dalloc(nb), *yd = dalloc(no), *gd = dalloc(no), *dad = dalloc(na),
               *dbd = dalloc(nb);
        rand_fill(&r, a, ad, na, -1.0f, 1.0f);
        rand_fill(&r, b, bd, nb, -1.0f, 1.0f);
        rand_fill(&r, go, gd, no, -1.0f, 1.0f);
        ref_bmm_forward(G, M, K, N, ad, bd, yd);
        for (int g = 0; g < G; g++) {
            const double *ag = ad + (size_t)g * M * K, *bg = bd + (size_t)g * K * N, *dg = gd + (size_t)g * M * N;
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++) {
                    double s = 0.0;
                    for (int j = 0; j < N; j++) s += dg[(size_t)i * N + j] * bg[(size_t)k * N + j];
                    dad[(size_t)g * M * K + (size_t)i * K + k] = s;
                }
            for (int k = 0; k < K; k++)
                for (int j = 0; j < N; j++) {
                    double s = 0.0;
                    for (int i = 0; i < M; i++) s += ag[(size_t)i * K + k] * dg[(size_t)i * N + j];
                    dbd[(size_t)g * K * N + (size_t)k * N + j] = s;
                }
        }
        char what[80];
        snprintf(what, sizeof what, "bmm (%d x %dx%d by %dx%d)", G, M, K, K, N);
        ffill(y, no, NAN);
        bmm_forward(G, M, K, N, a, b, y);
        check_close(what, y, yd, no, FWD_TOL, &g_max_fwd);
        ffill(da, na, NAN);
        ffill(db, nb, NAN);
        bmm_backward_set(G, M, K, N, a, b, go, da, 1, db, 1);
        snprintf(what, sizeof what, "bmm (%d x %dx%d by %dx%d) da", G, M, K, K, N);
        check_close(what, da, dad, na, BWD_TOL, &g_max_bwd);
        snprintf(what, sizeof what, "bmm (%d x %dx%d by %dx%d) db", G, M, K, K, N);
        check_close(what, db, dbd, nb, BWD_TOL, &g_max_bwd);
        ffill(da1, na, PREFILL);
        ffill(db1, nb, PREFILL);
        bmm_backward(G, M, K, N, a, b, go, da1, db1);
        check_acc(what, da1, da, PREFILL, na);
        check_acc(what, db1, db, PREFILL, nb);
        bmm_packed_same(G, M, K, N, b, go, da);
        float *bufs[] = {a, b, y, go, da, db, da1, db1};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
        double *dbufs[] = {ad, bd, yd, gd, dad, dbd};
        for (size_t i = 0; i < sizeof dbufs / sizeof dbufs[0]; i++) free(dbufs[i]);
    }
}

/* Fully connected layers and ONNX Gemm above the size that splits them (fc.c): on 2 and 3
 * threads, both weight layouts, what one thread gives up to rounding (OpenBLAS's edge
 * tiles fall on other rows), and close to the naive product. */
static void test_threads_gemm(void **state)
{
    (void)state;
    const int B = 37, IN = 300, OUT = 250;
    const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
    lcg_t r = {91};
    float *x = falloc(nx), *w = falloc(nw), *bias = falloc(OUT), *g = falloc(ny);
    double *xd = dalloc(nx), *wd = dalloc(nw), *bd = dalloc(OUT), *yd = dalloc(ny), *Rd = dalloc(ny);
    rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
    rand_fill(&r, w, wd, nw, -0.5f, 0.5f);
    rand_fill(&r, bias, bd, OUT, -0.5f, 0.5f);
    rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
    ref_fc_forward(B, IN, OUT, xd, wd, bd, yd);
    for (int layout = 0; layout < 2; layout++) {
        const gemm_desc_t d = {
            .IN = IN, .OUT = OUT, .layout = layout ? GEMM_W_IN_OUT : GEMM_W_OUT_IN, .alpha = 0.5f, .beta = 1.0f};
        float *y[3], *dx[3], *dw[3];
        for (int k = 0; k < 3; k++) {
            assert_int_equal(par_set_threads(k + 1), 0);
            y[k] = falloc(ny), dx[k] = falloc(nx), dw[k] = falloc(nw);
            ffill(y[k], ny, NAN);
            ffill(dw[k], nw, NAN);
            memset(dx[k], 0, nx * sizeof(float));
            gemm_forward(&d, B, x, w, bias, y[k]);
            gemm_backward(&d, B, x, w, g, dx[k], dw[k], NULL);
        }
        assert_int_equal(par_set_threads(1), 0);
        if (layout == 0) {
            /* y = 0.5 x W^T + bias against the naive x W^T + bias */
            double *half = dalloc(ny);
            for (size_t i = 0; i < ny; i++) half[i] = (yd[i] - bd[i % OUT]) * 0.5 + bd[i % OUT];
            check_close("gemm forward on 2 threads", y[1], half, ny, FWD_TOL, &g_max_fwd);
            free(half);
        }
        for (int k = 1; k < 3; k++) {
            const double e = fmax(worst_diff(y[0], y[k], ny),
                                  fmax(worst_diff(dx[0], dx[k], nx), worst_diff(dw[0], dw[k], nw)));
            print_message("gemm layout %d, %d threads vs 1: worst |a-b|/max(1,|a|) %.1e\n", layout, k + 1, e);
            assert_true(e < 1e-5);
        }
        for (int k = 0; k < 3; k++) {
            free(y[k]);
            free(dx[k]);
            free(dw[k]);
        }
    }
    free(x);
    free(w);
    free(bias);
    free(g);
    free(xd);
    free(wd);
    free(bd);
    free(yd);
    free(Rd);
}

/* ---- leaky ReLU, sigmoid, tanh -------------------------------------------------- */

typedef ref_act_t act_t; /* kernels/ref/ref.h's kinds */

typedef struct {
    act_t kind;
    double alpha;
    double *x, *y;
    const double *R;
    size_t n;
} act_ctx_t;

static double act_loss(void *p)
{
    act_ctx_t *c = p;
    for (size_t i = 0; i < c->n; i++) c->y[i] = ref_act(c->kind, c->alpha, c->x[i]);
    return dot(c->y, c->R, c->n);
}

static void act_forward(act_t kind, float alpha, size_t n, const float *x, float *y)
{
    if (kind == REF_ACT_LEAKY) leaky_relu_forward(n, alpha, x, y);
    else if (kind == REF_ACT_SIGMOID) sigmoid_forward(n, x, y);
    else tanh_forward(n, x, y);
}

static void act_backward(act_t kind, float alpha, size_t n, const float *y, const float *g, float *dx)
{
    if (kind == REF_ACT_LEAKY) leaky_relu_backward(n, alpha, y, g, dx);
    else if (kind == REF_ACT_SIGMOID) sigmoid_backward(n, y, g, dx);
    else tanh_backward(n, y, g, dx);
}

static void run_act_case(const char *name, act_t kind, float alpha, uint64_t seed)
{
    lcg_t r = {seed};
    const size_t n = 1037;
    float *x = falloc(n), *y = falloc(n), *g = falloc(n), *dx = falloc(n), *dx2 = falloc(n);
    double *xd = dalloc(n), *yd = dalloc(n), *Rd = dalloc(n);
    /* |x| in [0.05, 4]: away from leaky ReLU's kink, into the flat tails of the others */
    for (size_t i = 0; i < n; i++) {
        float v = lcg_unif(&r, 0.05f, 4.0f);
        x[i] = (lcg_next(&r) & 1) ? v : -v;
    }
    to_double(x, xd, n);
    rand_fill(&r, g, Rd, n, -1.0f, 1.0f);
    act_ctx_t ctx = {kind, (double)alpha, xd, yd, Rd, n};
    char what[96];

    ffill(y, n, NAN);
    act_forward(kind, alpha, n, x, y);
    act_loss(&ctx);
    snprintf(what, sizeof what, "%s forward", name);
    double e_fwd = check_close(what, y, yd, n, FWD_TOL, &g_max_fwd);

    memset(dx, 0, n * sizeof(float));
    act_backward(kind, alpha, n, y, g, dx);
    snprintf(what, sizeof what, "%s dinp", name);
    double e_fd = check_fd(what, act_loss, &ctx, xd, n, dx, 100000);
    ffill(dx2, n, PREFILL);
    act_backward(kind, alpha, n, y, g, dx2);
    check_acc(what, dx2, dx, PREFILL, n);
    act_backward(kind, alpha, n, y, g, NULL); /* dinp may be NULL */

    /* in place gives the same bits */
    memcpy(dx2, x, n * sizeof(float));
    act_forward(kind, alpha, n, dx2, dx2);
    assert_memory_equal(dx2, y, n * sizeof(float));
    print_message("%-22s fwd %.1e  fd %.1e\n", name, e_fwd, e_fd);
    free(x);
    free(y);
    free(g);
    free(dx);
    free(dx2);
    free(xd);
    free(yd);
    free(Rd);
}

static void test_activations(void **state)
{
    (void)state;
    run_act_case("leaky_relu alpha 0.01", REF_ACT_LEAKY, 0.01f, 1400);
    run_act_case("leaky_relu alpha 0.2", REF_ACT_LEAKY, 0.2f, 1401);
    run_act_case("sigmoid", REF_ACT_SIGMOID, 0.0f, 1402);
    run_act_case("tanh", REF_ACT_TANH, 0.0f, 1403);

    /* alpha 0 is ReLU, bit for bit, forward and backward */
    const float x[6] = {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f, -0.0f}, g[6] = {1, 2, 3, 4, 5, 6};
    float y[6], yr[6], dx[6] = {0}, dxr[6] = {0};
    leaky_relu_forward(6, 0.0f, x, y);
    relu_forward(6, x, yr);
    for (int i = 0; i < 6; i++) assert_true(y[i] == yr[i]);
    leaky_relu_backward(6, 0.0f, y, g, dx);
    relu_backward(6, yr, g, dxr);
    assert_memory_equal(dx, dxr, sizeof dx);
    /* at 0 the gradient is alpha * dout (PyTorch's choice) */
    float d0 = 0.0f;
    leaky_relu_forward(1, 0.1f, &x[2], y);
    leaky_relu_backward(1, 0.1f, y, &g[2], &d0);
    assert_float_equal(d0, 0.1f * 3.0f, 1e-7f);
    /* the tails stay finite and exact: no overflow in expf */
    const float big[4] = {-200.0f, -89.0f, 89.0f, 200.0f};
    float s[4], t[4];
    sigmoid_forward(4, big, s);
    tanh_forward(4, big, t);
    assert_true(s[0] == 0.0f && s[1] >= 0.0f && s[1] < 1e-38f && s[2] == 1.0f && s[3] == 1.0f);
    assert_true(t[0] == -1.0f && t[3] == 1.0f);
}

/* ---- plain add and channel concatenation ------------------------------------------ */

static void test_add(void **state)
{
    (void)state;
    lcg_t r = {1500};
    const size_t n = 1037;
    float *a = falloc(n), *b = falloc(n), *y = falloc(n), *g = falloc(n), *da = falloc(n), *db = falloc(n);
    rand_fill(&r, a, NULL, n, -1.0f, 1.0f);
    rand_fill(&r, b, NULL, n, -1.0f, 1.0f);
    rand_fill(&r, g, NULL, n, -1.0f, 1.0f);
    add_forward(n, a, b, y);
    for (size_t i = 0; i < n; i++) assert_true(y[i] == a[i] + b[i]);
    /* in place on either operand */
    memcpy(da, a, n * sizeof(float));
    add_forward(n, da, b, da);
    assert_memory_equal(da, y, n * sizeof(float));
    memcpy(db, b, n * sizeof(float));
    add_forward(n, a, db, db);
    assert_memory_equal(db, y, n * sizeof(float));
    /* the backward adds dout to both, either may be NULL */
    ffill(da, n, PREFILL);
    ffill(db, n, -PREFILL);
    add_backward(n, g, da, db);
    for (size_t i = 0; i < n; i++) assert_true(da[i] == PREFILL + g[i] && db[i] == -PREFILL + g[i]);
    ffill(da, n, PREFILL);
    add_backward(n, g, da, NULL);
    for (size_t i = 0; i < n; i++) assert_true(da[i] == PREFILL + g[i]);
    ffill(db, n, PREFILL);
    add_backward(n, g, NULL, db);
    for (size_t i = 0; i < n; i++) assert_true(db[i] == PREFILL + g[i]);
    /* Add(x, x): one buffer receives both, 2 * dout */
    ffill(da, n, PREFILL);
    add_backward(n, g, da, da);
    for (size_t i = 0; i < n; i++) assert_true(da[i] == (PREFILL + g[i]) + g[i]);
    free(a);
    free(b);
    free(y);
    free(g);
    free(da);
    free(db);
}

typedef struct {
    int B, HW, n;
    const int *C;
    double **x;
    double *y;
    const double *R;
} concat_ctx_t;

static double concat_loss(void *p)
{
    concat_ctx_t *c = p;
    ref_concat_forward(c->B, c->HW, c->n, c->C, (const double *const *)c->x, c->y);
    int OC = 0;
    for (int i = 0; i < c->n; i++) OC += c->C[i];
    return dot(c->y, c->R, (size_t)c->B * OC * c->HW);
}

static void test_concat(void **state)
{
    (void)state;
    enum { B = 3, HW = 7, N = 3 };
    static const int C[N] = {2, 1, 4};
    const int OC = 7;
    lcg_t r = {1600};
    float *x[N], *dx[N], *dx2[N];
    double *xd[N];
    for (int i = 0; i < N; i++) {
        size_t ni = (size_t)B * C[i] * HW;
        x[i] = falloc(ni);
        dx[i] = falloc(ni);
        dx2[i] = falloc(ni);
        xd[i] = dalloc(ni);
        rand_fill(&r, x[i], xd[i], ni, -1.0f, 1.0f);
    }
    const size_t ny = (size_t)B * OC * HW;
    float *y = falloc(ny), *g = falloc(ny);
    double *yd = dalloc(ny), *Rd = dalloc(ny);
    rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
    concat_ctx_t ctx = {B, HW, N, C, xd, yd, Rd};

    ffill(y, ny, NAN);
    concat_forward(B, HW, N, C, (const float *const *)x, y);
    concat_loss(&ctx);
    check_close("concat forward", y, yd, ny, FWD_TOL, &g_max_fwd);
    for (size_t i = 0; i < ny; i++) assert_true(y[i] == (float)yd[i]); /* a copy: exact */

    for (int i = 0; i < N; i++) memset(dx[i], 0, (size_t)B * C[i] * HW * sizeof(float));
    concat_backward(B, HW, N, C, g, dx);
    for (int i = 0; i < N; i++) {
        char what[64];
        snprintf(what, sizeof what, "concat dinp[%d]", i);
        check_fd(what, concat_loss, &ctx, xd[i], (size_t)B * C[i] * HW, dx[i], 100000);
        ffill(dx2[i], (size_t)B * C[i] * HW, PREFILL);
    }
    /* accumulates; a NULL gradient is skipped and the others still get theirs */
    float *part[N] = {dx2[0], NULL, dx2[2]};
    concat_backward(B, HW, N, C, g, part);
    check_acc("concat dinp[0]", dx2[0], dx[0], PREFILL, (size_t)B * C[0] * HW);
    check_acc("concat dinp[2]", dx2[2], dx[2], PREFILL, (size_t)B * C[2] * HW);
    for (size_t i = 0; i < (size_t)B * C[1] * HW; i++) assert_true(dx2[1][i] == PREFILL);
    for (int i = 0; i < N; i++) {
        free(x[i]);
        free(dx[i]);
        free(dx2[i]);
        free(xd[i]);
    }
    free(y);
    free(g);
    free(yd);
    free(Rd);
}

/* ---- ONNX Gemm ---------------------------------------------------------------------- */

typedef struct {
    const gemm_desc_t *d;
    int B;
    double *x, *w, *b, *y;
    const double *R;
} gemm_ctx_t;

static double gemm_loss(void *p)
{
    gemm_ctx_t *c = p;
    ref_gemm_forward(c->d, c->B, c->x, c->w, c->b, c->y);
    return dot(c->y, c->R, (size_t)c->B * c->d->OUT);
}

static void test_gemm(void **state)
{
    (void)state;
    static const struct {
        int B, IN, OUT;
        gemm_layout_t layout;
        float alpha, beta;
        int bias;
    } cases[] = {
        {5, 7, 3, GEMM_W_OUT_IN, 1.0f, 1.0f, 1},    {5, 7, 3, GEMM_W_IN_OUT, 1.0f, 1.0f, 1},
        {4, 9, 6, GEMM_W_OUT_IN, 0.5f, 2.0f, 1},    {4, 9, 6, GEMM_W_IN_OUT, -1.5f, 0.25f, 1},
        {33, 50, 10, GEMM_W_IN_OUT, 2.0f, 0.0f, 1}, {3, 8, 5, GEMM_W_IN_OUT, 0.75f, 1.0f, 0},
        {1, 1, 1, GEMM_W_OUT_IN, 3.0f, -1.0f, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lcg_t r = {1700 + k};
        const gemm_desc_t d = {cases[k].IN, cases[k].OUT, cases[k].layout, cases[k].alpha, cases[k].beta};
        const int B = cases[k].B, IN = d.IN, OUT = d.OUT, has_b = cases[k].bias;
        const size_t nx = (size_t)B * IN, nw = (size_t)OUT * IN, ny = (size_t)B * OUT;
        float *x = falloc(nx), *w = falloc(nw), *b = falloc(OUT), *y = falloc(ny), *g = falloc(ny);
        float *dx = falloc(nx), *dx2 = falloc(nx), *dw = falloc(nw), *db = falloc(OUT), *dw2 = falloc(nw);
        float *db2 = falloc(OUT);
        double *xd = dalloc(nx), *wd = dalloc(nw), *bd = dalloc(OUT), *yd = dalloc(ny), *Rd = dalloc(ny);
        rand_fill(&r, x, xd, nx, -1.0f, 1.0f);
        rand_fill(&r, w, wd, nw, -0.5f, 0.5f);
        rand_fill(&r, b, bd, OUT, -0.5f, 0.5f);
        rand_fill(&r, g, Rd, ny, -1.0f, 1.0f);
        gemm_ctx_t ctx = {&d, B, xd, wd, has_b ? bd : NULL, yd, Rd};
        char what[128];
        snprintf(what, sizeof what, "gemm %s alpha %g beta %g B=%d IN=%d OUT=%d",
                 d.layout == GEMM_W_OUT_IN ? "(OUT,IN)" : "(IN,OUT)", d.alpha, d.beta, B, IN, OUT);

        ffill(y, ny, NAN);
        gemm_forward(&d, B, x, w, has_b ? b : NULL, y);
        gemm_loss(&ctx);
        check_close(what, y, yd, ny, FWD_TOL, &g_max_fwd);

        memset(dx, 0, nx * sizeof(float));
        ffill(dw, nw, NAN);
        ffill(db, OUT, NAN);
        gemm_backward(&d, B, x, w, g, dx, dw, has_b ? db : NULL);
        check_fd(what, gemm_loss, &ctx, xd, nx, dx, 100000);
        check_fd(what, gemm_loss, &ctx, wd, nw, dw, 100000);
        /* beta = 0 makes the bias no input at all: its gradient is exactly 0 */
        if (has_b && d.beta != 0.0f) check_fd(what, gemm_loss, &ctx, bd, OUT, db, 100000);
        if (has_b && d.beta == 0.0f)
            for (int o = 0; o < OUT; o++) assert_true(db[o] == 0.0f);

        ffill(dx2, nx, PREFILL);
        gemm_backward(&d, B, x, w, g, dx2, dw2, has_b ? db2 : NULL);
        check_acc(what, dx2, dx, PREFILL, nx);
        ffill(dw2, nw, NAN);
        ffill(db2, OUT, NAN);
        gemm_backward(&d, B, x, w, g, NULL, dw2, has_b ? db2 : NULL);
        assert_memory_equal(dw, dw2, nw * sizeof(float));
        if (has_b) assert_memory_equal(db, db2, OUT * sizeof(float));

        /* the (OUT, IN), alpha = beta = 1 case is fc, bit for bit */
        if (d.layout == GEMM_W_OUT_IN && d.alpha == 1.0f && d.beta == 1.0f) {
            float *yf = falloc(ny), *dxf = falloc(nx), *dwf = falloc(nw), *dbf = falloc(OUT);
            fc_forward(B, IN, OUT, x, w, has_b ? b : NULL, yf);
            assert_memory_equal(yf, y, ny * sizeof(float));
            memset(dxf, 0, nx * sizeof(float));
            fc_backward(B, IN, OUT, x, w, g, dxf, dwf, has_b ? dbf : NULL);
            assert_memory_equal(dxf, dx, nx * sizeof(float));
            assert_memory_equal(dwf, dw, nw * sizeof(float));
            if (has_b) assert_memory_equal(dbf, db, OUT * sizeof(float));
            free(yf);
            free(dxf);
            free(dwf);
            free(dbf);
        }
        free(x);
        free(w);
        free(b);
        free(y);
        free(g);
        free(dx);
        free(dx2);
        free(dw);
        free(db);
        free(dw2);
        free(db2);
        free(xd);
        free(wd);
        free(bd);
        free(yd);
        free(Rd);
    }
    /* the transposed layout holds the same matrix transposed: same product */
    enum { B = 3, IN = 5, OUT = 4 };
    float x[B * IN], w[OUT * IN], wt[IN * OUT], bias[OUT], y1[B * OUT], y2[B * OUT];
    lcg_t r = {1799};
    rand_fill(&r, x, NULL, B * IN, -1, 1);
    rand_fill(&r, w, NULL, OUT * IN, -1, 1);
    rand_fill(&r, bias, NULL, OUT, -1, 1);
    for (int o = 0; o < OUT; o++)
        for (int k = 0; k < IN; k++) wt[k * OUT + o] = w[o * IN + k];
    const gemm_desc_t a = {IN, OUT, GEMM_W_OUT_IN, 0.5f, 2.0f}, t = {IN, OUT, GEMM_W_IN_OUT, 0.5f, 2.0f};
    gemm_forward(&a, B, x, w, bias, y1);
    gemm_forward(&t, B, x, wt, bias, y2);
    for (int i = 0; i < B * OUT; i++) assert_float_equal(y1[i], y2[i], 1e-6f);
}

/* ---- dropout ------------------------------------------------------------------------ */

static void test_dropout(void **state)
{
    (void)state;
    const size_t n = 100000;
    float *x = falloc(n), *y = falloc(n), *y2 = falloc(n), *g = falloc(n), *dx = falloc(n);
    lcg_t r = {1800};
    /* no zero inputs, so out == 0 exactly where an element was dropped */
    for (size_t i = 0; i < n; i++) {
        float v = lcg_unif(&r, 0.1f, 2.0f);
        x[i] = (lcg_next(&r) & 1) ? v : -v;
        g[i] = lcg_unif(&r, 0.1f, 2.0f);
    }
    const uint64_t key = dropout_key(42, 7, 3);
    static const float ps[] = {0.1f, 0.3f, 0.5f, 0.9f};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        const float p = ps[k], scale = 1.0f / (1.0f - p);
        dropout_forward(n, p, key, x, y);
        size_t dropped = 0;
        for (size_t i = 0; i < n; i++) {
            if (y[i] == 0.0f) dropped++;
            else if (y[i] != x[i] * scale)
                fail_msg("dropout p=%g: kept [%zu] = %.9g, want %.9g", p, i, y[i], x[i] * scale);
        }
        /* binomial: 5 standard deviations sqrt(n p (1-p)) <= 5 * 158 */
        const double frac = (double)dropped / (double)n, sd = sqrt(p * (1.0 - p) / (double)n);
        if (!(fabs(frac - p) <= 5.0 * sd))
            fail_msg("dropout p=%g dropped %.4f of %zu elements (more than 5 sd = %.4f from p)", p, frac, n, 5.0 * sd);
        /* the backward regenerates the same mask: dinp += dout * scale where kept, else nothing */
        ffill(dx, n, PREFILL);
        dropout_backward(n, p, key, g, dx);
        for (size_t i = 0; i < n; i++) {
            const float want = y[i] == 0.0f ? PREFILL : PREFILL + g[i] * scale;
            if (dx[i] != want)
                fail_msg("dropout p=%g backward [%zu] = %.9g, want %.9g (mask differs?)", p, i, dx[i], want);
        }
        dropout_backward(n, p, key, g, NULL); /* dinp may be NULL */
        /* deterministic; in place gives the same bits */
        memcpy(y2, x, n * sizeof(float));
        dropout_forward(n, p, key, y2, y2);
        assert_memory_equal(y2, y, n * sizeof(float));
        /* another key (step, layer or seed) gives another mask: masks agree on about
         * p^2 + (1-p)^2 of the elements, not all */
        static const uint64_t other[3][3] = {{42, 8, 3}, {42, 7, 4}, {43, 7, 3}};
        for (int o = 0; o < 3; o++) {
            dropout_forward(n, p, dropout_key(other[o][0], other[o][1], (uint32_t)other[o][2]), x, y2);
            size_t differ = 0;
            for (size_t i = 0; i < n; i++) differ += (y[i] == 0.0f) != (y2[i] == 0.0f);
            const double want = 2.0 * p * (1.0 - p), fd = (double)differ / (double)n;
            if (!(fabs(fd - want) <= 0.02))
                fail_msg("dropout p=%g: key %d's mask differs from the first in %.4f of elements, want about %.4f", p,
                         o, fd, want);
        }
        print_message("dropout p=%.1f dropped %.4f\n", p, frac);
    }
    /* p = 0: the identity, forward and backward */
    dropout_forward(n, 0.0f, key, x, y);
    assert_memory_equal(y, x, n * sizeof(float));
    ffill(dx, n, PREFILL);
    dropout_backward(n, 0.0f, key, g, dx);
    for (size_t i = 0; i < n; i++) assert_true(dx[i] == PREFILL + g[i]);
    /* p = 1: everything dropped, no gradient, nothing infinite */
    dropout_forward(n, 1.0f, key, x, y);
    for (size_t i = 0; i < n; i++) assert_true(y[i] == 0.0f);
    ffill(dx, n, PREFILL);
    dropout_backward(n, 1.0f, key, g, dx);
    for (size_t i = 0; i < n; i++) assert_true(dx[i] == PREFILL);
    /* the _set backwards (dropout and stochastic depth, p 0 and 0.3, a -0 in the
     * gradient): over NaN, the bits of the adding ones into zeros */
    float *dx2 = falloc(n);
    g[5] = -0.0f;
    for (int k = 0; k < 2; k++) {
        const float p = k ? 0.3f : 0.0f;
        memset(dx, 0, n * sizeof(float));
        dropout_backward(n, p, key, g, dx);
        ffill(dx2, n, NAN);
        dropout_backward_set(n, p, key, g, dx2);
        assert_memory_equal(dx, dx2, n * sizeof(float));
        memset(dx, 0, n * sizeof(float));
        stochastic_depth_backward(n, 1000, p, key, g, dx);
        ffill(dx2, n, NAN);
        stochastic_depth_backward_set(n, 1000, p, key, g, dx2);
        assert_memory_equal(dx, dx2, n * sizeof(float));
    }
    free(dx2);
    /* the threshold is round(p * 2^24), clamped */
    assert_int_equal(dropout_threshold(0.0f), 0);
    assert_int_equal(dropout_threshold(-1.0f), 0);
    assert_int_equal(dropout_threshold(1.0f), 1u << 24);
    assert_int_equal(dropout_threshold(0.5f), 1u << 23);
    /* the key mixes all three inputs */
    assert_true(dropout_key(1, 0, 0) != dropout_key(0, 1, 0));
    assert_true(dropout_key(0, 1, 0) != dropout_key(0, 0, 1));
    assert_true(dropout_key(0, 0, 0) != dropout_key(0, 0, 1));
    free(x);
    free(y);
    free(y2);
    free(g);
    free(dx);
}

/* ---- erf and GELU (scalar_fn.h's vectorised ufn_erf) ---------------------------- */

/* erf in float ulps of the double value (a result of 0 or a subnormal: ulps of the
 * smallest subnormal) */
static double ulps_from(float got, double want)
{
    const float w = (float)want;
    if (got == w) return 0.0;
    const double u = (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
    return isnan(got) ? INFINITY : fabs((double)got - want) / u;
}

static void test_erf_gelu(void **state)
{
    (void)state;
    /* erf on every ERF_STRIDE-th non-negative float bit pattern (0 to inf), and the same
     * values negated: odd bit for bit */
    enum { CHUNK = 4096 };
    float *x = falloc(CHUNK), *y = falloc(CHUNK), *yn = falloc(CHUNK);
    double worst = 0.0;
    float wx = 0.0f;
    uint32_t bits = 0;
    while (bits < 0x7f800000u) {
        int n = 0;
        for (; n < CHUNK && bits < 0x7f800000u; n++, bits += ERF_STRIDE) memcpy(&x[n], &bits, sizeof bits);
        unary_forward(UNARY_ERF, 0.0f, (size_t)n, x, y);
        for (int i = 0; i < n; i++) x[i] = -x[i];
        unary_forward(UNARY_ERF, 0.0f, (size_t)n, x, yn);
        for (int i = 0; i < n; i++) {
            const double e = ulps_from(y[i], erf(-(double)x[i]));
            if (e > worst) {
                worst = e;
                wx = -x[i];
            }
            if (!(yn[i] == -y[i])) fail_msg("erf(%.9g) = %.9g is not -erf(%.9g) = %.9g", x[i], yn[i], -x[i], -y[i]);
        }
    }
    if (!(worst <= ERF_ULP)) fail_msg("erf: %.2f ulp at %.9g, more than %.1f", worst, wx, ERF_ULP);
    print_message("erf over every %dth float: max %.2f ulp (tol %.1f) at %.9g\n", ERF_STRIDE, worst, ERF_ULP, wx);
    const float sp[4] = {NAN, INFINITY, -INFINITY, -0.0f};
    unary_forward(UNARY_ERF, 0.0f, 4, sp, y);
    assert_true(isnan(y[0]) && y[1] == 1.0f && y[2] == -1.0f && y[3] == 0.0f && signbit(y[3]));
    free(x);
    free(y);
    free(yn);

    /* GELU forward in ulps over [-5.5, 10): 1 + erf is erfc itself on the negative side,
     * whose tail the old 1 + erff(x) lost entirely; the derivatives of erf and GELU
     * against their closed forms in double, added (+=) onto PREFILL */
    const size_t n = 1 << 16;
    float *gx = falloc(n), *gy = falloc(n), *gg = falloc(n), *gd = falloc(n), *ed = falloc(n);
    double *dref = dalloc(n), *eref = dalloc(n), *gref = dalloc(n);
    lcg_t r = {2400};
    rand_fill(&r, gg, NULL, n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) gx[i] = -5.5f + 15.5f * (float)i / (float)n;
    unary_forward(UNARY_GELU, 0.0f, n, gx, gy);
    ffill(gd, n, 0.0f);
    ffill(ed, n, 0.0f);
    unary_backward(UNARY_GELU, 0.0f, n, gx, gy, gg, gd); /* Phi read back from the output */
    unary_backward(UNARY_ERF, 0.0f, n, gx, NULL, gg, ed);
    worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double v = gx[i], cdf = 0.5 * erfc(-v / sqrt(2.0)), e = ulps_from(gy[i], v * cdf);
        if (e > worst) {
            worst = e;
            wx = gx[i];
        }
        dref[i] = gg[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI));
        eref[i] = gg[i] * 2.0 / sqrt(M_PI) * exp(-v * v);
        gref[i] = v * cdf;
    }
    if (!(worst <= GELU_ULP)) fail_msg("gelu: %.2f ulp at %.9g, more than %.1f", worst, wx, GELU_ULP);
    print_message("gelu on [-5.5, 10): max %.2f ulp (tol %.1f) at %.9g\n", worst, GELU_ULP, wx);
    check_close("gelu forward", gy, gref, n, FWD_TOL, &g_max_fwd);
    check_close("gelu backward", gd, dref, n, FWD_TOL, &g_max_fwd);
    check_close("erf backward", ed, eref, n, FWD_TOL, &g_max_fwd);
    float *acc = falloc(n);
    ffill(acc, n, PREFILL);
    unary_backward(UNARY_GELU, 0.0f, n, gx, gy, gg, acc);
    check_acc("gelu dinp", acc, gd, PREFILL, n);
    /* the set variant (a GELU that sets its input's gradient): the bits of += into zeros,
     * whatever the buffer held, erf's too; so against the closed forms as above */
    ffill(acc, n, NAN);
    unary_backward_set(UNARY_GELU, 0.0f, n, gx, gy, gg, acc);
    assert_memory_equal(acc, gd, n * sizeof *acc);
    ffill(acc, n, NAN);
    unary_backward_set(UNARY_ERF, 0.0f, n, gx, NULL, gg, acc);
    assert_memory_equal(acc, ed, n * sizeof *acc);
    free(acc);
    /* the backward's Phi read back from the output (y / x) where that is delicate: 0 and
     * either side of the 2^-20 switch to 1/2 + x / sqrt(2 pi), subnormal x, the far tail
     * where the forward's 1 + erf is 0 (there Phi(x) + x phi(x) < 1e-6), against the closed
     * form (g 1); +-inf and NaN give NaN, as the closed form in float did */
    const float sx[] = {0.0f,   -0.0f,   0x1p-21f, -0x1p-21f, 0x1p-19f, -0x1p-19f,
                        1e-40f, -1e-40f, 1e-30f,   -6.0f,     -20.0f,   12.0f};
    enum { NS = sizeof sx / sizeof sx[0] };
    float sy[NS], sg[NS], sd[NS];
    double sref[NS];
    ffill(sg, NS, 1.0f);
    ffill(sd, NS, 0.0f);
    unary_forward(UNARY_GELU, 0.0f, NS, sx, sy);
    unary_backward(UNARY_GELU, 0.0f, NS, sx, sy, sg, sd);
    for (int i = 0; i < NS; i++) {
        const double v = sx[i];
        sref[i] = 0.5 * erfc(-v / sqrt(2.0)) + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI);
    }
    check_close("gelu backward (special values)", sd, sref, NS, FWD_TOL, &g_max_fwd);
    const float inf[] = {INFINITY, -INFINITY, NAN};
    float iy[3], ig[3] = {1.0f, 1.0f, 1.0f}, id[3] = {0.0f, 0.0f, 0.0f};
    unary_forward(UNARY_GELU, 0.0f, 3, inf, iy);
    unary_backward(UNARY_GELU, 0.0f, 3, inf, iy, ig, id);
    assert_true(isnan(id[0]) && isnan(id[1]) && isnan(id[2]));
    free(gx);
    free(gy);
    free(gg);
    free(gd);
    free(ed);
    free(dref);
    free(eref);
    free(gref);
}

/* Erf's and GELU's forward take the small branch for every argument and the full function
 * for the large ones of a block, listed, or for a whole block of many large ones
 * (elementwise.c's erf_gelu_forward): the result is the scalar function's bit for bit, for
 * blocks all small, blocks with one large argument, a NaN or an inf among small ones,
 * blocks of mostly large ones (the full function whole) and of a few (listed, across the
 * chunks of 256), and a length that is no multiple of the block */
static void test_erf_gelu_blocks(void **state)
{
    (void)state;
    enum { N = 1021 };
    float *x = falloc(N), *y = falloc(N);
    lcg_t r = {4402};
    rand_fill(&r, x, NULL, N, -1.2f, 1.2f); /* GELU's argument x / sqrt(2) below the split */
    x[100] = 3.0f;
    x[300] = -1.5f;
    x[500] = NAN;
    x[700] = -INFINITY;
    x[N - 1] = 2.0f;                               /* in the remainder */
    rand_fill(&r, x + 384, NULL, 64, -8.0f, 8.0f); /* two blocks of mostly large arguments */
    for (int i = 600; i < 1000; i += 7) x[i] = i % 2 ? 1.6f + i / 1000.0f : -1.4f - i / 1000.0f; /* a few a block */
    const unary_op_t ops[2] = {UNARY_ERF, UNARY_GELU};
    /* GELU takes gelu_simd.c on a CPU with AVX2 and FMA (test_gelu_simd holds it): the
     * blocks are then Erf's alone, the same code with op a constant */
    for (int k = 0; k < (gelu_avx2_ok() ? 1 : 2); k++) {
        unary_forward(ops[k], 0.0f, N, x, y);
        for (int i = 0; i < N; i++) {
            const float want = unary_fn(ops[k], x[i], 0.0f, 0.0f);
            if (memcmp(&y[i], &want, sizeof want) && !(isnan(y[i]) && isnan(want)))
                fail_msg("%s(%.9g) = %.9g, the scalar function gives %.9g", k ? "gelu" : "erf", x[i], y[i], want);
        }
    }
    free(x);
    free(y);
}

/* gelu_simd.c's GELU (FMA: not the portable loops' bits) against the closed forms in double,
 * under the tolerances the portable loops meet (GELU_ULP, FWD_TOL; gelu_simd.c argues why
 * the FMA evaluation of the same approximations stays within them): every length 1 to 40
 * (the masked tail), vectors all below the erf split, mixed and all above it, the far
 * negative tail, the switch to 1/2 + x pdf, signed zeros, subnormals, +-inf and NaN; the
 * set variant is the bits of += into zeros, and unary_forward/unary_backward give these
 * bits (the dispatch takes it). The sixteen lanes of AVX-512, where the CPU has them, give
 * the eight lanes' bits, forward, backward and set (gelu_lanes.h: the same operations in
 * every lane). Skipped on a CPU without AVX2 and FMA. */
static void gelu_simd_check(const float *x, size_t n, lcg_t *r)
{
    float *y = falloc(n), *g = falloc(n), *d = falloc(n), *ds = falloc(n), *u = falloc(n);
    double *yref = dalloc(n), *dref = dalloc(n);
    rand_fill(r, g, NULL, n, -1.0f, 1.0f);
    gelu_forward_avx2(n, x, y);
    ffill(d, n, 0.0f);
    gelu_backward_avx2(n, x, y, g, d, 0);
    for (size_t i = 0; i < n; i++) {
        const double v = x[i], cdf = 0.5 * erfc(-v / sqrt(2.0));
        yref[i] = v * cdf;
        dref[i] = g[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI));
        /* GELU_ULP's range: below -5.5 erf(x / sqrt(2)) is -1 past float (erfc < 5e-8,
         * 1 + erf is taken as 0 from -5.543), which FWD_TOL's absolute bound checks */
        if (v >= -5.5 && !(ulps_from(y[i], yref[i]) <= GELU_ULP) && !(isnan(y[i]) && isnan(yref[i])))
            fail_msg("gelu_avx2(%.9g) = %.9g, %.2f ulp from %.9g", x[i], y[i], ulps_from(y[i], yref[i]), yref[i]);
    }
    check_close("gelu_avx2 forward", y, yref, n, FWD_TOL, &g_max_fwd);
    check_close("gelu_avx2 backward", d, dref, n, FWD_TOL, &g_max_fwd);
    ffill(ds, n, NAN);
    gelu_backward_avx2(n, x, y, g, ds, 1);
    assert_memory_equal(ds, d, n * sizeof *d);
    if (gelu_avx512_ok()) {
        gelu_forward_avx512(n, x, u);
        assert_memory_equal(u, y, n * sizeof *y);
        ffill(u, n, 0.0f);
        gelu_backward_avx512(n, x, y, g, u, 0);
        assert_memory_equal(u, d, n * sizeof *d);
        ffill(u, n, NAN);
        gelu_backward_avx512(n, x, y, g, u, 1);
        assert_memory_equal(u, d, n * sizeof *d);
    }
    unary_forward(UNARY_GELU, 0.0f, n, x, u);
    assert_memory_equal(u, y, n * sizeof *y);
    ffill(u, n, 0.0f);
    unary_backward(UNARY_GELU, 0.0f, n, x, y, g, u);
    assert_memory_equal(u, d, n * sizeof *d);
    free(y), free(g), free(d), free(ds), free(u), free(yref), free(dref);
}

/* gelu_simd.h's _h functions on bf16 x (x's values rounded) and y (the output rounded): the
 * bits of the float32 functions on the widened arrays, at each width the CPU has, forward,
 * backward and set. */
static void gelu_simd_h_check(const float *x, size_t n, lcg_t *r)
{
    uint16_t *x16 = malloc(n * sizeof *x16), *y16 = malloc(n * sizeof *y16);
    float *xw = falloc(n), *yw = falloc(n), *g = falloc(n), *want = falloc(n), *got = falloc(n);
    assert_true(x16 && y16);
    rand_fill(r, g, NULL, n, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) x16[i] = bf16_from_float(x[i]), xw[i] = bf16_to_float(x16[i]);
    for (int w = 8; w <= 16; w += 8) {
        if (w == 16 && !gelu_avx512_ok()) break;
        void (*fwd)(size_t, const float *, float *) = w == 8 ? gelu_forward_avx2 : gelu_forward_avx512;
        void (*fwd_h)(size_t, const uint16_t *, float *) = w == 8 ? gelu_forward_h_avx2 : gelu_forward_h_avx512;
        void (*bwd)(size_t, const float *, const float *, const float *, float *, int) = w == 8 ? gelu_backward_avx2
                                                                                                : gelu_backward_avx512;
        void (*bwd_h)(size_t, const uint16_t *, const uint16_t *, const float *, float *,
                      int) = w == 8 ? gelu_backward_h_avx2 : gelu_backward_h_avx512;
        fwd(n, xw, want);
        fwd_h(n, x16, got);
        if (memcmp(want, got, n * sizeof *got) != 0) fail_msg("gelu_forward_h, %d lanes, n %zu: not the bits", w, n);
        for (size_t i = 0; i < n; i++) y16[i] = bf16_from_float(want[i]), yw[i] = bf16_to_float(y16[i]);
        for (int set = 0; set < 2; set++) {
            ffill(want, n, set ? NAN : 0.5f);
            ffill(got, n, set ? NAN : 0.5f);
            bwd(n, xw, yw, g, want, set);
            bwd_h(n, x16, y16, g, got, set);
            if (memcmp(want, got, n * sizeof *got) != 0)
                fail_msg("gelu_backward_h, %d lanes, n %zu, set %d: not the bits", w, n, set);
        }
    }
    free(x16), free(y16), free(xw), free(yw), free(g), free(want), free(got);
}

static void test_gelu_simd(void **state)
{
    (void)state;
    if (!gelu_avx2_ok()) {
        print_message("gelu_simd: no AVX2 and FMA here, skipped\n");
        return;
    }
    if (!gelu_avx512_ok()) print_message("gelu_simd: no AVX-512 here, its sixteen lanes not compared\n");
    lcg_t r = {6060};
    enum { N = 4096 };
    float *x = falloc(N);
    for (size_t n = 1; n <= 40; n++) {
        rand_fill(&r, x, NULL, n, -6.0f, 6.0f);
        gelu_simd_check(x, n, &r);
        gelu_simd_h_check(x, n, &r);
    }
    const float spread[3][2] = {{-1.2f, 1.2f}, {-3.0f, 3.0f}, {-12.0f, -1.31f}}; /* small, mixed, tail */
    for (int k = 0; k < 3; k++) {
        rand_fill(&r, x, NULL, N, spread[k][0], spread[k][1]);
        gelu_simd_check(x, N, &r);
        gelu_simd_h_check(x, N, &r);
    }
    const float sp[] = {0.0f,   -0.0f,  0x1p-21f, -0x1p-21f, 0x1p-19f, -0x1p-19f, 1e-40f, -1e-40f,
                        1e-30f, -5.54f, -5.6f,    -6.0f,     -20.0f,   12.0f,     1.3f,   -1.3f,
                        1.31f,  -1.31f, 5.54f,    5.6f,      -8.0f,    30.0f,     -0.5f,  0.7f};
    enum { NS = sizeof sp / sizeof sp[0] };
    gelu_simd_check(sp, NS, &r);
    gelu_simd_h_check(sp, NS, &r);
    const float bad[8] = {INFINITY, -INFINITY, NAN, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    float by[8], bg[8] = {1, 1, 1, 1, 1, 1, 1, 1}, bd[8] = {0};
    gelu_forward_avx2(8, bad, by);
    gelu_backward_avx2(8, bad, by, bg, bd, 0);
    assert_true(by[0] == INFINITY && isnan(by[1]) && isnan(by[2]));
    assert_true(isnan(bd[0]) && isnan(bd[1]) && isnan(bd[2]));
    if (gelu_avx512_ok()) {
        float by5[8], bd5[8] = {0};
        gelu_forward_avx512(8, bad, by5);
        gelu_backward_avx512(8, bad, by5, bg, bd5, 0);
        assert_true(by5[0] == INFINITY && isnan(by5[1]) && isnan(by5[2]));
        assert_true(isnan(bd5[0]) && isnan(bd5[1]) && isnan(bd5[2]));
    }
    free(x);
}

/* ---- Softmax and LogSoftmax along an axis ----------------------------------------- */

typedef struct {
    int take_log, rows, n, inner;
    double *x, *y;
    const double *R;
} sm_ctx_t;

static double sm_loss(void *p)
{
    sm_ctx_t *c = p;
    ref_softmax_axis(c->take_log, c->rows, c->n, c->inner, c->x, c->y);
    return dot(c->y, c->R, (size_t)c->rows * c->n * c->inner);
}

/* rows, n, inner: attention's rows (65: eight lanes and a tail of 1), a line shorter than
 * the lanes, one element, lines across the inner axis in a block of 64 and a partial one;
 * the last case with logits 160 apart (the shift by the maximum). The backward's _set
 * variant bit for bit the adding one's into zeros. */
static void test_softmax_axis(void **state)
{
    (void)state;
    static const int cases[][4] = {{6, 65, 1, 0}, {5, 7, 1, 0}, {4, 1, 3, 0}, {2, 9, 70, 0}, {3, 16, 5, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int tl = 0; tl < 2; tl++) {
            const int rows = cases[ci][0], n = cases[ci][1], inner = cases[ci][2];
            const float span = cases[ci][3] ? 80.0f : 4.0f;
            const size_t N = (size_t)rows * n * inner;
            lcg_t r = {2500 + ci};
            float *x = falloc(N), *y = falloc(N), *g = falloc(N), *dx = falloc(N), *dx2 = falloc(N);
            double *xd = dalloc(N), *yd = dalloc(N), *Rd = dalloc(N);
            rand_fill(&r, x, xd, N, -span, span);
            rand_fill(&r, g, Rd, N, -1.0f, 1.0f);
            sm_ctx_t ctx = {tl, rows, n, inner, xd, yd, Rd};
            char what[64];
            snprintf(what, sizeof what, "%s (%dx%dx%d)", tl ? "log_softmax" : "softmax", rows, n, inner);
            ffill(y, N, NAN);
            softmax_axis_forward(tl, rows, n, inner, x, y);
            sm_loss(&ctx);
            check_close(what, y, yd, N, FWD_TOL, &g_max_fwd);
            ffill(dx, N, 0.0f);
            softmax_axis_backward(tl, rows, n, inner, y, g, dx);
            /* n = 1: the output is constant (1, or 0 for log), its gradient 0: nothing to
             * difference */
            if (n > 1) check_fd(what, sm_loss, &ctx, xd, N, dx, 2000);
            ffill(dx2, N, PREFILL);
            softmax_axis_backward(tl, rows, n, inner, y, g, dx2);
            check_acc(what, dx2, dx, PREFILL, N);
            /* the _set variant over NaN: the bits of adding into zeros */
            ffill(dx2, N, NAN);
            softmax_axis_backward_set(tl, rows, n, inner, y, g, dx2);
            assert_memory_equal(dx, dx2, N * sizeof(float));
            free(x);
            free(y);
            free(g);
            free(dx);
            free(dx2);
            free(xd);
            free(yd);
            free(Rd);
        }
}

/* ---- layer norm ------------------------------------------------------------------- */

typedef struct {
    int rows, D;
    double eps;
    double *x, *w, *b, *y;
    const double *R;
} ln_ctx_t;

static double ln_loss(void *p)
{
    ln_ctx_t *c = p;
    ref_layernorm_forward(c->rows, c->D, c->eps, c->x, c->w, c->b, c->y);
    return dot(c->y, c->R, (size_t)c->rows * c->D);
}

/* rows, D, offset: the ViT's width (48), a row shorter than the lanes with a tail, a
 * ViT-B row (768), and rows offset by 1000 from 0 (a mean rounded to float would be off by
 * up to 3e-5 there, which every output would carry); the backward's _set variant bit for
 * bit the adding one's into zeros */
static void test_layernorm(void **state)
{
    (void)state;
    static const int cases[][3] = {{7, 48, 0}, {5, 13, 0}, {3, 768, 0}, {4, 40, 1000}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int rows = cases[ci][0], D = cases[ci][1];
        const float off = (float)cases[ci][2];
        const size_t N = (size_t)rows * D;
        lcg_t r = {2600 + ci};
        float *x = falloc(N), *y = falloc(N), *g = falloc(N), *w = falloc(D), *b = falloc(D);
        float *dx = falloc(N), *dx2 = falloc(N), *dw = falloc(D), *db = falloc(D);
        double *xd = dalloc(N), *yd = dalloc(N), *Rd = dalloc(N), *wd = dalloc(D), *bd = dalloc(D);
        rand_fill(&r, x, xd, N, off - 2.0f, off + 3.0f);
        rand_fill(&r, g, Rd, N, -1.0f, 1.0f);
        rand_fill(&r, w, wd, D, 0.5f, 1.5f);
        rand_fill(&r, b, bd, D, -0.5f, 0.5f);
        ln_ctx_t ctx = {rows, D, 1e-5, xd, wd, bd, yd, Rd};
        char what[64];
        snprintf(what, sizeof what, "layernorm (%dx%d, offset %g)", rows, D, off);
        ffill(y, N, NAN);
        layernorm_forward(rows, D, 1e-5f, x, w, b, y);
        ln_loss(&ctx);
        check_close(what, y, yd, N, FWD_TOL, &g_max_fwd);
        ffill(dx, N, 0.0f);
        ffill(dw, D, NAN);
        ffill(db, D, NAN);
        layernorm_backward(rows, D, 1e-5f, x, w, g, dx, dw, db);
        /* the offset rows: a step of FD_H * 1000 in x is too coarse for the double
         * differences of a normalised row; their forward is the point of the case */
        if (off == 0.0f) check_fd(what, ln_loss, &ctx, xd, N, dx, 2000);
        check_fd(what, ln_loss, &ctx, wd, D, dw, 2000);
        check_fd(what, ln_loss, &ctx, bd, D, db, 2000);
        ffill(dx2, N, PREFILL);
        layernorm_backward(rows, D, 1e-5f, x, w, g, dx2, dw, db);
        check_acc(what, dx2, dx, PREFILL, N);
        /* the _set variant over NaN: the bits of adding into zeros, dw and db the same */
        float *dw2 = falloc(D), *db2 = falloc(D);
        ffill(dx2, N, NAN);
        layernorm_backward_set(rows, D, 1e-5f, x, w, g, dx2, dw2, db2);
        assert_memory_equal(dx, dx2, N * sizeof(float));
        assert_memory_equal(dw, dw2, (size_t)D * sizeof(float));
        assert_memory_equal(db, db2, (size_t)D * sizeof(float));
        free(dw2);
        free(db2);
        free(x);
        free(y);
        free(g);
        free(w);
        free(b);
        free(dx);
        free(dx2);
        free(dw);
        free(db);
        free(xd);
        free(yd);
        free(Rd);
        free(wd);
        free(bd);
    }
}

/* ---- optimizer ------------------------------------------------------------------ */

static void check_all(const char *what, const float *v, size_t n, double want)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(v[i] - want) <= 1e-6 * fmax(1.0, fabs(want))))
            fail_msg("%s[%zu] = %.9g, want %.9g (relative tolerance 1e-6)", what, i, v[i], want);
}

static void test_sgd(void **state)
{
    enum { n = 37 };
    float w[n], g[n], u[n];
    /* plain: w = 1 - 0.1 * 0.5 */
    ffill(w, n, 1.0f);
    ffill(g, n, 0.5f);
    ffill(u, n, 7.0f);
    sgd_update(n, w, g, u, 0.1f, 0.0f, 0, 0.0f, 1.0f);
    check_all("sgd plain w", w, n, 0.95);
    check_all("sgd plain leaves u alone", u, n, 7.0);
    sgd_update(n, w, g, NULL, 0.1f, 0.0f, 0, 0.0f, 1.0f); /* u may be NULL without momentum */
    check_all("sgd plain w (u NULL)", w, n, 0.90);

    /* weight decay: d = 0.5 + 0.1 * 1 = 0.6, w = 1 - 0.06 */
    ffill(w, n, 1.0f);
    sgd_update(n, w, g, NULL, 0.1f, 0.0f, 0, 0.1f, 1.0f);
    check_all("sgd weight decay w", w, n, 0.94);

    /* momentum 0.9 from u = 0: u = 0.5, w = 0.95; then u = 0.45 + 0.5 = 0.95, w = 0.855 */
    ffill(w, n, 1.0f);
    ffill(u, n, 0.0f);
    sgd_update(n, w, g, u, 0.1f, 0.9f, 0, 0.0f, 1.0f);
    check_all("sgd momentum u step 1", u, n, 0.5);
    check_all("sgd momentum w step 1", w, n, 0.95);
    sgd_update(n, w, g, u, 0.1f, 0.9f, 0, 0.0f, 1.0f);
    check_all("sgd momentum u step 2", u, n, 0.95);
    check_all("sgd momentum w step 2", w, n, 0.855);

    /* nesterov: u = 0.5, step = 0.5 + 0.45 = 0.95, w = 0.905;
     *           u = 0.95, step = 0.5 + 0.855 = 1.355, w = 0.7695 */
    ffill(w, n, 1.0f);
    ffill(u, n, 0.0f);
    sgd_update(n, w, g, u, 0.1f, 0.9f, 1, 0.0f, 1.0f);
    check_all("sgd nesterov u step 1", u, n, 0.5);
    check_all("sgd nesterov w step 1", w, n, 0.905);
    sgd_update(n, w, g, u, 0.1f, 0.9f, 1, 0.0f, 1.0f);
    check_all("sgd nesterov u step 2", u, n, 0.95);
    check_all("sgd nesterov w step 2", w, n, 0.7695);

    /* momentum + nesterov + weight decay: w = 2, g = 0.5, wd = 0.01, mu = 0.9, lr = 0.1:
     *   d = 0.52, u = 0.52, step = 0.52 + 0.468 = 0.988, w = 1.9012 */
    ffill(w, n, 2.0f);
    ffill(u, n, 0.0f);
    sgd_update(n, w, g, u, 0.1f, 0.9f, 1, 0.01f, 1.0f);
    check_all("sgd nesterov+wd u", u, n, 0.52);
    check_all("sgd nesterov+wd w", w, n, 1.9012);
    /* second step: d = 0.5 + 0.019012 = 0.519012, u = 0.468 + 0.519012 = 0.987012,
     *   step = 0.519012 + 0.8883108 = 1.4073228, w = 1.9012 - 0.14073228 = 1.76046772 */
    sgd_update(n, w, g, u, 0.1f, 0.9f, 1, 0.01f, 1.0f);
    check_all("sgd nesterov+wd u step 2", u, n, 0.987012);
    check_all("sgd nesterov+wd w step 2", w, n, 1.76046772);
}

/* adamw_update against torch.optim.AdamW's rule in double (ref_adamw_step) over 6 steps
 * from zero moments (bias correction from step 1), with and without weight decay, a
 * gradient scale, a large and a small rate; then the same result on 1 and 3 threads. */
static void test_adamw(void **state)
{
    enum { n = 1003, STEPS = 6 };
    static const struct {
        double lr, wd, gs;
    } cases[] = {{1e-3, 0.0, 1.0}, {1e-3, 0.05, 0.5}, {0.1, 0.01, 1.0}};
    float *w = malloc(n * sizeof *w), *m = malloc(n * sizeof *m), *v = malloc(n * sizeof *v), *g = malloc(n * sizeof *g);
    double *wd_ = malloc(n * sizeof *wd_), *md = malloc(n * sizeof *md), *vd = malloc(n * sizeof *vd),
           *gd = malloc(n * sizeof *gd);
    assert_true(w && m && v && g && wd_ && md && vd && gd);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lcg_t r = {4400 + c};
        rand_fill(&r, w, wd_, n, -2.0f, 2.0f);
        ffill(m, n, 0.0f), ffill(v, n, 0.0f);
        for (size_t i = 0; i < n; i++) md[i] = vd[i] = 0.0;
        const adamw_hparams_t h = {
            .lr = cases[c].lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = cases[c].wd};
        for (long t = 1; t <= STEPS; t++) {
            rand_fill(&r, g, NULL, n, -1.0f, 1.0f);
            g[t] = 0.0f; /* a zero gradient: the step divides by eps alone at first */
            for (size_t i = 0; i < n; i++) gd[i] = cases[c].gs * (double)g[i];
            adamw_update(n, w, g, m, v, &h, t, (float)cases[c].gs);
            ref_adamw_step(n, wd_, gd, md, vd, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, t);
        }
        char what[64];
        snprintf(what, sizeof what, "adamw w (case %zu)", c);
        check_close(what, w, wd_, n, ADAMW_TOL, &g_max_fwd);
        snprintf(what, sizeof what, "adamw m (case %zu)", c);
        check_close(what, m, md, n, ADAMW_TOL, &g_max_fwd);
        for (size_t i = 0; i < n; i++)
            if (!(fabs(v[i] - vd[i]) <= ADAMW_TOL * vd[i] + 1e-30))
                fail_msg("adamw v[%zu] (case %zu) = %.9g, want %.9g (relative %.0e)", i, c, v[i], vd[i], ADAMW_TOL);
    }
    /* the threads split elements, never a computation: the same bits on 1 and 3 (where
     * elements 328..333 go through the scalar tail on 3 threads and the eight-lane loop on 1) */
    float *w3 = malloc(n * sizeof *w3), *m3 = malloc(n * sizeof *m3), *v3 = malloc(n * sizeof *v3);
    assert_true(w3 && m3 && v3);
    lcg_t r = {4499};
    rand_fill(&r, w, NULL, n, -2.0f, 2.0f);
    rand_fill(&r, g, NULL, n, -1.0f, 1.0f);
    memcpy(w3, w, n * sizeof *w);
    ffill(m, n, 0.1f), ffill(v, n, 0.01f), ffill(m3, n, 0.1f), ffill(v3, n, 0.01f);
    const adamw_hparams_t h = {.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1};
    adamw_update(n, w, g, m, v, &h, 3, 0.25f);
    assert_int_equal(par_set_threads(3), 0);
    adamw_update(n, w3, g, m3, v3, &h, 3, 0.25f);
    assert_int_equal(par_set_threads(1), 0);
    assert_memory_equal(w, w3, n * sizeof *w);
    assert_memory_equal(m, m3, n * sizeof *m);
    assert_memory_equal(v, v3, n * sizeof *v);
    free(w), free(m), free(v), free(g), free(wd_), free(md), free(vd), free(gd), free(w3), free(m3), free(v3);
}

static void test_grad_norm(void **state)
{
    float g[2] = {3.0f, 4.0f};
    assert_float_equal(clip_grad_norm(2, g, 10.0f), 5.0f, 1e-6f); /* under the limit */
    assert_true(g[0] == 3.0f && g[1] == 4.0f);
    assert_float_equal(clip_grad_norm(2, g, 0.0f), 5.0f, 1e-6f); /* disabled */
    assert_true(g[0] == 3.0f && g[1] == 4.0f);
    assert_float_equal(clip_grad_norm(2, g, 1.0f), 5.0f, 1e-6f); /* clipped to norm 1 */
    assert_float_equal(g[0], 0.6f, 1e-6f);
    assert_float_equal(g[1], 0.8f, 1e-6f);

    /* sum_squares accumulates in double: a long vector matches a double reference */
    enum { n = 100003 };
    float *v = falloc(n);
    lcg_t r = {1100};
    double want = 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = lcg_unif(&r, -1.0f, 1.0f);
        want += (double)v[i] * v[i];
    }
    double got = sum_squares(n, v);
    assert_true(fabs(got - want) <= 1e-10 * want);
    float norm = clip_grad_norm(n, v, 1.0f);
    assert_float_equal(norm, (float)sqrt(want), 1e-3f);
    assert_true(fabs(sqrt(sum_squares(n, v)) - 1.0) < 1e-5);
    free(v);
}

static void test_lr_schedules(void **state)
{
    lr_schedule_t s = {LR_CONSTANT, 5, 0, 0.0f, 0.0f};
    /* linear warm-up: lr*(step+1)/warmup */
    assert_float_equal(lr_at(&s, 0.1f, 0, 100), 0.02f, 1e-7f);
    assert_float_equal(lr_at(&s, 0.1f, 2, 100), 0.06f, 1e-7f);
    assert_float_equal(lr_at(&s, 0.1f, 4, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&s, 0.1f, 5, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&s, 0.1f, 1000, 100), 0.1f, 1e-7f);

    lr_schedule_t st = {LR_STEP, 0, 10, 0.1f, 0.0f};
    assert_float_equal(lr_at(&st, 0.1f, 0, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&st, 0.1f, 9, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&st, 0.1f, 10, 100), 0.01f, 1e-8f);
    assert_float_equal(lr_at(&st, 0.1f, 25, 100), 0.001f, 1e-9f);
    st.warmup_steps = 5; /* the step count restarts after warm-up */
    assert_float_equal(lr_at(&st, 0.1f, 4, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&st, 0.1f, 14, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&st, 0.1f, 15, 100), 0.01f, 1e-8f);

    lr_schedule_t cs = {LR_COSINE, 0, 0, 0.0f, 0.0f};
    assert_float_equal(lr_at(&cs, 0.1f, 0, 100), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 50, 100), 0.05f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 25, 100), (float)(0.05 * (1.0 + cos(M_PI / 4))), 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 100, 100), 0.0f, 1e-9f);
    assert_float_equal(lr_at(&cs, 0.1f, 150, 100), 0.0f, 1e-9f); /* clamped at the end */
    cs.warmup_steps = 10;
    cs.min_lr = 0.01f;
    assert_float_equal(lr_at(&cs, 0.1f, 9, 110), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 10, 110), 0.1f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 60, 110), 0.055f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 110, 110), 0.01f, 1e-7f);
    assert_float_equal(lr_at(&cs, 0.1f, 500, 110), 0.01f, 1e-7f);
}

/* The finite-difference criterion itself: every op's gradient checks run again with the
 * analytic gradient replaced by zero, then by its negation, and every single check must
 * reject it. */
static void test_fd_criterion(void **state)
{
    static const struct {
        const char *name;
        void (*run)(void **);
    } ops[] = {
        {"conv", test_conv_geometries},
        {"maxpool", test_maxpool},
        {"avgpool", test_avgpool},
        {"relu", test_relu},
        {"residual", test_residual_add},
        {"gap", test_gap},
        {"fc", test_fc},
        {"softmax-xent", test_softmax_xent},
        {"batchnorm", test_batchnorm},
        {"conv general", test_conv_general},
        {"pool general", test_pool_general},
        {"activations", test_activations},
        {"concat", test_concat},
        {"gemm", test_gemm},
        {"softmax axis", test_softmax_axis},
        {"layernorm", test_layernorm},
    };
    for (fd_mode_t mode = FD_ZERO; mode <= FD_NEGATED; mode++) {
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
            g_fd_mode = mode;
            g_fd_checks = g_fd_rejected = 0;
            ops[i].run(state);
            g_fd_mode = FD_REAL;
            if (g_fd_checks == 0) fail_msg("%s: no finite-difference check ran", ops[i].name);
            if (g_fd_rejected != g_fd_checks)
                fail_msg("%s: a %s gradient passed %d of %d finite-difference checks", ops[i].name,
                         mode == FD_ZERO ? "zero" : "negated", g_fd_checks - g_fd_rejected, g_fd_checks);
        }
    }
    print_message("zero and negated gradients are rejected by every finite-difference check\n");
}

static int print_summary(void **state)
{
    print_message(
        "max errors (|a-n|/max(1,|a|,|n|)): forward %.2e (tol %.0e, Winograd's %.0e), conv backward vs "
        "naive %.2e (tol %.0e, Winograd's %.0e), += %.2e (tol %.0e); finite differences at %.2f of their bound\n",
        g_max_fwd, FWD_TOL, WINO_TOL, g_max_bwd, BWD_TOL, WINO_GRAD_TOL, g_max_acc, ACC_TOL, g_max_fd);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_init),
        cmocka_unit_test(test_conv_cropped),
        cmocka_unit_test(test_conv_geometries),
        cmocka_unit_test(test_conv_chunked),
        cmocka_unit_test(test_pool_sizes),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_maxpool_2x2_fast_path),
        cmocka_unit_test(test_avgpool),
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_residual_add),
        cmocka_unit_test(test_conv_backward_set),
        cmocka_unit_test(test_view_rows),
        cmocka_unit_test(test_binary_rows),
        cmocka_unit_test(test_backward_set_gemm),
        cmocka_unit_test(test_bmm_small),
        cmocka_unit_test(test_threads_small_planes),
        cmocka_unit_test(test_gap),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_gemv),
        cmocka_unit_test(test_softmax_xent),
        cmocka_unit_test(test_count_correct),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_batchnorm_relu_fused),
        cmocka_unit_test(test_conv_general),
        cmocka_unit_test(test_threads_reference),
        cmocka_unit_test(test_conv_direct_isas),
        cmocka_unit_test(test_threads_same_results),
        cmocka_unit_test(test_threads_batchnorm_runs),
        cmocka_unit_test(test_threads_gemm),
        cmocka_unit_test(test_pool_general),
        cmocka_unit_test(test_pool_pytorch),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_grad_norm),
        cmocka_unit_test(test_lr_schedules),
        cmocka_unit_test(test_erf_gelu),
        cmocka_unit_test(test_erf_gelu_blocks),
        cmocka_unit_test(test_gelu_simd),
        cmocka_unit_test(test_softmax_axis),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_fd_criterion),
    };
    return cmocka_run_group_tests(tests, NULL, print_summary);
}
