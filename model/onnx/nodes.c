/* model/onnx/nodes.c - see nodes.h.
 *
 * The ModelProto is decoded by protobuf-c (code generated at build time from python3-onnx's
 * onnx.proto, Makefile). The graph's nodes are visited once, in file order (ONNX requires
 * topological order), and each node becomes zero or more layers through model.h's builder:
 *   Conv -> LAYER_CONV (any stride, pads incl. auto_pad, dilation, groups; of a volume:
 *     the depth taps' planes stacked into the channels, conv_volume);
 *   ConvTranspose -> LAYER_CONV_TRANSPOSE (images and sequences: strides, pads, dilations,
 *     groups, output_padding, output_shape and auto_pad);
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
 *
 * This file is the dispatch (do_node and the NODE_IMPORTS table); the translations live by
 * operator family, each calling only nodes_common.c and the importer's lower files, so the
 * files form no circle of calls: nodes_conv.c (Conv, the pools, Pad), nodes_shape.c (data
 * movement and shape arithmetic), nodes_math.c (elementwise), nodes_norm.c (the
 * normalisations, Softmax), nodes_matmul.c (Gemm, MatMul).
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
#include "nodes_common.h"
#include "nodes_conv.h"
#include "nodes_math.h"
#include "nodes_matmul.h"
#include "nodes_norm.h"
#include "nodes_shape.h"

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

/* The importer's translation of each ONNX operator (of the default domain) that do_shape_op
 * and the folding (fold_array) did not take, by op type, sorted for bsearch; the operator table's
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
    {"ConvTranspose", .import = do_conv_transpose},
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
