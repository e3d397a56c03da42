/* sim/cost.c - see cost.h. */
#include "cost.h"

double cost_forward_flops(const model_t *m)
{
    double f = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const layer_t *l = &m->layers[i];
        double out = (double)l->OC * l->OH * l->OW;
        switch (l->kind) {
        case LAYER_CONV: f += 2.0 * out * l->conv.C * l->conv.KH * l->conv.KW; break;
        case LAYER_FC: f += 2.0 * out * l->C; break;
        default: f += (double)l->C * l->H * l->W; break; /* one pass over the input */
        }
    }
    return f + 5.0 * m->num_classes; /* softmax and cross-entropy */
}

double cost_train_flops(const model_t *m) { return 3.0 * cost_forward_flops(m); }

double cost_update_flops(const model_t *m) { return 4.0 * (double)m->nparams; }
