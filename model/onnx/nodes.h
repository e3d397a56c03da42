/* model/onnx/nodes.h - node translation: each ONNX node into zero or more layers through model.h's builder (model/onnx/nodes.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_H
#define PACER_MODEL_ONNX_NODES_H

#include "import_internal.h"

int do_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
