/* model/onnx/fold.h - constant folding: small int vectors (the shape arithmetic of x.view(x.size(0), -1)) and N-D constant tensors computed at import (arr_t: Swin's masks and indices) (model/onnx/fold.c; the importer's files only). */
#ifndef PACER_MODEL_ONNX_FOLD_H
#define PACER_MODEL_ONNX_FOLD_H

#include "import_internal.h"

int64_t slice_bound_step(int64_t v, int64_t dim, int64_t step);
int fold_ints(imp_t *im, const Onnx__NodeProto *n);
int fold_shape_arith(imp_t *im, const Onnx__NodeProto *n);
/* op (Add, Sub, Mul, Div, Equal, Mod) of shape values, either the batch as k N + c
 * (is_symbolic): the result, or INT64_MAX where it is no such value (fold_shape_arith's
 * rule; here for tests/unit/test_onnx_import.c too) */
int64_t fold_sym_arith(const char *op, int64_t u, int64_t v);
int fold_array(imp_t *im, const Onnx__NodeProto *n);

#endif
