/* kernels/cpu/ops.h - the CPU reference kernels: float32, NCHW, forward and backward.
 *
 * This file is the executable specification of every op pacer trains with; the CUDA
 * backend is checked against it tensor by tensor.
 *
 * Letters used in shape comments:
 *   B batch, C input channels, H W input height/width, OC output channels,
 *   OH OW output height/width, KH KW kernel size, IN OUT fully connected widths,
 *   N number of classes, n a flat element count.
 *
 * Gradient conventions (the model graph relies on them):
 *   - input gradients (dinp) are ACCUMULATED (+=), so a tensor read by two layers
 *     (a residual branch) receives the sum; the caller zeroes them once per step.
 *   - parameter gradients (dweight, dbias, dgamma, dbeta) are WRITTEN (=), because
 *     every parameter is used exactly once per forward pass.
 *   - any dinp may be NULL when the caller does not need it (the first layer).
 * No function here allocates; scratch memory comes from the caller (workspace sizes
 * are given by the *_workspace functions).
 */
#ifndef PACER_OPS_H
#define PACER_OPS_H

#include <stddef.h>
#include <stdint.h>

/* ---- convolution ---------------------------------------------------------------- */
typedef struct {
    int C, H, W;     /* input */
    int OC, KH, KW;  /* filters */
    int stride, pad; /* same in both spatial dimensions */
    int OH, OW;      /* output, filled by conv2d_init */
} conv2d_desc_t;

/* Fills OH/OW; returns 0, or -1 when the geometry gives an empty output. */
int conv2d_init(conv2d_desc_t *d, int C, int H, int W, int OC, int KH, int KW, int stride, int pad);
/* Floats of scratch needed by forward and backward for a batch of up to B images. */
size_t conv2d_workspace(const conv2d_desc_t *d, int B);
void conv2d_forward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                    const float *weight,                             /* (OC, C, KH, KW) */
                    const float *bias,                               /* (OC) or NULL */
                    float *out,                                      /* (B, OC, OH, OW) */
                    float *ws);
void conv2d_backward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                     const float *weight,                             /* (OC, C, KH, KW) */
                     const float *dout,                               /* (B, OC, OH, OW) */
                     float *dinp,                                     /* (B, C, H, W) +=, or NULL */
                     float *dweight,                                  /* (OC, C, KH, KW) = */
                     float *dbias,                                    /* (OC) =, or NULL */
                     float *ws);

/* ---- pooling -------------------------------------------------------------------- */
typedef struct {
    int C, H, W;
    int K, stride, pad;
    int ceil_mode; /* 0: floor output size, 1: ceil (Caffe) */
    int OH, OW;    /* filled by pool2d_init */
} pool2d_desc_t;

/* Output size: floor or ceil of (H + 2*pad - K)/stride, plus 1; in ceil mode the last
 * window must start inside the (left-padded) input, as in PyTorch and Caffe. */
int pool2d_init(pool2d_desc_t *d, int C, int H, int W, int K, int stride, int pad, int ceil_mode);
void maxpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                       float *out,                                      /* (B, C, OH, OW) */
                       int32_t *argmax); /* (B, C, OH, OW) flat index into the H*W plane */
void maxpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, const int32_t *argmax,
                        float *dinp); /* (B, C, H, W) += */
/* Average pooling divides by the number of window elements inside the input
 * (count_include_pad = false), so ceil-mode edge windows are true averages. */
void avgpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out);
void avgpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, float *dinp /* += */);

/* ---- elementwise ---------------------------------------------------------------- */
void relu_forward(size_t n, const float *inp, float *out);
/* Uses the forward output: out > 0 exactly where inp > 0. */
void relu_backward(size_t n, const float *out, const float *dout, float *dinp /* += */);

/* Residual add with the option-A shortcut of He et al. (CIFAR ResNets):
 *   out = a + S(x), where S subsamples x spatially by `stride` and zero-pads its
 *   channels from C to OC (the C real channels sit at offset (OC - C) / 2).
 * With C == OC and stride 1 it is a plain elementwise add. */
typedef struct {
    int C, H, W, OC, OH, OW, stride;
} shortcut_desc_t;
int shortcut_init(shortcut_desc_t *d, int C, int H, int W, int OC, int stride);
void residual_add_forward(const shortcut_desc_t *d, int B, const float *a,                /* (B, OC, OH, OW) */
                          const float *x,                                                 /* (B, C, H, W) */
                          float *out);                                                    /* (B, OC, OH, OW) */
void residual_add_backward(const shortcut_desc_t *d, int B, const float *dout, float *da, /* (B, OC, OH, OW) += */
                           float *dx);                                                    /* (B, C, H, W) += */

/* ---- fully connected ------------------------------------------------------------ */
void fc_forward(int B, int IN, int OUT, const float *inp, /* (B, IN) */
                const float *weight,                      /* (OUT, IN) */
                const float *bias,                        /* (OUT) or NULL */
                float *out);                              /* (B, OUT) */
void fc_backward(int B, int IN, int OUT, const float *inp, const float *weight, const float *dout,
                 float *dinp,    /* (B, IN) +=, or NULL */
                 float *dweight, /* (OUT, IN) = */
                 float *dbias);  /* (OUT) =, or NULL */

/* ---- softmax cross-entropy (fused, numerically stable) -------------------------- */
/* Returns the mean loss over the batch; probs receives the softmax. Labels must be in
 * [0, N): the data loader guarantees it. */
float softmax_xent_forward(int B, int N, const float *logits /* (B, N) */, const int32_t *labels /* (B) */,
                           float *probs /* (B, N) */);
/* dlogits = scale * (probs - onehot(labels)) / B, written (=). scale is 1 for a plain
 * mean loss; the caller may weight the batch differently. */
void softmax_xent_backward(int B, int N, const float *probs, const int32_t *labels, float scale, float *dlogits);
/* Counts argmax(logits) == label. */
int count_correct(int B, int N, const float *logits, const int32_t *labels);

/* ---- batch norm (per channel over B, H, W) -------------------------------------- */
#define BN_EPS 1e-5f
/* Training mode: normalises with the batch statistics, saves mean and inverse std for
 * the backward pass, and updates the running statistics the way PyTorch does
 * (running = (1 - momentum) * running + momentum * batch, unbiased batch variance). */
void batchnorm_forward_train(int B, int C, int HW, const float *inp,  /* (B, C, HW) */
                             const float *gamma, const float *beta,   /* (C) */
                             float *out,                              /* (B, C, HW) */
                             float *save_mean, float *save_invstd,    /* (C) */
                             float *running_mean, float *running_var, /* (C), updated */
                             float momentum);
void batchnorm_forward_eval(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                            const float *running_mean, const float *running_var, float *out);
void batchnorm_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                        const float *save_invstd, const float *dout, float *dinp, /* += */
                        float *dgamma, float *dbeta);                             /* = */

/* ---- global average pooling ----------------------------------------------------- */
void gap_forward(int B, int C, int HW, const float *inp /* (B,C,HW) */, float *out /* (B,C) */);
void gap_backward(int B, int C, int HW, const float *dout /* (B,C) */, float *dinp /* += */);

/* ---- optimizer ------------------------------------------------------------------ */
/* PyTorch's SGD on the gradient grad_scale * g: d = grad_scale*g + wd*w; u = mu*u + d;
 * step = nesterov ? d + mu*u : u; w -= lr*step. With mu = 0 the momentum buffer is not
 * touched. grad_scale lets a caller apply 1/sum(batch) of an allreduced gradient sum in
 * the same pass (1.0 multiplies exactly, so it changes nothing). */
void sgd_update(size_t n, float *w, const float *g, float *u, float lr, float momentum, int nesterov,
                float weight_decay, float grad_scale);
/* Sum of squares of g, accumulated in double so the result does not depend on n. */
double sum_squares(size_t n, const float *g);
/* Scales g so that its global L2 norm is at most max_norm; returns the norm before
 * clipping. max_norm <= 0 disables clipping. */
float clip_grad_norm(size_t n, float *g, float max_norm);

/* ---- asynchronous updates (ALGORITHMS.md sections 4 and 5) ----------------------- */
/* DC-ASGD-c: out = g + lambda * g*g*(w - w_bak), elementwise. out may alias g. */
void dc_compensate(size_t n, const float *g, const float *w, const float *w_bak, float lambda, float *out);
/* DC-ASGD-a: ms = m*ms + (1-m)*g*g (this worker's mean square, updated in place), then
 * out = g + lambda0 / sqrt(ms + eps) * g*g*(w - w_bak). out may alias g. */
void dc_compensate_adaptive(size_t n, const float *g, const float *w, const float *w_bak, float *ms, float m,
                            float lambda0, float eps, float *out);
/* DDC-ASGD (pacer's rule, section 5): v = 0.95*v + 0.05*g*g (in place);
 * c = lambda0 / sqrt(v + eps) * g*g*(w - w_bak); s = min(1, kappa*|g| / (|c| + eps));
 * out = g + s*c. out may alias g. */
void ddc_compensate(size_t n, const float *g, const float *w, const float *w_bak, float *v, float lambda0, float kappa,
                    float eps, float *out);
/* DDC-ASGD's momentum step on grad_scale * g: u = mu*u - eta*(grad_scale*g + wd*w);
 * w = w + u. (With wd = 0 and the same mu and eta it moves w exactly as sgd_update.) */
void momentum_step(size_t n, float *w, float *u, const float *g, float grad_scale, float eta, float mu,
                   float weight_decay);

/* Learning-rate schedules. Warm-up is linear from lr/warmup_steps to lr; after it:
 * none (constant), step (multiply by gamma every step_size steps) or cosine (from lr
 * to min_lr over the remaining steps). */
typedef enum { LR_CONSTANT = 0, LR_STEP, LR_COSINE } lr_kind_t;
typedef struct {
    lr_kind_t kind;
    long warmup_steps;
    long step_size; /* LR_STEP */
    float gamma;    /* LR_STEP */
    float min_lr;   /* LR_COSINE */
} lr_schedule_t;
float lr_at(const lr_schedule_t *s, float base_lr, long step, long total_steps);

#endif
