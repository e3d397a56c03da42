/* kernels/ref/ref.h - double-precision reference kernels: plain loops written from the
 * operators' definitions (ONNX's, PyTorch's), the specification the fast kernels of
 * kernels/cpu and kernels/cuda are checked against. They are compiled into the tests only
 * (tests/unit/test_ops.c, test_op_table.c), never into a program: no threads, no blocking,
 * no speed. Layouts are the fast kernels' (NCHW, ops.h's descriptors); a backward that is
 * not here is checked by finite differences of the forward (test_ops.c's check_fd).
 *
 * Shapes: B the batch, C/OC channels in/out, H/W and OH/OW planes in/out, HW = H*W. */
#ifndef PACER_REF_H
#define PACER_REF_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h" /* the descriptors: conv2d_desc_t, pool2d_desc_t, shortcut_desc_t, gemm_desc_t */

/* ---- convolution (conv.c) ---- */
/* y (B, OC, OH, OW) = conv(x (B, C, H, W), w (OC, C/groups, KH, KW)) + bias (OC, or NULL) */
void ref_conv2d_forward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *bias, double *y);
/* its adjoint: dx += g * w, dw += g * x, db += g (the caller zeroes them) */
void ref_conv2d_backward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *g, double *dx,
                         double *dw, double *db);
/* y (B, OC, OH, OW) = the transposed convolution of x (B, C, H, W) by w (C, OC/groups, KH,
 * KW) + bias (OC, or NULL): input pixel (ih, iw) of channel c adds into output pixel
 * (ih*sH - pad_t + kh*dH, iw*sW - pad_l + kw*dW) of each output channel of its group */
void ref_conv_transpose2d_forward(const conv2d_desc_t *d, int B, const double *x, const double *w, const double *bias,
                                  double *y);

/* ---- pooling (pool.c) ---- */
/* y (B, C, OH, OW); am: the argmax plane index of each output (NULL: not wanted) */
void ref_maxpool2d_forward(const pool2d_desc_t *d, int B, const double *x, double *y, int32_t *am);
void ref_avgpool2d_forward(const pool2d_desc_t *d, int B, const double *x, double *y);
/* y (B, C) = the mean of each plane of x (B, C, HW) */
void ref_gap_forward(int B, int C, int HW, const double *x, double *y);

/* ---- elementwise (elementwise.c) ---- */
/* y = a + shortcut(x): x subsampled by the stride, its C channels at offset (OC - C) / 2 */
void ref_shortcut_add_forward(const shortcut_desc_t *d, int B, const double *a, const double *x, double *y);
typedef enum { REF_ACT_RELU, REF_ACT_LEAKY, REF_ACT_SIGMOID, REF_ACT_TANH } ref_act_t;
/* one element of an activation (alpha: LeakyRelu's slope) */
double ref_act(ref_act_t kind, double alpha, double x);
/* ops.h's unary functions in double (a: Pow's exponent) */
double ref_unary(unary_op_t op, double a, double x);
/* ops.h's binary_forward in double: each output element's inputs found from its index */
void ref_binary_forward(binary_op_t op, const bcast_desc_t *d, int B, const double *a, const double *b, double *y);
/* ops.h's view_forward in double, each output's input found from its index */
void ref_view_forward(const bcast_desc_t *d, size_t off, int B, const double *x, double *y);
/* ReduceSum (mean 0) or ReduceMean (mean 1) of x (B, dims[0], ..., dims[rank - 1]) over the
 * sample axes mask (bit d: dims[d]): y the kept axes in order */
void ref_reduce_forward(int B, int rank, const int *dims, unsigned mask, int mean, const double *x, double *y);
/* ONNX Clip: min(max(x, lo), hi) (hi where lo > hi) */
double ref_clip(double lo, double hi, double x);
/* ONNX HardSigmoid: max(0, min(1, alpha * x + beta)) */
double ref_hardsigmoid(double alpha, double beta, double x);
/* ONNX HardSwish: x * max(0, min(1, x / 6 + 1 / 2)) */
double ref_hardswish(double x);
/* y (B, C, HW) = a (B, C, HW) * b (B, C, HW2), HW2 HW or 1 (b broadcast over the plane) */
void ref_mul_forward(int B, int C, int HW, int HW2, const double *a, const double *b, double *y);
/* y (B, sum C, HW): the channels of x[0], then of x[1], ... */
void ref_concat_forward(int B, int HW, int n, const int *C, const double *const *x, double *y);
/* training dropout: y = keep(i) ? x / (1 - p) : 0 with the fast kernels' mask (ops.h's
 * dropout_keep for key), the identity for p = 0 */
void ref_dropout_forward(size_t n, double p, uint64_t key, const double *x, double *y);
/* training stochastic depth (mode "row"): sample b (the per elements from b * per) is
 * y = keep(b) ? x / (1 - p) : 0, keep(b) being dropout_keep(key, b); the identity for p = 0 */
void ref_stochastic_depth_forward(size_t n, size_t per, double p, uint64_t key, const double *x, double *y);

/* ---- fully connected (fc.c) ---- */
/* y (B, OUT) = x (B, IN) w' (w (OUT, IN)) + b (OUT, or NULL) */
void ref_fc_forward(int B, int IN, int OUT, const double *x, const double *w, const double *b, double *y);
/* ONNX Gemm: y = alpha * x W' + beta * b, W' from d's layout */
void ref_gemm_forward(const gemm_desc_t *d, int B, const double *x, const double *w, const double *b, double *y);

/* A bf16 product (gemm_bf16.h) exactly: y (M, N) = alpha * op(A) op(B) + beta * c with every
 * element of A and B rounded to bf16 first, in double (the products of bf16 values and
 * their sums of up to 2^29 terms are exact there but for double's rounding); c may be
 * NULL (beta's term 0). mag (or NULL): |alpha| sum_k |a_k b_k| + |beta c|, the scale of
 * gemm_bf16.h's error bound. */
void ref_gemm_bf16(int transA, int transB, int M, int N, int K, double alpha, const float *A, int lda, const float *B,
                   int ldb, double beta, const float *c, int ldc, double *y, double *mag);

/* ---- batch norm (batchnorm.c) ---- */
/* training mode: the batch's mean and biased variance (mean, var: (C) or NULL) */
void ref_batchnorm_forward_train(int B, int C, int HW, const double *x, const double *gamma, const double *beta,
                                 double eps, double *y, double *mean, double *var);

/* ops.h's layernorm_forward in double */
void ref_layernorm_forward(int rows, int D, double eps, const double *x, const double *w, const double *b, double *y);

/* ---- language models (seq.c) ---- */
/* ops.h's embed_forward in double: y (rows, E) = table[ids] (0 outside the table) */
void ref_embed_forward(size_t rows, int V, int E, const double *ids, const double *table, double *y);
/* ops.h's causal_softmax_forward in double: the masked half 0 */
void ref_causal_softmax(size_t mats, int T, double scale, const double *x, double *y);

/* ---- loss (softmax.c) ---- */
/* mean cross-entropy of softmax(x (B, N)) against labels, with label smoothing eps
 * (torch.nn.CrossEntropyLoss's: (1 - eps) * nll + eps * the mean over classes of -log p);
 * probs (B, N) or NULL */
double ref_softmax_xent(int B, int N, const double *x, const int32_t *labels, double eps, double *probs);
/* ops.h's bmm_forward in double: y (G, M, N) = a (G, M, K) b (G, K, N) */
void ref_bmm_forward(int G, int M, int K, int N, const double *a, const double *b, double *y);
/* ops.h's softmax_axis_forward in double: softmax (take_log 0) or log-softmax (take_log 1) of x
 * (rows, n, inner) along the middle axis */
void ref_softmax_axis(int take_log, int rows, int n, int inner, const double *x, double *y);

/* ops.h's gather_param_forward in double: y[j] = table[map[j]] (0 outside the table) */
void ref_gather_param_forward(size_t n, size_t tcount, const double *map, const double *table, double *y);

/* ---- optimizer (optim.c) ---- */
/* One torch.optim.AdamW step t (>= 1) on n elements of w with gradient g, moments m, v. */
void ref_adamw_step(size_t n, double *w, const double *g, double *m, double *v, double lr, double beta1, double beta2,
                    double eps, double weight_decay, long t);

#endif
