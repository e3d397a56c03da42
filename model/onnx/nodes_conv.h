/* model/onnx/nodes_conv.h - the translations of the windowed operators: Conv, ConvTranspose, MaxPool and
 * AveragePool (of images, sequences and volumes), GlobalAveragePool and GlobalMaxPool, and
 * Pad (model/onnx/nodes_conv.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_CONV_H
#define PACER_MODEL_ONNX_NODES_CONV_H

#include "import_internal.h"

/* Conv -> LAYER_CONV; MaxPool / AveragePool -> their pools (kind); Pad; the global pools (kind) */
int do_conv(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
/* ConvTranspose -> LAYER_CONV_TRANSPOSE */
int do_conv_transpose(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind);
int do_pad(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int do_global_pool(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, layer_kind_t kind);

#endif
