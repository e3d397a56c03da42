/* model/onnx/nodes_shape.h - the translations of the data-movement and shape operators:
 * Reshape, Squeeze, Unsqueeze, Flatten, Identity, Transpose, Slice, Split, Gather of an
 * activation, Expand, Concat, ReduceMean and ReduceSum, Constant, and the shape arithmetic
 * folded into values (do_shape_op) (model/onnx/nodes_shape.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_SHAPE_H
#define PACER_MODEL_ONNX_NODES_SHAPE_H

#include "import_internal.h"

/* each translates one node into layers or values (0), or refuses it (-1); do_shape_op returns 1 for a node it does not fold */
int do_reshape(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_shape_op(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_slice(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_split(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_reduce(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_gather(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_expand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_identity(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_concat(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_flatten(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_squeeze_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_unsqueeze(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
