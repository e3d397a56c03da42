/* kernels/cuda/conv.cu - 2-D convolution on cuDNN, bias on own kernels.
 *
 * Letters: B batch, C input channels, H W input size, OC output channels, OH OW output size,
 * KH KW kernel size, P = OH*OW.
 *
 * Algorithm choice. cudnnGet*Algorithm_v7 ranks the algorithms by expected speed for the
 * descriptors; a plan takes the first one that
 *   - runs with FMA math (the convolution descriptor is set to CUDNN_FMA_MATH, so no TF32:
 *     the fp32 CPU reference is matched to ~1e-6 relative, not ~1e-3);
 *   - is GEMM-like or direct: FFT and Winograd variants are excluded because their
 *     transforms lose a few bits, which the parity tolerances would have to absorb;
 *   - for the backward passes, is deterministic when one such algorithm fits (the same run
 *     gives the same weights twice), otherwise any;
 *   - needs no more workspace than the limit.
 * If the heuristic offers none, a fixed list is tried (IMPLICIT_GEMM and backward ALGO_0
 * need no workspace, so a choice always exists). Choosing is host work only (cuDNN's
 * heuristics and workspace queries, no device work and no allocation): it happens
 * when the plan is created and the first time a batch size is seen; the choices are kept
 * per batch size (CONV_PLAN_CACHE of them), so returning to a batch size after a re-plan
 * of dynamic batching costs two descriptor updates, and cuda_conv2d_plan_prepare lets a
 * caller do even the first choice outside a timed step.
 *
 * Geometry: cuDNN takes per-dimension stride, dilation and groups (cudnnSetConvolutionGroupCount,
 * filter (OC, C/groups, KH, KW), the layout of ops.h), but one pad per dimension, applied on
 * both sides. An asymmetric convolution (pad_t != pad_b or pad_l != pad_r, what ONNX's
 * SAME_UPPER gives for even kernels or strides) therefore runs on a padded copy of the
 * input, (B, C, H + pad_t + pad_b, W + pad_l + pad_r), made by pad_kernel at the front of
 * the workspace, with cuDNN's pads 0; the backward computes the input gradient of that copy
 * into the same place (the filter gradient, which reads the copy, has run by then) and
 * crop_add_kernel adds its interior to dinp. The copy's bytes are part of the plan's
 * workspace (cuda_conv2d_plan_workspace), the rest is cuDNN's.
 *
 * An algorithm can still refuse at run time; cuDNN 9 may say so with a sub-code of
 * CUDNN_STATUS_NOT_SUPPORTED (3001 graph pattern, 3002 shape, ... 3014) instead of 3000
 * itself, so the fallbacks compare categories (cuda_cudnn_is_not_supported).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_common.h"

/* Default workspace cap per plan: generous for these networks (the chosen algorithms need
 * a few MiB at batch 256), small next to an H100's memory. */
#define CONV_WS_CAP ((size_t)256 << 20)
/* Batch sizes whose algorithm choices a plan keeps (dynamic batching moves between a few). */
#define CONV_PLAN_CACHE 16

/* The algorithms chosen for one batch size. */
typedef struct {
    int B; /* 0: unused slot */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t ws_fwd, ws_data, ws_filter;
} conv_algos_t;

struct cuda_conv_plan {
    conv2d_desc_t d;
    int prepad; /* asymmetric pads: cuDNN runs on a padded copy of the input (see the top) */
    int PH, PW; /* the input cuDNN sees: padded with prepad, else H, W */
    int B;      /* batch the tensor descriptors are set for; 0: none yet */
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    conv_algos_t cache[CONV_PLAN_CACHE];
    int victim;        /* next slot to reuse when the cache is full (round robin) */
    conv_algos_t *cur; /* the choice for B; NULL until one is made */
};

extern "C" int cuda_cudnn_is_not_supported(int status)
{
#if CUDNN_MAJOR >= 9
#ifdef CUDNN_STATUS_CATEGORY
    return CUDNN_STATUS_CATEGORY(status) == (int)CUDNN_STATUS_NOT_SUPPORTED;
#else
    return status / 1000 * 1000 == (int)CUDNN_STATUS_NOT_SUPPORTED;
#endif
#else
    return status == (int)CUDNN_STATUS_NOT_SUPPORTED; /* cuDNN 8: one code, no categories */
#endif
}

/* PACER_CUDA_CONV=any (read once): every algorithm cuDNN ranks, Winograd and FFT and the
 * nondeterministic backward ones included, first come first taken, as PyTorch takes them
 * with cudnn.benchmark off: what the restrictions above cost (bench/gpu_bench; the
 * parity tolerances are not meant for it). FMA math stays: no TF32 either way. */
static int conv_any(void)
{
    static int any = -1;
    if (any < 0) {
        const char *v = getenv("PACER_CUDA_CONV");
        any = v && strcmp(v, "any") == 0;
    }
    return any;
}

static int fwd_allowed(cudnnConvolutionFwdAlgo_t a)
{
    if (conv_any()) return 1;
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}

static int data_allowed(cudnnConvolutionBwdDataAlgo_t a)
{
    if (conv_any()) return 1;
    return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}

static int filter_allowed(cudnnConvolutionBwdFilterAlgo_t a)
{
    if (conv_any()) return 1;
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
           a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

/* Not tensor-core math: with the descriptor at CUDNN_FMA_MATH both mean FMA kernels. */
static int fma_math(cudnnMathType_t m) { return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH; }

static int pick_fwd(cuda_ctx_t *ctx, const cuda_conv_plan_t *p, conv_algos_t *a, size_t limit)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    CUDNN_CHECK(ctx,
                cudnnGetConvolutionForwardAlgorithm_v7(ctx->cudnn, p->x, p->w, p->conv, p->y,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
                "convolution forward heuristics");
    for (int i = 0; i < n; i++) {
        size_t ws = 0;
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !fma_math(perf[i].mathType) || !fwd_allowed(perf[i].algo))
            continue;
        if (cudnnGetConvolutionForwardWorkspaceSize(ctx->cudnn, p->x, p->w, p->conv, p->y, perf[i].algo, &ws) !=
                CUDNN_STATUS_SUCCESS ||
            ws > limit)
            continue;
        a->fwd = perf[i].algo;
        a->ws_fwd = ws;
        return 0;
    }
    static const cudnnConvolutionFwdAlgo_t fallback[] = {
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
        CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
    };
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++) {
        size_t ws = 0;
        if (cudnnGetConvolutionForwardWorkspaceSize(ctx->cudnn, p->x, p->w, p->conv, p->y, fallback[i], &ws) ==
                CUDNN_STATUS_SUCCESS &&
            ws <= limit) {
            a->fwd = fallback[i];
            a->ws_fwd = ws;
            return 0;
        }
    }
    return pacer_cuda_fail(ctx, __FILE__, __LINE__, "pick_fwd", "no fp32 FMA forward algorithm",
                           "unsupported convolution geometry?");
}

static int pick_data(cuda_ctx_t *ctx, const cuda_conv_plan_t *p, conv_algos_t *a, size_t limit)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int n = 0;
    CUDNN_CHECK(ctx,
                cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx->cudnn, p->w, p->y, p->conv, p->x,
                                                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                "convolution backward-data heuristics");
    for (int pass = 0; pass < 2; pass++) /* deterministic first */
        for (int i = 0; i < n; i++) {
            size_t ws = 0;
            if (perf[i].status != CUDNN_STATUS_SUCCESS || !fma_math(perf[i].mathType) || !data_allowed(perf[i].algo) ||
                (pass == 0 && !conv_any() && perf[i].determinism != CUDNN_DETERMINISTIC))
                continue;
            if (cudnnGetConvolutionBackwardDataWorkspaceSize(ctx->cudnn, p->w, p->y, p->conv, p->x, perf[i].algo,
                                                             &ws) != CUDNN_STATUS_SUCCESS ||
                ws > limit)
                continue;
            a->bwd_data = perf[i].algo;
            a->ws_data = ws;
            return 0;
        }
    static const cudnnConvolutionBwdDataAlgo_t fallback[] = {
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
    };
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++) {
        size_t ws = 0;
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(ctx->cudnn, p->w, p->y, p->conv, p->x, fallback[i], &ws) ==
                CUDNN_STATUS_SUCCESS &&
            ws <= limit) {
            a->bwd_data = fallback[i];
            a->ws_data = ws;
            return 0;
        }
    }
    return pacer_cuda_fail(ctx, __FILE__, __LINE__, "pick_data", "no fp32 FMA backward-data algorithm",
                           "unsupported convolution geometry?");
}

static int pick_filter(cuda_ctx_t *ctx, const cuda_conv_plan_t *p, conv_algos_t *a, size_t limit)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    CUDNN_CHECK(ctx,
                cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx->cudnn, p->x, p->y, p->conv, p->w,
                                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                "convolution backward-filter heuristics");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            size_t ws = 0;
            if (perf[i].status != CUDNN_STATUS_SUCCESS || !fma_math(perf[i].mathType) || !filter_allowed(perf[i].algo) ||
                (pass == 0 && !conv_any() && perf[i].determinism != CUDNN_DETERMINISTIC))
                continue;
            if (cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx->cudnn, p->x, p->y, p->conv, p->w, perf[i].algo,
                                                               &ws) != CUDNN_STATUS_SUCCESS ||
                ws > limit)
                continue;
            a->bwd_filter = perf[i].algo;
            a->ws_filter = ws;
            return 0;
        }
    static const cudnnConvolutionBwdFilterAlgo_t fallback[] = {
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
    };
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++) {
        size_t ws = 0;
        if (cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx->cudnn, p->x, p->y, p->conv, p->w, fallback[i], &ws) ==
                CUDNN_STATUS_SUCCESS &&
            ws <= limit) {
            a->bwd_filter = fallback[i];
            a->ws_filter = ws;
            return 0;
        }
    }
    return pacer_cuda_fail(ctx, __FILE__, __LINE__, "pick_filter", "no fp32 FMA backward-filter algorithm",
                           "unsupported convolution geometry?");
}

/* Bytes at the front of the workspace for the padded input copy of a batch of B (0
 * without prepad), rounded to 256 so that cuDNN's part stays aligned. */
static size_t prepad_bytes(const cuda_conv_plan_t *p, int B)
{
    if (!p->prepad) return 0;
    size_t b = (size_t)B * p->d.C * p->PH * p->PW * sizeof(float);
    return (b + 255) & ~(size_t)255;
}

static size_t algos_need(const conv_algos_t *a)
{
    size_t m = a->ws_fwd;
    if (a->ws_data > m) m = a->ws_data;
    if (a->ws_filter > m) m = a->ws_filter;
    return m;
}

/* Whole workspace the choice for a->B needs: the padded copy, then cuDNN's. */
static size_t plan_need(const cuda_conv_plan_t *p, const conv_algos_t *a)
{
    return prepad_bytes(p, a->B) + algos_need(a);
}

/* Sets the batch-dependent tensor descriptors to B (host-side, cheap). */
static int plan_describe(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B)
{
    if (p->B == B) return 0;
    const conv2d_desc_t *d = &p->d;
    p->B = 0; /* invalid until everything below succeeded */
    CUDNN_CHECK(ctx, cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, d->C, p->PH, p->PW),
                "conv input descriptor");
    CUDNN_CHECK(ctx, cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, d->OC, d->OH, d->OW),
                "conv output descriptor");
    int n = 0, c = 0, h = 0, w = 0;
    CUDNN_CHECK(ctx, cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &n, &c, &h, &w), "conv output size");
    if (n != B || c != d->OC || h != d->OH || w != d->OW)
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "plan_describe",
                               "cuDNN output size differs from conv2d_setup's", "internal error");
    p->B = B;
    return 0;
}

/* Ready for batch B with ws_bytes of workspace: the cached choice for B when it fits, else
 * a new choice (which replaces the cached one for B, or the round-robin victim). */
static int plan_prepare(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, size_t ws_bytes)
{
    if (p->cur && p->cur->B == B && p->B == B && plan_need(p, p->cur) <= ws_bytes) return 0;
    const size_t pad_bytes = prepad_bytes(p, B);
    if (ws_bytes < pad_bytes)
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "plan_prepare", "workspace smaller than the padded input copy",
                               "size the workspace with cuda_conv2d_plan_workspace");
    if (plan_describe(ctx, p, B) != 0) return -1;
    conv_algos_t *slot = NULL;
    for (int i = 0; i < CONV_PLAN_CACHE; i++)
        if (p->cache[i].B == B) {
            slot = &p->cache[i];
            break;
        }
    if (slot && plan_need(p, slot) <= ws_bytes) {
        p->cur = slot;
        return 0;
    }
    if (!slot) {
        for (int i = 0; i < CONV_PLAN_CACHE && !slot; i++)
            if (p->cache[i].B == 0) slot = &p->cache[i];
        if (!slot) {
            slot = &p->cache[p->victim];
            p->victim = (p->victim + 1) % CONV_PLAN_CACHE;
        }
    }
    conv_algos_t a;
    memset(&a, 0, sizeof a);
    p->cur = NULL;
    slot->B = 0;
    const size_t limit = ws_bytes - pad_bytes; /* cuDNN's share */
    if (pick_fwd(ctx, p, &a, limit) || pick_data(ctx, p, &a, limit) || pick_filter(ctx, p, &a, limit)) return -1;
    a.B = B;
    *slot = a;
    p->cur = slot;
    return 0;
}

extern "C" int cuda_conv2d_plan_create(cuda_ctx_t *ctx, const conv2d_desc_t *d, int max_B, size_t ws_limit,
                                       cuda_conv_plan_t **out)
{
    *out = NULL;
    if (max_B < 1 || d->OH < 1 || d->OW < 1)
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "cuda_conv2d_plan_create", "bad geometry",
                               "fill the descriptor with conv2d_init or conv2d_setup; max_B >= 1");
    cuda_conv_plan_t *p = (cuda_conv_plan_t *)calloc(1, sizeof *p);
    if (!p) return pacer_cuda_fail(ctx, __FILE__, __LINE__, "calloc", "out of host memory", "conv plan");
    p->d = *d;
    p->prepad = d->pad_t != d->pad_b || d->pad_l != d->pad_r;
    p->PH = p->prepad ? d->H + d->pad_t + d->pad_b : d->H;
    p->PW = p->prepad ? d->W + d->pad_l + d->pad_r : d->W;
    const int cpad_h = p->prepad ? 0 : d->pad_t, cpad_w = p->prepad ? 0 : d->pad_l; /* cuDNN's pads */
    int rc = -1;
    if (cudnnCreateTensorDescriptor(&p->x) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&p->y) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateFilterDescriptor(&p->w) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateConvolutionDescriptor(&p->conv) != CUDNN_STATUS_SUCCESS) {
        pacer_cuda_fail(ctx, __FILE__, __LINE__, "cudnnCreate*Descriptor", "failed", "conv plan");
        goto out;
    }
    if (cudnnSetFilter4dDescriptor(p->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->OC, d->C / d->groups, d->KH, d->KW) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolution2dDescriptor(p->conv, cpad_h, cpad_w, d->sH, d->sW, d->dH, d->dW, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionGroupCount(p->conv, d->groups) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionMathType(p->conv, CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS) {
        pacer_cuda_fail(ctx, __FILE__, __LINE__, "cudnnSet*Descriptor", "failed", "conv plan geometry");
        goto out;
    }
    /* the cap is cuDNN's; the padded copy comes on top of it */
    if (plan_prepare(ctx, p, max_B, ws_limit ? ws_limit : CONV_WS_CAP + prepad_bytes(p, max_B)) != 0) goto out;
    rc = 0;
    *out = p;
out:
    if (rc != 0) cuda_conv2d_plan_free(p);
    return rc;
}

extern "C" void cuda_conv2d_plan_free(cuda_conv_plan_t *p)
{
    if (!p) return;
    if (p->x) cudnnDestroyTensorDescriptor(p->x);
    if (p->y) cudnnDestroyTensorDescriptor(p->y);
    if (p->w) cudnnDestroyFilterDescriptor(p->w);
    if (p->conv) cudnnDestroyConvolutionDescriptor(p->conv);
    free(p);
}

extern "C" size_t cuda_conv2d_plan_workspace(const cuda_conv_plan_t *p) { return p->cur ? plan_need(p, p->cur) : 0; }

extern "C" int cuda_conv2d_plan_prepare(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, size_t ws_bytes)
{
    if (B < 1) return 0;
    return plan_prepare(ctx, p, B, ws_bytes);
}

/* xp (B*C, PH, PW) = x (B*C, H, W) at offset (pt, pl), zeros around it */
__global__ void pad_kernel(const float *x, float *xp, size_t n, int H, int W, int PH, int PW, int pt, int pl)
{
    GRID_STRIDE(i, n)
    {
        const int pw = (int)(i % PW), ph = (int)((i / PW) % PH);
        const size_t plane = i / ((size_t)PH * PW);
        const int h = ph - pt, w = pw - pl;
        xp[i] = h >= 0 && h < H && w >= 0 && w < W ? x[(plane * H + h) * W + w] : 0.0f;
    }
}

/* dx (B*C, H, W) += the interior of dxp (B*C, PH, PW) */
__global__ void crop_add_kernel(const float *dxp, float *dx, size_t n, int H, int W, int PH, int PW, int pt, int pl)
{
    GRID_STRIDE(i, n)
    {
        const int w = (int)(i % W), h = (int)((i / W) % H);
        const size_t plane = i / ((size_t)H * W);
        dx[i] = __fadd_rn(dx[i], dxp[(plane * PH + h + pt) * PW + w + pl]);
    }
}

/* The padded copy of inp at the front of ws (prepad plans); returns the tensor cuDNN reads
 * and, through cws/cws_bytes, cuDNN's part of the workspace. */
static int plan_input(cuda_ctx_t *ctx, const cuda_conv_plan_t *p, int B, const float *inp, void *ws, size_t ws_bytes,
                      const float **x, void **cws, size_t *cws_bytes)
{
    const size_t pad_bytes = prepad_bytes(p, B);
    *x = inp;
    *cws = ws;
    *cws_bytes = ws_bytes;
    if (!p->prepad) return 0;
    const conv2d_desc_t *d = &p->d;
    const size_t n = (size_t)B * d->C * p->PH * p->PW;
    pad_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(inp, (float *)ws, n, d->H, d->W, p->PH, p->PW, d->pad_t,
                                                            d->pad_l);
    KERNEL_CHECK(ctx, "pad_kernel");
    *x = (const float *)ws;
    *cws = (char *)ws + pad_bytes;
    *cws_bytes = ws_bytes - pad_bytes;
    return 0;
}

/* out (B, OC, P) += bias (OC) */
__global__ void bias_add_kernel(float *out, const float *bias, size_t n, int OC, size_t P)
{
    GRID_STRIDE(i, n) out[i] = __fadd_rn(out[i], bias[(i / P) % (size_t)OC]);
}

/* dbias[oc] = sum over b, p of dout[b, oc, p], in double; one block per channel. */
#define BIAS_THREADS 256
__global__ void bias_grad_kernel(const float *dout, float *dbias, int B, int OC, size_t P)
{
    const int oc = blockIdx.x;
    const size_t total = (size_t)B * P;
    double s = 0.0;
    for (size_t j = threadIdx.x; j < total; j += BIAS_THREADS) {
        const size_t b = j / P, p = j % P;
        s += (double)dout[(b * OC + oc) * P + p];
    }
    s = block_sum<BIAS_THREADS>(s);
    if (threadIdx.x == 0) dbias[oc] = (float)s;
}

extern "C" int cuda_conv2d_forward(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, const float *inp, const float *weight,
                                   const float *bias, float *out, void *ws, size_t ws_bytes)
{
    if (B <= 0) return 0;
    if (plan_prepare(ctx, p, B, ws_bytes) != 0) return -1;
    const float one = 1.0f, zero = 0.0f;
    conv_algos_t *a = p->cur;
    const float *x;
    if (plan_input(ctx, p, B, inp, ws, ws_bytes, &x, &ws, &ws_bytes) != 0) return -1;
    cudnnStatus_t st = cudnnConvolutionForward(ctx->cudnn, &one, p->x, x, p->w, weight, p->conv, a->fwd, ws, ws_bytes,
                                               &zero, p->y, out);
    if (cuda_cudnn_is_not_supported(st) && a->fwd != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) {
        /* An algorithm can still refuse at run time (pointer alignment of a tensor at an
         * odd offset in a fused buffer, for one): fall back, once and for good, to the
         * most general one, which needs no workspace. */
        a->fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
        a->ws_fwd = 0;
        st = cudnnConvolutionForward(ctx->cudnn, &one, p->x, x, p->w, weight, p->conv, a->fwd, ws, ws_bytes, &zero,
                                     p->y, out);
    }
    CUDNN_CHECK(ctx, st, "convolution forward");
    if (bias) {
        const size_t P = (size_t)p->d.OH * p->d.OW, n = (size_t)B * p->d.OC * P;
        bias_add_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(out, bias, n, p->d.OC, P);
        KERNEL_CHECK(ctx, "bias_add_kernel");
    }
    return 0;
}

extern "C" int cuda_conv2d_backward(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, const float *inp, const float *weight,
                                    const float *dout, float *dinp, float *dweight, float *dbias, void *ws,
                                    size_t ws_bytes)
{
    const conv2d_desc_t *d = &p->d;
    if (B <= 0) {
        /* parameter gradients are written even for an empty batch */
        CUDA_CHECK(ctx,
                   cudaMemsetAsync(dweight, 0, (size_t)d->OC * (d->C / d->groups) * d->KH * d->KW * sizeof(float),
                                   ctx->stream),
                   "memset dweight");
        if (dbias)
            CUDA_CHECK(ctx, cudaMemsetAsync(dbias, 0, (size_t)d->OC * sizeof(float), ctx->stream), "memset dbias");
        return 0;
    }
    if (plan_prepare(ctx, p, B, ws_bytes) != 0) return -1;
    const float one = 1.0f, zero = 0.0f;
    if (dbias) {
        bias_grad_kernel<<<d->OC, BIAS_THREADS, 0, ctx->stream>>>(dout, dbias, B, d->OC, (size_t)d->OH * d->OW);
        KERNEL_CHECK(ctx, "bias_grad_kernel");
    }
    conv_algos_t *a = p->cur;
    const float *x;
    void *xp = ws; /* the padded copy (prepad), later its gradient */
    if (plan_input(ctx, p, B, inp, ws, ws_bytes, &x, &ws, &ws_bytes) != 0) return -1;
    cudnnStatus_t st = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, p->x, x, p->y, dout, p->conv, a->bwd_filter, ws,
                                                      ws_bytes, &zero, p->w, dweight);
    if (cuda_cudnn_is_not_supported(st) && a->bwd_filter != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0) {
        a->bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0; /* as in the forward: general, no workspace */
        a->ws_filter = 0;
        st = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, p->x, x, p->y, dout, p->conv, a->bwd_filter, ws, ws_bytes,
                                            &zero, p->w, dweight);
    }
    CUDNN_CHECK(ctx, st, "convolution backward filter");
    if (!dinp) return 0;
    /* beta = 1: the input gradient accumulates (ops.h convention); with prepad it is written
     * (beta = 0) into the padded copy, no longer needed, and its interior added below */
    float *dx = p->prepad ? (float *)xp : dinp;
    const float *beta = p->prepad ? &zero : &one;
    st = cudnnConvolutionBackwardData(ctx->cudnn, &one, p->w, weight, p->y, dout, p->conv, a->bwd_data, ws, ws_bytes,
                                      beta, p->x, dx);
    if (cuda_cudnn_is_not_supported(st) && a->bwd_data != CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) {
        a->bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
        a->ws_data = 0;
        st = cudnnConvolutionBackwardData(ctx->cudnn, &one, p->w, weight, p->y, dout, p->conv, a->bwd_data, ws,
                                          ws_bytes, beta, p->x, dx);
    }
    CUDNN_CHECK(ctx, st, "convolution backward data");
    if (p->prepad) {
        const size_t n = (size_t)B * d->C * d->H * d->W;
        crop_add_kernel<<<pacer_grid(n, 256), 256, 0, ctx->stream>>>(dx, dinp, n, d->H, d->W, p->PH, p->PW, d->pad_t,
                                                                     d->pad_l);
        KERNEL_CHECK(ctx, "crop_add_kernel");
    }
    return 0;
}
