/* kernels/cuda/ops_cuda.h - the CUDA versions of the ops in kernels/cpu/ops.h.
 *
 * Same names with a cuda_ prefix, same shapes, same semantics, same gradient conventions:
 * input gradients (dinp) ACCUMULATE (+=), parameter gradients are WRITTEN (=), a dinp may be
 * NULL unless said otherwise. Every tensor pointer is DEVICE memory; descriptors
 * (conv2d_desc_t, pool2d_desc_t, shortcut_desc_t) are the host structs of ops.h, filled by
 * their *_init functions.
 *
 * This is a plain C header (usable from C11): the CUDA, cuDNN and cuBLAS types stay inside
 * the .cu files behind the opaque cuda_ctx_t. Every op is enqueued on the context's stream
 * and returns without waiting, except those that hand a value back to the host (they say so).
 *
 * Errors: a fallible function returns 0, or -1 with a message (file, line, call, hint) that
 * cuda_ctx_error() returns. Library code never exits. An error reported by a kernel that has
 * already been enqueued surfaces at the next synchronising call.
 *
 * What runs on what:
 *   convolution            cuDNN (algorithms picked once per batch size, FMA math only: no TF32)
 *   conv bias fwd/bwd      own kernels (bias grad summed in double, like the CPU)
 *   max / avg pooling      own kernels (bit-identical to the CPU: same window order, same
 *                          first-max tie rule, count_include_pad = false incl. ceil mode;
 *                          backward gathers per input element, so no atomics)
 *   unary functions        one launcher over scalar_fn.h's table, the CPU's own formulas
 *                          (bit-identical but for CUDA's expf/tanhf/powf: an ulp or two
 *                          from glibc's: sigmoid, tanh, Exp, Pow)
 *   residual add, concat,
 *   broadcast binary ops,
 *   transpose, slice,
 *   gap, softmax-xent,
 *   reductions             own kernels (bit-identical)
 *   softmax on an axis     own kernels, the CPU's double sums (only CUDA's double exp/log differ)
 *   layer norm             own kernels: output and input gradient bit-identical, weight and
 *                          bias gradients summed in double by chunks of rows (no atomics)
 *   matmul of activations  cuBLAS strided-batched SGEMM (never TF32)
 *   dropout                own kernels, ops.h's stateless mask (dropout_keep is host and
 *                          device code): the CPU's mask and values, bit for bit
 *   batch norm             cuDNN, CUDNN_BATCHNORM_SPATIAL (train, inference, backward)
 *   fully connected, Gemm,
 *   linear (last axis)     cuBLAS SGEMM (CUBLAS_DEFAULT_MATH: never TF32); own bias kernels
 *   SGD, norms, clipping   own kernels (elementwise ones use __fmul_rn/__fadd_rn so nvcc does not
 *                          contract to FMA: they round exactly like the CPU loops)
 * The asynchronous algorithms' updates (DC-ASGD, DDC-ASGD, n-softsync) have no CUDA version:
 * they run at the parameter server, which is a CPU rank (worker/ps.c).
 */
#ifndef PACER_OPS_CUDA_H
#define PACER_OPS_CUDA_H

#include <math.h> /* before extern "C": scalar_fn.h (through ops.h) includes it, C++'s is templates */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "ops.h" /* C declarations: inside extern "C" when a .cu file includes this */

/* ---- context ------------------------------------------------------------------------ */
/* One per device per process: cuDNN and cuBLAS handles bound to one stream, scratch for
 * reductions and descriptors, and the last error message. */
typedef struct cuda_ctx cuda_ctx_t;

/* Number of visible CUDA devices; 0 when there is no driver or no GPU (never prints). */
int cuda_device_count(void);
/* Initialises device for this process with blocking synchronisation (a waiting host thread
 * sleeps instead of spinning, which leaves the core to MPI and to other ranks) and makes it
 * current. Returns the cudaError_t (0 = cudaSuccess), for callers that classify it. */
int cuda_device_activate(int device);
/* Fills name with the device's name ("NVIDIA H100 80GB HBM3"); returns 0 or -1. */
int cuda_device_name(int device, char *name, size_t len);
/* Free and total memory of the current device in bytes; returns 0 or -1. */
int cuda_memory_info(size_t *free_bytes, size_t *total_bytes);

/* Makes device current and creates the handles; returns 0, or -1 with err set. */
int cuda_ctx_create(int device, cuda_ctx_t **out, char *err, size_t errlen);
void cuda_ctx_free(cuda_ctx_t *ctx);
const char *cuda_ctx_error(const cuda_ctx_t *ctx);
/* The cudaStream_t every op of this context is enqueued on. */
void *cuda_ctx_stream(cuda_ctx_t *ctx);
/* Waits for everything enqueued so far (blocking: the thread sleeps); reports any
 * asynchronous error. */
int cuda_ctx_sync(cuda_ctx_t *ctx);
/* The same wait, but while the device works the host calls progress(progress_ctx) every
 * ~100 us (an MPI_Test that moves a nonblocking collective along); progress NULL is
 * cuda_ctx_sync. */
int cuda_ctx_sync_progress(cuda_ctx_t *ctx, void (*progress)(void *), void *progress_ctx);

/* Device memory helpers (for tests and tools; the model allocates its own). Copies are
 * synchronous: they return when the data has arrived. */
int cuda_malloc(cuda_ctx_t *ctx, void **ptr, size_t bytes);
void cuda_free(void *ptr);
int cuda_upload(cuda_ctx_t *ctx, void *dst_dev, const void *src_host, size_t bytes);
int cuda_download(cuda_ctx_t *ctx, void *dst_host, const void *src_dev, size_t bytes);
int cuda_memset0(cuda_ctx_t *ctx, void *dst_dev, size_t bytes); /* asynchronous */

/* ---- convolution (cuDNN) ------------------------------------------------------------ */
/* A plan holds the cuDNN descriptors of one geometry and the algorithms picked for the
 * batch size it was last used with. Creating it picks algorithms for max_B, using at most
 * ws_limit bytes of workspace (0: a default cap). A later call with another batch size, or
 * with less workspace than the plan needs, re-picks (host-side work, no allocation). */
typedef struct cuda_conv_plan cuda_conv_plan_t;
int cuda_conv2d_plan_create(cuda_ctx_t *ctx, const conv2d_desc_t *d, int max_B, size_t ws_limit, cuda_conv_plan_t **out);
void cuda_conv2d_plan_free(cuda_conv_plan_t *p);
/* Workspace bytes the plan's current algorithms need (forward and both backward passes). */
size_t cuda_conv2d_plan_workspace(const cuda_conv_plan_t *p);
/* Makes the plan ready for batch B within ws_bytes of workspace: the algorithms chosen for
 * B earlier (a plan keeps them for several batch sizes) or, the first time, a new choice.
 * forward and backward do this themselves; calling it first keeps the choice (host work
 * only) out of a timed step. */
int cuda_conv2d_plan_prepare(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, size_t ws_bytes);
/* Whether a cuDNN status means "not supported": CUDNN_STATUS_NOT_SUPPORTED or, from cuDNN
 * 9 on, any of its sub-codes (CUDNN_STATUS_NOT_SUPPORTED_SHAPE, ..._ARCH_MISMATCH, ...),
 * which share its category (status / 1000 * 1000). Host-only; no device needed. */
int cuda_cudnn_is_not_supported(int status);

int cuda_conv2d_forward(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, const float *inp, /* (B, C, H, W) */
                        const float *weight,                                           /* (OC, C, KH, KW) */
                        const float *bias,                                             /* (OC) or NULL */
                        float *out,                                                    /* (B, OC, OH, OW) */
                        void *ws, size_t ws_bytes);
int cuda_conv2d_backward(cuda_ctx_t *ctx, cuda_conv_plan_t *p, int B, const float *inp, /* (B, C, H, W) */
                         const float *weight,                                           /* (OC, C, KH, KW) */
                         const float *dout,                                             /* (B, OC, OH, OW) */
                         float *dinp,                                                   /* (B, C, H, W) +=, or NULL */
                         float *dweight,                                                /* (OC, C, KH, KW) = */
                         float *dbias,                                                  /* (OC) =, or NULL */
                         void *ws, size_t ws_bytes);

/* ---- pooling (own kernels) ---------------------------------------------------------- */
int cuda_maxpool2d_forward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                           float *out,                                                       /* (B, C, OH, OW) */
                           int32_t *argmax); /* (B, C, OH, OW) flat index into the H*W plane */
int cuda_maxpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout, const int32_t *argmax,
                            float *dinp); /* (B, C, H, W) += */
int cuda_avgpool2d_forward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *inp, float *out);
int cuda_avgpool2d_backward(cuda_ctx_t *ctx, const pool2d_desc_t *d, int B, const float *dout, float *dinp /* += */);

/* ---- elementwise (own kernels) ------------------------------------------------------ */
int cuda_residual_add_forward(cuda_ctx_t *ctx, const shortcut_desc_t *d, int B, const float *a, /* (B, OC, OH, OW) */
                              const float *x,                                                   /* (B, C, H, W) */
                              float *out);                                                      /* (B, OC, OH, OW) */
int cuda_residual_add_backward(cuda_ctx_t *ctx, const shortcut_desc_t *d, int B, const float *dout,
                               float *da,  /* (B, OC, OH, OW) += */
                               float *dx); /* (B, C, H, W) += */
/* Every function of one input (scalar_fn.h's unary_op_t: ReLU, LeakyRelu, sigmoid, tanh,
 * Clip, HardSigmoid, HardSwish, Exp, Neg, Sqrt, Reciprocal, Abs, Pow; a, b its parameters)
 * through one launcher: out = unary_fn(op, inp); out may be inp. The backward adds
 * unary_grad(op, inp, out, dout) to dinp; inp or out may be NULL where op does not read it
 * (unary_grad_reads_input), dinp NULL does nothing. */
int cuda_unary_forward(cuda_ctx_t *ctx, unary_op_t op, float a, float b, size_t n, const float *inp, float *out);
int cuda_unary_backward(cuda_ctx_t *ctx, unary_op_t op, float a, float b, size_t n, const float *inp, const float *out,
                        const float *dout, float *dinp /* += */);
/* Broadcasting binary operators and strided views, as ops.h's binary_forward,
 * binary_backward, view_forward and view_backward (the descriptor is a host struct). The
 * binary backward gives the CPU's bits: one thread per element of an input's gradient adds
 * its terms in the CPU's order (the output's order), so a sum over broadcast axes (the
 * batch of a batch-less constant too) has no atomics. A view's backward assumes the view
 * is injective (Transpose, Slice), so no two threads add into one element. */
int cuda_binary_forward(cuda_ctx_t *ctx, binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b,
                        float *out);
int cuda_binary_backward(cuda_ctx_t *ctx, binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b,
                         const float *dout, float *da /* += */, float *db /* += */);
int cuda_view_forward(cuda_ctx_t *ctx, const bcast_desc_t *d, size_t off, int B, const float *inp, float *out);
int cuda_view_backward(cuda_ctx_t *ctx, const bcast_desc_t *d, size_t off, int B, const float *dout,
                       float *dinp /* += */);
/* ReduceSum and ReduceMean as ops.h's reduce_forward / reduce_backward (the walk d over
 * the input, out's nout floats written whole): one thread per output sums its inputs in
 * the CPU's order, one thread per input element adds its gradient: the CPU's bits. */
int cuda_reduce_forward(cuda_ctx_t *ctx, const bcast_desc_t *d, int B, float scale, const float *inp, float *out,
                        size_t nout);
int cuda_reduce_backward(cuda_ctx_t *ctx, const bcast_desc_t *d, int B, float scale, const float *dout,
                         float *dinp /* += */);
/* A gathered parameter table, as ops.h's gather_param_forward and gather_param_backward
 * (dtable written whole; the CPU's bits: one thread per table element, no atomics). */
int cuda_gather_param_forward(cuda_ctx_t *ctx, size_t n, size_t tcount, const float *map, const float *table,
                              float *out);
int cuda_gather_param_backward(cuda_ctx_t *ctx, size_t n, size_t tcount, const float *map, const float *dout,
                               float *dtable);
/* The language models' kernels, as ops.h's embed_* and causal_softmax_* (the CPU's bits:
 * each table row's gradient rows added in row order, one thread per score row). The
 * embedding's backward needs a device workspace of cuda_embed_workspace(rows) bytes. */
int cuda_embed_forward(cuda_ctx_t *ctx, size_t rows, int V, int E, const float *ids, const float *table, float *out);
size_t cuda_embed_workspace(size_t rows);
int cuda_embed_backward(cuda_ctx_t *ctx, size_t rows, int V, int E, const float *ids, const float *dout, float *dtable,
                        int add, void *ws);
int cuda_causal_softmax_forward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *inp, float *out);
int cuda_causal_softmax_backward(cuda_ctx_t *ctx, size_t mats, int T, float scale, const float *out, const float *dout,
                                 float *dinp, int set);
/* Mul as ops.h's (b (B, C, HW2), HW2 HW or 1; da and db may be one buffer, either NULL). */
int cuda_mul_forward(cuda_ctx_t *ctx, int B, int C, int HW, int HW2, const float *a, const float *b, float *out);
int cuda_mul_backward(cuda_ctx_t *ctx, int B, int C, int HW, int HW2, const float *a, const float *b, const float *dout,
                      float *da /* += */, float *db /* += */);
/* Concatenation along channels of n tensors (B, C[i], HW) into out (B, sum C[i], HW); C and
 * the pointer arrays are HOST arrays of device pointers. A NULL dinp[i] is skipped; two
 * dinp may be the same buffer (Concat(x, x)). */
int cuda_concat_forward(cuda_ctx_t *ctx, int B, int HW, int n, const int *C, const float *const *inp, float *out);
int cuda_concat_backward(cuda_ctx_t *ctx, int B, int HW, int n, const int *C, const float *dout,
                         float *const *dinp /* += */);
/* Training-time dropout with ops.h's key and mask (the same elements dropped as
 * dropout_forward / dropout_backward for the same key); out may be inp. */
int cuda_dropout_forward(cuda_ctx_t *ctx, size_t n, float p, uint64_t key, const float *inp, float *out);
int cuda_dropout_backward(cuda_ctx_t *ctx, size_t n, float p, uint64_t key, const float *dout, float *dinp /* += */);
/* Stochastic depth with ops.h's per-sample mask (stochastic_depth_forward's samples). */
int cuda_stochastic_depth_forward(cuda_ctx_t *ctx, size_t n, size_t per, float p, uint64_t key, const float *inp,
                                  float *out);
int cuda_stochastic_depth_backward(cuda_ctx_t *ctx, size_t n, size_t per, float p, uint64_t key, const float *dout,
                                   float *dinp /* += */);
/* dst += src, n floats. */
int cuda_accumulate(cuda_ctx_t *ctx, size_t n, const float *src, float *dst);
/* x *= k, n floats. */
int cuda_scale(cuda_ctx_t *ctx, size_t n, float *x, float k);

/* ---- fully connected (cuBLAS) ------------------------------------------------------- */
int cuda_fc_forward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, /* (B, IN) */
                    const float *weight,                                       /* (OUT, IN) */
                    const float *bias,                                         /* (OUT) or NULL */
                    float *out);                                               /* (B, OUT) */
int cuda_fc_backward(cuda_ctx_t *ctx, int B, int IN, int OUT, const float *inp, const float *weight, const float *dout,
                     float *dinp,    /* (B, IN) +=, or NULL */
                     float *dweight, /* (OUT, IN) = */
                     float *dbias);  /* (OUT) =, or NULL */

/* ONNX Gemm, gemm_forward / gemm_backward of ops.h (layout, alpha, beta; bias may be NULL).
 * cuda_fc_* are the (OUT, IN), alpha = beta = 1 case. */
int cuda_gemm_forward(cuda_ctx_t *ctx, const gemm_desc_t *d, int B, const float *inp, const float *weight,
                      const float *bias, float *out);
int cuda_gemm_backward(cuda_ctx_t *ctx, const gemm_desc_t *d, int B, const float *inp, const float *weight,
                       const float *dout, float *dinp /* +=, or NULL */, float *dweight /* = */,
                       float *dbias /* =, or NULL */);

/* ---- matrix products of two activations (cuBLAS) ------------------------------------- */
/* bmm_forward / bmm_backward of ops.h: G pairs of a (M, K) and b (K, N), one strided-batched
 * SGEMM per pass; da and db may be one buffer, either NULL. */
int cuda_bmm_forward(cuda_ctx_t *ctx, int G, int M, int K, int N, const float *a, const float *b,
                     float *out); /* (G, M, N) = */
int cuda_bmm_backward(cuda_ctx_t *ctx, int G, int M, int K, int N, const float *a, const float *b, const float *dout,
                      float *da /* += */, float *db /* += */);

/* ---- layer normalisation (own kernels) ----------------------------------------------- */
/* layernorm_forward / layernorm_backward of ops.h over R rows of D elements. The backward
 * needs ws_bytes >= cuda_layernorm_workspace(R, D) of device workspace (each row's
 * statistics and the parameter gradients' partial sums; host-only, no device needed). */
size_t cuda_layernorm_workspace(int R, int D);
int cuda_layernorm_forward(cuda_ctx_t *ctx, int R, int D, float eps, const float *inp, const float *w, const float *b,
                           float *out);
int cuda_layernorm_backward(cuda_ctx_t *ctx, int R, int D, float eps, const float *inp, const float *w,
                            const float *dout, float *dinp /* += or NULL */, float *dw /* = */, float *db /* = */,
                            void *ws, size_t ws_bytes);

/* ---- softmax cross-entropy (own kernels) -------------------------------------------- */
/* Writes probs and the mean loss with label smoothing `smoothing` (softmax_xent_forward
 * of ops.h) to loss_dev (one float on the device); asynchronous. */
int cuda_softmax_xent_forward(cuda_ctx_t *ctx, int B, int N, const float *logits, /* (B, N) */
                              const int32_t *labels,                              /* (B) */
                              float smoothing, float *probs,                      /* (B, N) */
                              float *loss_dev);                                   /* (1) */
int cuda_softmax_xent_backward(cuda_ctx_t *ctx, int B, int N, const float *probs, const int32_t *labels,
                               float smoothing, float scale, float *dlogits /* (B, N) = */);
/* Softmax or LogSoftmax (take_log) along an axis, softmax_axis_forward /
 * softmax_axis_backward of ops.h: rows of n elements lying inner apart (out the forward's
 * output, read by the backward). */
int cuda_softmax_axis_forward(cuda_ctx_t *ctx, int take_log, int rows, int n, int inner, const float *inp, float *out);
int cuda_softmax_axis_backward(cuda_ctx_t *ctx, int take_log, int rows, int n, int inner, const float *out,
                               const float *dout, float *dinp /* += or NULL */);
/* argmax(logits) == label count; synchronous. Returns the count, or -1 on error. */
int cuda_count_correct(cuda_ctx_t *ctx, int B, int N, const float *logits, const int32_t *labels);

/* ---- batch norm (cuDNN, spatial) ---------------------------------------------------- */
/* Same contract as ops.h (epsilon BN_EPS, or eps for the _eps forms; running variance
 * updated with the unbiased batch variance). save_mean/save_invstd are what cuDNN saves: the batch mean and 1/sqrt(var+eps).
 * dinp must NOT be NULL here (cuDNN always writes it). */
int cuda_batchnorm_forward_train(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                 const float *beta, float *out, float *save_mean, float *save_invstd,
                                 float *running_mean, float *running_var, float momentum);
int cuda_batchnorm_forward_eval(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                const float *beta, const float *running_mean, const float *running_var, float *out);
int cuda_batchnorm_backward(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                            const float *save_mean, const float *save_invstd, const float *dout,
                            float *dinp,                  /* += , not NULL */
                            float *dgamma, float *dbeta); /* = */
int cuda_batchnorm_forward_train_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                     const float *beta, float *out, float *save_mean, float *save_invstd,
                                     float *running_mean, float *running_var, float momentum, float eps);
int cuda_batchnorm_forward_eval_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                    const float *beta, const float *running_mean, const float *running_var, float *out,
                                    float eps);
int cuda_batchnorm_backward_eps(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, const float *gamma,
                                const float *save_mean, const float *save_invstd, const float *dout, float *dinp,
                                float *dgamma, float *dbeta, float eps);

/* ---- global average pooling (own kernels) ------------------------------------------- */
int cuda_gap_forward(cuda_ctx_t *ctx, int B, int C, int HW, const float *inp, float *out);
int cuda_gap_backward(cuda_ctx_t *ctx, int B, int C, int HW, const float *dout, float *dinp /* += */);

/* ---- optimizer and gradient work (own kernels) -------------------------------------- */
/* sgd_update of ops.h. When grad_scale_dev is not NULL the gradient scale is read from
 * that device float instead of grad_scale (lets a clipping coefficient computed on the
 * device be applied without a round trip to the host). */
int cuda_sgd_update(cuda_ctx_t *ctx, size_t n, float *w, const float *g, float *u, float lr, float momentum,
                    int nesterov, float weight_decay, float grad_scale, const float *grad_scale_dev);
/* adamw_update of ops.h, the gradient scale from grad_scale_dev when not NULL (as
 * cuda_sgd_update). */
int cuda_adamw_update(cuda_ctx_t *ctx, size_t n, float *w, const float *g, float *m, float *v, const adamw_hparams_t *h,
                      long step, float grad_scale, const float *grad_scale_dev);
/* Sum of squares of g in double, deterministic (fixed reduction order); synchronous. */
int cuda_sum_squares(cuda_ctx_t *ctx, size_t n, const float *g, double *out);
/* clip_grad_norm of ops.h: g *= max_norm/(norm + 1e-6) when that is < 1 (max_norm <= 0: no
 * clipping). norm_out, when not NULL, receives the norm before clipping (synchronous then). */
int cuda_clip_grad_norm(cuda_ctx_t *ctx, size_t n, float *g, float max_norm, float *norm_out);
/* The worker's clipping rule (worker_apply_gradient): with norm = grad_scale*sqrt(sum g^2),
 * *scale_dev = grad_scale * (clip_norm/norm if clip_norm > 0 and norm > clip_norm, else 1).
 * Asynchronous; pass scale_dev to cuda_sgd_update. */
int cuda_clip_scale(cuda_ctx_t *ctx, size_t n, const float *g, float grad_scale, float clip_norm, float *scale_dev);

#ifdef __cplusplus
}
#endif

#endif
