/* model/onnx/view.h - views: a layer's batch-first output read another way after a Transpose that moved the batch axis, a Reshape that merged it or a Concat that joined it (view_t, import_internal.h) (model/onnx/view.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_VIEW_H
#define PACER_MODEL_ONNX_VIEW_H

#include "import_internal.h"

int view_is_plain(const view_t *v);
const char *view_text(const view_t *v, char *buf, size_t len);
void view_normal(model_builder_t *b, int *li, view_t *v);
/* Most axes of a Concat's constant operand concat_constant_dims reports */
#define ARR_DIMS 8
int concat_constant_dims(imp_t *im, const Onnx__NodeProto *n, size_t i, int64_t *dims);
int concat_operand(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, size_t i, const model_shape_t *like, int ax,
                   int *li);
/* A node's translation (nodes.c's do_node), which view_node runs on the physical layers of
 * an elementwise node's viewed inputs: passed in, so that views need not know nodes.c. */
typedef int (*view_translate_fn)(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);
int view_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, view_translate_fn translate);

#endif
