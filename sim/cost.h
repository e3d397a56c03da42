/* sim/cost.h - the compute-cost model of a simulated rank: floating-point operations per
 * sample of a model, counted from its layer list (a multiply-add is 2 operations).
 *
 * Deterministic simulations charge these instead of timing the real computation, and
 * pacer-platform turns a measured speed (samples/s of a node profile) into a host speed
 * (flop/s) with them, so a profiled node computes at its measured rate in the
 * simulation. The model is deliberately simple: convolutions and fully connected layers
 * dominate every network pacer trains; pooling, activations, batch norm and the loss
 * count one operation per element they touch. Training (forward + backward) counts 3x
 * the forward pass, the usual estimate (backward computes the input and the weight
 * gradients, each about as costly as the forward pass). */
#ifndef PACER_SIM_COST_H
#define PACER_SIM_COST_H

#include "model.h"

/* Forward pass of one sample. */
double cost_forward_flops(const model_t *m);
/* Forward + backward of one sample. */
double cost_train_flops(const model_t *m);
/* One optimizer step over every parameter (momentum SGD with weight decay: ~4 per
 * parameter). */
double cost_update_flops(const model_t *m);

#endif
