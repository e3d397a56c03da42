/* model/plan.h - how a model's graph runs, planned from what it is: the passes over a built
 * layer list that decide the fusions (a layer folded into the next, view chains read in
 * place, a causal softmax's matrix products, a GPT's attention run in one pass, tied
 * embeddings), where gradients are set rather than added, which layers need a backward
 * (frozen tensors, model_t's grad_needed), the tensors each layer reads, the parameters
 * weight decay skips, the activation gradients' places in their arena, and the positions
 * a sample's output holds. model.c builds the list, runs these once (and the gradient
 * routing before each backward) and runs the graph by what they marked. */
#ifndef PACER_MODEL_PLAN_H
#define PACER_MODEL_PLAN_H

#include "model.h"

/* The fusions and gradient routing of a built model, in their order (each reads the marks
 * of those before it): fused layers, set gradients, view chains, tied embeddings, causal
 * products, fused attention. */
void model_plan_fusions(model_t *m);
/* model_t's positions: the last layer's elements per sample over the classes; 0, or -1
 * when they do not divide or the last axis is not the classes'. */
int model_plan_positions(model_t *m);
/* tensor_info_t's no_decay for every 1-D parameter; 0, or -1 (out of memory). */
int model_plan_no_decay(model_t *m);
/* model_t's layer_tensor: each layer's weight and bias tensor; 0, or -1 (out of memory). */
int model_plan_tensors(model_t *m);
/* model_t's grad_needed from the tensors' no_update (which may change between backwards). */
void model_plan_grads(model_t *m);
/* The activation gradients' offsets in their arena (model_t's dact_off, dact_floats); 0, or
 * -1 (out of memory). */
int model_plan_dacts(model_t *m);

#endif
