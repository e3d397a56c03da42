/* model/onnx/lm.h - the language models' translations (model/onnx/lm.c; the importer's
 * files only): an embedding Gather of the integer token ids, attention's causal mask
 * (Where(mask, -inf, scores) then Softmax: one LAYER_CAUSAL_SOFTMAX), and the output
 * projection tied to an embedding's table (MatMul by its Transpose). */
#ifndef PACER_MODEL_ONNX_LM_H
#define PACER_MODEL_ONNX_LM_H

#include "import_internal.h"

/* n translated when it is one of the above: 0, -1 with the reason (imp_fail), or 1 when n
 * is none of them (the general translations take it). */
int lm_node(imp_t *im, model_builder_t *b, const Onnx__NodeProto *n);

#endif
