/* model/onnx/nodes_common.h - what the node translations of nodes_*.c share: a node's
 * output defined as a layer's value, a named scalar constant, the pattern matchers' probes
 * (op_is, sole_reader, scalar_value, is_op_scalar) and a value's shape as the graph sees
 * it (model/onnx/nodes_common.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_NODES_COMMON_H
#define PACER_MODEL_ONNX_NODES_COMMON_H

#include "import_internal.h"

/* a node's first output as layer li (flat: seen as (N, C*H*W)); further named outputs refused */
int define_output(imp_t *im, const Onnx__NodeProto *n, int li, int flat);

/* a frozen one-element constant named "<of>/<what>" (its layer in *li) */
int scalar_constant(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n, const char *of, const char *what, float f,
                    int *li);

/* the pattern matchers' probes: a node's operator, the one node reading a value, a float scalar value, an operator with a scalar operand */
int op_is(const Onnx__NodeProto *n, const char *op);
const Onnx__NodeProto *sole_reader(const imp_t *im, const char *name);
int scalar_value(imp_t *im, const char *name, float *f);
int is_op_scalar(imp_t *im, const Onnx__NodeProto *n, const char *op, const char *a, float v);

/* a value's per-sample shape as the graph sees it (a flattened one has one axis), and its layer reshaped to that shape where its own differs */
void seen_shape(model_builder_t *b, const value_t *x, model_shape_t *s);
int as_seen(model_builder_t *b, const value_t *x, const model_shape_t *s);

#endif
