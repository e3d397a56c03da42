/* tests/unit/test_compress.c - gradient compression (worker/compress.h) without MPI: N
 * simulated ranks each run the three phases, and the test sums their messages as
 * MPI_Allreduce would (floats added in rank order; bf16 words through the op's body).
 *
 * The PowerSGD reference is a double-precision C reference here in the test (the same
 * steps in double: P = sum M_i Q, Gram-Schmidt, Q = sum M_i^T P^, M^ = P^ Q^T,
 * e_i = M_i - M^ / N), on fixed matrices. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "compress.h"
#include "memest.h"
#include "model.h"
#include "rng.h"
#include "spec.h"

/* Named tolerances. */
#define TOL_PSGD_REL 1e-4 /* float PowerSGD vs the double reference, relative to max |M^| */
#define TOL_EF_REL 0.05   /* error feedback: what was sent over the steps vs the true sum */

#define NR 2 /* simulated ranks */

/* A stand-in model: one fully connected layer (ROWS, COLS) and its bias (ROWS), a second
 * small one (4, 8) that stays uncompressed. */
#define ROWS 32
#define COLS 48
#define NPARAMS (ROWS * COLS + ROWS + 4 * 8)

typedef struct {
    model_t m;
    layer_t layers[2];
    tensor_info_t tensors[3];
    float grads[NPARAMS + MODEL_GRAD_EXTRA];
} fake_t;

static void fake_init(fake_t *f)
{
    memset(f, 0, sizeof *f);
    f->layers[0] = (layer_t){.kind = LAYER_FC, .OC = ROWS, .w_off = 0, .b_off = ROWS * COLS, .has_bias = 1};
    f->layers[1] = (layer_t){.kind = LAYER_FC, .OC = 4, .w_off = ROWS * COLS + ROWS};
    f->tensors[0] = (tensor_info_t){.name = "fc1.weight", .offset = 0, .count = ROWS * COLS};
    f->tensors[1] = (tensor_info_t){.name = "fc1.bias", .offset = ROWS * COLS, .count = ROWS};
    f->tensors[2] = (tensor_info_t){.name = "fc2.weight", .offset = ROWS * COLS + ROWS, .count = 32};
    snprintf(f->m.name, sizeof f->m.name, "fake");
    f->m.layers = f->layers;
    f->m.nlayers = 2;
    f->m.tensors = f->tensors;
    f->m.ntensors = 3;
    f->m.nparams = NPARAMS;
    f->m.grads = f->grads;
}

/* Rank k's gradient at step t: a fixed pattern (a low-rank part common to the ranks and
 * a per-rank full-rank part), and the extras [b, b loss, b |g|^2, 1]. */
static void fill_grad(float *g, int k, int t)
{
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            g[i * COLS + j] = (float)(sin(0.3 * i + 0.1 * t) * cos(0.2 * j) + 0.3 * sin(1.7 * i * j + k + 0.37 * t));
    for (int i = ROWS * COLS; i < NPARAMS; i++) g[i] = (float)(0.01 * (i % 7) - 0.02 * k + 0.001 * t);
    g[NPARAMS] = 32.0f + k;
    g[NPARAMS + 1] = 2.5f;
    g[NPARAMS + 2] = 7.0f;
    g[NPARAMS + 3] = 1.0f;
}

/* Sums message slot i of every rank in place, as MPI_Allreduce(SUM) would. */
static void sum_msgs(compress_msg_t msgs[NR][2], int i)
{
    int n = msgs[0][i].count;
    for (int k = 1; k < NR; k++) assert_int_equal(msgs[k][i].count, n);
    if (msgs[0][i].bf16) {
        for (int k = 1; k < NR; k++) compress_bf16_sum(msgs[k][i].buf, msgs[0][i].buf, (size_t)n);
        for (int k = 1; k < NR; k++) memcpy(msgs[k][i].buf, msgs[0][i].buf, (size_t)n * 2);
        return;
    }
    float *acc = msgs[0][i].buf;
    for (int k = 1; k < NR; k++)
        for (int j = 0; j < n; j++) acc[j] += ((float *)msgs[k][i].buf)[j];
    for (int k = 1; k < NR; k++) memcpy(msgs[k][i].buf, acc, (size_t)n * sizeof(float));
}

/* One step of NR simulated ranks; returns the messages' bytes of rank 0. */
static size_t step_all(compress_t *c[NR], fake_t f[NR], long step)
{
    compress_msg_t msgs[NR][2];
    size_t bytes = 0;
    int n = 0;
    for (int k = 0; k < NR; k++) n = compress_begin(c[k], f[k].grads, step, msgs[k]);
    for (int i = 0; i < n; i++) {
        sum_msgs(msgs, i);
        bytes += (size_t)msgs[0][i].count * (msgs[0][i].bf16 ? 2 : 4);
    }
    for (int k = 0; k < NR; k++) n = compress_middle(c[k], f[k].grads, step, msgs[k]);
    for (int i = 0; i < n; i++) {
        sum_msgs(msgs, i);
        bytes += (size_t)msgs[0][i].count * 4;
    }
    for (int k = 0; k < NR; k++) compress_end(c[k], f[k].grads, step);
    return bytes;
}

static void make_all(compress_t *c[NR], fake_t f[NR], const char *kind, int r, int warmup)
{
    char err[256];
    for (int k = 0; k < NR; k++) {
        fake_init(&f[k]);
        assert_int_equal(compress_create(&f[k].m, kind, r, warmup, 42, NR, 0, &c[k], err, sizeof err), 0);
    }
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(compress_to_bf16(1.0f), 0x3f80);
    assert_int_equal(compress_to_bf16(-2.0f), 0xc000);
    /* Ties go to the even neighbour: 1 + 2^-8 is halfway between 1 and 1 + 2^-7. */
    assert_int_equal(compress_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(compress_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(compress_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    assert_true(isnan(compress_from_bf16(compress_to_bf16(NAN))));
    assert_true(isinf(compress_from_bf16(compress_to_bf16(INFINITY))));
    rng_t g;
    rng_seed(&g, 7);
    for (int i = 0; i < 10000; i++) {
        float x = rng_normal(&g) * 1e3f;
        float y = compress_from_bf16(compress_to_bf16(x));
        assert_true(fabsf(y - x) <= fabsf(x) * 0x1p-8f);
    }
}

/* bf16 all-reduce: each rank's words rounded once, N - 1 sums each rounded once, so the
 * result is within N x 2^-8 (bf16's unit roundoff) x sum_i |g_i| of the exact sum (element-wise); the extras
 * are summed exactly in their own float message. */
static void test_bf16_allreduce_bound(void **state)
{
    (void)state;
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "bf16", 0, 0);
    double exact[NPARAMS], mag[NPARAMS] = {0};
    for (int k = 0; k < NR; k++) fill_grad(f[k].grads, k, 3);
    for (int i = 0; i < NPARAMS; i++) {
        exact[i] = 0;
        for (int k = 0; k < NR; k++) exact[i] += f[k].grads[i], mag[i] += fabs(f[k].grads[i]);
    }
    size_t bytes = step_all(c, f, 0);
    assert_int_equal(bytes, NPARAMS * 2 + MODEL_GRAD_EXTRA * 4);
    assert_int_equal(bytes, compress_step_bytes(c[0]));
    int rounded = 0;
    for (int i = 0; i < NPARAMS; i++) {
        double bound = NR * 0x1p-8 * mag[i] * (1 + 1e-6);
        if (fabs(f[0].grads[i] - exact[i]) > bound)
            fail_msg("bf16 sum of element %d: %g, exact %g, bound %g", i, f[0].grads[i], exact[i], bound);
        rounded += f[0].grads[i] != (float)exact[i];
        assert_true(f[1].grads[i] == f[0].grads[i]);
    }
    assert_true(rounded > NPARAMS / 4); /* it did round */
    assert_true(f[0].grads[NPARAMS] == 65.0f && f[0].grads[NPARAMS + 1] == 5.0f && f[0].grads[NPARAMS + 3] == 2.0f);
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

/* ---- the double reference ------------------------------------------------------------ */

static void ref_orthogonalise(double *p, int n, int r)
{
    for (int j = 0; j < r; j++) {
        for (int k = 0; k < j; k++) {
            double d = 0;
            for (int i = 0; i < n; i++) d += p[i * r + j] * p[i * r + k];
            for (int i = 0; i < n; i++) p[i * r + j] -= d * p[i * r + k];
        }
        double s = 0;
        for (int i = 0; i < n; i++) s += p[i * r + j] * p[i * r + j];
        for (int i = 0; i < n; i++) p[i * r + j] /= sqrt(s);
    }
}

#define R 2

/* One reference step of NR ranks: e[k] (ROWS, COLS) += g[k]; q (COLS, R) in and out (the
 * reduced Q); mhat (ROWS, COLS) out; then e[k] -= mhat / NR.
 *
 * hook 1: the step as PyTorch 1.13's DDP hook computes it instead (torch/distributed/
 * algorithms/ddp_comm_hooks/powerSGD_hook.py, powerSGD_hook): the warm-started Q is
 * orthogonalised before P = M Q, the reduced Q is divided by NR, so mhat = P^ Q^T is the
 * mean of the ranks' M (what DDP's update applies), and e[k] -= mhat. The two forms agree
 * (Gram-Schmidt of M Q R^-1, R upper triangular, is Gram-Schmidt of M Q): pacer's sum is
 * NR times the hook's mean, its errors the hook's. */
static void ref_step(double e[NR][ROWS * COLS], float *const g[NR], double *q, double *mhat, int hook)
{
    double p[ROWS * R] = {0};
    for (int k = 0; k < NR; k++)
        for (int i = 0; i < ROWS * COLS; i++) e[k][i] += g[k][i];
    if (hook) ref_orthogonalise(q, COLS, R);
    for (int k = 0; k < NR; k++)
        for (int i = 0; i < ROWS; i++)
            for (int c = 0; c < R; c++)
                for (int j = 0; j < COLS; j++) p[i * R + c] += e[k][i * COLS + j] * q[j * R + c];
    ref_orthogonalise(p, ROWS, R);
    memset(q, 0, COLS * R * sizeof *q);
    for (int k = 0; k < NR; k++)
        for (int j = 0; j < COLS; j++)
            for (int c = 0; c < R; c++)
                for (int i = 0; i < ROWS; i++) q[j * R + c] += e[k][i * COLS + j] * p[i * R + c];
    if (hook)
        for (int i = 0; i < COLS * R; i++) q[i] /= NR;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) {
            double v = 0;
            for (int c = 0; c < R; c++) v += p[i * R + c] * q[j * R + c];
            mhat[i * COLS + j] = v;
        }
    for (int k = 0; k < NR; k++)
        for (int i = 0; i < ROWS * COLS; i++) e[k][i] -= hook ? mhat[i] : mhat[i] / NR;
}

/* Every rank's update gradient times scale and its error against the reference's
 * (ref_step), within TOL_PSGD_REL of max |mhat|; who names the reference in a failure. */
static void check_step(compress_t *c[NR], fake_t f[NR], const double *mhat, double e[NR][ROWS * COLS], double scale,
                       int t, const char *who)
{
    double big = 0;
    for (int i = 0; i < ROWS * COLS; i++) big = fmax(big, fabs(mhat[i]));
    const double tol = TOL_PSGD_REL * big;
    for (int k = 0; k < NR; k++) {
        size_t ne;
        const float *ek = compress_error(c[k], &ne);
        assert_int_equal(ne, ROWS * COLS);
        for (int i = 0; i < ROWS * COLS; i++) {
            if (fabs(f[k].grads[i] * scale - mhat[i]) > tol)
                fail_msg("step %d rank %d: M^[%d] x %g = %g, %s %g", t, k, i, scale, f[k].grads[i] * scale, who,
                         mhat[i]);
            if (fabs(ek[i] - e[k][i]) > tol)
                fail_msg("step %d rank %d: e[%d] = %g, %s %g", t, k, i, ek[i], who, e[k][i]);
        }
    }
}

/* Three steps (the second and third warm-started from the reduced Q) against the
 * reference: the decompressed gradient, each rank's error and Q; the bias and the small
 * layer summed exactly; the extras exact; the bytes what the plan says. */
static void test_powersgd_reference(void **state)
{
    (void)state;
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, 0);
    assert_int_equal(compress_matrices(c[0]), 1); /* fc2 (4 x 8) is too small */
    static double e[NR][ROWS * COLS], mhat[ROWS * COLS];
    memset(e, 0, sizeof e);
    double q[COLS * R];
    size_t nq;
    const float *q0 = compress_q(c[0], &nq);
    assert_int_equal(nq, COLS * R);
    for (int i = 0; i < COLS * R; i++) q[i] = q0[i];
    size_t n1;
    assert_memory_equal(q0, compress_q(c[1], &n1), nq * sizeof(float)); /* the same seed, the same Q */
    for (int t = 0; t < 3; t++) {
        float *g[NR];
        double rest[NPARAMS + MODEL_GRAD_EXTRA] = {0};
        for (int k = 0; k < NR; k++) {
            fill_grad(f[k].grads, k, t);
            g[k] = f[k].grads;
        }
        for (int k = 0; k < NR; k++)
            for (int i = ROWS * COLS; i < NPARAMS + MODEL_GRAD_EXTRA; i++) rest[i] += f[k].grads[i];
        ref_step(e, g, q, mhat, 0); /* reads g before step_all overwrites it */
        size_t bytes = step_all(c, f, t);
        assert_int_equal(bytes, ((ROWS + COLS) * R + ROWS + 32 + MODEL_GRAD_EXTRA) * sizeof(float));
        assert_int_equal(bytes, compress_step_bytes(c[0]));
        check_step(c, f, mhat, e, 1.0, t, "reference");
        for (int k = 0; k < NR; k++) {
            const float *qk = compress_q(c[k], &nq);
            for (int i = 0; i < COLS * R; i++)
                if (fabs(qk[i] - q[i]) > TOL_PSGD_REL * (1 + fabs(q[i])) * 10)
                    fail_msg("step %d rank %d: Q[%d] = %g, reference %g", t, k, i, qk[i], q[i]);
            for (int i = ROWS * COLS; i < NPARAMS + MODEL_GRAD_EXTRA; i++)
                assert_float_equal(f[k].grads[i], rest[i], 1e-6);
        }
    }
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

/* pacer against PyTorch's own hook (ref_step's hook form), with one warm-up step as the
 * hook's start_powerSGD_iter = 1, then three compressed steps warm-started from the
 * reduced Q: the update's gradient (pacer's sum / NR, the hook's mean) and each rank's
 * error (M - the mean's approximation in both, not M - the sum's). A scaling by 1 / NR missing or doubled, an error kept against the sum, or Q
 * orthogonalised wrongly, fails here. */
static void test_powersgd_matches_torch_hook(void **state)
{
    (void)state;
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, 1);
    static double e[NR][ROWS * COLS], mean[ROWS * COLS];
    memset(e, 0, sizeof e);
    double q[COLS * R];
    size_t nq;
    const float *q0 = compress_q(c[0], &nq);
    for (int i = 0; i < COLS * R; i++) q[i] = q0[i];
    for (int t = 0; t < 4; t++) {
        float *g[NR];
        for (int k = 0; k < NR; k++) {
            fill_grad(f[k].grads, k, t);
            g[k] = f[k].grads;
        }
        if (t == 0) { /* the warm-up step: the plain sum, no error kept */
            assert_int_equal(step_all(c, f, t), (NPARAMS + MODEL_GRAD_EXTRA) * sizeof(float));
            size_t ne;
            const float *e0 = compress_error(c[0], &ne);
            for (size_t i = 0; i < ne; i++) assert_true(e0[i] == 0.0f);
            continue;
        }
        ref_step(e, g, q, mean, 1);
        step_all(c, f, t);
        check_step(c, f, mean, e, 1.0 / NR, t, "the hook's");
    }
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

/* A last-axis linear (LAYER_LINEAR: an imported N-D MatMul by a weight, a transformer's
 * projection) stores its weight (IN, OUT) and is compressed as that matrix: step for step
 * the bytes and the reduced gradients of the fully connected layer of the same (ROWS,
 * COLS) weight, which test_powersgd_reference holds to the reference. */
static void test_linear_compressed(void **state)
{
    (void)state;
    compress_t *fc[NR], *lin[NR];
    fake_t f[NR], g[NR];
    char err[256];
    make_all(fc, f, "powersgd", R, 0);
    for (int k = 0; k < NR; k++) {
        fake_init(&g[k]);
        /* OC unset: a linear's rows are gemm.IN */
        g[k].layers[0] = (layer_t){.kind = LAYER_LINEAR,
                                   .op.gemm = {.IN = ROWS, .OUT = COLS, .layout = GEMM_W_IN_OUT},
                                   .w_off = 0,
                                   .b_off = ROWS * COLS,
                                   .has_bias = 1};
        assert_int_equal(compress_create(&g[k].m, "powersgd", R, 0, 42, NR, 0, &lin[k], err, sizeof err), 0);
    }
    assert_int_equal(compress_matrices(lin[0]), 1);
    assert_int_equal(compress_step_bytes(lin[0]), compress_step_bytes(fc[0]));
    assert_true(compress_step_bytes(lin[0]) < compress_plain_bytes(lin[0]) / 5);
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < NR; k++) {
            fill_grad(f[k].grads, k, t);
            fill_grad(g[k].grads, k, t);
        }
        assert_int_equal(step_all(lin, g, t), step_all(fc, f, t));
        for (int k = 0; k < NR; k++) assert_memory_equal(g[k].grads, f[k].grads, sizeof f[k].grads);
    }
    for (int k = 0; k < NR; k++) {
        compress_free(fc[k]);
        compress_free(lin[k]);
    }
}

/* Error feedback: over T steps, what the ranks sent (the M^ they all applied) sums to
 * the true sum of their gradients less what their errors still hold; the errors stay
 * bounded, so the relative gap shrinks. Without the errors (zeroed after every step)
 * the part outside each step's rank-2 subspace is lost for good. */
static double ef_gap(int feedback, int steps)
{
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, 0);
    static double sent[ROWS * COLS], truth[ROWS * COLS];
    memset(sent, 0, sizeof sent);
    memset(truth, 0, sizeof truth);
    for (int t = 0; t < steps; t++) {
        for (int k = 0; k < NR; k++) {
            fill_grad(f[k].grads, k, t % 5);
            for (int i = 0; i < ROWS * COLS; i++) truth[i] += f[k].grads[i];
        }
        step_all(c, f, t);
        for (int i = 0; i < ROWS * COLS; i++) sent[i] += f[0].grads[i];
        if (!feedback)
            for (int k = 0; k < NR; k++) {
                size_t ne;
                memset(compress_error(c[k], &ne), 0, ROWS * COLS * sizeof(float));
            }
    }
    double d2 = 0, t2 = 0, ident = 0;
    size_t ne;
    const float *e0 = compress_error(c[0], &ne), *e1 = compress_error(c[1], &ne);
    for (int i = 0; i < ROWS * COLS; i++) {
        d2 += (sent[i] - truth[i]) * (sent[i] - truth[i]);
        t2 += truth[i] * truth[i];
        /* sum of true - sum of sent = what the errors hold */
        if (feedback) ident = fmax(ident, fabs(truth[i] - sent[i] - (e0[i] + e1[i])));
    }
    if (feedback) assert_true(ident < 1e-3 * sqrt(t2 / (ROWS * COLS)) * steps);
    for (int k = 0; k < NR; k++) compress_free(c[k]);
    return sqrt(d2 / t2);
}

static void test_error_feedback_converges(void **state)
{
    (void)state;
    double g50 = ef_gap(1, 50), g400 = ef_gap(1, 400), lost = ef_gap(0, 400);
    print_message("error feedback: relative gap %.4f after 50 steps, %.4f after 400; without it %.4f\n", g50, g400,
                  lost);
    assert_true(g400 < TOL_EF_REL);
    assert_true(g400 < g50);
    assert_true(lost > 4 * TOL_EF_REL);
}

/* Warm-up steps are the plain all-reduce (the whole buffer, no error kept); the kind
 * none is always plain; a bad kind or rank is refused with a message. */
static void test_warmup_and_refusals(void **state)
{
    (void)state;
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, 2);
    for (int k = 0; k < NR; k++) fill_grad(f[k].grads, k, 0);
    float want = f[0].grads[5] + f[1].grads[5];
    assert_int_equal(step_all(c, f, 0), (NPARAMS + MODEL_GRAD_EXTRA) * sizeof(float));
    assert_float_equal(f[0].grads[5], want, 0);
    assert_false(compress_active(c[0], 1));
    assert_true(compress_active(c[0], 2));
    for (int k = 0; k < NR; k++) compress_free(c[k]);

    fake_t one;
    fake_init(&one);
    compress_t *x = NULL;
    char err[256];
    assert_int_equal(compress_create(&one.m, "none", 0, 0, 1, 2, 0, &x, err, sizeof err), 0);
    assert_int_equal(compress_step_bytes(x), (NPARAMS + MODEL_GRAD_EXTRA) * sizeof(float));
    compress_free(x);
    assert_int_equal(compress_create(&one.m, "topk", 2, 0, 1, 2, 0, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown kind \"topk\" (none, bf16, powersgd)"));
    assert_int_equal(compress_create(&one.m, "powersgd", 65, 0, 1, 2, 0, &x, err, sizeof err), -1);
    assert_non_null(strstr(err, "algorithm.compression.rank: 65 is outside [1, 64]"));
}

/* The measured choice (min_gain, compress.h) on NR simulated ranks whose step timer the
 * test advances by hand: plain calls of 0.05 s in steps of 0.1 s, then compressed calls
 * of comp_s. Returns the verdict after the probe; checks that a plain verdict sends the
 * error feedback once (what was sent over the steps then sums to the true gradients, as
 * with uncompressed steps throughout) and leaves the errors at 0. */
#define PROBE_WARMUP 4
#define PROBE_STEPS 2
static compress_verdict_t probe_run(double comp_s, double *gain)
{
    compress_t *c[NR];
    fake_t f[NR];
    step_phases_t ph[NR];
    memset(ph, 0, sizeof ph);
    make_all(c, f, "powersgd", R, PROBE_WARMUP);
    for (int k = 0; k < NR; k++) {
        compress_set_phases(c[k], &ph[k]);
        compress_set_auto(c[k], 0.15, PROBE_STEPS);
    }
    static double truth[ROWS * COLS], sent[ROWS * COLS];
    memset(truth, 0, sizeof truth), memset(sent, 0, sizeof sent);
    const int steps = PROBE_WARMUP + PROBE_STEPS + 3;
    for (int t = 0; t < steps; t++) {
        for (int k = 0; k < NR; k++) fill_grad(f[k].grads, k, t);
        for (int i = 0; i < ROWS * COLS; i++) truth[i] += f[0].grads[i] + f[1].grads[i];
        step_all(c, f, t);
        for (int i = 0; i < ROWS * COLS; i++) sent[i] += f[0].grads[i];
        for (int k = 0; k < NR; k++) {
            compress_observe(c[k], t, t < PROBE_WARMUP ? 0.05 : comp_s, 0, MPI_COMM_NULL);
            ph[k].total_wall += 0.1; /* the step closes */
        }
        if (t < PROBE_WARMUP + PROBE_STEPS - 1) assert_int_equal(compress_verdict(c[0], NULL), COMPRESS_UNDECIDED);
    }
    double v[COMPRESS_PROBE_N];
    compress_verdict_t verdict = compress_verdict(c[0], v);
    assert_int_equal(compress_verdict(c[1], NULL), verdict);
    assert_float_equal(v[PROBE_PLAIN_N], PROBE_STEPS, 0);
    assert_float_equal(v[PROBE_STEP_N], PROBE_STEPS, 0);
    assert_float_equal(v[PROBE_COMP_N], PROBE_STEPS, 0);
    assert_float_equal(v[PROBE_STEP_S] / v[PROBE_STEP_N], 0.1, 1e-12);
    *gain = compress_probe_gain(v);
    assert_int_equal(compress_active(c[0], steps), verdict == COMPRESS_KEEP);
    if (verdict == COMPRESS_PLAIN) {
        size_t ne;
        const float *e = compress_error(c[0], &ne);
        for (size_t i = 0; i < ne; i++) assert_float_equal(e[i], 0, 0);
        double d = 0, t2 = 0;
        for (int i = 0; i < ROWS * COLS; i++) d = fmax(d, fabs(truth[i] - sent[i])), t2 = fmax(t2, fabs(truth[i]));
        assert_true(d < 1e-5 * t2 * steps); /* float sums in another order: rounding only */
    }
    for (int k = 0; k < NR; k++) compress_free(c[k]);
    return verdict;
}

static void test_measured_choice(void **state)
{
    (void)state;
    double gain;
    /* compressed calls of 0.01 s save 0.04 of a 0.1 s step: 0.4 >= 0.15 */
    assert_int_equal(probe_run(0.01, &gain), COMPRESS_KEEP);
    assert_float_equal(gain, 0.4, 1e-9);
    /* 0.04 s save 0.1 of a step: less than min_gain, so plain from then on */
    assert_int_equal(probe_run(0.04, &gain), COMPRESS_PLAIN);
    assert_float_equal(gain, 0.1, 1e-9);
    /* slower compressed calls: a negative gain */
    assert_int_equal(probe_run(0.09, &gain), COMPRESS_PLAIN);
    assert_true(gain < 0);

    /* Nothing timed (a resume past the probe with no sums): compress, as asked. A
     * restored plain verdict is plain at once. Without min_gain, or for bf16, no probe. */
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, PROBE_WARMUP);
    double zero[COMPRESS_PROBE_N] = {0};
    compress_set_auto(c[0], 0.15, PROBE_STEPS);
    compress_restore_verdict(c[0], COMPRESS_UNDECIDED, zero);
    compress_observe(c[0], 50, 0.01, 0, MPI_COMM_NULL);
    assert_int_equal(compress_verdict(c[0], NULL), COMPRESS_KEEP);
    assert_true(isnan(compress_probe_gain(zero)));
    compress_set_auto(c[1], 0.15, PROBE_STEPS);
    compress_restore_verdict(c[1], COMPRESS_PLAIN, zero);
    assert_false(compress_active(c[1], 50));
    for (int k = 0; k < NR; k++) compress_free(c[k]);
    make_all(c, f, "bf16", 0, 0);
    compress_set_auto(c[0], 0.15, PROBE_STEPS);
    for (int t = 0; t < 10; t++) compress_observe(c[0], t, 0.05, 0, MPI_COMM_NULL);
    assert_int_equal(compress_verdict(c[0], NULL), COMPRESS_UNDECIDED);
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

/* What the memory estimate (common/memest.c, by common/compress_mem.h) adds for
 * algorithm.compression kind on algorithm, LeNet-5 on 4 workers with checkpoints. */
static double estimate_of(const char *algorithm, const char *kind)
{
    const char *base = "{\"model\":\"lenet5\",\"workers\":4,\"checkpoint\":{\"every_steps\":5},"
                       "\"algorithm\":{\"name\":\"%s\",\"compression\":{\"kind\":\"%s\"}}}";
    char text[512], err[256];
    job_spec_t s;
    memest_t none, with;
    snprintf(text, sizeof text, base, algorithm, "none");
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(memest_rank(&s, 4, &none, err, sizeof err), 0);
    snprintf(text, sizeof text, base, algorithm, kind);
    if (spec_parse(text, &s, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(memest_rank(&s, 4, &with, err, sizeof err), 0);
    return with.model_bytes - none.model_bytes;
}

/* The memory estimate counts what each algorithm's compression really allocates: bf16
 * exactly (compress.c's words; local-sgd's average and delta besides; hpsgd nothing
 * besides; in the parameter-server family its largest rank: a worker's error and, with
 * checkpoints, its copy, or the server's widened push), PowerSGD by a bound from the
 * parameter count that is at least what compress_create allocates for ssgd and hpsgd
 * (rank 0 keeping every worker's error). */
static void test_memest_counts_compression(void **state)
{
    (void)state;
    char err[256];
    model_t *m = NULL;
    if (model_create("lenet5", 1, &m, err, sizeof err) != 0) fail_msg("%s", err);
    const double np = (double)m->nparams, nb = (double)m->nbuffers;
    compress_t *c = NULL;
    assert_int_equal(compress_create(m, "bf16", 0, 0, 1, 4, 0, &c, err, sizeof err), 0);
    const double words = 4.0 * (double)compress_state_floats(c);
    compress_free(c);
    assert_true(words == 2.0 * np);
    assert_true(estimate_of("ssgd", "bf16") == words);
    assert_true(estimate_of("hpsgd", "bf16") == words);
    assert_true(estimate_of("local-sgd", "bf16") == words + 4.0 * (2.0 * np + MODEL_GRAD_EXTRA));
    /* with checkpoints a worker's error and its copy before the last push (ps.c) */
    assert_true(estimate_of("asgd", "bf16") == 4.0 * fmax(2.0 * np, np + nb));
    assert_true(estimate_of("dc-asgd", "bf16") == 4.0 * fmax(2.0 * np, np + nb));
    assert_int_equal(compress_create(m, "powersgd", 2, 0, 1, 4, 0, &c, err, sizeof err), 0);
    assert_int_equal(compress_keep_all(c, 4), 0);
    double real = 4.0 * (double)compress_state_floats(c);
    print_message("LeNet-5 PowerSGD rank 2, 4 workers: %.0f bytes allocated, %.0f estimated (ssgd), %.0f (hpsgd)\n",
                  real, estimate_of("ssgd", "powersgd"), estimate_of("hpsgd", "powersgd"));
    assert_true(estimate_of("ssgd", "powersgd") >= real);
    assert_true(estimate_of("hpsgd", "powersgd") >= real);
    compress_free(c);
    model_free(m);
}

/* hpsgd's plain round sends its window and 2 extras, not the all-reduce's 4
 * (compress_set_plain_extra): the plain bytes the summary reports follow. */
static void test_plain_extra(void **state)
{
    (void)state;
    fake_t one;
    fake_init(&one);
    compress_t *x = NULL;
    char err[256];
    assert_int_equal(compress_create(&one.m, "bf16", 0, 0, 1, 2, 0, &x, err, sizeof err), 0);
    assert_int_equal(compress_plain_bytes(x), (NPARAMS + MODEL_GRAD_EXTRA) * sizeof(float));
    compress_set_plain_extra(x, 2);
    assert_int_equal(compress_plain_bytes(x), (NPARAMS + 2) * sizeof(float));
    assert_int_equal(compress_step_bytes(x), NPARAMS * sizeof(uint16_t) + MODEL_GRAD_EXTRA * sizeof(float));
    compress_free(x);
}

/* The parameter-server family's push plan: a push's bytes, bf16 and plain, and powersgd
 * refused naming what the pushes take. */
static void test_push_plan(void **state)
{
    (void)state;
    fake_t one;
    fake_init(&one);
    compress_t *x = NULL;
    char err[256];
    assert_int_equal(compress_create_push(&one.m, "bf16", 32, &x, err, sizeof err), 0);
    assert_int_equal(compress_kind(x), COMPRESS_BF16);
    assert_int_equal(compress_step_bytes(x), 32 + NPARAMS * sizeof(uint16_t) + one.m.nbuffers * sizeof(float));
    assert_int_equal(compress_plain_bytes(x), 32 + (NPARAMS + one.m.nbuffers) * sizeof(float));
    assert_int_equal(compress_step_bytes(x), compress_push_bytes(32, NPARAMS, one.m.nbuffers, 1));
    compress_free(x);
    assert_int_equal(compress_create_push(&one.m, "powersgd", 32, &x, err, sizeof err), -1);
    assert_null(x);
    assert_non_null(strstr(err, "the parameter server's pushes take none or bf16, not \"powersgd\""));
}

/* Frozen tensors (model.h's no_update) are in no message: for each kind, with fc1.weight
 * (the compressed matrix, at offset 0: the trainable rest is one run ending at nparams,
 * sent in place) or fc1.bias (in the middle: two runs, packed) frozen, rank 0's bytes are
 * the trainable floats' and the extras', the frozen gradients (different on each rank)
 * come back untouched and the trainable ones summed as before (plain: exactly). */
static void frozen_case(const char *kind, int frozen)
{
    compress_t *c[NR];
    fake_t f[NR];
    char err[256];
    const size_t fcount = frozen == 0 ? ROWS * COLS : ROWS, ntrain = NPARAMS - fcount;
    for (int k = 0; k < NR; k++) {
        fake_init(&f[k]);
        f[k].tensors[frozen].no_update = 1;
        assert_int_equal(compress_create(&f[k].m, kind, 2, 0, 42, NR, 0, &c[k], err, sizeof err), 0);
        fill_grad(f[k].grads, k, 0);
        for (size_t i = 0; i < fcount; i++) f[k].grads[f[k].tensors[frozen].offset + i] = 1000.0f + (float)(k * 7 + i);
    }
    /* bf16 (7 mantissa bits): each operand and the sum rounded, at most half an ulp (2^-8
     * relative) each: within 2^-7 (|a| + |b|) */
    float want[NPARAMS + MODEL_GRAD_EXTRA], mag[NPARAMS + MODEL_GRAD_EXTRA];
    for (int i = 0; i < NPARAMS + MODEL_GRAD_EXTRA; i++) {
        want[i] = f[0].grads[i] + f[1].grads[i];
        mag[i] = fabsf(f[0].grads[i]) + fabsf(f[1].grads[i]);
    }
    const size_t bytes = step_all(c, f, 0);
    assert_int_equal(compress_plain_bytes(c[0]), (ntrain + MODEL_GRAD_EXTRA) * sizeof(float));
    if (strcmp(kind, "none") == 0) assert_int_equal(bytes, (ntrain + MODEL_GRAD_EXTRA) * sizeof(float));
    if (strcmp(kind, "bf16") == 0) assert_int_equal(bytes, ntrain * 2 + MODEL_GRAD_EXTRA * sizeof(float));
    if (strcmp(kind, "powersgd") == 0) {
        assert_int_equal(compress_matrices(c[0]), frozen == 0 ? 0 : 1);
        assert_int_equal(bytes, compress_step_bytes(c[0]));
        /* the matrix's factors (ROWS + COLS) r, or nothing, then the uncompressed rest */
        const size_t factors = frozen == 0 ? 0 : (size_t)(ROWS + COLS) * 2;
        const size_t rest = frozen == 0 ? ntrain : ntrain - ROWS * COLS;
        assert_int_equal(bytes, (factors + rest + MODEL_GRAD_EXTRA) * sizeof(float));
    }
    for (int k = 0; k < NR; k++) {
        for (size_t i = 0; i < fcount; i++)
            assert_true(f[k].grads[f[k].tensors[frozen].offset + i] == 1000.0f + (float)(k * 7 + i));
        for (int i = 0; i < NPARAMS + MODEL_GRAD_EXTRA; i++) {
            const int in_frozen = (size_t)i >= f[k].tensors[frozen].offset &&
                                  (size_t)i < f[k].tensors[frozen].offset + fcount;
            const int in_matrix = frozen != 0 && strcmp(kind, "powersgd") == 0 && i < ROWS * COLS;
            if (in_frozen || in_matrix) continue;
            if (strcmp(kind, "bf16") == 0 && i < NPARAMS)
                assert_true(fabsf(f[k].grads[i] - want[i]) <= 0.0079f * mag[i] + 1e-6f);
            else assert_true(f[k].grads[i] == want[i]);
        }
    }
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

static void test_frozen_not_sent(void **state)
{
    (void)state;
    const char *kinds[] = {"none", "bf16", "powersgd"};
    for (int i = 0; i < 3; i++) {
        frozen_case(kinds[i], 0);
        frozen_case(kinds[i], 1);
    }
}

/* Checkpoint format 6 carries PowerSGD's state: Q and every rank's error, each rank
 * taking its own back; a run on another number of workers (an elastic restart) gets Q
 * and starts its errors at zero; a plan of other sizes is refused, saying so. */
static void test_checkpoint_carries_state(void **state)
{
    (void)state;
    compress_t *c[NR];
    fake_t f[NR];
    make_all(c, f, "powersgd", R, 0);
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < NR; k++) fill_grad(f[k].grads, k, t);
        step_all(c, f, t);
    }
    static float params[NPARAMS], momentum[NPARAMS];
    for (int k = 0; k < NR; k++) f[k].m.params = params, f[k].m.momentum = momentum;
    assert_int_equal(compress_keep_all(c[0], NR), 0);
    /* what rank 0 gathers: here the two ranks' errors side by side */
    size_t nq, ne;
    float *q = compress_q(c[0], &nq);
    static float all[NR * ROWS * COLS];
    for (int k = 0; k < NR; k++) { /* ne set before it is read: arguments have no order */
        const float *e = compress_error(c[k], &ne);
        memcpy(all + k * ne, e, ne * sizeof(float));
    }
    ckpt_state_t st;
    memset(&st, 0, sizeof st);
    st.spec_hash = 1, st.seed = 42, st.epoch = 1, st.step_in_epoch = 4, st.cursor = 256, st.global_step = 14;
    st.aug_rng.s[0] = 7, st.aug_rng.s[1] = 9, st.epoch_loss_samples = 256, st.nworkers = NR;
    st.batch_of[0] = 40, st.batch_of[1] = 24, st.global_batch = 64, st.gain = st.efficiency = 1;
    st.compress_q = q, st.compress_err = all, st.compress_q_floats = nq, st.compress_err_floats = ne;
    st.compress_ranks = NR;
    char dir[] = "/tmp/pacer-test-compress-XXXXXX", path[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/c.ckpt", dir);
    assert_int_equal(checkpoint_save(path, &f[0].m, &st, err, sizeof err), 0);

    static float q2[COLS * R], e2[ROWS * COLS];
    ckpt_expect_t want = {.spec_hash = 1,
                          .seed = 42,
                          .nworkers = NR,
                          .spec_workers = NR,
                          .epochs = 3,
                          .steps_per_epoch = 10,
                          .train_n = 640,
                          .global_batch = 64,
                          .min_batch = 8,
                          .max_batch = 48,
                          .compress_q_floats = nq,
                          .compress_err_floats = ne,
                          .compress_q = q2,
                          .compress_err = e2,
                          .compress_index = 1};
    ckpt_state_t got;
    if (checkpoint_load(path, &f[1].m, &want, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(q2, q, nq * sizeof(float));
    assert_memory_equal(e2, compress_error(c[1], &ne), ne * sizeof(float));
    assert_int_equal(got.compress_ranks, NR);

    /* an elastic restart on one worker: Q kept, the errors start at zero */
    memset(q2, 0, sizeof q2);
    memset(e2, 0, sizeof e2);
    want.nworkers = 1, want.compress_index = 0;
    if (checkpoint_load(path, &f[1].m, &want, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_memory_equal(q2, q, nq * sizeof(float));
    for (size_t i = 0; i < ne; i++) assert_true(e2[i] == 0);
    assert_int_equal(got.compress_ranks, NR);

    /* another plan (rank 3's sizes) */
    want.nworkers = NR, want.compress_q_floats = COLS * 3;
    assert_int_equal(checkpoint_load(path, &f[1].m, &want, &got, err, sizeof err), -1);
    assert_non_null(strstr(err, "checkpoint's PowerSGD state (Q 96 floats, error 1536) is not this run's plan (Q "
                                "144, error 1536)"));
    unlink(path);
    rmdir(dir);
    for (int k = 0; k < NR; k++) compress_free(c[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_bf16_allreduce_bound),
        cmocka_unit_test(test_powersgd_reference),
        cmocka_unit_test(test_powersgd_matches_torch_hook),
        cmocka_unit_test(test_linear_compressed),
        cmocka_unit_test(test_error_feedback_converges),
        cmocka_unit_test(test_warmup_and_refusals),
        cmocka_unit_test(test_measured_choice),
        cmocka_unit_test(test_memest_counts_compression),
        cmocka_unit_test(test_plain_extra),
        cmocka_unit_test(test_push_plan),
        cmocka_unit_test(test_frozen_not_sent),
        cmocka_unit_test(test_checkpoint_carries_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
