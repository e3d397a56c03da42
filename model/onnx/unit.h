/* model/onnx/unit.h - a graph of fixed shapes read as one sample (model/onnx/unit.c): every
 * value gets a leading axis of 1, the batch, so that the graph's own axis 0 is a sample axis
 * like any other and a node may join, split, move or reduce it.
 *
 * pacer's activations are batches (N, ...) whose axis 0 no layer touches. A graph whose
 * every input has a fixed shape (a conformance case, an export at batch 1) has no batch
 * axis of its own: run as one sample of batch 1, each of its tensors (d0, d1, ...) is the
 * sample (d0, d1, ...) of a batch (1, d0, d1, ...). unit_rewrite gives the importer that
 * graph: the nodes whose meaning depends on the rank (their axes, perms, shapes and pads)
 * counted one further, the others as they are (NumPy's broadcasting aligns shapes on their
 * last axes, which the leading 1 leaves in place), Gemm as MatMul, Mul and Add. A node
 * whose rewrite needs a shape the graph does not give, or an operator that only works on
 * batches of images (Conv, the pools, batch norm), is refused by name. */
#ifndef PACER_MODEL_ONNX_UNIT_H
#define PACER_MODEL_ONNX_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

typedef struct unit unit_t;

/* A value whose shape the rewrite knows (a graph input's: the case gives its data). */
typedef struct {
    const char *name;
    int ndims;
    const int64_t *dims;
} unit_shape_t;

/* The rewrite of graph g (opset: the ai.onnx opset it imports) whose inputs have the shapes
 * known[0..nknown): the nodes in *nodes (*n_nodes of them), the integer constants the
 * rewritten nodes read (axes, shapes) in *inits (*n_inits), and graph output `output`'s
 * value info with its leading 1 in *out_vi; all owned by *out (unit_free). Constants are
 * looked up among inits0[0..n_inits0) (the graph's initializers and the case's bound
 * inputs) and g's Constant nodes. 0, or -1 with err set and *out NULL. */
int unit_rewrite(const Onnx__GraphProto *g, int64_t opset, Onnx__TensorProto *const *inits0, size_t n_inits0,
                 const unit_shape_t *known, int nknown, size_t output, unit_t **out, Onnx__NodeProto ***nodes,
                 size_t *n_nodes, Onnx__TensorProto ***inits, size_t *n_inits, Onnx__ValueInfoProto **out_vi, char *err,
                 size_t errlen);
void unit_free(unit_t *u);

#endif
