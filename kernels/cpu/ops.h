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
 *   - the weight and bias gradients of gemm_backward (fc_backward), layernorm_backward
 *     and the batch norms' backwards may be NULL too: not computed (a frozen parameter);
 *     gemm's weight product is then skipped. The convolutions' dweight may not.
 * No function here allocates; scratch memory comes from the caller (workspace sizes
 * are given by the *_workspace functions).
 */
#ifndef PACER_OPS_H
#define PACER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "scalar_fn.h"

/* ---- convolution ---------------------------------------------------------------- */
/* A 2-D convolution as ONNX Conv and PyTorch nn.Conv2d define it: stride per dimension,
 * explicit zero padding on each side (ONNX pads = [top, left, bottom, right]; auto_pad
 * SAME_UPPER / SAME_LOWER / VALID resolve to such pads before a descriptor is made),
 * dilation, and groups: the C input and OC output channels split into `groups` equal
 * parts, output channel oc reading only the C/groups input channels of its part
 * (groups == C: depthwise, OC/C filters per channel).
 *   OH = (H + pad_t + pad_b - dH*(KH - 1) - 1) / sH + 1, likewise OW.
 * Weight layout (OC, C/groups, KH, KW), as ONNX and PyTorch store it. */
typedef struct {
    int C, H, W;                    /* input */
    int OC, KH, KW;                 /* filters */
    int sH, sW;                     /* stride */
    int pad_t, pad_l, pad_b, pad_r; /* zero padding: top, left, bottom, right */
    int dH, dW;                     /* dilation; 1 is a dense kernel */
    int groups;                     /* divides C and OC; 1 is a plain convolution */
    int OH, OW;                     /* output, filled by conv2d_setup */
} conv2d_desc_t;

/* The square case of the built-in networks: stride and pad the same in both dimensions,
 * no dilation, one group. Fills OH/OW; returns 0, or -1 when the geometry gives an empty
 * output. */
int conv2d_init(conv2d_desc_t *d, int C, int H, int W, int OC, int KH, int KW, int stride, int pad);
/* Any geometry: the caller sets every field but OH/OW (dH = dW = groups = 1 for a plain
 * convolution); fills OH/OW. Returns -1 for a non-positive size, stride, dilation or group
 * count, a negative pad, groups not dividing C and OC, or an empty output. */
int conv2d_setup(conv2d_desc_t *d);
/* Floats of scratch needed by forward and backward for a batch of up to B images (0 for
 * the direct depthwise kernel, groups > 1 with C == groups). */
size_t conv2d_workspace(const conv2d_desc_t *d, int B);
void conv2d_forward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                    const float *weight,                             /* (OC, C/groups, KH, KW) */
                    const float *bias,                               /* (OC) or NULL */
                    float *out,                                      /* (B, OC, OH, OW) */
                    float *ws);
void conv2d_backward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                     const float *weight,                             /* (OC, C/groups, KH, KW) */
                     const float *dout,                               /* (B, OC, OH, OW) */
                     float *dinp,                                     /* (B, C, H, W) +=, or NULL */
                     float *dweight,                                  /* (OC, C/groups, KH, KW) = */
                     float *dbias,                                    /* (OC) =, or NULL */
                     float *ws);
/* What a CPU rank's summary says of its convolutions (per_rank[].device.conv, kernels.conv)
 * at the process's precision: at fp32 direct_isa_name()'s "direct-avx512", "direct-avx2"
 * or "im2col-gemm"; at bf16 "direct-amx-bf16" or "direct-avx512-bf16" where the one-group,
 * stride-1 layers run on conv_amx.h's loops on the AMX tiles or on AVX512-BF16's vectors,
 * else "im2col-gemm" (the bf16 products of matmul.h). */
const char *conv2d_kernel(void);
/* 1 where the convolution runs on conv_amx.h's padded planes (at bf16 on the AMX or
 * AVX512-BF16 path, or on the twin under conv_amx_force_twin): one group, stride and
 * dilation 1, pads within the kernel's reach, a kernel of more than one tap and an output
 * plane of 64 values or more; on AVX512-BF16, more than 8 input channels. */
int conv2d_amx(const conv2d_desc_t *d);
/* 1 where this CPU runs the convolution's forward and input gradient at batch B by
 * Winograd's F(4x4, 3x3) (conv.c: 3x3, stride 1, pad 1, >= 16 channels in and out, AVX2;
 * 512 x 512 channels or more only at batches of 64 tiles or more): their rounding then
 * differs from a direct sum's by up to a few 1e-5 of the outputs' scale. */
int conv2d_winograd(const conv2d_desc_t *d, int B);
/* The same with dinp = instead of +=: bit for bit what conv2d_backward gives into a zeroed
 * dinp. Where the direct input gradient runs (conv.c) it writes dinp without reading it;
 * elsewhere dinp is zeroed first. For an input gradient with no other contribution
 * (model.c's grad_setter). */
void conv2d_backward_set(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                         float *dinp, float *dweight, float *dbias, float *ws);

/* ---- transposed convolution (conv_transpose.c) ---------------------------------- */
/* A 2-D transposed convolution as ONNX ConvTranspose and PyTorch nn.ConvTranspose2d define
 * it, the input gradient of the convolution of the same weight: input pixel (ih, iw) of
 * channel c adds weight[c, oc - g * OC/groups, kh, kw] times itself into output pixel
 * (ih * sH - pad_t + kh * dH, iw * sW - pad_l + kw * dW) of each channel oc of c's group g.
 * The descriptor's fields as a convolution's, input (C, H, W) and output (OC, OH, OW):
 *   OH = sH * (H - 1) + dH * (KH - 1) + 1 - pad_t - pad_b + output padding, likewise OW.
 * Weight layout (C, OC/groups, KH, KW), as ONNX and PyTorch store it. */
/* Fills OH/OW when both are 0 (no output padding); else checks them: an output padding
 * (OH less the size without it) from 0 to below the stride or the dilation. Returns -1 for
 * those, a non-positive size, stride, dilation or group count, a negative pad, or groups
 * not dividing C and OC. */
int conv_transpose2d_setup(conv2d_desc_t *d);
/* Floats of scratch for forward and backward (the columns of one image and group). */
size_t conv_transpose2d_workspace(const conv2d_desc_t *d, int B);
void conv_transpose2d_forward(const conv2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                              const float *weight,                             /* (C, OC/groups, KH, KW) */
                              const float *bias,                               /* (OC) or NULL */
                              float *out,                                      /* (B, OC, OH, OW) */
                              float *ws);
/* dinp +=, or = where set (or NULL); dweight =; dbias =, or NULL. */
void conv_transpose2d_backward(const conv2d_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                               float *dinp, float *dweight, float *dbias, float *ws, int set);

/* ---- pooling -------------------------------------------------------------------- */
/* Max and average pooling as ONNX MaxPool / AveragePool and PyTorch define them: window
 * KH x KW, stride and padding per dimension and side, dilation (taps dH, dW apart), floor
 * or ceil output size:
 *   OH = floor_or_ceil((H + pad_t + pad_b - dH*(KH - 1) - 1) / sH) + 1,
 * and in ceil mode the last window must start inside the input or its top/left padding,
 * (OH - 1)*sH < H + pad_t, else it is dropped (PyTorch's rule, which ceil-mode windows
 * that would cover padding only never pass). Padding never enters a maximum.
 * Average pooling divides the sum of the window's in-bounds elements by
 *   count_include_pad = 0: the number of them (ONNX's default);
 *   count_include_pad = 1: the number of the window's taps inside the PADDED input
 *     [-pad_t, H + pad_b) x [-pad_l, W + pad_r), so padding counts as zeros but a
 *     ceil-mode window running past the padded input is not divided by what lies beyond
 *     (PyTorch's AvgPool2d(count_include_pad=True), the ONNX reference).
 * torch.onnx (1.13) exports AvgPool2d(padding=p, count_include_pad=True) as a zero Pad
 * followed by AveragePool with pads 0: that pair is this op with pads p and
 * count_include_pad = 1. */
typedef struct {
    int C, H, W;
    int KH, KW;                     /* window */
    int sH, sW;                     /* stride */
    int pad_t, pad_l, pad_b, pad_r; /* padding: top, left, bottom, right */
    int dH, dW;                     /* dilation; 1 is a dense window */
    int ceil_mode;                  /* 0: floor output size, 1: ceil */
    int count_include_pad;          /* average pooling's divisor, see above */
    int OH, OW;                     /* filled by pool2d_init / pool2d_setup */
} pool2d_desc_t;

/* The square case of the built-in networks: K x K window, stride and pad the same in
 * both dimensions, no dilation, count_include_pad = 0; pad at most K/2 (PyTorch's rule). */
int pool2d_init(pool2d_desc_t *d, int C, int H, int W, int K, int stride, int pad, int ceil_mode);
/* Any geometry: the caller sets every field but OH/OW (dH = dW = 1 for a dense window);
 * fills OH/OW. Returns -1 for a non-positive size, window, stride or dilation, a negative
 * pad, an empty output, or an output window without a single tap inside the input (its
 * maximum or in-bounds average would not exist). */
int pool2d_setup(pool2d_desc_t *d);
void maxpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, /* (B, C, H, W) */
                       float *out,                                      /* (B, C, OH, OW) */
                       int32_t *argmax); /* (B, C, OH, OW) flat index into the H*W plane */
void maxpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, const int32_t *argmax,
                        float *dinp); /* (B, C, H, W) += */
void avgpool2d_forward(const pool2d_desc_t *d, int B, const float *inp, float *out);
void avgpool2d_backward(const pool2d_desc_t *d, int B, const float *dout, float *dinp /* += */);

/* ---- elementwise ---------------------------------------------------------------- */
/* x[0..n) = 0, on the kernels' threads (a step's gradient buffers). */
void zero_floats(size_t n, float *x);
void relu_forward(size_t n, const float *inp, float *out);
/* Uses the forward output: out > 0 exactly where inp > 0. */
void relu_backward(size_t n, const float *out, const float *dout, float *dinp /* += */);
/* dinp = instead of +=: bit for bit what relu_backward gives into a zeroed dinp, without
 * reading it (an input gradient the ReLU writes first: model.c's grad_setter). */
void relu_backward_set(size_t n, const float *out, const float *dout, float *dinp);

/* The activations below take and give n floats; out may be inp (in place). Each backward
 * reads the forward OUTPUT, so an in-place forward loses nothing it needs. */
/* LeakyRelu: out = inp > 0 ? inp : alpha * inp. alpha >= 0 (the backward tells the two
 * sides apart by out > 0, which a negative alpha breaks; PyTorch refuses it in place for
 * the same reason). At inp == 0 the gradient is alpha * dout, as in PyTorch. */
void leaky_relu_forward(size_t n, float alpha, const float *inp, float *out);
void leaky_relu_backward(size_t n, float alpha, const float *out, const float *dout, float *dinp /* += */);
/* Sigmoid: out = 1 / (1 + exp(-inp)) (never overflows); dinp += dout * (1 - out) * out. */
void sigmoid_forward(size_t n, const float *inp, float *out);
void sigmoid_backward(size_t n, const float *out, const float *dout, float *dinp /* += */);
/* Tanh: out = tanh(inp); dinp += dout * (1 - out * out). */
void tanh_forward(size_t n, const float *inp, float *out);
void tanh_backward(size_t n, const float *out, const float *dout, float *dinp /* += */);

/* Clip (ReLU6 is lo 0, hi 6): out = min(max(inp, lo), hi) (hi where lo > hi, as ONNX);
 * the gradient passes where lo < out < hi, PyTorch's hardtanh_backward (0 at the bounds). */
void clip_forward(size_t n, float lo, float hi, const float *inp, float *out);
void clip_backward(size_t n, float lo, float hi, const float *out, const float *dout, float *dinp /* += */);
/* HardSigmoid: out = max(0, min(1, alpha * inp + beta)); dinp += alpha * dout where
 * 0 < out < 1 (PyTorch's hardsigmoid_backward for alpha 1/6, beta 1/2). */
void hardsigmoid_forward(size_t n, float alpha, float beta, const float *inp, float *out);
void hardsigmoid_backward(size_t n, float alpha, const float *out, const float *dout, float *dinp /* += */);
/* HardSwish: out = inp * min(max(inp + 3, 0), 6) / 6 (PyTorch's order); the backward reads
 * the INPUT (not in place): dout * (inp < -3 ? 0 : inp <= 3 ? inp / 3 + 1/2 : 1). */
void hardswish_forward(size_t n, const float *inp, float *out);
void hardswish_backward(size_t n, const float *inp, const float *dout, float *dinp /* += */);
/* Elementwise functions of one input (ONNX's Exp, Neg, Sqrt, Reciprocal, Abs and Pow with a
 * constant exponent a): out = f(inp). The backward adds dout * f'(inp), from inp or out
 * or both (GELU: scalar_fn.h's unary_grad_reads_*); Abs's derivative is 0 at 0 (PyTorch's sign), Sqrt's and Reciprocal's are infinite at 0
 * as theirs are. a is read by UNARY_POW only. */
/* unary_op_t: scalar_fn.h, the table of scalar functions shared with the CUDA kernels */
/* Binary operators with NumPy broadcasting (ONNX's Add, Sub, Mul, Div) over the batch axis
 * and up to 5 more: out is (B, dims[1], ..., dims[rank - 1]) (dims[0] is the batch, given
 * per call), a and b are read at strides sa and sb in elements, 0 along an axis an input
 * broadcasts (the batch axis too, for a batch-less constant). The backward adds each
 * input's gradient, summed over the axes it broadcasts along (da, db may be NULL; a and b,
 * da and db may alias). */
#define BCAST_MAX_AXES 6
typedef struct {
    int rank;
    int dims[BCAST_MAX_AXES];
    size_t sa[BCAST_MAX_AXES], sb[BCAST_MAX_AXES];
} bcast_desc_t;
/* binary_op_t: scalar_fn.h */
/* A strided view copied out (Transpose, Slice): out[o] = inp[off + the walk of sa over
 * out's shape] (sb unused); the backward adds dout back at the same places. */
void view_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, float *out);
void view_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp /* += */);
/* The same two by rows (view.c), bit for bit: the walk's innermost run is a plain loop
 * (the model's Transpose, Slice and Expand steps run these). view_rows_backward_set writes
 * dinp instead of adding, for a view that reads every input exactly once (a Transpose)
 * whose input gradient has no other contribution (model.c's grad_setter). */
void view_rows_forward(const bcast_desc_t *d, size_t off, int B, const float *inp, float *out);
/* view_rows_forward of an input stored in bf16 (gemm_bf16_act.h), its values as float32:
 * generation's head split of a fused attention's q, k and v (plan.h's act_bf16) */
void view_rows_forward16(const bcast_desc_t *d, size_t off, int B, const uint16_t *inp, float *out);
void view_rows_backward(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp /* += */);
void view_rows_backward_set(const bcast_desc_t *d, size_t off, int B, const float *dout, float *dinp /* = */);
/* A sum over axes (ReduceSum, ReduceMean), times scale: the walk d is over the input (sa
 * its contiguous strides), sb the output's strides, 0 along a reduced axis; out (nout
 * floats) is written whole. The backward adds scale * dout back to every input it summed. */
void reduce_forward(const bcast_desc_t *d, int B, float scale, const float *inp, float *out, size_t nout);
void reduce_backward(const bcast_desc_t *d, int B, float scale, const float *dout, float *dinp /* += */);
void binary_forward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, float *out);
void binary_backward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, const float *dout,
                     float *da /* += */, float *db /* += */);
/* The same two by rows (view.c), bit for bit: the model's Add, Sub, Mul and Div steps run
 * these. set_a (set_b) writes da (db) instead of adding, for an input that is not
 * broadcast (every element read by one output) whose gradient has no other contribution
 * (model.c's grad_setter): the bits binary_backward gives into zeros. */
void binary_rows_forward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b, float *out);
void binary_rows_backward(binary_op_t op, const bcast_desc_t *d, int B, const float *a, const float *b,
                          const float *dout, float *da, int set_a, float *db, int set_b);
void unary_forward(unary_op_t op, float a, size_t n, const float *inp, float *out);
void unary_backward(unary_op_t op, float a, size_t n, const float *inp, const float *out, const float *dout,
                    float *dinp /* += */);
/* The same writing dinp instead of adding to it (the bits += gives into zeros), for an input
 * gradient with no other contribution (model.c's grad_setter). */
void unary_backward_set(unary_op_t op, float a, size_t n, const float *inp, const float *out, const float *dout,
                        float *dinp);
/* unary_forward with its output stored in bf16 (gemm_bf16_act.h's bf16_act_store: as the
 * products on cpu_isa()'s path round an operand), for an output that only matrix products
 * and the layer's own backward read. The float32 values are unary_forward's bits. The
 * input is inp, or where inp is NULL inp16, stored in bf16: the bits of unary_forward on
 * its values as float32 (a rounded input, gemm_forward_rounded's). */
void unary_forward_bf16(unary_op_t op, float a, size_t n, const float *inp, const uint16_t *inp16, uint16_t *out16);
/* unary_backward (set: unary_backward_set) on the output rounded to bf16 as
 * unary_forward_bf16 stores it: read from out16 where it is stored so (out NULL), else from
 * the float32 out, rounded here the same way. The same bits either way. The input as
 * unary_forward_bf16's. */
void unary_backward_bf16(unary_op_t op, float a, size_t n, const float *inp, const uint16_t *inp16, const float *out,
                         const uint16_t *out16, const float *dout, float *dinp, int set);
/* Product of a (B, C, HW) and b (B, C, HW2), HW2 either HW or 1 (b then a per-channel
 * scale broadcast over the plane: squeeze-excitation): out = a * b. The backward adds
 * dout * b to da and dout * a (summed over the plane where HW2 is 1) to db; either may be
 * NULL, and they may be one buffer (Mul(x, x)). */
void mul_forward(int B, int C, int HW, int HW2, const float *a, const float *b, float *out);
void mul_backward(int B, int C, int HW, int HW2, const float *a, const float *b, const float *dout, float *da /* += */,
                  float *db /* += */);

/* Elementwise sum of two tensors of the same shape (ONNX Add of two activations, a
 * residual with an identity or projection shortcut): out = a + b, out may be a or b.
 * The backward adds dout to both gradients; either may be NULL, and they may be the same
 * buffer (Add(x, x) then receives 2 * dout). */
void add_forward(size_t n, const float *a, const float *b, float *out);
void add_backward(size_t n, const float *dout, float *da /* += */, float *db /* += */);

/* Concatenation along channels (ONNX Concat, axis 1) of n tensors (B, C[i], HW) into
 * out (B, sum C[i], HW), in order. The backward adds each slice of dout to its input's
 * gradient; a NULL dinp[i] is skipped. */
void concat_forward(int B, int HW, int n, const int *C, const float *const *inp, float *out);
void concat_backward(int B, int HW, int n, const int *C, const float *dout, float *const *dinp /* += */);

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
/* The same with da and/or dx = instead of += where set_a / set_x: bit for bit what += gives
 * into zeroed buffers, without reading them. With a stride other than 1 set_x is ignored
 * (dx has positions no output reaches): dx is added to, and the caller zeroes it. */
void residual_add_backward_set(const shortcut_desc_t *d, int B, const float *dout, float *da, int set_a, float *dx,
                               int set_x);

/* ---- dropout (training-time, inverted) ------------------------------------------ */
/* Element i of an application is dropped when a 24-bit draw from a counter-based hash of
 * (key, i) is below dropout_threshold(p); kept elements are scaled by 1 / (1 - p)
 * (float, computed as 1.0f / (1.0f - p), PyTorch's rounding). The mask costs no memory and
 * no state: the backward regenerates it, and any rank, and the CUDA twin (same inline
 * code), draws the same mask from the same key. The caller makes the key from whatever
 * must make masks differ: dropout_key(seed, step, layer) with the job's seed mixed with
 * the rank (data-parallel ranks see different samples), the step counter (a micro-batch
 * offset too, if a step is split) and the layer's index. i is the flat index into the
 * (B, ...) tensor. At evaluation dropout is the identity: the caller copies or aliases.
 * p in [0, 1]: p = 0 keeps everything (a copy), p = 1 drops everything (zeros). */
/* OPS_HD (__host__ __device__ under nvcc): scalar_fn.h */
/* splitmix64's output function: a bijection of 64-bit words that mixes every input bit
 * into every output bit. */
static inline OPS_HD uint64_t dropout_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static inline OPS_HD uint64_t dropout_key(uint64_t seed, uint64_t step, uint32_t layer)
{
    return dropout_mix(dropout_mix(dropout_mix(seed + 0x9E3779B97F4A7C15ULL) ^ step) + layer);
}
/* Drop threshold of probability p on the 24-bit draw: round(p * 2^24), clamped. */
static inline uint32_t dropout_threshold(float p)
{
    if (!(p > 0.0f)) return 0;
    if (p >= 1.0f) return 1u << 24;
    return (uint32_t)((double)p * 16777216.0 + 0.5);
}
/* Whether element i is kept: splitmix64's i-th output of the stream keyed by key, top 24
 * bits, compared as integers (so host and device agree exactly). */
static inline OPS_HD int dropout_keep(uint64_t key, uint64_t i, uint32_t threshold)
{
    return (uint32_t)(dropout_mix(key + (i + 1) * 0x9E3779B97F4A7C15ULL) >> 40) >= threshold;
}
/* out = keep ? inp * 1/(1-p) : 0; out may be inp. */
void dropout_forward(size_t n, float p, uint64_t key, const float *inp, float *out);
/* dinp += keep ? dout * 1/(1-p) : 0, with the forward's key. */
void dropout_backward(size_t n, float p, uint64_t key, const float *dout, float *dinp /* += */);
/* Stochastic depth (torchvision.ops.StochasticDepth, mode "row"): dropout with one draw per
 * sample instead of per element: the per consecutive elements of sample b are kept (and
 * scaled by 1/(1-p)) when dropout_keep(key, b, threshold) holds, so a residual branch is
 * dropped for whole samples. n is B * per; out may be inp. */
void stochastic_depth_forward(size_t n, size_t per, float p, uint64_t key, const float *inp, float *out);
void stochastic_depth_backward(size_t n, size_t per, float p, uint64_t key, const float *dout, float *dinp /* += */);
/* The two backwards with dinp = instead of +=: bit for bit what they give into a zeroed
 * dinp (the term + 0.0f), without reading it (model.c's grad_setter). */
void dropout_backward_set(size_t n, float p, uint64_t key, const float *dout, float *dinp);
void stochastic_depth_backward_set(size_t n, size_t per, float p, uint64_t key, const float *dout, float *dinp);

/* ---- fully connected ------------------------------------------------------------ */
void fc_forward(int B, int IN, int OUT, const float *inp, /* (B, IN) */
                const float *weight,                      /* (OUT, IN) */
                const float *bias,                        /* (OUT) or NULL */
                float *out);                              /* (B, OUT) */
void fc_backward(int B, int IN, int OUT, const float *inp, const float *weight, const float *dout,
                 float *dinp,    /* (B, IN) +=, or NULL */
                 float *dweight, /* (OUT, IN) = */
                 float *dbias);  /* (OUT) =, or NULL */

/* ONNX Gemm with the activation as A (no transA: a (B, IN) tensor from Flatten, the only
 * A a CNN graph feeds it) and the weight as B:
 *   out = alpha * inp x W' + beta * bias,   W' = W^T for the (OUT, IN) layout (Gemm
 *   transB = 1, PyTorch's Linear), W' = W for the (IN, OUT) layout (Gemm transB = 0, or
 *   MatMul followed by Add). bias (ONNX's C, broadcast over rows) may be NULL.
 * fc_forward / fc_backward are the (OUT, IN), alpha = beta = 1 case and give the same
 * bits as gemm with that descriptor. */
typedef enum { GEMM_W_OUT_IN = 0, GEMM_W_IN_OUT = 1 } gemm_layout_t;
typedef struct {
    int IN, OUT;
    gemm_layout_t layout;
    float alpha, beta;
} gemm_desc_t;
void gemm_forward(const gemm_desc_t *d, int B, const float *inp, /* (B, IN) */
                  const float *weight,                           /* (OUT, IN) or (IN, OUT) */
                  const float *bias,                             /* (OUT) or NULL */
                  float *out);                                   /* (B, OUT) */
/* dweight = alpha * (the layout's) dout^T x inp, dbias = beta * column sums of dout,
 * dinp += alpha * dout x W'^T. */
void gemm_backward(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                   float *dinp,    /* (B, IN) +=, or NULL */
                   float *dweight, /* like weight, = */
                   float *dbias);  /* (OUT) =, or NULL */
/* The same with dinp = instead of +=: bit for bit what gemm_backward gives into a zeroed
 * dinp, without reading it (an input gradient with no other contribution: model.c's
 * grad_setter). */
void gemm_backward_set(const gemm_desc_t *d, int B, const float *inp, const float *weight, const float *dout,
                       float *dinp, float *dweight, float *dbias);
/* gemm_forward and gemm_backward (set 0) or gemm_backward_set (1) on an input stored in
 * bf16 (kernels/cpu/gemm_bf16_act.h), layout GEMM_W_OUT_IN: the products at bf16 whatever
 * matmul.h's precision, the bits of gemm_forward and gemm_backward(_set) at MM_BF16 on the
 * input's values. */
void gemm_forward_a16(const gemm_desc_t *d, int B, const uint16_t *inp, const float *weight, const float *bias,
                      float *out);
/* gemm_forward at bf16 products (inp, or inp16 stored in bf16 where inp is NULL, as
 * gemm_forward_a16's) with its output rounded to bf16 as gemm_bf16_act.h's bf16_act_store
 * rounds it: stored in out16 (bf16) where not NULL, else in out as float32 values. The same
 * rounded values either way: the rows are computed in blocks into float32 scratch, then
 * rounded (an output that only a layer reading it rounded takes). OUT at most
 * GEMM_ROUNDED_MAX_OUT (a row at a time fits the stack where the scratch cannot be had);
 * nothing is written for a wider one. */
#define GEMM_ROUNDED_MAX_OUT 8192
void gemm_forward_rounded(const gemm_desc_t *d, int B, const float *inp, const uint16_t *inp16, const float *weight,
                          const float *bias, float *out, uint16_t *out16);
void gemm_backward_a16(const gemm_desc_t *d, int B, const uint16_t *inp, const float *weight, const float *dout,
                       float *dinp, float *dweight, float *dbias, int set);

/* ---- softmax cross-entropy (fused, numerically stable) -------------------------- */
/* Returns the mean loss over the batch with label smoothing `smoothing` (eps, in [0, 1);
 * PyTorch's: (1 - eps) * nll + eps * the mean over classes of -log p; 0 = plain
 * cross-entropy); probs receives the softmax. Labels must be in [0, N): the data loader
 * guarantees it. */
float softmax_xent_forward(int B, int N, const float *logits /* (B, N) */, const int32_t *labels /* (B) */,
                           float smoothing, float *probs /* (B, N) */);
/* dlogits = scale * (probs - ((1 - eps) * onehot(labels) + eps / N)) / B, written (=).
 * scale is 1 for a plain mean loss; the caller may weight the batch differently. */
void softmax_xent_backward(int B, int N, const float *probs, const int32_t *labels, float smoothing, float scale,
                           float *dlogits);
/* Counts argmax(logits) == label. */
int count_correct(int B, int N, const float *logits, const int32_t *labels);
/* The product of two activations over batch dimensions (ONNX MatMul of two activations:
 * attention's Q K^T and A V): a (G, M, K) times b (G, K, N) into out (G, M, N). The
 * backward adds dout b^T to da and a^T dout to db (either NULL; they may alias). */
void bmm_forward(int G, int M, int K, int N, const float *a, const float *b, float *out);
void bmm_backward(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da /* += */,
                  float *db /* += */);
/* The same with da written instead of added to where set_a, db where set_b (then da and
 * db do not alias): bit for bit what bmm_backward gives into zeros (model.c's grad_setter). */
void bmm_backward_set(int G, int M, int K, int N, const float *a, const float *b, const float *dout, float *da,
                      int set_a, float *db, int set_b);
/* Attention's two products under a causal mask (model.c's causal_bmm):
 * BMM_CAUSAL_OUT: the scores Q K^T (M == N), of which only the lower triangle (column <=
 *   row) is read: the rest of out may be left unwritten, and dout is zero there;
 * BMM_CAUSAL_LEFT: the weights' product A V, a lower triangular (zero after the diagonal,
 *   M == K): da's upper triangle may be left unwritten (its reader, the causal softmax,
 *   reads below the diagonal only).
 * What is computed has the bits of the whole product (the terms left out are zeros); a
 * shape that does not fit, or OpenBLAS's path, computes the whole product. */
typedef enum { BMM_CAUSAL_NONE, BMM_CAUSAL_OUT, BMM_CAUSAL_LEFT } bmm_causal_t;
void bmm_forward_causal(bmm_causal_t causal, int G, int M, int K, int N, const float *a, const float *b, float *out);
void bmm_backward_causal(bmm_causal_t causal, int G, int M, int K, int N, const float *a, const float *b,
                         const float *dout, float *da, int set_a, float *db, int set_b);

/* Causal self-attention (attention.c), bit for bit the layers it stands for: per sample b
 * and head h, S = Q K^T, P = causal softmax(scale * S) (causal_softmax_forward), Y = P V.
 * (S * pre_scale where an imported graph scales the scores by a Mul of its own). Element
 * (b, h, t, d) of q, k, v and y (each (T, D) per head) is at off + b * ss + h * hs
 * + t * rs + d of its buffer: read where a projection wrote them, y written where the
 * heads' merge would put it. p is (B, H, T, T), the softmax's output (zeros above the
 * diagonal); the backward reads it and writes (set) dq, dk and dv, laid out as q, k and v.
 * Only where attention_fits (AVX2 and FMA, and T and D within the small products' bound). */
typedef struct {
    size_t off, ss, hs, rs;
} attn_operand_t;
typedef struct {
    int H, T, D;
    float scale;
    /* 1, or the constant an imported graph multiplies the scores by before the softmax
     * (torch's (q @ k^T) * (1 / sqrt(D))): S * pre_scale rounded first, as that Mul does,
     * and the scores' gradient dP' * pre_scale (+ 0) after the softmax's */
    float pre_scale;
    attn_operand_t q, k, v, y;
} attn_desc_t;
int attention_fits(int T, int D);
void attention_causal_forward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v, float *p,
                              float *y);
/* The same at bf16 products (matmul.h's MM_BF16) with activations stored in bf16 (laid out
 * as their float32 twins, strides in elements): q, k or v read from s16's where that is not
 * NULL (their float32 pointers then unread), y written to s16's y where not NULL, as
 * gemm_bf16_act.h's bf16_act_store rounds it. The products round their operands to bf16
 * anyway (q, k, v as stored are those values; y's only readers are products), so the
 * same bits. The weights kept in s16's p where not NULL (p then unread and unwritten): per
 * (sample, head), in (b, h) order, the lower triangle's rows rounded to bf16 (bf16.h's
 * bf16_round), row i's i + 1 values, T (T + 1) / 2 a pair. The backward at bf16 products
 * reads the weights rounded whether kept so or in p (attention.c): the same bits. With
 * every pointer of s16 NULL, at either precision: the functions above. */
typedef struct {
    const uint16_t *q, *k, *v;
    uint16_t *y;
    uint16_t *p;
} attn_bf16_t;
void attention_causal_forward_bf16(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                                   const attn_bf16_t *s16, float *p, float *y);
void attention_causal_backward_bf16(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                                    const attn_bf16_t *s16, const float *p, const float *dy, float *dq, float *dk,
                                    float *dv);
void attention_causal_backward(const attn_desc_t *a, int B, const float *q, const float *k, const float *v,
                               const float *p, const float *dy, float *dq, float *dk, float *dv);

/* Swin's relative position bias (gather.c): out[j] = table[map[j]] for j < n, map holding
 * float-coded indices (exact below 2^24); one outside [0, tcount) reads 0. The backward
 * writes dtable (tcount) whole: 0, then dout[j] added at map[j] in the order of j (the CUDA
 * twin sums in the same order, without atomics). */
void gather_param_forward(size_t n, size_t tcount, const float *map, const float *table, float *out);
void gather_param_backward(size_t n, size_t tcount, const float *map, const float *dout, float *dtable);
/* Language models (seq.c). An embedding: rows token ids (float-coded, exact below 2^24)
 * each read row id of table (V, E) into out (rows, E); an id outside [0, V) reads zeros
 * (the data loader refuses such ids before training). The backward scatter-adds dout into
 * dtable (V, E) in the order of the rows, after zeroing it unless add (a table that a
 * later layer's backward wrote first: tied input and output embeddings). */
void embed_forward(size_t rows, int V, int E, const float *ids, const float *table, float *out);
void embed_backward(size_t rows, int V, int E, const float *ids, const float *dout, float *dtable, int add);
/* Causal softmax of mats (T, T) score matrices: row i is softmax(scale * x[i, 0..i]), the
 * positions after i are 0 and never read or computed (GPT's masked attention). The backward
 * reads the output: dinp[i, j] = scale * y (dout - sum(dout * y)) for j <= i, added (set 0)
 * or written with the masked half 0 (set 1). */
void causal_softmax_forward(size_t mats, int T, float scale, const float *inp, float *out);
/* The same on the widest path the CPU has up to lanes: 16 (explicit AVX-512, what
 * causal_softmax_forward runs where the CPU has it), 8 (explicit AVX2) or 0 (gcc's
 * vectorisation of eight lanes): the same bits on each (test_gpt holds them equal). */
void causal_softmax_forward_width(int lanes, size_t mats, int T, float scale, const float *inp, float *out);
/* Rows r0..r1 (0 <= r0 <= r1 <= T) of one (T, T) matrix (inp and out at its first row), with
 * the bits causal_softmax_forward gives those rows: generation's new positions. */
void causal_softmax_rows(int T, int r0, int r1, float scale, const float *inp, float *out);
void causal_softmax_backward(size_t mats, int T, float scale, const float *out, const float *dout, float *dinp, int set);
/* Layer normalisation (ONNX LayerNormalization, torch's nn.LayerNorm): each of rows rows of D
 * elements normalised by its mean and biased variance, times w, plus b (both (D)). The
 * backward recomputes the statistics from inp, adds the input's gradient (dinp may be
 * NULL) and writes dw and db (=). */
void layernorm_forward(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out);
void layernorm_backward(int rows, int D, float eps, const float *inp, const float *w, const float *dout,
                        float *dinp /* += */, float *dw /* = */, float *db /* = */);
/* The same writing dinp instead of adding (model.c's grad_setter): the bits of adding into
 * zeros. */
void layernorm_backward_set(int rows, int D, float eps, const float *inp, const float *w, const float *dout,
                            float *dinp /* = */, float *dw /* = */, float *db /* = */);
/* The two with each row's statistics kept: the forward writes stats[2 r] = the mean of row r
 * and stats[2 r + 1] = 1 / sqrt(var + eps) as the backward computes them, and the backward
 * reads them instead (set: layernorm_backward_set's dinp). The same bits as without. */
void layernorm_forward_saving(int rows, int D, float eps, const float *inp, const float *w, const float *b, float *out,
                              double *stats);
/* The same with out stored in bf16 (gemm_bf16_act.h's bf16_act_store rounding of the float
 * layernorm_forward_saving writes), for a model whose only readers of it are products at
 * bf16 (model/plan.h's act_bf16); the same statistics. */
void layernorm_forward_saving_bf16(int rows, int D, float eps, const float *inp, const float *w, const float *b,
                                   uint16_t *out, double *stats);
void layernorm_backward_saved(int rows, int D, float eps, const float *inp, const float *w, const double *stats,
                              const float *dout, float *dinp, int set, float *dw, float *db);
/* Softmax (take_log 0) or LogSoftmax (take_log 1) along one axis of n elements: inp and out are
 * (rows, n, inner), each of the rows * inner lines along the middle axis normalised alone
 * (shifted by its maximum, so exp never overflows). The backward reads the OUTPUT: softmax
 * dinp += y * (dout - sum(dout * y)), log-softmax dinp += dout - exp(y) * sum(dout), the
 * sums along the line. */
void softmax_axis_forward(int take_log, int rows, int n, int inner, const float *inp, float *out);
void softmax_axis_backward(int take_log, int rows, int n, int inner, const float *out, const float *dout,
                           float *dinp /* += */);
/* The same writing dinp instead of adding (model.c's grad_setter): the bits of adding into
 * zeros. */
void softmax_axis_backward_set(int take_log, int rows, int n, int inner, const float *out, const float *dout,
                               float *dinp /* = */);

/* ---- batch norm (per channel over B, H, W) -------------------------------------- */
#define BN_EPS 1e-5f
/* Training mode: normalises with the batch statistics, saves mean and inverse std for
 * the backward pass, and updates the running statistics the way PyTorch does
 * (running = (1 - momentum) * running + momentum * batch, unbiased batch variance).
 * momentum is PyTorch's (the weight of the batch, 0.1 by default). ONNX's
 * BatchNormalization momentum is the weight of the RUNNING value (0.9 for PyTorch's 0.1):
 * pass 1 - it. */
void batchnorm_forward_train(int B, int C, int HW, const float *inp,  /* (B, C, HW) */
                             const float *gamma, const float *beta,   /* (C) */
                             float *out,                              /* (B, C, HW) */
                             float *save_mean, float *save_invstd,    /* (C) */
                             float *running_mean, float *running_var, /* (C), updated */
                             float momentum);
void batchnorm_forward_eval(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                            const float *running_mean, const float *running_var, float *out);
/* The same with another epsilon (ONNX's epsilon attribute, PyTorch's eps); eps = BN_EPS
 * gives the bits of the functions above. The backward needs no epsilon: it reads the
 * saved inverse std. */
void batchnorm_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                 float *out, float *save_mean, float *save_invstd, float *running_mean,
                                 float *running_var, float momentum, float eps);
void batchnorm_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var, float *out, float eps);
void batchnorm_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                        const float *save_invstd, const float *dout, float *dinp, /* += */
                        float *dgamma, float *dbeta);                             /* = */
/* Batch norm followed by ReLU, fused: one pass over memory where the pair makes two
 * (forward) or three (backward, with the zeroing of the batch norm's output gradient).
 * out = relu(batchnorm(inp)), bit for bit what the batch norm kernel followed by
 * relu_forward gives; the batch norm's own output is not materialised. The backward takes
 * the ReLU's output and output gradient and gives bit for bit what relu_backward into a
 * zeroed buffer followed by batchnorm_backward gives. */
void batchnorm_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                      float *out, float *save_mean, float *save_invstd, float *running_mean,
                                      float *running_var, float momentum, float eps);
void batchnorm_relu_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                     const float *running_mean, const float *running_var, float *out, float eps);
void batchnorm_relu_backward(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *out, /* the ReLU's output */
                             const float *dout,                          /* the ReLU's output gradient */
                             float *dinp,                                /* += */
                             float *dgamma, float *dbeta);               /* = */
/* Batch norm, an identity residual add and ReLU, fused (the end of a ResNet basic block):
 * out = relu(batchnorm(inp) + res), res of inp's shape, bit for bit what the batch norm
 * kernel, residual_add_forward (res as the shortcut, stride 1, same channels) and
 * relu_forward give; neither the batch norm's output nor the sum is materialised. There is
 * no backward of its own: the add passes its output gradient to both inputs unchanged, so
 * batchnorm_relu_backward on the ReLU's output and gradient is the batch norm's, and
 * relu_backward from the same two is res's (model.c's fused_add). */
void batchnorm_add_relu_forward_train_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                          const float *res, float *out, float *save_mean, float *save_invstd,
                                          float *running_mean, float *running_var, float momentum, float eps);
void batchnorm_add_relu_forward_eval_eps(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                         const float *running_mean, const float *running_var, const float *res,
                                         float *out, float eps);
/* The same two with dinp = instead of +=: bit for bit what the += ones give into a zeroed
 * dinp, without the zeroing pass or the read of dinp. For an input gradient with no other
 * contribution (model.c's grad_setter). */
void batchnorm_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                            const float *save_invstd, const float *dout, float *dinp, float *dgamma, float *dbeta);
void batchnorm_relu_backward_set(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                                 const float *save_invstd, const float *out, const float *dout, float *dinp,
                                 float *dgamma, float *dbeta);

/* Synchronised batch norm (PyTorch's nn.SyncBatchNorm; a job's sync_batchnorm): the
 * processes that train one global batch, each on its own part of it, normalise with the
 * whole batch's statistics. Every per-channel sum a call takes over its own part is
 * handed, with its count of values, to reduce, which must replace the n doubles of v by
 * their sums over every process (an all-reduce); every process calls it the same number
 * of times with the same n, in the same layer order, a process with an empty part (B 0)
 * included. The forward reduces, per block of up to BN_SYNC_BLOCK channels, [sum of x -
 * s, sum of (x - s)^2, count] with s each channel's running mean, the same on every
 * process (they all update it from the same statistics); the backward [sum of g, sum of
 * g * (x - mean), count], from which it computes the input gradient, while dgamma and
 * dbeta stay the process's own part's (the caller's all-reduce of the parameter gradients
 * adds them up, as DDP does with SyncBatchNorm's). The running statistics move by the
 * whole batch's mean and unbiased variance. reduce is called from the calling thread. */
#define BN_SYNC_BLOCK 1024
typedef struct {
    void (*reduce)(double *v, int n, void *ctx);
    void *ctx;
} bn_sync_t;
/* The training forward with the statistics of every process's part: res NULL or the
 * fused residual add's other input (then relu must be 1); relu: the fused ReLU, as the
 * batchnorm_*relu* functions above. */
void batchnorm_forward_train_sync(int B, int C, int HW, const float *inp, const float *gamma, const float *beta,
                                  const float *res, int relu, float *out, float *save_mean, float *save_invstd,
                                  float *running_mean, float *running_var, float momentum, float eps,
                                  const bn_sync_t *sync);
/* Its backward: out NULL, or the fused ReLU's output (as batchnorm_relu_backward); set:
 * dinp = instead of += (the _set functions). */
void batchnorm_backward_sync(int B, int C, int HW, const float *inp, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *out, const float *dout, float *dinp, float *dgamma,
                             float *dbeta, int set, const bn_sync_t *sync);

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
/* torch.optim.AdamW on the gradient grad_scale * g, step `step` (1 on the first update:
 * the bias corrections 1 - beta^step): w *= 1 - lr*wd; m = b1*m + (1-b1)*g;
 * v = b2*v + (1-b2)*g*g; w -= lr/(1 - b1^t) * m / (sqrt(v)/sqrt(1 - b2^t) + eps).
 * m and v are the first and second moments (zero before step 1). The scalars are double,
 * as torch's are (Python floats), and rounded to float where torch rounds them. */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
} adamw_hparams_t;
void adamw_update(size_t n, float *w, const float *g, float *m, float *v, const adamw_hparams_t *h, long step,
                  float grad_scale);
/* One optimizer step as the worker applies it (worker_apply_gradient), on the host or on
 * a device (cuda_model_optimize): sgd_update's rule or adamw_update's on grad_scale * g,
 * clipped to clip_norm (<= 0: off) over the whole gradient, the tensors of a no-decay run
 * without weight decay when groups (model.h's model_decay_run). */
typedef struct {
    int adamw, groups;
    adamw_hparams_t h; /* lr and weight_decay for both rules; betas and eps adamw's */
    float momentum;    /* sgd */
    int nesterov;      /* sgd */
    long step;         /* adamw: t, from 1 */
    float grad_scale, clip_norm;
} optim_step_t;
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
