/* model/onnx/nodes.c - see nodes.h.
 *
 * The ModelProto is decoded by protobuf-c (code generated at build time from python3-onnx's
 * onnx.proto, Makefile). The graph's nodes are visited once, in file order (ONNX requires
 * topological order), and each node becomes zero or more layers through model.h's builder:
 *   Conv -> LAYER_CONV (any stride, pads incl. auto_pad, dilation, groups; of a volume:
 *     the depth taps' planes stacked into the channels, conv_volume);
 *   MaxPool / AveragePool -> LAYER_MAXPOOL / LAYER_AVGPOOL (ceil_mode, pads, dilations,
 *     count_include_pad; of a volume: two of them and LAYER_RESHAPEs, pool_volume); a zero
 *     Pad in front of an AveragePool (torch's export of
 *     AvgPool2d(padding=p, count_include_pad=True)) merges into it; a zero Pad of channels
 *     read by an Add is LAYER_ADD's option-A shortcut (pacer's export of resnet20); any
 *     other Pad of mode constant -> LAYER_CONCATs of its value, of modes reflect and edge
 *     -> LAYER_CONCATs of LAYER_SLICEs of the input (pad_layers);
 *   GlobalAveragePool and ReduceMean over an image's plane -> LAYER_GAP; GlobalAveragePool of a
 *     sequence (N, C, L) and GlobalMaxPool -> the pool of one window over the whole plane; other ReduceMean
 *     and ReduceSum of non-batch axes -> LAYER_REDUCE_MEAN, LAYER_REDUCE_SUM; Relu, LeakyRelu, Sigmoid, Tanh, Clip (bounds as
 *     attributes or constant inputs), HardSigmoid, HardSwish -> their layers; Mul of two
 *     activations (equal shapes, or (C, 1, 1) times (C, H, W)) -> LAYER_MUL; Add of
 *     two activations -> LAYER_ADD; Add, Sub, Mul, Div of other shapes, or with a constant
 *     operand, broadcast (LAYER_BADD, LAYER_SUB, LAYER_BMUL, LAYER_DIV), the constant a
 *     LAYER_CONST (an initializer: a parameter; a Constant node: a buffer); Exp, Neg,
 *     Sqrt, Reciprocal, Abs, Pow (constant exponent) -> their unary layers; the model
 *     input may be a batch of any rank up to 1 + MODEL_MAX_RANK (Conv and the pools: images
 *     only); Reshape (other than to (batch, -1)), Squeeze, Unsqueeze -> LAYER_RESHAPE,
 *     Transpose (the batch axis first) -> LAYER_TRANSPOSE, Slice and Split of non-batch
 *     axes -> LAYER_SLICE; Cast and integer Add, Sub, Mul, Div of shape vectors are folded
 *     like Shape's (below); Concat of activations (axis 1) -> a chain of
 *     LAYER_CONCAT; Dropout -> LAYER_DROPOUT (the mask output unused); pacer's own
 *     ai.pacer:StochasticDepth (p, mode "row") -> LAYER_STOCHASTIC_DEPTH; either with p 0
 *     is the identity (no layer);
 *   the transformers': Softmax, LogSoftmax (one non-batch axis) -> LAYER_SOFTMAX, LAYER_LOG_SOFTMAX;
 *     Erf -> LAYER_ERF; MatMul of two activations -> LAYER_BMM; LayerNormalization and
 *     torch 1.13's nn.LayerNorm nodes (match_layernorm) -> LAYER_LAYERNORM; torch 1.13's
 *     nn.GELU nodes (match_gelu) -> LAYER_GELU; Gather of an activation by constant
 *     indices -> a LAYER_SLICE each, LAYER_CONCATs joining them (and LAYER_RESHAPE for
 *     indices of rank other than 1);
 *   Swin's: nodes whose inputs are all constants are folded into N-D tensors (fold_array:
 *     the shifted-window mask, a frozen LAYER_CONST where an activation reads it); a
 *     parameter gathered by constant indices and moved -> LAYER_GATHER_PARAM (the relative
 *     position bias); a zero Pad of any rank -> no layer; a Reshape of a plain value to
 *     (N * k, ...) keeps k as the sample's axis 0 (value_t's lead) and a Transpose that
 *     moves a lead value's batch axis is left to the Gathers on axis 0 that read it
 *     (gather_deferred; view_t's comment says when lead applies and when a view does);
 *   the vision transformers': Expand to the batch -> LAYER_EXPAND (of a LAYER_CONST: the class token);
 *     Concat of a parameter of one sample's shape with activations -> its LAYER_EXPAND
 *     concatenated; MatMul by a Transpose of a weight (torch's Linear, Swin's too) ->
 *     LAYER_LINEAR (OUT, IN); a Transpose that moves the batch axis or a Reshape that
 *     merges it -> no layer, a view (view_t: nn.MultiheadAttention's), read in place by the
 *     nodes view_node lists (Swin's qkv[0] of one window: view_gather);
 *   BatchNormalization (any epsilon and momentum; inference form, or the training
 *     form whose extra outputs are unused) -> LAYER_BN;
 *   Gemm (transB 0 or 1, alpha, beta, C optional) and MatMul with an initializer (plus an
 *     Add of a bias right after it) -> LAYER_FC with its gemm_desc_t; MatMul of an input of
 *     rank > 2 by an initializer over its last axis -> LAYER_LINEAR;
 *   Flatten (axis 1), Reshape to (batch, -1) and Identity -> no layer (the value is an
 *     alias: LAYER_FC reads its input flat anyway); Constant -> a value; Shape, Gather,
 *     Unsqueeze and Concat on small int vectors -> values (the shape x.view(x.size(0), -1)
 *     computes when the batch is a dynamic axis).
 * A value is what a node input names: the graph input, a layer's output, an initializer or
 * a constant. Everything else is refused with the node's name and operator, and so is any
 * attribute not listed for its operator.
 */
#include "nodes.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmsg.h"
#include "onnx_import.h"
#include "onnx.pb-c.h"
#include "op_table.h"
#include "sha256.h"
#include "import_internal.h"
#include "fold.h"
#include "view.h"
#include "lm.h"
#include "einsum.h"

/* A list of exactly count ints (default dflt when absent); 0, or -1 with the reason. */
static int attr_ints(imp_t *im, const Onnx__NodeProto *n, const char *name, int count, int dflt, int *out)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    for (int i = 0; i < count; i++) out[i] = dflt;
    if (!a) return 0;
    if ((int)a->n_ints != count)
        return imp_fail(im, "node '%s' (%s): attribute %s has %zu values, want %d (one or two per spatial axis)",
                        imp_node_name(n), n->op_type, name, a->n_ints, count);
    for (int i = 0; i < count; i++) {
        if (a->ints[i] < 0 || a->ints[i] > DIM_MAX)
            return imp_fail(im, "node '%s' (%s): attribute %s[%d] = %lld is out of range", imp_node_name(n), n->op_type,
                            name, i, (long long)a->ints[i]);
        out[i] = (int)a->ints[i];
    }
    return 0;
}

/* "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER": 0..3, or -1. */
static int auto_pad(const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = imp_attr(n, "auto_pad");
    if (!a || !a->has_s) return 0;
    static const char *const modes[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
    for (int i = 0; i < 4; i++)
        if (a->s.len == strlen(modes[i]) && memcmp(a->s.data, modes[i], a->s.len) == 0) return i;
    return -1;
}

/* Pads of one dimension for auto_pad mode (ONNX's rule): SAME gives ceil(in / stride)
 * outputs. Kernel sizes, strides and dilations are each up to DIM_MAX, so the padding is
 * computed in 64 bits and refused (-1) beyond DIM_MAX on a side, like a pads attribute. */
static int same_pads(int mode, int in, int k, int s, int d, int *begin, int *end)
{
    *begin = *end = 0;
    if (mode == 1) return 0;
    const int64_t out = ((int64_t)in + s - 1) / s;
    int64_t total = (out - 1) * s + ((int64_t)k - 1) * d + 1 - in; /* each term below 2^49 */
    if (total < 0) total = 0;
    if (total > 2 * DIM_MAX) return -1;
    *begin = (int)(mode == 2 ? total / 2 : total - total / 2);
    *end = (int)(total - *begin);
    return 0;
}

/* auto_pad's pads of node n on an H x W input (pd: top, left, bottom, right); 0, or -1
 * with the reason. */
static int auto_pads(imp_t *im, const Onnx__NodeProto *n, int mode, int H, int W, const int *ks, const int *st,
                     const int *dl, int *pd)
{
    if (same_pads(mode, H, ks[0], st[0] ? st[0] : 1, dl[0] ? dl[0] : 1, &pd[0], &pd[2]) == 0 &&
        same_pads(mode, W, ks[1], st[1] ? st[1] : 1, dl[1] ? dl[1] : 1, &pd[1], &pd[3]) == 0)
        return 0;
    return imp_fail(im,
                    "node '%s' (%s): auto_pad's padding of a %dx%d kernel (strides %d, %d, dilations %d, %d) is too "
                    "large (more than %lld on a side)",
                    imp_node_name(n), n->op_type, ks[0], ks[1], st[0], st[1], dl[0], dl[1], (long long)DIM_MAX);
}

/* Whether input i of n is a constant operand: a tensor or a folded array. */
static int const_input(imp_t *im, const Onnx__NodeProto *n, size_t i)
{
    const value_t *v = i < n->n_input && n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
    return v && (v->kind == V_TENSOR || v->kind == V_ARRAY);
}

/* Defines the node's first output as layer li (flat as given); refuses further outputs that
 * are named (BatchNormalization's training outputs and MaxPool's Indices are not values
 * any later node may read, so they are simply not defined). */
static int define_output(imp_t *im, const Onnx__NodeProto *n, int li, int flat)
{
    if (n->n_output < 1 || !n->output[0] || !n->output[0][0])
        return imp_fail(im, "node '%s' (%s): no output", imp_node_name(n), n->op_type);
    int lead = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        lead |= x && x->kind == V_LAYER && x->lead;
    }
    value_t *v = imp_add_value(im, n->output[0], V_LAYER);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = li;
    v->flat = flat;
    v->lead = lead && !flat; /* the elementwise and axis-keeping readers' (lead_reader) */
    return 0;
}

/* The spatial axes of Conv's and the pools' input x: 2 for images (N, C, H, W), 1 for
 * sequences (N, C, L), which run as images of width 1 (the layer keeps their rank);
 * another rank is refused (0), naming volumes (N, C, D, H, W) too where the caller took
 * them before (Conv, MaxPool, AveragePool: conv_volume, pool_volume). */
static int spatial_axes(imp_t *im, const model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, int volumes)
{
    model_shape_t s;
    char t[96];
    model_build_shape_nd(b, x->layer, &s);
    if (!x->flat && (s.rank == 3 || s.rank == 2)) return s.rank - 1;
    imp_fail(im, "node '%s' (%s): input '%s' is %s%s: %s takes images (N, C, H, W)%s sequences (N, C, L)%s only",
             imp_node_name(n), n->op_type, n->input[0], imp_batch_text(&s, t, sizeof t), x->flat ? " flattened" : "",
             n->op_type, volumes ? "," : " and", volumes ? " and volumes (N, C, D, H, W)" : "");
    return 0;
}

/* kernel_shape, strides, dilations and pads for sp spatial axes as the 2-D ones (top,
 * left, bottom, right): a sequence's are the height's, its width 1 and unpadded. */
static int window_attrs(imp_t *im, const Onnx__NodeProto *n, int sp, int *ks, int *st, int *dl, int *pd)
{
    if (sp == 2)
        return attr_ints(im, n, "kernel_shape", 2, -1, ks) || attr_ints(im, n, "strides", 2, 1, st) ||
                       attr_ints(im, n, "dilations", 2, 1, dl) || attr_ints(im, n, "pads", 4, 0, pd)
                   ? -1
                   : 0;
    int p2[2];
    if (attr_ints(im, n, "kernel_shape", 1, -1, ks) || attr_ints(im, n, "strides", 1, 1, st) ||
        attr_ints(im, n, "dilations", 1, 1, dl) || attr_ints(im, n, "pads", 2, 0, p2))
        return -1;
    ks[1] = st[1] = dl[1] = 1;
    pd[0] = p2[0], pd[2] = p2[1], pd[1] = pd[3] = 0;
    return 0;
}

/* A frozen constant of one element, value f, named "<of>/<what>" (a name no node gives: a
 * value of that name in the graph is refused), whose buffer import_model fills. */
static int scalar_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const char *of, const char *what,
                           float f, int *li)
{
    char name[MODEL_TENSOR_NAME_MAX];
    if (snprintf(name, sizeof name, "%s/%s", of, what) >= (int)sizeof name || imp_find_value(im, name))
        return imp_fail(im, "node '%s' (%s): no room for a constant named '%.64s/%s'", imp_node_name(n), n->op_type, of,
                        what);
    char *own = strdup(name);
    double *arr = malloc(sizeof *arr);
    value_t *v = own && arr ? imp_add_value(im, own, V_ARRAY) : NULL;
    if (!v) return free(own), free(arr), imp_fail(im, "out of memory");
    v->owned_name = own;
    v->arr = arr;
    arr[0] = f;
    v->acount = 1;
    v->afloat = 1;
    *li = model_build_const(b, &(model_shape_t){.rank = 0}, own, 1);
    v->const_layer = *li + 1;
    return 0;
}

/* li with zeros (zero: a scalar constant 0, expanded) before and after it along sample
 * axis ax of its shape s, which grows by them. */
static int pad_axis(model_builder_t *b, int li, model_shape_t *s, int ax, int before, int after, int zero)
{
    model_shape_t z = *s;
    if (before > 0) {
        z.dims[ax] = before;
        li = model_build_concat_axis(b, model_build_expand(b, zero, &z), li, ax);
    }
    if (after > 0) {
        z.dims[ax] = after;
        li = model_build_concat_axis(b, li, model_build_expand(b, zero, &z), ax);
    }
    s->dims[ax] += before + after;
    return li;
}

/* A convolution of a volume (C, D, H, W) as pacer's 2-D one, the depth gathered into the
 * channels: the input zero-padded along D, and for each tap kd of the kernel's depth the
 * planes kd * dD, kd * dD + sD, ... (OD of them), stacked as (C, KD, OD, H, W), so that
 * the channels (C * KD, c first) are in the order of the weight's (OC, C / group, KD, KH,
 * KW), which the 2-D convolution reads as (OC, C * KD / group, KH, KW) unchanged. The OD
 * planes run as one image (C * KD, OD * H2, W): each plane padded along H to H2 rows (its
 * pads, then up to a multiple of the stride, so every plane's outputs start on a row of
 * their own), the last by the kernel's extent less 1 more. Rows whose window crosses
 * into the next plane are cut off after: (OC, OD, H2 / sH, OW) sliced to OH rows. Exact:
 * each output sums the same products, only in another order. */
static int conv_volume(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, const model_shape_t *s,
                       const Onnx__TensorProto *w, const Onnx__TensorProto *bias, int group)
{
    int ks[3], st[3], dl[3], pd[6], zero;
    if (attr_ints(im, n, "kernel_shape", 3, -1, ks) || attr_ints(im, n, "strides", 3, 1, st) ||
        attr_ints(im, n, "dilations", 3, 1, dl) || attr_ints(im, n, "pads", 6, 0, pd))
        return -1;
    const int OC = (int)w->dims[0], KD = (int)w->dims[2], KH = (int)w->dims[3], KW = (int)w->dims[4];
    if ((ks[0] != -1 && (ks[0] != KD || ks[1] != KH || ks[2] != KW)) || auto_pad(n) > 1 || auto_pad(n) < 0 ||
        st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1)
        return imp_fail(im,
                        "node '%s' (Conv): of a volume: kernel_shape the weight's, auto_pad NOTSET or VALID, strides "
                        "and dilations at least 1",
                        imp_node_name(n));
    model_shape_t v = *s;
    const int C = v.dims[0], H = v.dims[2], W = v.dims[3];
    const int64_t Dp = (int64_t)v.dims[1] + pd[0] + pd[3], ext_d = (int64_t)dl[0] * (KD - 1) + 1;
    const int64_t Hp = (int64_t)H + pd[1] + pd[4], ext_h = (int64_t)dl[1] * (KH - 1) + 1;
    if (Dp < ext_d || Hp < ext_h || Dp > DIM_MAX || Hp > DIM_MAX)
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%dx%d input", imp_node_name(n), C,
                        v.dims[1], H, W);
    const int OD = (int)((Dp - ext_d) / st[0] + 1), OH = (int)((Hp - ext_h) / st[1] + 1);
    const int H2 = (int)((Hp + st[1] - 1) / st[1] * st[1]);
    if (scalar_constant(im, b, n, n->output[0], "zero", 0.0f, &zero)) return -1;
    int li = pad_axis(b, in, &v, 1, pd[0], pd[3], zero), stack = -1;
    const model_shape_t tap = {.rank = 5, .dims = {C, 1, OD, H, W}};
    for (int kd = 0; kd < KD; kd++) {
        const int t = model_build_reshape(
            b, model_build_slice(b, li, 1, kd * dl[0], kd * dl[0] + (OD - 1) * st[0] + 1, st[0]), &tap);
        stack = kd ? model_build_concat_axis(b, stack, t, 1) : t;
    }
    v = (model_shape_t){.rank = 4, .dims = {C * KD, OD, H, W}};
    li = pad_axis(b, model_build_reshape(b, stack, &v), &v, 2, pd[1], pd[4] + H2 - (int)Hp, zero);
    v = (model_shape_t){.rank = 3, .dims = {C * KD, OD * H2, W}};
    li = pad_axis(b, model_build_reshape(b, li, &v), &v, 1, 0, (int)ext_h - 1, zero);
    const conv2d_desc_t g = {.OC = OC,
                             .KH = KH,
                             .KW = KW,
                             .sH = st[1],
                             .sW = st[2],
                             .pad_l = pd[2],
                             .pad_r = pd[5],
                             .dH = dl[1],
                             .dW = dl[2],
                             .groups = group};
    li = model_build_conv(b, li, &g, bias != NULL, n->input[1], bias ? n->input[2] : NULL);
    int c2, rows, OW;
    model_build_shape(b, li, &c2, &rows, &OW);
    li = model_build_reshape(b, li, &(model_shape_t){.rank = 4, .dims = {OC, OD, H2 / st[1], OW}});
    if (OH < H2 / st[1]) li = model_build_slice(b, li, 2, 0, OH, 1);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%dx%d input", imp_node_name(n), C,
                        s->dims[1], H, W);
    return define_output(im, n, li, 0);
}

static int do_conv(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_shape_t vs;
    model_build_shape_nd(b, x->layer, &vs);
    const int volume = vs.rank == 4 && !x->flat && x->kind == V_LAYER;
    if (!volume && !(sp = spatial_axes(im, b, n, x, 1))) return -1;
    if (volume) sp = 3;
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *bias = imp_input_tensor(im, n, 2);
    if (!w || w->n_dims != (size_t)sp + 2 || imp_tensor_count(w) <= 0)
        return imp_fail(im, "node '%s' (Conv): the weight must be a %d-D initializer (OC, C/group, %s)",
                        imp_node_name(n), sp + 2,
                        sp == 3   ? "KD, KH, KW"
                        : sp == 2 ? "KH, KW"
                                  : "K");
    if (n->n_input > 2 && n->input[2][0] && !bias)
        return imp_fail(im, "node '%s' (Conv): the bias must be an initializer", imp_node_name(n));
    if (n->n_input > 3) return imp_fail(im, "node '%s' (Conv): more than 3 inputs", imp_node_name(n));
    if (imp_weight_name_ok(im, n, 1) || (bias && imp_weight_name_ok(im, n, 2))) return -1;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    /* bounded before it becomes an int (a group of 2^32 + 1 is not a group of 1) */
    const int64_t group64 = imp_attr_int(n, "group", 1);
    const int group = group64 >= 1 && group64 <= DIM_MAX ? (int)group64 : 0;
    if (volume) {
        C = vs.dims[0];
        if (group < 1 || group > C || (int64_t)w->dims[1] * group != C || w->dims[0] % group != 0 || w->dims[0] < 1 ||
            (bias && (bias->n_dims != 1 || bias->dims[0] != w->dims[0])))
            return imp_fail(im, "node '%s' (Conv): the weight and bias do not fit %d input channels in %lld groups",
                            imp_node_name(n), C, (long long)group64);
        return conv_volume(im, b, n, x->layer, &vs, w, bias, group);
    }
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    const int KH = (int)w->dims[2], KW = sp == 2 ? (int)w->dims[3] : 1, OC = (int)w->dims[0];
    if ((ks[0] != -1 && ks[0] != KH) || (ks[1] != -1 && ks[1] != KW))
        return imp_fail(im, "node '%s' (Conv): kernel_shape %dx%d differs from the weight's %dx%d", imp_node_name(n),
                        ks[0], ks[1], KH, KW);
    if (group < 1 || group > C || (int64_t)w->dims[1] * group != C || OC % group != 0)
        return imp_fail(im, "node '%s' (Conv): weight (%d, %lld, %d, %d) with group %lld does not fit %d input channels",
                        imp_node_name(n), OC, (long long)w->dims[1], KH, KW, (long long)group64, C);
    if (bias && (bias->n_dims != 1 || bias->dims[0] != OC))
        return imp_fail(im, "node '%s' (Conv): the bias must have %d elements", imp_node_name(n), OC);
    const int ap = auto_pad(n);
    if (ap < 0) return imp_fail(im, "node '%s' (Conv): unknown auto_pad", imp_node_name(n));
    const int kw[2] = {KH, KW};
    if (ap > 0 && auto_pads(im, n, ap, H, W, kw, st, dl, pd)) return -1;
    if (x->kind == V_PADDED)
        for (int i = 0; i < 4; i++) pd[i] += x->pads[i];
    const conv2d_desc_t g = {.OC = OC,
                             .KH = KH,
                             .KW = KW,
                             .sH = st[0],
                             .sW = st[1],
                             .pad_t = pd[0],
                             .pad_l = pd[1],
                             .pad_b = pd[2],
                             .pad_r = pd[3],
                             .dH = dl[0],
                             .dW = dl[1],
                             .groups = group};
    int li = model_build_conv(b, x->layer, &g, bias != NULL, n->input[1], bias ? n->input[2] : NULL);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Conv): geometry gives no output on a %dx%dx%d input", imp_node_name(n), C, H, W);
    return define_output(im, n, li, 0);
}

/* A pool of a volume (N, C, D, H, W) as two of the 2-D pools, the window being a box: over
 * (H, W) of the (C * D, H, W) planes, then over D of (C, D, OH * OW) with a window (KD, 1),
 * reshaped back to (C, OD, OH, OW). The maximum of the maxima is the maximum, and the
 * average of averages is the average because the taps a window counts (inside the input,
 * or the pads too with count_include_pad) are a box too: their count is the product of
 * each axis's. The pads are given (auto_pad VALID or NOTSET). */
static int pool_volume(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, const model_shape_t *s,
                       layer_kind_t kind)
{
    int ks[3], st[3], dl[3], pd[6];
    if (attr_ints(im, n, "kernel_shape", 3, -1, ks) || attr_ints(im, n, "strides", 3, 1, st) ||
        attr_ints(im, n, "dilations", 3, 1, dl) || attr_ints(im, n, "pads", 6, 0, pd))
        return -1;
    if (ks[0] < 1 || ks[1] < 1 || ks[2] < 1)
        return imp_fail(im, "node '%s' (%s): kernel_shape is required", imp_node_name(n), n->op_type);
    if (auto_pad(n) > 1 || auto_pad(n) < 0)
        return imp_fail(im, "node '%s' (%s): auto_pad of a 3-D pool: only NOTSET and VALID are supported",
                        imp_node_name(n), n->op_type);
    const int C = s->dims[0], D = s->dims[1], H = s->dims[2], W = s->dims[3],
              ceil_mode = imp_attr_int(n, "ceil_mode", 0) != 0, cip = imp_attr_int(n, "count_include_pad", 0) != 0;
    const pool2d_desc_t plane = {.KH = ks[1],
                                 .KW = ks[2],
                                 .sH = st[1],
                                 .sW = st[2],
                                 .pad_t = pd[1],
                                 .pad_l = pd[2],
                                 .pad_b = pd[4],
                                 .pad_r = pd[5],
                                 .dH = dl[1],
                                 .dW = dl[2],
                                 .ceil_mode = ceil_mode,
                                 .count_include_pad = cip};
    const pool2d_desc_t depth = {.KH = ks[0],
                                 .KW = 1,
                                 .sH = st[0],
                                 .sW = 1,
                                 .pad_t = pd[0],
                                 .pad_b = pd[3],
                                 .dH = dl[0],
                                 .dW = 1,
                                 .ceil_mode = ceil_mode,
                                 .count_include_pad = cip};
    int li = model_build_reshape(b, in, &(model_shape_t){.rank = 3, .dims = {C * D, H, W}});
    li = model_build_pool(b, kind, li, &plane);
    int c2, OH, OW;
    model_build_shape(b, li, &c2, &OH, &OW);
    li = model_build_pool(b, kind, model_build_reshape(b, li, &(model_shape_t){.rank = 3, .dims = {C, D, OH * OW}}),
                          &depth);
    int c3, OD, one;
    model_build_shape(b, li, &c3, &OD, &one);
    li = model_build_reshape(b, li, &(model_shape_t){.rank = 4, .dims = {C, OD, OH, OW}});
    if (model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (%s): geometry gives no output (or a window of padding only) on a %dx%dx%dx%d input",
                        imp_node_name(n), n->op_type, C, D, H, W);
    return define_output(im, n, li, 0);
}

static int do_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    const int is_max = kind == LAYER_MAXPOOL;
    static const char *const kmax[] = {"kernel_shape", "strides",       "pads",     "dilations",
                                       "ceil_mode",    "storage_order", "auto_pad", NULL};
    static const char *const kavg[] = {"kernel_shape",      "strides",  "pads", "ceil_mode",
                                       "count_include_pad", "auto_pad", NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, is_max ? kmax : kavg) || imp_input_layer(im, n, 0, &x)) return -1;
    if (is_max && imp_attr_int(n, "storage_order", 0) != 0)
        return imp_fail(im, "node '%s' (MaxPool): storage_order 1 is not supported", imp_node_name(n));
    if (n->n_output > 1 && n->output[1] && n->output[1][0])
        return imp_fail(im, "node '%s' (MaxPool): the Indices output is not supported", imp_node_name(n));
    model_shape_t vs;
    model_build_shape_nd(b, x->layer, &vs);
    if (vs.rank == 4 && !x->flat && x->kind == V_LAYER) return pool_volume(im, b, n, x->layer, &vs, kind);
    if (!(sp = spatial_axes(im, b, n, x, 1))) return -1;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    int ks[2], st[2], dl[2], pd[4];
    if (window_attrs(im, n, sp, ks, st, dl, pd)) return -1;
    if (ks[0] < 1 || ks[1] < 1)
        return imp_fail(im, "node '%s' (%s): kernel_shape is required", imp_node_name(n), n->op_type);
    const int ap = auto_pad(n);
    if (ap < 0) return imp_fail(im, "node '%s' (%s): unknown auto_pad", imp_node_name(n), n->op_type);
    if (ap > 0 && auto_pads(im, n, ap, H, W, ks, st, dl, pd)) return -1;
    int cip = imp_attr_int(n, "count_include_pad", 0) != 0;
    if (x->kind == V_PADDED) {
        /* zero Pad + AveragePool: the zeros are elements the average counts, which is
         * count_include_pad over the pool's own pads (ops.h); the pool's pads must be 0 */
        if (pd[0] || pd[1] || pd[2] || pd[3] || ap > 0)
            return imp_fail(im, "node '%s' (AveragePool): padded twice (a Pad and its own pads)", imp_node_name(n));
        for (int i = 0; i < 4; i++) pd[i] = x->pads[i];
        cip = 1;
    }
    const pool2d_desc_t g = {.KH = ks[0],
                             .KW = ks[1],
                             .sH = st[0],
                             .sW = st[1],
                             .pad_t = pd[0],
                             .pad_l = pd[1],
                             .pad_b = pd[2],
                             .pad_r = pd[3],
                             .dH = dl[0],
                             .dW = dl[1],
                             .ceil_mode = imp_attr_int(n, "ceil_mode", 0) != 0,
                             .count_include_pad = cip};
    int li = model_build_pool(b, is_max ? LAYER_MAXPOOL : LAYER_AVGPOOL, x->layer, &g);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (%s): geometry gives no output (or a window of padding only) on a %dx%dx%d input",
                        imp_node_name(n), n->op_type, C, H, W);
    return define_output(im, n, li, 0);
}

/* Whether every reader of Pad n's output is a Conv, an AveragePool or an Add, which take
 * zero padding in their own geometry (and nothing else reads it, the graph's output neither). */
static int pad_fuses(const imp_t *im, const Onnx__NodeProto *n)
{
    const Onnx__NodeProto *r[8];
    const int k = imp_readers(im, n->output[0], r, 8);
    if (k < 1 || k > 8) return 0;
    for (int i = 0; i < k; i++)
        if (!r[i]->op_type || (strcmp(r[i]->op_type, "Conv") != 0 && strcmp(r[i]->op_type, "AveragePool") != 0 &&
                               strcmp(r[i]->op_type, "Add") != 0))
            return 0;
    return 1;
}

/* Pad's modes: the value's blocks, the input mirrored at its ends (not repeating the end:
 * PyTorch's ReflectionPad), the end repeated (ReplicationPad). */
enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

/* li padded along sample axis ax of its shape s (which grows) by mode reflect or edge:
 * its elements before .. 1 (reflect, a slice walking down) or its first expanded (edge)
 * before it, and likewise after it. */
static int pad_axis_copy(model_builder_t *b, int li, model_shape_t *s, int ax, int before, int after, int mode)
{
    const int dim = s->dims[ax];
    model_shape_t z = *s;
    int lo = li, hi = li;
    if (before > 0) {
        z.dims[ax] = before;
        lo = mode == PAD_REFLECT ? model_build_slice(b, li, ax, before, 0, -1)
                                 : model_build_expand(b, model_build_slice(b, li, ax, 0, 1, 1), &z);
    }
    if (after > 0) {
        z.dims[ax] = after;
        hi = mode == PAD_REFLECT ? model_build_slice(b, li, ax, dim - 2, dim - 2 - after, -1)
                                 : model_build_expand(b, model_build_slice(b, li, ax, dim - 1, dim, 1), &z);
    }
    if (before > 0) li = model_build_concat_axis(b, lo, li, ax);
    if (after > 0) li = model_build_concat_axis(b, li, hi, ax);
    s->dims[ax] += before + after;
    return li;
}

/* A Pad as layers: along each non-batch axis, the value's blocks before and after
 * (pad_axis), for a reader that takes no padding of its own, or the input's own elements
 * (pad_axis_copy: reflect needs pads below the axis's size, edge an axis not empty). */
static int pad_layers(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x, const int64_t *p,
                      int np, float value, int mode)
{
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    const int R = s.rank + 1;
    if (x->flat || np != 2 * R || p[0] != 0 || p[R] != 0)
        return imp_fail(im, "node '%s' (Pad): pads must be 2 x %d values, none of the batch axis", imp_node_name(n), R);
    int z = -1, li = x->layer;
    if (mode == PAD_CONSTANT && scalar_constant(im, b, n, n->output[0], "value", value, &z)) return -1;
    for (int a = 1; a < R; a++) {
        if (mode == PAD_CONSTANT) {
            li = pad_axis(b, li, &s, a - 1, (int)p[a], (int)p[R + a], z);
            continue;
        }
        const int dim = s.dims[a - 1], lim = mode == PAD_REFLECT ? dim - 1 : dim > 0 ? DIM_MAX : 0;
        if ((p[a] || p[R + a]) && (p[a] > lim || p[R + a] > lim))
            return imp_fail(im, "node '%s' (Pad): pads %lld, %lld of an axis of %d: %s", imp_node_name(n),
                            (long long)p[a], (long long)p[R + a], dim,
                            mode == PAD_REFLECT ? "reflect pads below the axis's size" : "edge pads a non-empty axis");
        li = pad_axis_copy(b, li, &s, a - 1, (int)p[a], (int)p[R + a], mode);
    }
    if (model_build_failed(b)) return imp_fail(im, "node '%s' (Pad): the padded shape is too large", imp_node_name(n));
    return define_output(im, n, li, x->flat);
}

/* Pad's mode attribute: PAD_CONSTANT (the default), PAD_REFLECT, PAD_EDGE, or -1. */
static int pad_mode(const Onnx__NodeProto *n)
{
    static const char *const modes[] = {"constant", "reflect", "edge"};
    const Onnx__AttributeProto *a = imp_attr(n, "mode");
    if (!a || !a->has_s) return PAD_CONSTANT;
    for (int i = 0; i < 3; i++)
        if (a->s.len == strlen(modes[i]) && memcmp(a->s.data, modes[i], a->s.len) == 0) return i;
    return -1;
}

/* Pad: the pads an input (opset 11 on) or an attribute (before), as the value. Zeros on
 * the two spatial dimensions, or on the channels alone, read by Conv, AveragePool or Add
 * (pad_fuses): no layer of its own, the reader pads (V_PADDED); any other padding of
 * non-batch axes (a value, mode reflect or edge): pad_layers. */
static int do_pad(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"mode", NULL}, *const known2[] = {"mode", "pads", "value", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 11 ? known2 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    const int mode = pad_mode(n);
    if (mode < 0)
        return imp_fail(im, "node '%s' (Pad): only modes 'constant', 'reflect' and 'edge' are supported",
                        imp_node_name(n));
    const Onnx__TensorProto *val = im->opset < 11 ? NULL : imp_input_tensor(im, n, 2);
    const Onnx__AttributeProto *pa = im->opset < 11 ? imp_attr(n, "pads") : NULL;
    int64_t p[2 * VIEW_AXES];
    int np = 0, sc = 0, zero = 1;
    float value = im->opset < 11 ? imp_attr_float(n, "value", 0.0f) : 0.0f;
    if (pa) {
        np = (int)pa->n_ints;
        for (int i = 0; i < np && i < 2 * VIEW_AXES; i++) p[i] = pa->ints[i];
    }
    /* pads folded from shapes (F.pad's of Swin's windows) read like a constant's */
    if (im->opset < 11 ? !pa || np > 2 * VIEW_AXES : imp_input_ints(im, n, 1, p, &np, &sc) != 0 || sc)
        return imp_fail(im, "node '%s' (Pad): pads must be a constant of at most %d int64 values", imp_node_name(n),
                        2 * VIEW_AXES);
    if (val && (imp_tensor_count(val) != 1 || imp_tensor_floats(im, val, &value, 1)))
        return imp_fail(im, "node '%s' (Pad): the value must be one float", imp_node_name(n));
    if (n->n_input > 2 && n->input[2][0] && !val && im->opset >= 11)
        return imp_fail(im, "node '%s' (Pad): the value must be a constant", imp_node_name(n));
    if (!isfinite(value)) return imp_fail(im, "node '%s' (Pad): the value must be finite", imp_node_name(n));
    for (int i = 0; i < np; i++) {
        zero &= p[i] == 0;
        if (p[i] < 0 || p[i] > DIM_MAX) return imp_fail(im, "node '%s' (Pad): negative or huge pads", imp_node_name(n));
    }
    if (zero && x->kind == V_LAYER) return define_output(im, n, x->layer, x->flat); /* no padding: the identity */
    if (x->kind == V_PADDED)
        return imp_fail(im, "node '%s' (Pad): two Pads in a row are not supported", imp_node_name(n));
    if (value != 0.0f || mode != PAD_CONSTANT || !pad_fuses(im, n)) return pad_layers(im, b, n, x, p, np, value, mode);
    if (np != 8) return imp_fail(im, "node '%s' (Pad): pads must be a constant of 8 int64 values", imp_node_name(n));
    /* (N, C, H, W): begins p[0..3], ends p[4..7]. Channels are padded only on their own,
     * for an Add to read (the option-A shortcut of a CIFAR ResNet, as pacer exports
     * resnet20: model.h's LAYER_ADD) */
    const int chan = p[1] || p[5];
    if (p[0] || p[4] || (chan && (p[2] || p[3] || p[6] || p[7])))
        return imp_fail(
            im, "node '%s' (Pad): padding of the batch dimension, or of channels and pixels at once, is not supported",
            imp_node_name(n));
    value_t *v = imp_add_value(im, n->output[0], V_PADDED);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = x->layer;
    v->pads[0] = (int)p[2], v->pads[1] = (int)p[3], v->pads[2] = (int)p[6], v->pads[3] = (int)p[7];
    v->cpads[0] = (int)p[1], v->cpads[1] = (int)p[5];
    return 0;
}

static int do_bn(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    /* opset 6's is_test: which statistics an inference reads, as training_mode says from
     * opset 14; pacer trains with the batch's and evaluates with the running ones either way */
    static const char *const known[] = {"epsilon", "momentum", "training_mode", "spatial", NULL};
    static const char *const known6[] = {"epsilon", "momentum", "spatial", "is_test", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 7 ? known6 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    if (imp_attr_int(n, "spatial", 1) != 1)
        return imp_fail(im, "node '%s' (BatchNormalization): spatial = 0 is not supported", imp_node_name(n));
    /* any epsilon and momentum; ONNX's momentum weighs the old running statistics, PyTorch's
     * (layer_t's) the batch's: 1 - it. The exporters' 0.9 is PyTorch's default 0.1 itself
     * (MODEL_BN_MOMENTUM, the same bits as the built-in networks'), not 1 - 0.9f. */
    const float eps = imp_attr_float(n, "epsilon", 1e-5f), mom = imp_attr_float(n, "momentum", 0.9f);
    if (!(eps > 0.0f) || !(eps < 1.0f))
        return imp_fail(im, "node '%s' (BatchNormalization): epsilon %g is out of range (0, 1)", imp_node_name(n), eps);
    if (!(mom >= 0.0f && mom <= 1.0f))
        return imp_fail(im, "node '%s' (BatchNormalization): momentum %g is out of range [0, 1]", imp_node_name(n), mom);
    const float torch_mom = fabsf(mom - (1.0f - MODEL_BN_MOMENTUM)) <= 1e-7f ? MODEL_BN_MOMENTUM
                                                                             : (float)(1.0 - (double)mom);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const char *names[4];
    for (int i = 0; i < 4; i++) {
        const Onnx__TensorProto *t = imp_input_tensor(im, n, (size_t)i + 1);
        if (!t || t->n_dims != 1 || t->dims[0] != C)
            return imp_fail(im, "node '%s' (BatchNormalization): input %d must be an initializer of %d values",
                            imp_node_name(n), i + 1, C);
        if (imp_weight_name_ok(im, n, (size_t)i + 1)) return -1;
        names[i] = n->input[i + 1];
    }
    int li = model_build_bn_momentum(b, x->layer, names, eps, torch_mom);
    return define_output(im, n, li, 0);
}

/* Gemm of a lead value (N * k, IN), x.view(B * T, C) before an nn.Linear: a LAYER_LINEAR
 * along the sample's last axis of (k, IN), the output a lead value again; alpha and beta 1,
 * C a vector of the outputs or none */
static int lead_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x)
{
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    int OUT, rc = 1;
    gemm_layout_t layout;
    const char *bias;
    if (s.rank != 2 || x->flat || (rc = imp_gemm_linear(im, n, s.dims[1], &OUT, &layout, &bias)) == 1)
        return imp_fail(im,
                        "node '%s' (Gemm): of a value whose batch axis holds several of the sample's elements: A (N * "
                        "k, IN), alpha and beta 1, B an initializer of IN inputs, C a vector of the outputs or none",
                        imp_node_name(n));
    if (rc) return -1;
    int li = model_build_linear_layout(b, x->layer, OUT, layout, n->input[1]);
    if (bias) li = model_build_fc_bias(b, li, bias);
    return define_output(im, n, li, 0);
}

static int do_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    /* opset 6's broadcast: 1 is the rule opset 7 made (C broadcast to (M, N)); with 0, C
     * must already be (M, N), which broadcasting leaves as it is, so both read as opset 7 */
    static const char *const known[] = {"alpha", "beta", "transA", "transB", NULL};
    static const char *const known6[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, im->opset < 7 ? known6 : known) || imp_input_layer(im, n, 0, &x)) return -1;
    const int64_t bcast = imp_attr_int(n, "broadcast", 1);
    if (bcast != 0 && bcast != 1) return imp_fail(im, "node '%s' (Gemm): broadcast must be 0 or 1", imp_node_name(n));
    if (imp_attr_int(n, "transA", 0) != 0)
        return imp_fail(im, "node '%s' (Gemm): transA = 1 is not supported (A is the activation)", imp_node_name(n));
    const int64_t tb = imp_attr_int(n, "transB", 0);
    if (tb != 0 && tb != 1) return imp_fail(im, "node '%s' (Gemm): transB must be 0 or 1", imp_node_name(n));
    const int transB = (int)tb;
    if (x->lead) return lead_gemm(im, b, n, x);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    if (!x->flat && (H != 1 || W != 1))
        return imp_fail(im, "node '%s' (Gemm): input is not 2-D (Flatten or Reshape it first)", imp_node_name(n));
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *c = imp_input_tensor(im, n, 2);
    const int64_t IN = (int64_t)C * H * W;
    /* B is (OUT, IN) with transB = 1 (PyTorch's Linear), (IN, OUT) with transB = 0 */
    if (!w || w->n_dims != 2 || w->dims[transB ? 1 : 0] != IN || w->dims[transB ? 0 : 1] < 1)
        return imp_fail(im, "node '%s' (Gemm): B must be an initializer %s", imp_node_name(n),
                        transB ? "(OUT, IN) for transB = 1" : "(IN, OUT) for transB = 0");
    const int64_t OUT = w->dims[transB ? 0 : 1];
    const gemm_desc_t g = {.layout = transB ? GEMM_W_OUT_IN : GEMM_W_IN_OUT,
                           .alpha = imp_attr_float(n, "alpha", 1.0f),
                           .beta = imp_attr_float(n, "beta", 1.0f)};
    if (!isfinite(g.alpha) || !isfinite(g.beta))
        return imp_fail(im, "node '%s' (Gemm): alpha and beta must be finite", imp_node_name(n));
    const int has_c = n->n_input > 2 && n->input[2][0], vec = c && imp_bias_vector(c, OUT);
    if (imp_weight_name_ok(im, n, 1) || (vec && imp_weight_name_ok(im, n, 2))) return -1;
    int li = model_build_gemm(b, x->layer, (int)OUT, &g, n->input[1], vec ? n->input[2] : NULL);
    if (has_c && !vec) {
        /* any other C that broadcasts to the (N, OUT) output (a scalar; with the batch, an
         * activation): added after the product, which has no bias to scale by beta */
        int cl;
        if (g.beta != 1.0f)
            return imp_fail(im,
                            "node '%s' (Gemm): beta %g with a C other than a vector of the %lld outputs: only beta 1",
                            imp_node_name(n), g.beta, (long long)OUT);
        if (binary_operand(im, b, n, 2, 1, &cl)) return -1;
        li = model_build_binary(b, LAYER_BADD, li, cl);
        if (model_build_failed(b))
            return imp_fail(im, "node '%s' (Gemm): C does not broadcast to the (N, %lld) output", imp_node_name(n),
                            (long long)OUT);
    }
    return define_output(im, n, li, 0);
}

/* MatMul of a 2-D activation and an (IN, OUT) initializer: a Gemm layer (transB 0)
 * without bias; of an activation of rank > 2 (sample rank > 1) whose last axis is IN
 * (torch.nn.Linear on (B, T, C)): a LAYER_LINEAR over that axis. An Add of a 1-D
 * initializer right after either becomes its bias. */
static int do_matmul(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    int C, H, W;
    model_shape_t s;
    model_build_shape(b, x->layer, &C, &H, &W);
    model_build_shape_nd(b, x->layer, &s);
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1);
    /* an (OUT, IN) weight through a Transpose (torch's Linear on a 3-D input) */
    const value_t *wv = n->n_input > 1 ? imp_find_value(im, n->input[1]) : NULL;
    const int tr = wv && wv->transposed, two = w && w->n_dims == 2;
    const int64_t win = two ? w->dims[tr ? 1 : 0] : 0, wout = two ? w->dims[tr ? 0 : 1] : 0;
    const int flat = x->flat || (H == 1 && W == 1), last = s.rank >= 2 && !x->flat ? s.dims[s.rank - 1] : -1;
    /* the flattening FC where the weight takes the whole sample (what it always did), else
     * the last axis */
    const int fc = flat && two && win == (int64_t)C * H * W;
    const int64_t IN = fc ? (int64_t)C * H * W : last;
    if (!two || IN < 1 || win != IN || wout < 1 || wout > DIM_MAX) {
        char sh[96];
        return imp_fail(im,
                        "node '%s' (MatMul): the second input must be an initializer (IN, OUT), IN the input's last "
                        "axis or, of a 2-D input, its features: input %s",
                        imp_node_name(n), imp_batch_text(&s, sh, sizeof sh));
    }
    if (imp_weight_name_ok(im, n, 1)) return -1;
    const gemm_desc_t g = {.layout = tr ? GEMM_W_OUT_IN : GEMM_W_IN_OUT, .alpha = 1.0f, .beta = 1.0f};
    const int OUT = (int)wout;
    const char *wname = tr ? wv->weight : n->input[1];
    int li = fc ? model_build_gemm(b, x->layer, OUT, &g, wname, NULL)
                : model_build_linear_layout(b, x->layer, OUT, g.layout, wname);
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].matmul = 1;
    return 0;
}

/* How many nodes read value name, plus 1 when it is the graph's output. */
static int uses(const imp_t *im, const char *name)
{
    int k = strcmp(im->output, name) == 0;
    for (size_t i = 0; i < im->g->n_node; i++)
        for (size_t j = 0; j < im->g->node[i]->n_input; j++) k += strcmp(im->g->node[i]->input[j], name) == 0;
    return k;
}

/* The shape sh of Reshape n as text, "[N * 2, 3, -1]" (the batch symbol by name). */
static const char *ints_text(const int64_t *sh, int nsh, char *buf, size_t len)
{
    size_t o = 0;
    for (int i = 0; i < nsh && o < len; i++) {
        const int w = is_batch(sh[i])
                          ? snprintf(buf + o, len - o, "%sN * %lld", i ? ", " : "[", (long long)batch_k(sh[i]))
                          : snprintf(buf + o, len - o, "%s%lld", i ? ", " : "[", (long long)sh[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < len) snprintf(buf + o, len - o, nsh ? "]" : "[]");
    return buf;
}

static int reshape_overflows(imp_t *im, const Onnx__NodeProto *n, const int64_t *sh, int nsh)
{
    char t[200];
    return imp_fail(im, "node '%s' (Reshape): the shape %s overflows (its product is beyond 2^62)", imp_node_name(n),
                    ints_text(sh, nsh, t, sizeof t));
}

/* Reshape to (batch, -1): a constant shape [0 or -1 or the batch, -1 or C*H*W]. */
static int do_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"allowzero", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    /* allowzero = 1: a 0 after the batch is a dimension of 0 (an empty tensor), not a copy
     * of the input's axis; the batch itself cannot be empty */
    const int allowzero = imp_attr_int(n, "allowzero", 0) != 0;
    int64_t sh[INTS_MAX];
    int nsh = 0, ssh;
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const int64_t flat = (int64_t)C * H * W;
    const int batch0 = imp_input_ints(im, n, 1, sh, &nsh, &ssh) == 0 && nsh >= 1 && nsh <= 1 + MODEL_MAX_RANK &&
                       (is_batch(sh[0]) || (sh[0] == 0 && !allowzero) || sh[0] == -1 ||
                        (im->batch_dim > 0 && sh[0] == im->batch_dim));
    if (!batch0 && im->batch_dim > 0 && nsh >= 1)
        /* torch folded the example input's batch into the shape (Swin's B * windows) */
        return imp_fail(im,
                        "node '%s' (Reshape): the shape's first value %lld is a constant that is not the batch: the "
                        "file fixes the batch to %d, so the shape no longer says which axis holds it; export with a "
                        "dynamic batch (torch.onnx.export(..., dynamic_axes={'%.64s': {0: 'N'}}))",
                        imp_node_name(n), (long long)sh[0], im->batch_dim, im->input ? im->input : "input");
    if (!batch0)
        return imp_fail(im,
                        "node '%s' (Reshape): the shape must be a constant of 1 to %d values whose first is the batch "
                        "(the batch, 0 or -1)",
                        imp_node_name(n), 1 + MODEL_MAX_RANK);
    model_shape_t in, to = {0};
    model_build_shape_nd(b, x->layer, &in);
    /* k: how many of the sample's leading elements the graph's batch axis holds (1: none;
     * Swin's B * num_windows); -1: inferred from the rest */
    int64_t k = is_batch(sh[0]) ? batch_k(sh[0]) : sh[0] == 0 && x->lead ? in.dims[0] : sh[0] == -1 ? -1 : 1;
    /* (batch, -1) and (batch, C*H*W): the flat view, no layer (what Gemm reads) */
    if (k != -1 && k != 1 ? 0 : nsh == 2 && ((sh[1] == -1 && sh[0] != -1) || sh[1] == flat))
        return define_output(im, n, x->layer, 1);
    /* else a LAYER_RESHAPE: 0 copies the input's axis, one -1 takes what is left */
    const int L = x->lead ? 0 : 1; /* the graph's axis q is the sample's q - L */
    int infer = -1, rest = nsh - 1;
    int64_t prod = 1, dims[MODEL_MAX_RANK + 1];
    for (int d = 0; d < rest; d++) {
        int64_t v = sh[d + 1];
        if (v == 0 && !allowzero && !x->flat && d + 1 - L < in.rank) v = in.dims[d + 1 - L];
        if (v == -1 && infer < 0 && k != -1 && !allowzero) infer = d;
        else if (v < (allowzero ? 0 : 1) || v > DIM_MAX)
            return imp_fail(im,
                            "node '%s' (Reshape): dimension %d of the shape is %lld (at most one -1, 0 only where the "
                            "input has that axis, and no -1 with a -1 batch)",
                            imp_node_name(n), d + 1, (long long)sh[d + 1]);
        else if (model_dim_mul(prod, v, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        else dims[d] = v;
        if (prod > flat && !allowzero) break; /* allowzero: a later 0 may empty it */
    }
    /* prod 0 (an empty shape) leaves nothing to infer a -1 from */
    if (k == -1 && prod > 0 && prod <= flat && flat % prod == 0) k = flat / prod, prod = flat;
    else if (k >= 1 && prod <= flat) {
        if (model_dim_mul(prod, k, &prod) != 0) return reshape_overflows(im, n, sh, nsh);
        if (infer >= 0 && prod > 0 && prod <= flat && flat % prod == 0) dims[infer] = flat / prod, prod = flat;
    }
    if (prod != flat)
        return imp_fail(im, "node '%s' (Reshape): the shape does not hold the input's %lld elements per sample",
                        imp_node_name(n), (long long)flat);
    to.rank = rest + (k > 1);
    if (to.rank > MODEL_MAX_RANK)
        return imp_fail(im,
                        "node '%s' (Reshape): a sample of rank %d (the batch axis holding %lld of its elements; at "
                        "most %d)",
                        imp_node_name(n), to.rank, (long long)k, MODEL_MAX_RANK);
    if (k > 1) to.dims[0] = (int)k;
    for (int d = 0; d < rest; d++) to.dims[d + (k > 1)] = (int)dims[d];
    if (define_output(im, n, model_build_reshape(b, x->layer, &to), 0)) return -1;
    im->vals[im->nvals - 1].lead = k > 1;
    return 0;
}

/* Shape, Gather, Unsqueeze and Concat on small int vectors (the exporter's shape arithmetic);
 * 1 when n is not such a node. */
static int do_shape_op(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const axis[] = {"axis", NULL}, *const axes[] = {"axes", NULL};
    const char *op = n->op_type;
    int64_t a[INTS_MAX], r[INTS_MAX];
    int na, sa;
    if (strcmp(op, "Shape") == 0) {
        const value_t *x = n->n_input == 1 ? imp_find_value(im, n->input[0]) : NULL;
        if (x && x->kind == V_INTS) {
            /* of a shape vector: its length (torch's expand(n, -1, -1)) */
            const int64_t len = x->nints;
            return imp_check_attrs(im, n, none) ? -1 : imp_define_ints(im, n, &len, x->scalar ? 0 : 1, 0);
        }
        if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
        int C, H, W;
        model_shape_t s;
        model_build_shape(b, x->layer, &C, &H, &W);
        model_build_shape_nd(b, x->layer, &s);
        int64_t sh[1 + MODEL_MAX_RANK] = {BATCH, (int64_t)C * H * W};
        if (x->flat) return imp_define_ints(im, n, sh, 2, 0);
        if (x->defer)
            return imp_fail(im, "node '%s' (Shape): of a Transpose that moves the batch axis", imp_node_name(n));
        for (int d = 0; d < s.rank; d++) sh[1 + d] = s.dims[d];
        if (x->lead) sh[1] = batch_times(s.dims[0]); /* (N * k, ...) */
        return imp_define_ints(im, n, sh + x->lead, 1 + s.rank - x->lead, 0);
    }
    if (strcmp(op, "Gather") == 0) {
        int64_t idx[INTS_MAX];
        int ni, si;
        if (imp_check_attrs(im, n, axis) || imp_attr_int(n, "axis", 0) != 0 || imp_input_sym(im, n, 0, a, &na, &sa) ||
            imp_input_ints(im, n, 1, idx, &ni, &si) || sa)
            return imp_fail(im, "node '%s' (Gather): only gathering from a constant or a Shape is supported",
                            imp_node_name(n));
        for (int i = 0; i < ni; i++) {
            int64_t k = idx[i] < 0 ? idx[i] + na : idx[i];
            if (k < 0 || k >= na)
                return imp_fail(im, "node '%s' (Gather): index %lld out of range", imp_node_name(n), (long long)idx[i]);
            r[i] = a[k];
        }
        return imp_define_ints(im, n, r, ni, si);
    }
    if (strcmp(op, "Unsqueeze") == 0) {
        /* axes: an attribute up to opset 12, an input from 13 */
        int64_t ax[INTS_MAX];
        int nx = 0, sx;
        const Onnx__AttributeProto *at = imp_attr(n, "axes");
        if (imp_check_attrs(im, n, axes) || imp_input_sym(im, n, 0, a, &na, &sa)) return 1;
        if (at && at->n_ints == 1) ax[0] = at->ints[0], nx = 1;
        else if (!at && imp_input_ints(im, n, 1, ax, &nx, &sx) != 0) nx = 0;
        if (!sa || nx != 1 || ax[0] != 0)
            return imp_fail(im, "node '%s' (Unsqueeze): only a scalar to a 1-element vector is supported",
                            imp_node_name(n));
        return imp_define_ints(im, n, a, 1, 0);
    }
    if (strcmp(op, "Reshape") == 0) {
        /* of a shape vector to one axis ([-1] or its length; torch's x.expand(n, -1, -1)
         * writes one) or of a 1-element one to a scalar: the same values */
        static const char *const known[] = {"allowzero", NULL};
        int64_t t[INTS_MAX];
        int nt, st;
        if (imp_input_sym(im, n, 0, a, &na, &sa) != 0) return 1;
        if (imp_check_attrs(im, n, known) || imp_input_ints(im, n, 1, t, &nt, &st) != 0 || nt > 1 ||
            (nt == 1 && t[0] != -1 && t[0] != na) || (nt == 0 && na != 1))
            return imp_fail(im,
                            "node '%s' (Reshape): of a shape vector: only to one axis ([-1] or its length) is folded",
                            imp_node_name(n));
        return imp_define_ints(im, n, a, na, nt == 0);
    }
    if (strcmp(op, "Cast") == 0) {
        /* of ints (the exporter's shape arithmetic casts them to int64): the same values */
        static const char *const to[] = {"to", NULL};
        if (imp_check_attrs(im, n, to) || imp_input_sym(im, n, 0, a, &na, &sa) != 0) return 1;
        return imp_define_ints(im, n, a, na, sa);
    }
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
        strcmp(op, "Equal") == 0 || strcmp(op, "Mod") == 0)
        return fold_shape_arith(im, n);
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Slice") == 0 || strcmp(op, "Not") == 0 || strcmp(op, "Where") == 0 ||
        strcmp(op, "Range") == 0 || strcmp(op, "ConstantOfShape") == 0)
        return fold_ints(im, n);
    if (strcmp(op, "Concat") == 0) {
        int total = 0;
        for (size_t i = 0; i < n->n_input; i++) {
            if (imp_input_sym(im, n, i, a, &na, &sa) != 0) return 1; /* not int vectors: not this kind of Concat */
            if (sa || total + na > INTS_MAX)
                return imp_fail(im, "node '%s' (Concat): a shape of more than %d values", imp_node_name(n), INTS_MAX);
            memcpy(r + total, a, (size_t)na * sizeof *a);
            total += na;
        }
        if (imp_check_attrs(im, n, axis) || imp_attr_int(n, "axis", 0) != 0)
            return imp_fail(im, "node '%s' (Concat): shape vectors join along axis 0", imp_node_name(n));
        return imp_define_ints(im, n, r, total, 0);
    }
    return 1;
}

/* pacer's own domain, ai.pacer: StochasticDepth(p, mode) as the Python client writes
 * torchvision.ops.StochasticDepth (clients/python/pacer/client.py): mode "row" (one draw
 * per sample, EfficientNet's and ConvNeXt's), p in [0, 1). */
static int do_pacer_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    const value_t *x;
    if (strcmp(op, "StochasticDepth") != 0)
        return imp_fail(im, "node '%s': operator ai.pacer:%s is not supported (ai.pacer has StochasticDepth only)",
                        imp_node_name(n), op);
    static const char *const known[] = {"p", "mode", NULL};
    if (n->n_input != 1) return imp_fail(im, "node '%s' (StochasticDepth): want one input", imp_node_name(n));
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    const Onnx__AttributeProto *mode = imp_attr(n, "mode");
    if (mode && !(mode->has_s && mode->s.len == 3 && memcmp(mode->s.data, "row", 3) == 0))
        return imp_fail(im,
                        "node '%s' (StochasticDepth): mode '%.*s' is not supported (\"row\" only: one draw per sample)",
                        imp_node_name(n), mode->has_s ? (int)(mode->s.len > 32 ? 32 : mode->s.len) : 0,
                        mode->has_s ? (const char *)mode->s.data : "");
    const Onnx__AttributeProto *pa = imp_attr(n, "p");
    if (!pa || !pa->has_f) return imp_fail(im, "node '%s' (StochasticDepth): no float attribute p", imp_node_name(n));
    const float p = pa->f;
    if (!(p >= 0.0f && p < 1.0f))
        return imp_fail(im, "node '%s' (StochasticDepth): p %g is not in [0, 1)", imp_node_name(n), p);
    if (p == 0.0f) return define_output(im, n, x->layer, x->flat); /* the identity, as Dropout's ratio 0 */
    return define_output(im, n, model_build_elementwise(b, LAYER_STOCHASTIC_DEPTH, x->layer, p), x->flat);
}

/* The axes of n (an attribute up to opset 12, input 1 from 13) as non-batch axes of a
 * sample of rank r (ONNX's axis a of the batch tensor is the sample's a - 1; negative ones
 * count from the end of rank r + 1); sorted flags in *mask. 0, or -1 with the reason. */
static int sample_axes(imp_t *im, const Onnx__NodeProto *n, int r, unsigned *mask)
{
    int64_t ax[INTS_MAX];
    int na = 0, sa;
    const Onnx__AttributeProto *at = imp_attr(n, "axes");
    *mask = 0;
    if (at) {
        if (at->n_ints > INTS_MAX) return imp_fail(im, "node '%s' (%s): too many axes", imp_node_name(n), n->op_type);
        for (size_t i = 0; i < at->n_ints; i++) ax[na++] = at->ints[i];
    } else if (n->n_input > 1 && n->input[1][0] && imp_input_ints(im, n, 1, ax, &na, &sa) != 0)
        return imp_fail(im, "node '%s' (%s): axes must be a constant", imp_node_name(n), n->op_type);
    for (int i = 0; i < na; i++) {
        const int64_t a = ax[i] < 0 ? ax[i] + r + 1 : ax[i];
        if (a == 0) return imp_fail(im, "node '%s' (%s): axis 0 is the batch axis", imp_node_name(n), n->op_type);
        if (a < 1 || a > r || (*mask & (1u << (a - 1))))
            return imp_fail(im, "node '%s' (%s): axis %lld is out of range or repeated", imp_node_name(n), n->op_type,
                            (long long)ax[i]);
        *mask |= 1u << (a - 1);
    }
    return 0;
}

/* Squeeze and Unsqueeze of an activation's non-batch axes: a LAYER_RESHAPE. */
static int do_squeeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int unsqueeze)
{
    static const char *const known[] = {"axes", NULL};
    const value_t *x;
    model_shape_t in, to = {0};
    unsigned mask;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat) {
        int C, H, W;
        model_build_shape(b, x->layer, &C, &H, &W);
        in = (model_shape_t){.rank = 1, .dims = {C * H * W}};
    }
    if (unsqueeze) {
        /* the axes count in the output's rank */
        const Onnx__AttributeProto *at = imp_attr(n, "axes");
        int64_t ax[INTS_MAX];
        int na = 0, sa;
        if (at) na = (int)at->n_ints;
        else if (imp_input_ints(im, n, 1, ax, &na, &sa) != 0) na = 0;
        if (sample_axes(im, n, in.rank + na, &mask)) return -1;
        to.rank = in.rank + na;
        if (na < 1 || to.rank > MODEL_MAX_RANK)
            return imp_fail(im, "node '%s' (Unsqueeze): %d axes on a sample of rank %d (at most %d)", imp_node_name(n),
                            na, in.rank, MODEL_MAX_RANK);
        for (int d = 0, k = 0; d < to.rank; d++) to.dims[d] = (mask & (1u << d)) ? 1 : in.dims[k++];
    } else {
        if (sample_axes(im, n, in.rank, &mask)) return -1;
        for (int d = 0; d < in.rank; d++) {
            const int drop = mask ? (mask >> d) & 1 : in.dims[d] == 1;
            if (drop && in.dims[d] != 1)
                return imp_fail(im, "node '%s' (Squeeze): axis %d has %d elements, not 1", imp_node_name(n), d + 1,
                                in.dims[d]);
            if (!drop) to.dims[to.rank++] = in.dims[d];
        }
    }
    return define_output(im, n, model_build_reshape(b, x->layer, &to), 0);
}

/* Transpose of the non-batch axes (perm[0] = 0). */
static int do_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"perm", NULL};
    const value_t *x;
    model_shape_t in;
    const Onnx__AttributeProto *a = imp_attr(n, "perm");
    const Onnx__TensorProto *t = imp_input_tensor(im, n, 0);
    if (t && t->n_dims == 2 && imp_check_attrs(im, n, known) == 0) {
        /* of a 2-D initializer: an (OUT, IN) weight for the MatMul that reads it */
        if (a && (a->n_ints != 2 || a->ints[0] != 1 || a->ints[1] != 0))
            return imp_fail(im, "node '%s' (Transpose): of an initializer: only a 2-D one's perm (1, 0)",
                            imp_node_name(n));
        if (imp_weight_name_ok(im, n, 0)) return -1; /* the name the MatMul's layer gives the weight */
        value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
        if (!v) return imp_fail(im, "out of memory");
        v->tensor = t;
        v->transposed = 1;
        v->weight = n->input[0];
        return 0;
    }
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    const int L = x->lead ? 0 : 1, R = in.rank + L; /* the graph's rank; its axis q is the sample's q - L */
    if (a && (int)a->n_ints == R && x->lead && !x->flat && !x->defer && a->ints[0] != 0) {
        /* qkv.permute(2, 0, 3, 1, 4) of a lead value: moves the batch axis; left to the
         * Gathers on axis 0 that read it (do_gather), each of which takes one index of axis
         * perm[0] (any other such Transpose is a view: view_node) */
        unsigned seen = 0;
        for (int d = 0; d < R; d++) {
            if (a->ints[d] < 0 || a->ints[d] >= R || (seen >> a->ints[d]) & 1)
                return imp_fail(im, "node '%s' (Transpose): perm is not a permutation", imp_node_name(n));
            seen |= 1u << a->ints[d];
        }
        if (define_output(im, n, x->layer, 0)) return -1;
        value_t *v = &im->vals[im->nvals - 1];
        v->lead = x->lead;
        v->defer = 1;
        for (int d = 0; d < R; d++) v->perm[d] = (int)a->ints[d];
        return 0;
    }
    if (!a || (int)a->n_ints != R || x->flat || a->ints[0] != 0)
        return imp_fail(im,
                        "node '%s' (Transpose): perm must name the %d axes with the batch axis first (a perm that "
                        "moves the batch axis of an input not flattened is read as a view)",
                        imp_node_name(n), R);
    int perm[MODEL_MAX_RANK];
    for (int d = 0; d < in.rank; d++)
        perm[d] = a->ints[d + L] >= L && a->ints[d + L] < R ? (int)a->ints[d + L] - L : -1;
    const int li = model_build_transpose(b, x->layer, perm);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Transpose): perm is not a permutation", imp_node_name(n));
    return define_output(im, n, li, 0);
}

/* Slice with constant starts, ends, axes and steps (not 0; a negative one walks down) of
 * non-batch axes: one LAYER_SLICE per axis. */
static int do_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    int64_t v[4][INTS_MAX];
    int cnt[4] = {0, 0, 0, 0}, sc;
    model_shape_t s;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    for (int i = 0; i < 4; i++)
        if ((size_t)i + 1 < n->n_input && n->input[i + 1][0] &&
            imp_input_ints(im, n, (size_t)i + 1, v[i], &cnt[i], &sc) != 0)
            return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps must be constants", imp_node_name(n));
    if (cnt[0] < 1 || cnt[1] != cnt[0] || (cnt[2] && cnt[2] != cnt[0]) || (cnt[3] && cnt[3] != cnt[0]) || x->flat)
        return imp_fail(im, "node '%s' (Slice): starts, ends, axes and steps of one length are required",
                        imp_node_name(n));
    int li = x->layer;
    for (int k = 0; k < cnt[0]; k++) {
        model_build_shape_nd(b, li, &s);
        const int64_t ax = cnt[2] ? (v[2][k] < 0 ? v[2][k] + s.rank + 1 : v[2][k]) : k, step = cnt[3] ? v[3][k] : 1;
        if (ax < 1 || ax > s.rank || step == 0)
            return imp_fail(im,
                            "node '%s' (Slice): axis %lld step %lld: only non-batch axes and steps not 0 are supported",
                            imp_node_name(n), (long long)ax, (long long)step);
        const int dim = s.dims[ax - 1];
        const int64_t st = slice_bound_step(v[0][k], dim, step), en = slice_bound_step(v[1][k], dim, step);
        if (step > DIM_MAX || step < -DIM_MAX)
            return imp_fail(im, "node '%s' (Slice): step %lld: outside +-%lld", imp_node_name(n), (long long)step,
                            (long long)DIM_MAX);
        /* bounds that cross are an empty slice: a dimension of 0 (import_model refuses one
         * in a model to train) */
        li = model_build_slice(b, li, (int)ax - 1, (int)st, (int)((step > 0 ? st >= en : st <= en) ? st : en),
                               (int)step);
    }
    return define_output(im, n, li, 0);
}

/* Split of a non-batch axis: sizes from the input (opset 13) or the attribute, or equal;
 * output i a LAYER_SLICE. */
static int do_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "split", NULL};
    const value_t *x;
    model_shape_t s;
    int64_t sz[INTS_MAX];
    int ns = 0, sc;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &s);
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += s.rank + 1;
    /* a flat value of one axis is that axis (a Reshape to (N, k) of a sample of k) */
    if (ax < 1 || ax > s.rank || (x->flat && s.rank != 1) || n->n_output < 1 || n->n_output > INTS_MAX)
        return imp_fail(im, "node '%s' (Split): axis %lld: only a non-batch axis into 1 to %d outputs is supported",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 0), INTS_MAX);
    const int dim = s.dims[ax - 1];
    const Onnx__AttributeProto *a = imp_attr(n, "split");
    if (a && a->n_ints <= INTS_MAX)
        for (size_t i = 0; i < a->n_ints; i++) sz[ns++] = a->ints[i];
    else if (n->n_input > 1 && n->input[1][0] && imp_input_ints(im, n, 1, sz, &ns, &sc) != 0)
        return imp_fail(im, "node '%s' (Split): split must be a constant", imp_node_name(n));
    if (!ns) {
        ns = (int)n->n_output;
        for (int i = 0; i < ns; i++) sz[i] = dim / ns;
    }
    /* each size in [0, dim] before any is summed: sizes of 2^63 - 1 must not wrap to dim (a
     * size of 0 is an empty part) */
    int64_t total = 0;
    for (int i = 0; i < ns; i++)
        if (sz[i] < 0 || sz[i] > dim)
            return imp_fail(im, "node '%s' (Split): size %d is %lld, not in [0, %d] (the axis)", imp_node_name(n), i,
                            (long long)sz[i], dim);
        else total += sz[i];
    if (ns != (int)n->n_output || total != dim)
        return imp_fail(im, "node '%s' (Split): %d sizes for %zu outputs do not split the axis of %d", imp_node_name(n),
                        ns, n->n_output, dim);
    int off = 0;
    for (int i = 0; i < ns; i++) {
        const int li = model_build_slice(b, x->layer, (int)ax - 1, off, off + (int)sz[i], 1);
        off += (int)sz[i];
        if (!n->output[i][0]) continue;
        value_t *v = imp_add_value(im, n->output[i], V_LAYER);
        if (!v) return imp_fail(im, "out of memory");
        v->layer = li;
    }
    return 0;
}

/* ReduceMean and ReduceSum over non-batch axes (attribute axes, or input 1 from opset 13
 * for ReduceSum and 18 for ReduceMean) -> LAYER_REDUCE_*; the mean over an image's plane
 * (axes 2 and 3, or -2 and -1: torch's x.mean([2, 3]), as MNASNet ends) stays a global
 * average pool, keepdims 0 leaving (N, C) flat. */
static int do_reduce(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axes", "keepdims", "noop_with_empty_axes", NULL};
    const int mean = n->op_type[6] == 'M';
    const value_t *x;
    model_shape_t in;
    unsigned mask;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_build_shape_nd(b, x->layer, &in);
    if (x->flat && in.rank != 1)
        return imp_fail(im, "node '%s' (%s): of a flattened input (Flatten, Reshape to (N, -1)): not supported",
                        imp_node_name(n), n->op_type);
    if (sample_axes(im, n, in.rank, &mask)) return -1;
    const int keep = imp_attr_int(n, "keepdims", 1) != 0;
    if (!mask && imp_attr_int(n, "noop_with_empty_axes", 0)) return define_output(im, n, x->layer, x->flat);
    if (!mask)
        return imp_fail(im,
                        "node '%s' (%s): no axes: the reduction over every axis, the batch axis too, is not supported",
                        imp_node_name(n), n->op_type);
    if (mean && in.rank == 3 && !x->flat && mask == 6u)
        return define_output(im, n, model_build_gap(b, x->layer), !keep);
    return define_output(im, n,
                         model_build_reduce(b, mean ? LAYER_REDUCE_MEAN : LAYER_REDUCE_SUM, x->layer, mask, keep), 0);
}

/* Add's, Sub's, Mul's and Div's attributes: none from opset 7; before, broadcast, whose 1
 * aligns B with A's last axes (NumPy's rule on the shapes opset 6 allows) and whose 0 wants
 * equal shapes (which broadcasting leaves as they are), so both read as opset 7; an axis
 * (another alignment) is refused as any unknown attribute is. */
static int binary_attrs(imp_t *im, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const six[] = {"broadcast", NULL};
    if (imp_check_attrs(im, n, im->opset < 7 ? six : none)) return -1;
    const int64_t bc = imp_attr_int(n, "broadcast", 0);
    if (bc != 0 && bc != 1)
        return imp_fail(im, "node '%s' (%s): broadcast must be 0 or 1", imp_node_name(n), n->op_type);
    return 0;
}

/* Add, Sub, Mul, Div with NumPy broadcasting (kind LAYER_BADD .. LAYER_DIV): two
 * activations, or an activation and a constant. */
static int do_binary(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    if (binary_attrs(im, n)) return -1;
    if (n->n_input != 2)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 2", imp_node_name(n), n->op_type, n->n_input);
    const int t0 = const_input(im, n, 0), t1 = const_input(im, n, 1);
    if (t0 && t1)
        return imp_fail(im, "node '%s' (%s): both operands are constants (export with constant folding)",
                        imp_node_name(n), n->op_type);
    /* the activation first: its rank bounds the constant's */
    const size_t ia = t0 ? 1 : 0;
    int la, lc;
    model_shape_t sa, sc;
    char ta[96], tc[96];
    if (binary_operand(im, b, n, ia, -1, &la)) return -1;
    model_build_shape_nd(b, la, &sa);
    if (binary_operand(im, b, n, 1 - ia, sa.rank, &lc)) return -1;
    model_build_shape_nd(b, lc, &sc);
    const int li = ia == 0 ? model_build_binary(b, kind, la, lc) : model_build_binary(b, kind, lc, la);
    const int c_const = t0 || t1; /* the second operand read, lc, is the constant */
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (%s): shapes %s and %s%s do not broadcast", imp_node_name(n), n->op_type,
                        imp_batch_text(&sa, ta, sizeof ta), c_const ? "the constant " : "",
                        c_const ? model_shape_text(&sc, tc, sizeof tc) : imp_batch_text(&sc, tc, sizeof tc));
    return define_output(im, n, li, 0);
}

/* Whether n is a node a matched pattern stands for (then forgotten: each is seen once). */
static int fused_away(imp_t *im, const Onnx__NodeProto *n)
{
    for (int k = 0; k < im->nfused; k++)
        if (im->fused[k] == n) {
            im->fused[k] = im->fused[--im->nfused];
            return 1;
        }
    return 0;
}

/* Whether n is a node of operator op (a node of the graph may have none: do_node refuses it
 * when it gets there, a pattern probe only passes it by). */
static int op_is(const Onnx__NodeProto *n, const char *op) { return n && n->op_type && strcmp(n->op_type, op) == 0; }

/* The node that alone reads value name (the graph's output is read by the caller too), or
 * NULL. */
static const Onnx__NodeProto *sole_reader(const imp_t *im, const char *name)
{
    const Onnx__NodeProto *r[1];
    return imp_readers(im, name, r, 1) == 1 ? r[0] : NULL;
}

/* Whether value name is a float scalar (then in *f): an initializer or Constant seen
 * already, or a Constant node later in the graph (torch writes a pattern's constants where
 * it uses them). */
static int scalar_value(imp_t *im, const char *name, float *f)
{
    const value_t *val = imp_find_value(im, name);
    const Onnx__TensorProto *t = val && val->kind == V_TENSOR ? val->tensor : NULL;
    for (size_t i = 0; !val && i < im->g->n_node; i++) {
        const Onnx__NodeProto *c = im->g->node[i];
        const Onnx__AttributeProto *a = op_is(c, "Constant") && c->n_output == 1 && strcmp(c->output[0], name) == 0
                                            ? imp_attr(c, "value")
                                            : NULL;
        if (a && a->t) t = a->t;
    }
    const size_t keep = im->errlen; /* a probe: tensor_floats' refusal is not this node's (not written) */
    im->errlen = 0;
    const int ok = t && imp_tensor_count(t) == 1 && imp_tensor_floats(im, t, f, 1) == 0;
    im->errlen = keep;
    return ok;
}

static int is_scalar(imp_t *im, const char *name, float v, float tol)
{
    float f;
    return scalar_value(im, name, &f) && fabsf(f - v) <= tol;
}

/* n's operator is op with two inputs, a and a scalar equal to v (either order); a NULL:
 * any activation first, the scalar second. */
static int is_op_scalar(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, float v)
{
    if (!op_is(n, op) || n->n_input != 2 || n->n_output != 1 || n->n_attribute) return 0;
    if (!a) return is_scalar(im, n->input[1], v, 1e-6f);
    for (int k = 0; k < 2; k++)
        if (strcmp(n->input[k], a) == 0 && is_scalar(im, n->input[1 - k], v, 1e-6f)) return 1;
    return 0;
}

/* torch 1.13's nn.GELU(): Div(x, sqrt(2)), Erf, Add 1, Mul by x, Mul by 0.5, each value
 * but the last read by the next node alone. At the Div: builds one LAYER_GELU for the five
 * and defines the last Mul's output; 1 where n does not start the pattern (the Div is then
 * an ordinary one). */
static int match_gelu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = imp_find_value(im, n->input[0]);
    if (!x || x->kind != V_LAYER || !is_op_scalar(im, n, "Div", NULL, (float)M_SQRT2) ||
        im->nfused + 4 > (int)(sizeof im->fused / sizeof im->fused[0]))
        return 1;
    const Onnx__NodeProto *e = sole_reader(im, n->output[0]);
    if (!op_is(e, "Erf") || e->n_output != 1) return 1;
    const Onnx__NodeProto *a = sole_reader(im, e->output[0]);
    if (!is_op_scalar(im, a, "Add", e->output[0], 1.0f)) return 1;
    const Onnx__NodeProto *m1 = sole_reader(im, a->output[0]);
    if (!op_is(m1, "Mul") || m1->n_input != 2 || m1->n_output != 1 ||
        !((strcmp(m1->input[0], n->input[0]) == 0 && strcmp(m1->input[1], a->output[0]) == 0) ||
          (strcmp(m1->input[1], n->input[0]) == 0 && strcmp(m1->input[0], a->output[0]) == 0)))
        return 1;
    const Onnx__NodeProto *m2 = sole_reader(im, m1->output[0]);
    if (!is_op_scalar(im, m2, "Mul", m1->output[0], 0.5f)) return 1;
    const Onnx__NodeProto *const later[4] = {e, a, m1, m2};
    for (int k = 0; k < 4; k++) im->fused[im->nfused++] = later[k];
    return define_output(im, m2, model_build_unary(b, LAYER_GELU, x->layer, 0.0f), x->flat);
}

/* MatMul of two activations (attention's Q K^T, A V): one rank >= 3 with the batch, the
 * leading axes equal; a MatMul by a weight is do_matmul's. */
static int do_bmm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x, *y;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
    model_shape_t sa, sb;
    char ta[96], tb[96];
    model_build_shape_nd(b, x->layer, &sa);
    model_build_shape_nd(b, y->layer, &sb);
    const int li = model_build_bmm(b, x->layer, y->layer);
    if (x->flat || y->flat || model_build_failed(b))
        return imp_fail(im,
                        "node '%s' (MatMul): %s times %s: two activations multiply as (N, ..., M, K) times (N, ..., "
                        "K, N2) with equal leading axes (no broadcasting)",
                        imp_node_name(n), imp_batch_text(&sa, ta, sizeof ta), imp_batch_text(&sb, tb, sizeof tb));
    return define_output(im, n, li, 0);
}

/* The per-sample shape of value x as the graph sees it: a flattened one (N, C*H*W) has one
 * axis. */
static void seen_shape(model_builder_t *b, const value_t *x, model_shape_t *s)
{
    model_build_shape_nd(b, x->layer, s);
    if (!x->flat) return;
    int n = 1;
    for (int d = 0; d < s->rank; d++) n *= s->dims[d];
    *s = (model_shape_t){.rank = 1, .dims = {n}};
}

/* x's layer, or a reshape of it to s (seen_shape's) where its own shape is another: what a
 * layer normalising along the graph's axes reads. */
static int as_seen(model_builder_t *b, const value_t *x, const model_shape_t *s)
{
    model_shape_t own;
    model_build_shape_nd(b, x->layer, &own);
    return model_shape_equal(&own, s) ? x->layer : model_build_reshape(b, x->layer, s);
}

/* n (ReduceMean, keepdims 1) averages the last axes of a sample of rank r: the first of them
 * (a non-batch index), or -1. */
static int mean_axis(const Onnx__NodeProto *n, int r)
{
    /* n may be no node (a probe's sole reader that is none): not a match */
    const Onnx__AttributeProto *a = n ? imp_attr(n, "axes") : NULL;
    if (!op_is(n, "ReduceMean") || n->n_input != 1 || n->n_output != 1 || !a || a->n_ints < 1 ||
        a->n_ints > (size_t)r || imp_attr_int(n, "keepdims", 1) != 1)
        return -1;
    unsigned seen = 0;
    for (size_t i = 0; i < a->n_ints; i++) {
        const int64_t ax = a->ints[i] < 0 ? a->ints[i] + r + 1 : a->ints[i]; /* ONNX's: the batch 0 */
        if (ax < 1 || ax > r || (seen & (1u << ax))) return -1;
        seen |= 1u << ax;
    }
    const int first = r + 1 - (int)a->n_ints; /* the last n_ints axes, each once */
    for (int ax = first; ax <= r; ax++)
        if (!(seen & (1u << ax))) return -1;
    return first - 1;
}

/* n is op reading a and an initializer of count floats (either order): that initializer's
 * name, or NULL. */
static const char *op_weight(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, size_t count)
{
    if (!op_is(n, op) || n->n_input != 2 || n->n_output != 1) return NULL;
    for (int k = 0; k < 2; k++) {
        const value_t *w = strcmp(n->input[k], a) == 0 ? imp_find_value(im, n->input[1 - k]) : NULL;
        if (w && w->kind == V_TENSOR && !w->constant_node && imp_tensor_count(w->tensor) == (int64_t)count &&
            strlen(n->input[1 - k]) < MODEL_TENSOR_NAME_MAX)
            return n->input[1 - k];
    }
    return NULL;
}

/* torch 1.13's nn.LayerNorm below opset 17: ReduceMean (the last axes), Sub, Pow 2,
 * ReduceMean, Add eps, Sqrt, Div, Mul weight, Add bias, each value read by the pattern alone
 * (the Sub's by the Pow and the Div). At the first ReduceMean: one LAYER_LAYERNORM with the
 * weight and bias under their names; 1 where n does not start the pattern. */
static int match_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x = imp_find_value(im, n->input[0]);
    model_shape_t s;
    if (!x || x->kind != V_LAYER || im->nfused + 8 > (int)(sizeof im->fused / sizeof im->fused[0])) return 1;
    seen_shape(b, x, &s);
    const int axis = mean_axis(n, s.rank);
    if (axis < 0) return 1;
    size_t D = 1;
    for (int d = axis; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__NodeProto *sub = sole_reader(im, n->output[0]), *r[2];
    if (!op_is(sub, "Sub") || sub->n_input != 2 || sub->n_output != 1 || strcmp(sub->input[0], n->input[0]) != 0 ||
        strcmp(sub->input[1], n->output[0]) != 0 || imp_readers(im, sub->output[0], r, 2) != 2)
        return 1;
    const Onnx__NodeProto *pw = r[0], *dv = r[1];
    if (!is_op_scalar(im, pw, "Pow", sub->output[0], 2.0f)) return 1;
    const Onnx__NodeProto *m2 = sole_reader(im, pw->output[0]);
    if (mean_axis(m2, s.rank) != axis) return 1;
    const Onnx__NodeProto *ad = sole_reader(im, m2->output[0]);
    float eps = 0.0f;
    if (!op_is(ad, "Add") || ad->n_input != 2 || ad->n_output != 1 || strcmp(ad->input[0], m2->output[0]) != 0 ||
        !scalar_value(im, ad->input[1], &eps) || !(eps > 0.0f))
        return 1;
    const Onnx__NodeProto *sq = sole_reader(im, ad->output[0]);
    if (!op_is(sq, "Sqrt") || sq->n_input != 1 || sq->n_output != 1 || sole_reader(im, sq->output[0]) != dv ||
        !op_is(dv, "Div") || dv->n_input != 2 || dv->n_output != 1 || strcmp(dv->input[0], sub->output[0]) != 0 ||
        strcmp(dv->input[1], sq->output[0]) != 0)
        return 1;
    const Onnx__NodeProto *mu = sole_reader(im, dv->output[0]);
    const char *w = op_weight(im, mu, "Mul", dv->output[0], D);
    const Onnx__NodeProto *ab = w ? sole_reader(im, mu->output[0]) : NULL;
    const char *bias = ab ? op_weight(im, ab, "Add", mu->output[0], D) : NULL;
    if (!bias) return 1;
    const Onnx__NodeProto *const later[8] = {sub, pw, m2, ad, sq, dv, mu, ab};
    for (int k = 0; k < 8; k++) im->fused[im->nfused++] = later[k];
    return define_output(im, ab, model_build_layernorm(b, as_seen(b, x, &s), axis, eps, w, bias), 0);
}

/* Defines the value name (a node's output after its first) as layer li. */
static int define_named(imp_t *im, const char *name, int li)
{
    value_t *v = imp_add_value(im, name, V_LAYER);
    if (!v) return imp_fail(im, "out of memory");
    v->layer = li;
    return 0;
}

/* LayerNormalization's Mean and InvStdDev outputs, where a node or the graph's output reads
 * them: the statistics over the normalised sample axes axis.. r - 1, kept as axes of 1,
 * through the layers the operator's definition spells (ReduceMean; Sub, Pow 2, ReduceMean,
 * Add epsilon, Sqrt, Reciprocal) on in, the normalised layer's input. pacer's layer norm
 * keeps its statistics to itself, and only a graph that reads them pays for these. */
static int layernorm_statistics(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, int in, int axis, int r,
                                float eps)
{
    const char *mean_name = n->n_output > 1 ? n->output[1] : "", *inv_name = n->n_output > 2 ? n->output[2] : "";
    const int want_mean = mean_name[0] && imp_readers(im, mean_name, NULL, 0) > 0;
    const int want_inv = inv_name[0] && imp_readers(im, inv_name, NULL, 0) > 0;
    if (!want_mean && !want_inv) return 0;
    unsigned mask = 0;
    for (int d = axis; d < r; d++) mask |= 1u << d;
    const int mean = model_build_reduce(b, LAYER_REDUCE_MEAN, in, mask, 1);
    if (want_mean && define_named(im, mean_name, mean)) return -1;
    if (!want_inv) return 0;
    const int sq = model_build_unary(b, LAYER_POW, model_build_binary(b, LAYER_SUB, in, mean), 2.0f);
    const int var = model_build_reduce(b, LAYER_REDUCE_MEAN, sq, mask, 1);
    int e = -1;
    if (scalar_constant(im, b, n, inv_name, "epsilon", eps, &e)) return -1;
    const int sd = model_build_unary(b, LAYER_SQRT, model_build_binary(b, LAYER_BADD, var, e), 0.0f);
    const int inv = model_build_unary(b, LAYER_RECIPROCAL, sd, 0.0f);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (LayerNormalization): its Mean and InvStdDev outputs: not supported",
                        imp_node_name(n));
    return define_named(im, inv_name, inv);
}

/* ONNX LayerNormalization (opset 17): over the axes from axis (a non-batch one) to the last,
 * the scale and the bias (optional: zeros) initializers of those axes' size; its Mean and
 * InvStdDev outputs where they are read (layernorm_statistics). */
static int do_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", "epsilon", "stash_type", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    model_shape_t s;
    seen_shape(b, x, &s);
    const int64_t given = imp_attr_int(n, "axis", -1), ax = given < 0 ? given + s.rank + 1 : given;
    const float eps = imp_attr_float(n, "epsilon", 1e-5f);
    if (ax < 1 || ax > s.rank)
        return imp_fail(im, "node '%s' (LayerNormalization): axis %lld: only a non-batch axis (1 to %d) is supported",
                        imp_node_name(n), (long long)given, s.rank);
    if (!(eps > 0.0f) || !isfinite(eps))
        return imp_fail(im, "node '%s' (LayerNormalization): epsilon %g must be positive and finite", imp_node_name(n),
                        eps);
    size_t D = 1;
    for (int d = (int)ax - 1; d < s.rank; d++) D *= (size_t)s.dims[d];
    const Onnx__TensorProto *w = imp_input_tensor(im, n, 1), *bt = imp_input_tensor(im, n, 2);
    if (n->n_input < 3 || !w || !bt || imp_tensor_count(w) != (int64_t)D || imp_tensor_count(bt) != (int64_t)D)
        return imp_fail(im, "node '%s' (LayerNormalization): scale and bias must be initializers of %zu elements",
                        imp_node_name(n), D);
    if (imp_weight_name_ok(im, n, 1) || imp_weight_name_ok(im, n, 2)) return -1;
    const int in = as_seen(b, x, &s);
    if (define_output(im, n, model_build_layernorm(b, in, (int)ax - 1, eps, n->input[1], n->input[2]), 0)) return -1;
    return layernorm_statistics(im, b, n, in, (int)ax - 1, s.rank, eps);
}

/* Gather on axis 0 of a Transpose that moved the batch axis (x->defer; q, k, v = qkv[0],
 * qkv[1], qkv[2] after Swin's qkv.permute(2, 0, 3, 1, 4)): the element of the source's
 * axis perm[0] (a LAYER_SLICE and a LAYER_RESHAPE without it), then the rest of perm, which
 * must bring the batch axis first (a LAYER_TRANSPOSE). */
static int gather_deferred(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const value_t *x,
                           const model_shape_t *s, int64_t index, int scalar)
{
    const int L = x->lead ? 0 : 1, R = s->rank + L, q = x->perm[0];
    if (imp_attr_int(n, "axis", 0) != 0 || !scalar || x->perm[1] != 0 || q - L < 0 || R < 3)
        return imp_fail(im,
                        "node '%s' (Gather): of a Transpose that moves the batch axis: one index on axis 0, the batch "
                        "axis then first",
                        imp_node_name(n));
    const int ax = q - L, dim = s->dims[ax];
    const int64_t k = index < 0 ? index + dim : index;
    if (k < 0 || k >= dim)
        return imp_fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", imp_node_name(n),
                        (long long)index, dim);
    model_shape_t to = {.rank = s->rank - 1};
    for (int d = 0, o = 0; d < s->rank; d++)
        if (d != ax) to.dims[o++] = s->dims[d];
    int li = model_build_reshape(b, model_build_slice(b, x->layer, ax, (int)k, (int)k + 1, 1), &to);
    /* output axis j (the graph's j + L) is the source's graph axis perm[j + L + 1] */
    int perm[MODEL_MAX_RANK], identity = 1;
    for (int j = 0; j < to.rank; j++) {
        const int p = x->perm[j + L + 1] - L;
        perm[j] = p < ax ? p : p - 1;
        identity &= perm[j] == j;
    }
    if (!identity) li = model_build_transpose(b, li, perm);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (Gather): of a Transpose: not supported", imp_node_name(n));
    if (define_output(im, n, li, 0)) return -1;
    im->vals[im->nvals - 1].lead = x->lead;
    im->vals[im->nvals - 1].defer = 0;
    return 0;
}

/* Gather's indices (input 1 of n): a constant of at most INTS_MAX integers, of any rank
 * (its dimensions in idims[0..*irank)); their count, or -1. */
static int gather_indices(imp_t *im, const Onnx__NodeProto *n, int64_t *idx, int64_t *idims, int *irank)
{
    int ni, scalar;
    if (n->n_input != 2) return -1;
    if (imp_input_ints(im, n, 1, idx, &ni, &scalar) == 0) {
        *irank = scalar ? 0 : 1;
        idims[0] = ni;
        return ni;
    }
    const Onnx__TensorProto *t = imp_input_tensor(im, n, 1);
    if (!t || t->n_dims > MODEL_MAX_RANK || (ni = imp_tensor_ints(t, idx, INTS_MAX)) < 1) return -1;
    *irank = (int)t->n_dims;
    for (size_t d = 0; d < t->n_dims; d++) idims[d] = t->dims[d];
    return ni;
}

/* Gather of an activation along a non-batch axis by constant indices (ViT's class token,
 * x[:, 0]: one scalar index; or a list of any shape): a LAYER_SLICE of each element, joined
 * by LAYER_CONCATs along the axis, and a LAYER_RESHAPE putting the indices' shape in place
 * of the axis where it is not one axis. Gather of shapes is do_shape_op's. */
static int do_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    int64_t idx[INTS_MAX], idims[MODEL_MAX_RANK];
    int irank = 0, ni;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    if ((ni = gather_indices(im, n, idx, idims, &irank)) < 1)
        return imp_fail(im, "node '%s' (Gather): the indices of an activation must be a constant of 1 to %d integers",
                        imp_node_name(n), INTS_MAX);
    model_shape_t s;
    seen_shape(b, x, &s);
    if (x->defer) {
        if (ni != 1) return imp_fail(im, "node '%s' (Gather): of a Transpose: one index only", imp_node_name(n));
        return gather_deferred(im, b, n, x, &s, idx[0], irank == 0);
    }
    if (x->lead)
        return imp_fail(im, "node '%s' (Gather): of a value whose batch axis holds several of the sample's elements",
                        imp_node_name(n));
    const int64_t given = imp_attr_int(n, "axis", 0), ax = given < 0 ? given + s.rank + 1 : given;
    if (ax < 1 || ax > s.rank)
        return imp_fail(im, "node '%s' (Gather): axis %lld: only a non-batch axis (1 to %d) is supported",
                        imp_node_name(n), (long long)given, s.rank);
    if (s.rank - 1 + irank > MODEL_MAX_RANK)
        return imp_fail(im, "node '%s' (Gather): an output of more than %d axes per sample", imp_node_name(n),
                        MODEL_MAX_RANK);
    const int dim = s.dims[ax - 1], src = as_seen(b, x, &s);
    int li = -1;
    for (int j = 0; j < ni; j++) {
        const int64_t k = idx[j] < 0 ? idx[j] + dim : idx[j];
        if (k < 0 || k >= dim)
            return imp_fail(im, "node '%s' (Gather): index %lld is out of range for an axis of %d", imp_node_name(n),
                            (long long)idx[j], dim);
        const int one = model_build_slice(b, src, (int)ax - 1, (int)k, (int)k + 1, 1);
        li = j ? model_build_concat_axis(b, li, one, (int)ax - 1) : one;
    }
    if (irank != 1) {
        model_shape_t to = {.rank = s.rank - 1 + irank};
        for (int d = 0, o = 0; d < s.rank; d++)
            if (d != ax - 1) to.dims[o++] = s.dims[d];
            else
                for (int q = 0; q < irank; q++) to.dims[o++] = (int)idims[q];
        li = model_build_reshape(b, li, &to);
    }
    return define_output(im, n, li, 0);
}

/* Softmax and LogSoftmax along one non-batch axis. Opset 13's normalise that axis alone;
 * before 13 they normalise the axis and every axis after it together (the input seen as 2-D),
 * which is the same only for the last axis: any other is refused by name. A flattened value
 * (N, C*H*W) is reshaped to its one axis first. */
static int do_softmax(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"axis", NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 1)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 1", imp_node_name(n), n->op_type, n->n_input);
    model_shape_t s;
    seen_shape(b, x, &s);
    const int li = as_seen(b, x, &s);
    const int64_t given = imp_attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    /* ONNX's: the batch axis 0; of a lead value, the graph's axis a >= 1 is the sample's a */
    const int64_t ax = (given < 0 ? given + s.rank + 1 - x->lead : given) + x->lead;
    if (ax < 1 + x->lead || ax > s.rank)
        return imp_fail(im, "node '%s' (%s): axis %lld: only a non-batch axis (1 to %d) is supported", imp_node_name(n),
                        n->op_type, (long long)given, s.rank);
    if (im->opset < 13 && ax != s.rank)
        return imp_fail(im,
                        "node '%s' (%s): axis %lld in opset %lld normalises that axis and every later one together; "
                        "only the last axis is supported before opset 13",
                        imp_node_name(n), n->op_type, (long long)given, (long long)im->opset);
    const layer_kind_t k = n->op_type[0] == 'L' ? LAYER_LOG_SOFTMAX : LAYER_SOFTMAX;
    return define_output(im, n, model_build_softmax(b, k, li, (int)ax - 1), 0);
}

/* Whether n reads two activations of which one is a lead value (its batch axis holding
 * the sample's axis 0) and the other not: no operator pairs them. */
static int mixed_lead(imp_t *im, const Onnx__NodeProto *n)
{
    int seen = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const value_t *x = n->input[i][0] ? imp_find_value(im, n->input[i]) : NULL;
        if (!x || x->kind != V_LAYER) continue;
        seen |= 1 << (x->lead != 0);
    }
    return seen == 3;
}

/* Expand of a constant or an activation to a shape whose first axis is the batch (N; 1 or
 * N for an activation): a LAYER_EXPAND of a LAYER_CONST or of the activation (the class
 * token: class_token.expand(N, -1, -1), torch's Shape .. Where arithmetic folded). */
static int do_expand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    int64_t sh[INTS_MAX];
    int nsh, ssh, li;
    if (imp_check_attrs(im, n, none)) return -1;
    if (n->n_input != 2 || imp_input_ints(im, n, 1, sh, &nsh, &ssh) != 0 || ssh || nsh < 1 || nsh > 1 + MODEL_MAX_RANK)
        return imp_fail(im, "node '%s' (Expand): the shape must be a constant vector of 1 to %d values",
                        imp_node_name(n), 1 + MODEL_MAX_RANK);
    const value_t *x = imp_find_value(im, n->input[0]);
    model_shape_t in = {0}, to = {0}, seen = {0};
    int R = nsh;
    if (x && x->kind == V_TENSOR && !x->transposed) {
        const Onnx__TensorProto *t = x->tensor;
        if (t->n_dims > (size_t)MODEL_MAX_RANK + 1)
            return imp_fail(im, "node '%s' (Expand): the input has more than %d axes", imp_node_name(n),
                            MODEL_MAX_RANK + 1);
        if ((int)t->n_dims > R) R = (int)t->n_dims;
        in.rank = (int)t->n_dims;
        for (int d = 0; d < in.rank; d++) in.dims[d] = t->dims[d] > DIM_MAX ? -1 : (int)t->dims[d];
    } else {
        if (imp_input_layer(im, n, 0, &x)) return -1;
        seen_shape(b, x, &in);
        seen = in;
        memmove(in.dims + 1, in.dims, (size_t)in.rank * sizeof *in.dims);
        in.dims[0] = 1; /* the batch broadcasts as itself */
        in.rank++;
        if (nsh > in.rank)
            return imp_fail(im,
                            "node '%s' (Expand): a shape of %d axes for an activation of %d: new leading axes would "
                            "move the batch axis",
                            imp_node_name(n), nsh, in.rank);
        R = in.rank;
    }
    /* NumPy's rule, right-aligned: equal, or 1 in one of them; the first axis the batch */
    for (int d = 0; d < R; d++) {
        const int di = d - (R - in.rank), ds = d - (R - nsh);
        const int64_t a = di >= 0 ? in.dims[di] : 1, s = ds >= 0 ? sh[ds] : 1;
        /* the batch: its symbol, the size the file fixes it to, or (an activation's) 1 */
        const int sb = is_batch(s) ||
                       (d == 0 && ((im->batch_dim > 0 && s == im->batch_dim) || (s == 1 && x->kind == V_LAYER)));
        if ((d == 0) != (sb && (!is_batch(s) || batch_k(s) == 1)) || (sb && d) || (!sb && (s < 1 || s > DIM_MAX)) ||
            (!sb && a != 1 && s != 1 && a != s) || a < 1)
            return imp_fail(im,
                            "node '%s' (Expand): input axis %d of %lld to %s: only a broadcast to the batch first and "
                            "constant sizes after it is supported",
                            imp_node_name(n), d, (long long)a, sb ? "the batch" : "a constant");
        if (d) to.dims[to.rank++] = (int)(a > s ? a : s);
    }
    if (x->kind == V_TENSOR) {
        if (binary_operand(im, b, n, 0, R - 1, &li)) return -1;
    } else li = as_seen(b, x, &seen);
    return define_output(im, n, model_build_expand(b, li, &to), 0);
}

/* Erf -> LAYER_ERF */
static int do_erf(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    if (n->n_input != 1) return imp_fail(im, "node '%s' (Erf): %zu inputs, want 1", imp_node_name(n), n->n_input);
    return define_output(im, n, model_build_unary(b, LAYER_ERF, x->layer, 0.0f), x->flat);
}

/* Identity: an alias of its input (a constant, or an activation), no layer */
static int do_identity(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (n->n_input == 1 && n->n_output == 1 && imp_input_tensor(im, n, 0)) {
        /* a constant under another name (the exporter's way of using one weight twice) */
        if (imp_check_attrs(im, n, none)) return -1;
        value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
        if (!v) return imp_fail(im, "out of memory");
        v->tensor = imp_input_tensor(im, n, 0);
        return 0;
    }
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    return define_output(im, n, x->layer, x->flat);
}

/* Relu -> LAYER_RELU */
static int do_relu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    return define_output(im, n, model_build_relu(b, x->layer), x->flat);
}

/* GlobalAveragePool of an image -> LAYER_GAP (its kernels are the plane's mean); of a
 * sequence (N, C, L), and GlobalMaxPool of either, -> the pool whose one window is the whole
 * plane (L x 1 for a sequence, as the pools run it): the output (N, C, 1, 1) or (N, C, 1). */
static int do_global_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    static const char *const none[] = {NULL};
    const value_t *x;
    int sp;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x) || !(sp = spatial_axes(im, b, n, x, 0)))
        return -1;
    if (kind == LAYER_AVGPOOL && sp == 2) return define_output(im, n, model_build_gap(b, x->layer), 0);
    int C, H, W;
    model_build_shape(b, x->layer, &C, &H, &W);
    const pool2d_desc_t g = {.KH = H, .KW = W, .sH = 1, .sW = 1, .dH = 1, .dW = 1};
    const int li = model_build_pool(b, kind, x->layer, &g);
    if (model_build_failed(b))
        return imp_fail(im, "node '%s' (%s): no pool over a %dx%dx%d input", imp_node_name(n), n->op_type, C, H, W);
    return define_output(im, n, li, 0);
}

/* LeakyRelu, Sigmoid, Tanh -> their elementwise layers */
static int do_activation(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    static const char *const known[] = {"alpha", NULL};
    if (imp_check_attrs(im, n, op[0] == 'L' ? known : none) || imp_input_layer(im, n, 0, &x)) return -1;
    const float alpha = imp_attr_float(n, "alpha", 0.01f);
    if (op[0] == 'L' && !(alpha >= 0.0f))
        return imp_fail(im, "node '%s' (LeakyRelu): alpha %g: a negative slope is not supported", imp_node_name(n),
                        alpha);
    const layer_kind_t k = op[0] == 'L' ? LAYER_LEAKY_RELU : op[0] == 'S' ? LAYER_SIGMOID : LAYER_TANH;
    return define_output(im, n, model_build_elementwise(b, k, x->layer, alpha), x->flat);
}

/* Clip -> LAYER_CLIP */
static int do_clip(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* the bounds: attributes up to opset 10, optional constant inputs from 11 (torch's
     * ReLU6 and Hardtanh) */
    static const char *const known[] = {"min", "max", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    float bound[2] = {imp_attr_float(n, "min", -INFINITY), imp_attr_float(n, "max", INFINITY)};
    if (n->n_input > 3) return imp_fail(im, "node '%s' (Clip): more than 3 inputs", imp_node_name(n));
    for (size_t i = 1; i < n->n_input; i++) {
        if (!n->input[i][0]) continue;
        const Onnx__TensorProto *t = imp_input_tensor(im, n, i);
        if (!t || imp_tensor_count(t) != 1 || imp_tensor_floats(im, t, &bound[i - 1], 1) != 0)
            return imp_fail(im, "node '%s' (Clip): %s must be a constant float scalar", imp_node_name(n),
                            i == 1 ? "min" : "max");
    }
    if (isnan(bound[0]) || isnan(bound[1])) return imp_fail(im, "node '%s' (Clip): a bound is NaN", imp_node_name(n));
    return define_output(im, n, model_build_clip(b, x->layer, bound[0], bound[1]), x->flat);
}

/* HardSigmoid, HardSwish -> their layers */
static int do_hard(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    static const char *const known[] = {"alpha", "beta", NULL};
    const int sig = op[4] == 'S' && op[5] == 'i';
    if (imp_check_attrs(im, n, sig ? known : none) || imp_input_layer(im, n, 0, &x)) return -1;
    if (!sig) return define_output(im, n, model_build_hardswish(b, x->layer), x->flat);
    const float alpha = imp_attr_float(n, "alpha", 0.2f), beta = imp_attr_float(n, "beta", 0.5f);
    if (!isfinite(alpha) || !isfinite(beta))
        return imp_fail(im, "node '%s' (HardSigmoid): alpha %g and beta %g must be finite", imp_node_name(n), alpha,
                        beta);
    return define_output(im, n, model_build_hardsigmoid(b, x->layer, alpha, beta), x->flat);
}

/* Mul -> LAYER_MUL, or broadcast (do_binary) */
static int do_mul(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* of two activations: the same shape, or a per-channel (C, 1, 1) one against a
     * (C, H, W) one (SiLU as x * Sigmoid(x), HardSwish as x * HardSigmoid(x),
     * squeeze-excitation's scale): LAYER_MUL; anything else broadcasts (do_binary) */
    const value_t *y;
    if (binary_attrs(im, n)) return -1;
    if (n->n_input != 2) return imp_fail(im, "node '%s' (Mul): %zu inputs, want 2", imp_node_name(n), n->n_input);
    if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BMUL);
    if (imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
    int C1, H1, W1, C2, H2, W2;
    model_shape_t s1, s2;
    model_build_shape(b, x->layer, &C1, &H1, &W1);
    model_build_shape(b, y->layer, &C2, &H2, &W2);
    model_build_shape_nd(b, x->layer, &s1);
    model_build_shape_nd(b, y->layer, &s2);
    const int same = model_shape_equal(&s1, &s2) && x->flat == y->flat;
    const int per_channel = C1 == C2 && s1.rank == s2.rank && !x->flat && !y->flat &&
                            ((H1 == 1 && W1 == 1) || (H2 == 1 && W2 == 1));
    /* the fast row where it applies, else the broadcasting one */
    if (!same && !per_channel) return do_binary(im, b, n, LAYER_BMUL);
    return define_output(im, n, model_build_mul(b, x->layer, y->layer), same && x->flat);
}

/* Dropout -> LAYER_DROPOUT (or none at ratio 0) */
static int do_dropout(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* ratio: an attribute up to opset 11, an optional constant input from 12; pacer drops
     * while training and not at evaluation, whatever the training_mode input says; the
     * mask output is never defined (no node may read it) */
    static const char *const known[] = {"ratio", "seed", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    float p = imp_attr_float(n, "ratio", 0.5f);
    if (n->n_input > 1 && n->input[1][0]) {
        const Onnx__TensorProto *r = imp_input_tensor(im, n, 1);
        if (!r || imp_tensor_count(r) != 1 || imp_tensor_floats(im, r, &p, 1) != 0)
            return imp_fail(im, "node '%s' (Dropout): ratio must be a constant float", imp_node_name(n));
    }
    if (n->n_input > 2 && n->input[2][0] && !imp_input_tensor(im, n, 2))
        return imp_fail(im, "node '%s' (Dropout): training_mode must be a constant", imp_node_name(n));
    if (!(p >= 0.0f && p < 1.0f))
        return imp_fail(im, "node '%s' (Dropout): ratio %g is not in [0, 1)", imp_node_name(n), p);
    /* ratio 0 (torchvision's ViT by default): the identity, no layer to copy through */
    if (p == 0.0f) return define_output(im, n, x->layer, x->flat);
    return define_output(im, n, model_build_elementwise(b, LAYER_DROPOUT, x->layer, p), x->flat);
}

/* Concat of activations -> a chain of LAYER_CONCAT */
static int do_concat(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    /* of activations along a non-batch axis (Concat of shapes was do_shape_op's): a
     * chain of two-input concatenations */
    static const char *const known[] = {"axis", NULL};
    size_t first = 0; /* the first activation: a parameter may come before it */
    int64_t cd[ARR_DIMS];
    while (first + 1 < n->n_input && concat_constant_dims(im, n, first, cd) >= 0) first++;
    if (imp_check_attrs(im, n, known)) return -1;
    if (n->n_input < 1 || imp_input_layer(im, n, first, &x))
        return imp_fail(im, "node '%s' (Concat): no inputs", imp_node_name(n));
    model_shape_t s0;
    model_build_shape_nd(b, x->layer, &s0);
    if (x->flat) { /* concat_operand reads it as one axis */
        for (int d = 1; d < s0.rank; d++) s0.dims[0] *= s0.dims[d];
        s0.rank = 1;
    }
    int64_t ax = imp_attr_int(n, "axis", 0);
    if (ax < 0) ax += s0.rank + 1;
    if (ax < 1 || ax > s0.rank || (x->flat && ax != 1))
        return imp_fail(im, "node '%s' (Concat): axis %lld: activations join along a non-batch axis only",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 0));
    int li = -1;
    for (size_t i = 0; i < n->n_input; i++) {
        int yl = -1;
        if (concat_operand(im, b, n, i, &s0, (int)ax - 1, &yl)) return -1;
        if (i == 0) {
            li = yl;
            continue;
        }
        model_shape_t s1, s2;
        char t1[96], t2[96];
        model_build_shape_nd(b, li, &s1);
        model_build_shape_nd(b, yl, &s2);
        if (s2.rank == s1.rank) s2.dims[ax - 1] = s1.dims[ax - 1]; /* the axis joined may differ */
        if (!model_shape_equal(&s1, &s2))
            return imp_fail(im, "node '%s' (Concat): input %zu is %s, the others %s (equal but for axis %lld)",
                            imp_node_name(n), i, imp_batch_text(&s2, t2, sizeof t2), imp_batch_text(&s1, t1, sizeof t1),
                            (long long)ax);
        li = model_build_concat_axis(b, li, yl, (int)ax - 1);
    }
    return define_output(im, n, li, n->n_input == 1 ? x->flat : 0);
}

/* Flatten: an alias seen flat */
static int do_flatten(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    static const char *const known[] = {"axis", NULL};
    if (imp_check_attrs(im, n, known) || imp_input_layer(im, n, 0, &x)) return -1;
    /* axis k of a rank R + 1 batch (negative: from the end) gives (N * the sizes of axes
     * 1 .. k - 1, the rest): axis 1's (N, rest) where those sizes are all 1; any other
     * merges the batch with other axes (axis 0: the whole batch one row) */
    model_shape_t s;
    model_build_shape_nd(b, x->layer, &s);
    const int R = x->flat ? 1 : s.rank;
    int64_t ax = imp_attr_int(n, "axis", 1);
    if (ax < 0) ax += R + 1;
    int merges = ax < 1 || ax > R + 1;
    for (int64_t d = 1; !merges && d < ax && !x->flat; d++) merges = s.dims[d - 1] != 1;
    if (merges)
        return imp_fail(im,
                        "node '%s' (Flatten): axis %lld merges the batch axis with others (axis 0 is the batch; "
                        "only axis 1, or one after axes of size 1, is supported)",
                        imp_node_name(n), (long long)imp_attr_int(n, "axis", 1));
    return define_output(im, n, x->layer, 1);
}

/* Add -> LAYER_ADD (or a MatMul's bias, or broadcast: do_binary) */
static int do_add(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    const value_t *x;
    const value_t *y;
    /* MatMul + Add(bias): the bias joins the MatMul's layer when nothing else reads the
     * MatMul's output and no layer came after it */
    const size_t mi = n->n_input == 2 && imp_input_tensor(im, n, 0) ? 1 : 0; /* either order */
    const value_t *mm = n->n_input == 2 ? imp_find_value(im, n->input[mi]) : NULL;
    const Onnx__TensorProto *bias = n->n_input == 2 ? imp_input_tensor(im, n, 1 - mi) : NULL;
    if (mm && mm->kind == V_LAYER && mm->matmul && bias) {
        int C, H, last = mm->layer;
        model_shape_t ms;
        model_build_shape_nd(b, mm->layer, &ms);
        C = ms.dims[ms.rank - 1]; /* the outputs: the last axis (rank 1 for LAYER_FC) */
        if (binary_attrs(im, n)) return -1;
        if (bias->n_dims != 1 || bias->dims[0] != C || uses(im, n->input[mi]) != 1 ||
            model_build_shape(b, last + 1, &H, &H, &H) == 0)
            return imp_fail(im,
                            "node '%s' (Add): a bias after MatMul must be a 1-D initializer of %d values read "
                            "right after it",
                            imp_node_name(n), C);
        if (imp_weight_name_ok(im, n, 1 - mi)) return -1;
        model_build_fc_bias(b, mm->layer, n->input[1 - mi]);
        return define_output(im, n, mm->layer, 0);
    }
    if (const_input(im, n, 0) || const_input(im, n, 1)) return do_binary(im, b, n, LAYER_BADD);
    if (binary_attrs(im, n) || imp_input_layer(im, n, 0, &x) || imp_input_layer(im, n, 1, &y)) return -1;
    if (x->kind == V_PADDED) {
        const value_t *t = x;
        x = y;
        y = t;
    }
    if (x->kind == V_PADDED) return imp_fail(im, "node '%s' (Add): both inputs are Pads of channels", imp_node_name(n));
    int C1, H1, W1, C2, H2, W2;
    model_build_shape(b, x->layer, &C1, &H1, &W1);
    model_build_shape(b, y->layer, &C2, &H2, &W2);
    if (y->kind == V_PADDED) {
        /* x + channels of y zero-padded: LAYER_ADD's shortcut, whose C channels sit at
         * offset (OC - C) / 2 */
        const int64_t OC = (int64_t)C2 + y->cpads[0] + y->cpads[1]; /* each below 2^31 */
        if (OC != C1 || y->cpads[0] != (OC - C2) / 2 || H1 != H2 || W1 != W2 || x->layer < 0 || y->layer < 0)
            return imp_fail(im,
                            "node '%s' (Add): a shortcut of %d channels padded by %d before and %d after must "
                            "give the other input's %dx%dx%d with the padding split evenly (more after)",
                            imp_node_name(n), C2, y->cpads[0], y->cpads[1], C1, H1, W1);
        return define_output(im, n, model_build_add(b, x->layer, y->layer), x->flat);
    }
    model_shape_t s1, s2;
    model_build_shape_nd(b, x->layer, &s1);
    model_build_shape_nd(b, y->layer, &s2);
    /* two activations of one shape: the residual add (fused where it can be) */
    if (!model_shape_equal(&s1, &s2) || x->layer < 0 || y->layer < 0 || x->flat != y->flat)
        return do_binary(im, b, n, LAYER_BADD);
    return define_output(im, n, model_build_add(b, x->layer, y->layer), x->flat);
}

/* Constant -> a value */
static int do_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    static const char *const known[] = {"value", NULL};
    if (imp_check_attrs(im, n, known)) return -1;
    const Onnx__AttributeProto *a = imp_attr(n, "value");
    if (!a || !a->t || n->n_output < 1)
        return imp_fail(im, "node '%s' (Constant): only a tensor 'value' is supported", imp_node_name(n));
    value_t *v = imp_add_value(im, n->output[0], V_TENSOR);
    if (!v) return imp_fail(im, "out of memory");
    v->tensor = a->t;
    v->constant_node = 1;
    return 0;
}

/* Pow's exponent as one finite float into *a: a constant of one float32 or int64 value; 0,
 * or -1 (a tensor of another size, or no constant: the broadcasting LAYER_BPOW's). */
static int pow_scalar(imp_t *im, const Onnx__NodeProto *n, float *a)
{
    const Onnx__TensorProto *t = n->n_input == 2 ? imp_input_tensor(im, n, 1) : NULL;
    int64_t v;
    if (!t || imp_tensor_count(t) != 1) return -1;
    if (imp_tensor_ints(t, &v, 1) == 1) return *a = (float)v, 0;
    return t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && imp_tensor_floats(im, t, a, 1) == 0 && isfinite(*a)
               ? 0
               : -1;
}

/* Pow's exponent an int64 initializer that only Pow nodes read as their exponent: its values
 * as a folded array of floats (V_ARRAY, each exact: at most 2^24 in magnitude), which the
 * broadcasting Pow reads as a constant operand like a float one; anything else is left as
 * it is (a binary operand's refusal of its type then says why). */
static void pow_int_exponent(imp_t *im, const Onnx__NodeProto *n)
{
    enum { MAX_EXPONENTS = 1 << 16 };
    value_t *v = imp_find_value(im, n->input[1]);
    const Onnx__NodeProto *r[8];
    const int k = imp_readers(im, n->input[1], r, 8);
    if (!v || v->kind != V_TENSOR || !v->tensor->has_data_type ||
        v->tensor->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || v->tensor->n_dims > 8 || k < 1 || k > 8)
        return;
    for (int i = 0; i < k; i++)
        if (!r[i]->op_type || strcmp(r[i]->op_type, "Pow") != 0 || r[i]->n_input != 2 ||
            strcmp(r[i]->input[0], n->input[1]) == 0)
            return;
    const int64_t cnt = imp_tensor_count(v->tensor);
    if (cnt < 1 || cnt > MAX_EXPONENTS) return;
    int64_t *ints = malloc((size_t)cnt * sizeof *ints);
    double *arr = malloc((size_t)cnt * sizeof *arr);
    int ok = ints && arr && imp_tensor_ints(v->tensor, ints, (int)cnt) == cnt;
    for (int64_t i = 0; ok && i < cnt; i++) {
        ok = ints[i] >= -DIM_MAX && ints[i] <= DIM_MAX;
        arr[i] = (double)ints[i];
    }
    free(ints);
    if (!ok) {
        free(arr);
        return;
    }
    v->kind = V_ARRAY;
    v->arr = arr;
    v->acount = (size_t)cnt;
    v->afloat = 1;
    v->arank = (int)v->tensor->n_dims;
    for (int d = 0; d < v->arank; d++) v->adims[d] = v->tensor->dims[d];
}

/* functions of one input (the table's unary rows); Pow's exponent a constant scalar (any
 * other exponent: the broadcasting LAYER_BPOW) */
static int do_unary_kind(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind)
{
    static const char *const none[] = {NULL};
    const char *op = n->op_type;
    const value_t *x;
    if (imp_check_attrs(im, n, none) || imp_input_layer(im, n, 0, &x)) return -1;
    float a = 0.0f;
    if (kind == LAYER_POW) {
        if (n->n_input != 2) return imp_fail(im, "node '%s' (Pow): %zu inputs, want 2", imp_node_name(n), n->n_input);
        if (pow_scalar(im, n, &a) != 0) {
            pow_int_exponent(im, n);
            return do_binary(im, b, n, LAYER_BPOW);
        }
    } else if (n->n_input != 1)
        return imp_fail(im, "node '%s' (%s): %zu inputs, want 1", imp_node_name(n), op, n->n_input);
    return define_output(im, n, model_build_unary(b, kind, x->layer, a), x->flat);
}

static int do_squeeze_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n) { return do_squeeze(im, b, n, 0); }
static int do_unsqueeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n) { return do_squeeze(im, b, n, 1); }

/* Div: torch 1.13's nn.GELU nodes start with one (match_gelu), else broadcast */
static int do_div(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    int rc;
    if (n->n_input == 2 && (rc = match_gelu(im, b, n)) != 1) return rc;
    return do_binary(im, b, n, LAYER_DIV);
}

/* ReduceMean: nn.LayerNorm's nodes start with one (match_layernorm), else do_reduce */
static int do_reduce_mean(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    int rc;
    if (n->n_input == 1 && (rc = match_layernorm(im, b, n)) != 1) return rc;
    return do_reduce(im, b, n);
}

/* Einsum -> the MatMul or Transpose its equation spells (model/onnx/einsum.c), each run
 * through do_node */
static int do_einsum_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    return do_einsum(im, b, n, do_node);
}

/* MatMul of two activations -> LAYER_BMM, else by a weight (do_matmul) */
static int do_matmul_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    if (n->n_input == 2 && imp_input_layer(im, n, 0, NULL) == 0 && imp_input_layer(im, n, 1, NULL) == 0)
        return do_bmm(im, b, n);
    return do_matmul(im, b, n);
}

/* The importer's translation of each ONNX operator (of the default domain) that do_shape_op
 * and the folding above did not take, by op type, sorted for bsearch; the operator table's
 * PLAIN rows (plain_row) have none. */
typedef struct {
    const char *op;
    int (*import)(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
    /* or, where one translation serves several operators (the unary functions, the
     * broadcasting binaries, the pools), it and the layer kind this operator becomes */
    int (*import_kind)(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind);
    layer_kind_t kind;
} node_import_t;
static const node_import_t NODE_IMPORTS[] = {
    {"Add", .import = do_add},
    {"AveragePool", .import_kind = do_pool, .kind = LAYER_AVGPOOL},
    {"BatchNormalization", .import = do_bn},
    {"Clip", .import = do_clip},
    {"Concat", .import = do_concat},
    {"Constant", .import = do_constant},
    {"Conv", .import = do_conv},
    {"Div", .import = do_div},
    {"Dropout", .import = do_dropout},
    {"Einsum", .import = do_einsum_node},
    {"Erf", .import = do_erf},
    {"Expand", .import = do_expand},
    {"Flatten", .import = do_flatten},
    {"Gemm", .import = do_gemm},
    {"GlobalAveragePool", .import_kind = do_global_pool, .kind = LAYER_AVGPOOL},
    {"GlobalMaxPool", .import_kind = do_global_pool, .kind = LAYER_MAXPOOL},
    {"HardSigmoid", .import = do_hard},
    {"HardSwish", .import = do_hard},
    {"Identity", .import = do_identity},
    {"LayerNormalization", .import = do_layernorm},
    {"LeakyRelu", .import = do_activation},
    {"LogSoftmax", .import = do_softmax},
    {"MatMul", .import = do_matmul_node},
    {"MaxPool", .import_kind = do_pool, .kind = LAYER_MAXPOOL},
    {"Mul", .import = do_mul},
    {"Pad", .import = do_pad},
    {"Pow", .import_kind = do_unary_kind, .kind = LAYER_POW},
    {"ReduceMean", .import = do_reduce_mean},
    {"ReduceSum", .import = do_reduce},
    {"Relu", .import = do_relu},
    {"Reshape", .import = do_reshape},
    {"Sigmoid", .import = do_activation},
    {"Slice", .import = do_slice},
    {"Softmax", .import = do_softmax},
    {"Split", .import = do_split},
    {"Squeeze", .import = do_squeeze_node},
    {"Tanh", .import = do_activation},
    {"Transpose", .import = do_transpose},
    {"Unsqueeze", .import = do_unsqueeze},
};

/* The operator table's PLAIN row importing op (op_table.h: one node, no attributes, which
 * the shared unary and broadcasting translations take), or NULL. */
static const model_op_t *plain_row(const char *op)
{
    for (int k = 0; k < LAYER_KIND_COUNT; k++)
        if (MODEL_OPS[k].onnx_form == MODEL_OP_ONNX_PLAIN && strcmp(MODEL_OPS[k].onnx_import, op) == 0)
            return &MODEL_OPS[k];
    return NULL;
}

static int node_import_cmp(const void *key, const void *row)
{
    return strcmp((const char *)key, ((const node_import_t *)row)->op);
}

int do_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n)
{
    if (!n->op_type || !n->op_type[0]) return imp_fail(im, "node '%s': no operator", imp_node_name(n));
    if (fused_away(im, n)) return 0;
    const char *op = n->op_type;
    if (n->domain && strcmp(n->domain, "ai.pacer") == 0) return do_pacer_node(im, b, n);
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return imp_fail(im, "node '%s' (%s): operator domain '%s' is not supported", imp_node_name(n), op, n->domain);
    if (n->n_output < 1 || !n->output[0][0]) return imp_fail(im, "node '%s' (%s): no output", imp_node_name(n), op);
    int rc = fold_array(im, n);
    if (rc != 1) return rc;
    rc = view_node(im, b, n, do_node);
    if (rc != 1) return rc;
    if (mixed_lead(im, n))
        return imp_fail(im,
                        "node '%s' (%s): reads values whose batch axes hold different things (one a Reshape to (N * "
                        "k, ...), one not)",
                        imp_node_name(n), op);
    rc = lm_node(im, b, n);
    if (rc != 1) return rc;
    const value_t *g0 = op_is(n, "Gather") && n->n_input > 0 ? imp_find_value(im, n->input[0]) : NULL;
    if (g0 && g0->kind == V_LAYER) return do_gather(im, b, n);
    rc = do_shape_op(im, b, n);
    if (rc != 1) return rc;
    const node_import_t *row = bsearch(op, NODE_IMPORTS, sizeof NODE_IMPORTS / sizeof NODE_IMPORTS[0],
                                       sizeof NODE_IMPORTS[0], node_import_cmp);
    if (row) return row->import ? row->import(im, b, n) : row->import_kind(im, b, n, row->kind);
    const model_op_t *plain = plain_row(op);
    if (plain) return plain->ninputs == 2 ? do_binary(im, b, n, plain->kind) : do_unary_kind(im, b, n, plain->kind);
    return imp_fail(im,
                    "node '%s': operator %s is not supported (`pacer-worker --list-ops` lists the operators that import, "
                    "as does docs/JOB_SPEC.md, \"What imports\")",
                    imp_node_name(n), op);
}
