/* kernels/cpu/batchnorm.c - batch normalisation over (B, HW) per channel.
 *
 * Statistics are accumulated in double, one pass over the data, on values shifted by
 * the channel's first element: var = (S2 - S1^2/M)/M then only cancels as much as the
 * spread around that sample, not around zero, so a channel with a large mean and a
 * small spread keeps its precision.
 *
 * Every per-element loop is an affine map with per-channel coefficients, which
 * vectorises; the AVX2 clones use no FMA, so results do not depend on the machine.
 *
 * The batchnorm_relu_* variants fuse a following ReLU (ops.h): the forward clamps in the
 * affine pass instead of a ReLU pass re-reading the output, the backward masks the ReLU's
 * output gradient as it reads it instead of a relu_backward pass into a zeroed buffer. A
 * masked gradient is (out > 0 ? dout : 0) + 0.0f: exactly what relu_backward accumulates
 * into a zeroed buffer (the + 0.0f turns -0 into +0 as that sum does), so the fused and
 * the unfused pair give the same bits. On ResNet-20 (batch 128, one thread) the pair's
 * passes are memory-bound: see docs/PERFORMANCE.md for what the fusion saves.
 */
#include <math.h>
#include <string.h>

#include "ops.h"
#include "parallel.h"
#include "relu_grad.h"

/* Sums of v and v^2 over v = x - shift, in eight explicit double lanes (vectorised
 * without reassociation, hence bitwise the same on every ISA). */
__attribute__((target_clones("avx2", "default"))) static void shifted_sums(const float *restrict x, size_t n,
                                                                           double shift, double *s1, double *s2)
{
    double a[8] = {0}, q[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            double v = (double)x[i + j] - shift;
            a[j] += v;
            q[j] += v * v;
        }
    double sa = 0.0, sq = 0.0;
    for (; i < n; i++) {
        double v = (double)x[i] - shift;
        sa += v;
        sq += v * v;
    }
    for (int j = 0; j < 8; j++) {
        sa += a[j];
        sq += q[j];
    }
    *s1 += sa;
    *s2 += sq;
}

/* The batch norm's output gradient at i: g itself, or with the fused ReLU's output o,
 * what relu_backward would have accumulated into a zeroed buffer (see the top). */
static inline __attribute__((always_inline)) float masked(const float *restrict g, const float *restrict o, size_t i)
{
    return o ? relu_grad(g[i], o[i]) : g[i];
}

/* m = the masked gradient of n elements (o not NULL), into a buffer in L1 that the two
 * backward passes then read as the plain gradient: masked() inside those passes' loops
 * keeps gcc from vectorising them (the double accumulators), this loop alone it does. */
__attribute__((target_clones("avx2", "default"))) static void mask_grad(size_t n, const float *restrict g,
                                                                        const float *restrict o, float *restrict m)
{
    for (size_t i = 0; i < n; i++) m[i] = masked(g, o, i);
}

/* Planes up to this many floats are masked into a stack buffer (16 KiB; ResNet-20's
 * largest plane is 1024); larger ones take the scalar masked loops. */
#define MASK_PLANE 4096

/* Sums of g and g*(x - mean), as the backward pass needs them; o: NULL, or the fused
 * ReLU's output. */
static inline __attribute__((always_inline)) void grad_sums_body(const float *restrict g, const float *restrict o,
                                                                 const float *restrict x, size_t n, double mean,
                                                                 double *sg, double *sgx)
{
    double a[8] = {0}, q[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            double gv = (double)masked(g, o, i + j);
            a[j] += gv;
            q[j] += gv * ((double)x[i + j] - mean);
        }
    double sa = 0.0, sq = 0.0;
    for (; i < n; i++) {
        double gv = (double)masked(g, o, i);
        sa += gv;
        sq += gv * ((double)x[i] - mean);
    }
    for (int j = 0; j < 8; j++) {
        sa += a[j];
        sq += q[j];
    }
    *sg += sa;
    *sgx += sq;
}

__attribute__((target_clones("avx2", "default"))) static void grad_sums(const float *restrict g, const float *restrict x,
                                                                        size_t n, double mean, double *sg, double *sgx)
{
    grad_sums_body(g, NULL, x, n, mean, sg, sgx);
}

__attribute__((target_clones("avx2", "default"))) static void grad_sums_relu(const float *restrict g,
                                                                             const float *restrict o,
                                                                             const float *restrict x, size_t n,
                                                                             double mean, double *sg, double *sgx)
{
    grad_sums_body(g, o, x, n, mean, sg, sgx);
}

/* y = a*(x - m) + b. Centring first (rather than folding m into b) keeps the result
 * accurate when the mean is large compared with the spread. */
__attribute__((target_clones("avx2", "default"))) static void affine(size_t n, const float *restrict x, float m,
                                                                     float a, float b, float *restrict y)
{
    for (size_t i = 0; i < n; i++) y[i] = a * (x[i] - m) + b;
}

/* y = relu(a*(x - m) + b), relu as relu_forward computes it */
__attribute__((target_clones("avx2", "default"))) static void affine_relu(size_t n, const float *restrict x, float m,
                                                                          float a, float b, float *restrict y)
{
    for (size_t i = 0; i < n; i++) {
        const float v = a * (x[i] - m) + b;
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

/* y = relu(a*(x - m) + b + r): the batch norm, the residual add (add_plane's sum, which is
 * commutative bit for bit) and relu_forward, each rounded as those kernels round */
__attribute__((target_clones("avx2", "default"))) static void
affine_add_relu(size_t n, const float *restrict x, float m, float a, float b, const float *restrict r, float *restrict y)
{
    for (size_t i = 0; i < n; i++) {
        const float v = a * (x[i] - m) + b;
        const float s = v + r[i];
        y[i] = s > 0.0f ? s : 0.0f;
    }
}

/* One plane of the forward's affine pass: y = a*(x - m) + b, then + r (res not NULL), then
 * the ReLU (relu) */
static inline void affine_plane(size_t n, const float *x, float m, float a, float b, const float *res, int relu,
                                float *y)
{
    if (res) affine_add_relu(n, x, m, a, b, res, y);
    else (relu ? affine_relu : affine)(n, x, m, a, b, y);
}

/* d += a*g + b*(x - m) + k, g masked by o when o is not NULL; with set, d = that sum +
 * 0.0f instead: what += gives into a zeroed d, bit for bit (+0 for a -0 sum), without
 * reading d or zeroing it first */
__attribute__((target_clones("avx2", "default"))) static void affine2_acc(size_t n, const float *restrict g,
                                                                          const float *restrict o,
                                                                          const float *restrict x, float m, float a,
                                                                          float b, float k, int set, float *restrict d)
{
    if (set && o)
        for (size_t i = 0; i < n; i++) d[i] = a * masked(g, o, i) + b * (x[i] - m) + k + 0.0f;
    else if (set)
        for (size_t i = 0; i < n; i++) d[i] = a * g[i] + b * (x[i] - m) + k + 0.0f;
    else if (o)
        for (size_t i = 0; i < n; i++) d[i] += a * masked(g, o, i) + b * (x[i] - m) + k;
    else
        for (size_t i = 0; i < n; i++) d[i] += a * g[i] + b * (x[i] - m) + k;
}

void batchnorm_forward_train(int B, int C, int HW, const float *inp, const float *gamma, const float *beta, float *out,
                             float *save_mean, float *save_invstd, float *running_mean, float *running_var,
                             float momentum)
{
    batchnorm_forward_train_eps(B, C, HW, inp, gamma, beta, out, save_mean, save_invstd, running_mean, running_var,
                                momentum, BN_EPS);
}

void batchnorm_forward_eval(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                            const float *running_mean, const float *running_var, float *out)
{
    batchnorm_forward_eval_eps(B, C, HW, inp, gamma, beta, running_mean, running_var, out, BN_EPS);
}

/* One call's arguments, as par_run hands them to each thread. A call goes over its
 * channels BN_BLOCK at a time, in two passes a block (two par_runs):
 *  - the sums (forward train, backward) split the block's channels into contiguous ranges
 *    (parallel.h); a thread takes its channels BN_GROUP at a time and goes image by image
 *    over the group's planes, which lie side by side: a plane at a time per channel
 *    (ResNet-20's are 256 B to 4 KiB, one page at most, C planes apart) left the hardware
 *    prefetchers a page to ramp up on before every jump, and the batch norm passes took
 *    1.2-1.3x as long (layer_profile, ResNet-20 on the Intel VM of docs/PERFORMANCE.md,
 *    one run each: forward 31.6 -> 24.5 ms a step, backward 52.5 -> 42.1). Each channel's
 *    sums still run over the images in order, so the bits are those of a channel at a
 *    time. The pass ends with each channel's coefficients in m, a, b, k.
 *  - the affine pass, the one that writes, splits the block's planes (image by image, the
 *    block's channels inside) into contiguous ranges: split by channels, two threads
 *    wrote interleaved runs of a few KiB of the same tensor and ran no faster than one
 *    (an 8 MiB write pass at 16 channels of 32x32: 0.31 ms on one thread, 0.32 on two,
 *    against 0.14 split flat; AMD EPYC Zen 5 VM, 2026-11-25). Each element's value is
 *    computed as before: the same bits on any number of threads.
 * The eval forward's coefficients come from the running statistics, split as the sums. */
#define BN_GROUP 64
#define BN_BLOCK 1024

typedef struct {
    int B, C, HW;
    const float *inp, *gamma, *beta, *mean, *var_or_invstd, *o, *dout;
    const float *res; /* forward: the fused residual add's other input (then relu is set), or NULL */
    float *out, *save_mean, *save_invstd, *running_mean, *running_var, *dinp, *dgamma, *dbeta;
    float momentum, eps;
    int relu;   /* the fused ReLU: clamp the output; in backward o is its output */
    int set;    /* backward: dinp = (the _set entry points), not += */
    int k0, kn; /* the block of channels a pass covers */
    /* per channel of the block: forward y = a*(x - m) + b, backward dx = a*g + b*(x - m) + k */
    float *m, *a, *b, *k;
} bn_job_t;

/* Thread t's channels of the block, [*c0, *c1) */
static void channels(const bn_job_t *j, int t, int T, int *c0, int *c1)
{
    long lo, hi;
    par_range(j->kn, t, T, &lo, &hi);
    *c0 = j->k0 + (int)lo;
    *c1 = j->k0 + (int)hi;
}

/* Runs sums and then write (the affine pass; NULL: none) over each block of the call's channels. */
static void by_blocks(bn_job_t *j, par_fn sums, par_fn write)
{
    float m[BN_BLOCK], a[BN_BLOCK], b[BN_BLOCK], k[BN_BLOCK];
    j->m = m, j->a = a, j->b = b, j->k = k;
    for (j->k0 = 0; j->k0 < j->C; j->k0 += BN_BLOCK) {
        j->kn = j->C - j->k0 < BN_BLOCK ? j->C - j->k0 : BN_BLOCK;
        par_run(sums, j);
        if (write) par_run(write, j);
    }
}

/* Thread t's planes of the block, [*p0, *p1): plane p is image p / kn, channel k0 + p % kn */
static void planes(const bn_job_t *j, int t, int T, long *p0, long *p1) { par_range((long)j->B * j->kn, t, T, p0, p1); }

/* Where plane p of the block starts in the tensor; *i its channel in the block */
static size_t plane_at(const bn_job_t *j, long p, int *i)
{
    *i = (int)(p % j->kn);
    return (size_t)(p / j->kn) * j->C * j->HW + (size_t)(j->k0 + *i) * j->HW;
}

static void forward_train_sums(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    const int B = j->B, C = j->C, HW = j->HW;
    const float *inp = j->inp, *gamma = j->gamma, *beta = j->beta;
    float *save_mean = j->save_mean, *save_invstd = j->save_invstd, *running_mean = j->running_mean,
          *running_var = j->running_var;
    const float momentum = j->momentum, eps = j->eps;
    const size_t M = (size_t)B * HW, plane = (size_t)HW, bstride = (size_t)C * HW;
    int c0, c1;
    channels(j, t, T, &c0, &c1);
    for (int g0 = c0; g0 < c1; g0 += BN_GROUP) {
        const int n = c1 - g0 < BN_GROUP ? c1 - g0 : BN_GROUP;
        double shift[BN_GROUP], s1[BN_GROUP] = {0}, s2[BN_GROUP] = {0};
        for (int i = 0; i < n; i++) shift[i] = inp[(size_t)(g0 + i) * plane];
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++)
                shifted_sums(inp + b * bstride + (size_t)(g0 + i) * plane, plane, shift[i], &s1[i], &s2[i]);
        for (int i = 0; i < n; i++) {
            const int c = g0 + i;
            const double dm = s1[i] / (double)M;
            double var = s2[i] / (double)M - dm * dm; /* biased: what normalises the batch */
            if (var < 0.0) var = 0.0;
            const double mean = shift[i] + dm;
            const double invstd = 1.0 / sqrt(var + (double)eps);

            save_mean[c] = (float)mean;
            save_invstd[c] = (float)invstd;
            /* PyTorch updates the running variance with the unbiased estimate; a single
             * value per channel has none, so the biased one (0) is used there. */
            const double unbiased = M > 1 ? var * (double)M / (double)(M - 1) : var;
            running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * (float)mean;
            running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (float)unbiased;

            /* Centre on the float mean and move its rounding error into the shift, so the
             * output is normalised with the double-precision mean. */
            const double ad = (double)gamma[c] * invstd;
            const float mf = (float)mean;
            j->m[c - j->k0] = mf;
            j->a[c - j->k0] = (float)ad;
            j->b[c - j->k0] = (float)((double)beta[c] - ad * (mean - (double)mf));
        }
    }
}

/* out = a*(inp - m) + b per plane, then + res and the ReLU where the call fuses them */
static void forward_affine(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    const size_t plane = (size_t)j->HW;
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    for (long p = p0; p < p1; p++) {
        int i;
        const size_t at = plane_at(j, p, &i);
        affine_plane(plane, j->inp + at, j->m[i], j->a[i], j->b[i], j->res ? j->res + at : NULL, j->relu, j->out + at);
    }
}

static void forward_train(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                          const float *res, float *out, float *save_mean, float *save_invstd, float *running_mean,
                          float *running_var, float momentum, float eps, int relu)
{
    if (B <= 0 || C <= 0 || HW <= 0) return;
    bn_job_t j = {.B = B,
                  .C = C,
                  .HW = HW,
                  .inp = inp,
                  .gamma = gamma,
                  .beta = beta,
                  .out = out,
                  .save_mean = save_mean,
                  .save_invstd = save_invstd,
                  .running_mean = running_mean,
                  .running_var = running_var,
                  .momentum = momentum,
                  .eps = eps,
                  .res = res,
                  .relu = relu};
    by_blocks(&j, forward_train_sums, forward_affine);
}

void batchnorm_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                 float *out, float *save_mean, float *save_invstd, float *running_mean,
                                 float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, NULL, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 0);
}

void batchnorm_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                      float *out, float *save_mean, float *save_invstd, float *running_mean,
                                      float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, NULL, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 1);
}

void batchnorm_add_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                          const float *res, float *out, float *save_mean, float *save_invstd,
                                          float *running_mean, float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, res, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 1);
}

/* The eval forward's coefficients from the running statistics: a = gamma / sqrt(var + eps) */
static void forward_eval_coefficients(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    int c0, c1;
    channels(j, t, T, &c0, &c1);
    for (int c = c0; c < c1; c++) {
        j->m[c - j->k0] = j->mean[c];
        j->a[c - j->k0] = (float)((double)j->gamma[c] / sqrt((double)j->var_or_invstd[c] + (double)j->eps));
        j->b[c - j->k0] = j->beta[c];
    }
}

static void forward_eval(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                         const float *running_mean, const float *running_var, const float *res, float *out, float eps,
                         int relu)
{
    if (B <= 0 || C <= 0 || HW <= 0) return;
    bn_job_t j = {.B = B,
                  .C = C,
                  .HW = HW,
                  .inp = inp,
                  .gamma = gamma,
                  .beta = beta,
                  .mean = running_mean,
                  .var_or_invstd = running_var,
                  .res = res,
                  .out = out,
                  .eps = eps,
                  .relu = relu};
    by_blocks(&j, forward_eval_coefficients, forward_affine);
}

void batchnorm_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var, float *out, float eps)
{
    forward_eval(B, C, HW, inp, gamma, beta, running_mean, running_var, NULL, out, eps, 0);
}

void batchnorm_relu_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                     const float *running_mean, const float *running_var, float *out, float eps)
{
    forward_eval(B, C, HW, inp, gamma, beta, running_mean, running_var, NULL, out, eps, 1);
}

void batchnorm_add_relu_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                         const float *running_mean, const float *running_var, const float *res,
                                         float *out, float eps)
{
    forward_eval(B, C, HW, inp, gamma, beta, running_mean, running_var, res, out, eps, 1);
}

/* The backward's sums per channel, dbeta and dgamma, and the coefficients of dx. o: NULL,
 * or the fused ReLU's output (dout is then the ReLU's output gradient). */
static void backward_sums(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    const int B = j->B;
    const float *inp = j->inp, *gamma = j->gamma, *save_mean = j->mean, *save_invstd = j->var_or_invstd, *o = j->o,
                *dout = j->dout;
    float *dgamma = j->dgamma, *dbeta = j->dbeta;
    const size_t M = (size_t)B * j->HW, plane = (size_t)j->HW, bstride = (size_t)j->C * j->HW;
    float gm[MASK_PLANE];
    int c0, c1;
    channels(j, t, T, &c0, &c1);
    for (int g0 = c0; g0 < c1; g0 += BN_GROUP) {
        const int n = c1 - g0 < BN_GROUP ? c1 - g0 : BN_GROUP;
        double sg[BN_GROUP] = {0}, sgx[BN_GROUP] = {0};
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++) {
                const double mean = save_mean[g0 + i];
                const size_t at = b * bstride + (size_t)(g0 + i) * plane;
                if (o && plane <= MASK_PLANE) {
                    mask_grad(plane, dout + at, o + at, gm);
                    grad_sums(gm, inp + at, plane, mean, &sg[i], &sgx[i]);
                } else if (o) grad_sums_relu(dout + at, o + at, inp + at, plane, mean, &sg[i], &sgx[i]);
                else grad_sums(dout + at, inp + at, plane, mean, &sg[i], &sgx[i]);
            }
        /* dbeta = sum g, dgamma = sum g * xhat with xhat = (x - mean) * invstd;
         * dx = gamma*invstd * (g - db/M - xhat*dg/M)
         *    = a*g + bx*(x - mean) + k, with a = gamma*invstd, bx = -a*invstd*dg/M,
         *      k = -a*db/M */
        for (int i = 0; i < n; i++) {
            const int c = g0 + i;
            const double invstd = save_invstd[c], db = sg[i], dg = sgx[i] * invstd;
            dbeta[c] = (float)db;
            dgamma[c] = (float)dg;
            const double ad = (double)gamma[c] * invstd;
            j->m[c - j->k0] = save_mean[c];
            j->a[c - j->k0] = (float)ad;
            j->b[c - j->k0] = (float)(-ad * invstd * dg / (double)M);
            j->k[c - j->k0] = (float)(-ad * db / (double)M);
        }
    }
}

/* dinp += (or, with set, =) a*g + b*(inp - m) + k per plane, g masked by o where set */
static void backward_affine(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    const size_t plane = (size_t)j->HW;
    float gm[MASK_PLANE];
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    for (long p = p0; p < p1; p++) {
        int i;
        const size_t at = plane_at(j, p, &i);
        const float *g = j->dout + at, *ob = j->o ? j->o + at : NULL;
        if (ob && plane <= MASK_PLANE) {
            mask_grad(plane, g, ob, gm);
            g = gm;
            ob = NULL;
        }
        affine2_acc(plane, g, ob, j->inp + at, j->m[i], j->a[i], j->b[i], j->k[i], j->set, j->dinp + at);
    }
}

static void backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                     const float *save_invstd, const float *o, const float *dout, float *dinp, float *dgamma,
                     float *dbeta, int set)
{
    if (C <= 0) return;
    bn_job_t j = {.set = set,
                  .B = B,
                  .C = C,
                  .HW = HW,
                  .inp = inp,
                  .gamma = gamma,
                  .mean = save_mean,
                  .var_or_invstd = save_invstd,
                  .o = o,
                  .dout = dout,
                  .dinp = dinp,
                  .dgamma = dgamma,
                  .dbeta = dbeta};
    by_blocks(&j, backward_sums, dinp && B > 0 && HW > 0 ? backward_affine : NULL);
}

void batchnorm_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                        const float *save_invstd, const float *dout, float *dinp, float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, NULL, dout, dinp, dgamma, dbeta, 0);
}

void batchnorm_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                            const float *save_invstd, const float *dout, float *dinp, float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, NULL, dout, dinp, dgamma, dbeta, 1);
}

void batchnorm_relu_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *out, const float *dout, float *dinp, float *dgamma,
                             float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, out, dout, dinp, dgamma, dbeta, 0);
}

void batchnorm_relu_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                                 const float *save_invstd, const float *out, const float *dout, float *dinp,
                                 float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, out, dout, dinp, dgamma, dbeta, 1);
}
