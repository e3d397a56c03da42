/* model/onnx/nodes_norm.h - the translations of the normalisations: BatchNormalization,
 * LayerNormalization and torch 1.13's nn.LayerNorm nodes (match_layernorm), Softmax and
 * LogSoftmax (model/onnx/nodes_norm.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_NORM_H
#define PACER_MODEL_ONNX_NODES_NORM_H

#include "import_internal.h"

/* each translates one node into layers (0), or refuses it (-1); match_layernorm returns 1 where the nodes from n are not nn.LayerNorm's */
int do_bn(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int match_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_layernorm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_softmax(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
