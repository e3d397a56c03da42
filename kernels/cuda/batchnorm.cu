/* kernels/cuda/batchnorm.cu - batch normalisation per channel over (B, HW) on cuDNN
 * (CUDNN_BATCHNORM_SPATIAL; the legacy API, deprecated in cuDNN 9 but present and exact).
 *
 * Letters: B batch, C channels, HW a plane (the input is described to cuDNN as
 * (B, C, HW, 1), which is the same memory as (B, C, H, W)).
 *
 * Agreement with kernels/cpu/batchnorm.c:
 *   - normalisation uses the biased batch variance and the layer's epsilon on both (BN_EPS
 *     for the built-in networks; ONNX's epsilon attribute for an imported one: cuDNN 9's
 *     CUDNN_BN_MIN_EPSILON is 0, so any positive epsilon the CPU takes is passed through);
 *   - the running variance: cuDNN blends in the UNBIASED batch variance, as the CPU (and
 *     PyTorch) do: running = (1 - f)*running + f*batch with f = exponentialAverageFactor =
 *     momentum. (With B*HW == 1 the CPU uses the biased value 0; cuDNN's behaviour there is
 *     not documented; none of pacer's networks has such a layer.)
 *   - saved statistics: cuDNN's resultSaveInvVariance is 1/sqrt(var + eps), the CPU's
 *     save_invstd, so the pair can be handed between backends.
 *   - cuDNN accumulates the statistics in float where the CPU uses double around a shift,
 *     hence agreement to ~1e-6 relative rather than bit for bit.
 * The input gradient accumulates through betaDataDiff = 1 (ops.h's += convention); dgamma
 * and dbeta are written (betaParamDiff = 0).
 */
#include "cuda_common.h"

static int bn_describe(cuda_ctx_t *ctx, int B, int C, int HW)
{
    CUDNN_CHECK(ctx, cudnnSetTensor4dDescriptor(ctx->td_x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, B, C, HW, 1),
                "batch-norm data descriptor");
    CUDNN_CHECK(ctx, cudnnSetTensor4dDescriptor(ctx->td_bn, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, C, 1, 1),
                "batch-norm parameter descriptor");
    return 0;
}

/* cuDNN refuses an epsilon below its CUDNN_BN_MIN_EPSILON (0 in cuDNN 9; an older cuDNN had a
 * positive minimum): named, not a bare CUDNN_STATUS_BAD_PARAM. */
static int bn_check_eps(cuda_ctx_t *ctx, float eps)
{
    if ((double)eps < CUDNN_BN_MIN_EPSILON || !(eps > 0.0f))
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "batch norm", "epsilon below CUDNN_BN_MIN_EPSILON",
                               "this cuDNN does not take the layer's epsilon");
    return 0;
}

extern "C" int cuda_batchnorm_forward_train(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                            const float *beta, float *out, float *save_mean, float *save_invstd,
                                            float *running_mean, float *running_var, float momentum)
{
    return cuda_batchnorm_forward_train_eps(ctx, B, C, HW, inp, gamma, beta, out, save_mean, save_invstd, running_mean,
                                            running_var, momentum, BN_EPS);
}

extern "C" int cuda_batchnorm_forward_train_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp,
                                                const float *gamma, const float *beta, float *out, float *save_mean,
                                                float *save_invstd, float *running_mean, float *running_var,
                                                float momentum, float eps)
{
    if (B <= 0 || C <= 0 || HW <= 0) return 0;
    if (bn_check_eps(ctx, eps) != 0) return -1;
    if (bn_describe(ctx, B, C, HW) != 0) return -1;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(ctx,
                cudnnBatchNormalizationForwardTraining(ctx->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, ctx->td_x, inp,
                                                       ctx->td_x, out, ctx->td_bn, gamma, beta, (double)momentum,
                                                       running_mean, running_var, (double)eps, save_mean, save_invstd),
                "batch-norm forward (training)");
    return 0;
}

extern "C" int cuda_batchnorm_forward_eval(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                           const float *beta, const float *running_mean, const float *running_var,
                                           float *out)
{
    return cuda_batchnorm_forward_eval_eps(ctx, B, C, HW, inp, gamma, beta, running_mean, running_var, out, BN_EPS);
}

extern "C" int cuda_batchnorm_forward_eval_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp,
                                               const float *gamma, const float *beta, const float *running_mean,
                                               const float *running_var, float *out, float eps)
{
    if (B <= 0 || C <= 0 || HW <= 0) return 0;
    if (bn_check_eps(ctx, eps) != 0) return -1;
    if (bn_describe(ctx, B, C, HW) != 0) return -1;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(ctx,
                cudnnBatchNormalizationForwardInference(ctx->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, ctx->td_x,
                                                        inp, ctx->td_x, out, ctx->td_bn, gamma, beta, running_mean,
                                                        running_var, (double)eps),
                "batch-norm forward (inference)");
    return 0;
}

extern "C" int cuda_batchnorm_backward(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                       const float *save_mean, const float *save_invstd, const float *dout, float *dinp,
                                       float *dgamma, float *dbeta)
{
    return cuda_batchnorm_backward_eps(ctx, B, C, HW, inp, gamma, save_mean, save_invstd, dout, dinp, dgamma, dbeta,
                                       BN_EPS);
}

/* cuDNN normalises with the saved inverse std here, but asks for the forward's epsilon
 * ("the same in forward and backward"): it is given. */
extern "C" int cuda_batchnorm_backward_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                           const float *save_mean, const float *save_invstd, const float *dout,
                                           float *dinp, float *dgamma, float *dbeta, float eps)
{
    if (C <= 0) return 0;
    if (B <= 0 || HW <= 0) {
        CUDA_CHECK(ctx, cudaMemsetAsync(dgamma, 0, (size_t)C * sizeof(float), ctx->stream), "memset dgamma");
        CUDA_CHECK(ctx, cudaMemsetAsync(dbeta, 0, (size_t)C * sizeof(float), ctx->stream), "memset dbeta");
        return 0;
    }
    if (!dinp)
        return pacer_cuda_fail(ctx, __FILE__, __LINE__, "cuda_batchnorm_backward", "dinp is NULL",
                               "cuDNN always writes the input gradient: pass a buffer");
    if (bn_check_eps(ctx, eps) != 0 || bn_describe(ctx, B, C, HW) != 0) return -1;
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(ctx,
                cudnnBatchNormalizationBackward(ctx->cudnn, CUDNN_BATCHNORM_SPATIAL, &one,
                                                &one,        /* dx = 1*dx_new + 1*dx */
                                                &one, &zero, /* dgamma, dbeta written */
                                                ctx->td_x, inp, ctx->td_x, dout, ctx->td_x, dinp, ctx->td_bn, gamma,
                                                dgamma, dbeta, (double)eps, save_mean, save_invstd),
                "batch-norm backward");
    return 0;
}
