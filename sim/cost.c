/* sim/cost.c - see cost.h. */
#include "cost.h"

#include <string.h>

double cost_forward_flops(const catalog_model_t *m) { return m->flops_per_sample; }

double cost_train_flops(const catalog_model_t *m) { return 3.0 * cost_forward_flops(m); }

/* Indexed by cost_optimizer_t; the counts are cost.h's table. */
static const struct {
    const char *name;
    double flops_per_param;
} OPTIMIZERS[] = {
    [COST_SGD] = {"sgd", 5},
    [COST_SGD_MOMENTUM] = {"sgd_momentum", 7},
    [COST_SGD_NESTEROV] = {"sgd_nesterov", 9},
    [COST_ADAMW] = {"adamw", 15},
};
_Static_assert(sizeof OPTIMIZERS / sizeof OPTIMIZERS[0] == COST_OPTIMIZER_N, "a row per optimizer");

/* optimizer.clip_norm: the gradient's sum of squares (the scale joins grad_scale) */
#define CLIP_FLOPS_PER_PARAM 2.0

cost_optimizer_t cost_optimizer_of(const job_spec_t *s)
{
    if (spec_is_adamw(s)) return COST_ADAMW;
    if (s->optimizer.momentum == 0) return COST_SGD;
    return s->optimizer.nesterov ? COST_SGD_NESTEROV : COST_SGD_MOMENTUM;
}

const char *cost_optimizer_name(cost_optimizer_t o) { return (unsigned)o < COST_OPTIMIZER_N ? OPTIMIZERS[o].name : ""; }

double cost_optimizer_flops_per_param(cost_optimizer_t o)
{
    return (unsigned)o < COST_OPTIMIZER_N ? OPTIMIZERS[o].flops_per_param : 0;
}

double cost_update_flops(const catalog_model_t *m, const job_spec_t *s)
{
    double per = cost_optimizer_flops_per_param(cost_optimizer_of(s));
    if (s->optimizer.clip_norm > 0) per += CLIP_FLOPS_PER_PARAM;
    return per * (double)m->params;
}

const catalog_model_t *cost_figures(const model_t *m)
{
    /* One model per rank, built at set-up (statics are per rank in the SMPI build, as
     * sim_worker.c's jitter stream): described the first time it is charged, and again
     * only when another model comes (its address alone could be a freed one's reused). */
    static const model_t *described;
    static catalog_model_t figures;
    if (described != m || figures.params != (long)m->nparams || figures.layers != m->nlayers ||
        strcmp(figures.name, m->name) != 0) {
        model_describe(m, &figures);
        described = m;
    }
    return &figures;
}
