/* kernels/cpu/batchnorm.c - batch normalisation over (B, HW) per channel.
 *
 * Statistics are accumulated in double, one pass over the data, on values shifted by
 * the channel's first element: var = (S2 - S1^2/M)/M then only cancels as much as the
 * spread around that sample, not around zero, so a channel with a large mean and a
 * small spread keeps its precision.
 *
 * Every per-element loop is an affine map with per-channel coefficients, which
 * vectorises; the AVX2 and AVX-512 clones use no FMA (ISO C: no contraction), so results
 * do not depend on the machine. The statistics' sums and the forward's affine passes have
 * an AVX-512 clone: on a Zen 5, ResNet-20's batch norms at batch 128 took 7.8 -> 6.8 ms
 * forward and 11.0 -> 10.5 backward a step with it. The backward's masking and affine
 * passes have none: there it was slower (mask_grad's clone 11.0 -> 16.7 ms, affine2_acc's
 * 11.0 -> 11.3).
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
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
shifted_sums(const float *restrict x, size_t n, double shift, double *s1, double *s2)
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

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
grad_sums(const float *restrict g, const float *restrict x, size_t n, double mean, double *sg, double *sgx)
{
    grad_sums_body(g, NULL, x, n, mean, sg, sgx);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
grad_sums_relu(const float *restrict g, const float *restrict o, const float *restrict x, size_t n, double mean,
               double *sg, double *sgx)
{
    grad_sums_body(g, o, x, n, mean, sg, sgx);
}

/* y = a*(x - m) + b. Centring first (rather than folding m into b) keeps the result
 * accurate when the mean is large compared with the spread. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
affine(size_t n, const float *restrict x, float m, float a, float b, float *restrict y)
{
    for (size_t i = 0; i < n; i++) y[i] = a * (x[i] - m) + b;
}

/* y = relu(a*(x - m) + b), relu as relu_forward computes it */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
affine_relu(size_t n, const float *restrict x, float m, float a, float b, float *restrict y)
{
    for (size_t i = 0; i < n; i++) {
        const float v = a * (x[i] - m) + b;
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

/* y = relu(a*(x - m) + b + r): the batch norm, the residual add (add_plane's sum, which is
 * commutative bit for bit) and relu_forward, each rounded as those kernels round */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
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
 * channels BN_BLOCK at a time; for each block:
 *  - the sums (forward train: x - shift and its square; backward: g and g*(x - mean)) are
 *    taken a plane at a time, the planes of a run of images (the block's channels side by
 *    side inside each image) split into contiguous ranges between the threads
 *    (parallel.h), so that a thread reads whole images in memory order, as a convolution
 *    split them before it. Each channel's sums must still be added over the images in
 *    order, as one thread adds them: thread 0's planes begin the run, so it adds its
 *    planes' sums into the channels' sums at once; the other threads leave theirs in
 *    part[] (BN_PARTS pairs: a ResNet-20 batch of 128 at up to 64 channels in one run),
 *    and a second pass (accumulate, split by channels) adds them in image order and
 *    computes each channel's coefficients m, a, b, k. The same bits on any number of
 *    threads. Split by channels instead (each thread reading its channels' part of every
 *    image), ResNet-20's batch norms gained little from a second thread: forward 10.3-11.1
 *    ms a step on one thread, 8.9-10.6 on two; backward 16.6-19.0 and 14.0-17.1; split by
 *    images, two threads take 6.8-7.3 and 9.9-11.0 (`layer_profile --batch 128 --threads
 *    N resnet20`, 3 alternating rounds; AMD EPYC Zen 5 VM, 2026-11-25).
 *  - the eval forward takes its coefficients from the running statistics instead;
 *  - the affine pass, the one that writes, splits the block's planes (image by image, the
 *    block's channels inside) the same way: split by channels, two threads wrote
 *    interleaved runs of a few KiB of the same tensor and ran no faster than one (an 8 MiB
 *    write pass at 16 channels of 32x32: 0.31 ms on one thread, 0.32 on two, against 0.14
 *    split flat; the same VM). Each element's value is computed as before: the same bits
 *    on any number of threads. */
#define BN_BLOCK BN_SYNC_BLOCK /* ops.h: a synchronised block's sums are reduced together */
#define BN_PARTS 8192          /* the plane sums of one run of images: 128 KiB on the caller's stack */

typedef struct bn_job {
    int B, C, HW;
    const float *inp, *gamma, *beta, *mean, *var_or_invstd, *o, *dout;
    const float *res; /* forward: the fused residual add's other input (then relu is set), or NULL */
    float *out, *save_mean, *save_invstd, *running_mean, *running_var, *dinp, *dgamma, *dbeta;
    float momentum, eps;
    int relu;   /* the fused ReLU: clamp the output; in backward o is its output */
    int set;    /* backward: dinp = (the _set entry points), not += */
    int k0, kn; /* the block of channels a pass covers */
    int b0, bn; /* the run of images a pass covers */
    /* the sums pass: plane p's pair of sums (p as in plane_at; thread 0's go to s1, s2) */
    double (*part)[2];
    /* per channel of the block: its sums so far, and what computes its coefficients */
    double *s1, *s2;
    void (*coefficient)(struct bn_job *j, int i);
    /* per channel of the block: forward y = a*(x - m) + b, backward dx = a*g + b*(x - m) + k */
    float *m, *a, *b, *k;
    /* synchronised (ops.h): the sums are every process's, over count values per channel;
     * NULL: this call's own, over B * HW */
    const bn_sync_t *sync;
    double count;
} bn_job_t;

/* The sums pass hands plane p's pair to the caller's channel sums: thread 0's planes
 * begin the run, so each of its channels' sums goes on straight from the runs before, in
 * image order; the other threads' planes wait in part[] for accumulate. */
static double *sums_of(const bn_job_t *j, int t, long p, int i, double **s2)
{
    if (t == 0) {
        *s2 = &j->s2[i];
        return &j->s1[i];
    }
    double *s = j->part[p];
    s[0] = s[1] = 0.0;
    *s2 = &s[1];
    return &s[0];
}

/* Adds the pairs in part[] (the planes after thread 0's) into the sums of thread t's
 * channels, in image order; after the run that ends the batch, computes those channels'
 * coefficients. */
static void accumulate(void *arg, int t, int T)
{
    bn_job_t *j = arg;
    const long n = (long)j->bn * j->kn;
    long lo, hi, zero, first;
    par_range(j->kn, t, T, &lo, &hi);
    par_range(n, 0, T, &zero, &first); /* thread 0's planes, [0, first), are in the sums already */
    for (long row = first - first % j->kn; row < n; row += j->kn) /* image by image */
        for (long i = lo; i < hi; i++)
            if (row + i >= first) {
                j->s1[i] += j->part[row + i][0];
                j->s2[i] += j->part[row + i][1];
            }
    if (j->b0 + j->bn == j->B && !j->sync) /* synchronised: after the reduction (by_blocks) */
        for (long i = lo; i < hi; i++) j->coefficient(j, (int)i);
}

/* Synchronised: the block's sums and count become every process's (ops.h's order: the kn
 * first sums, the kn second, the count), through a buffer on the stack (no allocation in
 * the step). The backward's dgamma and dbeta are this process's part's: taken first. */
static void reduce_block(bn_job_t *j)
{
    double v[2 * BN_SYNC_BLOCK + 1];
    const int kn = j->kn;
    for (int i = 0; i < kn; i++) {
        const int c = j->k0 + i;
        if (j->dbeta) j->dbeta[c] = (float)j->s1[i];
        if (j->dgamma) j->dgamma[c] = (float)(j->s2[i] * (double)j->var_or_invstd[c]);
    }
    for (int i = 0; i < kn; i++) {
        v[i] = j->s1[i];
        v[kn + i] = j->s2[i];
    }
    v[2 * kn] = (double)j->B * j->HW;
    j->sync->reduce(v, 2 * kn + 1, j->sync->ctx);
    for (int i = 0; i < kn; i++) {
        j->s1[i] = v[i];
        j->s2[i] = v[kn + i];
    }
    j->count = v[2 * kn];
}

/* The values a channel's sums are over: the batch's, or every process's (synchronised) */
static double values_of(const bn_job_t *j) { return j->sync ? j->count : (double)j->B * j->HW; }

/* Runs, over each block of the call's channels, the sums (NULL: none) and their
 * accumulation run by run of images, each channel's coefficients, and write (the affine
 * pass; NULL: none). */
static void by_blocks(bn_job_t *j, par_fn sums, par_fn write)
{
    float m[BN_BLOCK], a[BN_BLOCK], b[BN_BLOCK], k[BN_BLOCK];
    double s1[BN_BLOCK], s2[BN_BLOCK], part[BN_PARTS][2];
    j->m = m, j->a = a, j->b = b, j->k = k, j->part = part, j->s1 = s1, j->s2 = s2;
    for (j->k0 = 0; j->k0 < j->C; j->k0 += BN_BLOCK) {
        const int kn = j->C - j->k0 < BN_BLOCK ? j->C - j->k0 : BN_BLOCK;
        j->kn = kn;
        for (int i = 0; i < kn; i++) s1[i] = s2[i] = 0.0;
        for (j->b0 = 0; sums && j->b0 < j->B; j->b0 += j->bn) {
            j->bn = j->B - j->b0 < BN_PARTS / kn ? j->B - j->b0 : BN_PARTS / kn;
            par_run(sums, j);
            par_run(accumulate, j);
        }
        if (j->sync) reduce_block(j);
        /* no sums to take (the eval forward, or an empty batch), or synchronised ones */
        if (!sums || j->B == 0 || j->sync)
            for (int i = 0; i < kn; i++) j->coefficient(j, i);
        j->b0 = 0, j->bn = j->B;
        if (write) par_run(write, j);
    }
}

/* Thread t's planes of the run, [*p0, *p1): plane p is image b0 + p / kn, channel k0 + p % kn */
static void planes(const bn_job_t *j, int t, int T, long *p0, long *p1)
{
    par_range((long)j->bn * j->kn, t, T, p0, p1);
}

/* Where plane p of the run starts in the tensor; *i its channel in the block */
static size_t plane_at(const bn_job_t *j, long p, int *i)
{
    *i = (int)(p % j->kn);
    return (size_t)(j->b0 + p / j->kn) * j->C * j->HW + (size_t)(j->k0 + *i) * j->HW;
}

/* From plane (*at, *i) to the next, without plane_at's two divisions a plane (ResNet-20's
 * 8x8 planes are 64 values) */
static inline void next_plane(const bn_job_t *j, size_t *at, int *i)
{
    *at += (size_t)j->HW;
    if (++*i == j->kn) {
        *i = 0;
        *at += (size_t)(j->C - j->kn) * j->HW;
    }
}

/* The forward's shift for channel i of the block: the channel's first value (image 0's).
 * Shifted, the sums of squares keep their precision when the mean is far from 0.
 * Synchronised, every process's sums need the same shift: the running mean, which every
 * process holds alike and which follows the batch means. */
static double channel_shift(const bn_job_t *j, int i)
{
    return j->sync ? (double)j->running_mean[j->k0 + i] : j->inp[(size_t)(j->k0 + i) * j->HW];
}

/* ---- small planes on one thread -----------------------------------------------------
 * Planes of fewer than BN_SMALL_PLANE values (MobileNet's and EfficientNet's 4x4 to 1x1 at
 * 32x32 inputs) leave the per-plane kernels above only their scalar tails, so a call per
 * plane is mostly its own overhead (the eight lanes' set-up and sums): batch norm was 11%
 * of mobilenet_v2's step. On one thread a run of images is taken in one call instead,
 * image by image and channel by channel, each plane summed and written with the same
 * expressions in the same order as the per-plane kernels (their lanes hold zeros at these
 * sizes), so the bits do not change. */
#define BN_SMALL_PLANE 8

static int small_run(const bn_job_t *j, int T) { return T == 1 && j->HW < BN_SMALL_PLANE; }

/* the run's block of channels in image b: (kn, HW) from offset at */
static size_t block_at(const bn_job_t *j, int b) { return ((size_t)b * j->C + (size_t)j->k0) * j->HW; }

/* The run's sums of each channel, as shifted_sums (forward: v = x - shift, sums of v and
 * v * v) or grad_sums (backward, the job has dout: sums of g and g * (x - mean)) take them */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void small_sums(const bn_job_t *j)
{
    const int HW = j->HW, kn = j->kn, grad = j->dout != NULL;
    for (int b = j->b0; b < j->b0 + j->bn; b++) {
        const size_t at = block_at(j, b);
        const float *x = j->inp + at, *g = grad ? j->dout + at : NULL, *o = j->o ? j->o + at : NULL;
        for (int i = 0; i < kn; i++) {
            const double centre = grad ? (double)j->mean[j->k0 + i] : channel_shift(j, i);
            double sa = 0.0, sq = 0.0;
            for (int e = 0; e < HW; e++) {
                const size_t n = (size_t)(i * HW + e);
                const double v = (double)x[n] - centre, a = grad ? (double)masked(g, o, n) : v;
                sa += a;
                sq += a * v;
            }
            j->s1[i] += sa;
            j->s2[i] += sq;
        }
    }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void small_affine(const bn_job_t *j)
{
    const int HW = j->HW, kn = j->kn;
    for (int b = j->b0; b < j->b0 + j->bn; b++) {
        const size_t at = block_at(j, b);
        const float *x = j->inp + at, *r = j->res ? j->res + at : NULL;
        float *y = j->out + at;
        for (int i = 0; i < kn; i++)
            for (int e = 0; e < HW; e++) {
                const int n = i * HW + e;
                const float v = j->a[i] * (x[n] - j->m[i]) + j->b[i];
                if (r) {
                    const float sv = v + r[n];
                    y[n] = sv > 0.0f ? sv : 0.0f;
                } else y[n] = j->relu ? (v > 0.0f ? v : 0.0f) : v;
            }
    }
}

__attribute__((target_clones("avx2", "default"))) static void small_backward_affine(const bn_job_t *j)
{
    const int HW = j->HW, kn = j->kn;
    for (int b = j->b0; b < j->b0 + j->bn; b++) {
        const size_t at = block_at(j, b);
        const float *x = j->inp + at, *g = j->dout + at, *o = j->o ? j->o + at : NULL;
        float *d = j->dinp + at;
        for (int i = 0; i < kn; i++)
            for (int e = 0; e < HW; e++) {
                const size_t n = (size_t)(i * HW + e);
                const float v = j->a[i] * masked(g, o, n) + j->b[i] * (x[n] - j->m[i]) + j->k[i];
                if (j->set) d[n] = v + 0.0f;
                else d[n] += v;
            }
    }
}

/* Each plane's sums of x - shift and its square */
static void forward_train_sums(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    if (small_run(j, T)) {
        small_sums(j);
        return;
    }
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    int i;
    for (size_t at = plane_at(j, p0, &i); p0 < p1; p0++, next_plane(j, &at, &i)) {
        double *s2, *s1 = sums_of(j, t, p0, i, &s2);
        shifted_sums(j->inp + at, (size_t)j->HW, channel_shift(j, i), s1, s2);
    }
}

static void forward_train_coefficient(bn_job_t *j, int i)
{
    const double M = values_of(j);
    const float momentum = j->momentum;
    const int c = j->k0 + i;
    const double shift = channel_shift(j, i);
    const double dm = j->s1[i] / M;
    double var = j->s2[i] / M - dm * dm; /* biased: what normalises the batch */
    if (var < 0.0) var = 0.0;
    const double mean = shift + dm;
    const double invstd = 1.0 / sqrt(var + (double)j->eps);

    j->save_mean[c] = (float)mean;
    j->save_invstd[c] = (float)invstd;
    /* PyTorch updates the running variance with the unbiased estimate; a single value per
     * channel has none, so the biased one (0) is used there. */
    const double unbiased = M > 1 ? var * M / (M - 1) : var;
    j->running_mean[c] = (1.0f - momentum) * j->running_mean[c] + momentum * (float)mean;
    j->running_var[c] = (1.0f - momentum) * j->running_var[c] + momentum * (float)unbiased;

    /* Centre on the float mean and move its rounding error into the shift, so the output
     * is normalised with the double-precision mean. */
    const double ad = (double)j->gamma[c] * invstd;
    const float mf = (float)mean;
    j->m[i] = mf;
    j->a[i] = (float)ad;
    j->b[i] = (float)((double)j->beta[c] - ad * (mean - (double)mf));
}

/* out = a*(inp - m) + b per plane, then + res and the ReLU where the call fuses them */
static void forward_affine(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    if (small_run(j, T)) {
        small_affine(j);
        return;
    }
    const size_t plane = (size_t)j->HW;
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    int i;
    for (size_t at = plane_at(j, p0, &i); p0 < p1; p0++, next_plane(j, &at, &i)) {
        affine_plane(plane, j->inp + at, j->m[i], j->a[i], j->b[i], j->res ? j->res + at : NULL, j->relu, j->out + at);
    }
}

static void forward_train(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                          const float *res, float *out, float *save_mean, float *save_invstd, float *running_mean,
                          float *running_var, float momentum, float eps, int relu, const bn_sync_t *sync)
{
    /* synchronised, an empty part still takes part in every reduction */
    if (B < 0 || (B == 0 && !sync) || C <= 0 || HW <= 0) return;
    bn_job_t j = {.sync = sync,
                  .B = B,
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
                  .relu = relu,
                  .coefficient = forward_train_coefficient};
    by_blocks(&j, forward_train_sums, forward_affine);
}

void batchnorm_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                 float *out, float *save_mean, float *save_invstd, float *running_mean,
                                 float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, NULL, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 0, NULL);
}

void batchnorm_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                      float *out, float *save_mean, float *save_invstd, float *running_mean,
                                      float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, NULL, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 1, NULL);
}

void batchnorm_add_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                          const float *res, float *out, float *save_mean, float *save_invstd,
                                          float *running_mean, float *running_var, float momentum, float eps)
{
    forward_train(B, C, HW, inp, gamma, beta, res, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, 1, NULL);
}

/* The eval forward's coefficients from the running statistics: a = gamma / sqrt(var + eps) */
static void forward_eval_coefficient(bn_job_t *j, int i)
{
    const int c = j->k0 + i;
    j->m[i] = j->mean[c];
    j->a[i] = (float)((double)j->gamma[c] / sqrt((double)j->var_or_invstd[c] + (double)j->eps));
    j->b[i] = j->beta[c];
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
                  .relu = relu,
                  .coefficient = forward_eval_coefficient};
    by_blocks(&j, NULL, forward_affine);
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

/* Each plane's sums of g and g*(x - mean), g the output gradient (masked by o, the fused
 * ReLU's output, where o is not NULL) */
static void backward_sums(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    if (small_run(j, T)) {
        small_sums(j);
        return;
    }
    const size_t plane = (size_t)j->HW;
    float gm[MASK_PLANE];
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    int i;
    for (size_t at = plane_at(j, p0, &i); p0 < p1; p0++, next_plane(j, &at, &i)) {
        const double mean = j->mean[j->k0 + i];
        double *s2, *s1 = sums_of(j, t, p0, i, &s2);
        if (j->o && plane <= MASK_PLANE) {
            mask_grad(plane, j->dout + at, j->o + at, gm);
            grad_sums(gm, j->inp + at, plane, mean, s1, s2);
        } else if (j->o) grad_sums_relu(j->dout + at, j->o + at, j->inp + at, plane, mean, s1, s2);
        else grad_sums(j->dout + at, j->inp + at, plane, mean, s1, s2);
    }
}

/* dbeta = sum g, dgamma = sum g * xhat with xhat = (x - mean) * invstd;
 * dx = gamma*invstd * (g - db/M - xhat*dg/M)
 *    = a*g + bx*(x - mean) + k, with a = gamma*invstd, bx = -a*invstd*dg/M, k = -a*db/M */
static void backward_coefficient(bn_job_t *j, int i)
{
    const double M = values_of(j);
    const int c = j->k0 + i;
    const double invstd = j->var_or_invstd[c], db = j->s1[i], dg = j->s2[i] * invstd;
    if (!j->sync) { /* synchronised: this process's part's, before the reduction */
        /* either NULL: a frozen parameter (model.h's no_update), not written */
        if (j->dbeta) j->dbeta[c] = (float)db;
        if (j->dgamma) j->dgamma[c] = (float)dg;
    }
    const double ad = (double)j->gamma[c] * invstd;
    j->m[i] = j->mean[c];
    j->a[i] = (float)ad;
    j->b[i] = (float)(-ad * invstd * dg / M);
    j->k[i] = (float)(-ad * db / M);
}

/* dinp += (or, with set, =) a*g + b*(inp - m) + k per plane, g masked by o where set */
static void backward_affine(void *arg, int t, int T)
{
    const bn_job_t *j = arg;
    if (small_run(j, T)) {
        small_backward_affine(j);
        return;
    }
    const size_t plane = (size_t)j->HW;
    float gm[MASK_PLANE];
    long p0, p1;
    planes(j, t, T, &p0, &p1);
    int i;
    for (size_t at = plane_at(j, p0, &i); p0 < p1; p0++, next_plane(j, &at, &i)) {
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
                     float *dbeta, int set, const bn_sync_t *sync)
{
    if (C <= 0 || (sync && (B < 0 || HW <= 0))) return;
    bn_job_t j = {.sync = sync,
                  .set = set,
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
                  .dbeta = dbeta,
                  .coefficient = backward_coefficient};
    by_blocks(&j, backward_sums, dinp && B > 0 && HW > 0 ? backward_affine : NULL);
}

void batchnorm_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                        const float *save_invstd, const float *dout, float *dinp, float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, NULL, dout, dinp, dgamma, dbeta, 0, NULL);
}

void batchnorm_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                            const float *save_invstd, const float *dout, float *dinp, float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, NULL, dout, dinp, dgamma, dbeta, 1, NULL);
}

void batchnorm_relu_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *out, const float *dout, float *dinp, float *dgamma,
                             float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, out, dout, dinp, dgamma, dbeta, 0, NULL);
}

void batchnorm_relu_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                                 const float *save_invstd, const float *out, const float *dout, float *dinp,
                                 float *dgamma, float *dbeta)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, out, dout, dinp, dgamma, dbeta, 1, NULL);
}

void batchnorm_forward_train_sync(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                  const float *res, int relu, float *out, float *save_mean, float *save_invstd,
                                  float *running_mean, float *running_var, float momentum, float eps,
                                  const bn_sync_t *sync)
{
    forward_train(B, C, HW, inp, gamma, beta, res, out, save_mean, save_invstd, running_mean, running_var, momentum,
                  eps, relu, sync);
}

void batchnorm_backward_sync(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *out, const float *dout, float *dinp, float *dgamma,
                             float *dbeta, int set, const bn_sync_t *sync)
{
    backward(B, C, HW, inp, gamma, save_mean, save_invstd, out, dout, dinp, dgamma, dbeta, set, sync);
}
