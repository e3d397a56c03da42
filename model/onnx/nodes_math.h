/* model/onnx/nodes_math.h - the translations of the elementwise operators: Add, Sub, Mul,
 * Div (broadcasting, or fused shortcuts), the functions of one input (Relu, LeakyRelu,
 * Sigmoid, Tanh, Clip, HardSigmoid, HardSwish, Erf, Pow and the table's plain rows), torch
 * 1.13's GELU pattern, Dropout and ai.pacer's StochasticDepth (model/onnx/nodes_math.c;
 * the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_MATH_H
#define PACER_MODEL_ONNX_NODES_MATH_H

#include "import_internal.h"

/* each translates one node into layers (0), or refuses it (-1); the _kind ones become the layer kind given */
int do_binary(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind);
int do_unary_kind(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind);
int do_add(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_mul(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_div(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_relu(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_activation(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_clip(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_hard(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_erf(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_dropout(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

/* a node of the ai.pacer domain (StochasticDepth) */
int do_pacer_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
