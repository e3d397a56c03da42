/* tests/unit/test_cuda_parity.c - the CUDA backend against the CPU reference, tensor by tensor.
 *
 * No silent green. main probes the device (cuda_probe: driver, runtime, a kernel on the
 * GPU). When it is not usable the reason is printed ("no NVIDIA driver: ...", "the NVIDIA
 * driver is too old: ...", "no kernel image for this GPU: ...") and then
 *   - with PACER_REQUIRE_GPU=1 in the environment, or when /dev/nvidia0 exists (a machine
 *     that has a GPU), every device test FAILS with that reason and the program exits
 *     non-zero; the same in a build without CUDA;
 *   - otherwise every device test is skipped (the runner counts them) and the program
 *     exits 0.
 * tests/integration/cuda_require_gpu.sh checks both ways. Under AddressSanitizer (make
 * check-asan) the device is not touched (the driver and ASan's shadow memory do not mix),
 * with its own skip line. Three tests need no device and always run in a CUDA build: the
 * classification of cuDNN statuses (cuDNN 9's NOT_SUPPORTED sub-codes) and of CUDA errors,
 * and that every layer kind has a CUDA row (cuda_model_create refuses none as "not on the
 * GPU"; it answers before touching a device).
 *
 * With a GPU:
 *   - every op of kernels/cuda/ops_cuda.h, forward and backward, against kernels/cpu on the
 *     same random inputs: convolution in several geometries (stride 1/2/3, padding, 1x1,
 *     even kernels, odd sizes, with and without bias, a smaller batch on the same plan; and
 *     the ONNX geometries: groups, depthwise, dilation, rectangular strides, asymmetric
 *     pads), max and average pooling in floor and ceil mode (with ties; and rectangular
 *     windows, asymmetric pads, dilation, count_include_pad both ways), ReLU, LeakyRelu,
 *     sigmoid, tanh, channel concatenation (incl. Concat(x, x)), dropout (the CPU's mask for
 *     the same key, bit for bit), fully connected and ONNX Gemm (both weight layouts, alpha,
 *     beta, no bias), softmax cross-entropy, batch norm (train, eval, backward, incl. a large
 *     mean; and epsilons other than BN_EPS), ReduceSum / ReduceMean on any axes, Softmax and
 *     LogSoftmax along an axis, layer norm (several chunks of rows, input gradient NULL),
 *     the matmul of two activations (incl. one tensor times itself, one gradient buffer),
 *     global average pooling, the option-A residual add, SGD (plain, momentum, Nesterov,
 *     weight decay, grad_scale from host and device), norms and clipping. The gradient
 *     conventions are checked as on the CPU: dinp is prefilled (+=), parameter gradients
 *     start as NaN (=); an input gradient is compared as what was added to the prefill,
 *     relative to the largest such increment (compare_dev_acc), so the prefill does not
 *     inflate the reference its tolerance is relative to.
 *   - a training step of each model (mlp, lenet5, cifar10_quick, resnet20, a network of
 *     every layer kind and geometry only imported graphs have, dropout included, one of the
 *     N-D rows, an attention block of the transformers' rows, and the built-in GPT with
 *     its loss over every position) on both backends
 *     from the same weights and batch: loss, logits and batch-norm running statistics;
 *     every parameter gradient by name from model->tensors[] (twice, see below); the weights
 *     and momentum after an SGD step with clipping; a second step at a smaller batch as the
 *     worker runs it (worker/train.c): host buffers page-locked, weights uploaded,
 *     cuda_model_train_step into the host's gradient buffer, the Nesterov SGD step on the
 *     device, the batch-norm statistics downloaded; a third batch size and back (cached
 *     convolution choices); an evaluation forward.
 *   - the same run of imported networks (test_model_zoo): every .onnx file of the folder
 *     $PACER_GPU_ZOO names (bench/gpu_zoo_export.py writes torchvision's mobilenet_v2 and
 *     efficientnet_b0 and the small ViT, ConvNeXt and Swin of make test's imports), at
 *     batches 16, 12 and 6, compared as whole vectors (g_whole_network: elements that are
 *     zero in exact arithmetic hold rounding noise on both backends); without the variable
 *     the case checks nothing and says so.
 *
 * Error measure, printed for every tensor: max_abs = max |gpu - cpu|, and
 * max_rel = max_abs / max |cpu| (relative to the tensor's largest magnitude, so entries
 * that cancel to ~0 are not divided by ~0). A tensor passes when max_rel <= its tolerance:
 *   TOL_EXACT      0     kernels written to round exactly like the CPU loops (pooling,
 *                        ReLU, residual add, GAP, SGD): same operations in the same
 *                        order, no FMA contraction (__fadd_rn and friends);
 *   TOL_CONV_FWD   1e-5  cuDNN (FMA math, no TF32) vs im2col + OpenBLAS: summation order;
 *   TOL_CONV_WINO  1e-4  the same where the CPU runs Winograd's F(4x4, 3x3)
 *                        (conv2d_winograd; test_ops's WINO_TOL), 3e-4 for its gradients
 *                        (TOL_CONV_WINO_GRAD; WINO_GRAD_TOL);
 *   TOL_CONV_GRAD  1e-4  the same over B*OH*OW-term sums;
 *   TOL_FC         1e-5  cuBLAS vs OpenBLAS SGEMM;
 *   TOL_SOFTMAX    1e-6  expf/log of CUDA vs glibc (an ulp);
 *   TOL_ACT        1e-6  sigmoid and tanh forward: expf/tanhf of CUDA vs glibc (CUDA
 *                        promises 2 ulp; relative to the largest output, ~1, that is
 *                        2.4e-7); their backward runs on the CPU's output and is exact;
 *   TOL_BN         1e-4  cuDNN accumulates statistics in float, the CPU in double;
 *   TOL_NORM       1e-6  double sums in another order, then float;
 *   TOL_LN         1e-6  layer norm's output and input gradient: the CPU's double
 *                        expressions, no FMA, its sums in eight lanes and the device's in
 *                        order; an ulp for the device's double arithmetic;
 *   TOL_LN_PARAM   1e-5  layer norm's weight and bias gradients: the device sums the rows
 *                        in double by chunks, the CPU in a float running sum;
 *   TOL_SOFTMAX    also Softmax / LogSoftmax on an axis (the device in double, the CPU in
 *                        float with scalar_fn.h's exp: a few ulps of outputs at most 1);
 *   TOL_FC         also the matmul of two activations (cuBLAS strided-batched SGEMM);
 *   TOL_EXACT      also ReduceSum / ReduceMean (the CPU's float sums in its order);
 * Model step (errors accumulate through up to 20 layers):
 *   TOL_LOSS 1e-5, TOL_LOGITS 1e-4, TOL_BUFFERS 1e-4 (bn running statistics),
 *   TOL_GRAD_CONV 1e-3, TOL_GRAD_FC 1e-4 (also Linear's and constants'), TOL_GRAD_BN 1e-3,
 *   TOL_GRAD_LN 1e-4 (gradients of the backward pass
 *   run on the host's forward state, see below). The weights after the SGD step and the
 *   momentum buffer get their tensor's gradient tolerance; for the weights it is measured
 *   on the update w_new - w_old (relative to the largest update, plus two ulps of the
 *   weight: see compare_update), since relative to the weights any update would pass.
 *   TOL_E2E_GRAD 5e-2: gradients end to end, each backend on its own forward. A ReLU input
 *   within ~1e-6 of zero can land on different sides on the two backends; its gate then
 *   passes a full-size gradient on one backend only, which moves the weight gradient of
 *   the layer below by about one of its B*OH*OW terms (~1e-3 relative at these batch
 *   sizes; resnet20 has millions of ReLU inputs per step, so a few such flips are
 *   expected). The tight gradient check therefore runs the device backward on the host's
 *   activations (cuda_model_upload_forward_state): same gates, same argmax, and only
 *   rounding differences remain.
 *
 * Inputs come from a 64-bit LCG, so every run is the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "gpt.h"
#include "model.h"
#include "onnx_import.h"
#include "ops.h"
#ifdef PACER_WITH_CUDA
#include "../../kernels/cuda/ops_cuda.h"
#endif

/* An X-macro list, laid out by hand. */
/* clang-format off */
#define PARITY_TESTS(X)                                                                   \
    X(test_conv) X(test_conv_general) X(test_maxpool) X(test_avgpool) X(test_pool_general) \
    X(test_activations) X(test_concat) X(test_dropout) X(test_fc) X(test_gemm) \
    X(test_stochastic_depth) X(test_binary) X(test_view) X(test_reduce)                   \
    X(test_softmax_axis) X(test_layernorm) X(test_bmm)                                    \
    X(test_softmax_xent) X(test_batchnorm) X(test_batchnorm_eps) X(test_gap) X(test_residual) \
    X(test_sgd) X(test_adamw) X(test_norm_clip) X(test_model_mlp) X(test_model_lenet5)    \
    X(test_model_cifar10_quick) X(test_model_resnet20) X(test_model_onnx_layers) \
    X(test_model_nd_rows) X(test_model_attention) X(test_model_gpt) \
    X(test_gather_param) X(test_expand) X(test_seq) X(test_model_zoo)
/* clang-format on */
/* Tests that need no device: they run in every CUDA build. */
#define HOST_TESTS(X) X(test_cudnn_status_categories) X(test_cuda_error_classes) X(test_cuda_rows_complete)

/* Why there is no usable device (empty when there is one), and whether that is a failure. */
static char g_no_gpu[1024];
static int g_gpu_required;

/* A device test without a device: the reason, as a failure or as a skip. */
static void no_device(void)
{
    if (g_gpu_required) fail_msg("a GPU is required here but CUDA is not usable: %s", g_no_gpu);
    skip();
}

#ifndef PACER_WITH_CUDA

#define STUB_TEST(name)            \
    static void name(void **state) \
    {                              \
        (void)state;               \
        no_device();               \
    }
PARITY_TESTS(STUB_TEST)
#define STUB_HOST_TEST(name)       \
    static void name(void **state) \
    {                              \
        (void)state;               \
        skip();                    \
    }
HOST_TESTS(STUB_HOST_TEST)
static int g_have_gpu = 0;

#else /* PACER_WITH_CUDA */

#include <cuda_runtime_api.h> /* error codes for the classification tests */
#include <cudnn.h>

#define TOL_EXACT 0.0
#define TOL_CONV_FWD 1e-5
#define TOL_CONV_WINO 1e-4
#define TOL_CONV_WINO_GRAD 3e-4
#define TOL_CONV_GRAD 1e-4
#define TOL_FC 1e-5
#define TOL_SOFTMAX 1e-6
#define TOL_ACT 1e-6
#define TOL_BN 1e-4
#define TOL_NORM 1e-6
#define TOL_LN 1e-6
#define TOL_LN_PARAM 1e-5
#define TOL_GRAD_LN 1e-4
#define TOL_LOSS 1e-5
#define TOL_LOGITS 1e-4
#define TOL_BUFFERS 1e-4
#define TOL_GRAD_CONV 1e-3
#define TOL_GRAD_FC 1e-4
#define TOL_GRAD_BN 1e-3
#define TOL_E2E_GRAD 5e-2
#define PREFILL 0.5f

static int g_have_gpu;
static int g_device;
static cuda_ctx_t *g_ctx;
static int g_failures;    /* tensors out of tolerance in the current test */
static double g_worst[2]; /* largest max_rel seen: [0] tight checks, [1] end to end */

/* ---- helpers -------------------------------------------------------------------- */

typedef struct {
    uint64_t s;
} lcg_t;

static uint32_t lcg_next(lcg_t *r)
{
    r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(r->s >> 32);
}

static float lcg_unif(lcg_t *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)(lcg_next(r) >> 8) * (1.0f / 16777216.0f);
}

static void fill(lcg_t *r, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) x[i] = lcg_unif(r, lo, hi);
}

static void fill_const(float *x, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) x[i] = v;
}

static float *halloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(p);
    return p;
}

static void dfree_all(void);

static void need_gpu(void)
{
    if (!g_have_gpu) no_device();
    if (!g_ctx) fail_msg("CUDA device visible but the context could not be created");
    g_failures = 0;
    dfree_all(); /* buffers a failed test left behind */
}

static void check_rc(int rc, const char *what)
{
    if (rc != 0) fail_msg("%s: %s", what, cuda_ctx_error(g_ctx));
}

/* Device buffers of the current test, freed by dfree_all. */
#define MAX_DBUF 64
static void *g_dbuf[MAX_DBUF];
static int g_ndbuf;

static void *dalloc_bytes(size_t bytes)
{
    void *p = NULL;
    assert_true(g_ndbuf < MAX_DBUF);
    check_rc(cuda_malloc(g_ctx, &p, bytes), "cuda_malloc");
    g_dbuf[g_ndbuf++] = p;
    return p;
}

static float *dalloc(size_t n) { return dalloc_bytes((n ? n : 1) * sizeof(float)); }

static float *dcopy(const float *h, size_t n)
{
    float *d = dalloc(n);
    check_rc(cuda_upload(g_ctx, d, h, n * sizeof(float)), "upload");
    return d;
}

static int32_t *dcopy_i32(const int32_t *h, size_t n)
{
    int32_t *d = dalloc_bytes((n ? n : 1) * sizeof(int32_t));
    check_rc(cuda_upload(g_ctx, d, h, n * sizeof(int32_t)), "upload");
    return d;
}

static void upload(float *d, const float *h, size_t n)
{
    check_rc(cuda_upload(g_ctx, d, h, n * sizeof(float)), "upload");
}

/* Waits for the stream, then copies n floats down. */
static void download(float *h, const float *d, size_t n)
{
    check_rc(cuda_ctx_sync(g_ctx), "kernel");
    check_rc(cuda_download(g_ctx, h, d, n * sizeof(float)), "download");
}

/* Host buffers of the current test (hbuf), freed with the device ones by dfree_all. */
static float *g_hbuf[MAX_DBUF];
static int g_nhbuf;

static float *hbuf(size_t n)
{
    assert_true(g_nhbuf < MAX_DBUF);
    return g_hbuf[g_nhbuf++] = halloc(n);
}

static void dfree_all(void)
{
    for (int i = 0; i < g_ndbuf; i++) cuda_free(g_dbuf[i]);
    g_ndbuf = 0;
    for (int i = 0; i < g_nhbuf; i++) free(g_hbuf[i]);
    g_nhbuf = 0;
}

/* Compares one tensor, prints its errors and counts a failure (the test fails at its end,
 * after every tensor has been printed). e2e selects which worst-case slot it feeds. */
static void compare_ex(const char *name, const float *gpu, const float *cpu, size_t n, double tol, int e2e)
{
    double max_abs = 0.0, max_ref = 0.0;
    size_t nan_mismatch = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = gpu[i], b = cpu[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b)) nan_mismatch++;
            continue;
        }
        const double e = fabs(a - b);
        if (e > max_abs) {
            max_abs = e;
            worst = i;
        }
        if (fabs(b) > max_ref) max_ref = fabs(b);
    }
    const double rel = max_ref > 0.0 ? max_abs / max_ref : max_abs;
    const int ok = nan_mismatch == 0 && rel <= tol;
    if (rel > g_worst[e2e]) g_worst[e2e] = rel;
    printf("  %-34s n=%-8zu max_abs=%9.3e max_rel=%9.3e tol=%7.1e %s", name, n, max_abs, rel, tol, ok ? "ok" : "FAIL");
    if (!ok)
        printf(" (worst at %zu: gpu %.9g cpu %.9g; NaN mismatches %zu)", worst, n ? gpu[worst] : 0.0,
               n ? cpu[worst] : 0.0, nan_mismatch);
    printf("\n");
    if (!ok) g_failures++;
}

static void compare(const char *name, const float *gpu, const float *cpu, size_t n, double tol)
{
    compare_ex(name, gpu, cpu, n, tol, 0);
}

/* Downloads d (n floats) and compares it with cpu. */
static void compare_dev(const char *name, const float *d, const float *cpu, size_t n, double tol)
{
    float *h = halloc(n);
    download(h, d, n);
    compare(name, h, cpu, n, tol);
    free(h);
}

/* An input gradient (the += convention): what each backend added to the prefill, compared
 * relative to the largest CPU increment. Relative to max |prefill + increment| a prefill of
 * 0.5 would loosen every tolerance by the ratio of the prefill to the increments. Each sum
 * was rounded once at the magnitude of the prefill, so one ulp of it is allowed on top
 * (not for the exact kernels, which must agree bit for bit). */
static void compare_dev_acc(const char *name, const float *d, const float *cpu, size_t n, float prefill, double tol)
{
    float *h = halloc(n);
    download(h, d, n);
    double max_abs = 0.0, max_inc = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)cpu[i] - prefill) > max_inc) max_inc = fabs((double)cpu[i] - prefill);
    size_t bad = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)h[i] - cpu[i]);
        const double ulp = (double)nextafterf(fabsf(cpu[i]), INFINITY) - fabsf(cpu[i]);
        const double allowed = tol * max_inc + (tol > 0.0 ? ulp : 0.0);
        if (!(e <= allowed)) {
            if (!bad || e > fabs((double)h[worst] - cpu[worst])) worst = i;
            bad++;
        }
        if (e > max_abs) max_abs = e;
    }
    const double rel = max_inc > 0.0 ? max_abs / max_inc : max_abs;
    if (!bad && rel > g_worst[0]) g_worst[0] = rel;
    printf("  %-34s n=%-8zu max_abs=%9.3e max_rel=%9.3e tol=%7.1e %s", name, n, max_abs, rel, tol, bad ? "FAIL" : "ok");
    if (bad)
        printf(" (%zu elements beyond tol*max|increment|; worst at %zu: gpu %.9g cpu %.9g, prefill %g)", bad, worst,
               h[worst], cpu[worst], prefill);
    printf(" [increments up to %.3e]\n", max_inc);
    if (bad) g_failures++;
    free(h);
}

/* Weights after an update step: the updates (w_new - w_old, exact in float since w_new is
 * close to w_old) are compared at tol relative to the largest CPU update, plus two ulps of
 * the stored weight, the precision below which the two backends' weights cannot agree even
 * when their updates differ by less. (Relative to the weights themselves nearly any update
 * would pass; relative to the update alone, rounding the weight would fail it.) */
static void compare_update(const char *name, const float *gpu, const float *cpu, const float *old, size_t n, double tol)
{
    double max_abs = 0.0, max_upd = 0.0, worst_excess = 0.0;
    size_t bad = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double u = fabs((double)cpu[i] - old[i]);
        if (u > max_upd) max_upd = u;
    }
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)gpu[i] - cpu[i]);
        const double ulp = (double)nextafterf(fabsf(cpu[i]), INFINITY) - fabsf(cpu[i]);
        const double allowed = tol * max_upd + 2.0 * ulp;
        if (e > max_abs) max_abs = e;
        if (!(e <= allowed)) {
            bad++;
            if (e - allowed > worst_excess || bad == 1) {
                worst_excess = e - allowed;
                worst = i;
            }
        }
    }
    const double rel = max_upd > 0.0 ? max_abs / max_upd : max_abs;
    if (!bad && rel > g_worst[0]) g_worst[0] = rel;
    printf("  %-34s n=%-8zu max_abs=%9.3e max_rel=%9.3e tol=%7.1e %s", name, n, max_abs, rel, tol, bad ? "FAIL" : "ok");
    if (bad)
        printf(" (%zu elements beyond tol*max|update| + 2 ulp; worst at %zu: gpu %.9g cpu %.9g old %.9g)", bad, worst,
               gpu[worst], cpu[worst], old[worst]);
    printf("\n");
    if (bad) g_failures++;
}

static void compare_scalar(const char *name, float gpu, float cpu, double tol) { compare(name, &gpu, &cpu, 1, tol); }

static void end_test(void)
{
    dfree_all();
    if (g_failures) fail_msg("%d tensor(s) out of tolerance (see FAIL lines above)", g_failures);
}

/* ---- convolution ---------------------------------------------------------------- */

typedef struct {
    int B, C, H, W, OC, K, stride, pad, bias;
} conv_case_t;

/* One convolution of any geometry on both backends: forward, backward (dinp +=, parameter
 * gradients =), dinp NULL, and a smaller batch on the same plan. */
static void conv_parity(const char *tag, const conv2d_desc_t *dp, int B, int bias, lcg_t *r)
{
    conv2d_desc_t d = *dp;
    char name[128];
    printf("conv %s: B=%d C=%d %dx%d OC=%d %dx%d stride %dx%d pads t%d l%d b%d r%d dilation %dx%d groups %d bias=%d -> "
           "%dx%d\n",
           tag, B, d.C, d.H, d.W, d.OC, d.KH, d.KW, d.sH, d.sW, d.pad_t, d.pad_l, d.pad_b, d.pad_r, d.dH, d.dW,
           d.groups, bias, d.OH, d.OW);
    const size_t nin = (size_t)B * d.C * d.H * d.W, nw = (size_t)d.OC * (d.C / d.groups) * d.KH * d.KW;
    const size_t nout = (size_t)B * d.OC * d.OH * d.OW;
    float *x = halloc(nin), *w = halloc(nw), *b = halloc(d.OC), *g = halloc(nout);
    float *out = halloc(nout), *dx = halloc(nin), *dw = halloc(nw), *db = halloc(d.OC);
    float *ws = halloc(conv2d_workspace(&d, B));
    fill(r, x, nin, -1, 1);
    fill(r, w, nw, -0.3f, 0.3f);
    fill(r, b, d.OC, -0.5f, 0.5f);
    fill(r, g, nout, -1, 1);
    fill_const(dx, nin, PREFILL);
    fill_const(dw, nw, NAN);
    fill_const(db, d.OC, NAN);
    /* device copies first: dinp prefilled (+=), parameter gradients NaN (=) */
    float *d_x = dcopy(x, nin), *d_w = dcopy(w, nw), *d_b = dcopy(b, d.OC), *d_g = dcopy(g, nout);
    float *d_out = dalloc(nout), *d_dx = dcopy(dx, nin), *d_dw = dcopy(dw, nw), *d_db = dcopy(db, d.OC);
    conv2d_forward(&d, B, x, w, bias ? b : NULL, out, ws);
    conv2d_backward(&d, B, x, w, g, dx, dw, bias ? db : NULL, ws);

    cuda_conv_plan_t *plan = NULL;
    check_rc(cuda_conv2d_plan_create(g_ctx, &d, B, 0, &plan), "plan");
    const size_t wsb = cuda_conv2d_plan_workspace(plan);
    void *dws = dalloc_bytes(wsb ? wsb : 4);
    check_rc(cuda_conv2d_forward(g_ctx, plan, B, d_x, d_w, bias ? d_b : NULL, d_out, dws, wsb), "conv fwd");
    check_rc(cuda_conv2d_backward(g_ctx, plan, B, d_x, d_w, d_g, d_dx, d_dw, bias ? d_db : NULL, dws, wsb), "conv bwd");
    snprintf(name, sizeof name, "conv%s.out", tag);
    const double tol_fwd = conv2d_winograd(&d, B) ? TOL_CONV_WINO : TOL_CONV_FWD;
    const double tol_grad = conv2d_winograd(&d, B) ? TOL_CONV_WINO_GRAD : TOL_CONV_GRAD;
    compare_dev(name, d_out, out, nout, tol_fwd);
    snprintf(name, sizeof name, "conv%s.dinp (+=)", tag);
    compare_dev_acc(name, d_dx, dx, nin, PREFILL, tol_grad);
    snprintf(name, sizeof name, "conv%s.dweight (=)", tag);
    compare_dev(name, d_dw, dw, nw, tol_grad);
    if (bias) {
        snprintf(name, sizeof name, "conv%s.dbias (=)", tag);
        compare_dev(name, d_db, db, d.OC, TOL_CONV_GRAD);
    }

    /* dinp NULL: weight gradient only */
    fill_const(dw, nw, NAN);
    upload(d_dw, dw, nw);
    conv2d_backward(&d, B, x, w, g, NULL, dw, NULL, ws);
    check_rc(cuda_conv2d_backward(g_ctx, plan, B, d_x, d_w, d_g, NULL, d_dw, NULL, dws, wsb), "conv bwd NULL");
    snprintf(name, sizeof name, "conv%s.dweight (dinp NULL)", tag);
    compare_dev(name, d_dw, dw, nw, tol_grad);

    /* a smaller batch on the same plan re-picks algorithms within the same workspace */
    if (B > 1) {
        const int Bs = B - 1;
        conv2d_forward(&d, Bs, x, w, bias ? b : NULL, out, ws);
        check_rc(cuda_conv2d_forward(g_ctx, plan, Bs, d_x, d_w, bias ? d_b : NULL, d_out, dws, wsb),
                 "conv fwd smaller batch");
        snprintf(name, sizeof name, "conv%s.out (B=%d)", tag, Bs);
        compare_dev(name, d_out, out, (size_t)Bs * d.OC * d.OH * d.OW, tol_fwd);
    }
    cuda_conv2d_plan_free(plan);
    free(x);
    free(w);
    free(b);
    free(g);
    free(out);
    free(dx);
    free(dw);
    free(db);
    free(ws);
    dfree_all();
}

static void test_conv(void **state)
{
    (void)state;
    need_gpu();
    static const conv_case_t cases[] = {
        {4, 3, 32, 32, 16, 3, 1, 1, 0},  /* resnet20 stem */
        {4, 16, 32, 32, 32, 3, 2, 1, 0}, /* resnet20 downsampling conv */
        {5, 1, 28, 28, 6, 5, 1, 2, 1},   /* lenet5 conv1 */
        {5, 6, 14, 14, 16, 5, 1, 0, 1},  /* lenet5 conv2 */
        {3, 32, 16, 16, 32, 5, 1, 2, 1}, /* cifar10_quick conv2 */
        {2, 3, 9, 7, 5, 3, 2, 0, 1},     /* odd sizes, stride 2, no padding */
        {2, 4, 8, 8, 6, 1, 1, 0, 1},     /* 1x1 */
        {3, 5, 11, 13, 7, 4, 3, 2, 1},   /* even kernel, stride 3 */
    };
    lcg_t r = {11};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const conv_case_t *c = &cases[ci];
        conv2d_desc_t d;
        assert_int_equal(conv2d_init(&d, c->C, c->H, c->W, c->OC, c->K, c->K, c->stride, c->pad), 0);
        char tag[16];
        snprintf(tag, sizeof tag, "%zu", ci);
        conv_parity(tag, &d, c->B, c->bias, &r);
    }
    end_test();
}

/* The geometries ONNX graphs bring (conv2d_setup): groups, depthwise (cuDNN's group count),
 * dilation, rectangular strides, and asymmetric pads (a padded copy of the input on the
 * device, conv.cu). */
static void test_conv_general(void **state)
{
    (void)state;
    need_gpu();
#define G(C_, H_, W_, OC_, KH_, KW_, SH, SW, PT, PL, PB, PR, DH, DW, GR)                                          \
    {                                                                                                             \
        .C = C_, .H = H_, .W = W_, .OC = OC_, .KH = KH_, .KW = KW_, .sH = SH, .sW = SW, .pad_t = PT, .pad_l = PL, \
        .pad_b = PB, .pad_r = PR, .dH = DH, .dW = DW, .groups = GR                                                \
    }
    static const struct {
        const char *tag;
        int B;
        conv2d_desc_t d;
        int bias;
    } cases[] = {
        {"g-groups2", 3, G(8, 12, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2), 1},
        {"g-groups4-s2", 3, G(16, 16, 16, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4), 0},
        {"g-depthwise", 4, G(16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16), 1},
        {"g-depthwise-x2-s2", 3, G(8, 15, 15, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8), 1},
        {"g-dilated-d2", 3, G(4, 13, 12, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1), 1},
        {"g-dilated-d23-s2", 2, G(3, 15, 14, 5, 3, 3, 2, 2, 1, 2, 1, 2, 2, 3, 1), 1},
        {"g-asym-same-upper-2x2", 3, G(3, 10, 9, 4, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 1), 1},
        {"g-asym-same-upper-s2", 3, G(4, 16, 16, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1), 0},
        {"g-asym-t2l1b1r2", 2, G(2, 9, 8, 3, 4, 4, 1, 1, 2, 1, 1, 2, 1, 1, 1), 1},
        {"g-rect-stride-12", 3, G(3, 9, 13, 4, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 1), 1},
        {"g-rect-stride-23-3x2", 2, G(3, 11, 13, 2, 3, 2, 2, 3, 1, 0, 1, 0, 1, 1, 1), 1},
        {"g-depthwise-asym-dilated", 2, G(4, 11, 12, 4, 3, 3, 1, 2, 0, 1, 2, 1, 2, 1, 4), 0},
        /* sequences (C, L) as the importer runs them: images (C, L, 1), kernels (K, 1) */
        {"g-1d-k3-s2-p12", 3, G(3, 10, 1, 4, 3, 1, 2, 1, 1, 0, 2, 0, 1, 1, 1), 1},
        {"g-1d-k3-d2-groups2", 2, G(4, 12, 1, 6, 3, 1, 1, 1, 2, 0, 2, 0, 2, 1, 2), 0},
        {"g-1d-depthwise-k5-L300", 2, G(8, 300, 1, 8, 5, 1, 1, 1, 2, 0, 2, 0, 1, 1, 8), 1},
    };
#undef G
    lcg_t r = {12};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        conv2d_desc_t d = cases[ci].d;
        assert_int_equal(conv2d_setup(&d), 0);
        conv_parity(cases[ci].tag, &d, cases[ci].B, cases[ci].bias, &r);
    }
    end_test();
}

/* ---- pooling -------------------------------------------------------------------- */

typedef struct {
    int B, C, H, W, K, stride, pad, ceil_mode;
} pool_case_t;

static const pool_case_t POOL_CASES[] = {
    {3, 3, 28, 28, 2, 2, 0, 0},                           /* lenet5 */
    {2, 4, 32, 32, 3, 2, 0, 1},                           /* cifar10_quick: overlapping windows, ceil */
    {2, 4, 16, 16, 3, 2, 0, 1}, {2, 3, 7, 9, 3, 2, 1, 0}, /* padding */
    {2, 3, 7, 9, 3, 2, 1, 1},                             /* padding + ceil */
    {2, 2, 6, 6, 3, 3, 0, 1},                             /* ceil, K == stride */
    {2, 2, 5, 5, 2, 2, 0, 1},                             /* ceil: a partial window at the edge */
    {2, 2, 8, 8, 3, 1, 1, 0},                             /* stride 1, heavy overlap */
};

/* Uniform values, or in odd cases quantized to a few levels with zeros (like a ReLU
 * output) so that windows hold ties and the first-maximum rule matters. */
static void pool_input(lcg_t *r, float *x, size_t n, int ties)
{
    for (size_t i = 0; i < n; i++) {
        float v = lcg_unif(r, -1, 1);
        if (ties) v = v < 0 ? 0.0f : floorf(v * 4.0f) / 4.0f;
        x[i] = v;
    }
}

/* One pooling of any geometry on both backends (exact: same operations in the same order). */
static void pool_parity(const char *kind, const char *tag, const pool2d_desc_t *dp, int B, int is_max, int ties,
                        lcg_t *r)
{
    const pool2d_desc_t d = *dp;
    char name[128];
    printf("%s %s: B=%d C=%d %dx%d window %dx%d stride %dx%d pads t%d l%d b%d r%d dilation %dx%d ceil=%d cip=%d -> "
           "%dx%d\n",
           kind, tag, B, d.C, d.H, d.W, d.KH, d.KW, d.sH, d.sW, d.pad_t, d.pad_l, d.pad_b, d.pad_r, d.dH, d.dW,
           d.ceil_mode, d.count_include_pad, d.OH, d.OW);
    const size_t nin = (size_t)B * d.C * d.H * d.W, nout = (size_t)B * d.C * d.OH * d.OW;
    float *x = halloc(nin), *out = halloc(nout), *g = halloc(nout), *dx = halloc(nin);
    int32_t *am = malloc(nout * sizeof(int32_t)), *am_g = malloc(nout * sizeof(int32_t));
    assert_non_null(am);
    assert_non_null(am_g);
    pool_input(r, x, nin, ties);
    fill(r, g, nout, -1, 1);
    fill_const(dx, nin, PREFILL);
    float *d_x = dcopy(x, nin), *d_g = dcopy(g, nout), *d_out = dalloc(nout), *d_dx = dcopy(dx, nin);
    int32_t *d_am = dalloc_bytes(nout * sizeof(int32_t));
    if (is_max) {
        maxpool2d_forward(&d, B, x, out, am);
        maxpool2d_backward(&d, B, g, am, dx);
        check_rc(cuda_maxpool2d_forward(g_ctx, &d, B, d_x, d_out, d_am), "maxpool fwd");
        check_rc(cuda_maxpool2d_backward(g_ctx, &d, B, d_g, d_am, d_dx), "maxpool bwd");
        check_rc(cuda_ctx_sync(g_ctx), "maxpool");
        check_rc(cuda_download(g_ctx, am_g, d_am, nout * sizeof(int32_t)), "download argmax");
        size_t diff = 0;
        for (size_t i = 0; i < nout; i++) diff += am[i] != am_g[i];
        printf("  %-34s n=%-8zu mismatches=%zu (must be 0) %s\n", "argmax", nout, diff, diff ? "FAIL" : "ok");
        if (diff) g_failures++;
    } else {
        avgpool2d_forward(&d, B, x, out);
        avgpool2d_backward(&d, B, g, dx);
        check_rc(cuda_avgpool2d_forward(g_ctx, &d, B, d_x, d_out), "avgpool fwd");
        check_rc(cuda_avgpool2d_backward(g_ctx, &d, B, d_g, d_dx), "avgpool bwd");
    }
    snprintf(name, sizeof name, "%s%s.out", kind, tag);
    compare_dev(name, d_out, out, nout, TOL_EXACT);
    snprintf(name, sizeof name, "%s%s.dinp (+=)", kind, tag);
    compare_dev_acc(name, d_dx, dx, nin, PREFILL, TOL_EXACT);
    free(x);
    free(out);
    free(g);
    free(dx);
    free(am);
    free(am_g);
    dfree_all();
}

static void pool_test(int is_max)
{
    lcg_t r = {is_max ? 21u : 22u};
    const char *kind = is_max ? "maxpool" : "avgpool";
    for (size_t ci = 0; ci < sizeof POOL_CASES / sizeof POOL_CASES[0]; ci++) {
        const pool_case_t *c = &POOL_CASES[ci];
        pool2d_desc_t d;
        assert_int_equal(pool2d_init(&d, c->C, c->H, c->W, c->K, c->stride, c->pad, c->ceil_mode), 0);
        char tag[16];
        snprintf(tag, sizeof tag, "%zu", ci);
        pool_parity(kind, tag, &d, c->B, is_max, (int)(ci & 1), &r);
    }
    end_test();
}

static void test_maxpool(void **state)
{
    (void)state;
    need_gpu();
    pool_test(1);
}

static void test_avgpool(void **state)
{
    (void)state;
    need_gpu();
    pool_test(0);
}

/* The geometries ONNX graphs bring (pool2d_setup): rectangular windows and strides,
 * asymmetric pads, dilation, ceil mode; averages with count_include_pad both ways. */
static void test_pool_general(void **state)
{
    (void)state;
    need_gpu();
#define PG(C_, H_, W_, KH_, KW_, SH, SW, PT, PL, PB, PR, DH, DW, CEIL)                                              \
    {                                                                                                               \
        .C = C_, .H = H_, .W = W_, .KH = KH_, .KW = KW_, .sH = SH, .sW = SW, .pad_t = PT, .pad_l = PL, .pad_b = PB, \
        .pad_r = PR, .dH = DH, .dW = DW, .ceil_mode = CEIL                                                          \
    }
    static const struct {
        const char *tag;
        int B;
        pool2d_desc_t d;
    } cases[] = {
        {"g-3x2-s21-p1-d12-ceil", 2, PG(3, 15, 17, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1)},
        {"g-3x3-s2-p1-d2", 2, PG(3, 15, 17, 3, 3, 2, 2, 1, 1, 1, 1, 2, 2, 0)},
        {"g-3x3-s2-p1-ceil", 2, PG(3, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1)},
        {"g-2x3-s32-p1", 2, PG(3, 15, 17, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 0)},
        {"g-asym-t0l1b2r1", 2, PG(3, 17, 18, 3, 3, 2, 2, 0, 1, 2, 1, 1, 1, 0)},
        {"g-asym-t1l0b0r2-ceil", 2, PG(3, 17, 18, 3, 3, 2, 2, 1, 0, 0, 2, 1, 1, 1)},
        {"g-same-upper-2x2-s1", 2, PG(3, 9, 10, 2, 2, 1, 1, 0, 0, 1, 1, 1, 1, 0)},
        {"g-1d-k3-s2-p1-ceil", 2, PG(3, 11, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 1)},
        {"g-1d-k2-d3-p21", 2, PG(2, 9, 1, 2, 1, 1, 1, 2, 0, 1, 0, 3, 1, 0)},
    };
#undef PG
    for (int is_max = 1; is_max >= 0; is_max--) {
        lcg_t r = {is_max ? 23u : 24u};
        const char *kind = is_max ? "maxpool" : "avgpool";
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (int cip = 0; cip <= !is_max; cip++) {
                pool2d_desc_t d = cases[ci].d;
                d.count_include_pad = cip;
                assert_int_equal(pool2d_setup(&d), 0);
                char tag[64];
                snprintf(tag, sizeof tag, "%s%s", cases[ci].tag, cip ? "-cip" : "");
                pool_parity(kind, tag, &d, cases[ci].B, is_max, (int)(ci & 1), &r);
            }
    }
    end_test();
}

/* ---- elementwise ---------------------------------------------------------------- */

/* Every function of scalar_fn.h's table through the one launcher, against its CPU entry
 * point: ReLU, LeakyRelu (two slopes), sigmoid (arguments far past where
 * exp overflows, both branches), tanh, Clip, HardSigmoid, HardSwish (exact zeros at the
 * gates and the kinks), and ONNX's Exp, Neg, Sqrt, Reciprocal, Abs, Pow (positive
 * arguments where the function needs them). The backward runs on the CPU's forward output
 * uploaded to the device, so it is checked bit for bit even where CUDA's expf/tanhf/powf
 * and glibc's differ by an ulp (TOL_ACT: those forwards, and Pow's backward, which calls
 * powf itself). */
typedef struct {
    const char *name;
    unary_op_t op;
    float a, b;
    float lo, hi;   /* the arguments' range */
    double tol_fwd; /* TOL_EXACT, or TOL_ACT where CUDA's libm is called */
    double tol_bwd;
} unary_case_t;

static const unary_case_t UNARY_CASES[] = {
    {"relu", UNARY_RELU, 0.0f, 0.0f, -1, 1, TOL_EXACT, TOL_EXACT},
    {"leaky_relu(0.1)", UNARY_LEAKY_RELU, 0.1f, 0.0f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"leaky_relu(0)", UNARY_LEAKY_RELU, 0.0f, 0.0f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"sigmoid", UNARY_SIGMOID, 0.0f, 0.0f, -6, 6, TOL_ACT, TOL_EXACT},
    {"tanh", UNARY_TANH, 0.0f, 0.0f, -6, 6, TOL_ACT, TOL_EXACT},
    {"clip(0, 6)", UNARY_CLIP, 0.0f, 6.0f, -8, 8, TOL_EXACT, TOL_EXACT},
    {"hardsigmoid", UNARY_HARDSIGMOID, 1.0f / 6.0f, 0.5f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"hardswish", UNARY_HARDSWISH, 0.0f, 0.0f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"exp", UNARY_EXP, 0.0f, 0.0f, -6, 6, TOL_ACT, TOL_EXACT},
    {"neg", UNARY_NEG, 0.0f, 0.0f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"sqrt", UNARY_SQRT, 0.0f, 0.0f, 0.01f, 9, TOL_EXACT, TOL_EXACT},
    {"reciprocal", UNARY_RECIPROCAL, 0.0f, 0.0f, 0.1f, 5, TOL_EXACT, TOL_EXACT},
    {"abs", UNARY_ABS, 0.0f, 0.0f, -6, 6, TOL_EXACT, TOL_EXACT},
    {"pow(2.5)", UNARY_POW, 2.5f, 0.0f, 0.01f, 4, TOL_ACT, TOL_ACT},
};

/* the CPU entry point of c's function (ops.h) */
static void cpu_unary(const unary_case_t *c, size_t n, const float *x, const float *y, const float *g, float *out,
                      float *dx)
{
    switch (c->op) {
    case UNARY_RELU:
        if (out) relu_forward(n, x, out);
        else relu_backward(n, y, g, dx);
        break;
    case UNARY_LEAKY_RELU:
        if (out) leaky_relu_forward(n, c->a, x, out);
        else leaky_relu_backward(n, c->a, y, g, dx);
        break;
    case UNARY_SIGMOID:
        if (out) sigmoid_forward(n, x, out);
        else sigmoid_backward(n, y, g, dx);
        break;
    case UNARY_TANH:
        if (out) tanh_forward(n, x, out);
        else tanh_backward(n, y, g, dx);
        break;
    case UNARY_CLIP:
        if (out) clip_forward(n, c->a, c->b, x, out);
        else clip_backward(n, c->a, c->b, y, g, dx);
        break;
    case UNARY_HARDSIGMOID:
        if (out) hardsigmoid_forward(n, c->a, c->b, x, out);
        else hardsigmoid_backward(n, c->a, y, g, dx);
        break;
    case UNARY_HARDSWISH:
        if (out) hardswish_forward(n, x, out);
        else hardswish_backward(n, x, g, dx);
        break;
    default:
        if (out) unary_forward(c->op, c->a, n, x, out);
        else unary_backward(c->op, c->a, n, x, y, g, dx);
        break;
    }
}

static void test_activations(void **state)
{
    (void)state;
    need_gpu();
    lcg_t r = {37};
    const size_t n = 70001;
    float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
    char name[64];
    fill(&r, g, n, -1, 1);
    float *d_x = dalloc(n), *d_g = dcopy(g, n), *d_out = dalloc(n), *d_dx = dalloc(n), *d_y = dalloc(n);
    for (size_t k = 0; k < sizeof UNARY_CASES / sizeof UNARY_CASES[0]; k++) {
        const unary_case_t *c = &UNARY_CASES[k];
        fill(&r, x, n, c->lo, c->hi);
        if (c->lo < 0.0f) {
            for (size_t i = 0; i < n; i += 7) x[i] = 0.0f;  /* the gates at 0 */
            for (size_t i = 5; i < n; i += 13) x[i] = 3.0f; /* HardSwish's kink */
            for (size_t i = 6; i < n; i += 13) x[i] = -3.0f;
            for (size_t i = 8; i < n; i += 13) x[i] = 6.0f; /* Clip's bound */
        }
        if (c->op == UNARY_SIGMOID)
            for (size_t i = 3; i < n; i += 101) x[i] *= 20.0f; /* |x| up to 120: exp(-x) overflows */
        upload(d_x, x, n);
        fill_const(dx, n, PREFILL);
        upload(d_dx, dx, n);
        cpu_unary(c, n, x, NULL, NULL, out, NULL);
        cpu_unary(c, n, x, out, g, NULL, dx);
        check_rc(cuda_unary_forward(g_ctx, c->op, c->a, c->b, n, d_x, d_out), "unary fwd");
        snprintf(name, sizeof name, "%s.out", c->name);
        compare_dev(name, d_out, out, n, c->tol_fwd);
        upload(d_y, out, n); /* the backward on the CPU's output: same gates */
        check_rc(cuda_unary_backward(g_ctx, c->op, c->a, c->b, n, d_x, d_y, d_g, d_dx), "unary bwd");
        snprintf(name, sizeof name, "%s.dinp (+=)", c->name);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, c->tol_bwd);
        /* in place, as ops.h allows */
        upload(d_y, x, n);
        check_rc(cuda_unary_forward(g_ctx, c->op, c->a, c->b, n, d_y, d_y), "unary in place");
        snprintf(name, sizeof name, "%s.out (in place)", c->name);
        compare_dev(name, d_y, out, n, c->tol_fwd);
    }
    free(x);
    free(out);
    free(g);
    free(dx);
    end_test();
}

/* Broadcasting binary operators (Add, Sub, Mul, Div) on shapes whose backward sums over
 * broadcast axes: a (C, 1, W) against (1, H, 1), a per-channel (C, 1, 1) scale, a
 * batch-less constant (batch stride 0: its gradient summed over the batch too), and equal
 * shapes with da and db one buffer (x op x). Bit for bit: the device adds in the CPU's
 * order. */
typedef struct {
    const char *name;
    int rank; /* besides the batch */
    int da[3], db[3];
    int a_batch, b_batch; /* 0: batch-less (a constant) */
    int same;             /* b is a: one tensor, one gradient buffer */
} binary_case_t;

/* a descriptor as model/op_table.c's infer_binary makes one (same rank for both here) */
static void binary_desc(const binary_case_t *c, bcast_desc_t *d, size_t *na, size_t *nb)
{
    size_t ra = 1, rb = 1;
    memset(d, 0, sizeof *d);
    d->rank = c->rank + 1;
    for (int ax = c->rank; ax >= 1; ax--) {
        const int x = c->da[ax - 1], y = c->db[ax - 1];
        d->dims[ax] = x > y ? x : y;
        d->sa[ax] = x > 1 ? ra : 0;
        d->sb[ax] = y > 1 ? rb : 0;
        ra *= (size_t)x;
        rb *= (size_t)y;
    }
    d->sa[0] = c->a_batch ? ra : 0;
    d->sb[0] = c->b_batch ? rb : 0;
    *na = ra;
    *nb = rb;
}

static void test_binary(void **state)
{
    (void)state;
    need_gpu();
    static const binary_case_t cases[] = {
        {"(C,1,W) op (1,H,1)", 3, {3, 1, 5}, {1, 4, 1}, 1, 1, 0},
        {"(C,H,W) op (C,1,1)", 3, {6, 7, 9}, {6, 1, 1}, 1, 1, 0},
        {"(C,H,W) op const (1,H,W)", 3, {4, 5, 6}, {1, 5, 6}, 1, 0, 0},
        {"const (C,1,1) op (C,H,W)", 3, {5, 1, 1}, {5, 3, 3}, 0, 1, 0},
        {"(N,D) op (N,D), x op x", 2, {7, 11}, {7, 11}, 1, 1, 1},
    };
    static const char *const opname[4] = {"add", "sub", "mul", "div"};
    lcg_t r = {41};
    const int B = 3;
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int op = BINARY_ADD; op <= BINARY_DIV; op++) {
            const binary_case_t *c = &cases[ci];
            bcast_desc_t d;
            size_t sa, sb;
            binary_desc(c, &d, &sa, &sb);
            const size_t na = sa * (c->a_batch ? B : 1), nb = sb * (c->b_batch ? B : 1);
            size_t no = B;
            for (int ax = 1; ax < d.rank; ax++) no *= (size_t)d.dims[ax];
            float *a = halloc(na), *b = c->same ? a : halloc(nb), *out = halloc(no), *g = halloc(no);
            float *dA = halloc(na), *dB = c->same ? dA : halloc(nb);
            fill(&r, a, na, 0.5f, 2.0f); /* away from 0: Div */
            if (!c->same) fill(&r, b, nb, 0.5f, 2.0f);
            fill(&r, g, no, -1, 1);
            fill_const(dA, na, PREFILL);
            if (!c->same) fill_const(dB, nb, PREFILL);
            float *d_a = dcopy(a, na), *d_b = c->same ? d_a : dcopy(b, nb), *d_out = dalloc(no), *d_g = dcopy(g, no);
            float *d_dA = dcopy(dA, na), *d_dB = c->same ? d_dA : dcopy(dB, nb);
            binary_forward((binary_op_t)op, &d, B, a, b, out);
            binary_backward((binary_op_t)op, &d, B, a, b, g, dA, dB);
            check_rc(cuda_binary_forward(g_ctx, (binary_op_t)op, &d, B, d_a, d_b, d_out), "binary fwd");
            check_rc(cuda_binary_backward(g_ctx, (binary_op_t)op, &d, B, d_a, d_b, d_g, d_dA, d_dB), "binary bwd");
            snprintf(name, sizeof name, "%s %s.out", opname[op], c->name);
            compare_dev(name, d_out, out, no, TOL_EXACT);
            snprintf(name, sizeof name, "%s %s.da (+=)", opname[op], c->name);
            compare_dev_acc(name, d_dA, dA, na, PREFILL, TOL_EXACT);
            if (!c->same) {
                snprintf(name, sizeof name, "%s %s.db (+=)", opname[op], c->name);
                compare_dev_acc(name, d_dB, dB, nb, PREFILL, TOL_EXACT);
            }
            if (!c->same) {
                free(b);
                free(dB);
            }
            free(a);
            free(out);
            free(g);
            free(dA);
            dfree_all();
        }
    end_test();
}

/* Transpose (a 4-D permutation) and Slice (a step of 2 on the middle axis, and a slice of
 * the channels) as strided views: copies out and gradients added back, bit for bit. */
static void test_view(void **state)
{
    (void)state;
    need_gpu();
    lcg_t r = {43};
    const int B = 2, D[4] = {3, 4, 5, 2}; /* the input (B, 3, 4, 5, 2) */
    const size_t per = 3 * 4 * 5 * 2, n = (size_t)B * per;
    size_t st[4];
    st[3] = 1;
    for (int k = 2; k >= 0; k--) st[k] = st[k + 1] * (size_t)D[k + 1];
    /* Transpose perm (2, 0, 3, 1); Slice axis 1 [1, 4) step 2; Slice axis 0 [1, 3) */
    bcast_desc_t dv[3];
    size_t off[3] = {0, st[1], st[0]};
    memset(dv, 0, sizeof dv);
    const int perm[4] = {2, 0, 3, 1};
    dv[0].rank = 5;
    for (int k = 0; k < 4; k++) dv[0].dims[k + 1] = D[perm[k]], dv[0].sa[k + 1] = st[perm[k]];
    dv[1].rank = dv[2].rank = 5;
    for (int k = 0; k < 4; k++) {
        dv[1].dims[k + 1] = k == 1 ? 2 : D[k];
        dv[1].sa[k + 1] = st[k] * (k == 1 ? 2 : 1);
        dv[2].dims[k + 1] = k == 0 ? 2 : D[k];
        dv[2].sa[k + 1] = st[k];
    }
    static const char *const what[3] = {"transpose", "slice(step 2)", "slice(channels)"};
    float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
    char name[64];
    fill(&r, x, n, -1, 1);
    fill(&r, g, n, -1, 1);
    float *d_x = dcopy(x, n), *d_g = dcopy(g, n), *d_out = dalloc(n), *d_dx = dalloc(n);
    for (int v = 0; v < 3; v++) {
        dv[v].sa[0] = per;
        size_t no = B;
        for (int k = 1; k < 5; k++) no *= (size_t)dv[v].dims[k];
        fill_const(dx, n, PREFILL);
        upload(d_dx, dx, n);
        view_forward(&dv[v], off[v], B, x, out);
        view_backward(&dv[v], off[v], B, g, dx);
        check_rc(cuda_view_forward(g_ctx, &dv[v], off[v], B, d_x, d_out), "view fwd");
        check_rc(cuda_view_backward(g_ctx, &dv[v], off[v], B, d_g, d_dx), "view bwd");
        snprintf(name, sizeof name, "%s.out", what[v]);
        compare_dev(name, d_out, out, no, TOL_EXACT);
        snprintf(name, sizeof name, "%s.dinp (+=)", what[v]);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_EXACT);
    }
    free(x);
    free(out);
    free(g);
    free(dx);
    end_test();
}

/* A reduction's descriptor as model/op_table.c's infer_reduce makes one: the walk over
 * the input (dims, its contiguous strides in sa), the output's strides in sb (0 along the
 * axes of mask); *nin and *nout a sample's counts. */
static void reduce_desc(int rank, const int *dims, unsigned mask, bcast_desc_t *d, size_t *nin, size_t *nout)
{
    size_t in = 1, out = 1;
    memset(d, 0, sizeof *d);
    d->rank = rank + 1;
    for (int ax = rank; ax >= 1; ax--) {
        d->dims[ax] = dims[ax - 1];
        d->sa[ax] = in;
        d->sb[ax] = mask >> (ax - 1) & 1 ? 0 : out;
        in *= (size_t)dims[ax - 1];
        if (!(mask >> (ax - 1) & 1)) out *= (size_t)dims[ax - 1];
    }
    d->sa[0] = in;
    d->sb[0] = out;
    *nin = in;
    *nout = out;
}

/* ReduceSum and ReduceMean over the channels and the last axis, the middle axis, every
 * axis, and two axes of a 4-D input with an axis of 1: the CPU's float sums in its order,
 * bit for bit. */
static void test_reduce(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        int rank, dims[4];
        unsigned mask;
    } cases[] = {
        {3, {3, 5, 4}, 5u}, {3, {3, 5, 4}, 2u}, {3, {3, 5, 4}, 7u}, {4, {2, 3, 1, 4}, 10u}, {2, {64, 33}, 1u},
    };
    lcg_t r = {47};
    const int B = 3;
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int mean = 0; mean < 2; mean++) {
            bcast_desc_t d;
            size_t si, so;
            reduce_desc(cases[ci].rank, cases[ci].dims, cases[ci].mask, &d, &si, &so);
            const size_t nin = si * B, nout = so * B;
            const float scale = mean ? 1.0f / (float)(si / so) : 1.0f;
            float *x = hbuf(nin), *out = hbuf(nout), *g = hbuf(nout), *dx = hbuf(nin);
            fill(&r, x, nin, -1, 1);
            fill(&r, g, nout, -1, 1);
            fill_const(dx, nin, PREFILL);
            float *d_x = dcopy(x, nin), *d_g = dcopy(g, nout), *d_out = dalloc(nout), *d_dx = dcopy(dx, nin);
            reduce_forward(&d, B, scale, x, out, nout);
            reduce_backward(&d, B, scale, g, dx);
            check_rc(cuda_reduce_forward(g_ctx, &d, B, scale, d_x, d_out, nout), "reduce fwd");
            check_rc(cuda_reduce_backward(g_ctx, &d, B, scale, d_g, d_dx), "reduce bwd");
            snprintf(name, sizeof name, "reduce_%s%zu (mask %u).out", mean ? "mean" : "sum", ci, cases[ci].mask);
            compare_dev(name, d_out, out, nout, TOL_EXACT);
            snprintf(name, sizeof name, "reduce_%s%zu.dinp (+=)", mean ? "mean" : "sum", ci);
            compare_dev_acc(name, d_dx, dx, nin, PREFILL, TOL_EXACT);
            dfree_all();
        }
    end_test();
}

/* Softmax and LogSoftmax along an axis: the channels of an image (inner a plane), attention
 * scores along the last axis (inner 1, n 50), a line of one element, and logits far apart
 * (the shift by the maximum). The backward runs on the CPU's output uploaded to the device. */
static void test_softmax_axis(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][3] = {{6, 7, 5}, {48, 50, 1}, {2, 10, 12}, {5, 1, 3}};
    lcg_t r = {53};
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int tl = 0; tl < 2; tl++) {
            const int rows = cases[ci][0], n = cases[ci][1], inner = cases[ci][2];
            const size_t N = (size_t)rows * n * inner;
            float *x = hbuf(N), *y = hbuf(N), *g = hbuf(N), *dx = hbuf(N);
            fill(&r, x, N, ci == 1 ? -30.0f : -4.0f, ci == 1 ? 30.0f : 4.0f);
            fill(&r, g, N, -1, 1);
            fill_const(dx, N, PREFILL);
            float *d_x = dcopy(x, N), *d_y = dalloc(N), *d_g = dcopy(g, N), *d_dx = dcopy(dx, N);
            softmax_axis_forward(tl, rows, n, inner, x, y);
            softmax_axis_backward(tl, rows, n, inner, y, g, dx);
            check_rc(cuda_softmax_axis_forward(g_ctx, tl, rows, n, inner, d_x, d_y), "softmax axis fwd");
            snprintf(name, sizeof name, "%s%zu (%dx%dx%d).out", tl ? "log_softmax" : "softmax", ci, rows, n, inner);
            compare_dev(name, d_y, y, N, TOL_SOFTMAX);
            upload(d_y, y, N); /* the backward on the CPU's output */
            check_rc(cuda_softmax_axis_backward(g_ctx, tl, rows, n, inner, d_y, d_g, d_dx), "softmax axis bwd");
            snprintf(name, sizeof name, "%s%zu.dinp (+=)", tl ? "log_softmax" : "softmax", ci);
            compare_dev_acc(name, d_dx, dx, N, PREFILL, TOL_SOFTMAX);
            dfree_all();
        }
    end_test();
}

/* Layer norm over rows of D: one chunk of rows and several (the last one partial), a ViT
 * width, and a backward without an input gradient (a layer norm on the model input). The
 * parameter gradients start as NaN (=). */
static void test_layernorm(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][3] = {{3, 20, 1}, {130, 20, 1}, {70, 96, 0}, {5, 768, 1}};
    lcg_t r = {59};
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int R = cases[ci][0], D = cases[ci][1], with_dx = cases[ci][2];
        const size_t N = (size_t)R * D, wsb = cuda_layernorm_workspace(R, D);
        const float eps = ci == 2 ? 1e-6f : 1e-5f;
        float *x = hbuf(N), *y = hbuf(N), *g = hbuf(N), *dx = hbuf(N), *w = hbuf(D), *b = hbuf(D);
        float *dw = hbuf(D), *db = hbuf(D);
        fill(&r, x, N, -2, 3);
        fill(&r, g, N, -1, 1);
        fill(&r, w, D, 0.5f, 1.5f);
        fill(&r, b, D, -0.5f, 0.5f);
        fill_const(dx, N, PREFILL);
        fill_const(dw, D, NAN);
        fill_const(db, D, NAN);
        float *d_x = dcopy(x, N), *d_y = dalloc(N), *d_g = dcopy(g, N), *d_dx = dcopy(dx, N), *d_w = dcopy(w, D);
        float *d_b = dcopy(b, D), *d_dw = dcopy(dw, D), *d_db = dcopy(db, D);
        void *d_ws = dalloc_bytes(wsb);
        layernorm_forward(R, D, eps, x, w, b, y);
        layernorm_backward(R, D, eps, x, w, g, with_dx ? dx : NULL, dw, db);
        check_rc(cuda_layernorm_forward(g_ctx, R, D, eps, d_x, d_w, d_b, d_y), "layernorm fwd");
        check_rc(cuda_layernorm_backward(g_ctx, R, D, eps, d_x, d_w, d_g, with_dx ? d_dx : NULL, d_dw, d_db, d_ws, wsb),
                 "layernorm bwd");
        snprintf(name, sizeof name, "layernorm%zu (R=%d D=%d).out", ci, R, D);
        compare_dev(name, d_y, y, N, TOL_LN);
        if (with_dx) {
            snprintf(name, sizeof name, "layernorm%zu.dinp (+=)", ci);
            compare_dev_acc(name, d_dx, dx, N, PREFILL, TOL_LN);
        }
        snprintf(name, sizeof name, "layernorm%zu.dweight (=)", ci);
        compare_dev(name, d_dw, dw, D, TOL_LN_PARAM);
        snprintf(name, sizeof name, "layernorm%zu.dbias (=)", ci);
        compare_dev(name, d_db, db, D, TOL_LN_PARAM);
        dfree_all();
    }
    /* a workspace too small is refused with a message, not overrun */
    if (cuda_layernorm_backward(g_ctx, 130, 20, 1e-5f, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 8) == 0 ||
        !strstr(cuda_ctx_error(g_ctx), "workspace too small"))
        fail_msg("a layer norm backward with an 8-byte workspace was not refused: %s", cuda_ctx_error(g_ctx));
    end_test();
}

/* The matmul of two activations (G pairs): attention's scores (K, the head width, between
 * two token axes) and their product with V, a single row, and x times x (one tensor on both
 * sides, one gradient buffer: each GEMM reads only the inputs). */
static void test_bmm(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][5] = {
        /* G, M, K, N, x times x */
        {8, 17, 16, 17, 0},
        {8, 17, 17, 16, 0},
        {3, 1, 9, 4, 0},
        {4, 6, 6, 6, 1},
    };
    lcg_t r = {67};
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int G = cases[ci][0], M = cases[ci][1], K = cases[ci][2], N = cases[ci][3], same = cases[ci][4];
        const size_t na = (size_t)G * M * K, nb = (size_t)G * K * N, no = (size_t)G * M * N;
        float *a = hbuf(na), *b = same ? a : hbuf(nb), *out = hbuf(no), *g = hbuf(no);
        float *da = hbuf(na), *db = same ? da : hbuf(nb);
        fill(&r, a, na, -1, 1);
        if (!same) fill(&r, b, nb, -1, 1);
        fill(&r, g, no, -1, 1);
        fill_const(da, na, PREFILL);
        if (!same) fill_const(db, nb, PREFILL);
        float *d_a = dcopy(a, na), *d_b = same ? d_a : dcopy(b, nb), *d_out = dalloc(no), *d_g = dcopy(g, no);
        float *d_da = dcopy(da, na), *d_db = same ? d_da : dcopy(db, nb);
        bmm_forward(G, M, K, N, a, b, out);
        bmm_backward(G, M, K, N, a, b, g, da, db);
        check_rc(cuda_bmm_forward(g_ctx, G, M, K, N, d_a, d_b, d_out), "bmm fwd");
        check_rc(cuda_bmm_backward(g_ctx, G, M, K, N, d_a, d_b, d_g, d_da, d_db), "bmm bwd");
        snprintf(name, sizeof name, "bmm%zu (%d x %dx%d x %dx%d).out", ci, G, M, K, K, N);
        compare_dev(name, d_out, out, no, TOL_FC);
        snprintf(name, sizeof name, "bmm%zu.da (+=)%s", ci, same ? " (= db)" : "");
        compare_dev_acc(name, d_da, da, na, PREFILL, TOL_FC);
        if (!same) {
            snprintf(name, sizeof name, "bmm%zu.db (+=)", ci);
            compare_dev_acc(name, d_db, db, nb, PREFILL, TOL_FC);
        }
        /* one gradient only (the other input a constant's or the model input's) */
        fill_const(da, na, PREFILL);
        upload(d_da, da, na);
        bmm_backward(G, M, K, N, a, b, g, da, NULL);
        check_rc(cuda_bmm_backward(g_ctx, G, M, K, N, d_a, d_b, d_g, d_da, NULL), "bmm bwd (db NULL)");
        snprintf(name, sizeof name, "bmm%zu.da (db NULL)", ci);
        compare_dev_acc(name, d_da, da, na, PREFILL, TOL_FC);
        dfree_all();
    }
    end_test();
}

/* Expand (LAYER_EXPAND, issue 44's ViT rows): x (B, 3, 1, 2) to (B, 2, 3, 4, 2), and a
 * batch-less (1, 2) constant to (B, 4, 2) (ViT's class token): the view forward, and the
 * backward summing every copy as model_cuda.cu runs it (the binary backward of an Add, sb
 * all 0), against the CPU's view_backward, bit for bit. */
static void test_expand(void **state)
{
    (void)state;
    need_gpu();
    lcg_t r = {47};
    const int B = 3;
    bcast_desc_t dv[2];
    memset(dv, 0, sizeof dv);
    /* (3, 1, 2) right-aligned to (2, 3, 4, 2): strides 0 on the new axis and the height */
    const size_t in_n[2] = {(size_t)B * 6, 2};
    dv[0].rank = 5;
    const int d0[4] = {2, 3, 4, 2};
    const size_t s0[4] = {0, 2, 0, 1};
    for (int k = 0; k < 4; k++) dv[0].dims[k + 1] = d0[k], dv[0].sa[k + 1] = s0[k];
    dv[0].sa[0] = 6;
    dv[1].rank = 3;
    dv[1].dims[1] = 4, dv[1].dims[2] = 2;
    dv[1].sa[0] = 0, dv[1].sa[1] = 0, dv[1].sa[2] = 1;
    static const char *const what[2] = {"expand", "expand(constant)"};
    char name[64];
    for (int v = 0; v < 2; v++) {
        size_t no = B;
        for (int k = 1; k < dv[v].rank; k++) no *= (size_t)dv[v].dims[k];
        float *x = hbuf(in_n[v]), *out = hbuf(no), *g = hbuf(no), *dx = hbuf(in_n[v]);
        fill(&r, x, in_n[v], -1, 1);
        fill(&r, g, no, -1, 1);
        fill_const(dx, in_n[v], PREFILL);
        float *d_x = dcopy(x, in_n[v]), *d_g = dcopy(g, no), *d_out = dalloc(no), *d_dx = dcopy(dx, in_n[v]);
        view_forward(&dv[v], 0, B, x, out);
        view_backward(&dv[v], 0, B, g, dx);
        check_rc(cuda_view_forward(g_ctx, &dv[v], 0, B, d_x, d_out), "expand fwd");
        check_rc(cuda_binary_backward(g_ctx, BINARY_ADD, &dv[v], B, d_g, d_g, d_g, d_dx, NULL), "expand bwd");
        snprintf(name, sizeof name, "%s.out", what[v]);
        compare_dev(name, d_out, out, no, TOL_EXACT);
        snprintf(name, sizeof name, "%s.dinp (+=)", what[v]);
        compare_dev_acc(name, d_dx, dx, in_n[v], PREFILL, TOL_EXACT);
        dfree_all();
    }
    end_test();
}

/* Concatenation along channels: two and three inputs, one plane of a single pixel, a
 * backward with a NULL input gradient, and Concat(x, x) whose two gradients are one buffer. */
static void test_concat(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        int B, HW, n, C[3], alias;
    } cases[] = {
        {4, 63, 2, {3, 5, 0}, 0},
        {3, 20, 3, {6, 1, 4}, 0},
        {5, 1, 2, {7, 2, 0}, 0},
        {2, 30, 2, {4, 4, 0}, 1},
    };
    lcg_t r = {41};
    char name[64];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci].B, HW = cases[ci].HW, n = cases[ci].n, alias = cases[ci].alias;
        int OC = 0;
        for (int k = 0; k < n; k++) OC += cases[ci].C[k];
        const size_t nout = (size_t)B * OC * HW;
        float *in[3] = {NULL, NULL, NULL}, *din[3] = {NULL, NULL, NULL}, *d_in[3] = {NULL, NULL, NULL},
              *d_din[3] = {NULL, NULL, NULL};
        for (int k = 0; k < n; k++) {
            const size_t len = (size_t)B * cases[ci].C[k] * HW;
            in[k] = halloc(len);
            din[k] = halloc(len);
            fill(&r, in[k], len, -1, 1);
            fill_const(din[k], len, PREFILL);
            d_in[k] = dcopy(in[k], len);
            d_din[k] = dcopy(din[k], len);
        }
        if (alias) {
            /* Concat(x, x): one tensor, one gradient buffer receiving both slices */
            d_in[1] = d_in[0];
            d_din[1] = d_din[0];
            memcpy(in[1], in[0], (size_t)B * cases[ci].C[0] * HW * sizeof(float));
        }
        float *out = halloc(nout), *g = halloc(nout);
        fill(&r, g, nout, -1, 1);
        float *d_out = dalloc(nout), *d_g = dcopy(g, nout);
        const float *const cin[3] = {in[0], in[1], in[2]};
        const float *const cdin[3] = {d_in[0], d_in[1], d_in[2]};
        concat_forward(B, HW, n, cases[ci].C, cin, out);
        check_rc(cuda_concat_forward(g_ctx, B, HW, n, cases[ci].C, cdin, d_out), "concat fwd");
        snprintf(name, sizeof name, "concat%zu.out", ci);
        compare_dev(name, d_out, out, nout, TOL_EXACT);
        /* the CPU's gradients: with alias, both slices into din[0] */
        float *const hd[3] = {din[0], alias ? din[0] : din[1], din[2]};
        concat_backward(B, HW, n, cases[ci].C, g, hd);
        check_rc(cuda_concat_backward(g_ctx, B, HW, n, cases[ci].C, d_g, d_din), "concat bwd");
        for (int k = 0; k < (alias ? 1 : n); k++) {
            snprintf(name, sizeof name, "concat%zu.dinp[%d] (+=)%s", ci, k, alias ? " both slices" : "");
            compare_dev_acc(name, d_din[k], din[k], (size_t)B * cases[ci].C[k] * HW, PREFILL, TOL_EXACT);
        }
        if (!alias) {
            /* a NULL gradient is skipped; the others still receive theirs */
            float *skip_[3] = {NULL, d_din[1], d_din[2]};
            float *hskip[3] = {NULL, din[1], din[2]};
            concat_backward(B, HW, n, cases[ci].C, g, hskip);
            check_rc(cuda_concat_backward(g_ctx, B, HW, n, cases[ci].C, d_g, skip_), "concat bwd (NULL dinp[0])");
            snprintf(name, sizeof name, "concat%zu.dinp[1] (dinp[0] NULL)", ci);
            compare_dev(name, d_din[1], din[1], (size_t)B * cases[ci].C[1] * HW, TOL_EXACT);
        }
        for (int k = 0; k < n; k++) {
            free(in[k]);
            free(din[k]);
        }
        free(out);
        free(g);
        dfree_all();
    }
    end_test();
}

/* Dropout: the device draws ops.h's mask, so for the same key it drops the same elements
 * and keeps the same values as the CPU, bit for bit (what makes a GPU rank's masks those of
 * a CPU rank with its seed, rank and step). p = 0 is the identity and p = 1 drops all; two
 * keys (steps) give two masks; in place. */
static void test_dropout(void **state)
{
    (void)state;
    need_gpu();
    static const float ps[] = {0.0f, 0.1f, 0.3f, 0.5f, 0.9f, 1.0f};
    const size_t n = 100003;
    lcg_t r = {43};
    char name[80];
    float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
    fill(&r, x, n, -2, 2);
    fill(&r, g, n, -1, 1);
    float *d_x = dcopy(x, n), *d_g = dcopy(g, n), *d_out = dalloc(n), *d_dx = dalloc(n);
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
        for (uint64_t step = 1; step <= 2; step++) {
            const float p = ps[pi];
            const uint64_t key = dropout_key(0x5eed0000ULL + 17, step, 5);
            dropout_forward(n, p, key, x, out);
            check_rc(cuda_dropout_forward(g_ctx, n, p, key, d_x, d_out), "dropout fwd");
            snprintf(name, sizeof name, "dropout(p=%g, step %d).out", (double)p, (int)step);
            compare_dev(name, d_out, out, n, TOL_EXACT);
            size_t kept = 0;
            for (size_t i = 0; i < n; i++) kept += out[i] != 0.0f;
            printf("    kept %.4f of the elements (1 - p = %.4f)\n", (double)kept / (double)n, 1.0 - (double)p);
            fill_const(dx, n, PREFILL);
            upload(d_dx, dx, n);
            dropout_backward(n, p, key, g, dx);
            check_rc(cuda_dropout_backward(g_ctx, n, p, key, d_g, d_dx), "dropout bwd");
            snprintf(name, sizeof name, "dropout(p=%g, step %d).dinp (+=)", (double)p, (int)step);
            compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_EXACT);
            upload(d_out, x, n);
            check_rc(cuda_dropout_forward(g_ctx, n, p, key, d_out, d_out), "dropout in place");
            snprintf(name, sizeof name, "dropout(p=%g, step %d).out (in place)", (double)p, (int)step);
            compare_dev(name, d_out, out, n, TOL_EXACT);
        }
    free(x);
    free(out);
    free(g);
    free(dx);
    end_test();
}

/* Stochastic depth: the device draws one ops.h draw per sample as the CPU does, so the
 * same samples are dropped and the same values kept, bit for bit; p = 0 is the identity. */
static void test_stochastic_depth(void **state)
{
    (void)state;
    need_gpu();
    static const float ps[] = {0.0f, 0.2f, 0.5f};
    const size_t per = 3 * 7 * 5, n = 64 * per;
    lcg_t r = {47};
    char name[80];
    float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
    fill(&r, x, n, -2, 2);
    fill(&r, g, n, -1, 1);
    float *d_x = dcopy(x, n), *d_g = dcopy(g, n), *d_out = dalloc(n), *d_dx = dalloc(n);
    for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
        const float p = ps[pi];
        const uint64_t key = dropout_key(0x5eed0000ULL + 17, 3, 9);
        stochastic_depth_forward(n, per, p, key, x, out);
        check_rc(cuda_stochastic_depth_forward(g_ctx, n, per, p, key, d_x, d_out), "stochastic depth fwd");
        snprintf(name, sizeof name, "stochastic_depth(p=%g).out", (double)p);
        compare_dev(name, d_out, out, n, TOL_EXACT);
        fill_const(dx, n, PREFILL);
        upload(d_dx, dx, n);
        stochastic_depth_backward(n, per, p, key, g, dx);
        check_rc(cuda_stochastic_depth_backward(g_ctx, n, per, p, key, d_g, d_dx), "stochastic depth bwd");
        snprintf(name, sizeof name, "stochastic_depth(p=%g).dinp (+=)", (double)p);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_EXACT);
    }
    free(x);
    free(out);
    free(g);
    free(dx);
    end_test();
}

/* Swin's gathered parameter (LAYER_GATHER_PARAM): indices that repeat (their gradients add
 * in the CPU's order) and two outside the table (0, no gradient); the same bits. */
static void test_gather_param(void **state)
{
    (void)state;
    need_gpu();
    static const size_t cases[][2] = {{20, 14}, {3 * 49 * 49, 169 * 3}, {1, 1}};
    lcg_t r = {44};
    char name[64];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const size_t n = cases[ci][0], tc = cases[ci][1];
        float *map = halloc(n), *table = halloc(tc), *out = halloc(n), *g = halloc(n), *dt = halloc(tc);
        for (size_t j = 0; j < n; j++) map[j] = (float)((7 * j + 3) % tc);
        if (n > 2) map[0] = -1.0f, map[n - 1] = (float)tc;
        fill(&r, table, tc, -1, 1);
        fill(&r, g, n, -1, 1);
        float *d_map = dcopy(map, n), *d_t = dcopy(table, tc), *d_g = dcopy(g, n), *d_out = dalloc(n),
              *d_dt = dalloc(tc);
        gather_param_forward(n, tc, map, table, out);
        gather_param_backward(n, tc, map, g, dt);
        check_rc(cuda_gather_param_forward(g_ctx, n, tc, d_map, d_t, d_out), "gather param fwd");
        check_rc(cuda_gather_param_backward(g_ctx, n, tc, d_map, d_g, d_dt), "gather param bwd");
        snprintf(name, sizeof name, "gather_param%zu (n=%zu table=%zu).out", ci, n, tc);
        compare_dev(name, d_out, out, n, TOL_EXACT);
        snprintf(name, sizeof name, "gather_param%zu.dtable (=)", ci);
        compare_dev(name, d_dt, dt, tc, TOL_EXACT);
        free(map);
        free(table);
        free(out);
        free(g);
        free(dt);
        dfree_all();
    }
    end_test();
}

static void test_gap(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][3] = {{4, 16, 64}, {3, 5, 7}, {2, 64, 64}, {2, 3, 1}};
    lcg_t r = {41};
    char name[64];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci][0], C = cases[ci][1], HW = cases[ci][2];
        const size_t nin = (size_t)B * C * HW, nout = (size_t)B * C;
        float *x = halloc(nin), *out = halloc(nout), *g = halloc(nout), *dx = halloc(nin);
        fill(&r, x, nin, -1, 1);
        fill(&r, g, nout, -1, 1);
        fill_const(dx, nin, PREFILL);
        float *d_x = dcopy(x, nin), *d_g = dcopy(g, nout), *d_out = dalloc(nout), *d_dx = dcopy(dx, nin);
        gap_forward(B, C, HW, x, out);
        gap_backward(B, C, HW, g, dx);
        check_rc(cuda_gap_forward(g_ctx, B, C, HW, d_x, d_out), "gap fwd");
        check_rc(cuda_gap_backward(g_ctx, B, C, HW, d_g, d_dx), "gap bwd");
        snprintf(name, sizeof name, "gap%zu (B=%d C=%d HW=%d).out", ci, B, C, HW);
        compare_dev(name, d_out, out, nout, TOL_EXACT);
        snprintf(name, sizeof name, "gap%zu.dinp (+=)", ci);
        compare_dev_acc(name, d_dx, dx, nin, PREFILL, TOL_EXACT);
        free(x);
        free(out);
        free(g);
        free(dx);
        dfree_all();
    }
    end_test();
}

static void test_residual(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][5] = {
        /* C, H, W, OC, stride */
        {16, 32, 32, 16, 1}, /* identity */
        {16, 32, 32, 32, 2}, /* resnet20 stage change */
        {3, 7, 9, 8, 2},     /* odd sizes, odd channel offset */
        {4, 5, 5, 8, 3},
    };
    lcg_t r = {51};
    char name[64];
    const int B = 3;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        shortcut_desc_t d;
        assert_int_equal(shortcut_init(&d, cases[ci][0], cases[ci][1], cases[ci][2], cases[ci][3], cases[ci][4]), 0);
        const size_t nx = (size_t)B * d.C * d.H * d.W, na = (size_t)B * d.OC * d.OH * d.OW;
        float *a = halloc(na), *x = halloc(nx), *out = halloc(na), *g = halloc(na);
        float *da = halloc(na), *dx = halloc(nx);
        fill(&r, a, na, -1, 1);
        fill(&r, x, nx, -1, 1);
        fill(&r, g, na, -1, 1);
        fill_const(da, na, PREFILL);
        fill_const(dx, nx, -PREFILL);
        float *d_a = dcopy(a, na), *d_x = dcopy(x, nx), *d_g = dcopy(g, na), *d_out = dalloc(na);
        float *d_da = dcopy(da, na), *d_dx = dcopy(dx, nx);
        residual_add_forward(&d, B, a, x, out);
        residual_add_backward(&d, B, g, da, dx);
        check_rc(cuda_residual_add_forward(g_ctx, &d, B, d_a, d_x, d_out), "residual fwd");
        check_rc(cuda_residual_add_backward(g_ctx, &d, B, d_g, d_da, d_dx), "residual bwd");
        snprintf(name, sizeof name, "residual%zu (C=%d OC=%d s=%d).out", ci, d.C, d.OC, d.stride);
        compare_dev(name, d_out, out, na, TOL_EXACT);
        snprintf(name, sizeof name, "residual%zu.da (+=)", ci);
        compare_dev_acc(name, d_da, da, na, PREFILL, TOL_EXACT);
        snprintf(name, sizeof name, "residual%zu.dx (+=)", ci);
        compare_dev_acc(name, d_dx, dx, nx, -PREFILL, TOL_EXACT);
        free(a);
        free(x);
        free(out);
        free(g);
        free(da);
        free(dx);
        dfree_all();
    }
    end_test();
}

/* ---- fully connected ------------------------------------------------------------ */

static void test_fc(void **state)
{
    (void)state;
    need_gpu();
    static const int cases[][4] = {
        /* B, IN, OUT, bias */
        {7, 33, 10, 1}, {16, 784, 256, 1}, {5, 400, 120, 1}, {1, 5, 3, 1}, {9, 64, 10, 0},
    };
    lcg_t r = {61};
    char name[64];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci][0], IN = cases[ci][1], OUT = cases[ci][2], hb = cases[ci][3];
        const size_t nin = (size_t)B * IN, nw = (size_t)OUT * IN, nout = (size_t)B * OUT;
        float *x = halloc(nin), *w = halloc(nw), *b = halloc(OUT), *g = halloc(nout), *out = halloc(nout);
        float *dx = halloc(nin), *dw = halloc(nw), *db = halloc(OUT);
        fill(&r, x, nin, -1, 1);
        fill(&r, w, nw, -0.2f, 0.2f);
        fill(&r, b, OUT, -0.5f, 0.5f);
        fill(&r, g, nout, -1, 1);
        fill_const(dx, nin, PREFILL);
        fill_const(dw, nw, NAN);
        fill_const(db, OUT, NAN);
        float *d_x = dcopy(x, nin), *d_w = dcopy(w, nw), *d_b = dcopy(b, OUT), *d_g = dcopy(g, nout);
        float *d_out = dalloc(nout), *d_dx = dcopy(dx, nin), *d_dw = dcopy(dw, nw), *d_db = dcopy(db, OUT);
        fc_forward(B, IN, OUT, x, w, hb ? b : NULL, out);
        fc_backward(B, IN, OUT, x, w, g, dx, dw, hb ? db : NULL);
        check_rc(cuda_fc_forward(g_ctx, B, IN, OUT, d_x, d_w, hb ? d_b : NULL, d_out), "fc fwd");
        check_rc(cuda_fc_backward(g_ctx, B, IN, OUT, d_x, d_w, d_g, d_dx, d_dw, hb ? d_db : NULL), "fc bwd");
        snprintf(name, sizeof name, "fc%zu (B=%d %d->%d).out", ci, B, IN, OUT);
        compare_dev(name, d_out, out, nout, TOL_FC);
        snprintf(name, sizeof name, "fc%zu.dinp (+=)", ci);
        compare_dev_acc(name, d_dx, dx, nin, PREFILL, TOL_FC);
        snprintf(name, sizeof name, "fc%zu.dweight (=)", ci);
        compare_dev(name, d_dw, dw, nw, TOL_FC);
        if (hb) {
            snprintf(name, sizeof name, "fc%zu.dbias (=)", ci);
            compare_dev(name, d_db, db, OUT, TOL_FC);
        }
        /* dinp NULL */
        fill_const(dw, nw, NAN);
        upload(d_dw, dw, nw);
        fc_backward(B, IN, OUT, x, w, g, NULL, dw, NULL);
        check_rc(cuda_fc_backward(g_ctx, B, IN, OUT, d_x, d_w, d_g, NULL, d_dw, NULL), "fc bwd NULL");
        snprintf(name, sizeof name, "fc%zu.dweight (dinp NULL)", ci);
        compare_dev(name, d_dw, dw, nw, TOL_FC);
        free(x);
        free(w);
        free(b);
        free(g);
        free(out);
        free(dx);
        free(dw);
        free(db);
        dfree_all();
    }
    end_test();
}

/* ONNX Gemm: both weight layouts, alpha and beta other than 1, with and without a bias,
 * dinp NULL; and the (OUT, IN), alpha = beta = 1 descriptor gives cuda_fc's results. */
static void test_gemm(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        int B, IN, OUT, bias;
        gemm_layout_t layout;
        float alpha, beta;
    } cases[] = {
        {7, 33, 10, 1, GEMM_W_IN_OUT, 1.0f, 1.0f},  {6, 260, 10, 1, GEMM_W_IN_OUT, 2.0f, 0.5f},
        {5, 40, 12, 1, GEMM_W_OUT_IN, 0.7f, -1.5f}, {9, 64, 10, 0, GEMM_W_IN_OUT, 1.0f, 1.0f},
        {4, 17, 3, 0, GEMM_W_OUT_IN, 3.0f, 1.0f},   {1, 5, 3, 1, GEMM_W_IN_OUT, 0.25f, 2.0f},
    };
    lcg_t r = {63};
    char name[96];
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci].B, IN = cases[ci].IN, OUT = cases[ci].OUT, hb = cases[ci].bias;
        const gemm_desc_t d = {
            .IN = IN, .OUT = OUT, .layout = cases[ci].layout, .alpha = cases[ci].alpha, .beta = cases[ci].beta};
        const size_t nin = (size_t)B * IN, nw = (size_t)OUT * IN, nout = (size_t)B * OUT;
        float *x = halloc(nin), *w = halloc(nw), *b = halloc(OUT), *g = halloc(nout), *out = halloc(nout);
        float *dx = halloc(nin), *dw = halloc(nw), *db = halloc(OUT);
        fill(&r, x, nin, -1, 1);
        fill(&r, w, nw, -0.2f, 0.2f);
        fill(&r, b, OUT, -0.5f, 0.5f);
        fill(&r, g, nout, -1, 1);
        fill_const(dx, nin, PREFILL);
        fill_const(dw, nw, NAN);
        fill_const(db, OUT, NAN);
        float *d_x = dcopy(x, nin), *d_w = dcopy(w, nw), *d_b = dcopy(b, OUT), *d_g = dcopy(g, nout);
        float *d_out = dalloc(nout), *d_dx = dcopy(dx, nin), *d_dw = dcopy(dw, nw), *d_db = dcopy(db, OUT);
        gemm_forward(&d, B, x, w, hb ? b : NULL, out);
        gemm_backward(&d, B, x, w, g, dx, dw, hb ? db : NULL);
        check_rc(cuda_gemm_forward(g_ctx, &d, B, d_x, d_w, hb ? d_b : NULL, d_out), "gemm fwd");
        check_rc(cuda_gemm_backward(g_ctx, &d, B, d_x, d_w, d_g, d_dx, d_dw, hb ? d_db : NULL), "gemm bwd");
        snprintf(name, sizeof name, "gemm%zu (B=%d %d->%d %s a=%g b=%g).out", ci, B, IN, OUT,
                 d.layout == GEMM_W_IN_OUT ? "W(IN,OUT)" : "W(OUT,IN)", (double)d.alpha, (double)d.beta);
        compare_dev(name, d_out, out, nout, TOL_FC);
        snprintf(name, sizeof name, "gemm%zu.dinp (+=)", ci);
        compare_dev_acc(name, d_dx, dx, nin, PREFILL, TOL_FC);
        snprintf(name, sizeof name, "gemm%zu.dweight (=)", ci);
        compare_dev(name, d_dw, dw, nw, TOL_FC);
        if (hb) {
            snprintf(name, sizeof name, "gemm%zu.dbias (=)", ci);
            compare_dev(name, d_db, db, OUT, TOL_FC);
        }
        /* dinp NULL */
        fill_const(dw, nw, NAN);
        upload(d_dw, dw, nw);
        gemm_backward(&d, B, x, w, g, NULL, dw, NULL);
        check_rc(cuda_gemm_backward(g_ctx, &d, B, d_x, d_w, d_g, NULL, d_dw, NULL), "gemm bwd NULL");
        snprintf(name, sizeof name, "gemm%zu.dweight (dinp NULL)", ci);
        compare_dev(name, d_dw, dw, nw, TOL_FC);
        free(x);
        free(w);
        free(b);
        free(g);
        free(out);
        free(dx);
        free(dw);
        free(db);
        dfree_all();
    }
    end_test();
}

/* ---- softmax cross-entropy ------------------------------------------------------ */

/* B rows of N classes. Besides a classifier's (37 x 10), a language model's rows: more
 * rows than the kernel's blocks (each block takes several, their losses added in order)
 * and more classes than a block's threads. */
static void xent_case(int B, int N)
{
    printf("  rows %d, classes %d\n", B, N);
    lcg_t r = {71};
    const size_t n = (size_t)B * N;
    float *x = halloc(n), *p = halloc(n), *g = halloc(n);
    int32_t *y = malloc((size_t)B * sizeof *y);
    assert_non_null(y);
    fill(&r, x, n, -5, 5);
    for (int j = 0; j < N; j++) x[3 * N + j] += 80.0f; /* a row far from 0: needs the max shift */
    x[5 * N + 2] = x[5 * N + 7];                       /* a tie for count_correct */
    for (int b = 0; b < B; b++) y[b] = (int32_t)(lcg_next(&r) % N);
    y[5] = 7;
    float *d_x = dcopy(x, n), *d_p = dalloc(n), *d_g = dalloc(n), *d_loss = dalloc(1);
    int32_t *d_y = dcopy_i32(y, B);
    /* without and with label smoothing */
    static const float smooth[] = {0.0f, 0.1f};
    for (int e = 0; e < 2; e++) {
        const float loss = softmax_xent_forward(B, N, x, y, smooth[e], p);
        check_rc(cuda_softmax_xent_forward(g_ctx, B, N, d_x, d_y, smooth[e], d_p, d_loss), "xent fwd");
        float loss_g;
        download(&loss_g, d_loss, 1);
        compare_scalar(e ? "xent.loss (smoothing 0.1)" : "xent.loss", loss_g, loss, TOL_SOFTMAX);
        compare_dev("xent.probs", d_p, p, n, TOL_SOFTMAX);
        static const float scales[] = {1.0f, 0.37f};
        for (int s = 0; s < 2; s++) {
            softmax_xent_backward(B, N, p, y, smooth[e], scales[s], g);
            check_rc(cuda_softmax_xent_backward(g_ctx, B, N, d_p, d_y, smooth[e], scales[s], d_g), "xent bwd");
            compare_dev(s ? "xent.dlogits (scale 0.37)" : "xent.dlogits (scale 1)", d_g, g, n, TOL_SOFTMAX);
        }
    }
    const int cc = count_correct(B, N, x, y), cg = cuda_count_correct(g_ctx, B, N, d_x, d_y);
    printf("  %-34s cpu=%d gpu=%d %s\n", "count_correct", cc, cg, cc == cg ? "ok" : "FAIL");
    if (cc != cg) g_failures++;
    free(x);
    free(p);
    free(g);
    free(y);
}

static void test_softmax_xent(void **state)
{
    (void)state;
    need_gpu();
    xent_case(37, 10);
    xent_case(600, 1000);
    end_test();
}

/* ---- batch norm ----------------------------------------------------------------- */

static void test_batchnorm(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        int B, C, HW;
        float offset;
    } cases[] = {
        {8, 16, 64, 0.0f},
        {4, 32, 256, 5.0f},
        {16, 8, 1, 0.0f},
        {3, 5, 49, -2.0f},
    };
    lcg_t r = {81};
    char name[96];
    const float momentum = 0.1f;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci].B, C = cases[ci].C, HW = cases[ci].HW;
        const size_t n = (size_t)B * C * HW;
        printf("batchnorm %zu: B=%d C=%d HW=%d mean offset %g\n", ci, B, C, HW, cases[ci].offset);
        float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
        float *gamma = halloc(C), *beta = halloc(C), *rm = halloc(C), *rv = halloc(C);
        float *sm = halloc(C), *si = halloc(C), *dgamma = halloc(C), *dbeta = halloc(C);
        fill(&r, x, n, -1.5f, 1.5f);
        for (size_t i = 0; i < n; i++) x[i] += cases[ci].offset;
        fill(&r, g, n, -1, 1);
        fill(&r, gamma, C, 0.5f, 1.5f);
        fill(&r, beta, C, -0.5f, 0.5f);
        fill(&r, rm, C, -0.2f, 0.2f);
        fill(&r, rv, C, 0.5f, 2.0f);
        fill_const(dx, n, PREFILL);
        float *d_x = dcopy(x, n), *d_out = dalloc(n), *d_g = dcopy(g, n), *d_dx = dcopy(dx, n);
        float *d_gamma = dcopy(gamma, C), *d_beta = dcopy(beta, C), *d_rm = dcopy(rm, C), *d_rv = dcopy(rv, C);
        float *d_sm = dalloc(C), *d_si = dalloc(C), *d_dgamma = dalloc(C), *d_dbeta = dalloc(C);

        /* eval first, on the initial running statistics */
        batchnorm_forward_eval(B, C, HW, x, gamma, beta, rm, rv, out);
        check_rc(cuda_batchnorm_forward_eval(g_ctx, B, C, HW, d_x, d_gamma, d_beta, d_rm, d_rv, d_out), "bn eval");
        snprintf(name, sizeof name, "bn%zu.out (eval)", ci);
        compare_dev(name, d_out, out, n, TOL_BN);

        batchnorm_forward_train(B, C, HW, x, gamma, beta, out, sm, si, rm, rv, momentum);
        check_rc(cuda_batchnorm_forward_train(g_ctx, B, C, HW, d_x, d_gamma, d_beta, d_out, d_sm, d_si, d_rm, d_rv,
                                              momentum),
                 "bn train");
        snprintf(name, sizeof name, "bn%zu.out (train)", ci);
        compare_dev(name, d_out, out, n, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.save_mean", ci);
        compare_dev(name, d_sm, sm, C, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.save_invstd", ci);
        compare_dev(name, d_si, si, C, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.running_mean", ci);
        compare_dev(name, d_rm, rm, C, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.running_var (unbiased)", ci);
        compare_dev(name, d_rv, rv, C, TOL_BN);

        fill_const(dgamma, C, NAN);
        fill_const(dbeta, C, NAN);
        upload(d_dgamma, dgamma, C);
        upload(d_dbeta, dbeta, C);
        batchnorm_backward(B, C, HW, x, gamma, sm, si, g, dx, dgamma, dbeta);
        check_rc(cuda_batchnorm_backward(g_ctx, B, C, HW, d_x, d_gamma, d_sm, d_si, d_g, d_dx, d_dgamma, d_dbeta),
                 "bn bwd");
        snprintf(name, sizeof name, "bn%zu.dinp (+=)", ci);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.dgamma (=)", ci);
        compare_dev(name, d_dgamma, dgamma, C, TOL_BN);
        snprintf(name, sizeof name, "bn%zu.dbeta (=)", ci);
        compare_dev(name, d_dbeta, dbeta, C, TOL_BN);

        /* the CPU's saved statistics drive the cuDNN backward too (same meaning) */
        float *dx2 = halloc(n);
        fill_const(dx2, n, PREFILL);
        upload(d_dx, dx2, n);
        upload(d_sm, sm, C);
        upload(d_si, si, C);
        check_rc(cuda_batchnorm_backward(g_ctx, B, C, HW, d_x, d_gamma, d_sm, d_si, d_g, d_dx, d_dgamma, d_dbeta),
                 "bn bwd (host statistics)");
        snprintf(name, sizeof name, "bn%zu.dinp (host statistics)", ci);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_BN);
        free(dx2);
        free(x);
        free(out);
        free(g);
        free(dx);
        free(gamma);
        free(beta);
        free(rm);
        free(rv);
        free(sm);
        free(si);
        free(dgamma);
        free(dbeta);
        dfree_all();
    }
    end_test();
}

/* Batch norm with an epsilon other than BN_EPS (ONNX's attribute): inputs of a small spread
 * (variance ~0.01 to 0.03), so an epsilon of 0.1 changes every output by far more than the
 * tolerance and one left at BN_EPS would fail. Train, eval and backward, against the
 * CPU's _eps functions. */
static void test_batchnorm_eps(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        int B, C, HW;
        float eps;
    } cases[] = {
        {8, 6, 49, 1e-3f},
        {4, 5, 30, 0.1f},
        {3, 4, 1, 1e-6f},
    };
    lcg_t r = {83};
    char name[96];
    const float momentum = 0.1f;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci].B, C = cases[ci].C, HW = cases[ci].HW;
        const float eps = cases[ci].eps;
        const size_t n = (size_t)B * C * HW;
        printf("batchnorm eps %g: B=%d C=%d HW=%d\n", (double)eps, B, C, HW);
        float *x = halloc(n), *out = halloc(n), *g = halloc(n), *dx = halloc(n);
        float *gamma = halloc(C), *beta = halloc(C), *rm = halloc(C), *rv = halloc(C);
        float *sm = halloc(C), *si = halloc(C), *dgamma = halloc(C), *dbeta = halloc(C);
        fill(&r, x, n, -0.3f, 0.3f);
        fill(&r, g, n, -1, 1);
        fill(&r, gamma, C, 0.5f, 1.5f);
        fill(&r, beta, C, -0.5f, 0.5f);
        fill(&r, rm, C, -0.05f, 0.05f);
        fill(&r, rv, C, 0.01f, 0.05f);
        fill_const(dx, n, PREFILL);
        float *d_x = dcopy(x, n), *d_out = dalloc(n), *d_g = dcopy(g, n), *d_dx = dcopy(dx, n);
        float *d_gamma = dcopy(gamma, C), *d_beta = dcopy(beta, C), *d_rm = dcopy(rm, C), *d_rv = dcopy(rv, C);
        float *d_sm = dalloc(C), *d_si = dalloc(C), *d_dgamma = dalloc(C), *d_dbeta = dalloc(C);

        batchnorm_forward_eval_eps(B, C, HW, x, gamma, beta, rm, rv, out, eps);
        check_rc(cuda_batchnorm_forward_eval_eps(g_ctx, B, C, HW, d_x, d_gamma, d_beta, d_rm, d_rv, d_out, eps),
                 "bn eval eps");
        snprintf(name, sizeof name, "bn-eps%zu.out (eval)", ci);
        compare_dev(name, d_out, out, n, TOL_BN);

        batchnorm_forward_train_eps(B, C, HW, x, gamma, beta, out, sm, si, rm, rv, momentum, eps);
        check_rc(cuda_batchnorm_forward_train_eps(g_ctx, B, C, HW, d_x, d_gamma, d_beta, d_out, d_sm, d_si, d_rm, d_rv,
                                                  momentum, eps),
                 "bn train eps");
        snprintf(name, sizeof name, "bn-eps%zu.out (train)", ci);
        compare_dev(name, d_out, out, n, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.save_mean", ci);
        compare_dev(name, d_sm, sm, C, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.save_invstd", ci);
        compare_dev(name, d_si, si, C, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.running_mean", ci);
        compare_dev(name, d_rm, rm, C, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.running_var", ci);
        compare_dev(name, d_rv, rv, C, TOL_BN);

        fill_const(dgamma, C, NAN);
        fill_const(dbeta, C, NAN);
        upload(d_dgamma, dgamma, C);
        upload(d_dbeta, dbeta, C);
        batchnorm_backward(B, C, HW, x, gamma, sm, si, g, dx, dgamma, dbeta);
        check_rc(cuda_batchnorm_backward_eps(g_ctx, B, C, HW, d_x, d_gamma, d_sm, d_si, d_g, d_dx, d_dgamma, d_dbeta,
                                             eps),
                 "bn bwd eps");
        snprintf(name, sizeof name, "bn-eps%zu.dinp (+=)", ci);
        compare_dev_acc(name, d_dx, dx, n, PREFILL, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.dgamma (=)", ci);
        compare_dev(name, d_dgamma, dgamma, C, TOL_BN);
        snprintf(name, sizeof name, "bn-eps%zu.dbeta (=)", ci);
        compare_dev(name, d_dbeta, dbeta, C, TOL_BN);
        free(x);
        free(out);
        free(g);
        free(dx);
        free(gamma);
        free(beta);
        free(rm);
        free(rv);
        free(sm);
        free(si);
        free(dgamma);
        free(dbeta);
        dfree_all();
    }
    end_test();
}

/* ---- optimizer ------------------------------------------------------------------ */

static void test_sgd(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        float mu;
        int nesterov;
        float wd, gs;
        int gs_on_device;
    } cases[] = {
        {0.0f, 0, 0.0f, 1.0f, 0},  {0.0f, 0, 5e-4f, 0.5f, 0},   {0.9f, 0, 5e-4f, 0.25f, 0},
        {0.9f, 1, 1e-4f, 1.0f, 0}, {0.9f, 1, 5e-4f, 0.125f, 1},
    };
    lcg_t r = {91};
    char name[96];
    const size_t n = 10007;
    const float lr = 0.05f;
    float *w = halloc(n), *g = halloc(n), *u = halloc(n);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        fill(&r, w, n, -1, 1);
        fill_const(u, n, 0.0f);
        float *d_w = dcopy(w, n), *d_u = dcopy(u, n), *d_g = dalloc(n), *d_gs = dcopy(&cases[ci].gs, 1);
        for (int step = 0; step < 3; step++) {
            fill(&r, g, n, -1, 1);
            upload(d_g, g, n);
            sgd_update(n, w, g, u, lr, cases[ci].mu, cases[ci].nesterov, cases[ci].wd, cases[ci].gs);
            check_rc(cuda_sgd_update(g_ctx, n, d_w, d_g, cases[ci].mu != 0.0f ? d_u : NULL, lr, cases[ci].mu,
                                     cases[ci].nesterov, cases[ci].wd,
                                     cases[ci].gs_on_device ? 99.0f : cases[ci].gs, /* ignored when on device */
                                     cases[ci].gs_on_device ? d_gs : NULL),
                     "sgd");
        }
        snprintf(name, sizeof name, "sgd%zu (mu=%g nesterov=%d wd=%g gs=%g%s).w", ci, cases[ci].mu, cases[ci].nesterov,
                 cases[ci].wd, cases[ci].gs, cases[ci].gs_on_device ? " dev" : "");
        compare_dev(name, d_w, w, n, TOL_EXACT);
        snprintf(name, sizeof name, "sgd%zu.momentum", ci);
        compare_dev(name, d_u, u, n, TOL_EXACT);
        dfree_all();
    }
    free(w);
    free(g);
    free(u);
    end_test();
}

/* cuda_adamw_update against adamw_update: the same float expressions in the same order
 * (sqrt and division correctly rounded on both, no FMA), so bit for bit over 3 steps. */
static void test_adamw(void **state)
{
    (void)state;
    need_gpu();
    static const struct {
        double wd;
        float gs;
        int gs_on_device;
    } cases[] = {{0.0, 1.0f, 0}, {0.05, 0.5f, 0}, {0.01, 0.25f, 1}};
    lcg_t r = {93};
    char name[96];
    const size_t n = 10007;
    float *w = halloc(n), *g = halloc(n), *m = halloc(n), *v = halloc(n);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const adamw_hparams_t h = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = cases[ci].wd};
        fill(&r, w, n, -1, 1);
        fill_const(m, n, 0.0f);
        fill_const(v, n, 0.0f);
        float *d_w = dcopy(w, n), *d_m = dcopy(m, n), *d_v = dcopy(v, n), *d_g = dalloc(n),
              *d_gs = dcopy(&cases[ci].gs, 1);
        for (long step = 1; step <= 3; step++) {
            fill(&r, g, n, -1, 1);
            upload(d_g, g, n);
            adamw_update(n, w, g, m, v, &h, step, cases[ci].gs);
            check_rc(cuda_adamw_update(g_ctx, n, d_w, d_g, d_m, d_v, &h, step,
                                       cases[ci].gs_on_device ? 99.0f : cases[ci].gs, /* ignored when on device */
                                       cases[ci].gs_on_device ? d_gs : NULL),
                     "adamw");
        }
        snprintf(name, sizeof name, "adamw%zu (wd=%g gs=%g%s).w", ci, cases[ci].wd, cases[ci].gs,
                 cases[ci].gs_on_device ? " dev" : "");
        compare_dev(name, d_w, w, n, TOL_EXACT);
        snprintf(name, sizeof name, "adamw%zu.m", ci);
        compare_dev(name, d_m, m, n, TOL_EXACT);
        snprintf(name, sizeof name, "adamw%zu.v", ci);
        compare_dev(name, d_v, v, n, TOL_EXACT);
        dfree_all();
    }
    free(w);
    free(g);
    free(m);
    free(v);
    end_test();
}

static void test_norm_clip(void **state)
{
    (void)state;
    need_gpu();
    lcg_t r = {101};
    const size_t n = 300007;
    float *g = halloc(n), *g2 = halloc(n);
    fill(&r, g, n, -0.1f, 0.1f);
    float *d_g = dcopy(g, n), *d_scale = dalloc(1);
    double ss_g = 0.0;
    const double ss = sum_squares(n, g);
    check_rc(cuda_sum_squares(g_ctx, n, d_g, &ss_g), "sum_squares");
    printf("  %-34s cpu=%.17g gpu=%.17g rel=%.3e\n", "sum_squares", ss, ss_g, fabs(ss_g - ss) / ss);
    if (!(fabs(ss_g - ss) <= 1e-12 * ss)) g_failures++;
    const float norm = (float)sqrt(ss);

    /* clip_grad_norm, clipping and not */
    static const float factors[] = {0.5f, 2.0f, 0.0f};
    for (int k = 0; k < 3; k++) {
        const float max_norm = factors[k] * norm;
        memcpy(g2, g, n * sizeof(float));
        upload(d_g, g, n);
        const float nc = clip_grad_norm(n, g2, max_norm);
        float ng = 0.0f;
        check_rc(cuda_clip_grad_norm(g_ctx, n, d_g, max_norm, &ng), "clip_grad_norm");
        char name[64];
        snprintf(name, sizeof name, "clip_grad_norm(%g*norm).norm", factors[k]);
        compare_scalar(name, ng, nc, TOL_NORM);
        snprintf(name, sizeof name, "clip_grad_norm(%g*norm).g", factors[k]);
        compare_dev(name, d_g, g2, n, TOL_NORM);
    }

    /* the worker's rule (worker_apply_gradient) computed on the device */
    static const float gss[] = {1.0f, 0.25f};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 3; c++) {
            const float gs = gss[k], clip = factors[c] * norm * gs;
            float expect = gs;
            const float nn = gs * (float)sqrt(ss);
            if (clip > 0 && nn > clip) expect *= clip / nn;
            upload(d_g, g, n);
            check_rc(cuda_clip_scale(g_ctx, n, d_g, gs, clip, d_scale), "clip_scale");
            float got;
            download(&got, d_scale, 1);
            char name[64];
            snprintf(name, sizeof name, "clip_scale(gs=%g, clip=%g*norm)", gs, factors[c]);
            if (clip > 0) compare_scalar(name, got, expect, TOL_NORM);
        }
    free(g);
    free(g2);
    dfree_all();
    end_test();
}

/* ---- models --------------------------------------------------------------------- */

/* Kind of the layer that owns a parameter tensor (by offset). */
static layer_kind_t tensor_kind(const model_t *m, const tensor_info_t *t)
{
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        const int has_params = l->kind == LAYER_CONV || l->kind == LAYER_FC || l->kind == LAYER_BN ||
                               l->kind == LAYER_LINEAR || l->kind == LAYER_LAYERNORM ||
                               (l->kind == LAYER_CONST && !l->op.cnst.frozen) || l->kind == LAYER_GATHER_PARAM ||
                               l->kind == LAYER_EMBED;
        const int two = l->kind == LAYER_BN || l->kind == LAYER_LAYERNORM; /* weight and bias */
        if (!has_params) continue;
        if (l->w_off == t->offset) return l->kind;
        if ((l->has_bias || two) && l->b_off == t->offset) return l->kind;
    }
    fail_msg("tensor %s belongs to no layer", t->name);
    return LAYER_FC;
}

static double grad_tol(layer_kind_t k)
{
    return k == LAYER_CONV        ? TOL_GRAD_CONV
           : k == LAYER_BN        ? TOL_GRAD_BN
           : k == LAYER_LAYERNORM ? TOL_GRAD_LN
                                  : TOL_GRAD_FC;
}

/* Compares every parameter tensor of a (gradient-shaped) buffer by name. e2e: use the end
 * to end tolerance instead of the per-kind one. */
/* Imported networks are compared as whole vectors (every gradient, weight, momentum and
 * buffer at once, relative to the largest element of all): their elements that are zero in
 * exact arithmetic (the bias of a batch norm whose output a later batch norm re-centres,
 * the running mean of a zero-mean input) hold rounding noise on both backends, of the
 * scale of the terms summed and not of the result, so a ratio per tensor compares noise
 * with noise. The built-in networks keep the per-tensor, per-kind checks. */
static int g_whole_network;
#define TOL_WHOLE_GRAD 1e-3 /* the loosest per-kind tight tolerance (TOL_GRAD_CONV, TOL_GRAD_BN) */

static void compare_param_tensors(const model_t *m, const char *what, const float *gpu, const float *cpu, int e2e)
{
    if (g_whole_network) {
        compare_ex(what, gpu, cpu, m->nparams, e2e ? TOL_E2E_GRAD : TOL_WHOLE_GRAD, e2e);
        return;
    }
    char name[64 + MODEL_TENSOR_NAME_MAX];
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->is_buffer) continue;
        snprintf(name, sizeof name, "%s %s", what, t->name);
        compare_ex(name, gpu + t->offset, cpu + t->offset, t->count, e2e ? TOL_E2E_GRAD : grad_tol(tensor_kind(m, t)),
                   e2e);
    }
}

static void check_model_rc(cuda_model_t *cm, int rc, const char *what)
{
    if (rc != 0) fail_msg("%s: %s", what, cuda_model_error(cm));
}

/* 1: the next model_parity_run keeps the weights its caller drew (a GPT's own
 * initialisation: model_init_params leaves embeddings at zero). */
static int g_params_set;

/* The parity run of two models of one layout built for maxB (m the CPU reference, mg the
 * worker's host model of the GPU path); frees both. */
/* A batch of n model-input floats: float-coded token ids below the embedding's rows where
 * the model reads its input through an embedding (a language model), else values in
 * [-1.5, 1.5]. */
static void fill_inputs(lcg_t *r, const model_t *m, float *x, size_t n)
{
    const layer_t *first = &m->layers[0];
    if (first->kind != LAYER_EMBED) {
        fill(r, x, n, -1.5f, 1.5f);
        return;
    }
    for (size_t i = 0; i < n; i++) x[i] = (float)(lcg_next(r) % (uint64_t)first->op.table.shape.dims[0]);
}

static void model_parity_run(model_t *m, model_t *mg, int maxB, int B2)
{
    char err[512], label[64 + MODEL_TENSOR_NAME_MAX];
    const char *name = m->name;
    if (!g_params_set) model_init_params(m, 1234);
    g_params_set = 0;
    /* dropout masks from this seed, the step counted on each side (model.h) */
    m->dropout_seed = 0x5eed5eedULL;
    cuda_model_t *cm = cuda_model_create(m, g_device, err, sizeof err);
    if (!cm) fail_msg("%s", err);
    check_model_rc(cm, cuda_model_upload(cm, m), "upload");
    printf("model %s: %zu parameters, %zu buffer floats, device memory %.1f MiB\n", name, m->nparams, m->nbuffers,
           (double)cuda_model_device_bytes(cm) / (1 << 20));

    lcg_t r = {121};
    /* N logits at each of P positions per sample, each position with its label */
    const size_t in = (size_t)m->C * m->H * m->W, N = (size_t)m->num_classes, P = (size_t)m->positions;
    float *x = halloc((size_t)maxB * in), *logits = halloc((size_t)maxB * P * N), *g = halloc(m->nparams);
    int32_t *y = malloc((size_t)maxB * P * sizeof(int32_t));
    assert_non_null(y);
    fill_inputs(&r, m, x, (size_t)maxB * in);
    for (size_t b = 0; b < (size_t)maxB * P; b++) y[b] = (int32_t)(lcg_next(&r) % N);

    /* ---- step 1 at maxB: forward */
    printf("model %s, step 1 (B=%d): forward\n", name, maxB);
    const float loss_c = model_forward(m, x, y, maxB, 1);
    memcpy(logits, model_logits(m), (size_t)maxB * P * N * sizeof(float));
    const float loss_g = cuda_model_forward(cm, x, y, maxB, 1);
    if (loss_g < 0.0f) fail_msg("cuda_model_forward: %s", cuda_model_error(cm));
    const float *lg = cuda_model_logits_host(cm, maxB);
    if (!lg) fail_msg("logits: %s", cuda_model_error(cm));
    compare_scalar("loss", loss_g, loss_c, TOL_LOSS);
    compare("logits", lg, logits, (size_t)maxB * P * N, TOL_LOGITS);

    /* backward end to end (each backend on its own forward) */
    printf("model %s, step 1: backward end to end\n", name);
    model_backward(m, x, y, maxB, 1.0f);
    check_model_rc(cm, cuda_model_backward(cm, maxB, 1.0f), "backward");
    check_model_rc(cm, cuda_model_download_grads(cm, g, 0), "download grads");
    compare_param_tensors(m, "grad(e2e)", g, m->grads, 1);

    /* backward on the host's forward state: the tight check */
    printf("model %s, step 1: backward on the host's activations\n", name);
    check_model_rc(cm, cuda_model_upload_forward_state(cm, m, maxB), "upload forward state");
    check_model_rc(cm, cuda_model_backward(cm, maxB, 1.0f), "backward");
    check_model_rc(cm, cuda_model_download_grads(cm, NULL, 1), "download grads (pinned, async)");
    check_model_rc(cm, cuda_model_sync(cm), "sync");
    compare_param_tensors(m, "grad", cuda_model_grads_host(cm), m->grads, 0);

    /* SGD with clipping at half the norm (the worker's rule) on both */
    printf("model %s, step 1: SGD (momentum 0.9, wd 5e-4, clip at half the norm)\n", name);
    const float lr = 0.05f, mu = 0.9f, wd = 5e-4f;
    const float clip = 0.5f * (float)sqrt(sum_squares(m->nparams, m->grads));
    float gs = 1.0f;
    {
        const float nn = gs * (float)sqrt(sum_squares(m->nparams, m->grads));
        if (nn > clip) gs *= clip / nn;
    }
    float *w_old = halloc(m->nparams);
    memcpy(w_old, m->params, m->nparams * sizeof(float));
    sgd_update(m->nparams, m->params, m->grads, m->momentum, lr, mu, 0, wd, gs);
    check_model_rc(cm, cuda_model_sgd(cm, lr, mu, 0, wd, 1.0f, clip), "sgd");
    check_model_rc(cm, cuda_model_download_params(cm, mg), "download params");
    /* the device's count of training forwards comes back with the weights */
    printf("  %-34s cpu=%llu gpu=%llu %s\n", "dropout step", (unsigned long long)m->dropout_step,
           (unsigned long long)mg->dropout_step, mg->dropout_step == m->dropout_step ? "ok" : "FAIL");
    if (mg->dropout_step != m->dropout_step) g_failures++;
    if (g_whole_network) {
        compare("buffers", mg->buffers, m->buffers, m->nbuffers, TOL_BUFFERS);
        compare_update("weights(after sgd)", mg->params, m->params, w_old, m->nparams, TOL_WHOLE_GRAD);
        compare("momentum", mg->momentum, m->momentum, m->nparams, TOL_WHOLE_GRAD);
    }
    for (int i = 0; i < m->ntensors && !g_whole_network; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (t->is_buffer) {
            snprintf(label, sizeof label, "buffer %s", t->name);
            compare(label, mg->buffers + t->offset, m->buffers + t->offset, t->count, TOL_BUFFERS);
            continue;
        }
        snprintf(label, sizeof label, "weight(after sgd) %s", t->name);
        compare_update(label, mg->params + t->offset, m->params + t->offset, w_old + t->offset, t->count,
                       grad_tol(tensor_kind(m, t)));
        snprintf(label, sizeof label, "momentum %s", t->name);
        compare(label, mg->momentum + t->offset, m->momentum + t->offset, t->count, grad_tol(tensor_kind(m, t)));
    }

    /* ---- step 2 at B2 < maxB as the worker runs it (worker/train.c): mg plays the worker's
     * model, its params and grads and the batch page-locked; the weights go up, the step
     * writes the gradient into mg->grads, the reduced gradient goes back up and the SGD step
     * (Nesterov) runs on the device; the batch-norm statistics come down. */
    printf("model %s, step 2 (B=%d): the worker's path, Nesterov on the device\n", name, B2);
    check_model_rc(cm, cuda_model_upload(cm, m), "upload"); /* momentum, buffers as on the host */
    memcpy(mg->params, m->params, m->nparams * sizeof(float));
    const size_t xbytes = ((size_t)maxB * in * sizeof(float) + 4095) & ~(size_t)4095;
    const size_t ybytes = ((size_t)maxB * P * sizeof(int32_t) + 4095) & ~(size_t)4095;
    float *xb = aligned_alloc(4096, xbytes);
    int32_t *yb = aligned_alloc(4096, ybytes);
    assert_non_null(xb);
    assert_non_null(yb);
    check_model_rc(cm, cuda_model_host_register(cm, xb, xbytes), "register the batch");
    check_model_rc(cm, cuda_model_host_register(cm, yb, ybytes), "register the labels");
    check_model_rc(cm, cuda_model_host_register(cm, mg->params, mg->nparams * sizeof(float)), "register params");
    check_model_rc(cm, cuda_model_host_register(cm, mg->grads, (mg->nparams + MODEL_GRAD_EXTRA) * sizeof(float)),
                   "register grads");
    fill_inputs(&r, m, xb, (size_t)B2 * in);
    for (size_t b = 0; b < (size_t)B2 * P; b++) yb[b] = (int32_t)(lcg_next(&r) % N);
    check_model_rc(cm, cuda_model_prepare_batch(cm, B2), "prepare batch");
    check_model_rc(cm, cuda_model_upload_params(cm, mg->params), "upload params");
    float loss_g2 = -1.0f;
    check_model_rc(cm, cuda_model_train_step(cm, xb, yb, B2, 0.5f, mg->grads, &loss_g2), "train_step");
    const float loss_c2 = model_forward(m, xb, yb, B2, 1);
    model_backward(m, xb, yb, B2, 0.5f);
    compare_scalar("loss", loss_g2, loss_c2, TOL_LOSS);
    compare_param_tensors(m, "grad(e2e, scale 0.5, into host)", mg->grads, m->grads, 1);
    check_model_rc(cm, cuda_model_download_buffers(cm, mg->buffers), "download buffers");
    if (g_whole_network) compare("buffers(step 2)", mg->buffers, m->buffers, m->nbuffers, TOL_BUFFERS);
    for (int i = 0; i < m->ntensors && !g_whole_network; i++) {
        const tensor_info_t *t = &m->tensors[i];
        if (!t->is_buffer) continue;
        snprintf(label, sizeof label, "buffer(step 2) %s", t->name);
        compare(label, mg->buffers + t->offset, m->buffers + t->offset, t->count, TOL_BUFFERS);
    }
    /* the update from the host's gradient (what ssgd uploads after its allreduce): the same
     * inputs on both sides, so the SGD kernel must match the CPU bit for bit */
    memcpy(mg->grads, m->grads, m->nparams * sizeof(float));
    check_model_rc(cm, cuda_model_upload_grads(cm, mg->grads), "upload grads");
    sgd_update(m->nparams, m->params, m->grads, m->momentum, lr, mu, 1, wd, 0.5f);
    check_model_rc(cm, cuda_model_sgd(cm, lr, mu, 1, wd, 0.5f, 0.0f), "sgd (nesterov)");
    check_model_rc(cm, cuda_model_download_params(cm, mg), "download params");
    compare("weight(after nesterov sgd)", mg->params, m->params, m->nparams, TOL_EXACT);
    compare("momentum(after nesterov sgd)", mg->momentum, m->momentum, m->nparams, TOL_EXACT);

    /* ---- a third batch size, then B2 again: convolution choices cached per batch size */
    const int B3 = B2 > 2 ? B2 / 2 : 1;
    check_model_rc(cm, cuda_model_upload(cm, m), "upload");
    for (int k = 0; k < 2; k++) {
        const int Bk = k ? B2 : B3;
        printf("model %s, training forward at B=%d (%s)\n", name, Bk, k ? "cached choice" : "new batch size");
        check_model_rc(cm, cuda_model_prepare_batch(cm, Bk), "prepare batch");
        const float lc = model_forward(m, xb, yb, Bk, 1);
        memcpy(logits, model_logits(m), (size_t)Bk * P * N * sizeof(float));
        const float lg_ = cuda_model_forward(cm, xb, yb, Bk, 1);
        if (lg_ < 0.0f) fail_msg("cuda_model_forward: %s", cuda_model_error(cm));
        const float *lgk = cuda_model_logits_host(cm, Bk);
        if (!lgk) fail_msg("logits: %s", cuda_model_error(cm));
        snprintf(label, sizeof label, "loss (B=%d)", Bk);
        compare_scalar(label, lg_, lc, TOL_LOSS);
        snprintf(label, sizeof label, "logits (B=%d)", Bk);
        compare(label, lgk, logits, (size_t)Bk * P * N, TOL_LOGITS);
    }
    memcpy(x, xb, (size_t)B2 * in * sizeof(float));
    memcpy(y, yb, (size_t)B2 * P * sizeof(int32_t));

    /* ---- evaluation forward (batch norm on running statistics) */
    printf("model %s, eval forward (B=%d)\n", name, B2);
    check_model_rc(cm, cuda_model_upload(cm, m), "upload");
    const float loss_c3 = model_forward(m, x, y, B2, 0);
    memcpy(logits, model_logits(m), (size_t)B2 * P * N * sizeof(float));
    const float loss_g3 = cuda_model_forward(cm, x, y, B2, 0);
    if (loss_g3 < 0.0f) fail_msg("cuda_model_forward (eval): %s", cuda_model_error(cm));
    lg = cuda_model_logits_host(cm, B2);
    if (!lg) fail_msg("logits: %s", cuda_model_error(cm));
    compare_scalar("loss (eval)", loss_g3, loss_c3, TOL_LOSS);
    compare("logits (eval)", lg, logits, (size_t)B2 * P * N, TOL_LOGITS);

    cuda_model_free(cm); /* unregisters xb, yb and mg's buffers: before they are freed */
    model_free(m);
    model_free(mg);
    free(x);
    free(logits);
    free(g);
    free(y);
    free(w_old);
    free(xb);
    free(yb);
    if (!g_whole_network) end_test(); /* the zoo goes through every network first */
}

static void model_parity(const char *name, int maxB, int B2)
{
    char err[512];
    model_t *m = NULL, *mg = NULL;
    if (model_create(name, maxB, &m, err, sizeof err) != 0) fail_msg("%s", err);
    if (model_create(name, maxB, &mg, err, sizeof err) != 0) fail_msg("%s", err);
    model_parity_run(m, mg, maxB, B2);
}

static void test_model_mlp(void **state)
{
    (void)state;
    need_gpu();
    model_parity("mlp", 32, 25);
}

static void test_model_lenet5(void **state)
{
    (void)state;
    need_gpu();
    model_parity("lenet5", 32, 25);
}

static void test_model_cifar10_quick(void **state)
{
    (void)state;
    need_gpu();
    model_parity("cifar10_quick", 32, 25);
}

static void test_model_resnet20(void **state)
{
    (void)state;
    need_gpu();
    model_parity("resnet20", 16, 9);
}

/* A network of every layer kind and geometry only imported (ONNX) graphs have, built as
 * model/onnx_import.c builds one: a batch norm with epsilon 1e-3 on the model input (its
 * input gradient is never needed, and cuDNN writes one anyway), a padded convolution,
 * LeakyRelu, a depthwise convolution (channel multiplier 2, dilation (1, 2), no bias), a
 * convolution with SAME_UPPER's asymmetric pads, sigmoid and tanh, a channel concatenation
 * of two layers and then of the model input, a ceil-mode max pool with pads, an average
 * pool with count_include_pad, dropout, a Gemm with the (IN, OUT) weight, alpha 2 and
 * beta 0.5, dropout again, and a Gemm with alpha 0.7 and no bias for the logits. */
static int build_onnx_layers(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    static const char *const bn0[4] = {"bn0.weight", "bn0.bias", "bn0.running_mean", "bn0.running_var"};
    const int l0 = model_build_bn_eps(b, -1, bn0, 1e-3f);
    const conv2d_desc_t c1 = {.OC = 8,
                              .KH = 3,
                              .KW = 3,
                              .sH = 1,
                              .sW = 1,
                              .pad_t = 1,
                              .pad_l = 1,
                              .pad_b = 1,
                              .pad_r = 1,
                              .dH = 1,
                              .dW = 1,
                              .groups = 1};
    const int l1 = model_build_conv(b, l0, &c1, 1, "c1.weight", "c1.bias");
    const int l2 = model_build_elementwise(b, LAYER_LEAKY_RELU, l1, 0.1f);
    const conv2d_desc_t dw = {.OC = 16,
                              .KH = 3,
                              .KW = 3,
                              .sH = 1,
                              .sW = 1,
                              .pad_t = 1,
                              .pad_l = 2,
                              .pad_b = 1,
                              .pad_r = 2,
                              .dH = 1,
                              .dW = 2,
                              .groups = 8};
    const int l3 = model_build_conv(b, l2, &dw, 0, "dw.weight", NULL);
    const int l4 = model_build_elementwise(b, LAYER_SIGMOID, l3, 0.0f);
    const conv2d_desc_t c5 = {.OC = 4,
                              .KH = 2,
                              .KW = 2,
                              .sH = 1,
                              .sW = 1,
                              .pad_t = 0,
                              .pad_l = 0,
                              .pad_b = 1,
                              .pad_r = 1,
                              .dH = 1,
                              .dW = 1,
                              .groups = 1};
    const int l5 = model_build_conv(b, l2, &c5, 1, "c5.weight", "c5.bias");
    const int l6 = model_build_elementwise(b, LAYER_TANH, l5, 0.0f);
    const int l7 = model_build_concat(b, l4, l6);
    const int l8 = model_build_concat(b, l7, -1);
    const pool2d_desc_t mp = {.KH = 3,
                              .KW = 3,
                              .sH = 2,
                              .sW = 2,
                              .pad_t = 1,
                              .pad_l = 1,
                              .pad_b = 1,
                              .pad_r = 1,
                              .dH = 1,
                              .dW = 1,
                              .ceil_mode = 1};
    const int l9 = model_build_pool(b, LAYER_MAXPOOL, l8, &mp);
    const pool2d_desc_t ap = {.KH = 2,
                              .KW = 2,
                              .sH = 1,
                              .sW = 1,
                              .pad_t = 1,
                              .pad_l = 1,
                              .pad_b = 1,
                              .pad_r = 1,
                              .dH = 1,
                              .dW = 1,
                              .count_include_pad = 1};
    const int l10 = model_build_pool(b, LAYER_AVGPOOL, l9, &ap);
    const int l11 = model_build_elementwise(b, LAYER_DROPOUT, l10, 0.3f);
    const gemm_desc_t g1 = {.layout = GEMM_W_IN_OUT, .alpha = 2.0f, .beta = 0.5f};
    const int l12 = model_build_gemm(b, l11, 24, &g1, "g1.weight", "g1.bias");
    const int l13 = model_build_elementwise(b, LAYER_LEAKY_RELU, l12, 0.2f);
    const int l14 = model_build_elementwise(b, LAYER_DROPOUT, l13, 0.5f);
    const gemm_desc_t g2 = {.layout = GEMM_W_OUT_IN, .alpha = 0.7f, .beta = 1.0f};
    model_build_gemm(b, l14, 10, &g2, "g2.weight", NULL);
    if (model_build_failed(b)) {
        snprintf(err, errlen, "build_onnx_layers: a layer was refused");
        return -1;
    }
    return 0;
}

/* Two copies of a network built by build on input shape in (the host's and the device's
 * starting point), then model_parity_run's training step and evaluation on both. */
static void custom_parity(const char *name, const model_shape_t *in, model_build_fn build)
{
    char err[512];
    model_t *m = NULL, *mg = NULL;
    if (model_create_custom_shape(name, in, 10, 16, build, NULL, &m, err, sizeof err) != 0 ||
        model_create_custom_shape(name, in, 10, 16, build, NULL, &mg, err, sizeof err) != 0)
        fail_msg("%s", err);
    model_parity_run(m, mg, 16, 9);
}

static void test_model_onnx_layers(void **state)
{
    (void)state;
    need_gpu();
    const model_shape_t in = {.rank = 3, .dims = {3, 12, 11}};
    custom_parity("onnx_layers", &in, build_onnx_layers);
}

/* Imported networks, as users bring them: every NAME.onnx of $PACER_GPU_ZOO (sorted; the
 * torchvision zoo and the transformers exported by bench/gpu_zoo_export.py) imported twice
 * and run through the same two training steps, batch-size changes and evaluation as the
 * built-in models. Without the variable the case says so and checks nothing. */
static int zoo_name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_model_zoo(void **state)
{
    (void)state;
    need_gpu();
    const char *dir = getenv("PACER_GPU_ZOO");
    if (!dir || !*dir) {
        printf("zoo: PACER_GPU_ZOO not set (a directory of .onnx files): no imported network checked\n");
        return;
    }
    DIR *d = opendir(dir);
    if (!d) fail_msg("zoo: cannot open %s", dir);
    char *names[64];
    int n = 0;
    for (struct dirent *e; n < 64 && (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".onnx") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], zoo_name_cmp);
    g_whole_network = 1;
    for (int i = 0; i < n; i++) {
        char path[1024], err[512];
        model_t *m = NULL, *mg = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        names[i][strlen(names[i]) - 5] = 0;
        printf("zoo: %s\n", path);
        /* batches of 16, 12 and 6: batch norm's statistics over a few samples of small
         * planes are ill-conditioned (at 2 samples of 1x1 the two backends' roundings
         * moved efficientnet_b0's logits by 0.6) */
        if (onnx_import_file(path, names[i], 16, &m, err, sizeof err) != 0 ||
            onnx_import_file(path, names[i], 16, &mg, err, sizeof err) != 0)
            fail_msg("zoo: %s: %s", path, err);
        model_parity_run(m, mg, 16, 12);
        printf("zoo: %s: %d check(s) out of tolerance so far\n", names[i], g_failures);
        free(names[i]);
    }
    g_whole_network = 0;
    if (n == 0) fail_msg("zoo: no .onnx file in %s", dir);
    end_test();
}

/* ---- no device needed ---------------------------------------------------------- */

/* cuDNN 9 reports "not supported" as CUDNN_STATUS_NOT_SUPPORTED or one of its sub-codes;
 * the convolution fallbacks (conv.cu) run on every one of them and on nothing else. */
/* Every N-D row of issue 43's engine in one network on (3, 8, 8): the unary functions,
 * trainable constants broadcast over the plane, the channels and the batch (their
 * gradients summed over the batch on the device too), Sub and Div of activations, a
 * Transpose, a strided Slice, a Reshape and a Concat on a non-channel axis, then a Gemm. */
static int build_nd_rows(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    const model_shape_t cs = {.rank = 3, .dims = {3, 1, 1}}, ps = {.rank = 2, .dims = {8, 8}};
    const int l0 = model_build_unary(b, LAYER_NEG, -1, 0.0f);
    const int l1 = model_build_unary(b, LAYER_EXP, l0, 0.0f);
    const int l2 = model_build_unary(b, LAYER_POW, model_build_unary(b, LAYER_ABS, -1, 0.0f), 1.5f);
    const int l3 = model_build_binary(b, LAYER_BMUL, l2, model_build_const(b, &cs, "nd.scale", 0));
    const int l4 = model_build_binary(b, LAYER_BADD, l3, model_build_const(b, &ps, "nd.bias", 0));
    const int l5 = model_build_binary(b, LAYER_SUB, l4, l1);
    const int l6 = model_build_binary(b, LAYER_DIV, l5, model_build_unary(b, LAYER_SQRT, l1, 0.0f));
    const int l7 = model_build_unary(b, LAYER_RECIPROCAL, model_build_unary(b, LAYER_EXP, l6, 0.0f), 0.0f);
    const int perm[3] = {1, 2, 0};
    const int l8 = model_build_slice(b, model_build_transpose(b, l7, perm), 1, 1, 8, 2); /* (8, 4, 3) */
    const model_shape_t rs = {.rank = 2, .dims = {8, 12}};
    const int l9 = model_build_reshape(b, l8, &rs);
    const int l10 = model_build_concat_axis(b, l9, l9, 1); /* (8, 24) */
    const model_shape_t flat = {.rank = 1, .dims = {8 * 24}};
    const gemm_desc_t g = {.layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    model_build_gemm(b, model_build_reshape(b, l10, &flat), 10, &g, "nd.fc.weight", "nd.fc.bias");
    if (model_build_failed(b)) {
        snprintf(err, errlen, "build_nd_rows: a layer was refused");
        return -1;
    }
    return 0;
}

static void test_model_nd_rows(void **state)
{
    (void)state;
    need_gpu();
    const model_shape_t in = {.rank = 3, .dims = {3, 8, 8}};
    custom_parity("nd_rows", &in, build_nd_rows);
}

/* Issue 44's rows in one transformer block on tokens (6, 8): a layer norm of the model
 * input (no input gradient), Linear Q (with a bias), K and V over the last axis, K
 * transposed, the scores Q K^T (a matmul of two activations), their Softmax, the product
 * with V, a Linear to 16 with GELU, a layer norm over both axes, then LogSoftmax along the
 * tokens, ReduceMean and ReduceSum over the tokens, Erf, joined and flattened into a Gemm. */
static int build_attention(model_builder_t *b, void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    static const int tr[2] = {1, 0};
    const int ln = model_build_layernorm(b, -1, 1, 1e-5f, "ln1.weight", "ln1.bias");
    const int q = model_build_fc_bias(b, model_build_linear(b, ln, 8, "q.weight"), "q.bias");
    const int k = model_build_linear(b, ln, 8, "k.weight"), v = model_build_linear(b, ln, 8, "v.weight");
    const int att = model_build_softmax(b, LAYER_SOFTMAX, model_build_bmm(b, q, model_build_transpose(b, k, tr)), 1);
    const int o = model_build_bmm(b, att, v); /* (6, 8) */
    const int h = model_build_unary(b, LAYER_GELU, model_build_linear(b, o, 16, "mlp.weight"), 0.0f);
    const int ln2 = model_build_layernorm(b, h, 0, 1e-6f, "ln2.weight", "ln2.bias"); /* D = 96 */
    const int ls = model_build_softmax(b, LAYER_LOG_SOFTMAX, ln2, 0);
    const int mean = model_build_unary(b, LAYER_ERF, model_build_reduce(b, LAYER_REDUCE_MEAN, ln2, 1u, 1), 0.0f);
    const int sum = model_build_reduce(b, LAYER_REDUCE_SUM, ls, 1u, 1); /* (1, 16) */
    const model_shape_t flat = {.rank = 1, .dims = {32}};
    const gemm_desc_t g = {.layout = GEMM_W_OUT_IN, .alpha = 1.0f, .beta = 1.0f};
    model_build_gemm(b, model_build_reshape(b, model_build_concat_axis(b, mean, sum, 0), &flat), 10, &g, "head.weight",
                     "head.bias");
    if (model_build_failed(b)) {
        snprintf(err, errlen, "build_attention: a layer was refused");
        return -1;
    }
    return 0;
}

/* The built-in GPT (model/gpt.c) of a language-model job on the GPU: token and position
 * embeddings, causal attention, GELU MLPs and layer norms, with the loss over every
 * position of every window (the labels and logits of B * block rows). Two shapes: tied
 * embeddings with biases, and untied without biases, with dropout (the device's masks must
 * be the host's). */
static void gpt_parity(const char *name, const model_gpt_t *g)
{
    char err[512];
    model_t *m = NULL, *mg = NULL;
    if (model_create_gpt(name, g, 8, &m, err, sizeof err) != 0 ||
        model_create_gpt(name, g, 8, &mg, err, sizeof err) != 0)
        fail_msg("%s", err);
    model_gpt_init(m, g->layers, 1234);
    g_params_set = 1;
    model_parity_run(m, mg, 8, 5);
}

static void test_model_gpt(void **state)
{
    (void)state;
    need_gpu();
    const model_gpt_t tied = {.layers = 2, .heads = 2, .embd = 16, .block = 12, .vocab = 40, .bias = 1, .tie = 1};
    gpt_parity("gpt_tied", &tied);
    const model_gpt_t untied = {
        .layers = 2, .heads = 4, .embd = 32, .block = 9, .vocab = 67, .dropout = 0.1f, .bias = 0, .tie = 0};
    gpt_parity("gpt_dropout", &untied);
}

static void test_model_attention(void **state)
{
    (void)state;
    need_gpu();
    const model_shape_t in = {.rank = 2, .dims = {6, 8}};
    custom_parity("attention", &in, build_attention);
}

static void test_cudnn_status_categories(void **state)
{
    (void)state;
    static const struct {
        int status, not_supported;
    } cases[] = {
        {CUDNN_STATUS_SUCCESS, 0},
        {CUDNN_STATUS_NOT_INITIALIZED, 0},
        {CUDNN_STATUS_BAD_PARAM, 0},
        {CUDNN_STATUS_INTERNAL_ERROR, 0},
        {CUDNN_STATUS_EXECUTION_FAILED, 0},
        {CUDNN_STATUS_NOT_SUPPORTED, 1},
#if CUDNN_MAJOR >= 9
        {CUDNN_STATUS_BAD_PARAM_NULL_POINTER, 0},
        {CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, 1},
        {CUDNN_STATUS_NOT_SUPPORTED_SHAPE, 1},
        {CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, 1},
        {CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH, 1},
        {CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT, 1},
        {CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE, 1},
        {CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED, 0},
        {CUDNN_STATUS_EXECUTION_FAILED_CUBLAS, 0},
#endif
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int got = cuda_cudnn_is_not_supported(cases[i].status);
        printf("  cudnn status %-5d -> %-13s %s\n", cases[i].status, got ? "not supported" : "other",
               got == cases[i].not_supported ? "ok" : "FAIL");
        bad += got != cases[i].not_supported;
    }
#if CUDNN_MAJOR >= 9
    /* the whole category and its neighbours */
    for (int st = 2990; st <= 4010; st++) {
        const int want = st >= 3000 && st < 4000;
        if (cuda_cudnn_is_not_supported(st) != want) {
            printf("  cudnn status %d: FAIL\n", st);
            bad++;
        }
    }
#endif
    if (bad) fail_msg("%d cuDNN statuses misclassified", bad);
}

/* The probe's classification of CUDA runtime errors: each kind tells the person what to do. */
static void test_cuda_error_classes(void **state)
{
    (void)state;
    static const struct {
        int error, driver_version, kind;
    } cases[] = {
        {cudaSuccess, 13000, CUDA_PROBE_OK},
        {cudaErrorNoDevice, 13000, CUDA_PROBE_NO_DEVICE},
        {cudaErrorInsufficientDriver, 0, CUDA_PROBE_NO_DRIVER},          /* no driver at all */
        {cudaErrorInsufficientDriver, 12040, CUDA_PROBE_DRIVER_TOO_OLD}, /* a driver, too old */
        {cudaErrorStubLibrary, 0, CUDA_PROBE_NO_DRIVER},
        {cudaErrorCallRequiresNewerDriver, 12040, CUDA_PROBE_DRIVER_TOO_OLD},
        {cudaErrorNoKernelImageForDevice, 13000, CUDA_PROBE_NO_KERNEL_IMAGE},
        {cudaErrorUnsupportedPtxVersion, 13000, CUDA_PROBE_NO_KERNEL_IMAGE},
        {cudaErrorInvalidPtx, 13000, CUDA_PROBE_NO_KERNEL_IMAGE},
        {cudaErrorInvalidKernelImage, 13000, CUDA_PROBE_NO_KERNEL_IMAGE},
        {cudaErrorMemoryAllocation, 13000, CUDA_PROBE_ERROR},
        {cudaErrorDevicesUnavailable, 13000, CUDA_PROBE_ERROR},
        {cudaErrorLaunchFailure, 13000, CUDA_PROBE_ERROR},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int got = cuda_classify_error(cases[i].error, cases[i].driver_version);
        printf("  cuda error %-4d driver %-5d -> %-16s %s\n", cases[i].error, cases[i].driver_version,
               cuda_probe_kind_name(got), got == cases[i].kind ? "ok" : "FAIL");
        bad += got != cases[i].kind;
    }
    if (bad) fail_msg("%d CUDA errors misclassified", bad);
}

/* The language models' kernels: an embedding with repeated ids and one outside the table
 * (its gradient summed in the CPU's order, written whole and added onto a tied reader's),
 * and the causal softmax (expf against glibc's: TOL_SOFTMAX; its backward added). */
static void test_seq(void **state)
{
    (void)state;
    need_gpu();
    enum { V = 11, E = 6, R = 40, M = 6, T = 9 };
    lcg_t r = {60};
    float *ids = halloc(R), *table = halloc(V * E), *out = halloc(R * E), *g = halloc(R * E), *dt = halloc(V * E);
    for (int j = 0; j < R; j++) ids[j] = (float)((5 * j + 2) % V);
    ids[3] = -1.0f, ids[7] = (float)V;
    fill(&r, table, V * E, -1, 1);
    fill(&r, g, R * E, -1, 1);
    float *d_ids = dcopy(ids, R), *d_t = dcopy(table, V * E), *d_g = dcopy(g, R * E), *d_out = dalloc(R * E),
          *d_dt = dalloc(V * E);
    embed_forward(R, V, E, ids, table, out);
    embed_backward(R, V, E, ids, g, dt, 0);
    check_rc(cuda_embed_forward(g_ctx, R, V, E, d_ids, d_t, d_out), "embed fwd");
    float *d_ws = dalloc(cuda_embed_workspace(R) / sizeof(float));
    check_rc(cuda_embed_backward(g_ctx, R, V, E, d_ids, d_g, d_dt, 0, d_ws), "embed bwd");
    compare_dev("embed.out", d_out, out, R * E, TOL_EXACT);
    compare_dev("embed.dtable (=)", d_dt, dt, V * E, TOL_EXACT);
    embed_backward(R, V, E, ids, g, dt, 1);
    check_rc(cuda_embed_backward(g_ctx, R, V, E, d_ids, d_g, d_dt, 1, d_ws), "embed bwd (add)");
    compare_dev("embed.dtable (+=)", d_dt, dt, V * E, TOL_EXACT);
    const size_t n = (size_t)M * T * T;
    float *x = halloc(n), *y = halloc(n), *dy = halloc(n), *dx = halloc(n);
    fill(&r, x, n, -3, 3);
    fill(&r, dy, n, -1, 1);
    fill(&r, dx, n, -1, 1);
    float *d_x = dcopy(x, n), *d_dy = dcopy(dy, n), *d_dx = dcopy(dx, n), *d_y = dalloc(n);
    causal_softmax_forward(M, T, 0.4f, x, y);
    causal_softmax_backward(M, T, 0.4f, y, dy, dx, 0);
    check_rc(cuda_causal_softmax_forward(g_ctx, M, T, 0.4f, d_x, d_y), "causal softmax fwd");
    check_rc(cuda_causal_softmax_backward(g_ctx, M, T, 0.4f, d_y, d_dy, d_dx, 0), "causal softmax bwd");
    compare_dev("causal_softmax.out", d_y, y, n, TOL_SOFTMAX);
    compare_dev("causal_softmax.dinp (+=)", d_dx, dx, n, TOL_SOFTMAX);
    free(ids);
    free(table);
    free(out);
    free(g);
    free(dt);
    free(x);
    free(y);
    free(dy);
    free(dx);
    dfree_all();
    end_test();
}

/* Every row of the operator table has its CUDA twin: a model of one layer of each kind,
 * with no batch, is refused by cuda_model_create only as an empty model (which it says
 * after the layer check and before any device work), never for a layer "not on the GPU";
 * but ConvTranspose's, which has no CUDA kernels yet and is refused by name. */
static void test_cuda_rows_complete(void **state)
{
    (void)state;
    model_t *m = calloc(1, sizeof *m);
    layer_t *layers = calloc(LAYER_KIND_COUNT, sizeof *layers);
    assert_non_null(m);
    assert_non_null(layers);
    snprintf(m->name, sizeof m->name, "every kind");
    int n = 0;
    for (int k = 0; k < LAYER_KIND_COUNT; k++) {
        if (k == LAYER_CONV_TRANSPOSE) continue;
        layers[n].kind = (layer_kind_t)k;
        if (k == LAYER_BN) layers[n].op.norm.eps = 1e-5f; /* an epsilon cuDNN takes */
        n++;
    }
    m->layers = layers;
    m->nlayers = n;
    m->max_batch = 0;
    char err[512] = "";
    cuda_model_t *cm = cuda_model_create(m, 0, err, sizeof err);
    printf("  %d layer kinds: %s\n", n, err);
    if (cm) cuda_model_free(cm);
    if (cm || !strstr(err, "empty model")) fail_msg("a layer kind without its CUDA row: %s", err);
    layers[0] = (layer_t){.kind = LAYER_CONV_TRANSPOSE};
    m->nlayers = 1;
    cm = cuda_model_create(m, 0, err, sizeof err);
    printf("  conv transpose: %s\n", err);
    if (cm) cuda_model_free(cm);
    if (cm || !strstr(err, "ConvTranspose") || !strstr(err, "not on the GPU"))
        fail_msg("ConvTranspose is not refused by name: %s", err);
    free(layers);
    free(m);
}

#endif /* PACER_WITH_CUDA */

static int print_summary(void **state)
{
    (void)state;
#ifdef PACER_WITH_CUDA
    if (g_have_gpu)
        printf("largest max_rel: %.3e (tight checks), %.3e (end-to-end gradients)\n", g_worst[0], g_worst[1]);
    cuda_ctx_free(g_ctx);
    g_ctx = NULL;
#endif
    return 0;
}

int main(void)
{
    const char *req = getenv("PACER_REQUIRE_GPU");
    const int on_gpu_machine = access("/dev/nvidia0", F_OK) == 0;
    g_gpu_required = (req && strcmp(req, "1") == 0) || on_gpu_machine;
#if defined(PACER_WITH_CUDA) && defined(__SANITIZE_ADDRESS__)
    /* The CUDA driver maps memory where ASan keeps its shadow gap (it needs
     * ASAN_OPTIONS=protect_shadow_gap=0) and keeps allocations until exit, which LSan reports
     * as leaks: under AddressSanitizer the device is left alone. */
    printf("skip: the CUDA parity tests do not run under AddressSanitizer\n");
    g_gpu_required = 0;
    snprintf(g_no_gpu, sizeof g_no_gpu, "not under AddressSanitizer");
#elif defined(PACER_WITH_CUDA)
    cuda_probe_t p;
    if (cuda_probe(-1, &p) == CUDA_PROBE_OK) {
        char err[512];
        g_have_gpu = 1;
        g_device = p.device;
        if (cuda_ctx_create(g_device, &g_ctx, err, sizeof err) != 0) printf("cuda: %s\n", err);
        printf("cuda parity on device %d: %s (compute capability %d.%d, driver CUDA %d.%d, runtime %d.%d)\n", g_device,
               p.name, p.cc_major, p.cc_minor, p.driver_version / 1000, p.driver_version % 1000 / 10,
               p.runtime_version / 1000, p.runtime_version % 1000 / 10);
    } else {
        snprintf(g_no_gpu, sizeof g_no_gpu, "%s [%s]", p.reason, cuda_probe_kind_name(p.kind));
    }
#else
    snprintf(g_no_gpu, sizeof g_no_gpu, "this build has no CUDA backend (nvcc or cuDNN missing at build time)");
#endif
    if (!g_have_gpu) {
        if (g_gpu_required)
            printf("FAIL: a GPU is required (%s) but CUDA is not usable: %s\n",
                   on_gpu_machine ? "/dev/nvidia0 exists" : "PACER_REQUIRE_GPU=1", g_no_gpu);
        else printf("skip: %s\n", g_no_gpu);
    }
#define TEST_ENTRY(name) cmocka_unit_test(name),
    const struct CMUnitTest tests[] = {HOST_TESTS(TEST_ENTRY) PARITY_TESTS(TEST_ENTRY)};
    return cmocka_run_group_tests(tests, NULL, print_summary);
}
