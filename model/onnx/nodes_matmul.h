/* model/onnx/nodes_matmul.h - the translations of the matrix products: Gemm, MatMul by a
 * weight (LAYER_FC, LAYER_LINEAR) and MatMul of two activations (LAYER_BMM)
 * (model/onnx/nodes_matmul.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_MATMUL_H
#define PACER_MODEL_ONNX_NODES_MATMUL_H

#include "import_internal.h"

/* each translates one node into layers (0), or refuses it (-1) */
int do_gemm(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_matmul_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
