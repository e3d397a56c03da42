/* tests/unit/test_op_table.c - per-operator tests generated from the operator table
 * (model/op_table.h): one test walks MODEL_OPS row by row and fails for a row that is
 * incomplete or lacks a case here, a reference kernel (kernels/ref) or a CUDA entry.
 *
 * Each row's case (CASES below) names a shape generator (the input shape and a builder of
 * the layer under test), its reference forward in double (kernels/ref/ref.h) and its
 * tolerances. The layer is built into a small network:
 *   input -> LeakyRelu(alpha 1) -> the layer under test -> Gemm head (4 classes)
 * (the LeakyRelu with slope 1 is the identity, bit for bit, and gives the layer's input a
 * gradient buffer; two-input kinds read it twice). After a training forward and backward
 * on the CPU (model_forward, model_backward: the table's steps):
 *   - the layer's output against its reference on the same input and weights: max |cpu -
 *     ref| / max |ref| <= tol_fwd;
 *   - the gradient of its input and of each of its parameters against central finite
 *     differences of f = sum(g * ref(.)), g the output gradient the backward received
 *     (relative to the largest difference quotient, tol_grad); inputs are kept at least
 *     0.05 from 0 so that no ReLU kink sits within a step (random values: no max-pool ties);
 *   - its ONNX import names appear in the importer's list of supported operators (what an
 *     unsupported operator's refusal prints), which is generated from the table;
 *   - the export: the network written as ONNX from its layers and imported again gives the
 *     same evaluation logits bit for bit;
 *   - the CUDA case: the same network on the device backend from the same weights and
 *     batch: loss, logits and every parameter gradient against the CPU's (tol_dev). Here
 *     the device is the stand-in of tests/fakecuda ($BUILD/tests/libpacer_fakecuda.so, the
 *     CPU code as the worker's GPU path runs it: tol_dev is then 0, the same bits); with
 *     PACER_CUDA_LIB set to build/libpacer_cuda.so on a machine with a GPU, the real one
 *     (tol_dev then from test_cuda_parity's tolerances for the kind). A kind whose CUDA
 *     row is empty is refused by cuda_model_create, and the row fails with that refusal.
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

#include "backend_cuda.h"
#include "model.h"
#include "onnx_export.h"
#include "onnx_import.h"
#include "op_table.h"
#include "plan.h"
#include "ref.h"

#define B_TEST 3
#define CLASSES 4
#define FD_H 1e-4 /* finite-difference step, times max(1, |v|) */

/* ---- inputs --------------------------------------------------------------------------- */

static uint64_t g_lcg;

static double unif(void)
{
    g_lcg = g_lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_lcg >> 40) / 16777216.0;
}

/* +-[0.05, 1): away from every kink and tie a step of FD_H could cross */
static float away_from_zero(void)
{
    const double v = 0.05 + 0.95 * unif();
    return (float)(unif() < 0.5 ? -v : v);
}

/* ---- the layer under test: builders (shape generators) and references ------------------ */

/* What a reference reads: the layer, its input (x; x2 the second input), its parameters
 * (params: the model's fused parameters in double, at the layer's offsets), the batch. */
typedef struct {
    const model_t *m;
    const layer_t *l;
    int li; /* the layer's index (dropout's key) */
    int B;
    const double *x, *x2, *params;
} ref_in_t;

typedef void (*ref_fn)(const ref_in_t *in, double *y);

static int build_conv(model_builder_t *b, int x)
{
    /* 3x3, stride 2, asymmetric pads, two groups, with bias */
    const conv2d_desc_t g = {.OC = 4,
                             .KH = 3,
                             .KW = 3,
                             .sH = 2,
                             .sW = 1,
                             .pad_t = 1,
                             .pad_l = 0,
                             .pad_b = 0,
                             .pad_r = 1,
                             .dH = 1,
                             .dW = 1,
                             .groups = 2};
    return model_build_conv(b, x, &g, 1, "t.weight", "t.bias");
}
static void ref_conv(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_conv2d_forward(&l->op.conv, in->B, in->x, in->params + l->w_off, in->params + l->b_off, y);
}

static int build_conv_transpose(model_builder_t *b, int x)
{
    /* 3x2, strides 2 and 1, dilation 2 down, asymmetric pads, two groups, an output
     * padding of 1 down (OH 2 * 6 + 4 + 1 - 1 - 0 + 1 = 17), with bias */
    const conv2d_desc_t g = {.OC = 6,
                             .KH = 3,
                             .KW = 2,
                             .sH = 2,
                             .sW = 1,
                             .pad_t = 1,
                             .pad_l = 0,
                             .pad_b = 0,
                             .pad_r = 1,
                             .dH = 2,
                             .dW = 1,
                             .groups = 2,
                             .OH = 17,
                             .OW = 6};
    return model_build_conv_transpose(b, x, &g, 1, "t.weight", "t.bias");
}
static void ref_conv_transpose(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_conv_transpose2d_forward(&l->op.conv, in->B, in->x, in->params + l->w_off, in->params + l->b_off, y);
}

static const pool2d_desc_t POOL = {.KH = 3, .KW = 2, .sH = 2, .sW = 2, .pad_t = 1, .pad_l = 1, .dH = 1, .dW = 1};
static int build_maxpool(model_builder_t *b, int x) { return model_build_pool(b, LAYER_MAXPOOL, x, &POOL); }
static void ref_maxpool(const ref_in_t *in, double *y)
{
    ref_maxpool2d_forward(&in->l->op.pool, in->B, in->x, y, NULL);
}
static int build_avgpool(model_builder_t *b, int x) { return model_build_pool(b, LAYER_AVGPOOL, x, &POOL); }
static void ref_avgpool(const ref_in_t *in, double *y) { ref_avgpool2d_forward(&in->l->op.pool, in->B, in->x, y); }

static size_t in_count(const ref_in_t *in) { return (size_t)in->B * in->l->C * in->l->H * in->l->W; }

static void ref_act_all(const ref_in_t *in, ref_act_t k, double alpha, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = ref_act(k, alpha, in->x[i]);
}
static int build_relu(model_builder_t *b, int x) { return model_build_relu(b, x); }
static void ref_relu(const ref_in_t *in, double *y) { ref_act_all(in, REF_ACT_RELU, 0.0, y); }
static int build_leaky(model_builder_t *b, int x) { return model_build_elementwise(b, LAYER_LEAKY_RELU, x, 0.1f); }
static void ref_leaky(const ref_in_t *in, double *y) { ref_act_all(in, REF_ACT_LEAKY, in->l->op.unary.alpha, y); }
static int build_sigmoid(model_builder_t *b, int x) { return model_build_elementwise(b, LAYER_SIGMOID, x, 0.0f); }
static void ref_sigmoid(const ref_in_t *in, double *y) { ref_act_all(in, REF_ACT_SIGMOID, 0.0, y); }
static int build_tanh(model_builder_t *b, int x) { return model_build_elementwise(b, LAYER_TANH, x, 0.0f); }
static void ref_tanh(const ref_in_t *in, double *y) { ref_act_all(in, REF_ACT_TANH, 0.0, y); }

static int build_fc(model_builder_t *b, int x)
{
    /* ONNX Gemm with the (IN, OUT) layout, alpha and beta */
    const gemm_desc_t g = {.layout = GEMM_W_IN_OUT, .alpha = 0.5f, .beta = 2.0f};
    return model_build_gemm(b, x, 5, &g, "t.weight", "t.bias");
}
static void ref_fc(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_gemm_forward(&l->op.gemm, in->B, in->x, in->params + l->w_off, in->params + l->b_off, y);
}

static int build_bn(model_builder_t *b, int x)
{
    static const char *const names[4] = {"t.weight", "t.bias", "t.running_mean", "t.running_var"};
    return model_build_bn_eps(b, x, names, 1e-3f);
}
static void ref_bn(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_batchnorm_forward_train(in->B, l->C, l->H * l->W, in->x, in->params + l->w_off, in->params + l->b_off,
                                l->op.norm.eps, y, NULL, NULL);
}

static int build_gap(model_builder_t *b, int x) { return model_build_gap(b, x); }
static void ref_gap(const ref_in_t *in, double *y) { ref_gap_forward(in->B, in->l->C, in->l->H * in->l->W, in->x, y); }

/* Add(x, x): both inputs one tensor, so its gradient receives both contributions */
static int build_add(model_builder_t *b, int x) { return model_build_add(b, x, x); }
static void ref_add(const ref_in_t *in, double *y) { ref_shortcut_add_forward(&in->l->op.sc, in->B, in->x, in->x2, y); }

static int build_concat(model_builder_t *b, int x) { return model_build_concat(b, x, x); }
static void ref_concat(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    const int C[2] = {l->C, l->OC - l->C};
    const double *const xs[2] = {in->x, in->x2};
    ref_concat_forward(in->B, l->H * l->W, 2, C, xs, y);
}

static int build_dropout(model_builder_t *b, int x) { return model_build_elementwise(b, LAYER_DROPOUT, x, 0.3f); }
static void ref_dropout(const ref_in_t *in, double *y)
{
    const model_t *m = in->m;
    ref_dropout_forward(in_count(in), in->l->op.dropout.p,
                        dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)in->li), in->x, y);
}

/* p 0.5: of the B_TEST samples' draws (seed 77, this step) some drop a whole sample and
 * some keep it (run_case checks that the case reaches both) */
static int build_sdepth(model_builder_t *b, int x)
{
    return model_build_elementwise(b, LAYER_STOCHASTIC_DEPTH, x, 0.5f);
}
static void ref_sdepth(const ref_in_t *in, double *y)
{
    const model_t *m = in->m;
    const layer_t *l = in->l;
    ref_stochastic_depth_forward(in_count(in), (size_t)l->C * l->H * l->W, l->op.dropout.p,
                                 dropout_key(m->dropout_seed, m->dropout_step, (uint32_t)in->li), in->x, y);
}

static int build_clip(model_builder_t *b, int x) { return model_build_clip(b, x, -0.5f, 0.6f); }
static void ref_clip_all(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = ref_clip(in->l->op.unary.lo, in->l->op.unary.hi, in->x[i]);
}

static int build_hardsigmoid(model_builder_t *b, int x) { return model_build_hardsigmoid(b, x, 0.7f, 0.4f); }
static void ref_hardsigmoid_all(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++)
        y[i] = ref_hardsigmoid(in->l->op.unary.alpha, in->l->op.unary.beta, in->x[i]);
}

static int build_hardswish(model_builder_t *b, int x) { return model_build_hardswish(b, x); }
static void ref_hardswish_all(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = ref_hardswish(in->x[i]);
}

/* Mul(x, x): one tensor read twice, so its gradient receives both contributions */
static int build_mul(model_builder_t *b, int x) { return model_build_mul(b, x, x); }
static void ref_mul(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_mul_forward(in->B, l->C, l->H * l->W, l->H * l->W, in->x, in->x2, y);
}

/* Squeeze-excitation's Mul(scale (C, 1, 1), x (C, H, W)), the scale the plane means of x
 * (a global average pool): the builder puts the full input first, the broadcast input's
 * gradient is summed over the plane, and x's gradient gets both paths. */
static int build_mul_bcast(model_builder_t *b, int x) { return model_build_mul(b, model_build_gap(b, x), x); }
static void ref_mul_bcast(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    const int HW = l->H * l->W;
    double *s = malloc((size_t)in->B * l->C * sizeof *s);
    assert_non_null(s);
    ref_gap_forward(in->B, l->C, HW, in->x2, s);
    ref_mul_forward(in->B, l->C, HW, 1, in->x, s, y);
    free(s);
}

/* The unary rows: the row's function of ops.h on every element. Sqrt reads the absolute
 * value of the input (an Abs before it: the shape generator's), so that every element is in
 * its domain; Pow's exponent is 3 (negative inputs allowed). */
static void ref_unary_all(const ref_in_t *in, unary_op_t op, double a, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = ref_unary(op, a, in->x[i]);
}
static int build_exp(model_builder_t *b, int x) { return model_build_unary(b, LAYER_EXP, x, 0.0f); }
static void ref_exp(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_EXP, 0.0, y); }
static int build_neg(model_builder_t *b, int x) { return model_build_unary(b, LAYER_NEG, x, 0.0f); }
static void ref_neg(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_NEG, 0.0, y); }
static int build_sqrt(model_builder_t *b, int x)
{
    return model_build_unary(b, LAYER_SQRT, model_build_unary(b, LAYER_ABS, x, 0.0f), 0.0f);
}
static void ref_sqrt(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = ref_unary(UNARY_SQRT, 0.0, fabs(in->x[i]));
}
static int build_reciprocal(model_builder_t *b, int x) { return model_build_unary(b, LAYER_RECIPROCAL, x, 0.0f); }
static void ref_reciprocal(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_RECIPROCAL, 0.0, y); }
static int build_abs(model_builder_t *b, int x) { return model_build_unary(b, LAYER_ABS, x, 0.0f); }
static void ref_abs(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_ABS, 0.0, y); }
static int build_pow(model_builder_t *b, int x) { return model_build_unary(b, LAYER_POW, x, 3.0f); }
static void ref_pow(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_POW, 3.0, y); }
static int build_erf(model_builder_t *b, int x) { return model_build_unary(b, LAYER_ERF, x, 0.0f); }
static void ref_erf(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_ERF, 0.0, y); }
static int build_gelu(model_builder_t *b, int x) { return model_build_unary(b, LAYER_GELU, x, 0.0f); }
static void ref_gelu(const ref_in_t *in, double *y) { ref_unary_all(in, UNARY_GELU, 0.0, y); }

/* The broadcasting rows. A constant operand is a parameter "t.c" (its gradient, summed over
 * the axes it broadcasts along, checked against finite differences like any parameter's);
 * the references read it at its offset. */
static const double *const_params(const ref_in_t *in, int li) { return in->params + in->m->layers[li].w_off; }
static int build_const_of(model_builder_t *b, int rank, int d0, int d1, int d2)
{
    const model_shape_t s = {.rank = rank, .dims = {d0, d1, d2}};
    return model_build_const(b, &s, "t.c", 0);
}
/* x (C, H, W) + c (C, 1, 1): a per-channel bias */
static int build_badd(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_BADD, x, build_const_of(b, 3, 3, 1, 1));
}
static void ref_badd(const ref_in_t *in, double *y)
{
    ref_binary_forward(BINARY_ADD, &in->l->op.view.bc, in->B, in->x, const_params(in, in->l->in2), y);
}
/* c (W) - x (C, H, W): the constant first, aligned with the last axis */
static int build_sub(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_SUB, build_const_of(b, 1, 4, 0, 0), x);
}
static void ref_sub(const ref_in_t *in, double *y)
{
    ref_binary_forward(BINARY_SUB, &in->l->op.view.bc, in->B, const_params(in, in->l->in), in->x, y);
}
/* x (C, H, W) * c (H, 1): rank 2 against rank 3 */
static int build_bmul(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_BMUL, x, build_const_of(b, 2, 5, 1, 0));
}
static void ref_bmul(const ref_in_t *in, double *y)
{
    ref_binary_forward(BINARY_MUL, &in->l->op.view.bc, in->B, in->x, const_params(in, in->l->in2), y);
}
/* x (C, H, W) * k (W), k frozen (a Constant node's: a buffer, no gradient, exported as a
 * Constant and imported as one again) */
static int build_bmul_frozen(model_builder_t *b, int x)
{
    const model_shape_t s = {.rank = 1, .dims = {4}};
    return model_build_binary(b, LAYER_BMUL, x, model_build_const(b, &s, "t.k", 1));
}
static void ref_bmul_frozen(const ref_in_t *in, double *y)
{
    const float *k = in->m->buffers + in->m->layers[in->l->in2].w_off;
    double kd[4];
    for (int i = 0; i < 4; i++) kd[i] = k[i];
    ref_binary_forward(BINARY_MUL, &in->l->op.view.bc, in->B, in->x, kd, y);
}
/* x (C, H, W) + table[map] (5, 4): Swin's relative position bias, a table (7, 2) gathered
 * by indices (run_case fills them: (3 j + 1) mod 14, so that elements repeat) */
#define GP_TABLE 14
static int build_gather_param(model_builder_t *b, int x)
{
    const model_shape_t s = {.rank = 2, .dims = {5, 4}}, t = {.rank = 2, .dims = {7, 2}};
    return model_build_binary(b, LAYER_BADD, x, model_build_gather_param(b, &s, &t, "t.table", "t.map"));
}
static void ref_gather_param(const ref_in_t *in, double *y)
{
    const layer_t *g = &in->m->layers[in->l->in2];
    double map[20], bias[20];
    for (int j = 0; j < 20; j++) map[j] = in->m->buffers[g->rm_off + j];
    ref_gather_param_forward(20, GP_TABLE, map, in->params + g->w_off, bias);
    ref_binary_forward(BINARY_ADD, &in->l->op.view.bc, in->B, in->x, bias, y);
}
/* x (C, H, W) / exp(mean over the plane of x) (C, 1, 1): two activations, both batched */
static int build_div(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_DIV, x, model_build_unary(b, LAYER_EXP, model_build_gap(b, x), 0.0f));
}
static void ref_div(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    double *s = malloc((size_t)in->B * l->C * sizeof *s);
    assert_non_null(s);
    ref_gap_forward(in->B, l->C, l->H * l->W, in->x, s);
    for (size_t i = 0; i < (size_t)in->B * l->C; i++) s[i] = exp(s[i]);
    ref_binary_forward(BINARY_DIV, &l->op.view.bc, in->B, in->x, s, y);
    free(s);
}
/* exp(x) (C, H, W) ^ c (C, 1, 1): Pow of a tensor exponent (a positive base: a fractional
 * power of a negative one is NaN), the exponent's gradient too */
static int build_bpow(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_BPOW, model_build_unary(b, LAYER_EXP, x, 0.0f), build_const_of(b, 3, 3, 1, 1));
}
static void ref_bpow(const ref_in_t *in, double *y)
{
    const size_t n = in_count(in);
    double *e = malloc(n * sizeof *e);
    assert_non_null(e);
    for (size_t i = 0; i < n; i++) e[i] = exp(in->x[i]);
    ref_binary_forward(BINARY_POW, &in->l->op.view.bc, in->B, e, const_params(in, in->l->in2), y);
    free(e);
}
/* exp(x) ^ x: two activations, both batched */
static int build_bpow_act(model_builder_t *b, int x)
{
    return model_build_binary(b, LAYER_BPOW, model_build_unary(b, LAYER_EXP, x, 0.0f), x);
}
static void ref_bpow_act(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = pow(exp(in->x[i]), in->x[i]);
}

/* Data movement: x (3, 5, 4) as (5, 12); transposed (W, C, H); every other W from 1 */
static int build_reshape(model_builder_t *b, int x)
{
    const model_shape_t to = {.rank = 2, .dims = {5, 12}};
    return model_build_reshape(b, x, &to);
}
static void ref_reshape(const ref_in_t *in, double *y)
{
    for (size_t i = 0; i < in_count(in); i++) y[i] = in->x[i];
}
static int build_transpose(model_builder_t *b, int x)
{
    static const int perm[3] = {2, 0, 1};
    return model_build_transpose(b, x, perm);
}
static void ref_view(const ref_in_t *in, double *y)
{
    ref_view_forward(&in->l->op.view.bc, in->l->op.view.off, in->B, in->x, y);
}
static int build_slice(model_builder_t *b, int x) { return model_build_slice(b, x, 2, 1, 4, 2); }
/* ShuffleNetV2's channel shuffle of x (4, 5, 4) in 2 groups: (2, 2, 5, 4), the group axes
 * swapped, back to (4, 5, 4); the reference picks channel (c % 2) * 2 + c / 2 */
static int build_shuffle(model_builder_t *b, int x)
{
    static const int perm[4] = {1, 0, 2, 3};
    const model_shape_t g = {.rank = 4, .dims = {2, 2, 5, 4}}, back = {.rank = 3, .dims = {4, 5, 4}};
    return model_build_reshape(b, model_build_transpose(b, model_build_reshape(b, x, &g), perm), &back);
}
static void ref_shuffle(const ref_in_t *in, double *y)
{
    for (int n = 0; n < in->B; n++)
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < 20; k++) y[(n * 4 + c) * 20 + k] = in->x[(n * 4 + (c % 2) * 2 + c / 2) * 20 + k];
}

/* x (3, 5, 4) and its Sigmoid joined along the last axis: (3, 5, 8) */
static int build_concat_w(model_builder_t *b, int x)
{
    return model_build_concat_axis(b, x, model_build_elementwise(b, LAYER_SIGMOID, x, 0.0f), 2);
}
static void ref_concat_w(const ref_in_t *in, double *y)
{
    for (int r = 0; r < in->B * 3 * 5; r++)
        for (int w = 0; w < 8; w++)
            y[r * 8 + w] = w < 4 ? in->x[r * 4 + w] : ref_act(REF_ACT_SIGMOID, 0.0, in->x[r * 4 + w - 4]);
}

/* Reductions of x (3, 5, 4): the mean over the channels and the last axis, kept as 1s
 * (1, 5, 1); the sum over the height, dropped (3, 4) */
static int build_reduce_mean(model_builder_t *b, int x) { return model_build_reduce(b, LAYER_REDUCE_MEAN, x, 5u, 1); }
static void ref_reduce_mean(const ref_in_t *in, double *y)
{
    ref_reduce_forward(in->B, 3, (const int[]){3, 5, 4}, 5u, 1, in->x, y);
}
static int build_reduce_sum(model_builder_t *b, int x) { return model_build_reduce(b, LAYER_REDUCE_SUM, x, 2u, 0); }
static void ref_reduce_sum(const ref_in_t *in, double *y)
{
    ref_reduce_forward(in->B, 3, (const int[]){3, 5, 4}, 2u, 0, in->x, y);
}

/* torch.nn.Linear(4, 6) on x (3, 5, 4): over the last axis, 15 rows a sample, with the
 * bias an Add after a MatMul joins */
static int build_linear(model_builder_t *b, int x)
{
    return model_build_fc_bias(b, model_build_linear(b, x, 6, "t.weight"), "t.bias");
}
static void ref_linear(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_gemm_forward(&l->op.gemm, in->B * 15, in->x, in->params + l->w_off, in->params + l->b_off, y);
}

/* Slice with step -2 of x (3, 5, 4)'s axis 1 from 4 down to the first (end -1): rows 4, 2,
 * 0, picked here by index */
static int build_slice_down(model_builder_t *b, int x) { return model_build_slice(b, x, 1, 4, -1, -2); }
static void ref_slice_down(const ref_in_t *in, double *y)
{
    for (int r = 0; r < in->B * 3; r++)
        for (int j = 0; j < 3; j++)
            for (int w = 0; w < 4; w++) y[(r * 3 + j) * 4 + w] = in->x[(r * 5 + 4 - 2 * j) * 4 + w];
}
/* Softmax of x (3, 5, 4) along the middle axis, log-softmax along the channels: the
 * reference's (rows, n, inner) from the layer's axis */
static void ref_softmax_layer(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    int rows = in->B, inner = 1;
    for (int d = 0; d < l->shape.rank; d++) {
        if (d < l->op.softmax.axis) rows *= l->shape.dims[d];
        if (d > l->op.softmax.axis) inner *= l->shape.dims[d];
    }
    ref_softmax_axis(l->kind == LAYER_LOG_SOFTMAX, rows, l->shape.dims[l->op.softmax.axis], inner, in->x, y);
}
/* x (3, 5, 4) times its transpose (3, 4, 5): attention's scores (3, 5, 5), both inputs
 * reaching x; the reference transposes in->x itself */
static int build_bmm(model_builder_t *b, int x)
{
    static const int perm[3] = {0, 2, 1};
    return model_build_bmm(b, x, model_build_transpose(b, x, perm));
}
static void ref_bmm(const ref_in_t *in, double *y)
{
    const int G = in->B * 3;
    double *t = malloc((size_t)G * 20 * sizeof *t);
    assert_non_null(t);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < 5; i++)
            for (int k = 0; k < 4; k++) t[(size_t)g * 20 + k * 5 + i] = in->x[(size_t)g * 20 + i * 4 + k];
    ref_bmm_forward(G, 5, 4, 5, in->x, t, y);
    free(t);
}
/* x (3, 5, 4) normalised over its last two axes (20 elements per row), eps 1e-5; the
 * weight and bias are the model's (drawn at random by the test) */
static int build_layernorm(model_builder_t *b, int x)
{
    return model_build_layernorm(b, x, 1, 1e-5f, "t.weight", "t.bias");
}
static void ref_layernorm(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_layernorm_forward(in->B * 3, 20, l->op.norm.eps, in->x, in->params + l->w_off, in->params + l->b_off, y);
}
static int build_softmax(model_builder_t *b, int x) { return model_build_softmax(b, LAYER_SOFTMAX, x, 1); }
static int build_log_softmax(model_builder_t *b, int x) { return model_build_softmax(b, LAYER_LOG_SOFTMAX, x, 0); }
static int build_softmax_last(model_builder_t *b, int x) { return model_build_softmax(b, LAYER_SOFTMAX, x, 2); }

/* issue 44's ViT rows. Expand of x (3, 1, 4) to (2, 3, 5, 4): a new leading axis and the
 * height repeated, the backward summing the copies (ref_view_forward reads the walk's
 * stride-0 axes as the definition's repeated element) */
static int build_expand(model_builder_t *b, int x)
{
    const model_shape_t to = {.rank = 4, .dims = {2, 3, 5, 4}};
    return model_build_expand(b, x, &to);
}
/* ViT's class token: a (1, 4) parameter expanded to every sample's (5, 4), added to x
 * (3, 5, 4); the reference adds the parameter itself */
static int build_expand_const(model_builder_t *b, int x)
{
    const model_shape_t to = {.rank = 2, .dims = {5, 4}};
    return model_build_binary(b, LAYER_BADD, x, model_build_expand(b, build_const_of(b, 2, 1, 4, 0), &to));
}
static void ref_expand_const(const ref_in_t *in, double *y)
{
    const double *k = const_params(in, in->m->layers[in->l->in2].in);
    for (size_t i = 0; i < in_count(in); i++) y[i] = in->x[i] + k[i % 4];
}
/* torch's Linear(4, 6) exported as MatMul by a Transpose of its (6, 4) weight */
static int build_linear_out_in(model_builder_t *b, int x)
{
    return model_build_fc_bias(b, model_build_linear_layout(b, x, 6, GEMM_W_OUT_IN, "t.weight"), "t.bias");
}

/* attention's scores (C, H, H) under the causal mask, scale 0.7 */
static int build_causal(model_builder_t *b, int x) { return model_build_causal_softmax(b, x, 0.7f); }
static void ref_causal(const ref_in_t *in, double *y)
{
    const layer_t *l = in->l;
    ref_causal_softmax((size_t)in->B * l->C, l->W, l->op.softmax.scale, in->x, y);
}

/* ---- the cases: one per row of the operator table --------------------------------------- */

typedef struct {
    layer_kind_t kind;
    int C, H, W; /* the input's shape (with B_TEST samples) */
    int (*build)(model_builder_t *b, int x);
    ref_fn ref;
    double tol_fwd, tol_grad;
    double tol_dev; /* on a real GPU; the stand-in device must give the same bits */
    /* the row's layer is one the generator builds before the layer it returns (a
     * constant, read by the binary operator under test) */
    int inner;
} row_case_t;

/* Forward tolerances are test_ops's FWD_TOL (1e-5); gradients against finite differences
 * its FD_TOL class (1e-3 in float); on a GPU test_cuda_parity's per-kind ones. */
static const row_case_t CASES[] = {
    {LAYER_CONV, 4, 7, 6, build_conv, ref_conv, 1e-5, 2e-3, 1e-3, 0},
    {LAYER_MAXPOOL, 3, 7, 6, build_maxpool, ref_maxpool, 1e-6, 1e-3, 0, 0},
    {LAYER_AVGPOOL, 3, 7, 6, build_avgpool, ref_avgpool, 1e-6, 1e-3, 0, 0},
    {LAYER_RELU, 3, 5, 4, build_relu, ref_relu, 0, 1e-3, 0, 0},
    {LAYER_FC, 3, 2, 2, build_fc, ref_fc, 1e-5, 1e-3, 1e-4, 0},
    {LAYER_BN, 3, 4, 4, build_bn, ref_bn, 1e-4, 2e-3, 1e-3, 0},
    {LAYER_GAP, 3, 4, 5, build_gap, ref_gap, 1e-6, 1e-3, 0, 0},
    {LAYER_ADD, 3, 4, 4, build_add, ref_add, 0, 1e-3, 0, 0},
    {LAYER_LEAKY_RELU, 3, 5, 4, build_leaky, ref_leaky, 1e-7, 1e-3, 0, 0},
    {LAYER_SIGMOID, 3, 5, 4, build_sigmoid, ref_sigmoid, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_TANH, 3, 5, 4, build_tanh, ref_tanh, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_CONCAT, 2, 3, 4, build_concat, ref_concat, 0, 1e-3, 0, 0},
    {LAYER_DROPOUT, 3, 5, 4, build_dropout, ref_dropout, 1e-6, 1e-3, 0, 0},
    {LAYER_CLIP, 3, 5, 4, build_clip, ref_clip_all, 0, 1e-3, 0, 0},
    {LAYER_HARDSIGMOID, 3, 5, 4, build_hardsigmoid, ref_hardsigmoid_all, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_HARDSWISH, 3, 5, 4, build_hardswish, ref_hardswish_all, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_MUL, 3, 5, 4, build_mul, ref_mul, 1e-7, 1e-3, 1e-6, 0},
    {LAYER_STOCHASTIC_DEPTH, 3, 5, 4, build_sdepth, ref_sdepth, 1e-6, 1e-3, 0, 0},
    {LAYER_EXP, 3, 5, 4, build_exp, ref_exp, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_NEG, 3, 5, 4, build_neg, ref_neg, 0, 1e-3, 0, 0},
    {LAYER_SQRT, 3, 5, 4, build_sqrt, ref_sqrt, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_RECIPROCAL, 3, 5, 4, build_reciprocal, ref_reciprocal, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_ABS, 3, 5, 4, build_abs, ref_abs, 0, 1e-3, 0, 0},
    {LAYER_POW, 3, 5, 4, build_pow, ref_pow, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_CONST, 3, 5, 4, build_badd, ref_badd, 1e-6, 1e-3, 1e-6, 1},
    {LAYER_BADD, 3, 5, 4, build_badd, ref_badd, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_SUB, 3, 5, 4, build_sub, ref_sub, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_BMUL, 3, 5, 4, build_bmul, ref_bmul, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_DIV, 3, 5, 4, build_div, ref_div, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_RESHAPE, 3, 5, 4, build_reshape, ref_reshape, 0, 1e-3, 0, 0},
    {LAYER_TRANSPOSE, 3, 5, 4, build_transpose, ref_view, 0, 1e-3, 0, 0},
    {LAYER_SLICE, 3, 5, 4, build_slice, ref_view, 0, 1e-3, 0, 0},
    {LAYER_REDUCE_MEAN, 3, 5, 4, build_reduce_mean, ref_reduce_mean, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_REDUCE_SUM, 3, 5, 4, build_reduce_sum, ref_reduce_sum, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_LINEAR, 3, 5, 4, build_linear, ref_linear, 1e-5, 1e-3, 1e-4, 0},
    {LAYER_SOFTMAX, 3, 5, 4, build_softmax, ref_softmax_layer, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_LOG_SOFTMAX, 3, 5, 4, build_log_softmax, ref_softmax_layer, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_BMM, 3, 5, 4, build_bmm, ref_bmm, 1e-6, 1e-3, 1e-5, 0},
    {LAYER_LAYERNORM, 3, 5, 4, build_layernorm, ref_layernorm, 1e-5, 2e-3, 1e-4, 0},
    {LAYER_ERF, 3, 5, 4, build_erf, ref_erf, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_GELU, 3, 5, 4, build_gelu, ref_gelu, 1e-6, 1e-3, 1e-6, 0},
    /* Swin's */
    {LAYER_GATHER_PARAM, 3, 5, 4, build_gather_param, ref_gather_param, 1e-6, 1e-3, 1e-6, 1},
    /* issue 44's ViT rows */
    {LAYER_EXPAND, 3, 1, 4, build_expand, ref_view, 0, 1e-3, 0, 0},
    /* the language models' (LAYER_EMBED: test_gpt) */
    {LAYER_CAUSAL_SOFTMAX, 3, 4, 4, build_causal, ref_causal, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_BPOW, 3, 5, 4, build_bpow, ref_bpow, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_CONV_TRANSPOSE, 4, 7, 6, build_conv_transpose, ref_conv_transpose, 1e-5, 2e-3, 1e-3, 0},
};

/* Further cases of rows whose case above does not reach every path (the shape generator
 * may build layers before the one under test, which is the last it builds). */
static const row_case_t MORE_CASES[] = {
    {LAYER_CONCAT, 3, 5, 4, build_concat_w, ref_concat_w, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_TRANSPOSE, 4, 5, 4, build_shuffle, ref_shuffle, 0, 1e-3, 0, 1},
    {LAYER_CONST, 3, 5, 4, build_bmul_frozen, ref_bmul_frozen, 1e-6, 1e-3, 1e-6, 1},
    {LAYER_MUL, 3, 5, 4, build_mul_bcast, ref_mul_bcast, 1e-6, 1e-3, 1e-5, 0},
    {LAYER_SLICE, 3, 5, 4, build_slice_down, ref_slice_down, 0, 1e-3, 0, 0},
    {LAYER_SOFTMAX, 3, 5, 4, build_softmax_last, ref_softmax_layer, 1e-6, 1e-3, 1e-6, 0},
    {LAYER_EXPAND, 3, 5, 4, build_expand_const, ref_expand_const, 1e-6, 1e-3, 1e-6, 1},
    {LAYER_LINEAR, 3, 5, 4, build_linear_out_in, ref_linear, 1e-5, 1e-3, 1e-4, 0},
    {LAYER_BPOW, 3, 5, 4, build_bpow_act, ref_bpow_act, 1e-6, 1e-3, 1e-6, 0},
};

static const row_case_t *case_of(layer_kind_t k)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        if (CASES[i].kind == k) return &CASES[i];
    return NULL;
}

/* ---- the network around the layer -------------------------------------------------------- */

typedef struct {
    const row_case_t *c;
    int li; /* the layer under test */
} net_ctx_t;

static int build_net(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    net_ctx_t *n = ctx;
    const int x = model_build_elementwise(b, LAYER_LEAKY_RELU, -1, 1.0f); /* the identity */
    n->li = n->c->build(b, x);
    model_build_fc(b, n->li, CLASSES, "head.weight", "head.bias");
    return 0;
}

/* max |a - b| / max |b| (max |a - b| when b is all zeros) */
static double rel_err(const float *a, const double *b, size_t n)
{
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    return s > 0 ? e / s : e;
}

/* f = sum(g * ref(x, params)) of the reference, in double */
static double ref_objective(const ref_in_t *in, ref_fn ref, const double *g, double *y, size_t ny)
{
    ref(in, y);
    double f = 0;
    for (size_t i = 0; i < ny; i++) f += g[i] * y[i];
    return f;
}

/* The gradient got (floats, n of them) of f with respect to v[0..n) (v inside the
 * reference's inputs) against central differences; two-input kinds read x twice, so a
 * step of x moves x2 too (v2: x2's copy of the same values, or NULL). */
static void check_fd(const char *row, const char *what, const ref_in_t *in, ref_fn ref, const double *g, double *y,
                     size_t ny, double *v, double *v2, const float *got, size_t n, double tol)
{
    double *fd = malloc(n * sizeof *fd);
    assert_non_null(fd);
    for (size_t i = 0; i < n; i++) {
        const double keep = v[i], h = FD_H * fmax(1.0, fabs(keep));
        v[i] = keep + h;
        if (v2) v2[i] = v[i];
        const double fp = ref_objective(in, ref, g, y, ny);
        v[i] = keep - h;
        if (v2) v2[i] = v[i];
        const double fm = ref_objective(in, ref, g, y, ny);
        v[i] = keep;
        if (v2) v2[i] = keep;
        fd[i] = (fp - fm) / (2 * h);
    }
    const double e = rel_err(got, fd, n);
    printf("  %-11s %-16s max_rel %.2e (tol %.0e)\n", row, what, e, tol);
    if (!(e <= tol)) fail_msg("row %s: %s against finite differences: max_rel %.3e > %.0e", row, what, e, tol);
    free(fd);
}

static double *to_double(const float *f, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = f[i];
    return d;
}

/* Which device backend the CUDA cases run on: the stand-in unless PACER_CUDA_LIB names
 * another library (set in main). */
static int g_standin;

/* The CUDA case: start (the CPU model's state before its step: weights, batch-norm
 * statistics, dropout seed and step) on the device backend, one training step on the same
 * batch; its loss, logits and parameter gradients against the CPU model m's. */
static void device_case(const row_case_t *c, const char *row, const model_t *start, const model_t *m, const float *x,
                        const int32_t *y, float cpu_loss)
{
    char err[512];
    cuda_model_t *cm = cuda_model_create(start, 0, err, sizeof err);
    if (!cm && !g_standin && strstr(err, "not on the GPU")) {
        /* an empty CUDA row (model_cuda.cu): refused by name, which is this case's answer */
        printf("  %-11s %-16s refused: %s\n", row, "device", err);
        return;
    }
    if (!cm) fail_msg("row %s has no CUDA case: %s", row, err);
    if (cuda_model_upload(cm, start) != 0) fail_msg("row %s: device upload: %s", row, cuda_model_error(cm));
    const float dloss = cuda_model_forward(cm, x, y, B_TEST, 1);
    if (dloss < 0.0f || cuda_model_backward(cm, B_TEST, 1.0f) != 0)
        fail_msg("row %s: device step: %s", row, cuda_model_error(cm));
    float *grads = calloc(m->nparams + MODEL_GRAD_EXTRA, sizeof *grads);
    assert_non_null(grads);
    if (cuda_model_download_grads(cm, grads, 0) != 0)
        fail_msg("row %s: device gradients: %s", row, cuda_model_error(cm));
    const float *logits = cuda_model_logits_host(cm, B_TEST);
    if (!logits) fail_msg("row %s: device logits: %s", row, cuda_model_error(cm));
    const size_t nl = (size_t)B_TEST * CLASSES;
    double *cl = to_double(model_logits(m), nl), *cg = to_double(m->grads, m->nparams), closs = cpu_loss;
    const double tol = g_standin ? 0.0 : c->tol_dev;
    const double el = rel_err(&dloss, &closs, 1), eo = rel_err(logits, cl, nl), eg = rel_err(grads, cg, m->nparams);
    printf("  %-11s %-16s loss %.2e logits %.2e gradients %.2e (tol %.0e, %s)\n", row, "device", el, eo, eg, tol,
           g_standin ? "the stand-in device" : "PACER_CUDA_LIB");
    if (!(el <= tol && eo <= tol && eg <= tol))
        fail_msg("row %s: device against CPU: loss %.3e, logits %.3e, gradients %.3e > %.0e", row, el, eo, eg, tol);
    free(cl);
    free(cg);
    free(grads);
    cuda_model_free(cm);
}

static void run_case(layer_kind_t k, const row_case_t *c);

/* A network with a row the exporter has no operator for: refused, naming the row. */
static void export_refused(const char *row, const model_t *m)
{
    char err[512];
    uint8_t *buf = NULL;
    size_t len = 0;
    if (onnx_export_layers(m, &buf, &len, err, sizeof err) == 0)
        fail_msg("row %s: exported, with no ONNX operator", row);
    if (!strstr(err, row) || !strstr(err, "not exported"))
        fail_msg("row %s: the export's refusal names neither the row nor why: %s", row, err);
    printf("  %-11s %-16s refused: %s\n", row, "export", err);
}

/* The export: the network written from its layer list (onnx_export_layers: the row's
 * onnx_export column) and imported again computes the same evaluation logits: bit for bit,
 * except where opset 13 has no operator of the row's own and the export writes an
 * equivalent of other rounding (hard swish as x * HardSigmoid(x): within 1e-6). */
static void export_case(const char *row, layer_kind_t k, model_t *m, const float *x, const int32_t *y)
{
    char err[512];
    uint8_t *buf = NULL;
    size_t len = 0;
    model_t *back = NULL;
    if (onnx_export_layers(m, &buf, &len, err, sizeof err) != 0) fail_msg("row %s: export: %s", row, err);
    if (onnx_import_buffer(buf, len, "op_table", B_TEST, &back, err, sizeof err) != 0)
        fail_msg("row %s: its export does not import: %s", row, err);
    model_forward(m, x, y, B_TEST, 0);
    model_forward(back, x, y, B_TEST, 0);
    const size_t nl = (size_t)B_TEST * CLASSES;
    double *want = to_double(model_logits(m), nl);
    const double e = rel_err(model_logits(back), want, nl), tol = k == LAYER_HARDSWISH ? 1e-6 : 0.0;
    printf("  %-11s %-16s %zu bytes, imported again: evaluation logits max_rel %.2e (tol %.0e)\n", row, "export", len,
           e, tol);
    if (!(e <= tol)) fail_msg("row %s: exported and imported again, the evaluation logits differ by %.3e", row, e);
    free(want);
    free(buf);
    model_free(back);
}

static void run_row(layer_kind_t k)
{
    const model_op_t *op = &MODEL_OPS[k];
    char row[64];
    snprintf(row, sizeof row, "%d (%s)", (int)k, op->name ? op->name : "no name");
    /* the row is whole */
    if (op->kind != k)
        fail_msg("row %s holds kind %d: a layer kind without its row in model/op_table.c", row, op->kind);
    if (!op->name || !op->onnx_import || !op->onnx_export || !op->infer_shape || !op->flops || !op->forward ||
        !op->backward || op->ninputs < 1 || op->ninputs > 2 || (!op->grad_inputs && k != LAYER_EMBED))
        fail_msg("row %s is incomplete in model/op_table.c", row);
    /* the exporter (model/onnx_export.c's EXPORTS) translates exactly the rows that name an
     * ONNX operator: a row without an export says so by an empty onnx_export */
    /* a PLAIN row is one node of one operator both ways, which the converter's shared
     * translations read from the row alone */
    if (op->onnx_form == MODEL_OP_ONNX_PLAIN &&
        (strcmp(op->onnx_import, op->onnx_export) != 0 || !*op->onnx_import ||
         strspn(op->onnx_import, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != strlen(op->onnx_import)))
        fail_msg("row %s is PLAIN but names '%s' to import and '%s' to export: one ONNX operator both ways", row,
                 op->onnx_import, op->onnx_export);
    if (onnx_export_has_kind(k) != (*op->onnx_export != '\0'))
        fail_msg("row %s: onnx_export '%s' but %s in model/onnx_export.c's EXPORTS", row, op->onnx_export,
                 onnx_export_has_kind(k) ? "a translation" : "no translation");
    /* An embedding reads token ids, which neither take finite differences nor come from the
     * LeakyRelu in front of every case: tests/unit/test_gpt.c checks its kernels against
     * their reference and its gradients inside a GPT against finite differences. */
    if (k == LAYER_EMBED) {
        printf("  %-11s checked by test_gpt (token ids as its input)\n", row);
        return;
    }
    /* the importer's refusals list the row's ONNX operators (generated from the table); a
     * row with none is built in only (the language models' causal softmax) */
    char supported[4096];
    onnx_supported_ops(supported, sizeof supported);
    if (*op->onnx_import && !strstr(supported, op->onnx_import))
        fail_msg("row %s: '%s' is missing from the importer's supported operators (%s)", row, op->onnx_import,
                 supported);
    const row_case_t *c = case_of(k);
    if (!c) fail_msg("row %s has no case in tests/unit/test_op_table.c's CASES", row);
    if (!c->ref) fail_msg("row %s has no reference kernel (kernels/ref)", row);
    run_case(k, c);
}

/* The row's output gradient, copied right after its layer's backward: later gradients may
 * reuse its memory (the plan's dact_off, planned by liveness). */
typedef struct {
    const model_t *m;
    int li;
    float *dout;
    size_t n;
} dout_copy_t;

static void copy_dout(void *ctx, int layer)
{
    dout_copy_t *c = ctx;
    if (layer == c->li) memcpy(c->dout, c->m->dacts + c->m->plan->dact_off[c->li], c->n * sizeof(float));
}

/* Each layer's parameters lie in its row's member of op (model_op_t's params): the
 * union's bytes past that member are as add_layer zeroed them, so no builder, shape
 * inference or planning pass wrote another family's fields. */
static void check_params_owned(const model_t *m, const char *row)
{
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const size_t own = model_op_params_bytes(MODEL_OPS[l->kind].params);
        const unsigned char *b = (const unsigned char *)&l->op;
        for (size_t j = own; j < sizeof l->op; j++)
            if (b[j])
                fail_msg("row %s: layer %d (%s) wrote byte %zu of op beyond its %zu-byte member", row, i,
                         MODEL_OPS[l->kind].name, j, own);
    }
}

/* One case of row k (whole: run_row checked it). */
static void run_case(layer_kind_t k, const row_case_t *c)
{
    const model_op_t *op = &MODEL_OPS[k];
    char row[64];
    snprintf(row, sizeof row, "%s", op->name);

    /* the CPU step */
    char err[512];
    net_ctx_t n = {.c = c, .li = -1};
    model_t *m = NULL;
    if (model_create_custom("op_table", c->C, c->H, c->W, CLASSES, B_TEST, build_net, &n, &m, err, sizeof err) != 0)
        fail_msg("row %s: the shape generator's network is refused: %s", row, err);
    assert_int_equal(n.li, m->nlayers - 2); /* the head after it */
    int has_k = 0;
    for (int i = 1; i <= n.li; i++) has_k |= m->layers[i].kind == k;
    assert_true(c->inner ? has_k : m->layers[n.li].kind == k);
    check_params_owned(m, row);
    model_init_params(m, 4000 + (uint64_t)k);
    m->dropout_seed = 77;
    g_lcg = 1000 + (uint64_t)k;
    const size_t nx = (size_t)B_TEST * c->C * c->H * c->W;
    float *x = malloc(nx * sizeof *x);
    int32_t y[B_TEST];
    assert_non_null(x);
    for (size_t i = 0; i < nx; i++) x[i] = away_from_zero();
    for (int i = 0; i < B_TEST; i++) y[i] = i % CLASSES;
    for (size_t i = 0; i < m->nparams; i++) m->params[i] = away_from_zero() * 0.5f;
    /* a frozen constant's values (a buffer: model_init_params leaves it to the file); a
     * gathered parameter's indices, some repeated (their gradients add) */
    for (int i = 0; i < m->nlayers; i++) {
        const int cnt = m->layers[i].OC * m->layers[i].OH * m->layers[i].OW;
        if (m->layers[i].kind == LAYER_CONST && m->layers[i].op.cnst.frozen)
            for (int j = 0; j < cnt; j++) m->buffers[m->layers[i].w_off + j] = away_from_zero();
        if (m->layers[i].kind == LAYER_GATHER_PARAM)
            for (int j = 0; j < cnt; j++) m->buffers[m->layers[i].rm_off + j] = (float)((3 * j + 1) % GP_TABLE);
    }
    /* the device gets the same starting state (weights, statistics, dropout step) */
    model_t *start = NULL;
    assert_int_equal(model_clone(m, &start, err, sizeof err), 0);
    memcpy(start->params, m->params, m->nparams * sizeof(float));
    memcpy(start->buffers, m->buffers, m->nbuffers * sizeof(float));

    const float loss = model_forward(m, x, y, B_TEST, 1);
    const layer_t *l = &m->layers[n.li];
    const size_t ny = (size_t)B_TEST * l->OC * l->OH * l->OW;
    dout_copy_t dc = {m, n.li, malloc(ny * sizeof(float)), ny};
    assert_non_null(dc.dout);
    m->grad_done = copy_dout;
    m->grad_done_ctx = &dc;
    model_backward(m, x, y, B_TEST, 1.0f);
    m->grad_done = NULL;

    /* the output against the reference */
    double *xin = to_double(m->acts + m->layers[0].out_off, nx), *xin2 = to_double(m->acts + m->layers[0].out_off, nx);
    double *params = to_double(m->params, m->nparams), *yref = malloc(ny * sizeof *yref);
    double *g = to_double(dc.dout, ny);
    free(dc.dout);
    assert_non_null(yref);
    const ref_in_t in = {.m = m, .l = l, .li = n.li, .B = B_TEST, .x = xin, .x2 = xin2, .params = params};
    c->ref(&in, yref);
    if (k == LAYER_STOCHASTIC_DEPTH) {
        /* the case reaches both paths: a whole sample dropped (all zeros), one kept (x / (1 - p)) */
        const size_t per = ny / B_TEST;
        int dropped = 0;
        for (int s = 0; s < B_TEST; s++) {
            int zero = 1;
            for (size_t i = 0; i < per; i++) zero &= yref[s * per + i] == 0.0;
            dropped += zero;
        }
        if (dropped == 0 || dropped == B_TEST)
            fail_msg("row %s: %d of %d samples dropped: the case does not reach both paths", row, dropped, B_TEST);
    }
    const double e = rel_err(m->acts + l->out_off, yref, ny);
    printf("  %-11s %-16s max_rel %.2e (tol %.0e)\n", row, "forward", e, c->tol_fwd);
    if (!(e <= c->tol_fwd)) fail_msg("row %s: forward against the reference: max_rel %.3e > %.0e", row, e, c->tol_fwd);

    /* the gradients against finite differences of the reference */
    check_fd(row, "input gradient", &in, c->ref, g, yref, ny, xin, op->ninputs == 2 ? xin2 : NULL,
             m->dacts + m->plan->dact_off[0], nx, c->tol_grad);
    for (int t = 0; t < m->ntensors; t++) {
        const tensor_info_t *ti = &m->tensors[t];
        if (ti->is_buffer || strncmp(ti->name, "t.", 2) != 0) continue; /* the head's are not this row's */
        check_fd(row, ti->name, &in, c->ref, g, yref, ny, params + ti->offset, NULL, m->grads + ti->offset, ti->count,
                 c->tol_grad);
    }

    device_case(c, row, start, m, x, y, loss);
    /* a row with no ONNX operator (built in only: the language models') is refused by name */
    if (*MODEL_OPS[k].onnx_export) export_case(row, k, m, x, y);
    else export_refused(row, m);
    free(xin);
    free(xin2);
    free(params);
    free(yref);
    free(g);
    free(x);
    model_free(start);
    model_free(m);
}

/* Every row of the table, in order. */
static void test_every_row(void **state)
{
    (void)state;
    for (int k = 0; k < LAYER_KIND_COUNT; k++) run_row((layer_kind_t)k);
}

/* The further cases (MORE_CASES). */
static void test_more_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof MORE_CASES / sizeof MORE_CASES[0]; i++) run_case(MORE_CASES[i].kind, &MORE_CASES[i]);
}

/* The CUDA library's table is checked field by field (cuda_backend_check): its ABI number,
 * then the size of each struct the device model copies, so a library whose layer_t or
 * tensor_info_t has another size is refused naming that struct, whatever its model_t. */
static void test_backend_sizes_apart(void **state)
{
    (void)state;
    const pacer_cuda_backend_t ok = {.abi = PACER_CUDA_ABI,
                                     .model_bytes = sizeof(model_t),
                                     .layer_bytes = sizeof(layer_t),
                                     .tensor_bytes = sizeof(tensor_info_t)};
    char err[512];
    assert_int_equal(cuda_backend_check(&ok, "lib.so", err, sizeof err), 0);
    pacer_cuda_backend_t t = ok;
    t.abi = PACER_CUDA_ABI - 1;
    assert_int_equal(cuda_backend_check(&t, "lib.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "lib.so was built from another version of pacer (backend ABI"));
    t = ok;
    t.layer_bytes += 8; /* a kind's new field */
    assert_int_equal(cuda_backend_check(&t, "lib.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "-byte layer_t;"));
    t = ok;
    t.tensor_bytes -= 4;
    assert_int_equal(cuda_backend_check(&t, "lib.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "-byte tensor_info_t;"));
    t = ok;
    t.model_bytes += 8;
    assert_int_equal(cuda_backend_check(&t, "lib.so", err, sizeof err), -1);
    assert_non_null(strstr(err, "-byte model_t;"));
}

int main(void)
{
    /* the stand-in device unless the caller names a backend (a GPU machine's real one) */
    const char *lib = getenv("PACER_CUDA_LIB");
    if (!lib || !*lib) {
        static char path[1024];
        const char *build = getenv("BUILD");
        snprintf(path, sizeof path, "%s/tests/libpacer_fakecuda.so", build && *build ? build : "build");
        setenv("PACER_CUDA_LIB", path, 1);
        lib = path;
    }
    g_standin = strstr(lib, "fakecuda") != NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_more_cases),
        cmocka_unit_test(test_backend_sizes_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
