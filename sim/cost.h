/* sim/cost.h - the compute-cost model of a simulated rank: floating-point operations per
 * sample of a model (a multiply-add is 2 operations), and of one optimizer step.
 *
 * Deterministic simulations charge these instead of timing the real computation, and
 * pacer-platform turns a measured speed (samples/s of a node profile) into a host speed
 * (flop/s) with them, so a profiled node computes at its measured rate in the
 * simulation. The figures are a model's catalog entry (common/catalog.h), the one path of
 * every graph, built in or imported: the operator table's FLOPs per sample of each row
 * (model/op_table.c) summed by model_describe (model/model.c), which the built-in rows are
 * generated from (tools/catalog_rows.c) and an imported model's entry is made by; the
 * memory estimate (common/memest.c) reads the same entry. Training (forward + backward)
 * counts 3x the forward pass, the usual estimate (backward computes the input and the
 * weight gradients, each about as costly as the forward pass). */
#ifndef PACER_SIM_COST_H
#define PACER_SIM_COST_H

#include "catalog.h"
#include "model.h"
#include "spec.h"

/* Forward pass of one sample. */
double cost_forward_flops(const catalog_model_t *m);
/* Forward + backward of one sample. */
double cost_train_flops(const catalog_model_t *m);

/* The optimizers' update rules (kernels/cpu/optim.c), each with its operations per
 * parameter counted from its formula there, grad_scale included:
 *   sgd           d = gs*g + wd*w; w -= lr*d                                   5
 *   sgd_momentum  d as sgd; u = mu*u + d; w -= lr*u                           7
 *   sgd_nesterov  d, u as sgd_momentum; w -= lr*(d + mu*u)                    9
 *   adamw         gs*g; w*(1 - lr*wd); m = b1*m + c1*g; v = b2*v + c2*g*g;
 *                 w -= step * m / (sqrt(v)/bc2 + eps)                        15
 * optimizer.clip_norm adds the gradient's sum of squares, 2 per parameter. */
typedef enum { COST_SGD, COST_SGD_MOMENTUM, COST_SGD_NESTEROV, COST_ADAMW, COST_OPTIMIZER_N } cost_optimizer_t;
/* The rule s's optimizer section selects. */
cost_optimizer_t cost_optimizer_of(const job_spec_t *s);
/* Its name as above ("sgd_momentum"), and its operations per parameter. */
const char *cost_optimizer_name(cost_optimizer_t o);
double cost_optimizer_flops_per_param(cost_optimizer_t o);
/* One optimizer step over every parameter of m as s trains it (its rule, and clipping). */
double cost_update_flops(const catalog_model_t *m, const job_spec_t *s);

/* m's catalog figures (model_describe), computed once per model and kept: what a
 * simulated rank charges each step with (no formatting or layer walk inside a step). The
 * pointer stays valid until the next call for another model. */
const catalog_model_t *cost_figures(const model_t *m);

#endif
