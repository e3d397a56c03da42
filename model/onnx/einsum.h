/* model/onnx/einsum.h - Einsum as the MatMul or Transpose its equation spells (attention
 * written with torch.einsum: MaxViT's "B G H I D, B G H J D -> B G H I J") (model/onnx/einsum.c;
 * the importer's files only). */
#ifndef PACER_MODEL_ONNX_EINSUM_H
#define PACER_MODEL_ONNX_EINSUM_H

#include "import_internal.h"
#include "view.h"

/* Einsum node n through translate (nodes.c's do_node, passed in so that einsum.c calls
 * nothing of nodes.c): 0, or -1 with the reason (imp_fail). */
int do_einsum(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, view_translate_fn translate);

#endif
