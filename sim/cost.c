/* sim/cost.c - see cost.h. The forward count is the model's own (model_forward_flops,
 * model/model.c), the figure the catalog lists as FLOPs per sample. */
#include "cost.h"

double cost_forward_flops(const model_t *m) { return model_forward_flops(m); }

double cost_train_flops(const model_t *m) { return 3.0 * cost_forward_flops(m); }

double cost_update_flops(const model_t *m) { return 4.0 * (double)m->nparams; }
