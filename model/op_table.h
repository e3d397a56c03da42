/* model/op_table.h - the operator table: one row per layer kind of model.h, indexed by the
 * kind. A row is everything model/ knows about a kind apart from how a builder takes its
 * arguments: its name, the ONNX operators it is imported from and exported as, how many
 * inputs it reads and which of them get a gradient, its shape inference, workspace and
 * FLOPs, and its CPU forward and backward. model_forward and model_backward (model.c) are
 * loops over the layers calling these; the CUDA backend has a table of the same length
 * (model/model_cuda.cu); the ONNX importer's list of supported operators is generated from
 * the onnx_import column and the exporter writes the onnx_export column.
 *
 * Adding a kind: a value before LAYER_KIND_COUNT in model.h (with a member of layer_t's op
 * for its parameters when no family's fits), a row here (the
 * _Static_assert in op_table.c and test_op_table's table walk refuse a missing one), a row
 * in model_cuda.cu's table (NULL entries: "not on the GPU", refused by cuda_model_create),
 * its builder in model.c (a PLAIN kind of one input: model_build_unary's already), its
 * converter entries unless the row is PLAIN (onnx_form below), and its case in
 * test_op_table's table walk.
 */
#ifndef PACER_OP_TABLE_H
#define PACER_OP_TABLE_H

#include "model.h"

/* One layer's step. i: the layer's index in m->layers; x: the model input (B, C, H, W).
 * forward: writes the layer's output (train: batch-norm mode, running statistics and
 * dropout masks). backward: after a training forward on the same x and B; adds (or, where
 * the layer is its input's grad_setter, writes) its inputs' gradients and writes its
 * parameters' gradients. Neither allocates. */
typedef void (*model_op_forward_fn)(model_t *m, int i, const float *x, int B, int train);
typedef void (*model_op_backward_fn)(model_t *m, int i, const float *x, int B);

/* How the ONNX converter translates a row (onnx_form). OWN: by functions of its own, named
 * in the importer's NODE_IMPORTS (model/onnx/nodes.c, by ONNX op type) and the exporter's
 * EXPORTS (model/onnx_export.c, by kind). PLAIN: one node of the row's one operator
 * (onnx_import, the same as onnx_export) over the row's inputs, with no attributes, both
 * ways: the converter's shared translations take it with no entry of its own there, so
 * such a kind is its row here, its kernels and its tests. */
typedef enum { MODEL_OP_ONNX_OWN, MODEL_OP_ONNX_PLAIN } model_op_onnx_t;

/* Which inputs of a layer get a gradient (grad_inputs): in, in2. */
#define MODEL_OP_GRAD_IN 1u
#define MODEL_OP_GRAD_IN2 2u

typedef struct {
    layer_kind_t kind; /* the row's own index (checked by test_model's table walk) */
    const char *name;  /* "conv", "residual add": bench/layer_profile, test output */
    /* The ONNX operators this kind is imported from, as the importer's list of supported
     * operators shows them ("Gemm, MatMul (+ Add)"), and the one it is exported as. */
    const char *onnx_import;
    const char *onnx_export;
    int ninputs;          /* 1: in; 2: in and in2 */
    unsigned grad_inputs; /* MODEL_OP_GRAD_* */
    /* Output shape l->shape from the input's (in; its folding already in l's C, H, W), the
     * second input's (in2; NULL for one-input kinds) and the layer's descriptor; may
     * normalise the descriptor. The builder folds l->shape into (OC, OH, OW). 0, or -1
     * for a shape or geometry this kind cannot take (convolutions and pools: rank 3 only). */
    int (*infer_shape)(layer_t *l, const model_shape_t *in, const model_shape_t *in2);
    /* Floats of the shared workspace the layer needs at batch B (NULL: none). */
    size_t (*workspace)(const layer_t *l, int B);
    /* Forward FLOPs of one sample (model_forward_flops's rules). */
    double (*flops)(const layer_t *l);
    model_op_forward_fn forward;
    model_op_backward_fn backward;
    model_op_onnx_t onnx_form;
    /* The member of layer_t's op that holds this kind's parameters, the only one its
     * builder, shape inference and kernels write or read (LAYER_PARAMS_NONE: none);
     * test_op_table checks that a built layer of the kind has nothing outside it. */
    layer_params_t params;
} model_op_t;

/* Indexed by layer_kind_t; LAYER_KIND_COUNT rows (op_table.c asserts it). */
extern const model_op_t MODEL_OPS[];

/* The bytes of layer_t's op that family p uses (0 for LAYER_PARAMS_NONE or a value that is
 * none): a layer's builder leaves the rest as add_layer zeroed them. */
size_t model_op_params_bytes(layer_params_t p);

/* The row of kind k, or NULL for a value that is no kind. */
const model_op_t *model_op(layer_kind_t k);

/* Writes the onnx_import column of every row, then extra (the importer's graph-level
 * operators; NULL: none), separated by ", ", into buf (cut to len, always terminated).
 * Returns the length of the whole list, as snprintf does: len > that holds it uncut. */
size_t model_op_onnx_names(char *buf, size_t len, const char *extra);

#endif
